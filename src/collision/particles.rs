//! Contacts between particles (objects with `collide = true` against each other, and an
//! object with `self_collision = true` against itself): every particle is a sphere of radius
//! r (`collision.thickness`), and two particles closer than 2r push apart
//! (`C = |p_i − p_j| − 2r ≥ 0`, solved exactly as a [`Stencil`] with coefficients `[1, −1]`),
//! with Coulomb friction on their relative slip (Macklin et al. 2014, as for colliders) using
//! `collision.friction`.
//!
//! Candidates come from a [`SpatialHash`] (Teschner et al. 2003) built after the prediction
//! of each substep; pairs come out sorted, so in one fixed order whatever the threads, and are
//! kept while closer than the search reach. Which pairs may touch at all (different objects,
//! or the same one far enough apart at rest) is the caller's rule.

use super::spatial_hash::SpatialHash;
use super::stencil::{Mobility, Stencil};
use crate::constraints::Positions;
use glam::DVec3;

/// Fills `pairs` with the pairs `[i, j]` (i < j) of `particles` closer than `reach` that
/// `allowed` accepts, sorted (what it held before is dropped; its buffer is reused).
pub fn find_pairs(
    x: &[DVec3],
    hash: &SpatialHash,
    particles: &[u32],
    reach: f64,
    allowed: impl Fn(u32, u32) -> bool,
    pairs: &mut Vec<[u32; 2]>,
) {
    pairs.clear();
    let reach_sq = reach * reach;
    for &i in particles {
        let p = x[i as usize];
        hash.for_each_bucket_near(p - reach, p + reach, |bucket| {
            for &j in bucket {
                if i < j && p.distance_squared(x[j as usize]) < reach_sq && allowed(i, j) {
                    pairs.push([i, j]);
                }
            }
        });
    }
    pairs.sort_unstable();
    pairs.dedup();
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
    fn finds_close_pairs_the_rule_allows() {
        let x = vec![
            DVec3::ZERO,
            DVec3::new(0.015, 0.0, 0.0),
            DVec3::new(0.0, 0.015, 0.0),
            DVec3::new(1.0, 0.0, 0.0),
        ];
        let owner = [0, 1, 0, 1];
        let particles = [0, 1, 2, 3];
        let hash = SpatialHash::build(&x, &particles, 0.04);
        let mut pairs = vec![[9, 9]]; // replaced
        let rule = |i: u32, j: u32| owner[i as usize] != owner[j as usize];
        find_pairs(&x, &hash, &particles, 0.04, rule, &mut pairs);
        // 0–2 share an object; 3 is far away.
        assert_eq!(pairs, vec![[0, 1], [1, 2]]);
    }

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
