//! Box-overlap searches on a uniform grid where the boxes allow one, on a four-wide tree
//! ([`super::wide_bvh`]) where they do not: the near-list searches of
//! [`super::near_lists`].
//!
//! **Why a grid.** A near-list rebuild of the self-colliding pile asks, for each of its 3 313
//! edges, which edges' boxes overlap its own, and for each of its 1 152 particles, which of
//! its triangles' and particles' boxes overlap its own. The tree answered in 16 node visits
//! per query, each a branch the predictor often misses; the walks were about 40 % of the
//! pile's time (docs/benchmarks.md, "Issue 13: the pile's rebuilds by the clock"). The boxes
//! of a cloth are all about one size, so a grid of cells half that size, over the two axes
//! along which the boxes' lower corners spread most, holds a few boxes a cell; a query reads
//! the cells its box can reach as one contiguous run per row (the cells are stored row by
//! row) and tests sixteen boxes at a time with no branch per box. Sorting along one axis and
//! sweeping (sort and sweep) was measured first and lost five to one: a sheet spread in two
//! axes overlaps a whole strip of itself along any one (docs/benchmarks.md, "Issue 13: the
//! near-list searches on a grid").
//!
//! **Where it would lose.** Boxes of very different sizes (a fast particle's extrapolated
//! box beside resting cloth) would widen every query's reach, and one far particle would
//! spread the cells over empty space. Boxes wider than twice the median width (and any
//! with a NaN corner) are kept aside and tested against every query; when more than a few
//! are, or the cells would outnumber the boxes sixteen to one, or the fullest cells would
//! make the average query read more than [`MOST_READ`] boxes, the same boxes go into a tree
//! instead. The choice depends on the boxes alone, never on the threads.
//!
//! **Same answers.** The grid finds the pairs [`super::wide_bvh::WideBvh`] finds: the boxes
//! whose corners rounded outward to `f32` ([`super::node_box::outward`]) overlap the rounded
//! query, compared as the tree compares them, each query's items ascending. A box `j` that
//! overlaps query `q` on a grid axis has `q.lower − w ≤ j.lower ≤ q.upper`, `w` the widest
//! box in the grid on that axis, so its cell lies between the cells of those two bounds (the
//! cell of a coordinate is monotone in it); the query reads every such cell and tests every
//! box it reads. A NaN corner compares false, so such a box (kept aside) overlaps every
//! query, and a query with one reads every cell on that axis; the tree may miss such a box
//! under a node whose box left the NaN out. A NaN position stops the run after its substep
//! (the divergence check), so no written frame depends on that difference.

use super::node_box::outward;
use super::wide_bvh::WideBvh;
use crate::constraints::batch::SimdPath;
use glam::DVec3;

/// Boxes tested per step of a query's scan (one bit each of a mask).
const STEP: usize = 16;

/// A box goes into the grid when its width on both grid axes is at most this many times the
/// median width: the pile's widest boxes are 1.5 times its median.
const WIDE_CUT: f32 = 2.0;

/// The most boxes whose widths [`BoxGrid::width_cut`] takes the median of, and whose
/// spread chooses the grid's axes ([`spread_axes`]).
const SAMPLED: usize = 256;

/// The grid's cell: this fraction of the widest box in it. Measured on the pile: 0.35 and 0.5
/// the fastest, 1.0 about 15 % slower in the searches (a query reads more boxes).
const CELL_OF_WIDEST: f64 = 0.5;

/// The most boxes kept aside (each tested against every query) before the tree is used
/// instead: a few, plus one in 256.
fn most_wide(boxes: usize) -> usize {
    8 + boxes / 256
}

/// The most boxes the average query may read ([`BoxGrid::estimated_reads`]) before the
/// tree is used instead. Measured on sheets of boxes stacked in layers (`break_even`
/// below): with the layers touching, the grid took half the tree's time at an estimate of
/// 174 and 0.64 of it at 347; with the layers a box apart along the axis the grid leaves
/// out, so that most boxes read are rejected on that axis, 1.12–1.25 times the tree's at
/// 347, and 1.00–1.09 at 520–700. The pile's edge searches were estimated at 53 to 521
/// (median 153), and the pile as a whole ran faster on the grid than on the tree
/// (docs/benchmarks.md, "Issue 13: the near-list searches on a grid").
const MOST_READ: usize = 512;

/// The boxes of a search, and the grid or tree over them.
#[derive(Debug, Clone, Default)]
pub struct BoxIndex {
    /// Box k (as given, in `f64`).
    pub boxes: Vec<(DVec3, DVec3)>,
    grid: BoxGrid,
    /// Kept from search to search (refitted when it has as many leaves), built only when
    /// the grid is refused.
    tree: WideBvh,
    on_grid: bool,
}

