//! A four-wide bounding-volume hierarchy for box-pair searches: the self-collision near
//! lists ([`super::near_lists`]), the rest-close table ([`super::rest_close`]) and the count
//! of crossing triangles ([`super::intersections`]). Each node
//! holds the boxes of up to four children side by side, one `f32` lane per child on each
//! axis, so one query tests all four with six 4-lane comparisons (SSE, part of every
//! x86-64). The binary tree ([`Bvh`]) tests one box per node and takes a step of the walk per
//! box; the pile's near-list rebuilds walked 64 of its nodes per query, 18 % of the run
//! (docs/benchmarks.md, "Issue 13: a four-wide tree for the pair searches"). Wide trees
//! are the usual answer for ray queries (Wald et al., "Getting Rid of Packets", 2008; Dammertz
//! et al., "Shallow Bounding Volume Hierarchies", 2008); box queries gain the same way.
//!
//! **Shape.** The tree is the binary tree of [`Bvh::over_boxes`] (median splits), collapsed:
//! a wide node takes the children of a binary node and replaces each inner one by its own
//! two children while there is room, so it holds the (up to) four grandchildren and skips a
//! level. Nodes are stored depth first (a child after its parent); a refit is one reverse
//! pass, as in [`Bvh`].
//!
//! **Same answers.** The slots' boxes are rounded outward to `f32` as [`super::node_box`]
//! rounds the binary tree's, so a node's box holds every leaf box below it and a walk
//! reaches every leaf whose rounded box overlaps the rounded query. A leaf is found when its
//! rounded box does: every pair whose `f64` boxes overlap ([`boxes_overlap`]), and at most
//! the pairs whose boxes lie apart by under three `f32` steps besides (0.2 µm at a metre).
//! The rounding of a leaf's box depends on that box alone, so which leaves a query finds
//! does not depend on the tree's shape, or on when it was refitted; [`WideBvh::overlapping_pairs`]
//! sorts each query's leaves, so neither does their order. The callers decide each pair
//! exactly: the near lists re-test every listed pair in every substep (an extra pair is
//! re-tested and dropped), the rest-close table measures the rest distance, the crossing
//! count tests each pair's triangles for a crossing. An exact `f64` test of each leaf here
//! (the binary tree's) cost 2 % of the pile's instructions and changed no contact. A NaN corner compares false, so such a query overlaps everything, as
//! in the `f64` test.

use super::bvh::{boxes_overlap, Bvh, Shape};
use super::node_box::outward;
use glam::DVec3;

/// A wide node: four child slots, each a leaf (`LEAF | item`) or another wide node.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
pub(super) struct WideNode {
    /// Lower corners of the slots' boxes by axis: `lower[axis][slot]`.
    pub(super) lower: [[f32; 4]; 3],
    /// Upper corners, as `lower`.
    pub(super) upper: [[f32; 4]; 3],
    /// Each slot's wide node, or `LEAF | item` for a leaf.
    pub(super) child: [u32; 4],
    /// The largest item below each slot; [`EMPTY`] for an unused slot.
    pub(super) last: [u32; 4],
}

/// The bit of a slot's `child` that marks a leaf (items stay below it).
pub(super) const LEAF: u32 = 1 << 31;

/// The `last` of an unused slot: −1 read as `i32`, below every item, so the walk's
/// "holds an item at or after `first`" test ([`later_slots`]) never passes it.
pub(super) const EMPTY: u32 = u32::MAX;

/// Slots a walk may hold at once: a wide level takes two binary levels, a binary tree of
/// median splits over fewer than 2³¹ items is at most 32 deep, so at most 16 wide levels,
/// each leaving at most three slots behind on the stack, plus the one being taken.
/// [`WideBvh::over_boxes`] checks each tree against it once, so that the walk pushes
/// without a bounds check (1 % of the self-colliding pile's instructions;
/// docs/benchmarks.md, "Issue 13: the edge side test in lanes").
pub(super) const STACK: usize = 3 * 16 + 1;

impl WideNode {
    const UNUSED: WideNode = WideNode {
        lower: [[f32::INFINITY; 4]; 3],
        upper: [[f32::NEG_INFINITY; 4]; 3],
        child: [0; 4],
        last: [EMPTY; 4],
    };

    fn set_slot_box(&mut self, slot: usize, (lower, upper): ([f32; 3], [f32; 3])) {
        for axis in 0..3 {
            self.lower[axis][slot] = lower[axis];
            self.upper[axis][slot] = upper[axis];
        }
    }

