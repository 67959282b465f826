//! The pinhole camera, its framing of a box, and the projection the rasteriser uses.
//!
//! View space: `x` to the right, `y` up, `z` the depth along the viewing direction (positive
//! in front of the eye). A point at view position `(x, y, z)` lands on the image at
//! `sx = W/2 + (x/z)·W/(2·tan_x)`, `sy = H/2 − (y/z)·H/(2·tan_y)` (pixels, `y` down), where
//! `tan_y` is the tangent of half the vertical field of view and `tan_x = tan_y·W/H` keeps the
//! pixels square whatever the image's aspect.

use super::math::{cross, dot, is_finite, normalize, scale, sub, V3};

/// Tangent of half the vertical field of view of [`Camera::framing`]: tan(20°), a 40° lens.
/// Kept as a tangent so no platform `tan` is ever called.
const TAN_HALF_FOV_Y: f32 = 0.363_970_23;

/// Direction from the box's centre to the eye in [`Camera::framing`]: 35° to the right of the
/// front (+Z) and 22° above the horizon, i.e. `(sin 35° cos 22°, sin 22°, cos 35° cos 22°)`.
const EYE_DIRECTION: V3 = [0.531_8, 0.374_6, 0.759_5];

/// How much of the image the box may fill in each direction (the rest is margin).
const FILL: f32 = 0.8;

/// A pinhole camera.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    /// Position of the eye (world, metres).
    pub eye: [f32; 3],
    /// The point looked at; it lands at the centre of the image.
    pub target: [f32; 3],
    /// Roughly up in the image (world +Y for a level camera); need not be unit length.
    pub up: [f32; 3],
    /// Tangent of half the vertical field of view.
    pub tan_half_fov_y: f32,
    /// Distance of the near clipping plane in front of the eye (metres, > 0).
    pub near: f32,
    /// The ground grid drawn under the scene, if any.
    pub ground: Option<Ground>,
}

/// A square-ruled grid on a horizontal plane, fading out with distance from its centre.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ground {
    /// Height of the plane (world `y`).
    pub y: f32,
    /// Spacing of the lines (metres); lines sit on multiples of it in world `x` and `z`.
    pub step: f32,
    /// World `(x, z)` of the centre of the fade.
    pub centre: [f32; 2],
    /// Distance from the centre at which the grid has faded out completely (metres).
    pub radius: f32,
}

impl Camera {
    /// A fixed camera framing the box (three-quarter view from the front, slightly above,
    /// looking at its centre, the whole box in view with a margin, for the given aspect).
    ///
    /// The eye sits at `c + D·d` for the box centre `c` and the fixed direction `d` (see
    /// `EYE_DIRECTION`). For a corner at offset `(x, y, z)` in the camera's basis (`z` away from
    /// the eye), its depth is `D + z` and it stays inside `FILL` of the half-width when
    /// `|x| ≤ FILL·tan_x·(D + z)`, i.e. `D ≥ |x|/(FILL·tan_x) − z`; likewise for `y`. `D` is the
    /// largest of these over the 8 corners. The ground grid lies on the box's lowest `y` with a
    /// 1-2-5 step giving about six cells across the box. A non-finite box is replaced by a unit
    /// one; a flat or tiny box is padded so the camera stays well defined.
    pub fn framing(min: [f32; 3], max: [f32; 3], width: u32, height: u32) -> Camera {
        let (lo, hi) = sane_box(min, max);
        let centre = scale([lo[0] + hi[0], lo[1] + hi[1], lo[2] + hi[2]], 0.5);
        let extent = sub(hi, lo);
        let radius = 0.5 * dot(extent, extent).sqrt();
        let d = normalize(EYE_DIRECTION).unwrap_or([0.0, 0.0, 1.0]);
        let forward = scale(d, -1.0);
        let right = normalize(cross(forward, [0.0, 1.0, 0.0])).unwrap_or([1.0, 0.0, 0.0]);
        let up = cross(right, forward);
        let tan_y = TAN_HALF_FOV_Y;
        let tan_x = tan_y * aspect(width, height);
        let mut distance = radius * 1.05;
        for k in 0..8 {
            let corner = [
                if k & 1 == 0 { lo[0] } else { hi[0] },
                if k & 2 == 0 { lo[1] } else { hi[1] },
                if k & 4 == 0 { lo[2] } else { hi[2] },
            ];
            let rel = sub(corner, centre);
            let z = dot(rel, forward);
            distance = distance.max(dot(rel, right).abs() / (FILL * tan_x) - z);
            distance = distance.max(dot(rel, up).abs() / (FILL * tan_y) - z);
        }
        let eye = [
            centre[0] + d[0] * distance,
            centre[1] + d[1] * distance,
            centre[2] + d[2] * distance,
        ];
        let span = extent[0].max(extent[2]).max(0.5 * extent[1]);
        let step = nice_step(span / 6.0);
        Camera {
            eye,
            target: centre,
            up: [0.0, 1.0, 0.0],
            tan_half_fov_y: tan_y,
            near: ((distance - radius) * 0.5).max(radius * 1e-3),
            ground: Some(Ground {
                y: lo[1],
                step,
                centre: [centre[0], centre[2]],
                radius: 1.6 * span.max(extent[1]) + 4.0 * step,
            }),
        }
    }

