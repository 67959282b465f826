//! Fixed-radius neighbour lists for fluid particles (docs/physics.md, "Fluids"): every
//! particle's neighbours within the kernel radius, found through the [`SpatialHash`] and kept
//! in ascending particle order, so each sum over them runs in one order whatever the number
//! of threads. Lists are built for a contiguous share of the particles at a time; the shares
//! joined in order are the lists of the whole block. The same search lists the particles
//! near other points, a fluid surface's vertices ([`NeighbourLists::build_for_points`]).

use super::edge_sides::known_lanes;
use super::spatial_hash::SpatialHash;
use crate::constraints::batch::lane_passes;
use crate::constraints::lane_io::ParticleLanes;
use crate::constraints::lanes::{Real, LANES};
use glam::DVec3;
use std::ops::Range;

/// What the queries of a neighbour search are: particles of the hash, each left out of its
/// own list ([`NeighbourLists::append`]), or other points
/// ([`NeighbourLists::build_for_points`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Query {
    Particles,
    Points,
}

/// The neighbour lists of a run of particles.
#[derive(Debug, Default, Clone)]
pub struct NeighbourLists {
    /// `offsets[k]..offsets[k + 1]` is the `k`-th particle's range of `indices`.
    offsets: Vec<u32>,
    indices: Vec<u32>,
    /// Scratch for one particle's candidates (a bucket shared by two cells repeats them).
    candidates: Vec<u32>,
    /// Scratch for one particle's buckets ([`SpatialHash::buckets_near`]).
    buckets: Vec<Range<usize>>,
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
    /// `radius`, ascending, on [`SimdPath::chosen`](crate::constraints::batch::SimdPath::chosen).
    pub fn append(&mut self, particles: &[u32], x: &[DVec3], hash: &SpatialHash, radius: f64) {
        append(self, particles, x, hash, radius, Query::Particles);
    }

    /// Rebuilds the lists as those of the points `points[k]` for `k` in `queries`: every
    /// particle hashed in `hash` closer than `radius` to the point, ascending (points that
    /// are not particles, such as a surface's vertices: none is left out as the point
    /// itself).
    pub fn build_for_points(
        &mut self,
        queries: &[u32],
        points: &[DVec3],
        hash: &SpatialHash,
        radius: f64,
    ) {
        self.clear();
        append(self, queries, points, hash, radius, Query::Points);
    }

    /// The neighbours of the `k`-th particle of the share.
    #[inline]
    pub fn of(&self, k: usize) -> &[u32] {
        &self.indices[self.offsets[k] as usize..self.offsets[k + 1] as usize]
    }
}

lane_passes! {
    /// [`NeighbourLists::append`] and [`NeighbourLists::build_for_points`]: the lists of the
    /// points `x[q]` for `q` in `queries`, as `query` says.
    fn append(
        lists: &mut NeighbourLists,
        queries: &[u32],
        x: &[DVec3],
        hash: &SpatialHash,
        radius: f64,
        query: Query,
    );
    /// [`append`] on `path`.
    fn append_on / append_avx2 / append_avx512 = append_with;
}

/// [`append`] in lanes of `S`: each bucket's candidates [`LANES`] at a time, their
/// positions read as runs from the hash. A query tests about 216 candidates for about 33
/// neighbours; one at a time, each took about 23 instructions with its branch
/// (docs/benchmarks.md, "Issue 13: the fluid neighbour search in lanes"). The distance is
/// glam's `length_squared` of the difference, `(dx² + dy²) + dz²`, in exactly rounded
/// operations per lane, so a lane decides what the one-at-a-time test decided.
#[inline(always)]
#[allow(
    clippy::extra_unused_type_parameters,
    reason = "`lane_passes!` hands every pass its path's particle mover; this one reads runs"
)]
fn append_with<S: Real, IO: ParticleLanes<S>>(
    lists: &mut NeighbourLists,
    queries: &[u32],
    x: &[DVec3],
    hash: &SpatialHash,
    radius: f64,
    query: Query,
) {
    let r2 = S::splat(radius * radius);
    let reach = DVec3::splat(radius);
    let (entries, xs, ys, zs) = (
        hash.entries(),
        hash.coordinates(0),
        hash.coordinates(1),
        hash.coordinates(2),
    );
    for &i in queries {
        let xi = x[i as usize];
        // No particle is left out for a point: `u32::MAX` is no particle's index.
        let own = if query == Query::Particles {
            i
        } else {
            u32::MAX
        };
        let (px, py, pz) = (S::splat(xi.x), S::splat(xi.y), S::splat(xi.z));
        lists.candidates.clear();
        hash.buckets_near(xi - reach, xi + reach, &mut lists.buckets);
        for bucket in &lists.buckets {
            // A counted loop: `step_by` cost about a tenth of the search.
            let mut start = bucket.start;
            while start < bucket.end {
                let (dx, dy, dz) = (
                    run::<S>(xs, start) - px,
                    run::<S>(ys, start) - py,
                    run::<S>(zs, start) - pz,
                );
                let near = (dx * dx + dy * dy + dz * dz).lt(r2);
                let held = (bucket.end - start).min(LANES);
                for l in known_lanes(S::mask_bits(near), held) {
                    let j = entries[start + l];
                    if j != own {
                        lists.candidates.push(j);
                    }
                }
                start += LANES;
            }
        }
        lists.candidates.sort_unstable();
        lists.candidates.dedup();
        lists.indices.extend_from_slice(&lists.candidates);
        lists.offsets.push(lists.indices.len() as u32);
    }
}