    /// The box of all four slots (exact: the corners are already `f32`; unused slots are
    /// empty boxes).
    fn union(&self) -> ([f32; 3], [f32; 3]) {
        let fold = |lanes: [f32; 4], pick: fn(f32, f32) -> f32| {
            pick(pick(lanes[0], lanes[1]), pick(lanes[2], lanes[3]))
        };
        (
            self.lower.map(|lanes| fold(lanes, f32::min)),
            self.upper.map(|lanes| fold(lanes, f32::max)),
        )
    }
}

/// A query box with each corner coordinate in all four lanes, and the first item it wants.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(16))]
struct WideQuery {
    lower: [[f32; 4]; 3],
    upper: [[f32; 4]; 3],
    /// `first − 1` as `i32` in every lane: a slot holds an item at or after `first` when its
    /// `last` (as `i32`) is greater. `first` = 0 gives −1, which every item passes and
    /// [`EMPTY`] does not; `first` = 2³¹ gives `i32::MAX`, which nothing passes.
    before_first: [i32; 4],
}

impl WideQuery {
    fn new(first: u32, min: DVec3, max: DVec3) -> WideQuery {
        let (lower, upper) = outward(min, max);
        WideQuery {
            lower: lower.map(|v| [v; 4]),
            upper: upper.map(|v| [v; 4]),
            before_first: [first.wrapping_sub(1) as i32; 4],
        }
    }
}

/// The slots of `node` whose boxes overlap the query's (closed boxes, as
/// [`boxes_overlap`]) and that hold an item at or after the query's first, as bits.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn later_slots(node: &WideNode, query: &WideQuery) -> u32 {
    use std::arch::x86_64::{
        __m128, _mm_castsi128_ps, _mm_cmpgt_epi32, _mm_cmpgt_ps, _mm_cmplt_ps, _mm_load_ps,
        _mm_load_si128, _mm_movemask_ps, _mm_or_ps,
    };
    // SAFETY: both types are `repr(C, align(16))` (the node 64) and every array loaded is
    // four 4-byte lanes at a multiple of 16 bytes from the start, so the aligned loads read
    // inside them; SSE2 is part of every x86-64.
    unsafe {
        let load = |lanes: &[f32; 4]| -> __m128 { _mm_load_ps(lanes.as_ptr()) };
        let mut apart = _mm_cmpgt_ps(load(&node.lower[0]), load(&query.upper[0]));
        for axis in 0..3 {
            if axis > 0 {
                let above = _mm_cmpgt_ps(load(&node.lower[axis]), load(&query.upper[axis]));
                apart = _mm_or_ps(apart, above);
            }
            let below = _mm_cmplt_ps(load(&node.upper[axis]), load(&query.lower[axis]));
            apart = _mm_or_ps(apart, below);
        }
        let later = _mm_cmpgt_epi32(
            _mm_load_si128(node.last.as_ptr().cast()),
            _mm_load_si128(query.before_first.as_ptr().cast()),
        );
        (!_mm_movemask_ps(apart) & _mm_movemask_ps(_mm_castsi128_ps(later))) as u32
    }
}

/// The portable form of the test above.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn later_slots(node: &WideNode, query: &WideQuery) -> u32 {
    (0..4).fold(0, |bits, slot| {
        let overlaps = (0..3).all(|axis| {
            !(node.lower[axis][slot] > query.upper[axis][slot]
                || node.upper[axis][slot] < query.lower[axis][slot])
        });
        let later = node.last[slot] as i32 > query.before_first[slot];
        bits | (u32::from(overlaps && later) << slot)
    })
}

/// A four-wide tree over a list of boxes (leaf k = box k), for box queries only.
#[derive(Debug, Clone, Default)]
pub struct WideBvh {
    nodes: Vec<WideNode>,
    /// How many boxes the tree is over.
    leaves: usize,
    /// The union of the root's slots (every leaf's rounded box) in `f64`, set by every fit;
    /// `None` for an empty tree or when a slot has a NaN corner (see [`WideBvh::root_box`]).
    root_box: Option<(DVec3, DVec3)>,
}

impl WideBvh {
    /// A tree over boxes `(min, max)` (leaf k = box k): [`Bvh::over_boxes`]' median splits,
    /// collapsed to four children per node.
    pub fn over_boxes(leaf_boxes: &[(DVec3, DVec3)]) -> WideBvh {
        let mut tree = WideBvh {
            nodes: Vec::new(),
            leaves: leaf_boxes.len(),
            root_box: None,
        };
        if !leaf_boxes.is_empty() {
            let (_, levels) = tree.collapse(&Bvh::over_boxes(leaf_boxes), 0);
            // What lets the walk push without a bounds check (see `STACK`); median splits
            // keep any tree over fewer than 2³¹ boxes within it.
            assert!(3 * levels < STACK, "a wide tree {levels} levels deep");
            tree.nodes.shrink_to_fit(); // about a third as many nodes as boxes, kept for good
        }
        tree.fit(leaf_boxes);
        tree
    }

