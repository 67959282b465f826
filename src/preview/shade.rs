//! Lighting: vertex normals, a fixed key light plus fill and ambient, two-sided shading, the
//! collider checker, and the final colour of a pixel.
//!
//! Light is computed per vertex (Gouraud) and interpolated perspective-correctly by the
//! rasteriser. The intensity of a surface with unit normal `n` seen from its front is
//! `I = a₀ + a₁·n_y + k·max(n·L, 0) + f·max(n·F, 0)` (hemispherical ambient, key light `L`,
//! fill light `F`). Cloth is two-sided: seen from the back, the normal is `−n` and the key
//! term becomes `k·|n·L|`, the whole darkened by `BACK`, so the underside of a drape is lit
//! but reads as the underside.

use super::camera::nice_step;
use super::math::{add, cross, dot, is_finite, normalize, sub, V3};

/// Direction towards the key light: above, from the left and in front (normalised where used).
const KEY: V3 = [-0.55, 0.7, 0.45];
/// Direction towards the fill light: low, from behind on the right.
const FILL: V3 = [0.7, 0.3, -0.5];
const AMBIENT: f32 = 0.22;
/// Extra ambient from the sky for normals pointing up (and less for those pointing down).
const SKY: f32 = 0.1;
const KEY_WEIGHT: f32 = 0.8;
const FILL_WEIGHT: f32 = 0.16;
/// Factor on back faces so the two sides of a cloth differ.
const BACK: f32 = 0.78;
/// Factor on the darker squares of the collider checker.
const CHECKER_DARK: f32 = 0.84;
/// The neutral grey of colliders (their `colour` is not used).
pub(crate) const COLLIDER_GREY: [u8; 3] = [176, 178, 182];

/// The lights, normalised once.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lights {
    key: V3,
    fill: V3,
}

impl Lights {
    pub fn new() -> Lights {
        Lights {
            key: normalize(KEY).unwrap_or([0.0, 1.0, 0.0]),
            fill: normalize(FILL).unwrap_or([0.0, 1.0, 0.0]),
        }
    }

    /// Intensity of the side a unit normal `n` points out of.
    pub fn front(&self, n: V3) -> f32 {
        AMBIENT
            + SKY * n[1]
            + KEY_WEIGHT * dot(n, self.key).max(0.0)
            + FILL_WEIGHT * dot(n, self.fill).max(0.0)
    }

    /// Intensity of the other side (normal `−n`), lit by `|n·L|` and darkened by `BACK`.
    pub fn back(&self, n: V3) -> f32 {
        BACK * (AMBIENT - SKY * n[1] + KEY_WEIGHT * dot(n, self.key).abs())
    }

    /// Intensity of a thin rope along unit tangent `t`: a cylinder's Lambert term averaged
    /// around it is proportional to `sin∠(t, L) = √(1 − (t·L)²)`.
    pub fn rope(&self, t: V3) -> f32 {
        let c = dot(t, self.key);
        AMBIENT + SKY + KEY_WEIGHT * (1.0 - c * c).max(0.0).sqrt()
    }
}

/// Area-weighted vertex normals: each triangle adds its unnormalised face normal
/// `(p₁ − p₀) × (p₂ − p₀)` (length twice its area) to its corners, in triangle order; vertices
/// without a usable triangle get `+Y`. Triangles with bad indices or non-finite corners are
/// skipped.
pub(crate) fn vertex_normals(positions: &[V3], triangles: &[[u32; 3]]) -> Vec<V3> {
    let mut sum = vec![[0.0f32; 3]; positions.len()];
    for tri in triangles {
        let Some([a, b, c]) = corners(positions, tri) else {
            continue;
        };
        let n = face_normal(positions[a], positions[b], positions[c]);
        if !is_finite(n) {
            continue;
        }
        for i in [a, b, c] {
            sum[i] = add(sum[i], n);
        }
    }
    sum.into_iter()
        .map(|n| normalize(n).unwrap_or([0.0, 1.0, 0.0]))
        .collect()
}

/// The triangle's vertex indices when all are in range and their positions finite.
pub(crate) fn corners(positions: &[V3], tri: &[u32; 3]) -> Option<[usize; 3]> {
    let mut out = [0usize; 3];
    for (o, &i) in out.iter_mut().zip(tri) {
        let i = i as usize;
        if i >= positions.len() || !is_finite(positions[i]) {
            return None;
        }
        *o = i;
    }
    Some(out)
}

/// `(b − a) × (c − a)`: normal to the triangle, length twice its area, pointing to the side
/// from which `a, b, c` run counter-clockwise.
pub(crate) fn face_normal(a: V3, b: V3, c: V3) -> V3 {
    cross(sub(b, a), sub(c, a))
}

/// Side length of the collider checker: a 1-2-5 step about a quarter of the mesh's largest
/// extent (finite positions only).
pub(crate) fn checker_step(positions: &[V3]) -> f32 {
    let mut lo = [f32::INFINITY; 3];
    let mut hi = [f32::NEG_INFINITY; 3];
    for p in positions.iter().filter(|p| is_finite(**p)) {
        for k in 0..3 {
            lo[k] = lo[k].min(p[k]);
            hi[k] = hi[k].max(p[k]);
        }
    }
    let extent = (hi[0] - lo[0]).max(hi[1] - lo[1]).max(hi[2] - lo[2]);
    nice_step(extent / 4.0)
}

/// How a surface is coloured.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Material {
    pub base: [u8; 3],
    /// Side of the 3D checker cells, or 0 for a plain colour.
    pub checker: f32,
}

impl Material {
    /// Colour of a pixel from its interpolated attributes `[intensity, x, y, z]` (world
    /// position). The checker darkens cells whose `⌊x/s⌋ + ⌊y/s⌋ + ⌊z/s⌋` is odd.
    pub fn colour(&self, attr: &[f32; 4]) -> [u8; 3] {
        let mut i = attr[0];
        if self.checker > 0.0 {
            let cell = |v: f32| (v / self.checker).floor() as i64;
            if (cell(attr[1]) + cell(attr[2]) + cell(attr[3])) & 1 == 1 {
                i *= CHECKER_DARK;
            }
        }
        tone(self.base, i)
    }
}

/// `base × intensity`, rounded and clamped to 0..=255 (a non-finite intensity gives black).
pub(crate) fn tone(base: [u8; 3], intensity: f32) -> [u8; 3] {
    let i = if intensity.is_finite() {
        intensity
    } else {
        0.0
    };
    base.map(|c| (c as f32 * i + 0.5).clamp(0.0, 255.0) as u8)
}

#[cfg(test)]
mod tests {
    use super::super::math::scale;
    use super::*;

    #[test]
    fn back_faces_are_lit_but_darker_than_front() {
        let l = Lights::new();
        let n = normalize(KEY).unwrap();
        assert!(l.front(n) > l.back(n));
        assert!(l.back(n) > AMBIENT);
        assert!(l.front(scale(n, -1.0)) < l.front(n));
    }

    #[test]
    fn normals_skip_bad_triangles() {
        let p = vec![
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 0.0, -1.0],
            [f32::NAN; 3],
        ];
        let n = vertex_normals(&p, &[[0, 1, 2], [0, 1, 3], [0, 1, 9]]);
        assert_eq!(n[0], [0.0, 1.0, 0.0]);
        assert_eq!(n[3], [0.0, 1.0, 0.0]);
    }

    #[test]
    fn tone_clamps() {
        assert_eq!(tone([200, 100, 0], 2.0), [255, 200, 0]);
        assert_eq!(tone([200, 100, 0], f32::NAN), [0, 0, 0]);
    }
}
