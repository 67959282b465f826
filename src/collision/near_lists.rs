//! Near lists for the contacts between particles (sphere pairs) and the point–triangle and
//! edge–edge contacts of self-colliding objects: Verlet lists with a skin (Verlet 1967; the
//! neighbour lists of molecular dynamics), kept from one substep to the next. Rebuilding and searching a BVH over the triangles and one
//! over the edges in every substep took most of the time of a self-colliding pile
//! (docs/benchmarks.md); the lists hold every pair that can become a candidate until the
//! particles have moved more than a skin relative to each other, and each substep re-tests
//! only the pairs in them. Sphere pairs were searched in a spatial hash in every substep
//! until the lists took them too: 12 % of the pile's instructions, and a third of the time of
//! two cloths lying on each other (docs/benchmarks.md, "Issue 13: sphere pairs in the near
//! lists").
//!
//! **Reference.** At a rebuild each particle's box `B_i` spans its positions at the start and
//! the end of that substep and where its motion in that substep, kept up for
//! [`EXTRAPOLATED_SUBSTEPS`] more substeps, would take it: a particle falling or flying
//! freely keeps to its box, so the lists outlast a fall instead of expiring in every substep
//! of it. The lists stay valid while one shift `c` (a common motion, which moves no box
//! relative to another: a carried cloth needs no rebuild) keeps every later position `y`
//! (start and end of each substep) inside `B_i + c` grown by `S/2`, per axis; such a `c`
//! exists exactly when, per axis,
//!
//! `max_i,y (y − B_i.max) − min_i,y (y − B_i.min) ≤ S`  ([`Skin::covers`]).
//!
//! The argument holds for any boxes `B_i`: the extrapolation only makes them longer along
//! each particle's motion. It costs longer lists (more pairs re-tested in every substep) and
//! buys fewer rebuilds; docs/benchmarks.md ("Self collision (pile)") has the measurements
//! that chose `K` and `S`.
//!
//! The exact tests use the particles' swept boxes grown by a contact margin `g` (a triangle
//! `D`, the contact distance 2r, and the particle under it 0; an edge `D/2`; a sphere, whose
//! test is its distance from another at the substep's end, half the pair reach), so while the
//! lists are valid each lies inside the reference boxes shifted by `c` and grown by `g + S/2`,
//! and two that overlap now overlapped in the reference (shifts cancel). The lists are
//! searched with `g + M/2`, `M = 9/8 S` plus 64 ulps of the largest coordinate the lists
//! are kept for (2·10⁹ m: 28 µm), so rounding cannot drop a pair at the border.
//!
//! **Same answers.** Each substep the listed pairs go through exactly the tests a fresh search
//! applies to what it finds (the same box overlap and side), so the candidates do not depend
//! on when the lists were built: a run resumed from a checkpoint, which starts with new lists,
//! produces the same bytes as one that was never stopped.

use super::box_grid::BoxIndex;
use super::bvh::bounds;
use crate::mesh::obj::MAX_ABS_COORDINATE;
use crate::solver::parallel::share;
use glam::DVec3;

/// Positions the lists are kept for: twice the input limit (a substep's prediction may
/// overshoot it; a particle left beyond it diverges and stops the run).
const COORDINATE_BOUND: f64 = 2.0 * MAX_ABS_COORDINATE;

/// What rounding may move a box test by at coordinates within [`COORDINATE_BOUND`]: 64 ulps
/// there, 28 µm. A fixed length, so a particle far away cannot widen every search.
const ROUNDING_SLACK: f64 = 64.0 * f64::EPSILON * COORDINATE_BOUND;

/// How many substeps past its own the reference box of a particle follows its motion at
/// most (`K`): 8 measured fastest on the pile with a fixed `K` from 0 to 16
/// (docs/benchmarks.md). Lists that expire sooner, because the motion turned, make the next
/// reference shorter ([`next_extrapolation`]).
const EXTRAPOLATED_SUBSTEPS: u32 = 8;

/// The `K` of the next reference, after lists extrapolated `k` substeps covered `kept`
/// substeps past their own: as many as they lasted, plus one, when the motion turned before
/// the extrapolation ran out (a longer box would only lengthen the lists); otherwise twice
/// `k`, up to [`EXTRAPOLATED_SUBSTEPS`]. Fast folding at few substeps (motion long and
/// curved) then gets short boxes, a particle flying straight keeps the long ones.
fn next_extrapolation(k: u32, kept: u32) -> u32 {
    if kept < k {
        kept + 1
    } else {
        (2 * k).min(EXTRAPOLATED_SUBSTEPS)
    }
}