    /// Appends the wide node for binary node `index` and the subtrees below it; returns its
    /// index and how many levels of wide nodes it heads (1 with leaves only). A binary leaf
    /// (only at the root, a tree of one box) becomes a node with one used slot.
    fn collapse(&mut self, binary: &Bvh, index: usize) -> (u32, usize) {
        let mut slots = match binary.shape(index) {
            Shape::Leaf(_) => vec![index],
            Shape::Inner(children) => children.to_vec(),
        };
        // Replace inner slots by their children, a level at a time, while four fit.
        let mut grown = true;
        while grown {
            grown = false;
            let mut k = 0;
            while k < slots.len() {
                match binary.shape(slots[k]) {
                    Shape::Inner(children) if slots.len() < 4 => {
                        slots.splice(k..=k, children);
                        (k, grown) = (k + 2, true);
                    }
                    _ => k += 1,
                }
            }
        }
        let at = self.nodes.len();
        self.nodes.push(WideNode::UNUSED);
        let mut levels = 1;
        for (slot, &below) in slots.iter().enumerate() {
            let child = match binary.shape(below) {
                Shape::Leaf(item) => LEAF | item,
                Shape::Inner(_) => {
                    let (child, below_levels) = self.collapse(binary, below);
                    levels = levels.max(below_levels + 1);
                    child
                }
            };
            self.nodes[at].child[slot] = child;
            self.nodes[at].last[slot] = binary.last(below);
        }
        (at as u32, levels)
    }

    /// The nodes, depth first from the root (for the nearest-point walk,
    /// [`super::wide_nearest`]).
    pub(super) fn nodes(&self) -> &[WideNode] {
        &self.nodes
    }

    /// Sets every box from `leaf_boxes` (leaf k = box k), keeping the tree's shape, when it
    /// has as many leaves; returns whether it had. What a query finds does not depend on the
    /// shape (every leaf whose box overlaps the query is reached), only how long it takes:
    /// a tree built where the boxes lay long ago may visit more nodes.
    pub fn refit_boxes(&mut self, leaf_boxes: &[(DVec3, DVec3)]) -> bool {
        if self.leaves != leaf_boxes.len() {
            return false;
        }
        self.fit(leaf_boxes);
        true
    }

    /// Sets every slot's box from the leaf boxes below it (`leaf_boxes`, by item). Children
    /// follow their parents, so a reverse pass sees them first.
    fn fit(&mut self, leaf_boxes: &[(DVec3, DVec3)]) {
        for index in (0..self.nodes.len()).rev() {
            let (child, last) = (self.nodes[index].child, self.nodes[index].last);
            for slot in 0..4 {
                if last[slot] == EMPTY {
                    continue;
                }
                let child = child[slot];
                let corners = if child & LEAF != 0 {
                    let (min, max) = leaf_boxes[(child & !LEAF) as usize];
                    outward(min, max)
                } else {
                    self.nodes[child as usize].union()
                };
                self.nodes[index].set_slot_box(slot, corners);
            }
        }
        self.root_box = self.nodes.first().and_then(|root| {
            let corners = root.lower.iter().chain(&root.upper).flatten();
            let nan = corners.clone().any(|v| v.is_nan());
            let widen = |corner: [f32; 3]| DVec3::from_array(corner.map(f64::from));
            (!nan)
                .then(|| root.union())
                .map(|(lower, upper)| (widen(lower), widen(upper)))
        });
    }

    /// A box holding every leaf's rounded box: the union of the root's slots, its `f32`
    /// corners widened to `f64` (exactly). `None` when a slot has a NaN corner, which the
    /// union (`f32::min`) would leave out while a walk still enters that slot.
    pub(super) fn root_box(&self) -> Option<(DVec3, DVec3)> {
        self.root_box
    }