    /// Where the world point `p` lands on a `width`×`height` image, in pixels from the top-left
    /// corner (pixel `(i, j)` covers `[i, i+1)×[j, j+1)`), or `None` when it is not in front of
    /// the near plane or the camera is degenerate. The result may lie outside the image.
    pub fn project(&self, p: [f32; 3], width: u32, height: u32) -> Option<[f32; 2]> {
        let view = View::new(self, width, height)?;
        let v = view.view_pos(p);
        if v[2] >= view.near && is_finite(v) {
            Some(view.screen_pos(v))
        } else {
            None
        }
    }
}

/// Whether `x` is finite and above zero.
fn positive(x: f32) -> bool {
    x > 0.0 && x.is_finite()
}

/// `width / height`, with zero sizes counted as 1.
fn aspect(width: u32, height: u32) -> f32 {
    width.max(1) as f32 / height.max(1) as f32
}

/// The box ordered per axis, a unit box when any bound is not finite, and each side padded
/// to at least 2% of the longest (and 1 cm) so a flat cloth still gives a proper camera.
fn sane_box(min: V3, max: V3) -> (V3, V3) {
    if !is_finite(min) || !is_finite(max) {
        return ([-0.5, 0.0, -0.5], [0.5, 1.0, 0.5]);
    }
    let mut lo = [0.0; 3];
    let mut hi = [0.0; 3];
    for k in 0..3 {
        lo[k] = min[k].min(max[k]);
        hi[k] = min[k].max(max[k]);
    }
    let longest = (hi[0] - lo[0]).max(hi[1] - lo[1]).max(hi[2] - lo[2]);
    let least = (0.02 * longest).max(0.01);
    for k in 0..3 {
        let short = least - (hi[k] - lo[k]);
        if short > 0.0 {
            lo[k] -= 0.5 * short;
            hi[k] += 0.5 * short;
        }
    }
    (lo, hi)
}

/// The smallest of `1, 2, 5 × 10^k` that is at least `x` (`x` clamped to `[1e-4, 1e6]`),
/// found by multiplying and dividing by 10 so no `log`/`pow` is needed.
pub(crate) fn nice_step(x: f32) -> f32 {
    let x = if x.is_finite() {
        x.clamp(1e-4, 1e6)
    } else {
        1.0
    };
    let mut decade = 1.0f32;
    while decade * 10.0 <= x {
        decade *= 10.0;
    }
    while decade > x {
        decade /= 10.0;
    }
    for m in [1.0, 2.0, 5.0] {
        if decade * m >= x {
            return decade * m;
        }
    }
    decade * 10.0
}

/// A camera resolved for one image size: the orthonormal basis and the projection scales.
#[derive(Clone, Copy, Debug)]
pub(crate) struct View {
    pub eye: V3,
    pub right: V3,
    pub up: V3,
    pub forward: V3,
    pub near: f32,
    pub width: f32,
    pub height: f32,
    /// `W / (2 tan_x)`: pixels per unit of `x/z`.
    sx: f32,
    /// `H / (2 tan_y)`: pixels per unit of `y/z`.
    sy: f32,
    /// `1/sx` and `1/sy`, for casting rays.
    inv_sx: f32,
    inv_sy: f32,
}

impl View {
    /// `forward = normalize(target − eye)`, `right = normalize(forward × up)`,
    /// `up = right × forward`; `None` when these are degenerate or anything is not finite.
    pub fn new(camera: &Camera, width: u32, height: u32) -> Option<View> {
        let forward = normalize(sub(camera.target, camera.eye))?;
        let right = normalize(cross(forward, camera.up))?;
        let up = cross(right, forward);
        let tan_y = camera.tan_half_fov_y;
        let near = camera.near;
        if !is_finite(camera.eye) || !positive(tan_y) || !positive(near) {
            return None;
        }
        let (w, h) = (width as f32, height as f32);
        let tan_x = tan_y * aspect(width, height);
        Some(View {
            eye: camera.eye,
            right,
            up,
            forward,
            near,
            width: w,
            height: h,
            sx: 0.5 * w / tan_x,
            sy: 0.5 * h / tan_y,
            inv_sx: 2.0 * tan_x / w,
            inv_sy: 2.0 * tan_y / h,
        })
    }