impl BoxIndex {
    /// `boxes` in the buffers of `kept` (the last search's) if given, and a grid over them,
    /// or a tree where a grid would be slow (see the module notes).
    pub fn refill(kept: Option<BoxIndex>, boxes: impl Iterator<Item = (DVec3, DVec3)>) -> Self {
        let mut index = kept.unwrap_or_default();
        index.boxes.clear();
        index.boxes.extend(boxes);
        index.on_grid = index.grid.fill(&index.boxes);
        if !index.on_grid && !index.tree.refit_boxes(&index.boxes) {
            index.tree = WideBvh::over_boxes(&index.boxes);
        }
        index
    }

    /// Whether the last refill chose the grid.
    pub fn on_grid(&self) -> bool {
        self.on_grid
    }

    /// Appends to `pairs` every `[q, item]`, `q` from `queries` in their order, whose
    /// boxes overlap (`query_box(q)` and the item's, rounded outward to `f32`) and that `keep`
    /// accepts, each query's items ascending ([`WideBvh::overlapping_pairs`]'s pairs).
    pub fn overlapping_pairs(
        &self,
        queries: impl IntoIterator<Item = u32>,
        query_box: impl Fn(u32) -> (DVec3, DVec3),
        keep: impl Fn(u32, u32) -> bool,
        pairs: &mut Vec<[u32; 2]>,
    ) {
        if self.on_grid {
            let scan = Scan::chosen();
            self.grid
                .pairs_from(scan, queries, query_box, |_| 0, keep, pairs);
        } else {
            self.tree.overlapping_pairs(queries, query_box, keep, pairs);
        }
    }

    /// [`Self::overlapping_pairs`] with the items after each query only (`item > q`), for
    /// an index over the queries' own boxes.
    pub fn later_overlapping_pairs(
        &self,
        queries: impl IntoIterator<Item = u32>,
        query_box: impl Fn(u32) -> (DVec3, DVec3),
        keep: impl Fn(u32, u32) -> bool,
        pairs: &mut Vec<[u32; 2]>,
    ) {
        if self.on_grid {
            let after = |q: u32| q.saturating_add(1);
            let scan = Scan::chosen();
            self.grid
                .pairs_from(scan, queries, query_box, after, keep, pairs);
        } else {
            self.tree
                .later_overlapping_pairs(queries, query_box, keep, pairs);
        }
    }
}

/// A rounded box, its corners in the grid's axis order.
type Corners = ([f32; 3], [f32; 3]);

/// Boxes binned by their lower corners in a grid over two axes, row by row.
#[derive(Debug, Clone, Default)]
struct BoxGrid {
    /// The two grid axes (columns, rows), then the third.
    axes: [usize; 3],
    /// The lower corner of cell (0, 0) on the two grid axes.
    origin: [f64; 2],
    /// One over the cells' side.
    inv_cell: f64,
    columns: usize,
    rows: usize,
    /// The boxes of cell `c` (row `c / columns`, column `c % columns`) are places
    /// `cell_start[c]..cell_start[c + 1]` of the arrays below.
    cell_start: Vec<u32>,
    /// The binned boxes' corners by axis (grid axes first), cell by cell, and their items;
    /// [`STEP`] places past the last hold empty boxes so that a scan reads whole steps.
    lower: [Vec<f32>; 3],
    upper: [Vec<f32>; 3],
    item: Vec<u32>,
    /// The widest binned box on each grid axis.
    reach: [f64; 2],
    /// The boxes kept aside, tested against every query: their items and corners.
    wide: Vec<(u32, Corners)>,
    /// Scratch of [`Self::fill`]: every box rounded, by item, its corners in the order of
    /// `axes`; each box's cell (or `u32::MAX`); the widths whose median is taken.
    rounded: Vec<Corners>,
    cell_of: Vec<u32>,
    widths: Vec<f32>,
}

impl BoxGrid {
    /// Bins `boxes` in a grid over the two axes along which they spread most; false (and
    /// the grid unusable) when the tree should be used instead.
    fn fill(&mut self, boxes: &[(DVec3, DVec3)]) -> bool {
        self.axes = spread_axes(boxes);
        let axes = self.axes;
        let in_order = |v: DVec3| DVec3::new(v[axes[0]], v[axes[1]], v[axes[2]]);
        self.rounded.clear();
        (self.rounded)
            .extend((boxes.iter()).map(|&(min, max)| outward(in_order(min), in_order(max))));
        self.place() && self.estimated_reads() <= MOST_READ
    }

    /// Bins the boxes (their corners in `rounded` in the grid's axis order); false when no
    /// width is finite, too many boxes are wide or the cells would be too many.
    fn place(&mut self) -> bool {
        let Some(cut) = self.width_cut() else {
            return false;
        };
        if !self.set_cells(cut) {
            return false;
        }
        self.bin();
        true
    }

