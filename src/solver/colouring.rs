//! Greedy graph colouring of constraints (Box2D v3 `constraint_graph.c`; PHYSICS.md,
//! "Deterministic parallelism").
//!
//! Constraints are visited once, in their build order, and each takes the lowest colour none
//! of whose constraints touches any of its particles (a 64-bit mask of used colours per
//! particle). Constraints that fit none of the 64 colours go to one overflow group, solved
//! last. The block is then stored sorted by colour, so every colour is a contiguous slice of
//! constraints sharing no particle: safe to project in parallel, and identical whatever the
//! thread count. Colour order also keeps Gauss-Seidel stable: visiting a 64 × 64 cloth in mesh
//! order (each constraint sharing a particle with the one before) diverged where colour order
//! did not.

use crate::constraints::Constraint;
use glam::DVec3;
use std::ops::Range;

const COLOURS: u32 = 64;

/// One constraint kind, sorted by colour, with the XPBD multipliers λ beside it.
#[derive(Debug, Clone, Default)]
pub struct ConstraintBlock<K> {
    pub items: Vec<K>,
    pub lambda: Vec<f64>,
    /// Contiguous ranges of `items`, one per colour: no two constraints of a range share a
    /// particle.
    pub colours: Vec<Range<usize>>,
    /// The constraints that fit none of the colours (at the end of `items`), solved by one
    /// thread after the colours. Empty unless a particle has more than ~64 constraints.
    pub overflow: Range<usize>,
}

impl<K> ConstraintBlock<K> {
    /// Colours `items` (in the given order). Pinned particles (inverse mass 0) never move, so
    /// constraints may share them within a colour (as Box2D does with static bodies): a
    /// thousand tethers to one pin still fit one colour.
    pub fn new<const N: usize>(items: Vec<K>, inv_mass: &[f64]) -> Self
    where
        K: Constraint<N>,
    {
        // Temporaries sized for the build's memory peak (it is reached here on large cloth):
        // a colour fits a byte (at most 64, or 64 for the overflow group) and an index 32 bits.
        let mut used = vec![0u64; inv_mass.len()];
        let mut colour_of: Vec<u8> = Vec::with_capacity(items.len());
        for item in &items {
            let particles = item.particles();
            let moves = |i: &&u32| inv_mass[**i as usize] != 0.0;
            let taken = particles
                .iter()
                .filter(moves)
                .fold(0u64, |m, &i| m | used[i as usize]);
            let colour = (!taken).trailing_zeros() as u8; // 64 when every colour is taken
            if u32::from(colour) < COLOURS {
                for &i in particles.iter().filter(moves) {
                    used[i as usize] |= 1 << colour;
                }
            }
            colour_of.push(colour);
        }
        let count = u32::try_from(items.len()).expect("fewer than 2³² constraints of a kind");
        let mut order: Vec<u32> = (0..count).collect();
        order.sort_by_key(|&k| colour_of[k as usize]); // stable: build order within a colour
        let mut colours = Vec::new();
        let mut start = 0;
        while start < order.len() && u32::from(colour_of[order[start] as usize]) < COLOURS {
            let colour = colour_of[order[start] as usize];
            let end = start + order[start..].partition_point(|&k| colour_of[k as usize] == colour);
            colours.push(start..end);
            start = end;
        }
        drop(colour_of);
        drop(used);
        let mut items = items;
        permute_in_place(&mut items, order);
        ConstraintBlock {
            lambda: vec![0.0; items.len()],
            overflow: start..items.len(),
            items,
            colours,
        }
    }
}

/// Reorders `items` so that `items[k]` becomes the old `items[order[k]]`, by swapping along
/// the permutation's cycles: no second copy of the constraints (for cloth-256 the copy was
/// 10 MB at the peak of the build).
fn permute_in_place<K>(items: &mut [K], mut order: Vec<u32>) {
    for start in 0..items.len() {
        // Follow the cycle through `start`; each visited slot is marked done by pointing it
        // at itself.
        let mut k = start;
        while order[k] as usize != start {
            let next = order[k] as usize;
            items.swap(k, next);
            order[k] = k as u32;
            k = next;
        }
        order[k] = k as u32;
    }
}

impl<K> ConstraintBlock<K> {
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// `max |C|` and `Σ C²` over the constraints `range` at positions `x`.
    pub fn residual_sums<const N: usize>(&self, range: Range<usize>, x: &[DVec3]) -> (f64, f64)
    where
        K: Constraint<N>,
    {
        let mut max: f64 = 0.0;
        let mut sum_sq = 0.0;
        for item in &self.items[range] {
            let p = item.particles().map(|i| x[i as usize]);
            if let Some((c, _)) = item.evaluate(&p) {
                max = max.max(c.abs());
                sum_sq += c * c;
            }
        }
        (max, sum_sq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constraints::distance::DistanceConstraint;

    #[test]
    fn colours_share_no_particle_and_keep_every_constraint() {
        // A chain 0-1-2-...-9 plus a few chords.
        let mut edges: Vec<[u32; 2]> = (0..9).map(|k| [k, k + 1]).collect();
        edges.extend([[0, 5], [2, 7], [3, 9]]);
        let items: Vec<DistanceConstraint> = edges
            .iter()
            .map(|&particles| DistanceConstraint {
                particles,
                rest_length: 1.0,
                material: crate::constraints::MaterialId::RIGID,
                tearable: false,
                diagonal: false,
            })
            .collect();
        let block = ConstraintBlock::new(items.clone(), &[1.0; 10]);
        assert_eq!(block.len(), items.len());
        assert_eq!(block.colours.last().unwrap().end, items.len());
        assert!(block.overflow.is_empty());
        for colour in &block.colours {
            let mut seen = Vec::new();
            for c in &block.items[colour.clone()] {
                for p in c.particles {
                    assert!(!seen.contains(&p), "particle {p} twice in one colour");
                    seen.push(p);
                }
            }
        }
        // A chain needs two colours; the chords add at most a third and fourth.
        assert!(block.colours.len() <= 4, "{}", block.colours.len());
    }

    #[test]
    fn permuting_in_place_moves_each_item_to_its_slot() {
        let order: Vec<u32> = vec![3, 0, 4, 1, 2, 6, 5, 7];
        let mut items: Vec<usize> = (0..order.len()).map(|k| 10 * k).collect();
        permute_in_place(&mut items, order.clone());
        let expected: Vec<usize> = order.iter().map(|&k| 10 * k as usize).collect();
        assert_eq!(items, expected);
    }

    #[test]
    fn a_particle_with_more_than_64_constraints_fills_the_overflow_group() {
        // A star: 70 edges around particle 0 need 70 colours.
        let items: Vec<DistanceConstraint> = (1..=70)
            .map(|k| DistanceConstraint {
                particles: [0, k],
                rest_length: 1.0,
                material: crate::constraints::MaterialId::RIGID,
                tearable: false,
                diagonal: false,
            })
            .collect();
        let block = ConstraintBlock::new(items.clone(), &[1.0; 71]);
        assert_eq!(block.colours.len(), 64);
        assert_eq!(block.overflow, 64..70);
        // With the centre pinned nothing conflicts: one colour.
        let mut inv_mass = [1.0; 71];
        inv_mass[0] = 0.0;
        let pinned = ConstraintBlock::new(items, &inv_mass);
        assert_eq!(pinned.colours.len(), 1);
        assert!(pinned.overflow.is_empty());
    }
}
