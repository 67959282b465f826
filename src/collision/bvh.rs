//! Boxes and the shape of the trees over them: the one box-overlap test every search uses
//! ([`boxes_overlap`]), the boxes of points and of swept elements, the median-split binary
//! tree the four-wide trees are collapsed from ([`Bvh`], [`super::wide_bvh`]), and the
//! closest point on a triangle (Ericson, "Real-Time Collision Detection", 2005, §5.1.5) that
//! the nearest-point walk ([`super::wide_nearest`]) and the contact tests use.
//! Deterministic: a tree depends only on the boxes it is built over (median splits under a
//! total order). Which leaves a box query reaches does not depend on the tree's shape at
//! all, nor does the answer of a nearest-point query.

use glam::DVec3;

/// Axis-aligned box.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Aabb {
    min: DVec3,
    max: DVec3,
}

impl Aabb {
    const EMPTY: Aabb = Aabb {
        min: DVec3::INFINITY,
        max: DVec3::NEG_INFINITY,
    };

    fn grow(self, p: DVec3) -> Aabb {
        Aabb {
            min: self.min.min(p),
            max: self.max.max(p),
        }
    }
}

/// [`bounds`] of the positions of `particles` at the end of a substep (`x`) and then at its
/// start (`x_prev`): the box a triangle or an edge sweeps, grown by `margin`. The same fold
/// in the same order, written as loops over arrays: through `[T; N]::map` and the iterator
/// of [`bounds`] the swept boxes of every substep were 3.3 % of the self-colliding pile's
/// instructions, most of it in calls the compiler left out of line (docs/benchmarks.md,
/// "Issue 13: swept boxes written out").
#[inline(always)]
pub fn swept_bounds<const N: usize>(
    particles: [u32; N],
    x: &[DVec3],
    x_prev: &[DVec3],
    margin: f64,
) -> (DVec3, DVec3) {
    let (mut min, mut max) = (DVec3::INFINITY, DVec3::NEG_INFINITY);
    for at in [x, x_prev] {
        for &k in &particles {
            let p = at[k as usize];
            (min, max) = (min.min(p), max.max(p));
        }
    }
    (min - margin, max + margin)
}

/// Whether two closed boxes `(min, max)` share a point: the one test every box search here
/// uses, so a candidate kept in a list and re-tested later gets exactly the same answer.
pub fn boxes_overlap(a: (DVec3, DVec3), b: (DVec3, DVec3)) -> bool {
    !(b.0.cmpgt(a.1) | b.1.cmplt(a.0)).any()
}

/// Bounding box of `points` grown by `margin` (the boxes trees are built over and queried with).
pub fn bounds(points: impl IntoIterator<Item = DVec3>, margin: f64) -> (DVec3, DVec3) {
    let (min, max) = points
        .into_iter()
        .fold((DVec3::INFINITY, DVec3::NEG_INFINITY), |(min, max), p| {
            (min.min(p), max.max(p))
        });
    (min - margin, max + margin)
}

/// The shape of a binary tree over a list of boxes, by median splits: the four-wide trees
/// ([`super::wide_bvh`]) are collapsed from it and hold the boxes themselves. The nodes are
/// stored depth first, so an inner node's first child is the next node and its second the
/// node after the first one's subtree.
#[derive(Debug, Clone)]
pub struct Bvh {
    nodes: Vec<Node>,
}

/// A node of a [`Bvh`]: `link` is a leaf's item with [`Node::LEAF`] set, or for an inner
/// node the node after its subtree; `last` is the largest item below.
#[derive(Debug, Clone, Copy)]
struct Node {
    link: u32,
    last: u32,
}

impl Node {
    /// The bit of `link` that marks a leaf (items must stay below it).
    const LEAF: u32 = 1 << 31;

    fn is_leaf(&self) -> bool {
        self.link & Self::LEAF != 0
    }

    fn link(&self) -> u32 {
        self.link & !Self::LEAF
    }
}

/// A node of a [`Bvh`]: a leaf with its item, or an inner node with its two children.
pub(super) enum Shape {
    Leaf(u32),
    Inner([usize; 2]),
}

impl Bvh {
    /// A tree over boxes `(min, max)` (leaf k = box k), by median splits along the longest
    /// axis of the box centres: O(n log n).
    pub fn over_boxes(leaf_boxes: &[(DVec3, DVec3)]) -> Bvh {
        let centres: Vec<DVec3> = leaf_boxes
            .iter()
            .map(|&(min, max)| (min + max) * 0.5)
            .collect();
        assert!(
            leaf_boxes.len() < Node::LEAF as usize,
            "a tree holds fewer than 2^31 items"
        );
        let mut bvh = Bvh {
            nodes: Vec::with_capacity(2 * leaf_boxes.len()),
        };
        let mut order: Vec<u32> = (0..leaf_boxes.len() as u32).collect();
        if !order.is_empty() {
            bvh.split(&mut order, &centres);
        }
        bvh
    }