    /// The width above which a box is kept aside: [`WIDE_CUT`] times the median of the
    /// finite widths of at most [`SAMPLED`] boxes spread evenly over the list (the whole
    /// list's median took 3 % of the pile); `None` when none is finite.
    fn width_cut(&mut self) -> Option<f32> {
        let mut widths = std::mem::take(&mut self.widths);
        widths.clear();
        let every = self.rounded.len().div_ceil(SAMPLED).max(1);
        for k in (0..self.rounded.len()).step_by(every) {
            let (lower, upper) = self.rounded[k];
            let width = grid_width(lower, upper);
            if width.is_finite() {
                widths.push(width);
            }
        }
        self.widths = widths;
        if self.widths.is_empty() {
            return None;
        }
        let middle = self.widths.len() / 2;
        let (_, median, _) = self.widths.select_nth_unstable_by(middle, f32::total_cmp);
        Some(WIDE_CUT * *median)
    }

    /// Sorts the boxes into binned and wide ones (the binned boxes' cells in `cell_of`),
    /// and sizes the grid around the binned ones; false when too many are wide or the
    /// cells would outnumber the boxes.
    fn set_cells(&mut self, cut: f32) -> bool {
        let count = self.rounded.len();
        self.wide.clear();
        self.cell_of.clear();
        let (mut low, mut high) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
        self.reach = [0.0; 2];
        for (k, &(l, u)) in self.rounded.iter().enumerate() {
            // False for a NaN width; a finite width means finite corners on both axes.
            if grid_width(l, u) <= cut {
                for g in 0..2 {
                    low[g] = low[g].min(f64::from(l[g]));
                    high[g] = high[g].max(f64::from(l[g]));
                    self.reach[g] = self.reach[g].max(f64::from(u[g]) - f64::from(l[g]));
                }
                self.cell_of.push(0);
            } else {
                self.wide.push((k as u32, (l, u)));
                self.cell_of.push(u32::MAX);
            }
        }
        if self.wide.len() > most_wide(count) {
            return false;
        }
        let side = CELL_OF_WIDEST * self.reach[0].max(self.reach[1]);
        self.inv_cell = if side > 0.0 { 1.0 / side } else { 1.0 };
        self.origin = low;
        let span = |g: usize| ((high[g] - low[g]) * self.inv_cell).max(0.0);
        let (columns, rows) = (span(0), span(1));
        // In floating point first: a far box could make either beyond any integer.
        let most_cells = 16.0 * count as f64 + 1024.0;
        if (columns + 1.0) * (rows + 1.0) > most_cells {
            return false;
        }
        (self.columns, self.rows) = (columns as usize + 1, rows as usize + 1);
        for k in 0..count {
            if self.cell_of[k] != u32::MAX {
                let l = self.rounded[k].0;
                self.cell_of[k] = self.cell([f64::from(l[0]), f64::from(l[1])]) as u32;
            }
        }
        true
    }

    /// Fills the cells (a counting sort by cell, items ascending within each).
    fn bin(&mut self) {
        let cells = self.columns * self.rows;
        self.cell_start.clear();
        self.cell_start.resize(cells + 1, 0);
        for &c in self.cell_of.iter().filter(|&&c| c != u32::MAX) {
            self.cell_start[c as usize + 1] += 1;
        }
        for c in 0..cells {
            self.cell_start[c + 1] += self.cell_start[c];
        }
        let binned = self.cell_start[cells] as usize;
        for axis in 0..3 {
            self.lower[axis].clear();
            self.lower[axis].resize(binned + STEP, f32::INFINITY);
            self.upper[axis].clear();
            self.upper[axis].resize(binned + STEP, f32::NEG_INFINITY);
        }
        self.item.clear();
        self.item.resize(binned + STEP, 0);
        for (k, &(l, u)) in self.rounded.iter().enumerate() {
            let c = self.cell_of[k];
            if c == u32::MAX {
                continue;
            }
            // `cell_start[c]` counts up to the next free place; put back below.
            let place = self.cell_start[c as usize] as usize;
            self.cell_start[c as usize] += 1;
            for axis in 0..3 {
                self.lower[axis][place] = l[axis];
                self.upper[axis][place] = u[axis];
            }
            self.item[place] = k as u32;
        }
        // Each start now holds the next cell's; shift them back by one cell.
        for c in (1..=cells).rev() {
            self.cell_start[c] = self.cell_start[c - 1];
        }
        self.cell_start[0] = 0;
    }

