//! One projection for every contact between simulated particles. A contact compares two
//! points that are weighted sums of particles — a particle and another particle, a particle
//! and the point under it on a triangle, the closest points of two edges — so its gap is
//! `d = Σ c_k x_k` with coefficients `c_k` (positive on one side, negative on the other,
//! each side's summing to one) and its constraint along the unit direction `n`:
//!
//! `C = n · d − target ≥ 0`, `∇_{x_k} C = c_k n` (n held fixed, as usual for contacts).
//!
//! With `W = Σ c_k² w_k` the exact projection is `Δλ = −C / W`, `Δx_k = w_k c_k Δλ n`; it
//! conserves momentum because the coefficients sum to zero. Friction (Macklin et al. 2014,
//! §6.1) removes the tangential part `s_t` of the gap's change over the substep,
//! `s = Σ c_k (x_k − x_prev_k)`, up to `μ · depth`, with the same weights:
//! `Δx_k = −w_k c_k r / W` for the removed slip `r` changes the gap by exactly `−r`.

use crate::constraints::Positions;
use glam::DVec3;

/// Particles and coefficients of a contact's gap `d = Σ c_k x_k`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stencil<const N: usize> {
    pub particles: [usize; N],
    pub coefficients: [f64; N],
}

impl<const N: usize> Stencil<N> {
    /// The gap `Σ c_k x_k`.
    pub fn gap<P: Positions + ?Sized>(&self, x: &P) -> DVec3 {
        (0..N)
            .map(|k| x.position(self.particles[k]) * self.coefficients[k])
            .sum()
    }

    /// Pushes the gap along `n` out to `target` if it is shorter, then applies friction
    /// `friction`. Returns whether the contact was active.
    pub fn resolve<P: Positions + ?Sized>(
        &self,
        n: DVec3,
        target: f64,
        x: &mut P,
        x_prev: &[DVec3],
        inv_mass: &[f64],
        friction: f64,
    ) -> bool {
        let depth = target - n.dot(self.gap(x));
        let w: [f64; N] = self.particles.map(|i| inv_mass[i]);
        let w_sum: f64 = (0..N)
            .map(|k| self.coefficients[k] * self.coefficients[k] * w[k])
            .sum();
        if depth <= 0.0 || w_sum == 0.0 {
            return false;
        }
        let step = depth / w_sum;
        for (k, &i) in self.particles.iter().enumerate() {
            x.move_by(i, n * (w[k] * self.coefficients[k] * step));
        }
        let slip = self.gap(x) - self.gap(x_prev);
        let tangential = slip - n * slip.dot(n);
        let amount = tangential.length();
        if amount > 0.0 {
            let removed = if amount <= friction * depth {
                tangential
            } else {
                tangential * (friction * depth / amount)
            };
            for (k, &i) in self.particles.iter().enumerate() {
                // x − r equals x + (−r) bit for bit (IEEE 754 defines one as the other).
                x.move_by(i, -(removed * (w[k] * self.coefficients[k] / w_sum)));
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A particle against the midpoint of an edge: gap `x_0 − (x_1 + x_2) / 2`.
    fn particle_on_edge() -> Stencil<3> {
        Stencil {
            particles: [0, 1, 2],
            coefficients: [1.0, -0.5, -0.5],
        }
    }

    #[test]
    fn reaches_the_target_and_conserves_momentum() {
        let x_prev = vec![DVec3::new(0.5, 0.05, 0.0), DVec3::ZERO, DVec3::X];
        let mut x = x_prev.clone();
        x[0] = DVec3::new(0.6, 0.004, 0.0);
        let before = x.clone();
        let inv_mass = [1.0, 2.0, 0.5];
        let stencil = particle_on_edge();
        assert!(stencil.resolve(DVec3::Y, 0.01, x.as_mut_slice(), &x_prev, &inv_mass, 0.3));
        assert!((stencil.gap(x.as_slice()).y - 0.01).abs() < 1e-15);
        let change: DVec3 = (0..3).map(|k| (x[k] - before[k]) / inv_mass[k]).sum();
        assert!(change.length() < 1e-15, "{change}");
    }

    #[test]
    fn friction_removes_slip_up_to_mu_times_depth() {
        let x_prev = vec![DVec3::new(0.5, 0.01, 0.0), DVec3::ZERO, DVec3::X];
        let inv_mass = [1.0, 0.0, 0.0];
        let stencil = particle_on_edge();
        // Slides 1 mm while pressing 4 mm in: static with μ = 0.5 (limit 2 mm).
        let mut x = x_prev.clone();
        x[0] += DVec3::new(0.001, -0.004, 0.0);
        stencil.resolve(DVec3::Y, 0.01, x.as_mut_slice(), &x_prev, &inv_mass, 0.5);
        assert!((x[0] - x_prev[0]).length() < 1e-15);
        // Slides 5 mm: keeps 5 − 2 = 3 mm.
        let mut x = x_prev.clone();
        x[0] += DVec3::new(0.005, -0.004, 0.0);
        stencil.resolve(DVec3::Y, 0.01, x.as_mut_slice(), &x_prev, &inv_mass, 0.5);
        assert!((x[0].x - x_prev[0].x - 0.003).abs() < 1e-15, "{}", x[0]);
    }

    #[test]
    fn a_separated_gap_is_left_alone() {
        let x_prev = vec![DVec3::new(0.5, 0.05, 0.0), DVec3::ZERO, DVec3::X];
        let mut x = x_prev.clone();
        assert!(!particle_on_edge().resolve(
            DVec3::Y,
            0.01,
            x.as_mut_slice(),
            &x_prev,
            &[1.0; 3],
            0.3
        ));
        assert_eq!(x, x_prev);
    }
}
