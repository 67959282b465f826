//! Curvature constraints: isometric bending of surfaces (Bergou, Wardetzky, Harmon, Zorin,
//! Grinspun 2006, "A Quadratic Bending Model for Inextensible Surfaces"; in PBD form Bender,
//! Müller, Macklin 2014) and bending of ropes, both as `C = s |v|` with `v = Σ_i K_i p_i` a
//! discrete curvature vector that is linear in the positions.
//!
//! ```text
//! v = Σ_i K_i p_i,   C = s |v|,   ∇_i C = s K_i v / |v|
//! ```
//!
//! XPBD's energy `½ C² / α = ½ s² |v|² / α` is then exactly the quadratic bending energy of
//! the model (Bergou's `½ xᵀ Q x` with `Q = s² K Kᵀ`). Using the quadratic energy itself as C
//! (as PBD implementations do) would make the XPBD energy quartic, so soft near flat that a
//! cantilever barely resists. `Σ K_i = 0`, so C ignores translations, and
//! `Σ p_i × ∇_i C = s v × v̂ = 0`, so corrections conserve linear and angular momentum. C = 0
//! when v = 0, where the gradient is undefined and the constraint is skipped (nothing to
//! correct). Both models bend towards flat / straight whatever the rest shape: use dihedral
//! bending for curved rest surfaces.
//!
//! **Isometric hinge** `[e0, e1, o0, o1]` (shared edge e0–e1), from the rest shape with
//! `cot(u, w) = u·w / |u × w|` and `e = e1 − e0`:
//! `c01 = cot(e, o0 − e0)`, `c02 = cot(e, o1 − e0)`, `c03 = cot(−e, o0 − e1)`,
//! `c04 = cot(−e, o1 − e1)`, `K = [c03 + c04, c01 + c02, −c01 − c03, −c02 − c04]`,
//! `s = sqrt(3 / (A0 + A1))` (A0, A1 the triangle areas). v vanishes for a flat stencil; for a
//! small fold θ, C ≈ θ, so compliance is in 1/(N·m) like the dihedral's.
//!
//! **Rope bend** `[a, b, c]` (consecutive along a polyline): `K = [1, −2, 1]`, `s = 1 / L` with
//! `L` the mean rest length of the two segments: `C ≈ θ` for a small bend θ at b. 1/(N·m).
//! `K` is the same for every bend, so a rope bend stores only `s` ([`RopeBendingConstraint`],
//! 24 bytes instead of 48): the batched kernel then gathers one number per lane instead of
//! four, which is most of what a three-particle stencil costs besides its positions.

use super::lanes::{Real, Vec3};
use super::{per_lane, Constraint, MaterialId};
use glam::DVec3;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CurvatureConstraint<const N: usize> {
    pub particles: [u32; N],
    /// `K` of the module docs.
    pub weights: [f64; N],
    /// `s` of the module docs.
    pub scale: f64,
    pub material: MaterialId,
}

/// An isometric bending hinge.
pub type IsometricBendingConstraint = CurvatureConstraint<4>;

/// A rope bend at the middle of three consecutive particles: `K` is [`ROPE_WEIGHTS`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RopeBendingConstraint {
    pub particles: [u32; 3],
    /// `s` of the module docs.
    pub scale: f64,
    pub material: MaterialId,
}

/// `K` of every rope bend.
pub const ROPE_WEIGHTS: [f64; 3] = [1.0, -2.0, 1.0];

/// A constraint `C = s |Σ_i K_i p_i|`: what the projective solver's linear terms read.
pub trait Curvature<const N: usize>: Constraint<N> {
    /// `K`.
    fn weights(&self) -> [f64; N];
    /// `s`.
    fn scale(&self) -> f64;
}

impl<const N: usize> Curvature<N> for CurvatureConstraint<N> {
    fn weights(&self) -> [f64; N] {
        self.weights
    }
    fn scale(&self) -> f64 {
        self.scale
    }
}

impl Curvature<3> for RopeBendingConstraint {
    fn weights(&self) -> [f64; 3] {
        ROPE_WEIGHTS
    }
    fn scale(&self) -> f64 {
        self.scale
    }
}

fn cotangent(u: DVec3, w: DVec3) -> Option<f64> {
    let sine = u.cross(w).length();
    (sine > 1e-12 * u.length() * w.length()).then(|| u.dot(w) / sine)
}

impl IsometricBendingConstraint {
    /// The hinge for a rest stencil `[e0, e1, o0, o1]`, or `None` when a triangle is degenerate.
    pub fn isometric(particles: [u32; 4], rest: &[DVec3; 4], material: MaterialId) -> Option<Self> {
        let [e0, e1, o0, o1] = *rest;
        let e = e1 - e0;
        let c01 = cotangent(e, o0 - e0)?;
        let c02 = cotangent(e, o1 - e0)?;
        let c03 = cotangent(-e, o0 - e1)?;
        let c04 = cotangent(-e, o1 - e1)?;
        let areas = 0.5 * (e.cross(o0 - e0).length() + e.cross(o1 - e0).length());
        Some(CurvatureConstraint {
            particles,
            weights: [c03 + c04, c01 + c02, -c01 - c03, -c02 - c04],
            scale: (3.0 / areas).sqrt(),
            material,
        })
    }
}

