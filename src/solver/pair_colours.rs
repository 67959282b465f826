//! Colouring of a substep's contact pairs, so that every thread can project them: the
//! collider-feature pairs of [`crate::collision::features`].
//!
//! The pairs are listed in cloth order, and neighbouring cloth triangles share particles, so
//! in that order nearly every pair depends on the one before: the dancer's 2 600 pairs per
//! substep chain into about 1 100 wavefront levels ([`super::contact_levels`], which keeps
//! the listed order bit for bit), two or three pairs a level. These pairs are therefore
//! projected in *colour* order instead, as the constraints are ([`super::colouring`], Box2D
//! v3's `constraint_graph.c`): each pair, visited in the listed order, takes the lowest of 64
//! colours none of whose pairs moves one of its particles (a 64-bit mask of used colours per
//! particle); pairs that fit no colour go to one overflow group, projected last by one
//! thread. Projection is Gauss–Seidel in colour order, colours one after another and the
//! overflow group in its listed order; a colour's pairs share no particle, so the threads
//! can split it anywhere. The order depends on the list alone, so the bits are the same for
//! any thread count, and the same whether one thread or all project the colours.
//!
//! Every particle a pair writes counts, pinned ones too: a projection writes them (adding
//! zero), and no two threads may write one particle in a stage.

use super::parallel::sort_into_buckets;
use std::ops::Range;

/// Colours before the overflow group: one bit each in a particle's mask.
const COLOURS: usize = 64;

/// Pairs per colour, on average, below which one thread projects them all: a colour costs
/// the threads a barrier, about what projecting a dozen collider-feature pairs costs
/// (docs/benchmarks.md, "Issue 13: collider-feature contacts on every thread").
const PAIRS_PER_COLOUR: usize = 16;

/// The colours of the current substep's pairs, and per-particle masks reused to find them.
#[derive(Debug, Clone, Default)]
pub struct PairColours {
    /// Pair indices, colour by colour (ascending within a colour), then the overflow group.
    order: Vec<u32>,
    /// The colours: ranges of `order`, then the overflow group's range (possibly empty).
    groups: Vec<Range<usize>>,
    /// Per particle, the colours of the pairs scheduled on it. All zeros between schedules.
    used: Vec<u64>,
    /// Each pair's colour ([`COLOURS`]: the overflow group).
    colour_of: Vec<u8>,
    /// Scratch of the counting sort ([`sort_into_buckets`]): where each group starts in
    /// `order`.
    starts: Vec<usize>,
}

impl PairColours {
    /// Colours over `particles` particles.
    pub fn new(particles: usize) -> PairColours {
        PairColours {
            used: vec![0; particles],
            ..PairColours::default()
        }
    }

    /// Colours the pairs, pair `k` writing the particles `particles[k]` (a pair of fewer
    /// particles repeats one). Depends on the pairs only. Allocates nothing once its buffers
    /// have grown.
    pub fn schedule(&mut self, particles: &[[u32; 3]]) {
        let used = &mut self.used[..];
        self.colour_of.clear();
        self.colour_of.extend(particles.iter().map(|pair| {
            let taken = (pair.iter()).fold(0u64, |m, &i| m | used[i as usize]);
            let colour = (!taken).trailing_zeros() as usize; // 64 when every colour is taken
            if colour < COLOURS {
                for &i in pair {
                    used[i as usize] |= 1 << colour;
                }
            }
            colour as u8
        }));
        for &i in particles.as_flattened() {
            used[i as usize] = 0;
        }
        // The listed order within a colour; the overflow group is bucket `COLOURS`.
        let colours = (self.colour_of.iter())
            .map(|&c| (c as usize + 1).min(COLOURS))
            .max()
            .unwrap_or(0);
        let keys = self.colour_of.iter().map(|&c| usize::from(c));
        sort_into_buckets(keys, COLOURS + 1, &mut self.starts, &mut self.order);
        let starts = &self.starts;
        self.groups.clear();
        (self.groups).extend((0..colours).map(|c| starts[c]..starts[c + 1]));
        self.groups.push(starts[COLOURS]..starts[COLOURS + 1]);
    }

    /// The number of colours (the overflow group not counted).
    pub fn colour_count(&self) -> usize {
        self.groups.len().saturating_sub(1)
    }

    /// The pairs of colour `colour`: no two share a particle.
    pub fn colour(&self, colour: usize) -> &[u32] {
        &self.order[self.groups[colour].clone()]
    }

    /// The pairs that fit no colour, in their listed order: projected one after another.
    pub fn overflow(&self) -> &[u32] {
        self.groups.last().map_or(&[], |g| &self.order[g.clone()])
    }

    /// Every pair in projection order: the colours in turn, then the overflow group.
    pub fn in_order(&self) -> &[u32] {
        &self.order
    }

    /// Whether the colours hold enough pairs for the threads to share them, a barrier after
    /// each; otherwise one thread projects [`Self::in_order`], which is the same computation.
    pub fn worth_sharing(&self) -> bool {
        self.order.len() >= PAIRS_PER_COLOUR * self.colour_count().max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pairs on a strip of particles, pair k on particles k, k + 1, k + 2 (each shares two
    /// with the one before, as neighbouring triangles do), then 70 pairs on particle 500 and
    /// one other each (the first repeated, as an edge's pair does).
    fn strip_then_star(count: usize) -> Vec<[u32; 3]> {
        (0..count as u32)
            .map(|k| {
                if k < 300 {
                    [k, k + 1, k + 2]
                } else {
                    [500, 600 + k, 500]
                }
            })
            .collect()
    }

    #[test]
    fn colours_share_no_particle_and_keep_the_listed_order_within() {
        let count = 370;
        let pairs = strip_then_star(count);
        let mut colours = PairColours::new(1000);
        colours.schedule(&pairs);
        // The strip takes three colours in turn; the star's 70 pairs fill the 64 colours
        // (the first three shared with the strip) and leave 6 over.
        assert_eq!(colours.colour_count(), 64);
        assert_eq!(colours.overflow(), &[364, 365, 366, 367, 368, 369]);
        assert_eq!(colours.colour(0)[..3], [0, 3, 6]);
        assert_eq!(colours.colour(1)[..3], [1, 4, 7]);
        for c in 0..colours.colour_count() {
            let listed = colours.colour(c);
            assert!(listed.windows(2).all(|w| w[0] < w[1]), "listed order");
            let mut seen = std::collections::BTreeSet::new();
            for &k in colours.colour(c) {
                let mut particles = pairs[k as usize].to_vec();
                particles.sort_unstable();
                particles.dedup();
                assert!(
                    particles.iter().all(|&i| seen.insert(i)),
                    "no shared particle"
                );
            }
        }
        let mut all: Vec<u32> = colours.in_order().to_vec();
        all.sort_unstable();
        assert_eq!(all, (0..count as u32).collect::<Vec<_>>(), "each pair once");
        assert!(colours.used.iter().all(|&m| m == 0), "masks reset");
    }

    #[test]
    fn a_second_schedule_forgets_the_first() {
        let mut colours = PairColours::new(1000);
        colours.schedule(&strip_then_star(370));
        colours.schedule(&strip_then_star(4));
        assert_eq!(colours.colour_count(), 3);
        assert_eq!(colours.in_order(), &[0, 3, 1, 2]);
        assert!(colours.overflow().is_empty());
        colours.schedule(&[]);
        assert_eq!(colours.colour_count(), 0);
        assert!(colours.in_order().is_empty() && colours.overflow().is_empty());
    }
}
