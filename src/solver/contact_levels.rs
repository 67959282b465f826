//! Level scheduling of the contacts between particles: the substep's contacts are projected
//! one after another in their sorted order (Gauss–Seidel), and this splits that sequence into
//! levels that every thread can share without changing a bit of the result.
//!
//! Contact `k`'s level is one more than the highest level of the earlier contacts that share a
//! particle with it (0 if none): the wavefronts of a sparse triangular solve (Anderson and
//! Saad, 1989). Two contacts of one level share no particle, and every earlier contact a
//! contact depends on is in a lower level, while every later contact sharing a particle with it
//! is in a higher one. So projecting the levels in order, each level's contacts in any order
//! and on any thread, reads and writes every particle in the same sequence as the sorted solve:
//! the same bits, for any thread count. Pinned particles count too, though their positions
//! never change: a projection writes them (adding zero), and no two threads may write one
//! particle in a stage.
//!
//! Finding the levels is one pass over the contacts on one thread (a table lookup per particle),
//! a fraction of projecting them; a level costs the threads a barrier. So the levels are used
//! only when there are enough contacts per level to pay for the barriers
//! ([`ContactLevels::schedule`]); otherwise thread 0 projects the sorted sequence alone, which is
//! the same computation.

use super::parallel::sort_into_buckets;
use std::ops::Range;

/// Contacts per level below which thread 0 projects the whole sequence alone: a barrier costs
/// about as much as projecting a few dozen contacts (docs/benchmarks.md, "Issue 13: contacts
/// on every thread").
const CONTACTS_PER_LEVEL: usize = 64;

/// The levels of the current substep's contacts, and a per-particle table reused to find them.
#[derive(Debug, Clone, Default)]
pub struct ContactLevels {
    /// Contact indices, level by level, ascending within a level.
    order: Vec<u32>,
    /// The levels: ranges of `order`. Empty when the contacts are projected in sequence.
    levels: Vec<Range<usize>>,
    /// Per particle, one more than the level of the last contact scheduled on it (0: none).
    /// All zeros between schedules.
    next_level: Vec<u32>,
    /// Each contact's level.
    level_of: Vec<u32>,
    /// Scratch of the counting sort ([`sort_into_buckets`]): where each level starts in
    /// `order`.
    starts: Vec<usize>,
}

impl ContactLevels {
    /// Levels over `particles` particles.
    pub fn new(particles: usize) -> ContactLevels {
        ContactLevels {
            next_level: vec![0; particles],
            ..ContactLevels::default()
        }
    }

    /// Finds the levels of contacts `0..count`, contact `k` acting on the particles
    /// `particles_of(k)` gives, and keeps them when they hold at least [`CONTACTS_PER_LEVEL`]
    /// contacts on average; returns whether it did. Depends on the contacts only.
    pub fn schedule(
        &mut self,
        count: usize,
        particles_of: impl Fn(usize) -> ([u32; 4], usize),
    ) -> bool {
        self.order.clear();
        self.levels.clear();
        if count < 2 * CONTACTS_PER_LEVEL {
            return false;
        }
        self.level_of.clear();
        let mut deepest = 0;
        for k in 0..count {
            let (particles, n) = particles_of(k);
            let particles = &particles[..n];
            let level = (particles.iter())
                .map(|&i| self.next_level[i as usize])
                .max()
                .unwrap_or(0);
            for &i in particles {
                self.next_level[i as usize] = level + 1;
            }
            self.level_of.push(level);
            deepest = deepest.max(level + 1);
            // Levels only deepen: once too deep for the contacts, they stay so (a pile's
            // folds chain ~170 contacts into ~50 levels, and the rest of the pass was
            // thread 0's alone while the others waited).
            if count < CONTACTS_PER_LEVEL * deepest as usize {
                break;
            }
        }
        for k in 0..self.level_of.len() {
            let (particles, n) = particles_of(k);
            for &i in &particles[..n] {
                self.next_level[i as usize] = 0;
            }
        }
        let levels = deepest as usize;
        if count < CONTACTS_PER_LEVEL * levels {
            return false;
        }
        // Ascending contact indices within a level.
        let keys = self.level_of.iter().map(|&level| level as usize);
        sort_into_buckets(keys, levels, &mut self.starts, &mut self.order);
        (self.levels).extend((0..levels).map(|l| self.starts[l]..self.starts[l + 1]));
        true
    }

    /// The number of levels: 0 when the contacts are projected in sequence.
    pub fn len(&self) -> usize {
        self.levels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.levels.is_empty()
    }

    /// The contacts of level `level`.
    pub fn level(&self, level: usize) -> &[u32] {
        &self.order[self.levels[level].clone()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Contacts on a chain of particles: contact k on particles k and k + 1 (every contact
    /// depends on the one before), then many on disjoint pairs far away.
    #[test]
    fn a_contact_comes_after_every_earlier_contact_it_shares_a_particle_with() {
        let chain = 4;
        let free = 2000;
        let particles_of = |k: usize| {
            let first = if k < chain { k } else { 100 + 2 * k };
            ([first as u32, first as u32 + 1, 0, 0], 2)
        };
        let mut levels = ContactLevels::new(100 + 2 * (chain + free) + 2);
        assert!(levels.schedule(chain + free, particles_of));
        assert_eq!(levels.len(), chain);
        let level_of = |k: u32| (0..levels.len()).find(|&l| levels.level(l).contains(&k));
        for k in 1..chain as u32 {
            assert_eq!(level_of(k), Some(k as usize), "the chain is sequential");
        }
        for l in 0..levels.len() {
            let level = levels.level(l);
            assert!(level.windows(2).all(|w| w[0] < w[1]), "ascending");
            let mut seen = std::collections::BTreeSet::new();
            for &k in level {
                let (p, n) = particles_of(k as usize);
                assert!(p[..n].iter().all(|&i| seen.insert(i)), "no shared particle");
            }
        }
        assert_eq!(
            (0..levels.len())
                .map(|l| levels.level(l).len())
                .sum::<usize>(),
            chain + free
        );
        assert!(levels.next_level.iter().all(|&l| l == 0), "table reset");
    }

    #[test]
    fn few_contacts_per_level_are_left_in_sequence() {
        // 300 contacts all on particle 0: 300 levels of one.
        let mut levels = ContactLevels::new(400);
        assert!(!levels.schedule(300, |k| ([0, k as u32 + 1, 0, 0], 2)));
        assert!(levels.is_empty());
        assert!(levels.next_level.iter().all(|&l| l == 0));
    }
}