impl RopeBendingConstraint {
    /// The bend at `b` of `[a, b, c]`, or `None` when a segment has no length.
    pub fn rope(particles: [u32; 3], rest: &[DVec3; 3], material: MaterialId) -> Option<Self> {
        let length = 0.5 * (rest[0].distance(rest[1]) + rest[1].distance(rest[2]));
        (length > 0.0).then(|| RopeBendingConstraint {
            particles,
            scale: 1.0 / length,
            material,
        })
    }
}

impl<const N: usize> Constraint<N> for CurvatureConstraint<N> {
    /// `K` and `s`.
    type Shape<S: Real> = ([S; N], S);

    fn particles(&self) -> [u32; N] {
        self.particles
    }
    fn material(&self) -> MaterialId {
        self.material
    }
    #[inline(always)]
    fn shape<S: Real>(items: &[Self]) -> ([S; N], S) {
        let mut weights = [S::splat(0.0); N];
        for (k, weight) in weights.iter_mut().enumerate() {
            *weight = per_lane(items, |c| c.weights[k]);
        }
        (weights, per_lane(items, |c| c.scale))
    }
    #[inline(always)]
    fn value_and_gradient<S: Real>(
        (weights, scale): &([S; N], S),
        p: &[Vec3<S>; N],
    ) -> (S, [Vec3<S>; N], S::Mask) {
        curvature(weights, *scale, p)
    }
    #[inline(always)]
    fn weighted_gradient_sq<S: Real>(
        (weights, scale): &([S; N], S),
        _grad: &[Vec3<S>; N],
        w: &[S; N],
    ) -> S {
        curvature_weighted_gradient_sq(weights, *scale, w)
    }
}

impl Constraint<3> for RopeBendingConstraint {
    /// `s`.
    type Shape<S: Real> = S;

    fn particles(&self) -> [u32; 3] {
        self.particles
    }
    fn material(&self) -> MaterialId {
        self.material
    }
    #[inline(always)]
    fn shape<S: Real>(items: &[Self]) -> S {
        per_lane(items, |c| c.scale)
    }
    #[inline(always)]
    fn value_and_gradient<S: Real>(scale: &S, p: &[Vec3<S>; 3]) -> (S, [Vec3<S>; 3], S::Mask) {
        curvature(&ROPE_WEIGHTS.map(S::splat), *scale, p)
    }
    #[inline(always)]
    fn weighted_gradient_sq<S: Real>(scale: &S, _grad: &[Vec3<S>; 3], w: &[S; 3]) -> S {
        curvature_weighted_gradient_sq(&ROPE_WEIGHTS.map(S::splat), *scale, w)
    }
}

/// `C = s |v|` and `∇_i C = s K_i v / |v|` with `v = Σ_i K_i p_i`, lane by lane; does not act
/// where `v` vanishes (relative to the coordinates' size).
#[inline(always)]
fn curvature<S: Real, const N: usize>(
    weights: &[S; N],
    scale: S,
    p: &[Vec3<S>; N],
) -> (S, [Vec3<S>; N], S::Mask) {
    let mut v = p[0].scale(weights[0]);
    let mut reference = S::splat(1.0).max(p[0].max_abs());
    for k in 1..N {
        v = v + p[k].scale(weights[k]);
        reference = reference.max(p[k].max_abs());
    }
    let length = v.length();
    let direction = v.scale(scale / length);
    let acts = !length.le(S::splat(1e-14) * reference);
    let mut grad = [direction; N];
    for (g, &k) in grad.iter_mut().zip(weights) {
        *g = direction.scale(k);
    }
    (scale * length, grad, acts)
}

