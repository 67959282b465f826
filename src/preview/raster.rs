//! The frame buffer and the two primitives drawn into it: z-buffered triangles and lines.
//!
//! Depth is stored as `1/z` (view depth `z`): it is an affine function of the pixel position
//! over a projected triangle, so interpolating it with screen-space barycentrics is exact, and
//! the buffer starts at 0 (infinitely far); larger means nearer. A vertex attribute `a` is
//! interpolated perspective-correctly as `(Σ bᵢ aᵢ/zᵢ) / (Σ bᵢ/zᵢ)`.

use super::camera::View;
use super::math::{lerp, V3};

/// Colour and depth of the image being drawn, row-major from the top-left.
pub(crate) struct Frame {
    pub width: usize,
    pub height: usize,
    pub rgb: Vec<u8>,
    /// `1/z` of the nearest surface drawn at each pixel; 0 where nothing is.
    pub depth: Vec<f32>,
}

impl Frame {
    pub fn new(width: usize, height: usize) -> Frame {
        Frame {
            width,
            height,
            rgb: vec![0; width * height * 3],
            depth: vec![0.0; width * height],
        }
    }

    pub fn put(&mut self, x: usize, y: usize, c: [u8; 3]) {
        let i = 3 * (y * self.width + x);
        self.rgb[i..i + 3].copy_from_slice(&c);
    }

    /// `pixel ← pixel + (c − pixel)·alpha`, rounded, for `alpha` in `[0, 1]`.
    pub fn blend(&mut self, x: usize, y: usize, c: [f32; 3], alpha: f32) {
        let i = 3 * (y * self.width + x);
        for (out, c) in self.rgb[i..i + 3].iter_mut().zip(c) {
            let old = *out as f32;
            *out = (old + (c - old) * alpha + 0.5).clamp(0.0, 255.0) as u8;
        }
    }
}

/// A vertex in view space with the attributes to interpolate (`[intensity, x, y, z]`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ViewVert {
    pub p: V3,
    pub a: [f32; 4],
}

/// A projected vertex: pixel position, `1/z`, and the attributes divided by `z`.
#[derive(Clone, Copy, Debug)]
struct ScreenVert {
    x: f32,
    y: f32,
    iz: f32,
    a: [f32; 4],
}

/// Draws one view-space triangle: clipped against the near plane, projected, and filled with
/// the colour `shade` gives for each covered pixel's interpolated attributes.
pub(crate) fn draw_triangle<F>(frame: &mut Frame, view: &View, tri: &[ViewVert; 3], shade: &F)
where
    F: Fn(&[f32; 4]) -> [u8; 3],
{
    if tri.iter().all(|v| v.p[2] >= view.near) {
        fill(frame, &tri.map(|v| project(view, &v)), shade);
        return;
    }
    let mut poly = [tri[0]; 4];
    let n = clip_near(tri, view.near, &mut poly);
    let s = poly.map(|v| project(view, &v));
    for k in 2..n {
        fill(frame, &[s[0], s[k - 1], s[k]], shade);
    }
}

/// Sutherland–Hodgman against the plane `z = near`: walks the edges, keeping the corners in
/// front and adding the crossing point `a + (b − a)·(near − a_z)/(b_z − a_z)` of each edge that
/// crosses. A triangle yields at most 4 corners; returns how many.
fn clip_near(tri: &[ViewVert; 3], near: f32, out: &mut [ViewVert; 4]) -> usize {
    let mut n = 0;
    for k in 0..3 {
        let (a, b) = (tri[k], tri[(k + 1) % 3]);
        let (a_in, b_in) = (a.p[2] >= near, b.p[2] >= near);
        if a_in {
            out[n] = a;
            n += 1;
        }
        if a_in != b_in {
            let t = (near - a.p[2]) / (b.p[2] - a.p[2]);
            let mut attr = [0.0; 4];
            for (j, v) in attr.iter_mut().enumerate() {
                *v = a.a[j] + (b.a[j] - a.a[j]) * t;
            }
            let mut p = lerp(a.p, b.p, t);
            p[2] = near;
            out[n] = ViewVert { p, a: attr };
            n += 1;
        }
    }
    n
}

fn project(view: &View, v: &ViewVert) -> ScreenVert {
    let [x, y] = view.screen_pos(v.p);
    let iz = 1.0 / v.p[2];
    ScreenVert {
        x,
        y,
        iz,
        a: v.a.map(|a| a * iz),
    }
}