    /// The second child of inner node `index`: the node after its first child's subtree.
    fn second_child(&self, index: usize) -> usize {
        let first = &self.nodes[index + 1];
        if first.is_leaf() {
            index + 2
        } else {
            first.link() as usize
        }
    }

    /// What node `index` is: for [`super::wide_bvh`], which collapses this tree's shape.
    pub(super) fn shape(&self, index: usize) -> Shape {
        let node = &self.nodes[index];
        if node.is_leaf() {
            Shape::Leaf(node.link())
        } else {
            Shape::Inner([index + 1, self.second_child(index)])
        }
    }

    /// The largest item below node `index` (a leaf's own).
    pub(super) fn last(&self, index: usize) -> u32 {
        self.nodes[index].last
    }

    fn split(&mut self, order: &mut [u32], centroids: &[DVec3]) -> usize {
        let index = self.nodes.len();
        if let [item] = order {
            self.nodes.push(Node {
                link: Node::LEAF | *item,
                last: *item,
            });
            return index;
        }
        self.nodes.push(Node { link: 0, last: 0 });
        let bounds = order
            .iter()
            .fold(Aabb::EMPTY, |b, &t| b.grow(centroids[t as usize]));
        let extent = bounds.max - bounds.min;
        let axis = if extent.x >= extent.y && extent.x >= extent.z {
            0
        } else if extent.y >= extent.z {
            1
        } else {
            2
        };
        // Partition by centre, ties by index: a total order, so each side holds the same
        // items on every machine (and the sides' own order does not matter below).
        let middle = order.len() / 2;
        order.select_nth_unstable_by(middle, |&a, &b| {
            centroids[a as usize][axis]
                .total_cmp(&centroids[b as usize][axis])
                .then(a.cmp(&b))
        });
        let (left, right) = order.split_at_mut(middle);
        self.split(left, centroids); // at index + 1
        let second = self.split(right, centroids);
        let last = self.nodes[index + 1].last.max(self.nodes[second].last);
        self.nodes[index] = Node {
            link: self.nodes.len() as u32,
            last,
        };
        index
    }
}

/// Closest point to `p` on triangle `abc` and its barycentric weights (Ericson §5.1.5).
pub fn closest_on_triangle(p: DVec3, a: DVec3, b: DVec3, c: DVec3) -> (DVec3, [f64; 3]) {
    let (ab, ac, ap) = (b - a, c - a, p - a);
    let (d1, d2) = (ab.dot(ap), ac.dot(ap));
    if d1 <= 0.0 && d2 <= 0.0 {
        return (a, [1.0, 0.0, 0.0]);
    }
    let bp = p - b;
    let (d3, d4) = (ab.dot(bp), ac.dot(bp));
    if d3 >= 0.0 && d4 <= d3 {
        return (b, [0.0, 1.0, 0.0]);
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        let v = d1 / (d1 - d3);
        return (a + ab * v, [1.0 - v, v, 0.0]);
    }
    let cp = p - c;
    let (d5, d6) = (ab.dot(cp), ac.dot(cp));
    if d6 >= 0.0 && d5 <= d6 {
        return (c, [0.0, 0.0, 1.0]);
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        let w = d2 / (d2 - d6);
        return (a + ac * w, [1.0 - w, 0.0, w]);
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        let w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return (b + (c - b) * w, [0.0, 1.0 - w, w]);
    }
    let denominator = 1.0 / (va + vb + vc);
    let (v, w) = (vb * denominator, vc * denominator);
    (a + ab * v + ac * w, [1.0 - v - w, v, w])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_point_regions_of_a_triangle() {
        let (a, b, c) = (DVec3::ZERO, DVec3::X, DVec3::Y);
        let inside = closest_on_triangle(DVec3::new(0.2, 0.2, 1.0), a, b, c).0;
        assert!((inside - DVec3::new(0.2, 0.2, 0.0)).length() < 1e-15);
        assert_eq!(
            closest_on_triangle(DVec3::new(-1.0, -1.0, 0.0), a, b, c).0,
            a
        );
        assert_eq!(
            closest_on_triangle(DVec3::new(0.5, -1.0, 0.0), a, b, c).0,
            DVec3::new(0.5, 0.0, 0.0)
        );
        let (p, w) = closest_on_triangle(DVec3::new(1.0, 1.0, 0.0), a, b, c);
        assert!((p - DVec3::new(0.5, 0.5, 0.0)).length() < 1e-15);
        assert!((w[1] - 0.5).abs() < 1e-15 && (w[2] - 0.5).abs() < 1e-15);
    }
}
