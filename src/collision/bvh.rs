//! Bounding-volume hierarchies: over a collider mesh's triangles (built once, its boxes
//! refitted to the moving vertices every substep), with closest-point queries (Ericson,
//! "Real-Time Collision Detection", 2005, §5.1.5 for the closest point on a triangle); and over
//! any list of boxes, as the shape the four-wide trees of the pair searches and the crossing
//! count are collapsed from ([`super::wide_bvh`]).
//! Deterministic: a tree depends only on the boxes it is built over (median splits under a
//! total order; a refitted tree keeps the shape it was built with), a query visits children
//! in a fixed order, and `closest` keeps the lowest index among equally close triangles.
//! Which leaves a box query reaches does not depend on the tree's shape at all.

use super::node_box::NodeBox;
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
#[inline]
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

/// A BVH over triangles (one leaf per triangle) or over any list of boxes. The nodes are
/// stored depth first, so an inner node's first child is the next node and its subtree is
/// followed by the node a walk that skips it goes on to, its one link; a walk reads one node
/// (box and links together, [`NodeBox`]) per step. The node boxes are rounded outward to
/// `f32` (half the bytes). It answers nearest-point queries ([`Bvh::closest`]); box queries
/// go to the four-wide tree built from its shape ([`super::wide_bvh`]).
#[derive(Debug, Clone)]
pub struct Bvh {
    nodes: Vec<NodeBox>,
}

/// A node of a [`Bvh`]: a leaf with its item, or an inner node with its two children.
pub(super) enum Shape {
    Leaf(u32),
    Inner([usize; 2]),
}

/// The closest point of a mesh to a query point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Closest {
    pub triangle: u32,
    pub point: DVec3,
    /// Barycentric weights of `point` in the triangle.
    pub weights: [f64; 3],
    pub distance: f64,
}

impl Bvh {
    /// Bytes a tree takes per leaf: about two nodes.
    pub const BYTES_PER_LEAF: usize = 2 * size_of::<NodeBox>();

    /// A tree over `triangles` (leaf k = triangle k).
    pub fn build(positions: &[DVec3], triangles: &[[u32; 3]]) -> Bvh {
        let boxes: Vec<(DVec3, DVec3)> = triangles
            .iter()
            .map(|t| {
                let b = t
                    .iter()
                    .fold(Aabb::EMPTY, |b, &i| b.grow(positions[i as usize]));
                (b.min, b.max)
            })
            .collect();
        Bvh::over_boxes(&boxes)
    }

    /// A tree over boxes `(min, max)` (leaf k = box k), by median splits along the longest
    /// axis of the box centres: O(n log n), so cheap enough to rebuild whenever the contact
    /// near lists expire.
    pub fn over_boxes(leaf_boxes: &[(DVec3, DVec3)]) -> Bvh {
        let centres: Vec<DVec3> = leaf_boxes
            .iter()
            .map(|&(min, max)| (min + max) * 0.5)
            .collect();
        assert!(
            leaf_boxes.len() < NodeBox::LEAF as usize,
            "a tree holds fewer than 2^31 items"
        );
        let mut bvh = Bvh {
            nodes: Vec::with_capacity(2 * leaf_boxes.len()),
        };
        let mut order: Vec<u32> = (0..leaf_boxes.len() as u32).collect();
        if !order.is_empty() {
            bvh.split(&mut order, &centres);
        }
        bvh.fit(|item| {
            let (min, max) = leaf_boxes[item as usize];
            Aabb { min, max }
        });
        bvh
    }

    /// Sets every box from its leaves' boxes (children always follow their parent, so a
    /// reverse pass sees children first).
    fn fit(&mut self, leaf_box: impl Fn(u32) -> Aabb) {
        for index in (0..self.nodes.len()).rev() {
            let node = self.nodes[index];
            if node.is_leaf() {
                let leaf = leaf_box(node.link());
                self.nodes[index].set_bounds(leaf.min, leaf.max);
            } else {
                let (first, second) = (self.nodes[index + 1], self.nodes[self.second_child(index)]);
                self.nodes[index].set_union(&first, &second);
            }
        }
    }