/// The reference boxes and the skin `S`: whether lists built from them still hold every
/// candidate of a substep.
#[derive(Debug, Clone, Default)]
pub struct Skin {
    /// `S`.
    width: f64,
    /// `B_i`, indexed by particle (only the listed particles' are used); empty before the
    /// first build.
    reference: Vec<(DVec3, DVec3)>,
    /// `K` of the reference.
    extrapolated: u32,
    /// Substeps the reference has covered after its own.
    kept: u32,
}

/// How far some particles strayed from their reference boxes in a substep
/// ([`Skin::stray`]): per axis the largest `y − B_i.max` and the smallest `y − B_i.min`, and
/// whether every position was finite and within [`COORDINATE_BOUND`]. Joined over shares by
/// the largest, the smallest and `and`, which are exact and do not depend on the order (but
/// for the sign of a zero, which no decision sees), so the decision is the same for any
/// number of threads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stray {
    above: DVec3,
    below: DVec3,
    finite: bool,
}

impl Stray {
    /// Of no particle: joins to the other side unchanged.
    pub const NONE: Stray = Stray {
        above: DVec3::NEG_INFINITY,
        below: DVec3::INFINITY,
        finite: true,
    };

    /// Of the particles of both (as [`Skin::stray`] takes each position in).
    pub fn and(self, other: Stray) -> Stray {
        Stray {
            above: DVec3::select(other.above.cmpgt(self.above), other.above, self.above),
            below: DVec3::select(other.below.cmplt(self.below), other.below, self.below),
            finite: self.finite && other.finite,
        }
    }
}

impl Skin {
    pub fn new(width: f64) -> Skin {
        Skin {
            width,
            reference: Vec::new(),
            extrapolated: EXTRAPOLATED_SUBSTEPS,
            kept: 0,
        }
    }

    /// Whether the lists must be rebuilt for the substep `x_prev` → `x` of `particles`, whose
    /// [`Self::stray`] is `stray` (over all of them, in any shares): if the reference does not
    /// cover it, the substep becomes the new reference (with `K` from how long the old one
    /// lasted) and this returns true.
    pub fn update(
        &mut self,
        stray: Stray,
        particles: &[u32],
        x: &[DVec3],
        x_prev: &[DVec3],
    ) -> bool {
        if self.covers(stray) {
            self.kept = self.kept.saturating_add(1); // a resting cloth keeps its lists for good
            return false;
        }
        if !self.reference.is_empty() {
            self.extrapolated = next_extrapolation(self.extrapolated, self.kept);
        }
        self.kept = 0;
        self.reset(particles, x, x_prev);
        true
    }

    /// How far `particles` (any share of the listed ones) strayed from their reference boxes
    /// in the substep `x_prev` → `x`: the two extremes of the module notes' inequality over
    /// them. The solver's threads each take a share; [`Stray::and`] joins them (nothing before
    /// the first build).
    pub fn stray(&self, particles: &[u32], x: &[DVec3], x_prev: &[DVec3]) -> Stray {
        let mut stray = Stray::NONE;
        if self.reference.is_empty() {
            return stray;
        }
        let bound = DVec3::splat(COORDINATE_BOUND);
        for &i in particles {
            let (min, max) = self.reference[i as usize];
            for y in [x[i as usize], x_prev[i as usize]] {
                // Comparisons, not glam's `max` and `min` (which skip a NaN lane by lane, a
                // few instructions more each): a NaN lane compares false and is kept out
                // alike, and `finite` then says so.
                let (over, under) = (y - max, y - min);
                stray.above = DVec3::select(over.cmpgt(stray.above), over, stray.above);
                stray.below = DVec3::select(under.cmplt(stray.below), under, stray.below);
                // Every coordinate compared: `max_element` would skip a NaN one.
                stray.finite &= y.abs().cmple(bound).all();
            }
        }
        stray
    }

    /// Whether lists built at the reference hold every candidate of a substep in which the
    /// listed particles strayed by `stray` (see the module notes).
    pub fn covers(&self, stray: Stray) -> bool {
        // A non-finite position, or one beyond the coordinates the rounding slack is made
        // for, covers nothing (the extremes leave a NaN out): the lists are rebuilt, and
        // the divergence check stops the run after the substep.
        !self.reference.is_empty()
            && stray.finite
            && (stray.above - stray.below)
                .cmple(DVec3::splat(self.width))
                .all()
    }

    /// Makes the substep `x_prev` → `x`, continued for `K` more, the reference.
    fn reset(&mut self, particles: &[u32], x: &[DVec3], x_prev: &[DVec3]) {
        self.reference.resize(x.len(), (DVec3::ZERO, DVec3::ZERO));
        let k = f64::from(self.extrapolated);
        for &i in particles {
            let (y, y_prev) = (x[i as usize], x_prev[i as usize]);
            let ahead = y + k * (y - y_prev);
            self.reference[i as usize] = bounds([y_prev, y, ahead], 0.0);
        }
    }

