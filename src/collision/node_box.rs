//! The boxes of a search tree's nodes ([`super::bvh`]), rounded outward to `f32` and packed
//! with the node's two links into 32 bytes: two nodes per cache line (the `f64` nodes took
//! 64 bytes; docs/benchmarks.md, "Issue 13: tree nodes in `f32`, a stackless walk, no libm
//! floor"). The tree's nearest-point walk reads them; box queries go to the four-wide tree
//! ([`super::wide_bvh`]), which rounds its boxes with the same [`outward`].
//!
//! **Same answers.** Rounding outward (each lower corner to an `f32` below it, each upper
//! corner to one above, [`down`] and [`up`]) makes a node's box contain the `f64` box it
//! stands for, so a walk that prunes by a node's box never skips a leaf the `f64` box would
//! have kept (the rounded corners lie at most three `f32` steps out, 0.2 µm at a metre, or
//! 2·10⁻³⁸ near zero). A NaN corner compares false; a corner beyond the `f32` range becomes
//! infinite or NaN, outward either way.

use glam::DVec3;

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

    /// A node's rounded box holds the `f64` box it was set to (every corner at distance 0)
    /// and no point well outside it; the links in the fourth lanes are left as they were.
    #[test]
    fn a_node_box_holds_its_f64_box_and_keeps_its_links() {
        let corner = |k: u32| {
            let t = f64::from(k);
            DVec3::new((t * 0.71).sin(), (t * 1.37).cos(), (t * 0.29).sin()) * 0.5
        };
        for a in 0..300u32 {
            let (min, max) = (corner(a), corner(a) + 0.1 * f64::from(a % 7));
            let mut node = NodeBox::new(NodeBox::LEAF | a, a);
            node.set_bounds(min, max);
            for k in 0..8 {
                let pick = |bit: u32, low: f64, high: f64| if k & bit == 0 { low } else { high };
                let p = DVec3::new(
                    pick(1, min.x, max.x),
                    pick(2, min.y, max.y),
                    pick(4, min.z, max.z),
                );
                assert_eq!(node.distance_sq(p), 0.0, "{a}: corner {k}");
            }
            assert!(node.distance_sq(max + DVec3::splat(1e-4)) > 0.0, "{a}");
            assert!(node.distance_sq(min - DVec3::splat(1e-4)) > 0.0, "{a}");
            assert!((node.is_leaf(), node.link(), node.last()) == (true, a, a));
        }
    }
}