    /// Depth-first walk, first children first: `enter(box, Some(item))` is called for every
    /// leaf reached, `enter(box, None)` for every inner node, which is descended only if it
    /// returns true.
    /// The walk needs no stack: a node's first child is the next node, and an inner node
    /// links to the node after its subtree, where the walk goes on when it skips it.
    fn walk(&self, mut enter: impl FnMut(&NodeBox, Option<u32>) -> bool) {
        let mut index = 0;
        while let Some(node) = self.nodes.get(index) {
            let item = node.is_leaf().then(|| node.link());
            let descend = enter(node, item) && item.is_none();
            index = if descend || item.is_some() {
                index + 1
            } else {
                node.link() as usize
            };
        }
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
        self.nodes[index].last()
    }

    fn split(&mut self, order: &mut [u32], centroids: &[DVec3]) -> usize {
        let index = self.nodes.len();
        if let [item] = order {
            self.nodes.push(NodeBox::new(NodeBox::LEAF | *item, *item));
            return index;
        }
        self.nodes.push(NodeBox::new(0, 0));
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
        let last = self.nodes[index + 1].last().max(self.nodes[second].last());
        let after = self.nodes.len() as u32;
        self.nodes[index].set_link(after);
        self.nodes[index].set_last(last);
        index
    }

    /// Sets every box from the leaves' new boxes `leaf_boxes` (leaf k = box k), keeping the
    /// tree's shape.
    pub fn refit_boxes(&mut self, leaf_boxes: &[(DVec3, DVec3)]) {
        self.fit(|item| {
            let (min, max) = leaf_boxes[item as usize];
            Aabb { min, max }
        });
    }

    /// The closest point of the mesh to `p` within `max_distance`, if any.
    pub fn closest(
        &self,
        positions: &[DVec3],
        triangles: &[[u32; 3]],
        p: DVec3,
        max_distance: f64,
    ) -> Option<Closest> {
        let mut best: Option<Closest> = None;
        let mut best_sq = max_distance * max_distance;
        self.walk(|bounds, item| {
            if bounds.distance_sq(p) > best_sq {
                return false;
            }
            let Some(triangle) = item else {
                return true;
            };
            let [a, b, c] = triangles[triangle as usize].map(|i| i as usize);
            let [a, b, c] = [positions[a], positions[b], positions[c]];
            let (point, weights) = closest_on_triangle(p, a, b, c);
            let distance_sq = point.distance_squared(p);
            let better = match best {
                None => distance_sq <= best_sq,
                Some(found) => {
                    distance_sq < best_sq || (distance_sq == best_sq && triangle < found.triangle)
                }
            };
            if better {
                best_sq = distance_sq;
                best = Some(Closest {
                    triangle,
                    point,
                    weights,
                    distance: distance_sq.sqrt(),
                });
            }
            false
        });
        best
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
    use crate::mesh::primitives;

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

    #[test]
    fn bvh_finds_what_brute_force_finds_and_refits() {
        let mut mesh = primitives::sphere(1.0, 2);
        let triangles = mesh.triangles();
        let mut bvh = Bvh::build(&mesh.positions, &triangles);
        let brute = |positions: &[DVec3], p: DVec3| {
            triangles
                .iter()
                .map(|t| {
                    let [a, b, c] = t.map(|i| positions[i as usize]);
                    closest_on_triangle(p, a, b, c).0.distance(p)
                })
                .fold(f64::INFINITY, f64::min)
        };
        for k in 0..50 {
            let q = DVec3::new(
                (k as f64 * 0.37).sin(),
                (k as f64 * 0.71).cos(),
                (k as f64 * 0.13).sin(),
            ) * 1.6;
            let found = bvh.closest(&mesh.positions, &triangles, q, 10.0).unwrap();
            assert!((found.distance - brute(&mesh.positions, q)).abs() < 1e-12);
        }
        // Move the mesh and refit: queries follow.
        mesh.transform(|p| p * 2.0 + DVec3::new(5.0, 0.0, 0.0));
        let moved: Vec<_> = (triangles.iter())
            .map(|t| bounds(t.map(|k| mesh.positions[k as usize]), 0.0))
            .collect();
        bvh.refit_boxes(&moved);
        let q = DVec3::new(5.0, 3.0, 0.0);
        let found = bvh.closest(&mesh.positions, &triangles, q, 10.0).unwrap();
        assert!((found.distance - brute(&mesh.positions, q)).abs() < 1e-12);
        assert!(bvh.closest(&mesh.positions, &triangles, q, 0.5).is_none());
    }
}