    /// How many boxes the average query will read, estimated before any is made: a query
    /// the size of the boxes reads the cells up to two lines (the reach, two cells) before its
    /// lower corner's and about two after it on each axis, so the box in cell `c` costs its
    /// query the boxes in the 5 × 5 cells around `c` (each row's from the running counts in
    /// `cell_start`, which are sums along the rows).
    fn estimated_reads(&self) -> usize {
        let (columns, rows) = (self.columns, self.rows);
        let run = |row: usize, first: usize, last: usize| {
            let base = row * columns;
            (self.cell_start[base + last + 1] - self.cell_start[base + first]) as usize
        };
        let mut reads = 0;
        for row in 0..rows {
            for column in 0..columns {
                let boxes = run(row, column, column);
                if boxes == 0 {
                    continue;
                }
                let (first, last) = (column.saturating_sub(2), (column + 2).min(columns - 1));
                let around: usize = (row.saturating_sub(2)..=(row + 2).min(rows - 1))
                    .map(|r| run(r, first, last))
                    .sum();
                reads += boxes * around;
            }
        }
        let binned = self.cell_start.last().copied().unwrap_or(0) as usize;
        reads / binned.max(1)
    }

    /// The column (`g` 0) or row (`g` 1) of coordinate `v`, clamped to the grid; the same
    /// arithmetic for boxes and queries, monotone in `v`.
    fn line(&self, g: usize, v: f64) -> usize {
        let last = if g == 0 { self.columns } else { self.rows } - 1;
        let at = (v - self.origin[g]) * self.inv_cell;
        if at >= 0.0 {
            (at as usize).min(last) // `as` saturates
        } else {
            0
        }
    }

    fn cell(&self, v: [f64; 2]) -> usize {
        self.line(1, v[1]) * self.columns + self.line(0, v[0])
    }

    /// The columns and rows a query `(lower, upper)` reads, first and last: from the line
    /// of `lower − reach` (less a little, so that rounding cannot move it past a box's own
    /// line) to that of `upper`; every line where a bound is NaN.
    fn lines(&self, g: usize, lower: f32, upper: f32) -> (usize, usize) {
        let last = if g == 0 { self.columns } else { self.rows } - 1;
        let (lower, upper) = (f64::from(lower), f64::from(upper));
        let slack = (lower.abs() + self.reach[g]) * f64::EPSILON * 16.0;
        let first = if lower.is_nan() {
            0
        } else {
            self.line(g, lower - self.reach[g] - slack)
        };
        let end = if upper.is_nan() {
            last
        } else {
            self.line(g, upper)
        };
        (first, end)
    }

    /// The pairs of [`BoxIndex::overlapping_pairs`] whose item is `first_item(q)` or later.
    fn pairs_from(
        &self,
        scan: Scan,
        queries: impl IntoIterator<Item = u32>,
        query_box: impl Fn(u32) -> (DVec3, DVec3),
        first_item: impl Fn(u32) -> u32,
        keep: impl Fn(u32, u32) -> bool,
        pairs: &mut Vec<[u32; 2]>,
    ) {
        // A local vector while the scans push into it, as the tree's walks do.
        let mut found = std::mem::take(pairs);
        for q in queries {
            let (min, max) = query_box(q);
            let (lower, upper) = outward(min, max);
            let query = Query {
                lower: self.axes.map(|a| lower[a]),
                upper: self.axes.map(|a| upper[a]),
                first: first_item(q),
            };
            let start = found.len();
            self.for_each_overlapping(scan, &query, |item| {
                if keep(q, item) {
                    found.push([q, item]);
                }
            });
            found[start..].sort_unstable_by_key(|&[_, item]| item);
        }
        *pairs = found;
    }

    /// Calls `visit` with every item at or after `query.first` whose box overlaps the
    /// query's, in no particular order.
    #[inline(always)]
    fn for_each_overlapping(&self, scan: Scan, query: &Query, mut visit: impl FnMut(u32)) {
        let (first_column, last_column) = self.lines(0, query.lower[0], query.upper[0]);
        let (first_row, last_row) = self.lines(1, query.lower[1], query.upper[1]);
        let mut masks = [0u32; MASKS];
        for row in first_row..=last_row {
            let base = row * self.columns;
            let mut from = self.cell_start[base + first_column] as usize;
            let to = self.cell_start[base + last_column + 1] as usize;
            while from < to {
                let end = to.min(from + MASKS * STEP);
                let steps = scan.masks(self, query, from..end, &mut masks);
                for (step, &mask) in masks[..steps].iter().enumerate() {
                    let mut mask = mask;
                    while mask != 0 {
                        let lane = mask.trailing_zeros() as usize;
                        mask &= mask - 1;
                        visit(self.item[from + step * STEP + lane]);
                    }
                }
                from = end;
            }
        }
        for &(item, (lower, upper)) in &self.wide {
            if item >= query.first && !apart(lower, upper, query) {
                visit(item);
            }
        }
    }
}

/// Masks a scan fills per call: 1 024 boxes.
const MASKS: usize = 64;

/// A query's rounded box in the grid's axis order, and the first item it wants.
struct Query {
    lower: [f32; 3],
    upper: [f32; 3],
    first: u32,
}