/// [`LANES`] coordinates from `start` (the hash's coordinates run on [`LANES`] past its
/// last entry, so every run from an entry is in bounds). A function, not a closure: a
/// closure does not inherit the `#[target_feature]` of the lane pass.
#[inline(always)]
fn run<S: Real>(axis: &[f64], start: usize) -> S {
    S::load(
        axis[start..start + LANES]
            .try_into()
            .expect("a run of LANES"),
    )
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
        // The same lists asked for the particles' positions as points keep each particle in
        // its own list.
        let mut points = NeighbourLists::default();
        points.build_for_points(&all, &x, &hash, radius);
        let (mut first, mut second) = (NeighbourLists::default(), NeighbourLists::default());
        first.build(&all[..250], &x, &hash, radius);
        second.build(&all[250..], &x, &hash, radius);
        for i in 0..x.len() {
            let expected: Vec<u32> = (0..x.len() as u32)
                .filter(|&j| j as usize != i && x[i].distance(x[j as usize]) < radius)
                .collect();
            assert_eq!(whole.of(i), &expected[..], "particle {i}");
            let mut with_itself = expected.clone();
            with_itself.insert(expected.partition_point(|&j| (j as usize) < i), i as u32);
            assert_eq!(points.of(i), &with_itself[..], "point {i}");
            let split = if i < 250 {
                first.of(i)
            } else {
                second.of(i - 250)
            };
            assert_eq!(split, &expected[..]);
        }
    }

    /// Every SIMD path keeps exactly the candidates whose `length_squared` of the
    /// difference is below `radius²`, at the border too: particles on rays at distances
    /// within a few ulps of the radius, buckets of every length modulo [`LANES`]. Around
    /// the origin as well, where the zeros the hash's coordinates run on with would be near
    /// if a lane past a bucket's end were read as a candidate.
    #[test]
    fn every_path_decides_as_one_at_a_time_at_the_border() {
        for centre in [DVec3::new(0.3, 0.2, 0.1), DVec3::ZERO] {
            paths_decide_as_one_at_a_time_around(centre);
        }
    }

    fn paths_decide_as_one_at_a_time_around(centre: DVec3) {
        let radius = 0.1;
        let mut x = vec![centre];
        for ray in 0..40 {
            let angle = f64::from(ray) * 0.7;
            let direction = DVec3::new(angle.cos(), angle.sin(), (0.3 * angle).sin()).normalize();
            for step in -3..=3 {
                let distance = radius * (1.0 + f64::from(step) * f64::EPSILON);
                x.push(x[0] + direction * distance);
            }
            x.push(x[0] + direction * (0.01 * f64::from(ray)));
        }
        let all: Vec<u32> = (0..x.len() as u32).collect();
        let hash = SpatialHash::build(&x, &all, radius);
        let within = |i: usize, j: usize| (x[j] - x[i]).length_squared() < radius * radius;
        for path in crate::constraints::batch::SimdPath::available() {
            let mut lists = NeighbourLists::default();
            lists.clear();
            append_on(path, &mut lists, &all, &x, &hash, radius, Query::Particles);
            for i in 0..x.len() {
                let expected: Vec<u32> = (0..x.len() as u32)
                    .filter(|&j| j as usize != i && within(i, j as usize))
                    .collect();
                assert_eq!(lists.of(i), &expected[..], "{path:?}, particle {i}");
            }
            let border = (1..x.len()).filter(|&j| within(0, j)).count();
            assert!(
                (100..300).contains(&border),
                "{border} of the ray points inside"
            );
        }
    }
}
