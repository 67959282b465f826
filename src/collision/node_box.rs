//! The boxes of a search tree's nodes ([`super::bvh`]), rounded outward to `f32` and packed
//! with the node's two links into 32 bytes: two nodes per cache line (the `f64` nodes took
//! 64 bytes), and a box test is two 4-lane comparisons (SSE, part of every x86-64) where it
//! was six scalar ones. The tree walks of the pile's near-list searches were a fifth of its
//! run (docs/benchmarks.md, "Issue 13: tree nodes in `f32`, a stackless walk, no libm
//! floor").
//!
//! **Same answers.** Rounding outward (each lower corner to an `f32` below it, each upper
//! corner to one above, [`down`] and [`up`]) makes a node's box contain the `f64` box it
//! stands for, and a query rounded the same way contains its own; so a test that passes in
//! `f64` passes here, and a walk reaches every leaf it reached before. Leaves are then tested
//! exactly, in `f64`, by the tree, so which leaves a query finds does not change (a few more
//! nodes may be entered: the rounded corners lie at most three `f32` steps out, 0.2 µm at a
//! metre, or 2·10⁻³⁸ near zero). A NaN corner compares false, so such a box overlaps
//! everything, as the `f64` test ([`super::bvh::boxes_overlap`]) treats it; a corner beyond
//! the `f32` range becomes infinite or NaN, outward either way.

use glam::DVec3;

/// A query box rounded outward to `f32`, in lanes x, y, z (the fourth is never compared).
#[derive(Debug, Clone, Copy)]
#[repr(C, align(16))]
pub struct QueryBox {
    lower: [f32; 4],
    upper: [f32; 4],
}

impl QueryBox {
    pub fn new(min: DVec3, max: DVec3) -> QueryBox {
        let ([lx, ly, lz], [ux, uy, uz]) = outward(min, max);
        QueryBox {
            lower: [lx, ly, lz, 0.0],
            upper: [ux, uy, uz, 0.0],
        }
    }
}

/// A node's box rounded outward to `f32`, with the node's links in the fourth lane of each
/// corner (read as `u32`, never compared): the lower corner carries `link` (a leaf's item,
/// with [`NodeBox::LEAF`] set, or for an inner node the node after its subtree), the upper
/// carries `last` (the largest item below).
#[derive(Debug, Clone, Copy)]
#[repr(C, align(16))]
pub struct NodeBox {
    lower: [f32; 3],
    link: u32,
    upper: [f32; 3],
    last: u32,
}

impl NodeBox {
    /// The bit of `link` that marks a leaf (items must stay below it).
    pub const LEAF: u32 = 1 << 31;

    /// An empty box with its links.
    pub fn new(link: u32, last: u32) -> NodeBox {
        NodeBox {
            lower: [f32::INFINITY; 3],
            link,
            upper: [f32::NEG_INFINITY; 3],
            last,
        }
    }

    pub fn link(&self) -> u32 {
        self.link & !Self::LEAF
    }

    pub fn set_link(&mut self, link: u32) {
        self.link = link | (self.link & Self::LEAF);
    }

    pub fn is_leaf(&self) -> bool {
        self.link & Self::LEAF != 0
    }

    pub fn last(&self) -> u32 {
        self.last
    }

    pub fn set_last(&mut self, last: u32) {
        self.last = last;
    }

    /// Sets the box to `[min, max]` rounded outward.
    pub fn set_bounds(&mut self, min: DVec3, max: DVec3) {
        (self.lower, self.upper) = outward(min, max);
    }

    /// Sets the box to the smallest one holding the boxes of `a` and `b` (exact: the
    /// corners are already `f32`).
    pub fn set_union(&mut self, a: &NodeBox, b: &NodeBox) {
        for k in 0..3 {
            self.lower[k] = a.lower[k].min(b.lower[k]);
            self.upper[k] = a.upper[k].max(b.upper[k]);
        }
    }

    /// Squared distance from `p` to the box (0 inside): never more than to the `f64` box
    /// it stands for.
    pub fn distance_sq(&self, p: DVec3) -> f64 {
        let lower = DVec3::from_array(self.lower.map(f64::from));
        let upper = DVec3::from_array(self.upper.map(f64::from));
        (lower - p).max(p - upper).max(DVec3::ZERO).length_squared()
    }

    /// Whether the box and `query` share a point: the closed-box test of
    /// [`super::bvh::boxes_overlap`], on the rounded boxes.
    #[cfg(target_arch = "x86_64")]
    #[inline]
    pub fn overlaps(&self, query: &QueryBox) -> bool {
        use std::arch::x86_64::{
            _mm_cmpgt_ps, _mm_cmplt_ps, _mm_load_ps, _mm_movemask_ps, _mm_or_ps,
        };
        // SAFETY: both types are `repr(C, align(16))` with four 4-byte lanes at the start of
        // each corner, so the aligned 16-byte loads read inside them; SSE is part of every
        // x86-64. The fourth lane (a link, or padding) is masked off below.
        unsafe {
            let lower = _mm_load_ps(self.lower.as_ptr());
            let upper = _mm_load_ps(self.upper.as_ptr());
            let apart = _mm_or_ps(
                _mm_cmpgt_ps(lower, _mm_load_ps(query.upper.as_ptr())),
                _mm_cmplt_ps(upper, _mm_load_ps(query.lower.as_ptr())),
            );
            _mm_movemask_ps(apart) & 0b111 == 0
        }
    }

