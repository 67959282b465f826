//! Counting a cloth's self-intersections for the stats log: pairs of its triangles, sharing no
//! vertex, that cross each other. Two such triangles cross exactly when an edge of one passes
//! through the other (Möller 1997 reduces the general test to this for non-coplanar pairs;
//! coplanar touching, a set of measure zero for simulated cloth, is not counted). Candidates
//! come from a four-wide tree over the triangles' boxes ([`BoxTree`]), so the count costs
//! about `T log T`. The tree is built at the first count and refitted to the triangles at
//! every later one: which pairs a box query finds does not depend on the tree's shape, only
//! how far its walks go, and a cloth's triangles stay near their mesh neighbours, so the shape
//! of the first frame keeps serving (as the near lists' trees do, [`super::near_lists`]).
//! Building a binary tree anew for every count was 2.5 % of the self-colliding pile's
//! instructions, and its walks, with an exact `f64` test of every leaf, 2.5 % more; the tree's
//! rounded boxes find a few more pairs than the exact boxes would, which the exact crossing
//! test then drops (docs/benchmarks.md, "Issue 13: the crossing count's tree refitted").

use super::bvh::bounds;
use super::wide_bvh::BoxTree;
use glam::DVec3;

/// Whether segment `p–q` passes through triangle `abc` (its interior or boundary), by the
/// signed volumes of Möller–Trumbore written as triple products.
pub(super) fn segment_crosses_triangle(p: DVec3, q: DVec3, [a, b, c]: [DVec3; 3]) -> bool {
    let n = (b - a).cross(c - a);
    let (dp, dq) = (n.dot(p - a), n.dot(q - a));
    if (dp > 0.0 && dq > 0.0) || (dp < 0.0 && dq < 0.0) || dp == dq {
        return false;
    }
    // The point where the segment meets the plane, tested against the three edges.
    let hit = p + (q - p) * (dp / (dp - dq));
    let inside = |u: DVec3, v: DVec3| (v - u).cross(hit - u).dot(n) >= 0.0;
    inside(a, b) && inside(b, c) && inside(c, a)
}

/// Whether two triangles (given by their corners) cross.
fn triangles_cross(s: [DVec3; 3], t: [DVec3; 3]) -> bool {
    let edges = |u: [DVec3; 3]| [(u[0], u[1]), (u[1], u[2]), (u[2], u[0])];
    edges(s)
        .iter()
        .any(|&(p, q)| segment_crosses_triangle(p, q, t))
        || edges(t)
            .iter()
            .any(|&(p, q)| segment_crosses_triangle(p, q, s))
}

/// Pairs of `triangles` (indices into `x`) that share no vertex and cross each other.
pub fn count_crossing_pairs(x: &[DVec3], triangles: &[[u32; 3]]) -> usize {
    CrossingPairs::new(x, triangles, None).count(0..triangles.len())
}

/// The search for crossing triangle pairs, counted in ranges of the first triangle so that
/// threads can share the work (the counts of consecutive ranges add up to the whole).
pub struct CrossingPairs<'a> {
    x: &'a [DVec3],
    triangles: &'a [[u32; 3]],
    /// The triangles' boxes and the tree over them.
    tree: BoxTree,
}

impl<'a> CrossingPairs<'a> {
    /// The search over `triangles` at `x`, in the boxes and tree of an earlier count
    /// (`kept`), refitted when it has a leaf per triangle, or else in a new tree.
    pub fn new(x: &'a [DVec3], triangles: &'a [[u32; 3]], kept: Option<BoxTree>) -> Self {
        let boxes = (triangles.iter()).map(|t| bounds(t.map(|k| x[k as usize]), 0.0));
        CrossingPairs {
            tree: BoxTree::refill(kept, boxes),
            x,
            triangles,
        }
    }

    /// The boxes and tree, to keep for the next count.
    pub fn into_tree(self) -> BoxTree {
        self.tree
    }

