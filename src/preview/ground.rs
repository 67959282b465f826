//! The backdrop: a vertical gradient, and the ground grid cast per pixel onto a plane.

use super::camera::{Ground, View};
use super::raster::Frame;
use super::shadow::ShadowMap;

const SKY_TOP: [f32; 3] = [86.0, 94.0, 108.0];
const SKY_BOTTOM: [f32; 3] = [34.0, 37.0, 43.0];
/// Colour the grid lines blend towards, and how strongly at most: light over the dark
/// backdrop, dark over a light surface lying on the ground (a floor collider).
const LINE: [f32; 3] = [196.0, 202.0, 212.0];
const LINE_ON_LIGHT: [f32; 3] = [60.0, 64.0, 72.0];
const LINE_ALPHA: f32 = 0.5;
/// A faint tint of the ground itself, so the plane reads even between lines.
const FLOOR: [f32; 3] = [120.0, 124.0, 132.0];
const FLOOR_ALPHA: f32 = 0.12;
/// Opacity of the contact shadow where it is darkest.
const SHADOW_ALPHA: f32 = 0.55;
/// The ground wins a depth tie by this relative margin (0.1 mm at 5 m), so a floor collider
/// lying on it shows the grid instead of fighting it pixel by pixel.
const TIE: f32 = 2e-5;

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

/// The ground plane in the units of the grid (world `x`, `z` divided by `step`), with the
/// reciprocals the per-pixel loop needs.
struct Plane {
    y: f32,
    inv_step: f32,
    /// Centre of the fade, in grid units.
    centre: [f32; 2],
    /// `(step / radius)²`: multiplies a squared distance in grid units into `r²/R²`.
    inv_r2: f32,
}

/// A ray's hit on the ground: grid `x`, grid `z` (world / step), view depth.
type Hit = (f32, f32, f32);

impl Plane {
    fn new(g: &Ground) -> Option<Plane> {
        let inv_step = 1.0 / g.step;
        let r = g.radius * inv_step;
        let ok = |v: f32| v > 0.0 && v.is_finite();
        if !(ok(inv_step) && ok(r * r) && g.y.is_finite() && g.centre.iter().all(|c| c.is_finite()))
        {
            return None;
        }
        Some(Plane {
            y: g.y,
            inv_step,
            centre: [g.centre[0] * inv_step, g.centre[1] * inv_step],
            inv_r2: 1.0 / (r * r),
        })
    }

    /// Where the ray through pixel coordinates `(x, y)` meets the plane: with the ray
    /// `eye + t·d` scaled so `t` is the view depth, `t = (y_ground − eye_y)/d_y`. `None` when
    /// the ray runs parallel to or away from the plane.
    fn hit(&self, view: &View, x: f32, y: f32) -> Option<Hit> {
        let d = view.ray(x, y);
        let t = (self.y - view.eye[1]) / d[1];
        if !(t > 0.0 && t.is_finite()) {
            return None;
        }
        let (hx, hz) = (view.eye[0] + t * d[0], view.eye[2] + t * d[2]);
        Some((hx * self.inv_step, hz * self.inv_step, t))
    }
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

/// Blends the ground grid and the contact shadows into every pixel where the plane is nearer
/// than anything drawn (or ties with it, see `TIE`). Lines sit on world multiples of `step`
/// in `x` and `z`; their footprint per pixel comes from the hits of the neighbouring pixel
/// centres to the right and below, so the hits of two rows (plus one column) are kept at a
/// time and each is computed once.
pub(crate) fn grid(frame: &mut Frame, view: &View, ground: &Ground, shadow: Option<&ShadowMap>) {
    let Some(plane) = Plane::new(ground) else {
        return;
    };
    let width = frame.width;
    let row = |py: usize, out: &mut Vec<Option<Hit>>| {
        out.clear();
        let cy = py as f32 + 0.5;
        out.extend((0..=width).map(|px| plane.hit(view, px as f32 + 0.5, cy)));
    };
    let (mut here, mut below) = (Vec::new(), Vec::new());
    row(0, &mut here);
    for py in 0..frame.height {
        row(py + 1, &mut below);
        for px in 0..frame.width {
            let Some(h) = here[px] else {
                continue;
            };
            if frame.depth[py * frame.width + px] < (1.0 + TIE) / h.2 {
                grid_pixel(frame, (px, py), &plane, h, [here[px + 1], below[px]]);
                if let Some(s) = shadow {
                    let dark = s.darkness(h.0 * ground.step, h.1 * ground.step);
                    frame.blend(px, py, [0.0; 3], SHADOW_ALPHA * dark);
                }
            }
        }
        std::mem::swap(&mut here, &mut below);
    }
}

/// Shades one pixel of the ground at hit `h`, given the hits of its right and lower
/// neighbours: a faint floor tint plus the nearer grid line's coverage, all faded as
/// `(1 − r²/R²)²` with the distance `r` from the grid's centre.
fn grid_pixel(
    frame: &mut Frame,
    at: (usize, usize),
    plane: &Plane,
    h: Hit,
    next: [Option<Hit>; 2],
) {
    let (rx, rz) = (h.0 - plane.centre[0], h.1 - plane.centre[1]);
    let fade = 1.0 - (rx * rx + rz * rz) * plane.inv_r2;
    if fade.is_nan() || fade <= 0.0 {
        return;
    }
    let fade = fade * fade;
    let (mut fwx, mut fwz) = (f32::INFINITY, f32::INFINITY);
    if let [Some(a), Some(b)] = next {
        fwx = (a.0 - h.0).abs().max((b.0 - h.0).abs());
        fwz = (a.1 - h.1).abs().max((b.1 - h.1).abs());
    }
    let cover = line_coverage(h.0, fwx).max(line_coverage(h.1, fwz));
    frame.blend(at.0, at.1, FLOOR, FLOOR_ALPHA * fade);
    let green = frame.rgb[3 * (at.1 * frame.width + at.0) + 1];
    let line = if green < 128 { LINE } else { LINE_ON_LIGHT };
    frame.blend(at.0, at.1, line, LINE_ALPHA * cover * fade);
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