    /// Whether the box and `query` share a point (the portable form of the test above).
    #[cfg(not(target_arch = "x86_64"))]
    #[inline]
    pub fn overlaps(&self, query: &QueryBox) -> bool {
        (0..3).all(|k| !(self.lower[k] > query.upper[k] || self.upper[k] < query.lower[k]))
    }
}

/// The corners of the box `[min, max]` rounded outward ([`down`], [`up`]).
pub(super) fn outward(min: DVec3, max: DVec3) -> ([f32; 3], [f32; 3]) {
    (min.to_array().map(down), max.to_array().map(up))
}

/// An `f32` at most `v`: the nearest one `f`, moved down by `|f| ε + MIN_POSITIVE`, more
/// than the half step `f` may lie above `v` (ε = 2⁻²³ is a whole step at `|f|`), so the
/// rounding of the subtraction cannot bring it back above `v`. Arithmetic, not
/// `f32::next_down` after a comparison: the comparison and the sign test inside
/// `next_down` depend on the last bits and the sign of `v`, branches mispredicted so often
/// that rounding cost more than the narrower boxes saved. An infinite `f` becomes NaN,
/// which compares false: such a box overlaps everything, still conservative.
fn down(v: f64) -> f32 {
    let f = v as f32;
    f - (f.abs() * f32::EPSILON + f32::MIN_POSITIVE)
}

/// An `f32` at least `v`, as [`down`].
fn up(v: f64) -> f32 {
    let f = v as f32;
    f + (f.abs() * f32::EPSILON + f32::MIN_POSITIVE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collision::bvh::boxes_overlap;

    #[test]
    fn rounding_goes_outward_and_keeps_what_f32_holds() {
        let steps = |f: f32, n: usize, next: fn(f32) -> f32| (0..n).fold(f, |f, _| next(f));
        let mut values = vec![0.0, 1.0, -2.5, 0.375, 1e-40, -1e-45, 1e30, -1e30, 3.4e38];
        values.extend((1..2000).map(|k| (f64::from(k) * 0.7311).sin() * f64::from(k)));
        values.extend((1..200).map(|k| 2f64.powi(k - 100) * (1.0 + 1e-9 * f64::from(k))));
        for &v in &values {
            for v in [v, -v] {
                assert!(f64::from(down(v)) <= v && f64::from(up(v)) >= v, "{v}");
                // At most three f32 steps out, or 2·MIN_POSITIVE near zero (and at least one
                // step: never the nearest itself).
                let near_zero = f64::from(2.0 * f32::MIN_POSITIVE);
                let (below, above) = (
                    steps(down(v), 3, f32::next_up),
                    steps(up(v), 3, f32::next_down),
                );
                assert!(
                    f64::from(below) > v || v - f64::from(down(v)) <= near_zero,
                    "{v}: too far below"
                );
                assert!(
                    f64::from(above) < v || f64::from(up(v)) - v <= near_zero,
                    "{v}: too far above"
                );
                assert!(down(v) < v as f32 && up(v) > v as f32, "{v}");
            }
        }
        for v in [f64::NAN, 3.5e38, -3.5e38] {
            assert!(down(v).is_nan() || f64::from(down(v)) <= v, "{v}");
            assert!(up(v).is_nan() || f64::from(up(v)) >= v, "{v}");
        }
    }

    /// The rounded test passes wherever the `f64` test passes, and (boxes apart by more
    /// than rounding) fails where it fails; the links in the fourth lanes change nothing.
    #[test]
    fn the_rounded_test_keeps_every_overlap_of_the_exact_one() {
        let corner = |k: u32| {
            let t = f64::from(k);
            DVec3::new((t * 0.71).sin(), (t * 1.37).cos(), (t * 0.29).sin()) * 0.5
        };
        let (mut passed, mut failed) = (0, 0);
        for a in 0..300u32 {
            for b in 0..40u32 {
                // Boxes of sizes from 0 (touching ones share exactly one face) upward.
                let (amin, bmin) = (corner(a), corner(b + 1000));
                let (amax, bmax) = (amin + 0.1 * f64::from(a % 7), bmin + DVec3::splat(0.3));
                let mut node = NodeBox::new(u32::MAX, f32::NAN.to_bits());
                node.set_bounds(amin, amax);
                let rounded = node.overlaps(&QueryBox::new(bmin, bmax));
                if boxes_overlap((amin, amax), (bmin, bmax)) {
                    assert!(rounded, "{a} {b}");
                    passed += 1;
                } else {
                    failed += 1;
                }
            }
        }
        assert!(passed > 1000 && failed > 1000, "{passed} {failed}");
        // Touching at one face, exactly in f64, and apart by far more than rounding.
        let mut node = NodeBox::new(NodeBox::LEAF | 5, 5);
        node.set_bounds(DVec3::ZERO, DVec3::splat(0.1));
        assert!(node.overlaps(&QueryBox::new(DVec3::new(0.1, 0.0, 0.0), DVec3::ONE)));
        assert!(!node.overlaps(&QueryBox::new(DVec3::new(0.1001, 0.0, 0.0), DVec3::ONE)));
        assert!(node.overlaps(&QueryBox::new(DVec3::splat(f64::NAN), DVec3::ONE)));
        assert!((node.is_leaf(), node.link(), node.last()) == (true, 5, 5));
    }
}