    /// World point to view space: its offset from the eye along right, up and forward.
    pub fn view_pos(&self, p: V3) -> V3 {
        let d = sub(p, self.eye);
        [dot(d, self.right), dot(d, self.up), dot(d, self.forward)]
    }

    /// View-space point (with `z > 0`) to pixel coordinates.
    pub fn screen_pos(&self, v: V3) -> [f32; 2] {
        let iz = 1.0 / v[2];
        [
            0.5 * self.width + v[0] * iz * self.sx,
            0.5 * self.height - v[1] * iz * self.sy,
        ]
    }

    /// World direction of the ray through pixel coordinates `(x, y)`, scaled so that its
    /// forward component is 1: the point at parameter `t` along it has view depth `t`.
    pub fn ray(&self, x: f32, y: f32) -> V3 {
        let a = (x - 0.5 * self.width) * self.inv_sx;
        let b = (0.5 * self.height - y) * self.inv_sy;
        [
            self.forward[0] + a * self.right[0] + b * self.up[0],
            self.forward[1] + a * self.right[1] + b * self.up[1],
            self.forward[2] + a * self.right[2] + b * self.up[2],
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corners(lo: V3, hi: V3) -> Vec<V3> {
        (0..8)
            .map(|k| {
                [
                    if k & 1 == 0 { lo[0] } else { hi[0] },
                    if k & 2 == 0 { lo[1] } else { hi[1] },
                    if k & 4 == 0 { lo[2] } else { hi[2] },
                ]
            })
            .collect()
    }

    #[test]
    fn framing_puts_all_corners_inside_the_image() {
        let boxes = [
            ([-1.0, 0.0, -1.0], [1.0, 2.0, 1.0]),
            ([10.0, -3.0, 4.0], [10.5, 5.0, 4.2]),
            ([-20.0, 0.0, -0.1], [20.0, 0.5, 0.1]),
            ([0.0, 0.0, 0.0], [0.0, 0.0, 0.0]),
        ];
        for (lo, hi) in boxes {
            for (w, h) in [(640, 360), (360, 640), (256, 256), (1, 1)] {
                let cam = Camera::framing(lo, hi, w, h);
                for c in corners(lo, hi) {
                    let p = cam.project(c, w, h).expect("corner in front of the camera");
                    let (fw, fh) = (w as f32, h as f32);
                    assert!(p[0] > 0.0 && p[0] < fw, "{lo:?}..{hi:?} {w}x{h}: {p:?}");
                    assert!(p[1] > 0.0 && p[1] < fh, "{lo:?}..{hi:?} {w}x{h}: {p:?}");
                }
                let centre = cam.project(cam.target, w, h).unwrap();
                assert!((centre[0] - 0.5 * w as f32).abs() < 1e-3 * w as f32);
                assert!(cam.eye[1] > cam.target[1] && cam.eye[2] > cam.target[2]);
            }
        }
    }

    #[test]
    fn framing_survives_non_finite_boxes() {
        let cam = Camera::framing([f32::NAN, 0.0, 0.0], [1.0, f32::INFINITY, 1.0], 64, 48);
        assert!(View::new(&cam, 64, 48).is_some());
    }

    #[test]
    fn nice_steps_are_one_two_five() {
        assert_eq!(nice_step(0.3), 0.5);
        assert_eq!(nice_step(0.5), 0.5);
        assert_eq!(nice_step(1.2), 2.0);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(7.0), 10.0);
        assert!((nice_step(0.013) - 0.02).abs() < 1e-7);
        assert_eq!(nice_step(f32::NAN), 1.0);
    }

    #[test]
    fn ray_matches_projection() {
        let cam = Camera::framing([-1.0, 0.0, -1.0], [1.0, 1.0, 1.0], 200, 100);
        let view = View::new(&cam, 200, 100).unwrap();
        let d = view.ray(37.5, 80.25);
        let p = [
            view.eye[0] + 3.0 * d[0],
            view.eye[1] + 3.0 * d[1],
            view.eye[2] + 3.0 * d[2],
        ];
        let v = view.view_pos(p);
        assert!((v[2] - 3.0).abs() < 1e-4);
        let s = view.screen_pos(v);
        assert!((s[0] - 37.5).abs() < 1e-3 && (s[1] - 80.25).abs() < 1e-3);
    }
}
