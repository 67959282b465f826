//! Dihedral bending across the edge shared by two triangles (Müller et al. 2007, appendix A),
//! in the signed-angle form with the gradient of Bridson, Marino, Fedkiw 2003.
//!
//! Particles `[e0, e1, o0, o1]`: the shared edge `e0–e1`, triangle A = (e0, e1, o0) and
//! triangle B = (e1, e0, o1), both in their mesh winding, so the normals
//! `n_A = (e1 − e0) × (o0 − e0)` and `n_B = (e0 − e1) × (o1 − e1)` are consistently oriented.
//! With `ê` the unit edge,
//!
//! ```text
//! θ = atan2((n̂_A × n̂_B) · ê, n̂_A · n̂_B)            (0 flat, < 0 when B folds to n_A's side)
//! C = wrap(θ − θ0)                                  (radians)
//! ∇_o0 θ = −|e| n_A / |n_A|²,   ∇_o1 θ = −|e| n_B / |n_B|²
//! ∇_e0 θ = ((o0 − e1)·e/|e|) n_A/|n_A|² + ((o1 − e1)·e/|e|) n_B/|n_B|²   (negated)
//! ∇_e1 θ = −((o0 − e0)·e/|e|) n_A/|n_A|² − ((o1 − e0)·e/|e|) n_B/|n_B|²  (negated)
//! ```
//!
//! The acos form of the 2007 appendix has an infinite gradient at a flat rest state; atan2
//! does not. Compliance is per hinge in 1/(N·m): a hinge under a torque τ settles at
//! `θ − θ0 = α τ`. On a 1 m sheet of 32 × 32 particles, 1e-3 behaves like a plate and 1e2–1e4
//! like cloth. Skipped when a triangle or the edge is degenerate. `atan2` is the library's: a
//! polynomial one, inlined, was measured 8–14 % slower on cloth-256 (docs/benchmarks.md,
//! "Issue 13").

use super::{Constraint, Material};
use glam::DVec3;
use std::f64::consts::{PI, TAU};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DihedralConstraint {
    /// `[e0, e1, o0, o1]`, see the module docs.
    pub particles: [u32; 4],
    /// Rest angle θ0, radians.
    pub rest_angle: f64,
    pub material: Material,
}

/// Wraps an angle difference into (−π, π].
#[inline]
fn wrap_angle(angle: f64) -> f64 {
    if angle > -PI && angle <= PI {
        return angle;
    }
    let wrapped = angle - TAU * ((angle + PI) * (1.0 / TAU)).floor();
    if wrapped <= -PI {
        wrapped + TAU
    } else {
        wrapped
    }
}

/// The signed dihedral angle θ of the stencil `[e0, e1, o0, o1]` and its gradient.
///
/// `atan2` is scale invariant, so θ comes from the unnormalised normals:
/// `θ = atan2((n_A × n_B) · e / |e|, n_A · n_B)`. With `d_A = (o0 − e0) · e`,
/// `d_B = (o1 − e0) · e` and `u = n / |n|²`, the edge gradients of the module docs become
/// `∇_e0 θ = −((d_A − |e|²) u_A + (d_B − |e|²) u_B) / |e|` and
/// `∇_e1 θ = (d_A u_A + d_B u_B) / |e|`. One square root and two divisions in all (`v / s` on a
/// vector would divide three times: reciprocals are taken once and multiplied).
#[inline(always)]
pub fn dihedral_angle(p: &[DVec3; 4]) -> Option<(f64, [DVec3; 4])> {
    let [e0, e1, o0, o1] = *p;
    let e = e1 - e0;
    let e_sq = e.length_squared();
    let n_a = e.cross(o0 - e0);
    let n_b = (o1 - e1).cross(e);
    let (n_a_sq, n_b_sq) = (n_a.length_squared(), n_b.length_squared());
    let tiny = 1e-24 * (e_sq * e_sq).max(f64::MIN_POSITIVE);
    if e_sq < 1e-24 || n_a_sq <= tiny || n_b_sq <= tiny {
        return None;
    }
    let inv_edge_length = e_sq.sqrt().recip();
    let edge_length = e_sq * inv_edge_length;
    let theta = f64::atan2(n_a.cross(n_b).dot(e) * inv_edge_length, n_a.dot(n_b));
    let inv_product = (n_a_sq * n_b_sq).recip();
    let (u_a, u_b) = (n_a * (n_b_sq * inv_product), n_b * (n_a_sq * inv_product));
    let (d_a, d_b) = ((o0 - e0).dot(e), (o1 - e0).dot(e));
    let grad_e0 = -((d_a - e_sq) * u_a + (d_b - e_sq) * u_b) * inv_edge_length;
    let grad_e1 = (d_a * u_a + d_b * u_b) * inv_edge_length;
    Some((
        theta,
        [grad_e0, grad_e1, -edge_length * u_a, -edge_length * u_b],
    ))
}