    /// Calls `visit` with every leaf of item `first` or later whose rounded box overlaps
    /// `[min, max]` rounded (see the module notes), in no particular order. `stack` is the
    /// walk's (only the entries it pushes are read), passed in so that a search zeroes one
    /// for all its queries: zeroing 196 bytes per query cost 14 M instructions in the pile's
    /// 875 140 queries (docs/benchmarks.md, "Issue 13: the crossing count's tree refitted").
    /// Always inlined, as [`BoxTree::for_each_overlapping`].
    #[inline(always)]
    fn for_each_overlapping_from(
        &self,
        stack: &mut [u32; STACK],
        first: u32,
        (min, max): (DVec3, DVec3),
        mut visit: impl FnMut(u32),
    ) {
        if self.nodes.is_empty() {
            return;
        }
        let query = WideQuery::new(first, min, max);
        stack[0] = 0; // the root, node 0
        let mut held = 1;
        while held > 0 {
            held -= 1;
            // SAFETY: `held` is below the most slots the push below left, within `STACK`;
            // the stack holds the root and inner slots' children, every one a node of this
            // tree (`collapse` links only nodes it pushed; `fit` keeps the links).
            let node = unsafe {
                self.nodes
                    .get_unchecked(*stack.get_unchecked(held) as usize)
            };
            let mut slots = later_slots(node, &query);
            while slots != 0 {
                // One of four slots: `& 3` tells the compiler so, and drops a bounds check.
                let slot = slots.trailing_zeros() as usize & 3;
                slots &= slots - 1;
                let child = node.child[slot];
                if child & LEAF == 0 {
                    // SAFETY: `over_boxes` checked that a walk of this tree holds at most
                    // `STACK` slots: three left behind per level above, four pushed here.
                    unsafe { *stack.get_unchecked_mut(held) = child };
                    held += 1;
                } else {
                    visit(child & !LEAF);
                }
            }
        }
    }

    /// Appends to `pairs` every `[q, leaf]`, `q` from `queries` in their order, whose boxes
    /// overlap (`query_box(q)` and the leaf's, rounded outward to `f32`: every pair whose
    /// `f64` boxes overlap, see the module notes) and that `keep` accepts; the leaves of each
    /// query ascending, so ascending queries give a sorted list. Appending lets the solver
    /// refill one buffer at every rebuild of its near lists instead of allocating.
    pub fn overlapping_pairs(
        &self,
        queries: impl IntoIterator<Item = u32>,
        query_box: impl Fn(u32) -> (DVec3, DVec3),
        keep: impl Fn(u32, u32) -> bool,
        pairs: &mut Vec<[u32; 2]>,
    ) {
        self.pairs_from(queries, query_box, |_| 0, keep, pairs);
    }

    /// [`Self::overlapping_pairs`] of a tree over the queries' own boxes, each pair once:
    /// the leaves after each query only (`leaf > q`); subtrees of earlier items alone are
    /// never entered, so such a search walks about half the tree.
    pub fn later_overlapping_pairs(
        &self,
        queries: impl IntoIterator<Item = u32>,
        query_box: impl Fn(u32) -> (DVec3, DVec3),
        keep: impl Fn(u32, u32) -> bool,
        pairs: &mut Vec<[u32; 2]>,
    ) {
        self.pairs_from(queries, query_box, |q| q.saturating_add(1), keep, pairs);
    }

    /// Calls `visit(q, leaf)` for every pair of [`Self::later_overlapping_pairs`] (the
    /// leaves after each query whose rounded boxes overlap its box), unsorted and without
    /// collecting them: for a count, which needs no order ([`super::intersections`]).
    pub fn for_each_later_pair(
        &self,
        queries: impl IntoIterator<Item = u32>,
        query_box: impl Fn(u32) -> (DVec3, DVec3),
        mut visit: impl FnMut(u32, u32),
    ) {
        let mut stack = [0u32; STACK];
        for q in queries {
            let first = q.saturating_add(1);
            self.for_each_overlapping_from(&mut stack, first, query_box(q), |leaf| visit(q, leaf));
        }
    }

    /// The pairs of [`Self::overlapping_pairs`] whose leaf is `first_leaf(q)` or later.
    pub(super) fn pairs_from(
        &self,
        queries: impl IntoIterator<Item = u32>,
        query_box: impl Fn(u32) -> (DVec3, DVec3),
        first_leaf: impl Fn(u32) -> u32,
        keep: impl Fn(u32, u32) -> bool,
        pairs: &mut Vec<[u32; 2]>,
    ) {
        if self.nodes.is_empty() {
            return; // nothing to overlap (and `query_box` may know no queries then)
        }
        // A local vector while the walks push into it: behind the reference its length
        // and capacity were read back from memory at every push (cachegrind: 5 % more
        // instructions in the walks of the pile).
        let mut found = std::mem::take(pairs);
        let mut stack = [0u32; STACK];
        for q in queries {
            let start = found.len();
            self.for_each_overlapping_from(&mut stack, first_leaf(q), query_box(q), |leaf| {
                if keep(q, leaf) {
                    found.push([q, leaf]);
                }
            });
            // Every pair here has the query first: sorting by the leaf alone is one
            // comparison per step instead of two.
            found[start..].sort_unstable_by_key(|&[_, leaf]| leaf);
        }
        *pairs = found;
    }
}