    /// The margin the lists are searched with beyond the contact margins:
    /// `M = 9/8 S` plus [`ROUNDING_SLACK`].
    fn search_margin(&self) -> f64 {
        1.125 * self.width + ROUNDING_SLACK
    }
}

/// Pairs that may become candidates: `[particle, particle]` (ascending), `[particle,
/// triangle]` and `[edge, edge]` (ascending), each list sorted; or one chunk of such lists,
/// as one search task found it.
#[derive(Debug, Clone, Default)]
pub struct NearLists {
    pub spheres: Vec<[u32; 2]>,
    pub point_triangle: Vec<[u32; 2]>,
    pub edges: Vec<[u32; 2]>,
}

impl NearLists {
    /// Empties the lists, keeping their buffers.
    pub fn clear(&mut self) {
        self.spheres.clear();
        self.point_triangle.clear();
        self.edges.clear();
    }
}

/// The near lists as the chunks of consecutive particles and edges they were searched in:
/// joined in order, the sorted lists. They are read in parts ([`Self::point_triangle`],
/// [`Self::edges`]) and never joined: copying the chunks into one list was a third of what
/// thread 0 did alone after the candidate stage while the other threads waited
/// (docs/benchmarks.md, "Issue 13: less for thread 0 alone").
#[derive(Debug, Clone, Default)]
pub struct NearListChunks {
    chunks: Vec<NearLists>,
}

impl NearListChunks {
    /// Swaps `lists` with chunk `k` (`k` at most the number of chunks so far; an empty
    /// chunk is added for `k` equal to it): the solver lends the lists' buffers to the
    /// search that refills them and takes the new lists back, so that rebuilding the lists
    /// allocates nothing once they have grown.
    pub fn swap_chunk(&mut self, k: usize, lists: &mut NearLists) {
        if k == self.chunks.len() {
            self.chunks.push(NearLists::default());
        }
        std::mem::swap(&mut self.chunks[k], lists);
    }

    /// Part `part` of `parts` of the joined sphere-pair list, as [`Self::point_triangle`].
    pub fn spheres(&self, part: usize, parts: usize) -> impl Iterator<Item = &[[u32; 2]]> {
        joined_part(self.chunks.iter().map(|c| &c.spheres[..]), part, parts)
    }

    /// Part `part` of `parts` (consecutive, as even as whole pairs allow) of the joined
    /// point–triangle list, as the pieces of it in each chunk.
    pub fn point_triangle(&self, part: usize, parts: usize) -> impl Iterator<Item = &[[u32; 2]]> {
        joined_part(
            self.chunks.iter().map(|c| &c.point_triangle[..]),
            part,
            parts,
        )
    }

    /// Part `part` of `parts` of the joined edge list, as [`Self::point_triangle`].
    pub fn edges(&self, part: usize, parts: usize) -> impl Iterator<Item = &[[u32; 2]]> {
        joined_part(self.chunks.iter().map(|c| &c.edges[..]), part, parts)
    }
}

/// Part `part` of `parts` of the concatenation of `lists`, the items of
/// `share(0..total, part, parts)`, as the pieces of it in each list (some empty). Slices,
/// not one iterator over the items: the tests of the listed pairs stay tight loops over a
/// slice (an iterator flattening the chunks made the pile 4 % slower at 1 thread).
fn joined_part<'a, T: 'a>(
    lists: impl Iterator<Item = &'a [T]> + Clone,
    part: usize,
    parts: usize,
) -> impl Iterator<Item = &'a [T]> {
    let total = lists.clone().map(<[T]>::len).sum();
    let range = share(0..total, part, parts);
    let mut start = 0;
    lists.map(move |list| {
        let (first, end) = (start, start + list.len());
        start = end;
        let from = range.start.clamp(first, end) - first;
        let to = range.end.clamp(first, end) - first;
        &list[from..to]
    })
}

/// Who may touch whom: the caller's rules (objects, rest distances).
pub trait NearRules {
    fn spheres(&self, i: u32, j: u32) -> bool;
    fn point_triangle(&self, particle: u32, triangle: u32) -> bool;
    fn edges(&self, i: u32, j: u32) -> bool;
}

/// The search for new sphere pairs: a grid or tree ([`BoxIndex`]) over the reference boxes of
/// the particles that take part, each grown by half the pair reach and half the search
/// margin.
pub struct SphereSearch {
    /// Box k is particle `particles[k]`'s.
    spheres: BoxIndex,
}

/// The search for new point–triangle pairs: a grid or tree over the triangles' grown reference
/// boxes, and every particle's grown reference box. Built by one thread (while another builds
/// the [`EdgeSearch`]), then searched by any share of the particles.
pub struct TriangleSearch {
    particle_boxes: Vec<(DVec3, DVec3)>,
    triangles: BoxIndex,
}

/// The search for new edge–edge pairs: a grid or tree over the edges' grown reference boxes.
pub struct EdgeSearch {
    edges: BoxIndex,
}

