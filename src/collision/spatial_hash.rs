//! A dense spatial hash of particles (Teschner et al. 2003, "Optimized Spatial Hashing for
//! Collision Detection of Deformable Objects"; Müller, Ten Minute Physics #11): cells of a
//! fixed size are hashed into a table of about twice as many buckets as particles, and a
//! counting sort groups the particles by bucket. Lookups are O(1); buckets hold the
//! particles in ascending index order, so every query visits them in one fixed order whatever
//! the threads. Two cells may share a bucket: callers filter by distance, and box queries
//! that visit a bucket twice report its particles twice (callers sort and deduplicate).
//!
//! Each entry's position is kept beside it, one array per axis, so that a query reads a
//! bucket's positions as runs of [`LANES`] numbers ([`super::neighbours`] tests eight
//! candidates at a time) instead of gathering them from the particle array.
//!
//! **Rows.** Teschner hashes each cell `(i, j, k)` on its own (`i p₀ ⊕ j p₁ ⊕ k p₂`); here the
//! row of cells along `x` is hashed (`j p₁ ⊕ k p₂`) and cell `i` of it goes `i` buckets
//! further, so the cells of a row lie in consecutive buckets, whose entries the counting sort
//! puts side by side. A query for the 3 × 3 × 3 cells around a fluid particle reads 9 runs of
//! about 24 candidates instead of 27 of about 8: fewer ranges to list, and fewer lanes left
//! empty at a bucket's end (docs/benchmarks.md, "Issue 13: the fluid hash by rows").

use crate::constraints::lanes::LANES;
use glam::DVec3;
use std::ops::Range;

/// Teschner's primes for `y` and `z`: the row of cells `(·, j, k)` along `x` hashes to
/// `j p₁ ⊕ k p₂`, and its cell `i` to the bucket `i` places after (see [`SpatialHash`]).
const ROW_PRIMES: [i64; 2] = [19_349_663, 83_492_791];

