//! The backdrop: a vertical gradient, and the ground grid cast per pixel onto a plane.

use super::camera::{Ground, View};
use super::raster::Frame;

const SKY_TOP: [f32; 3] = [86.0, 94.0, 108.0];
const SKY_BOTTOM: [f32; 3] = [34.0, 37.0, 43.0];
/// Colour the grid lines blend towards, and how strongly at most.
const LINE: [f32; 3] = [196.0, 202.0, 212.0];
const LINE_ALPHA: f32 = 0.5;
/// A faint tint of the ground itself, so the plane reads even between lines.
const FLOOR: [f32; 3] = [120.0, 124.0, 132.0];
const FLOOR_ALPHA: f32 = 0.12;

/// Fills every row with `top + (bottom − top)·j/(H − 1)`.
pub(crate) fn background(frame: &mut Frame) {
    let denom = frame.height.saturating_sub(1).max(1) as f32;
    for y in 0..frame.height {
        let t = y as f32 / denom;
        let c = [0, 1, 2].map(|k| SKY_TOP[k] + (SKY_BOTTOM[k] - SKY_TOP[k]) * t);
        let c = c.map(|v| (v + 0.5) as u8);
        for x in 0..frame.width {
            frame.put(x, y, c);
        }
    }
}

/// Where the ray through pixel coordinates `(x, y)` meets the plane `y = g`: with the ray
/// `eye + t·d` scaled so `t` is the view depth, `t = (g − eye_y)/d_y`. Returns world `(x, z)`
/// and `t`, or `None` when the ray runs parallel to or away from the plane.
fn hit(view: &View, ground: &Ground, x: f32, y: f32) -> Option<(f32, f32, f32)> {
    let d = view.ray(x, y);
    let t = (ground.y - view.eye[1]) / d[1];
    if !(t > 0.0 && t.is_finite()) {
        return None;
    }
    Some((view.eye[0] + t * d[0], view.eye[2] + t * d[2], t))
}

/// Coverage of the nearest grid line for grid coordinate `g` (world / step), where `fw` grid
/// units span one pixel: full on the line, falling to 0 one pixel away (`|g − round g| / fw`
/// is the distance in pixels), and faded out where lines come closer than 8 pixels apart
/// (`fw > 1/8`) so distant rulings turn into an even tone instead of moiré.
fn line_coverage(g: f32, fw: f32) -> f32 {
    if !(fw > 0.0 && fw.is_finite()) {
        return 0.0;
    }
    let dist = (g - g.round()).abs() / fw;
    let density = (2.0 - 8.0 * fw).clamp(0.0, 1.0);
    (1.0 - dist).clamp(0.0, 1.0) * density
}

/// Blends the ground grid into every pixel where the plane is nearer than anything drawn.
/// Lines sit on world multiples of `step` in `x` and `z`; their footprint per pixel comes from
/// the hits of the neighbouring pixel centres to the right and below. Everything fades as
/// `(1 − r²/R²)²` with distance `r` from the grid's centre.
pub(crate) fn grid(frame: &mut Frame, view: &View, ground: &Ground) {
    let step = ground.step;
    let r2 = ground.radius * ground.radius;
    if !(step > 0.0 && step.is_finite() && r2 > 0.0 && r2.is_finite() && ground.y.is_finite()) {
        return;
    }
    for py in 0..frame.height {
        let cy = py as f32 + 0.5;
        for px in 0..frame.width {
            let cx = px as f32 + 0.5;
            let Some((hx, hz, t)) = hit(view, ground, cx, cy) else {
                continue;
            };
            let i = py * frame.width + px;
            if frame.depth[i] >= 1.0 / t {
                continue;
            }
            let (rx, rz) = (hx - ground.centre[0], hz - ground.centre[1]);
            let fade = 1.0 - (rx * rx + rz * rz) / r2;
            if fade.is_nan() || fade <= 0.0 {
                continue;
            }
            let fade = fade * fade;
            let (gx, gz) = (hx / step, hz / step);
            let (mut fwx, mut fwz) = (f32::INFINITY, f32::INFINITY);
            if let (Some(a), Some(b)) = (
                hit(view, ground, cx + 1.0, cy),
                hit(view, ground, cx, cy + 1.0),
            ) {
                fwx = (a.0 / step - gx).abs().max((b.0 / step - gx).abs());
                fwz = (a.1 / step - gz).abs().max((b.1 / step - gz).abs());
            }
            let cover = line_coverage(gx, fwx).max(line_coverage(gz, fwz));
            frame.blend(px, py, FLOOR, FLOOR_ALPHA * fade);
            frame.blend(px, py, LINE, LINE_ALPHA * cover * fade);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage_peaks_on_lines_and_fades_when_dense() {
        assert_eq!(line_coverage(3.0, 0.01), 1.0);
        assert_eq!(line_coverage(3.5, 0.01), 0.0);
        assert_eq!(line_coverage(3.0, 0.3), 0.0);
        assert_eq!(line_coverage(3.0, f32::NAN), 0.0);
    }

    #[test]
    fn gradient_runs_top_to_bottom() {
        let mut f = Frame::new(2, 3);
        background(&mut f);
        assert_eq!(&f.rgb[0..3], &[86, 94, 108]);
        assert_eq!(&f.rgb[15..18], &[34, 37, 43]);
        let mut one = Frame::new(1, 1);
        background(&mut one);
    }
}