/// Twice the signed area of `(a, b, p)`; positive when `p` is to one side of `a → b`.
/// For a triangle `(v₀, v₁, v₂)` of signed area `A`, the barycentric weight of `vᵢ` at `p` is
/// `edge(v_{i+1}, v_{i+2}, p) / A`.
fn edge(a: &ScreenVert, b: &ScreenVert, px: f32, py: f32) -> f32 {
    (b.x - a.x) * (py - a.y) - (b.y - a.y) * (px - a.x)
}

/// Fills the pixels whose centres lie inside the projected triangle and are nearer than what
/// the depth buffer holds. Degenerate or non-finite triangles draw nothing; the loop never
/// leaves the image, however large the triangle's coordinates.
fn fill<F>(frame: &mut Frame, s: &[ScreenVert; 3], shade: &F)
where
    F: Fn(&[f32; 4]) -> [u8; 3],
{
    let area = edge(&s[0], &s[1], s[2].x, s[2].y);
    if !(area.abs() > 1e-12 && area.is_finite()) {
        return;
    }
    let Some((x0, x1)) = span(s.map(|v| v.x), frame.width) else {
        return;
    };
    let Some((y0, y1)) = span(s.map(|v| v.y), frame.height) else {
        return;
    };
    let inv_area = 1.0 / area;
    for py in y0..=y1 {
        let cy = py as f32 + 0.5;
        for px in x0..=x1 {
            let cx = px as f32 + 0.5;
            let b = [
                edge(&s[1], &s[2], cx, cy) * inv_area,
                edge(&s[2], &s[0], cx, cy) * inv_area,
                edge(&s[0], &s[1], cx, cy) * inv_area,
            ];
            if b[0] < 0.0 || b[1] < 0.0 || b[2] < 0.0 {
                continue;
            }
            let iz = b[0] * s[0].iz + b[1] * s[1].iz + b[2] * s[2].iz;
            let i = py * frame.width + px;
            if iz.is_nan() || iz <= frame.depth[i] {
                continue;
            }
            let z = 1.0 / iz;
            let mut attr = [0.0f32; 4];
            for (k, a) in attr.iter_mut().enumerate() {
                *a = (b[0] * s[0].a[k] + b[1] * s[1].a[k] + b[2] * s[2].a[k]) * z;
            }
            frame.depth[i] = iz;
            frame.put(px, py, shade(&attr));
        }
    }
}

/// The pixel columns (or rows) whose centres `c + 0.5` may fall within `[min v, max v]`,
/// clamped to `0..size`; `None` when that is empty or a coordinate is not finite.
fn span(v: [f32; 3], size: usize) -> Option<(usize, usize)> {
    if !v.iter().all(|c| c.is_finite()) || size == 0 {
        return None;
    }
    let lo = v[0].min(v[1]).min(v[2]);
    let hi = v[0].max(v[1]).max(v[2]);
    let first = (lo - 0.5).ceil().max(0.0);
    let last = (hi - 0.5).floor().min(size as f32 - 1.0);
    if first > last {
        return None;
    }
    Some((first as usize, last as usize))
}

/// Draws the view-space segment `a–b` in `colour`, `thickness` (1 or 2) pixels wide, depth
/// tested with a small bias so a rope lying on cloth stays visible. The segment is clipped to
/// the near plane and then (Liang–Barsky) to the image, and stepped one pixel at a time along
/// its major axis; `1/z` is affine in screen space, so it is interpolated linearly.
pub(crate) fn draw_segment(
    frame: &mut Frame,
    view: &View,
    seg: [V3; 2],
    colour: [u8; 3],
    thickness: usize,
) {
    let [mut a, mut b] = seg;
    if a[2] < view.near && b[2] < view.near {
        return;
    }
    if a[2] < view.near {
        a = lerp(a, b, (view.near - a[2]) / (b[2] - a[2]));
        a[2] = view.near;
    } else if b[2] < view.near {
        b = lerp(b, a, (view.near - b[2]) / (a[2] - b[2]));
        b[2] = view.near;
    }
    let (pa, pb) = (view.screen_pos(a), view.screen_pos(b));
    let (za, zb) = (1.0 / a[2], 1.0 / b[2]);
    let (d, dz) = ([pb[0] - pa[0], pb[1] - pa[1]], zb - za);
    let Some((t0, t1)) = clip_to_rect(pa, d, frame.width as f32, frame.height as f32) else {
        return;
    };
    let length = d[0].abs().max(d[1].abs()) * (t1 - t0);
    let steps = (length.ceil() as usize).clamp(1, 2 * (frame.width + frame.height));
    let steep = d[1].abs() > d[0].abs();
    for i in 0..=steps {
        let t = t0 + (t1 - t0) * (i as f32 / steps as f32);
        let (x, y, iz) = (pa[0] + d[0] * t, pa[1] + d[1] * t, za + dz * t);
        for k in 0..thickness {
            let (ox, oy) = if steep {
                (k as f32, 0.0)
            } else {
                (0.0, k as f32)
            };
            plot(frame, x + ox, y + oy, iz, colour);
        }
    }
}

