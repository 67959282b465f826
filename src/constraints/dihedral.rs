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
//! like cloth. Skipped when a triangle or the edge is degenerate. `atan2` is the polynomial of
//! [`super::atan2`] (within one unit in the last place of π of the library's), which runs in
//! the lanes of a batch; alone it is slower than glibc's (docs/benchmarks.md, "Issue 13").

use super::atan2::atan2;
use super::lanes::{Real, Vec3};
use super::{per_lane, Constraint, MaterialId};
use glam::DVec3;
use std::f64::consts::{PI, TAU};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DihedralConstraint {
    /// `[e0, e1, o0, o1]`, see the module docs.
    pub particles: [u32; 4],
    /// Rest angle θ0, radians.
    pub rest_angle: f64,
    pub material: MaterialId,
}

/// Wraps `θ − θ0` into (−π, π]: one turn added or taken away.
///
/// One turn is enough because both angles lie in [−π, π] (θ from [`atan2`], θ0 from it too or
/// from plastic flow, which wraps it into (−π, π]), so their difference lies in [−2π, 2π]. The
/// general `θ − 2π ⌊(θ + π) / 2π⌋` this replaces gave the same bits, but through a floor and
/// two more dependent operations on the way to Δλ (docs/benchmarks.md, "Issue 13: the
/// dihedral's wrap in one step"), and it could leave a difference a rounding above π where
/// `(θ + π) / 2π` rounded below 1.
#[inline(always)]
fn wrap_angle<S: Real>(angle: S) -> S {
    let above = angle.gt(S::splat(PI));
    let below = angle.le(S::splat(-PI));
    let wrapped = S::select(above, angle - S::splat(TAU), angle);
    S::select(below, angle + S::splat(TAU), wrapped)
}

/// The signed dihedral angle θ of the stencil `[e0, e1, o0, o1]` and its gradient, or `None`
/// when a triangle or the edge is degenerate.
pub fn dihedral_angle(p: &[DVec3; 4]) -> Option<(f64, [DVec3; 4])> {
    let (theta, grad, defined) = hinge_angle(&p.map(Vec3::from));
    defined.then(|| (theta, grad.map(DVec3::from)))
}

/// θ and `∇θ` of [`dihedral_angle`], and where they are defined, over any [`Real`].
///
/// `atan2` is scale invariant, so θ comes from the unnormalised normals:
/// `θ = atan2((n_A × n_B) · e / |e|, n_A · n_B)`. With `d_A = (o0 − e0) · e`,
/// `d_B = (o1 − e0) · e` and `u = n / |n|²`, the edge gradients of the module docs become
/// `∇_e0 θ = −((d_A − |e|²) u_A + (d_B − |e|²) u_B) / |e|` and
/// `∇_e1 θ = (d_A u_A + d_B u_B) / |e|`. One square root and two divisions in all (`v / s` on a
/// vector would divide three times: reciprocals are taken once and multiplied).
#[inline(always)]
fn hinge_angle<S: Real>(p: &[Vec3<S>; 4]) -> (S, [Vec3<S>; 4], S::Mask) {
    let [e0, e1, o0, o1] = *p;
    let one = S::splat(1.0);
    let e = e1 - e0;
    let e_sq = e.length_squared();
    let n_a = e.cross(o0 - e0);
    let n_b = (o1 - e1).cross(e);
    let (n_a_sq, n_b_sq) = (n_a.length_squared(), n_b.length_squared());
    let tiny = S::splat(1e-24) * (e_sq * e_sq).max(S::splat(f64::MIN_POSITIVE));
    let degenerate = e_sq.lt(S::splat(1e-24)) | n_a_sq.le(tiny) | n_b_sq.le(tiny);
    let inv_edge_length = one / e_sq.sqrt();
    let edge_length = e_sq * inv_edge_length;
    let theta = atan2(n_a.cross(n_b).dot(e) * inv_edge_length, n_a.dot(n_b));
    let inv_product = one / (n_a_sq * n_b_sq);
    let (u_a, u_b) = (
        n_a.scale(n_b_sq * inv_product),
        n_b.scale(n_a_sq * inv_product),
    );
    let (d_a, d_b) = ((o0 - e0).dot(e), (o1 - e0).dot(e));
    let grad_e0 = -(u_a.scale(d_a - e_sq) + u_b.scale(d_b - e_sq)).scale(inv_edge_length);
    let grad_e1 = (u_a.scale(d_a) + u_b.scale(d_b)).scale(inv_edge_length);
    (
        theta,
        [
            grad_e0,
            grad_e1,
            u_a.scale(-edge_length),
            u_b.scale(-edge_length),
        ],
        !degenerate,
    )
}

impl Constraint<4> for DihedralConstraint {
    /// The rest angle θ0.
    type Shape<S: Real> = S;

    fn particles(&self) -> [u32; 4] {
        self.particles
    }
    fn material(&self) -> MaterialId {
        self.material
    }
    #[inline(always)]
    fn shape<S: Real>(items: &[Self]) -> S {
        per_lane(items, |c| c.rest_angle)
    }
    #[inline(always)]
    fn value_and_gradient<S: Real>(rest_angle: &S, p: &[Vec3<S>; 4]) -> (S, [Vec3<S>; 4], S::Mask) {
        let (theta, grad, defined) = hinge_angle(p);
        (wrap_angle(theta - *rest_angle), grad, defined)
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
            material: MaterialId::RIGID,
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
        assert!((wrap_angle(-3.0 * PI / 2.0) - PI / 2.0).abs() < 1e-12);
        assert!((wrap_angle(-PI) - PI).abs() < 1e-12);
        assert!((wrap_angle(0.25f64) - 0.25).abs() < 1e-15);
        // Every difference of two angles in [−π, π] lands in (−π, π], a whole number of turns
        // from where it was, the extremes included.
        let angles = [-PI, -3.0, -1.0, -1e-300, 0.0, 0.5, 2.0, 3.1, PI];
        for theta in angles {
            for rest in angles {
                let difference = theta - rest;
                let wrapped = wrap_angle(difference);
                assert!(
                    wrapped > -PI && wrapped <= PI,
                    "{theta} − {rest}: {wrapped}"
                );
                let turns = (difference - wrapped) / TAU;
                assert!((turns - turns.round()).abs() < 1e-15, "{theta} − {rest}");
            }
        }
    }

    #[test]
    fn degenerate_triangle_is_skipped() {
        let mut p = stencil(0.3);
        p[2] = DVec3::new(0.5, 0.0, 0.0); // on the edge line
        assert!(dihedral_angle(&p).is_none());
    }
}
