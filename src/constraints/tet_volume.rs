//! Volume of one tetrahedron (Müller et al. 2007, PBD §4.4; XPBD soft bodies, Macklin 2016).
//!
//! ```text
//! C = (p2 − p1) × (p3 − p1) · (p4 − p1) / 6 − V0                (m³)
//! ∇_2 C = (p3 − p1) × (p4 − p1) / 6,   ∇_3 C = (p4 − p1) × (p2 − p1) / 6,
//! ∇_4 C = (p2 − p1) × (p3 − p1) / 6,   ∇_1 C = −(∇_2 C + ∇_3 C + ∇_4 C)
//! ```
//!
//! Compliance in m⁵/N: a bulk modulus K gives `α = V0 / K` per tetrahedron, so tiny-looking
//! values (1e-6) can still be very soft. With edge distance constraints (`stretch`) this makes
//! a volumetric soft body.

use super::lanes::{Real, Vec3};
use super::{per_lane, Constraint, MaterialId};
use glam::DVec3;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TetVolumeConstraint {
    pub particles: [u32; 4],
    /// Signed rest volume V0, m³ (positive for the usual orientation).
    pub rest_volume: f64,
    pub material: MaterialId,
}

/// `1/6`, multiplied rather than divided by: ten divisions a tetrahedron were most of the
/// batched kernel's time (docs/benchmarks.md, "Issue 13: lanes by hand").
const SIXTH: f64 = 1.0 / 6.0;

/// Signed volume `(p2 − p1) × (p3 − p1) · (p4 − p1) / 6`, computed as the constraint does.
pub fn tet_volume(p: &[DVec3; 4]) -> f64 {
    (p[1] - p[0]).cross(p[2] - p[0]).dot(p[3] - p[0]) * SIXTH
}

impl Constraint<4> for TetVolumeConstraint {
    /// The rest volume.
    type Shape<S: Real> = S;

    fn particles(&self) -> [u32; 4] {
        self.particles
    }
    fn material(&self) -> MaterialId {
        self.material
    }
    #[inline(always)]
    fn shape<S: Real>(items: &[Self]) -> S {
        per_lane(items, |c| c.rest_volume)
    }
    /// Always acts (a flat tetrahedron has a gradient; a fully collapsed one has w|∇C|² = 0
    /// and is skipped by the projection).
    #[inline(always)]
    fn value_and_gradient<S: Real>(
        rest_volume: &S,
        p: &[Vec3<S>; 4],
    ) -> (S, [Vec3<S>; 4], S::Mask) {
        let sixth = S::splat(SIXTH);
        let (a, b, c) = (p[1] - p[0], p[2] - p[0], p[3] - p[0]);
        let g2 = b.cross(c).scale(sixth);
        let g3 = c.cross(a).scale(sixth);
        let g4 = a.cross(b).scale(sixth);
        (
            a.cross(b).dot(c) * sixth - *rest_volume,
            [-(g2 + g3 + g4), g2, g3, g4],
            S::mask_from_lanes(|_| true),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constraints::testing::assert_gradient_matches_finite_differences;

    #[test]
    fn zero_at_rest_and_gradient_matches() {
        let p = [
            DVec3::new(0.0, 0.0, 0.0),
            DVec3::new(1.0, 0.1, 0.0),
            DVec3::new(0.2, 1.0, 0.1),
            DVec3::new(0.1, 0.2, 0.9),
        ];
        let tet = TetVolumeConstraint {
            particles: [0, 1, 2, 3],
            rest_volume: tet_volume(&p),
            material: MaterialId::RIGID,
        };
        assert!(tet.rest_volume > 0.0);
        assert!(tet.evaluate(&p).unwrap().0.abs() < 1e-15);
        assert_gradient_matches_finite_differences(&tet, p, 1e-6);
        crate::constraints::testing::assert_conserves_momentum(&tet, p);
    }
}