/// Parameter range `[t0, t1] ⊂ [0, 1]` of `p + d·t` inside `[0, w] × [0, h]` (Liang–Barsky:
/// each side bounds `t` from one direction), or `None` when the segment misses the image.
fn clip_to_rect(p: [f32; 2], d: [f32; 2], w: f32, h: f32) -> Option<(f32, f32)> {
    if !(p[0].is_finite() && p[1].is_finite() && d[0].is_finite() && d[1].is_finite()) {
        return None;
    }
    let (mut t0, mut t1) = (0.0f32, 1.0f32);
    for (q, r) in [
        (-d[0], p[0]),
        (d[0], w - p[0]),
        (-d[1], p[1]),
        (d[1], h - p[1]),
    ] {
        if q == 0.0 {
            if r < 0.0 {
                return None;
            }
        } else {
            let t = r / q;
            if q < 0.0 {
                t0 = t0.max(t);
            } else {
                t1 = t1.min(t);
            }
        }
    }
    (t0 <= t1).then_some((t0, t1))
}

/// A `size`×`size` pixel dot centred on the view-space point `v` (behind the near plane:
/// nothing), depth-tested like the lines.
pub(crate) fn draw_dot(frame: &mut Frame, view: &View, v: V3, colour: [u8; 3], size: usize) {
    if v[2] < view.near {
        return;
    }
    let [x, y] = view.screen_pos(v);
    let iz = 1.0 / v[2];
    let half = (size as f32 - 1.0) / 2.0;
    for dy in 0..size {
        for dx in 0..size {
            plot(
                frame,
                x - half + dx as f32,
                y - half + dy as f32,
                iz,
                colour,
            );
        }
    }
}

fn plot(frame: &mut Frame, x: f32, y: f32, iz: f32, colour: [u8; 3]) {
    let (x, y) = (x.floor(), y.floor());
    if !(x >= 0.0 && y >= 0.0 && x < frame.width as f32 && y < frame.height as f32) {
        return;
    }
    let (x, y) = (x as usize, y as usize);
    let i = y * frame.width + x;
    if iz * 1.002 >= frame.depth[i] {
        frame.depth[i] = frame.depth[i].max(iz);
        frame.put(x, y, colour);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_keeps_the_part_in_front() {
        let v = |z: f32| ViewVert {
            p: [0.0, 0.0, z],
            a: [z, 0.0, 0.0, 0.0],
        };
        let mut out = [v(0.0); 4];
        assert_eq!(clip_near(&[v(1.0), v(-1.0), v(3.0)], 0.5, &mut out), 4);
        assert!(out.iter().all(|v| v.p[2] >= 0.5));
        assert_eq!(out[1].a[0], 0.5);
        assert_eq!(clip_near(&[v(0.1), v(-1.0), v(3.0)], 0.5, &mut out), 3);
        assert_eq!(clip_near(&[v(0.1), v(-1.0), v(0.2)], 0.5, &mut out), 0);
    }

    #[test]
    fn span_clamps_and_rejects() {
        assert_eq!(span([-5.0, 2.2, 1e30], 10), Some((0, 9)));
        assert_eq!(span([3.6, 3.7, 3.9], 10), None);
        assert_eq!(span([f32::NAN, 0.0, 1.0], 10), None);
        assert_eq!(span([0.0, 0.6, 0.2], 1), Some((0, 0)));
    }

    #[test]
    fn liang_barsky_clips_to_the_image() {
        let (t0, t1) = clip_to_rect([-10.0, 5.0], [30.0, 0.0], 10.0, 10.0).unwrap();
        assert!((t0 - 1.0 / 3.0).abs() < 1e-6 && (t1 - 2.0 / 3.0).abs() < 1e-6);
        assert!(clip_to_rect([-10.0, 20.0], [30.0, 0.0], 10.0, 10.0).is_none());
    }
}
