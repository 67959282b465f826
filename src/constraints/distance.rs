//! Distance (stretch) constraint between two particles (Müller et al. 2007, PBD §4.2).
//!
//! `C = |p1 − p2| − d`, `∇_1 C = n`, `∇_2 C = −n` with `n = (p1 − p2)/|p1 − p2|`.
//! Compliance in m/N: under a tension T the edge settles at extension `α T`. Skipped when the
//! two particles coincide (the direction is undefined).

use super::lanes::{Real, Vec3};
use super::{per_lane, Constraint, MaterialId};
use glam::DVec3;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DistanceConstraint {
    pub particles: [u32; 2],
    /// Rest length d, metres.
    pub rest_length: f64,
    pub material: MaterialId,
    /// Whether the edge tears beyond its object's `stretch.tear_strain`
    /// ([`DistanceConstraint::tear_length`]). A flag, not a length per edge: 24 bytes an edge
    /// instead of 32, 1.5 MiB of cloth-256 (docs/benchmarks.md, "Issue 13: positions padded
    /// with their inverse masses").
    pub tearable: bool,
    /// A diagonal inside a face of more than three sides (shear, `shear`), not an edge of
    /// the user's mesh: left out of `max_edge_strain`.
    pub diagonal: bool,
}

impl DistanceConstraint {
    /// Length beyond which the edge tears, for its object's tear strain: `d (1 + strain)`.
    pub fn tear_length(&self, tear_strain: f64) -> f64 {
        self.rest_length * (1.0 + tear_strain)
    }

    /// Engineering strain `|p1 − p2| / d − 1` (positive when stretched).
    pub fn strain(&self, x: &[DVec3]) -> f64 {
        let [a, b] = self.particles;
        x[a as usize].distance(x[b as usize]) / self.rest_length - 1.0
    }
}

impl Constraint<2> for DistanceConstraint {
    /// The rest length.
    type Shape<S: Real> = S;

    fn particles(&self) -> [u32; 2] {
        self.particles
    }
    fn material(&self) -> MaterialId {
        self.material
    }
    #[inline(always)]
    fn shape<S: Real>(items: &[Self]) -> S {
        per_lane(items, |c| c.rest_length)
    }
    #[inline(always)]
    fn value_and_gradient<S: Real>(
        rest_length: &S,
        p: &[Vec3<S>; 2],
    ) -> (S, [Vec3<S>; 2], S::Mask) {
        let d = p[0] - p[1];
        let length = d.length();
        let n = d.scale(S::splat(1.0) / length);
        (length - *rest_length, [n, -n], !length.lt(S::splat(1e-12)))
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
    use crate::constraints::project;
    use crate::constraints::testing::assert_gradient_matches_finite_differences;

    fn edge(rest_length: f64) -> DistanceConstraint {
        DistanceConstraint {
            particles: [0, 1],
            rest_length,
            material: MaterialId::RIGID,
            tearable: false,
            diagonal: false,
        }
    }

    #[test]
    fn zero_at_rest_and_gradient_matches_finite_differences() {
        let p = [DVec3::new(0.1, 0.2, 0.3), DVec3::new(0.7, -0.4, 1.1)];
        let rest = p[0].distance(p[1]);
        assert!(edge(rest).evaluate(&p).unwrap().0.abs() < 1e-15);
        assert_gradient_matches_finite_differences(&edge(0.5), p, 1e-6);
        crate::constraints::testing::assert_conserves_momentum(&edge(0.5), p);
        crate::constraints::testing::assert_weighted_gradient_sq_is_the_gradients(
            &edge(0.5),
            &p,
            [1.5, 0.25],
        );
    }

    #[test]
    fn rigid_projection_restores_length_and_conserves_momentum() {
        let x_prev = vec![DVec3::ZERO, DVec3::new(2.0, 0.0, 0.0)];
        let inv_mass = [1.0, 0.25]; // masses 1 and 4
        let mut particles = crate::constraints::weighted::packed(&x_prev, &inv_mass);
        let mut lambda = 0.0;
        project(
            &edge(1.0),
            &mut lambda,
            particles.as_mut_slice(),
            &x_prev,
            &crate::constraints::Materials::default().terms(100.0),
        );
        let x = [particles[0].position, particles[1].position];
        assert!((x[0].distance(x[1]) - 1.0).abs() < 1e-12);
        let momentum = (x[0] - x_prev[0]) * 1.0 + (x[1] - x_prev[1]) * 4.0;
        assert!(momentum.length() < 1e-12);
    }

    #[test]
    fn an_edge_is_24_bytes() {
        // Two indices, the rest length, the material and two flags (docs/benchmarks.md,
        // "Issue 13: positions padded with their inverse masses").
        assert_eq!(std::mem::size_of::<DistanceConstraint>(), 24);
    }

    #[test]
    fn coincident_particles_are_skipped() {
        assert!(edge(1.0).evaluate(&[DVec3::ONE, DVec3::ONE]).is_none());
    }
}
