//! A dense spatial hash of particles (Teschner et al. 2003, "Optimized Spatial Hashing for
//! Collision Detection of Deformable Objects"; Müller, Ten Minute Physics #11): cells of a
//! fixed size are hashed into a table of about twice as many buckets as particles, and a
//! counting sort groups the particles by bucket. Lookups are O(1); buckets hold the
//! particles in ascending index order, so every query visits them in one fixed order whatever
//! the threads. Two cells may share a bucket: callers filter by distance, and box queries
//! that visit a bucket twice report its particles twice (callers sort and deduplicate).

use glam::DVec3;

#[derive(Debug, Clone, Default)]
pub struct SpatialHash {
    /// One over the cell size.
    per_cell: f64,
    /// `starts[b]..starts[b + 1]` is bucket `b`'s range of `entries`.
    starts: Vec<u32>,
    /// Particle indices grouped by bucket, ascending within a bucket.
    entries: Vec<u32>,
    /// The counting sort's scratch: each particle's bucket, then where the next particle of
    /// each bucket goes. Kept, like the two above, so that hashing again allocates nothing
    /// (the solver hashes its colliding particles in every substep).
    bucket_of: Vec<usize>,
    next: Vec<u32>,
}

impl SpatialHash {
    /// Hashes `particles` (indices into `x`, ascending) into cells of size `cell`.
    pub fn build(x: &[DVec3], particles: &[u32], cell: f64) -> SpatialHash {
        let mut hash = SpatialHash::default();
        hash.rebuild(x, particles, cell);
        hash
    }

    /// [`Self::build`] in place, reusing this hash's buffers.
    pub fn rebuild(&mut self, x: &[DVec3], particles: &[u32], cell: f64) {
        let buckets = (2 * particles.len()).next_power_of_two().max(1);
        self.per_cell = 1.0 / cell;
        self.starts.clear();
        self.starts.resize(buckets + 1, 0);
        // Taken out while `self` hashes (its cell size and table are set above).
        let mut bucket_of = std::mem::take(&mut self.bucket_of);
        bucket_of.clear();
        bucket_of.extend((particles.iter()).map(|&i| self.bucket(self.cell_of(x[i as usize]))));
        for &b in &bucket_of {
            self.starts[b + 1] += 1;
        }
        for b in 0..buckets {
            self.starts[b + 1] += self.starts[b];
        }
        self.next.clone_from(&self.starts);
        self.entries.resize(particles.len(), 0);
        for (&i, &b) in particles.iter().zip(&bucket_of) {
            self.entries[self.next[b] as usize] = i;
            self.next[b] += 1;
        }
        self.bucket_of = bucket_of;
    }

    /// Integer cell coordinates of `p`: `⌊p / cell⌋`, as `⌊p · (1 / cell)⌋` (one rounding
    /// more than a division, but any map from points to cells that never decreases along an
    /// axis serves: a particle inside a query box is hashed into one of the cells the box
    /// spans). The floor is taken here because `f64::floor` is a call into the C library on
    /// x86-64 without SSE4.1, which was a tenth of the hashing; coordinates beyond `i64`
    /// saturate, NaN goes to cell 0.
    fn cell_of(&self, p: DVec3) -> [i64; 3] {
        (p * self.per_cell).to_array().map(|c| {
            let truncated = c as i64;
            truncated - i64::from((truncated as f64) > c)
        })
    }

    /// Teschner's hash of a cell, reduced to the table (its size is a power of two).
    fn bucket(&self, [i, j, k]: [i64; 3]) -> usize {
        let h =
            i.wrapping_mul(73_856_093) ^ j.wrapping_mul(19_349_663) ^ k.wrapping_mul(83_492_791);
        (h as u64 as usize) & (self.starts.len() - 2)
    }

    /// Calls `visit` with every particle hashed into a cell that overlaps the box
    /// `[min, max]` (and, through shared buckets, some others). A box spanning more cells
    /// than there are buckets visits every particle once instead.
    pub fn for_each_near(&self, min: DVec3, max: DVec3, mut visit: impl FnMut(u32)) {
        let (lo, hi) = (self.cell_of(min), self.cell_of(max));
        let span = |a: usize| hi[a].saturating_sub(lo[a]).saturating_add(1) as f64;
        if span(0) * span(1) * span(2) >= (self.starts.len() - 1) as f64 {
            self.entries.iter().for_each(|&i| visit(i));
            return;
        }
        for i in lo[0]..=hi[0] {
            for j in lo[1]..=hi[1] {
                for k in lo[2]..=hi[2] {
                    let b = self.bucket([i, j, k]);
                    let range = self.starts[b] as usize..self.starts[b + 1] as usize;
                    self.entries[range].iter().for_each(|&p| visit(p));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_box_query_finds_every_particle_inside_it() {
        // A 10 x 10 x 10 lattice of spacing 0.1; brute force decides what is inside.
        let x: Vec<DVec3> = (0..1000)
            .map(|n| DVec3::new((n % 10) as f64, ((n / 10) % 10) as f64, (n / 100) as f64) * 0.1)
            .collect();
        let all: Vec<u32> = (0..1000).collect();
        let hash = SpatialHash::build(&x, &all, 0.15);
        let (min, max) = (DVec3::new(0.12, 0.33, 0.0), DVec3::new(0.45, 0.61, 0.2));
        let mut found = Vec::new();
        hash.for_each_near(min, max, |i| found.push(i));
        found.sort_unstable();
        found.dedup();
        let inside = |p: DVec3| p.cmpge(min).all() && p.cmple(max).all();
        for (i, &p) in x.iter().enumerate() {
            if inside(p) {
                assert!(found.binary_search(&(i as u32)).is_ok(), "missed {i}");
            }
        }
        assert!(found.len() < 1000, "a small box visits a small part");
    }

    #[test]
    fn a_huge_box_visits_everything_once() {
        let x = vec![DVec3::ZERO, DVec3::splat(1e6)];
        let hash = SpatialHash::build(&x, &[0, 1], 0.01);
        let mut found = Vec::new();
        hash.for_each_near(DVec3::splat(-1e7), DVec3::splat(1e7), |i| found.push(i));
        assert_eq!(found.len(), 2);
    }
}
