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

mod scan;

use super::node_box::outward;
use super::wide_bvh::WideBvh;
use glam::DVec3;
use scan::{Scan, MASKS};

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
        self.pairs_from(queries, query_box, |_| 0, keep, pairs);
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
        self.pairs_from(queries, query_box, |q| q.saturating_add(1), keep, pairs);
    }

    /// The pairs of [`Self::overlapping_pairs`] whose item is `first_item(q)` or later, from
    /// the grid or the tree.
    fn pairs_from(
        &self,
        queries: impl IntoIterator<Item = u32>,
        query_box: impl Fn(u32) -> (DVec3, DVec3),
        first_item: impl Fn(u32) -> u32,
        keep: impl Fn(u32, u32) -> bool,
        pairs: &mut Vec<[u32; 2]>,
    ) {
        if self.on_grid {
            let scan = Scan::chosen();
            (self.grid).pairs_from(scan, queries, query_box, first_item, keep, pairs);
        } else {
            (self.tree).pairs_from(queries, query_box, first_item, keep, pairs);
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
        let every = self.rounded.len().div_ceil(SAMPLED).max(1);
        let sampled = self.rounded.iter().step_by(every);
        let widths = sampled.map(|&(lower, upper)| grid_width(lower, upper));
        self.widths.clear();
        self.widths.extend(widths.filter(|w| w.is_finite()));
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

#[cfg(test)]
mod tests;