    /// Crossing pairs `(i, j)`, `i < j`, with `i` in `first`.
    pub fn count(&self, first: std::ops::Range<usize>) -> usize {
        let corners = |t: [u32; 3]| t.map(|k| self.x[k as usize]);
        let BoxTree { boxes, tree } = &self.tree;
        let mut count = 0;
        let queries = first.start as u32..first.end as u32;
        tree.for_each_later_pair(
            queries,
            |i| boxes[i as usize],
            |i, j| {
                let (ti, tj) = (self.triangles[i as usize], self.triangles[j as usize]);
                if !ti.iter().any(|k| tj.contains(k)) && triangles_cross(corners(ti), corners(tj)) {
                    count += 1;
                }
            },
        );
        count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crossing_touching_and_apart() {
        // Triangle 0 in z = 0; triangle 1 stands through it; triangle 2 lies above it; triangle
        // 3 shares vertex 0 with triangle 0 and reaches down and away from it (shared vertex:
        // never counted).
        let x = vec![
            DVec3::new(0.0, 0.0, 0.0),
            DVec3::new(1.0, 0.0, 0.0),
            DVec3::new(0.0, 1.0, 0.0),
            DVec3::new(0.2, 0.2, -0.5),
            DVec3::new(0.3, 0.2, 0.5),
            DVec3::new(0.2, 0.3, 0.5),
            DVec3::new(0.0, 0.0, 0.1),
            DVec3::new(1.0, 0.0, 0.1),
            DVec3::new(0.0, 1.0, 0.1),
            DVec3::new(-0.5, -0.1, -0.3),
            DVec3::new(-0.1, -0.5, -0.3),
        ];
        let triangles = [[0, 1, 2], [3, 4, 5], [6, 7, 8], [0, 9, 10]];
        // 0×1 cross; 1×2 cross (1 reaches z = 0.5 through the plane z = 0.1 inside 2);
        // 2 and 0 are parallel; 3 shares a vertex with 0 and lies below the others.
        assert_eq!(count_crossing_pairs(&x, &triangles), 2);
        assert!(triangles_cross([x[0], x[1], x[2]], [x[3], x[4], x[5]]));
        assert!(!triangles_cross([x[0], x[1], x[2]], [x[6], x[7], x[8]]));
    }

    #[test]
    fn a_flat_or_tented_grid_does_not_cross_itself() {
        let mesh = crate::mesh::primitives::grid([1.0, 1.0], 10, 10);
        let triangles = mesh.triangles();
        let mut x = mesh.positions.clone();
        assert_eq!(count_crossing_pairs(&x, &triangles), 0);
        x[55].y += 0.5;
        assert_eq!(
            count_crossing_pairs(&x, &triangles),
            0,
            "a tent crosses nothing"
        );
    }

    #[test]
    fn the_tree_finds_what_every_pair_finds() {
        // A grid crumpled by pseudo-random heights so that many triangles cross.
        let mesh = crate::mesh::primitives::grid([1.0, 1.0], 12, 12);
        let triangles = mesh.triangles();
        let x: Vec<DVec3> = mesh
            .positions
            .iter()
            .enumerate()
            .map(|(k, p)| {
                let k = k as f64;
                DVec3::new(p.x + 0.3 * (k * 1.7).sin(), 0.4 * (k * 2.3).cos(), p.z)
            })
            .collect();
        let mut brute = 0;
        for i in 0..triangles.len() {
            for j in i + 1..triangles.len() {
                let (ti, tj) = (triangles[i], triangles[j]);
                if !ti.iter().any(|k| tj.contains(k))
                    && triangles_cross(ti.map(|k| x[k as usize]), tj.map(|k| x[k as usize]))
                {
                    brute += 1;
                }
            }
        }
        assert!(brute > 10, "the crumple must cross: {brute}");
        assert_eq!(count_crossing_pairs(&x, &triangles), brute);
        // Counted in ranges (as threads do), the parts add up to the whole.
        let search = CrossingPairs::new(&x, &triangles, None);
        let parts: usize = (0..triangles.len())
            .step_by(37)
            .map(|start| search.count(start..(start + 37).min(triangles.len())))
            .sum();
        assert_eq!(parts, brute);
        // A tree built over the flat grid and refitted to the crumple finds the same pairs;
        // one over another number of triangles is built anew (a refit would fail).
        let flat = CrossingPairs::new(&mesh.positions, &triangles, None).into_tree();
        let refitted = CrossingPairs::new(&x, &triangles, Some(flat));
        assert_eq!(refitted.count(0..triangles.len()), brute);
        let fewer = &triangles[..triangles.len() / 2];
        let rebuilt = CrossingPairs::new(&x, fewer, Some(refitted.into_tree()));
        assert_eq!(
            rebuilt.count(0..fewer.len()),
            CrossingPairs::new(&x, fewer, None).count(0..fewer.len())
        );
    }
}