/// The larger of a rounded box's widths on the two grid axes (NaN if either is).
fn grid_width(lower: [f32; 3], upper: [f32; 3]) -> f32 {
    let (a, b) = (upper[0] - lower[0], upper[1] - lower[1]);
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else {
        a.max(b)
    }
}

/// The axes by how far the finite lower corners of at most [`SAMPLED`] boxes spread evenly
/// over the list spread on them, widest first (ties by axis): the choice only decides how
/// fast the searches go, and a sample tells it as well as every box.
fn spread_axes(boxes: &[(DVec3, DVec3)]) -> [usize; 3] {
    let mut low = [f64::INFINITY; 3];
    let mut high = [f64::NEG_INFINITY; 3];
    let every = boxes.len().div_ceil(SAMPLED).max(1);
    for (lower, _) in boxes.iter().step_by(every) {
        for axis in 0..3 {
            if lower[axis].is_finite() {
                low[axis] = low[axis].min(lower[axis]);
                high[axis] = high[axis].max(lower[axis]);
            }
        }
    }
    let spread = |a: usize| high[a] - low[a];
    let mut axes = [0, 1, 2];
    axes.sort_by(|&a, &b| spread(b).total_cmp(&spread(a)).then(a.cmp(&b)));
    axes
}

/// Whether two rounded boxes lie apart, as the tree's walk decides it (a NaN corner
/// compares false: not apart).
#[inline(always)]
fn apart(lower: [f32; 3], upper: [f32; 3], query: &Query) -> bool {
    (0..3).any(|a| lower[a] > query.upper[a] || upper[a] < query.lower[a])
}

/// How a scan computes its masks: the same comparisons in the lanes the CPU has.
#[derive(Debug, Clone, Copy)]
enum Scan {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Scan {
    /// AVX2 where [`SimdPath::chosen`] takes AVX2 or AVX-512 (AVX-512's sixteen lanes were
    /// no faster here), the baseline otherwise.
    fn chosen() -> Scan {
        match SimdPath::chosen() {
            #[cfg(target_arch = "x86_64")]
            SimdPath::Avx2 | SimdPath::Avx512 => Scan::Avx2,
            _ => Scan::Portable,
        }
    }

