//! Long-range attachment (Kim, Chentanez, Müller 2012): a unilateral tether from a free
//! particle to a pinned one.
//!
//! `C = |p − a| − s · L ≤ 0`, with `L` the rest distance between the two and `s` the
//! `max_stretch` (≥ 1). The tether acts only when the particle is farther than `s · L` from its
//! anchor (then `∇_p C = n`, `n = (p − a)/|p − a|`), never when the cloth is slack. The anchor
//! is pinned (inverse mass 0), so only the free particle moves. Rigid (compliance 0).

use super::lanes::{Real, Vec3};
use super::{per_lane, Constraint, MaterialId};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LongRangeConstraint {
    /// `[free particle, pinned anchor]`.
    pub particles: [u32; 2],
    /// `max_stretch × rest distance`, metres.
    pub max_length: f64,
}

impl Constraint<2> for LongRangeConstraint {
    /// `max_length`.
    type Shape<S: Real> = S;

    fn particles(&self) -> [u32; 2] {
        self.particles
    }
    fn material(&self) -> MaterialId {
        MaterialId::RIGID
    }
    #[inline(always)]
    fn shape<S: Real>(items: &[Self]) -> S {
        per_lane(items, |c| c.max_length)
    }
    /// Does not act while the tether is slack.
    #[inline(always)]
    fn value_and_gradient<S: Real>(max_length: &S, p: &[Vec3<S>; 2]) -> (S, [Vec3<S>; 2], S::Mask) {
        let d = p[0] - p[1];
        let length = d.length();
        let n = d.scale(S::splat(1.0) / length);
        let slack = length.le(*max_length) | length.lt(S::splat(1e-12));
        (length - *max_length, [n, -n], !slack)
    }
    /// `∇C = ±n` with `|n| = 1`: `w_0 + w_1`, without waiting for the direction.
    #[inline(always)]
    fn weighted_gradient_sq<S: Real>(_: &S, _: &[Vec3<S>; 2], w: &[S; 2]) -> S {
        w[0] + w[1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constraints::testing::assert_gradient_matches_finite_differences;
    use glam::DVec3;

    #[test]
    fn acts_only_when_stretched_and_gradient_matches() {
        let tether = LongRangeConstraint {
            particles: [0, 1],
            max_length: 1.0,
        };
        assert!(tether
            .evaluate(&[DVec3::new(0.5, 0.0, 0.0), DVec3::ZERO])
            .is_none());
        assert!(tether
            .evaluate(&[DVec3::new(1.0, 0.0, 0.0), DVec3::ZERO])
            .is_none());
        let p = [DVec3::new(1.2, 0.3, -0.4), DVec3::new(0.1, 0.0, 0.0)];
        let (c, _) = tether.evaluate(&p).unwrap();
        assert!((c - (p[0].distance(p[1]) - 1.0)).abs() < 1e-15);
        assert_gradient_matches_finite_differences(&tether, p, 1e-6);
        crate::constraints::testing::assert_weighted_gradient_sq_is_the_gradients(
            &tether,
            &p,
            [0.0, 2.0],
        );
    }
}
