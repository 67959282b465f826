//! Fixed-radius neighbour lists for fluid particles (docs/physics.md, "Fluids"): every
//! particle's neighbours within the kernel radius, found through the [`SpatialHash`] and kept
//! in ascending particle order, so each sum over them runs in one order whatever the number
//! of threads. Lists are built for a contiguous share of the particles at a time; the shares
//! joined in order are the lists of the whole block.

use super::spatial_hash::SpatialHash;
use glam::DVec3;

/// The neighbour lists of a run of particles.
#[derive(Debug, Default, Clone)]
pub struct NeighbourLists {
    /// `offsets[k]..offsets[k + 1]` is the `k`-th particle's range of `indices`.
    offsets: Vec<u32>,
    indices: Vec<u32>,
    /// Scratch for one particle's candidates (a bucket shared by two cells repeats them).
    candidates: Vec<u32>,
}

impl NeighbourLists {
    /// Empties the lists (keeping their buffers).
    pub fn clear(&mut self) {
        self.offsets.clear();
        self.indices.clear();
        self.offsets.push(0);
    }

    /// Rebuilds the lists of `particles` (indices into `x`): see [`Self::append`].
    pub fn build(&mut self, particles: &[u32], x: &[DVec3], hash: &SpatialHash, radius: f64) {
        self.clear();
        self.append(particles, x, hash, radius);
    }

    /// Appends the lists of `particles`: every other particle hashed in `hash` closer than
    /// `radius`, ascending.
    pub fn append(&mut self, particles: &[u32], x: &[DVec3], hash: &SpatialHash, radius: f64) {
        let r2 = radius * radius;
        for &i in particles {
            let xi = x[i as usize];
            self.candidates.clear();
            let reach = DVec3::splat(radius);
            hash.for_each_bucket_near(xi - reach, xi + reach, |bucket| {
                for &j in bucket {
                    if j != i && (x[j as usize] - xi).length_squared() < r2 {
                        self.candidates.push(j);
                    }
                }
            });
            self.candidates.sort_unstable();
            self.candidates.dedup();
            self.indices.extend_from_slice(&self.candidates);
            self.offsets.push(self.indices.len() as u32);
        }
    }

    /// The neighbours of the `k`-th particle of the share.
    #[inline]
    pub fn of(&self, k: usize) -> &[u32] {
        &self.indices[self.offsets[k] as usize..self.offsets[k + 1] as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_match_brute_force_in_ascending_order_for_any_split() {
        // A jittered lattice: brute force decides who is within the radius.
        let x: Vec<DVec3> = (0..600)
            .map(|n| {
                let jitter = ((n * 7919) % 101) as f64 / 101.0 * 0.03;
                DVec3::new((n % 10) as f64, ((n / 10) % 6) as f64, (n / 60) as f64) * 0.05
                    + DVec3::splat(jitter)
            })
            .collect();
        let all: Vec<u32> = (0..x.len() as u32).collect();
        let radius = 0.1;
        let hash = SpatialHash::build(&x, &all, radius);
        let mut whole = NeighbourLists::default();
        whole.build(&all, &x, &hash, radius);
        let (mut first, mut second) = (NeighbourLists::default(), NeighbourLists::default());
        first.build(&all[..250], &x, &hash, radius);
        second.build(&all[250..], &x, &hash, radius);
        for i in 0..x.len() {
            let expected: Vec<u32> = (0..x.len() as u32)
                .filter(|&j| j as usize != i && x[i].distance(x[j as usize]) < radius)
                .collect();
            assert_eq!(whole.of(i), &expected[..], "particle {i}");
            let split = if i < 250 {
                first.of(i)
            } else {
                second.of(i - 250)
            };
            assert_eq!(split, &expected[..]);
        }
    }
}