    /// Fills `masks` for the places `range` of `grid` (at most [`MASKS`] steps), one bit per
    /// box that overlaps `query` and is at or after its first item; returns the steps.
    #[inline(always)]
    fn masks(
        self,
        grid: &BoxGrid,
        query: &Query,
        range: std::ops::Range<usize>,
        masks: &mut [u32; MASKS],
    ) -> usize {
        match self {
            Scan::Portable => step_masks(grid, query, range, masks),
            // SAFETY: `Scan::Avx2` is chosen only where the CPU has AVX2.
            #[cfg(target_arch = "x86_64")]
            Scan::Avx2 => unsafe { step_masks_avx2(grid, query, range, masks) },
        }
    }
}

/// [`step_masks`] in AVX2 registers, written out: eight boxes per register, the six
/// comparisons joined and turned into bits by one `movemask` (the compiler's own
/// vectorisation of the lane loop put the bits together with shuffles, twice as slow).
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,avx2")]
unsafe fn step_masks_avx2(
    grid: &BoxGrid,
    query: &Query,
    range: std::ops::Range<usize>,
    masks: &mut [u32; MASKS],
) -> usize {
    use std::arch::x86_64::{
        _mm256_castsi256_ps, _mm256_cmp_ps, _mm256_cmpgt_epi32, _mm256_loadu_ps,
        _mm256_loadu_si256, _mm256_movemask_ps, _mm256_or_ps, _mm256_set1_epi32, _mm256_set1_ps,
        _mm256_setzero_ps, _CMP_GT_OQ, _CMP_LT_OQ,
    };
    let steps = range.len().div_ceil(STEP);
    let q_lower = query.lower.map(|v| _mm256_set1_ps(v));
    let q_upper = query.upper.map(|v| _mm256_set1_ps(v));
    // Items are below 2³¹ (the tree's walk compares them as `i32` too).
    let before_first = _mm256_set1_epi32(query.first.wrapping_sub(1) as i32);
    for (step, mask) in masks[..steps].iter_mut().enumerate() {
        let from = range.start + step * STEP;
        let mut bits = 0u32;
        for half in [0, 8] {
            // SAFETY: every load reads eight values from place `from + half`, within the
            // step that `lanes` checked lies inside the arrays.
            let (apart, later) = unsafe {
                let lower = |a: usize| lanes(&grid.lower[a], from).as_ptr().add(half);
                let upper = |a: usize| lanes(&grid.upper[a], from).as_ptr().add(half);
                let mut apart = _mm256_setzero_ps();
                for a in 0..3 {
                    let above = _mm256_cmp_ps::<_CMP_GT_OQ>(_mm256_loadu_ps(lower(a)), q_upper[a]);
                    let below = _mm256_cmp_ps::<_CMP_LT_OQ>(_mm256_loadu_ps(upper(a)), q_lower[a]);
                    apart = _mm256_or_ps(apart, _mm256_or_ps(above, below));
                }
                let items = lanes(&grid.item, from).as_ptr().add(half);
                let later = _mm256_cmpgt_epi32(_mm256_loadu_si256(items.cast()), before_first);
                (apart, later)
            };
            let near = !_mm256_movemask_ps(apart) as u32 & 0xff;
            let wanted = _mm256_movemask_ps(_mm256_castsi256_ps(later)) as u32;
            bits |= (near & wanted) << half;
        }
        *mask = bits & in_range(range.end - from);
    }
    steps
}

/// The bits of the lanes of a step that lie before the range's end, `left` places on.
#[inline(always)]
fn in_range(left: usize) -> u32 {
    if left >= STEP {
        u32::MAX
    } else {
        (1u32 << left) - 1
    }
}

/// [`Scan::masks`]: sixteen boxes a step, every comparison made for every box (no branch
/// per box), so the compiler keeps a step in vector registers.
#[inline(always)]
fn step_masks(
    grid: &BoxGrid,
    query: &Query,
    range: std::ops::Range<usize>,
    masks: &mut [u32; MASKS],
) -> usize {
    let steps = range.len().div_ceil(STEP);
    let (q_lower, q_upper) = (query.lower, query.upper);
    for (step, mask) in masks[..steps].iter_mut().enumerate() {
        let from = range.start + step * STEP;
        // Whole steps: the arrays hold `STEP` empty boxes past the last binned one.
        let lower = [
            lanes(&grid.lower[0], from),
            lanes(&grid.lower[1], from),
            lanes(&grid.lower[2], from),
        ];
        let upper = [
            lanes(&grid.upper[0], from),
            lanes(&grid.upper[1], from),
            lanes(&grid.upper[2], from),
        ];
        let items = lanes(&grid.item, from);
        let mut bits = 0u32;
        for lane in 0..STEP {
            let apart = (lower[0][lane] > q_upper[0])
                | (upper[0][lane] < q_lower[0])
                | (lower[1][lane] > q_upper[1])
                | (upper[1][lane] < q_lower[1])
                | (lower[2][lane] > q_upper[2])
                | (upper[2][lane] < q_lower[2]);
            let wanted = (from + lane < range.end) & (items[lane] >= query.first);
            bits |= u32::from(!apart & wanted) << lane;
        }
        *mask = bits;
    }
    steps
}

/// The [`STEP`] values of `values` from `from` on, as an array (so that the lane loop
/// needs no bounds checks). The grid's arrays hold a whole step past the last binned box.
#[inline(always)]
fn lanes<T>(values: &[T], from: usize) -> &[T; STEP] {
    (values[from..from + STEP].try_into()).expect("a whole step")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collision::bvh::bounds;

    /// A fixed xorshift sequence in [0, 1).
    fn uniform(state: &mut u64) -> f64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        (*state >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Boxes about `size` wide around points of a wavy sheet `2 × 1` (folded over itself
    /// once), in a random order; the query boxes are of the same kind.
    fn sheet(count: usize, size: f64, seed: u64) -> Vec<(DVec3, DVec3)> {
        let mut state = seed;
        (0..count)
            .map(|_| {
                let (u, v) = (2.0 * uniform(&mut state), uniform(&mut state));
                let fold = if u > 1.0 { 2.0 - u } else { u };
                let height = 0.05 * (7.0 * u).sin() + if u > 1.0 { 0.03 } else { 0.0 };
                let centre = DVec3::new(fold, height, v);
                let grow = size * (0.5 + 0.5 * uniform(&mut state));
                let stretch = DVec3::new(uniform(&mut state), 0.0, uniform(&mut state)) * size;
                let (min, max) = bounds([centre], grow);
                (min, max + stretch)
            })
            .collect()
    }

    /// Every `[q, item]` whose boxes rounded outward overlap (as the tree compares them),
    /// `item > q` if `later`, kept by `keep`, sorted.
    fn brute(
        queries: &[(DVec3, DVec3)],
        boxes: &[(DVec3, DVec3)],
        later: bool,
        keep: impl Fn(u32, u32) -> bool,
    ) -> Vec<[u32; 2]> {
        let mut pairs = Vec::new();
        for (q, &(qmin, qmax)) in queries.iter().enumerate() {
            let (ql, qu) = outward(qmin, qmax);
            let query = Query {
                lower: ql,
                upper: qu,
                first: 0,
            };
            for (k, &(min, max)) in boxes.iter().enumerate() {
                let (l, u) = outward(min, max);
                let (q, k) = (q as u32, k as u32);
                if !apart(l, u, &query) && (!later || k > q) && keep(q, k) {
                    pairs.push([q, k]);
                }
            }
        }
        pairs
    }

    /// The pairs of `index` (both kinds of search) on every scan, which must be the brute
    /// force's and the tree's; returns whether the index used the grid.
    fn check(index: &BoxIndex, queries: &[(DVec3, DVec3)], what: &str) -> bool {
        let keep = |q: u32, k: u32| (q + k) % 7 != 3;
        let query_box = |q: u32| queries[q as usize];
        let count = queries.len() as u32;
        let tree = WideBvh::over_boxes(&index.boxes);
        for later in [false, true] {
            let expected = brute(queries, &index.boxes, later, keep);
            let mut from_tree = Vec::new();
            let mut from_index = Vec::new();
            if later {
                tree.later_overlapping_pairs(0..count, query_box, keep, &mut from_tree);
                index.later_overlapping_pairs(0..count, query_box, keep, &mut from_index);
            } else {
                tree.overlapping_pairs(0..count, query_box, keep, &mut from_tree);
                index.overlapping_pairs(0..count, query_box, keep, &mut from_index);
            }
            // The tree's walk may miss a box with a NaN corner under a node whose box left
            // it out (`WideNode::union`); otherwise it finds the same pairs.
            let finite = |b: &(DVec3, DVec3)| b.0.is_finite() && b.1.is_finite();
            if index.boxes.iter().chain(queries).all(finite) {
                assert_eq!(from_tree, expected, "{what}: the tree, later {later}");
            }
            assert_eq!(from_index, expected, "{what}: the index, later {later}");
            if index.on_grid() {
                let first = |q: u32| if later { q.saturating_add(1) } else { 0 };
                for scan in scans() {
                    let mut found = Vec::new();
                    index
                        .grid
                        .pairs_from(scan, 0..count, query_box, first, keep, &mut found);
                    assert_eq!(found, expected, "{what}: {scan:?}, later {later}");
                }
            }
        }
        index.on_grid()
    }

    fn scans() -> Vec<Scan> {
        let mut scans = vec![Scan::Portable];
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            scans.push(Scan::Avx2);
        }
        scans
    }

    #[test]
    fn a_sheet_of_like_boxes_is_searched_on_the_grid_with_the_trees_answers() {
        for (count, size, seed) in [(1, 0.01, 1), (40, 0.05, 2), (700, 0.02, 3), (3000, 0.01, 4)] {
            let boxes = sheet(count, size, seed);
            let index = BoxIndex::refill(None, boxes.iter().copied());
            let what = format!("{count} boxes of {size}");
            assert!(check(&index, &boxes, &what), "{what}: on the grid");
            // Queries of other sizes, some beside the sheet, against the same boxes.
            let mut queries = sheet(300, 4.0 * size, seed + 10);
            queries.extend(sheet(100, 0.2 * size, seed + 20));
            queries.push((DVec3::splat(-5.0), DVec3::splat(-4.0)));
            queries.push((DVec3::splat(4.0), DVec3::splat(5.0)));
            check(&index, &queries, &format!("{what}, other queries"));
        }
    }

    #[test]
    fn wide_and_nan_boxes_are_tested_against_every_query() {
        let mut boxes = sheet(2000, 0.02, 5);
        // A few long boxes (a fast particle's), one with a NaN corner, one infinite.
        for k in [3, 500, 1200, 1999] {
            boxes[k].1.x += 0.7;
        }
        boxes[42].0.y = f64::NAN;
        boxes[43].1.z = f64::INFINITY;
        boxes[44].0.x = f64::NAN; // a grid axis
        let mut index = BoxIndex::refill(None, boxes.iter().copied());
        assert!(check(&index, &boxes, "wide boxes"), "still on the grid");
        assert_eq!(index.grid.wide.len(), 6, "kept aside");
        let mut queries = boxes.clone();
        queries.push((DVec3::NAN, DVec3::NAN));
        queries.push((DVec3::new(f64::NAN, 0.0, 0.0), DVec3::new(0.1, 0.1, 0.1)));
        queries.push((DVec3::ZERO, DVec3::new(0.1, f64::NAN, 0.1)));
        check(&index, &queries, "NaN queries");
        // Refilled with the boxes moved: the same buffers, the same answers.
        boxes.iter_mut().for_each(|b| *b = (b.0 * 1.3, b.1 * 1.3));
        index = BoxIndex::refill(Some(index), boxes.iter().copied());
        assert!(check(&index, &boxes, "moved"), "still on the grid");
    }

    #[test]
    fn boxes_a_grid_would_search_slowly_go_into_the_tree() {
        // A far box spreads the cells over empty space.
        let mut far = sheet(1000, 0.01, 6);
        far[10] = bounds([DVec3::new(500.0, 0.0, 300.0)], 0.01);
        let index = BoxIndex::refill(None, far.iter().copied());
        assert!(!check(&index, &far, "a far box"), "a far box: the tree");
        // Half the boxes many times wider than the others.
        let mut mixed = sheet(1000, 0.01, 7);
        mixed.iter_mut().step_by(2).for_each(|b| b.1.x += 0.5);
        let index = BoxIndex::refill(None, mixed.iter().copied());
        assert!(
            !check(&index, &mixed, "mixed sizes"),
            "mixed sizes: the tree"
        );
        // Every box in one place.
        let piled: Vec<_> = (0..1000).map(|_| bounds([DVec3::ZERO], 0.01)).collect();
        let index = BoxIndex::refill(Some(index), piled.iter().copied());
        assert!(!check(&index, &piled, "piled"), "piled: the tree");
        // Back to a sheet: the grid again.
        let boxes = sheet(1000, 0.01, 8);
        let index = BoxIndex::refill(Some(index), boxes.iter().copied());
        assert!(
            check(&index, &boxes, "a sheet after"),
            "a sheet after: the grid"
        );
        // No boxes at all, and no finite ones.
        let index = BoxIndex::refill(Some(index), std::iter::empty());
        check(&index, &[(DVec3::ZERO, DVec3::ONE)], "no boxes");
        let nan = vec![(DVec3::NAN, DVec3::NAN); 3];
        let index = BoxIndex::refill(Some(index), nan.iter().copied());
        assert!(!check(&index, &nan, "all NaN"), "all NaN: the tree");
    }

    /// Not a test: the break-even of the grid and the tree (docs/benchmarks.md, "Issue 13:
    /// the near-list searches on a grid"). Sheets of 2 000 boxes 3 cm wide on a square
    /// metre (about a cloth's edges), stacked in layers 1 mm apart (touching), 10 cm apart
    /// (the layers' axis then one of the grid's), or 1.5–3.1 cm apart with the layers' axis
    /// left out of the grid (each layer alone, which the tree's walks tell and the grid's
    /// cells do not), searched for their later pairs both ways, alternated; prints whether
    /// the grid would be chosen, the estimated reads, the pairs and the times per query.
    /// `cargo test --release --lib box_grid::tests::break_even -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn break_even() {
        use std::time::Instant;
        for (layers, gap) in [
            (1, 0.001),
            (4, 0.001),
            (16, 0.001),
            (32, 0.001),
            (8, 0.1),
            (16, 0.1),
            (32, 0.031),
            (48, 0.02),
            (64, 0.015),
        ] {
            let per_layer = 2000;
            let mut boxes = Vec::new();
            for layer in 0..layers {
                let mut state = 99 + layer as u64;
                boxes.extend((0..per_layer).map(|_| {
                    let (u, v) = (uniform(&mut state), uniform(&mut state));
                    let centre = DVec3::new(u, gap * layer as f64, v);
                    bounds([centre], 0.015)
                }));
            }
            let count = boxes.len() as u32;
            let query_box = |q: u32| boxes[q as usize];
            let mut grid = BoxGrid::default();
            let chosen = grid.fill(&boxes);
            let estimate = grid.estimated_reads();
            let tree = WideBvh::over_boxes(&boxes);
            let (mut on_grid, mut on_tree) = (Vec::new(), Vec::new());
            let (mut grid_times, mut tree_times) = (Vec::new(), Vec::new());
            for _ in 0..7 {
                let start = Instant::now();
                on_tree.clear();
                tree.later_overlapping_pairs(0..count, query_box, |_, _| true, &mut on_tree);
                tree_times.push(start.elapsed().as_secs_f64());
                let start = Instant::now();
                on_grid.clear();
                let after = |q: u32| q + 1;
                let keep = |_, _| true;
                let scan = Scan::chosen();
                grid.pairs_from(scan, 0..count, query_box, after, keep, &mut on_grid);
                grid_times.push(start.elapsed().as_secs_f64());
            }
            assert_eq!(on_grid, on_tree);
            let median = |t: &mut Vec<f64>| {
                t.sort_by(f64::total_cmp);
                t[t.len() / 2]
            };
            let (g, t) = (median(&mut grid_times), median(&mut tree_times));
            println!(
                "{layers:2} layers {gap:5.3} m apart: grid chosen {chosen:5}, \
                 estimated reads {estimate:4}, pairs per query {:5.1}, \
                 grid {:5.0} ns, tree {:5.0} ns per query, grid / tree {:.2}",
                on_grid.len() as f64 / f64::from(count),
                g * 1e9 / f64::from(count),
                t * 1e9 / f64::from(count),
                g / t
            );
        }
    }
}
