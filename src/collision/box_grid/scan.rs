//! The scan of a run of a grid's boxes against a query: sixteen boxes a step, one bit each,
//! in AVX2 registers where the CPU has them and in portable lane loops otherwise (the same
//! bits either way).

use super::{BoxGrid, Query, STEP};
use crate::constraints::batch::SimdPath;

/// Masks a scan fills per call: 1 024 boxes.
pub(super) const MASKS: usize = 64;

/// How a scan computes its masks: the same comparisons in the lanes the CPU has.
#[derive(Debug, Clone, Copy)]
pub(super) enum Scan {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Scan {
    /// AVX2 where [`SimdPath::chosen`] takes AVX2 or AVX-512 (AVX-512's sixteen lanes were
    /// no faster here), the baseline otherwise.
    pub(super) fn chosen() -> Scan {
        match SimdPath::chosen() {
            #[cfg(target_arch = "x86_64")]
            SimdPath::Avx2 | SimdPath::Avx512 => Scan::Avx2,
            _ => Scan::Portable,
        }
    }

    /// Fills `masks` for the places `range` of `grid` (at most [`MASKS`] steps), one bit per
    /// box that overlaps `query` and is at or after its first item; returns the steps.
    #[inline(always)]
    pub(super) fn masks(
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