#[derive(Debug, Clone, Default)]
pub struct SpatialHash {
    /// One over the cell size.
    per_cell: f64,
    /// `starts[b]..starts[b + 1]` is bucket `b`'s range of `entries`.
    starts: Vec<u32>,
    /// Particle indices grouped by bucket, ascending within a bucket.
    entries: Vec<u32>,
    /// The hashed positions of the entries, per axis, in the same places, followed by
    /// [`LANES`] zeros: a run of [`LANES`] read from any entry stays in bounds.
    coordinates: [Vec<f64>; 3],
    /// The counting sort's scratch: each particle's bucket, then where the next particle of
    /// each bucket goes. Kept, like the buffers above, so that hashing again allocates nothing
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
        for axis in &mut self.coordinates {
            // Every entry's coordinate is written below; only the run after them is set here
            // (not the whole array in every substep).
            axis.resize(particles.len() + LANES, 0.0);
            axis[particles.len()..].fill(0.0);
        }
        for (&i, &b) in particles.iter().zip(&bucket_of) {
            let slot = self.next[b] as usize;
            self.entries[slot] = i;
            for (axis, coordinate) in self.coordinates.iter_mut().zip(x[i as usize].to_array()) {
                axis[slot] = coordinate;
            }
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

    /// The bucket of a cell: its row's hash, `i` buckets on, reduced to the table.
    fn bucket(&self, [i, j, k]: [i64; 3]) -> usize {
        self.reduce(row_hash(j, k).wrapping_add(i))
    }

    /// A cell's hash reduced to the table (its size is a power of two).
    fn reduce(&self, h: i64) -> usize {
        (h as u64 as usize) & (self.starts.len() - 2)
    }

    /// The particle indices grouped by bucket: [`Self::buckets_near`] gives ranges of them.
    pub fn entries(&self) -> &[u32] {
        &self.entries
    }

    /// The hashed positions of [`Self::entries`] along `axis` (0, 1, 2), followed by
    /// [`LANES`] zeros.
    pub fn coordinates(&self, axis: usize) -> &[f64] {
        &self.coordinates[axis]
    }

    /// Sets `buckets` to the ranges of [`Self::entries`] of every bucket holding a cell that
    /// overlaps the box `[min, max]`, a run of buckets per row of cells (so, through shared
    /// buckets, some other particles too, and a bucket twice if two of the cells share it). A box spanning
    /// more cells than there are buckets gives every entry once instead, as one range.
    /// Ranges, not a call per bucket: a closure does not inherit the `#[target_feature]` of
    /// the lane pass that reads the buckets, and its vector operations would become calls.
    pub fn buckets_near(&self, min: DVec3, max: DVec3, buckets: &mut Vec<Range<usize>>) {
        buckets.clear();
        let (lo, hi) = (self.cell_of(min), self.cell_of(max));
        let span = |a: usize| hi[a].saturating_sub(lo[a]).saturating_add(1) as f64;
        if span(0) * span(1) * span(2) >= (self.starts.len() - 1) as f64 {
            buckets.push(0..self.entries.len());
            return;
        }
        // Counted loops over the few rows (fewer than the buckets here, so the counts are
        // small), in the order of `lo..=hi` on `y`, then `z`.
        let count = |a: usize| {
            if hi[a] < lo[a] {
                0
            } else {
                hi[a].wrapping_sub(lo[a]) as u64 + 1
            }
        };
        let (cells, table) = (count(0) as usize, self.starts.len() - 1);
        if cells == 0 {
            return;
        }
        for dj in 0..count(1) {
            let j = lo[1].wrapping_add(dj as i64);
            for dk in 0..count(2) {
                let row = row_hash(j, lo[2].wrapping_add(dk as i64));
                // The row's cells `lo..=hi` on `x`: `cells` buckets from the first, as one
                // run of entries, or two where they wrap around the table's end.
                let first = self.reduce(row.wrapping_add(lo[0]));
                let start = self.starts[first] as usize;
                if first + cells <= table {
                    buckets.push(start..self.starts[first + cells] as usize);
                } else {
                    buckets.push(start..self.entries.len());
                    buckets.push(0..self.starts[first + cells - table] as usize);
                }
            }
        }
    }
}

/// The hash of the row of cells `(·, j, k)` along `x`.
fn row_hash(j: i64, k: i64) -> i64 {
    let [pj, pk] = ROW_PRIMES;
    j.wrapping_mul(pj) ^ k.wrapping_mul(pk)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The entries of each bucket [`SpatialHash::buckets_near`] gives, checking that the
    /// coordinates beside them are the hashed positions.
    fn near(hash: &SpatialHash, x: &[DVec3], min: DVec3, max: DVec3) -> Vec<Vec<u32>> {
        let mut buckets = Vec::new();
        hash.buckets_near(min, max, &mut buckets);
        (buckets.into_iter())
            .map(|range| {
                for k in range.clone() {
                    let p = x[hash.entries()[k] as usize];
                    let at = [0, 1, 2].map(|axis| hash.coordinates(axis)[k]);
                    assert_eq!(at, p.to_array());
                }
                hash.entries()[range].to_vec()
            })
            .collect()
    }

    #[test]
    fn a_box_query_finds_every_particle_inside_it() {
        // A 10 x 10 x 10 lattice of spacing 0.1; brute force decides what is inside.
        let x: Vec<DVec3> = (0..1000)
            .map(|n| DVec3::new((n % 10) as f64, ((n / 10) % 10) as f64, (n / 100) as f64) * 0.1)
            .collect();
        let all: Vec<u32> = (0..1000).collect();
        let hash = SpatialHash::build(&x, &all, 0.15);
        let (min, max) = (DVec3::new(0.12, 0.33, 0.0), DVec3::new(0.45, 0.61, 0.2));
        let mut found = near(&hash, &x, min, max).concat();
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

    /// The buckets come as one run per row of cells along `x`, the rows in the order of `y`
    /// then `z`, each cell's bucket once (a cube of 8 particles, and 500 more in one cell far
    /// away to make the table large enough that these rows share no bucket); a box upside
    /// down on an axis spans no cell.
    #[test]
    fn buckets_come_row_by_row_and_an_inverted_box_finds_nothing() {
        let cube = (0..8)
            .map(|n| DVec3::new((n & 1) as f64, ((n >> 1) & 1) as f64, (n >> 2) as f64) + 0.5);
        let far = (0..500).map(|_| DVec3::splat(50.5));
        let x: Vec<DVec3> = cube.chain(far).collect();
        let hash = SpatialHash::build(&x, &(0..508).collect::<Vec<u32>>(), 1.0);
        let found = near(&hash, &x, DVec3::splat(0.6), DVec3::splat(1.6));
        assert_eq!(found, [vec![0, 1], vec![4, 5], vec![2, 3], vec![6, 7]]);
        let upside_down = (DVec3::new(0.6, 1.6, 0.6), DVec3::new(1.6, 0.6, 1.6));
        assert!(near(&hash, &x, upside_down.0, upside_down.1).is_empty());
    }

    /// A row's run of buckets that passes the table's end is read as two ranges, and still
    /// finds every particle inside the box: boxes of three cells slid along a row of four
    /// particles (a table of 8 buckets), so that the run starts at every bucket.
    #[test]
    fn a_run_wrapping_around_the_table_finds_every_particle() {
        let x: Vec<DVec3> = (0..4)
            .map(|n| DVec3::new(f64::from(n) + 0.5, 0.5, 0.5))
            .collect();
        let hash = SpatialHash::build(&x, &[0, 1, 2, 3], 1.0);
        let mut wrapped = 0;
        for start in -8..8 {
            let (min, max) = (
                DVec3::new(f64::from(start) + 0.1, 0.1, 0.1),
                DVec3::splat(0.9),
            );
            let max = DVec3::new(f64::from(start) + 2.9, max.y, max.z);
            let found = near(&hash, &x, min, max);
            wrapped += usize::from(found.len() == 2);
            let found = found.concat();
            for (i, p) in x.iter().enumerate() {
                if p.x > min.x && p.x < max.x {
                    assert!(found.contains(&(i as u32)), "box from {start}: missed {i}");
                }
            }
        }
        assert!(wrapped > 0, "no box's run wrapped around the table");
    }

    #[test]
    fn a_huge_box_visits_everything_once() {
        let x = vec![DVec3::ZERO, DVec3::splat(1e6)];
        let hash = SpatialHash::build(&x, &[0, 1], 0.01);
        let found = near(&hash, &x, DVec3::splat(-1e7), DVec3::splat(1e7));
        assert_eq!(found, [vec![0, 1]]);
        // The coordinates run on past the entries, so a run of lanes read from the last
        // entry stays in bounds.
        assert_eq!(hash.coordinates(0).len(), 2 + LANES);
    }
}