/// The box around the reference boxes of `corners`, grown by `by`.
fn reference_union(skin: &Skin, corners: &[u32], by: f64) -> (DVec3, DVec3) {
    let boxes = corners.iter().map(|&k| skin.reference[k as usize]);
    bounds(boxes.flat_map(|(min, max)| [min, max]), by)
}

impl SphereSearch {
    /// The search around the reference of `skin` for `particles` (ascending) closer than
    /// `reach` to each other, reusing the buffers of `kept` if given.
    pub fn new(
        skin: &Skin,
        particles: &[u32],
        reach: f64,
        kept: Option<SphereSearch>,
    ) -> SphereSearch {
        let grow = 0.5 * (reach + skin.search_margin());
        let boxes = particles.iter().map(|&i| {
            let (min, max) = skin.reference[i as usize];
            (min - grow, max + grow)
        });
        SphereSearch {
            spheres: BoxIndex::refill(kept.map(|search| search.spheres), boxes),
        }
    }

    /// Appends the sphere pairs `[i, j]` (`i < j`) whose first particle is
    /// `particles[share]` to `pairs`: consecutive shares joined in order are the whole
    /// sorted list.
    pub fn pairs(
        &self,
        share: std::ops::Range<usize>,
        particles: &[u32],
        rules: &impl NearRules,
        pairs: &mut Vec<[u32; 2]>,
    ) {
        let start = pairs.len();
        let particle = |k: u32| particles[k as usize];
        let spheres = &self.spheres;
        spheres.later_overlapping_pairs(
            share.map(|k| k as u32),
            |k| spheres.boxes[k as usize],
            |k, l| rules.spheres(particle(k), particle(l)),
            pairs,
        );
        // Found by their places in `particles`, which ascend with them: still sorted.
        for pair in &mut pairs[start..] {
            *pair = pair.map(particle);
        }
    }
}

impl TriangleSearch {
    /// The search around the reference of `skin` for points within `distance` of
    /// `triangles`, reusing the buffers of `kept` (the last search) if given.
    pub fn new(
        skin: &Skin,
        triangles: &[[u32; 3]],
        distance: f64,
        kept: Option<TriangleSearch>,
    ) -> TriangleSearch {
        let m = skin.search_margin();
        let (mut particle_boxes, kept_triangles) = match kept {
            Some(search) => (search.particle_boxes, Some(search.triangles)),
            None => (Vec::new(), None),
        };
        particle_boxes.clear();
        particle_boxes
            .extend((skin.reference.iter()).map(|&(min, max)| (min - 0.5 * m, max + 0.5 * m)));
        let triangle_boxes =
            (triangles.iter()).map(|t| reference_union(skin, t, distance + 0.5 * m));
        TriangleSearch {
            particle_boxes,
            triangles: BoxIndex::refill(kept_triangles, triangle_boxes),
        }
    }

    /// Appends the point–triangle pairs of `particles` (ascending) to `pairs`: consecutive
    /// shares joined in order are the whole sorted list.
    pub fn pairs(
        &self,
        particles: &[u32],
        triangles: &[[u32; 3]],
        rules: &impl NearRules,
        pairs: &mut Vec<[u32; 2]>,
    ) {
        self.triangles.overlapping_pairs(
            particles.iter().copied(),
            |p| self.particle_boxes[p as usize],
            |p, t| !triangles[t as usize].contains(&p) && rules.point_triangle(p, t),
            pairs,
        );
    }
}

impl EdgeSearch {
    /// The search around the reference of `skin` for `edges` within `distance` of each
    /// other.
    pub fn new(
        skin: &Skin,
        edges: &[[u32; 2]],
        distance: f64,
        kept: Option<EdgeSearch>,
    ) -> EdgeSearch {
        let m = skin.search_margin();
        let boxes = (edges.iter()).map(|e| reference_union(skin, e, 0.5 * (distance + m)));
        EdgeSearch {
            edges: BoxIndex::refill(kept.map(|search| search.edges), boxes),
        }
    }

    /// Appends the edge pairs whose first edge is in `edge_share` to `pairs`: consecutive
    /// shares joined in order are the whole sorted list.
    pub fn pairs(
        &self,
        edge_share: std::ops::Range<usize>,
        edges: &[[u32; 2]],
        rules: &impl NearRules,
        pairs: &mut Vec<[u32; 2]>,
    ) {
        let index = &self.edges;
        index.later_overlapping_pairs(
            edge_share.map(|i| i as u32),
            |i| index.boxes[i as usize],
            |i, j| {
                let (ei, ej) = (edges[i as usize], edges[j as usize]);
                !ei.iter().any(|k| ej.contains(k)) && rules.edges(i, j)
            },
            pairs,
        );
    }
}

#[cfg(test)]
mod tests;
