//! Contacts between particles of different objects (`collide = true` on both): every particle
//! is a sphere of radius r (`collision.thickness`), and two particles closer than 2r push apart
//! (`C = |p_i − p_j| − 2r ≥ 0`, solved exactly, the correction split by inverse mass), with
//! Coulomb friction on their relative slip (Macklin et al. 2014, as for colliders) using
//! `collision.friction`.
//!
//! Candidates come from a spatial hash of cell size 2r (Teschner et al. 2003) built after the
//! prediction of each substep; it is a sorted list of (cell, particle), so pairs come out in
//! one fixed order whatever the threads, and pairs are kept while closer than 4r. One thread
//! projects them in that order (Gauss-Seidel), each iteration, before the collider contacts.

use glam::DVec3;

/// Cell coordinates of `p` for cell size `cell`.
fn cell_of(p: DVec3, cell: f64) -> [i64; 3] {
    (p / cell).floor().to_array().map(|c| c as i64)
}

/// Pairs `[i, j]` (i < j) of `particles` from different objects closer than `reach`, sorted.
pub fn find_pairs(
    x: &[DVec3],
    particles: &[usize],
    owner: &[u32],
    cell: f64,
    reach: f64,
) -> Vec<[u32; 2]> {
    let mut cells: Vec<([i64; 3], usize)> = particles
        .iter()
        .map(|&i| (cell_of(x[i], cell), i))
        .collect();
    cells.sort_unstable();
    let mut pairs = Vec::new();
    let reach_sq = reach * reach;
    for &(c, i) in &cells {
        for dx in -1..=1 {
            for dy in -1..=1 {
                for dz in -1..=1 {
                    let key = [c[0] + dx, c[1] + dy, c[2] + dz];
                    let from = cells.partition_point(|e| e.0 < key);
                    for &(other, j) in &cells[from..] {
                        if other != key {
                            break;
                        }
                        if i < j && owner[i] != owner[j] && x[i].distance_squared(x[j]) < reach_sq {
                            pairs.push([i as u32, j as u32]);
                        }
                    }
                }
            }
        }
    }
    pairs.sort_unstable();
    pairs
}

/// Pushes particles `i` and `j` apart to `2 radius` and applies friction to their relative
/// slip since `x_prev`. Returns whether they were in contact.
pub fn resolve_pair(
    [i, j]: [u32; 2],
    x: &mut [DVec3],
    x_prev: &[DVec3],
    inv_mass: &[f64],
    radius: f64,
    friction: f64,
) -> bool {
    let (i, j) = (i as usize, j as usize);
    let (wi, wj) = (inv_mass[i], inv_mass[j]);
    let w = wi + wj;
    let d = x[i] - x[j];
    let length = d.length();
    let c = length - 2.0 * radius;
    if c >= 0.0 || w == 0.0 || length < 1e-12 {
        return false;
    }
    let n = d / length;
    let depth = -c;
    x[i] += n * (depth * wi / w);
    x[j] -= n * (depth * wj / w);
    let slip = (x[i] - x_prev[i]) - (x[j] - x_prev[j]);
    let tangential = slip - n * slip.dot(n);
    let amount = tangential.length();
    if amount > 0.0 {
        let removed = if amount <= friction * depth {
            tangential
        } else {
            tangential * (friction * depth / amount)
        };
        x[i] -= removed * (wi / w);
        x[j] += removed * (wj / w);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_close_pairs_of_different_objects_only() {
        let x = vec![
            DVec3::ZERO,
            DVec3::new(0.015, 0.0, 0.0),
            DVec3::new(0.0, 0.015, 0.0),
            DVec3::new(1.0, 0.0, 0.0),
        ];
        let owner = [0, 1, 0, 1];
        let pairs = find_pairs(&x, &[0, 1, 2, 3], &owner, 0.02, 0.04);
        // 0–2 share an object; 3 is far away.
        assert_eq!(pairs, vec![[0, 1], [1, 2]]);
    }

    #[test]
    fn a_pair_is_pushed_to_twice_the_radius_conserving_momentum() {
        let mut x = vec![DVec3::ZERO, DVec3::new(0.01, 0.0, 0.0)];
        let x_prev = x.clone();
        let inv_mass = [1.0, 0.5];
        assert!(resolve_pair([0, 1], &mut x, &x_prev, &inv_mass, 0.01, 0.5));
        assert!((x[0].distance(x[1]) - 0.02).abs() < 1e-15);
        let momentum = (x[0] - x_prev[0]) / inv_mass[0] + (x[1] - x_prev[1]) / inv_mass[1];
        assert!(momentum.length() < 1e-15);
    }
}