/// `Σ_i w_i |∇_i C|² = s² Σ_i w_i K_i²` of [`curvature`]: `|∇_i C| = s |K_i| |v / |v||`
/// and the direction has length 1, so the sum needs neither the positions nor the square
/// root, and a batch computes it while the gradient waits for them. Where `v` vanishes the
/// constraint does not act, whatever this gives.
#[inline(always)]
fn curvature_weighted_gradient_sq<S: Real, const N: usize>(
    weights: &[S; N],
    scale: S,
    w: &[S; N],
) -> S {
    let mut sum = w[0] * (weights[0] * weights[0]);
    for k in 1..N {
        sum = sum + w[k] * (weights[k] * weights[k]);
    }
    scale * scale * sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constraints::testing::{
        assert_conserves_momentum, assert_gradient_matches_finite_differences,
        assert_weighted_gradient_sq_is_the_gradients,
    };

    fn stencil(fold: f64) -> [DVec3; 4] {
        [
            DVec3::new(0.0, 0.0, 0.0),
            DVec3::new(1.0, 0.0, 0.0),
            DVec3::new(0.3, 0.0, -0.8),
            DVec3::new(0.6, 0.9 * fold.sin(), 0.9 * fold.cos()),
        ]
    }

    #[test]
    fn isometric_is_zero_when_flat_grows_like_the_fold_and_gradient_matches() {
        let hinge =
            IsometricBendingConstraint::isometric([0, 1, 2, 3], &stencil(0.0), MaterialId::RIGID)
                .unwrap();
        assert!(
            hinge.evaluate(&stencil(0.0)).is_none(),
            "flat: nothing to correct"
        );
        let moved = stencil(0.0).map(|p| p + DVec3::new(3.0, -2.0, 5.0));
        assert!(hinge.evaluate(&moved).is_none());
        // C grows linearly with a small fold (a quadratic energy), like the dihedral angle.
        let c1 = hinge.evaluate(&stencil(0.01)).unwrap().0;
        let c2 = hinge.evaluate(&stencil(0.02)).unwrap().0;
        assert!((c2 / c1 - 2.0).abs() < 1e-3, "{c1} {c2}");
        for fold in [0.2, -0.7, 1.4] {
            assert_gradient_matches_finite_differences(&hinge, stencil(fold), 1e-5);
            assert_conserves_momentum(&hinge, stencil(fold));
        }
    }

    #[test]
    fn the_weighted_gradient_sum_is_that_of_the_gradient() {
        let hinge =
            IsometricBendingConstraint::isometric([0, 1, 2, 3], &stencil(0.0), MaterialId::RIGID)
                .unwrap();
        for (fold, w) in [(0.3, [1.0, 2.0, 0.5, 4.0]), (-1.1, [0.0, 3.0, 1.0, 0.25])] {
            assert_weighted_gradient_sq_is_the_gradients(&hinge, &stencil(fold), w);
        }
        let straight = [DVec3::ZERO, DVec3::X, DVec3::new(2.5, 0.0, 0.0)];
        let bend = RopeBendingConstraint::rope([0, 1, 2], &straight, MaterialId::RIGID).unwrap();
        let bent = [DVec3::ZERO, DVec3::X, DVec3::new(1.9, 0.7, -0.3)];
        assert_weighted_gradient_sq_is_the_gradients(&bend, &bent, [2.0, 0.5, 0.0]);
    }

    #[test]
    fn rope_bend_is_the_angle_for_small_bends() {
        let straight = [DVec3::ZERO, DVec3::X, DVec3::new(2.0, 0.0, 0.0)];
        let bend = RopeBendingConstraint::rope([0, 1, 2], &straight, MaterialId::RIGID).unwrap();
        assert!(bend.evaluate(&straight).is_none());
        let theta: f64 = 0.01;
        let bent = [
            DVec3::ZERO,
            DVec3::X,
            DVec3::new(1.0 + theta.cos(), theta.sin(), 0.0),
        ];
        let (c, _) = bend.evaluate(&bent).unwrap();
        assert!((c - theta).abs() < 1e-3 * theta, "{c} vs {theta}");
        let generic = [
            DVec3::new(0.1, 0.2, 0.0),
            DVec3::new(1.0, -0.3, 0.4),
            DVec3::new(1.7, 0.5, -0.2),
        ];
        assert_gradient_matches_finite_differences(&bend, generic, 1e-6);
        assert_conserves_momentum(&bend, generic);
    }

    #[test]
    fn a_rope_bend_gives_the_bits_of_the_general_curvature_with_its_weights() {
        let rest = [DVec3::ZERO, DVec3::X, DVec3::new(2.1, 0.3, 0.0)];
        let bend = RopeBendingConstraint::rope([0, 1, 2], &rest, MaterialId::RIGID).unwrap();
        let general = CurvatureConstraint {
            particles: bend.particles,
            weights: ROPE_WEIGHTS,
            scale: bend.scale,
            material: bend.material,
        };
        let bits = |(c, grad): (f64, [DVec3; 3])| {
            let grad = grad.map(|g| g.to_array().map(f64::to_bits));
            (c.to_bits(), grad)
        };
        for p in [
            [
                DVec3::new(0.1, 0.2, 0.0),
                DVec3::new(1.0, -0.3, 0.4),
                DVec3::new(1.7, 0.5, -0.2),
            ],
            [
                DVec3::new(-3.3, 1e-3, 7.0),
                DVec3::new(-2.2, 0.0, 7.1),
                DVec3::new(-1.0, -1e-3, 7.3),
            ],
        ] {
            let (rope, curvature) = (bend.evaluate(&p).unwrap(), general.evaluate(&p).unwrap());
            assert_eq!(bits(rope), bits(curvature));
        }
        assert_eq!(std::mem::size_of::<RopeBendingConstraint>(), 24);
    }
}