/// The stack of a tree walk, for callers that make many queries ([`BoxTree::for_each_overlapping`]):
/// only the entries a walk pushes are read, so one zeroed stack serves them all.
#[derive(Debug, Clone)]
pub struct WalkStack([u32; STACK]);

impl Default for WalkStack {
    fn default() -> WalkStack {
        WalkStack([0; STACK])
    }
}

/// Boxes and a four-wide tree over them, kept from one search to the next so that a new
/// search allocates nothing and refits the tree rather than building it: the near lists'
/// searches ([`super::near_lists`]), the crossing count ([`super::intersections`]) and the
/// triangles of a mesh collider's pose ([`super::MeshPose`]).
#[derive(Debug, Clone, Default)]
pub struct BoxTree {
    /// Leaf k's box.
    pub boxes: Vec<(DVec3, DVec3)>,
    pub tree: WideBvh,
}

impl BoxTree {
    /// Bytes a tree takes per leaf: the leaf's box and a third of a wide node (about a third
    /// as many nodes as leaves, [`WideBvh::over_boxes`]).
    pub const BYTES_PER_LEAF: usize =
        size_of::<(DVec3, DVec3)>() + size_of::<WideNode>().div_ceil(3);

    /// `boxes` in the buffer of `kept` (the last search's) if given, and a tree over them:
    /// `kept`'s refitted when it has as many leaves, otherwise a new one. Building took 8 %
    /// of the pile's time at one thread, refitting a fraction of it; the refitted tree, built
    /// on the hanging cloth, was as fast to search once it folded (docs/benchmarks.md,
    /// "Issue 13: trees refitted"). The pairs found are the same either way
    /// ([`WideBvh::refit_boxes`]).
    pub fn refill(kept: Option<BoxTree>, boxes: impl Iterator<Item = (DVec3, DVec3)>) -> BoxTree {
        let (mut buffer, kept_tree) = match kept {
            Some(kept) => (kept.boxes, Some(kept.tree)),
            None => (Vec::new(), None),
        };
        buffer.clear();
        buffer.extend(boxes);
        let refitted = kept_tree.and_then(|mut tree| tree.refit_boxes(&buffer).then_some(tree));
        let tree = refitted.unwrap_or_else(|| WideBvh::over_boxes(&buffer));
        BoxTree {
            boxes: buffer,
            tree,
        }
    }

    /// Calls `visit` with every leaf whose box overlaps `query` ([`boxes_overlap`]), in no
    /// particular order. The walk finds the leaves whose boxes rounded outward to `f32`
    /// overlap it (a superset, see the module notes); each is then tested exactly. `stack`
    /// is the walk's, kept by the caller for all its queries: the collider-feature search
    /// asks one query per cloth element and collider, and zeroing a stack for each was 1 %
    /// of `scenes/dancer.toml`'s instructions. A query beside the root's box (which holds
    /// every box, [`WideBvh::root_box`]) overlaps none of them and is answered by that one
    /// test, before the walk rounds it to `f32` and tests the root's four slots
    /// (docs/benchmarks.md, "Issue 13: the collider-feature search's swept boxes"). Without
    /// a root box (a NaN corner in a root slot) the walk decides. Always inlined: its
    /// callers' `visit` closures are small and run for every leaf found, and when the
    /// near lists moved to [`super::box_grid`] the compiler stopped inlining this walk into
    /// the collider-feature search, which made the dancer 2 % slower (docs/benchmarks.md,
    /// "Issue 13: the near-list searches on a grid").
    #[inline(always)]
    pub fn for_each_overlapping(
        &self,
        stack: &mut WalkStack,
        query: (DVec3, DVec3),
        mut visit: impl FnMut(u32),
    ) {
        if let Some(root) = self.tree.root_box() {
            if !boxes_overlap(query, root) {
                return;
            }
        }
        self.tree
            .for_each_overlapping_from(&mut stack.0, 0, query, |leaf| {
                if boxes_overlap(query, self.boxes[leaf as usize]) {
                    visit(leaf);
                }
            });
    }
}

#[cfg(test)]
mod tests;
