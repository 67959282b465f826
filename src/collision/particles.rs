//! Contacts between particles (objects with `collide = true` against each other, and an
//! object with `self_collision = true` against itself): every particle is a sphere of radius
//! r (`collision.thickness`), and two particles closer than 2r push apart
//! (`C = |p_i − p_j| − 2r ≥ 0`, solved exactly as a [`Stencil`] with coefficients `[1, −1]`),
//! with Coulomb friction on their relative slip (Macklin et al. 2014, as for colliders) using
//! `collision.friction`.
//!
//! Candidates are the pairs of the near lists ([`super::near_lists`]) closer than the search
//! reach ([`close`]) in the substep; the lists are sorted, so the candidates come in one
//! fixed order whatever the threads. Which pairs may touch at all (different objects, or the
//! same one far enough apart at rest) is the caller's rule, applied when the lists are built.

use super::stencil::{Mobility, Stencil};
use crate::constraints::Positions;
use glam::DVec3;

/// Whether particles `i` and `j` are closer than `reach`: a sphere pair's candidate test.
#[inline]
pub fn close([i, j]: [u32; 2], x: &[DVec3], reach: f64) -> bool {
    x[i as usize].distance_squared(x[j as usize]) < reach * reach
}

/// Pushes particles `i` and `j` apart to `2 radius` and applies friction to their relative
/// slip since `x_prev`. Returns whether they were in contact.
pub fn resolve_pair<P: Positions + ?Sized>(
    [i, j]: [u32; 2],
    x: &mut P,
    x_prev: &[DVec3],
    mobility: &Mobility,
    radius: f64,
    friction: f64,
) -> bool {
    let (i, j) = (i as usize, j as usize);
    let Some(n) = (x.position(i) - x.position(j)).try_normalize() else {
        return false;
    };
    let stencil = Stencil {
        particles: [i, j],
        coefficients: [1.0, -1.0],
    };
    stencil.resolve(n, 2.0 * radius, x, x_prev, mobility, friction)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_is_pushed_to_twice_the_radius_conserving_momentum() {
        let mut x = vec![DVec3::ZERO, DVec3::new(0.01, 0.0, 0.0)];
        let x_prev = x.clone();
        let inv_mass = [1.0, 0.5];
        assert!(resolve_pair(
            [0, 1],
            x.as_mut_slice(),
            &x_prev,
            &Mobility::free(&inv_mass),
            0.01,
            0.5
        ));
        assert!((x[0].distance(x[1]) - 0.02).abs() < 1e-15);
        let momentum = (x[0] - x_prev[0]) / inv_mass[0] + (x[1] - x_prev[1]) / inv_mass[1];
        assert!(momentum.length() < 1e-15);
    }
}