impl Constraint<4> for DihedralConstraint {
    fn particles(&self) -> [u32; 4] {
        self.particles
    }
    fn material(&self) -> Material {
        self.material
    }
    #[inline(always)]
    fn evaluate(&self, p: &[DVec3; 4]) -> Option<(f64, [DVec3; 4])> {
        let (theta, grad) = dihedral_angle(p)?;
        Some((wrap_angle(theta - self.rest_angle), grad))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constraints::testing::assert_gradient_matches_finite_differences;

    /// A hinge along X with wing A in the -Z half plane and wing B folded by `fold` radians.
    fn stencil(fold: f64) -> [DVec3; 4] {
        [
            DVec3::new(0.0, 0.0, 0.0),
            DVec3::new(1.0, 0.0, 0.0),
            DVec3::new(0.3, 0.0, -0.8),
            DVec3::new(0.6, 0.9 * fold.sin(), 0.9 * fold.cos()),
        ]
    }

    fn hinge(rest_angle: f64) -> DihedralConstraint {
        DihedralConstraint {
            particles: [0, 1, 2, 3],
            rest_angle,
            material: Material::RIGID,
        }
    }

    #[test]
    fn flat_sheet_is_zero_and_angle_is_the_fold() {
        let (flat, _) = dihedral_angle(&stencil(0.0)).unwrap();
        assert!(flat.abs() < 1e-15);
        for fold in [0.3, -0.7, 1.5, 2.9] {
            let (theta, _) = dihedral_angle(&stencil(fold)).unwrap();
            assert!((theta.abs() - fold.abs()).abs() < 1e-12, "{fold}: {theta}");
            // Folding B towards the side n_A points to (+Y here) is a negative angle.
            assert_eq!(theta.signum(), -fold.signum());
        }
    }

    #[test]
    fn gradient_matches_finite_differences_flat_and_folded() {
        for fold in [0.0, 0.4, -1.2, 2.5] {
            let p = stencil(fold);
            let rest = dihedral_angle(&p).unwrap().0;
            assert!(hinge(rest).evaluate(&p).unwrap().0.abs() < 1e-15);
            assert_gradient_matches_finite_differences(&hinge(0.1), p, 1e-5);
        }
        // A generic, non-symmetric stencil too.
        let p = [
            DVec3::new(0.1, -0.2, 0.05),
            DVec3::new(0.9, 0.3, -0.1),
            DVec3::new(0.2, 0.7, -0.6),
            DVec3::new(0.8, -0.5, 0.9),
        ];
        assert_gradient_matches_finite_differences(&hinge(0.0), p, 1e-5);
        crate::constraints::testing::assert_conserves_momentum(&hinge(0.3), p);
    }

    #[test]
    fn gradients_sum_to_zero_so_momentum_is_conserved() {
        let (_, grad) = dihedral_angle(&stencil(0.8)).unwrap();
        let sum: DVec3 = grad.iter().copied().sum();
        assert!(sum.length() < 1e-12, "{sum}");
    }

    #[test]
    fn wrap_keeps_differences_in_the_half_open_interval() {
        assert!((wrap_angle(3.0 * PI / 2.0) + PI / 2.0).abs() < 1e-12);
        assert!((wrap_angle(-PI) - PI).abs() < 1e-12);
        assert!((wrap_angle(0.25) - 0.25).abs() < 1e-15);
    }

    #[test]
    fn degenerate_triangle_is_skipped() {
        let mut p = stencil(0.3);
        p[2] = DVec3::new(0.5, 0.0, 0.0); // on the edge line
        assert!(dihedral_angle(&p).is_none());
    }
}
