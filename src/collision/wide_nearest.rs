//! Nearest-point queries on the four-wide tree ([`WideBvh`]) over a mesh's triangle boxes:
//! the closest point of a mesh collider to a particle ([`super::PosedCollider::distance`]), a
//! pin's attachment ([`super::MeshPose::attach`]) and a render mesh's binding
//! ([`crate::mesh::binding`]). The closest point on a triangle is Ericson's
//! ([`closest_on_triangle`]; "Real-Time Collision Detection", 2005, §5.1.5).
//!
//! **The walk.** At each node the squared distances from the query point to the four slots'
//! boxes are computed together; slots farther than the best triangle so far are dropped,
//! leaves are tested nearest first, and inner slots are pushed farthest first, so the
//! nearest is walked next and its triangles shrink the bound before the others are reached.
//! A popped node farther than the bound by then is skipped, and a point farther than the
//! bound from the root's box ([`WideBvh::root_box`]) is answered before any walk. A mesh
//! pose used to keep a binary tree for these queries beside the wide tree for box queries,
//! and refit both in every substep on thread 0 while the other threads waited: the binary
//! refit was 1.5 % of `scenes/dancer.toml`'s instructions. This walk costs about what the
//! binary tree's did (docs/benchmarks.md, "Issue 13: the collider-feature search's swept
//! boxes").
//!
//! **Same answer on any tree.** The result is the triangle with the smallest squared
//! distance, the lowest index among equally close ones, within `max_distance`: a minimum
//! under a total order, which the order of the walk does not change. A slot is dropped only
//! when its box, rounded outward to `f32` (it holds every triangle below it), is strictly
//! farther than the bound, so no triangle that could win or tie is skipped. A NaN distance
//! compares false and drops nothing.

use super::bvh::closest_on_triangle;
use super::wide_bvh::{WideBvh, WideNode, EMPTY, LEAF, STACK};
use glam::DVec3;
use std::mem::MaybeUninit;

/// The closest point of a mesh to a query point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Closest {
    pub triangle: u32,
    pub point: DVec3,
    /// Barycentric weights of `point` in the triangle.
    pub weights: [f64; 3],
    pub distance: f64,
}

/// The squared gap between `p` and `[lower, upper]` on one axis (0 inside), the corners
/// being `f32` values widened. The maxima are comparisons, not `f64::max`, whose NaN rule
/// costs three more instructions each: a NaN gap becomes 0 here. Rounding is monotone, so a
/// box inside another is never farther by this measure.
#[inline(always)]
fn gap_sq(lower: f64, upper: f64, p: f64) -> f64 {
    let below = lower - p;
    let above = p - upper;
    let gap = if below > above { below } else { above };
    let gap = if gap > 0.0 { gap } else { 0.0 };
    gap * gap
}

/// Squared distances from `p` to the four slots' boxes (0 inside): never more than to the
/// `f64` boxes they hold. Unused slots are infinitely far (their boxes are empty).
#[inline(always)]
fn slot_distances_sq(node: &WideNode, p: DVec3) -> [f64; 4] {
    let mut sum = [0.0f64; 4];
    for ((lower, upper), p) in node.lower.iter().zip(&node.upper).zip(p.to_array()) {
        for (slot, sum) in sum.iter_mut().enumerate() {
            *sum += gap_sq(f64::from(lower[slot]), f64::from(upper[slot]), p);
        }
    }
    sum
}

/// The lesser of `kept` and `new`, NaN once either was: a triangle with a NaN distance
/// leaves nothing known about how near the mesh is.
#[inline(always)]
fn least(kept: f64, new: f64) -> f64 {
    if new < kept || new.is_nan() {
        new
    } else {
        kept
    }
}

/// The best triangle so far and its squared distance (the walk's bound).
struct Best {
    found: Option<Closest>,
    distance_sq: f64,
}

impl Best {
    /// Tests triangle `triangle`: it becomes the best when nearer, or as near with a lower
    /// index, or (first found) within the bound.
    /// Returns the triangle's squared distance.
    fn consider(
        &mut self,
        positions: &[DVec3],
        triangles: &[[u32; 3]],
        triangle: u32,
        p: DVec3,
    ) -> f64 {
        let [a, b, c] = triangles[triangle as usize].map(|i| positions[i as usize]);
        let (point, weights) = closest_on_triangle(p, a, b, c);
        let distance_sq = point.distance_squared(p);
        let better = match self.found {
            None => distance_sq <= self.distance_sq,
            Some(found) => {
                distance_sq < self.distance_sq
                    || (distance_sq == self.distance_sq && triangle < found.triangle)
            }
        };
        if better {
            self.distance_sq = distance_sq;
            self.found = Some(Closest {
                triangle,
                point,
                weights,
                distance: distance_sq.sqrt(),
            });
        }
        distance_sq
    }
}

impl WideBvh {
    /// The closest point to `p` of the triangles `triangles` (leaf k = triangle k, whose box
    /// the tree holds) at `positions`, within `max_distance`, if any (see the module notes).
    pub fn closest(
        &self,
        positions: &[DVec3],
        triangles: &[[u32; 3]],
        p: DVec3,
        max_distance: f64,
    ) -> Option<Closest> {
        self.closest_or_clearance(positions, triangles, p, max_distance)
            .ok()
    }

    /// The squared distance from `p` to the box holding every leaf ([`Self::root_box`]), 0
    /// where the tree has no such box.
    fn root_gap_sq(&self, p: DVec3) -> f64 {
        self.root_box().map_or(0.0, |(lower, upper)| {
            (0..3).fold(0.0, |sum, axis| {
                sum + gap_sq(lower[axis], upper[axis], p[axis])
            })
        })
    }

    /// [`Self::closest`], or when there is none within `max_distance`, a squared distance
    /// that no triangle is nearer than (more than `max_distance²`): the least of what the
    /// walk set aside, the boxes of the slots and nodes it dropped and the triangles it
    /// tested. Every triangle is below one of them, and a box, rounded outward, is never
    /// farther than what it holds. `f64::INFINITY` for an empty tree; NaN when a triangle's
    /// distance is ([`super::clearance`] then learns nothing).
    pub fn closest_or_clearance(
        &self,
        positions: &[DVec3],
        triangles: &[[u32; 3]],
        p: DVec3,
        max_distance: f64,
    ) -> Result<Closest, f64> {
        let nodes = self.nodes();
        if nodes.is_empty() {
            return Err(f64::INFINITY);
        }
        // The least squared distance set aside so far.
        let mut clearance_sq = f64::INFINITY;
        let mut best = Best {
            found: None,
            distance_sq: max_distance * max_distance,
        };
        // A point farther than the bound from the box of every leaf is farther from each
        // slot of the root too: answered without a walk (most particles of a dress are far
        // from the torso's and the legs' boxes).
        let to_root = self.root_gap_sq(p);
        if to_root > best.distance_sq {
            return Err(to_root);
        }
        // Pushed nodes with their boxes' squared distances, checked again when popped. Not
        // zeroed (only what is pushed is read): zeroing both for every query was a `memset`
        // call that cost a tenth of the walk.
        let mut stack = [const { MaybeUninit::<(u32, f64)>::uninit() }; STACK];
        stack[0].write((0, 0.0)); // the root, node 0, at distance 0
        let mut held = 1;
        while held > 0 {
            held -= 1;
            // SAFETY: entries below `held` were all written (the root, then each push).
            let (index, distance_sq) = unsafe { stack[held].assume_init() };
            if distance_sq > best.distance_sq {
                clearance_sq = least(clearance_sq, distance_sq);
                continue;
            }
            let node = &nodes[index as usize];
            let distances = slot_distances_sq(node, p);
            // The slots within the bound, nearest first (four at most: insertion sort).
            let mut order = [0usize; 4];
            let mut count = 0;
            for slot in 0..4 {
                if node.last[slot] == EMPTY {
                    continue;
                }
                if distances[slot] > best.distance_sq {
                    clearance_sq = least(clearance_sq, distances[slot]);
                    continue;
                }
                let mut at = count;
                while at > 0 && distances[order[at - 1]] > distances[slot] {
                    order[at] = order[at - 1];
                    at -= 1;
                }
                order[at] = slot;
                count += 1;
            }
            for &slot in &order[..count] {
                let child = node.child[slot];
                // The bound may have shrunk since the slot was kept.
                if child & LEAF == 0 {
                    continue;
                }
                if distances[slot] > best.distance_sq {
                    clearance_sq = least(clearance_sq, distances[slot]);
                    continue;
                }
                let tested = best.consider(positions, triangles, child & !LEAF, p);
                clearance_sq = least(clearance_sq, tested);
            }
            for &slot in order[..count].iter().rev() {
                let child = node.child[slot];
                if child & LEAF == 0 {
                    // Within `STACK`: three slots left behind per level above, four here
                    // ([`WideBvh::over_boxes`] checks each tree's depth).
                    stack[held].write((child, distances[slot]));
                    held += 1;
                }
            }
        }
        best.found.ok_or(clearance_sq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collision::bvh::bounds;
    use crate::mesh::primitives;

    /// The closest point by testing every triangle, with the same rule: the smallest squared
    /// distance, then the lowest index, within `max_distance`.
    fn brute(positions: &[DVec3], triangles: &[[u32; 3]], p: DVec3, max: f64) -> Option<Closest> {
        let mut best = Best {
            found: None,
            distance_sq: max * max,
        };
        for t in 0..triangles.len() as u32 {
            best.consider(positions, triangles, t, p);
        }
        best.found
    }

    fn tree(positions: &[DVec3], triangles: &[[u32; 3]]) -> WideBvh {
        let boxes: Vec<_> = (triangles.iter())
            .map(|t| bounds(t.map(|k| positions[k as usize]), 0.0))
            .collect();
        WideBvh::over_boxes(&boxes)
    }

    /// The walk gives the brute-force answer bit for bit, on a sphere and after the mesh
    /// moved and the tree was refitted, for points inside, on, near and far from the mesh
    /// and with a bound that leaves nothing; and ties go to the lowest index.
    #[test]
    fn the_clearance_bounds_every_triangle_and_the_reach() {
        let mesh = primitives::sphere(1.0, 2);
        let triangles = mesh.triangles();
        let wide = tree(&mesh.positions, &triangles);
        let mut raised = 0;
        for k in 0..400 {
            let t = f64::from(k);
            let direction = DVec3::new((t * 0.37).sin(), (t * 0.71).cos(), (t * 0.13).sin());
            // From inside the sphere to three radii out, with reaches short and long.
            let q = direction.normalize() * (3.0 * (k % 37) as f64 / 36.0);
            let reach = [0.01, 0.1, 0.5][k as usize % 3];
            let nearest_sq = (0..triangles.len() as u32)
                .map(|t| {
                    let [a, b, c] = triangles[t as usize].map(|i| mesh.positions[i as usize]);
                    closest_on_triangle(q, a, b, c).0.distance_squared(q)
                })
                .fold(f64::INFINITY, f64::min);
            match wide.closest_or_clearance(&mesh.positions, &triangles, q, reach) {
                Ok(found) => assert!(found.distance <= reach, "{q}"),
                Err(clearance_sq) => {
                    assert!(clearance_sq > reach * reach, "{q}: {clearance_sq}");
                    assert!(
                        clearance_sq <= nearest_sq,
                        "{q}: {clearance_sq} > {nearest_sq}"
                    );
                    raised += usize::from(clearance_sq > 4.0 * reach * reach);
                }
            }
        }
        assert!(
            raised > 50,
            "the clearance above twice the reach {raised} times"
        );
    }

    #[test]
    fn the_walk_finds_what_every_triangle_tested_finds() {
        let mut mesh = primitives::sphere(1.0, 2);
        let triangles = mesh.triangles();
        let mut wide = tree(&mesh.positions, &triangles);
        let queries = |scale: f64| {
            (0..200).map(move |k| {
                let t = f64::from(k);
                DVec3::new((t * 0.37).sin(), (t * 0.71).cos(), (t * 0.13).sin()) * scale
            })
        };
        let cases = [(0.3, 10.0), (1.0, 10.0), (1.6, 10.0), (4.0, f64::INFINITY)];
        for (scale, max) in cases {
            for q in queries(scale) {
                let found = wide.closest(&mesh.positions, &triangles, q, max);
                assert_eq!(found, brute(&mesh.positions, &triangles, q, max), "{q}");
                assert!(found.is_some(), "{q}");
            }
        }
        // Points 0 to 1.2 from the unit sphere with a bound of 1: near the bound the root's
        // box (the cube around the sphere) is about as far as the mesh, so a root test that
        // dropped too much would show.
        let mut none = 0;
        for (k, q) in queries(1.0).enumerate() {
            let q = q.normalize() * (1.0 + 1.2 * (k % 13) as f64 / 12.0);
            let found = wide.closest(&mesh.positions, &triangles, q, 1.0);
            assert_eq!(found, brute(&mesh.positions, &triangles, q, 1.0), "{q}");
            none += usize::from(found.is_none());
        }
        assert!((10..100).contains(&none), "{none} of 200 beyond the bound");
        // Vertices of the mesh: every triangle at one is at distance 0, the lowest wins.
        for &q in &mesh.positions {
            let found = wide.closest(&mesh.positions, &triangles, q, 1.0).unwrap();
            let lowest = triangles
                .iter()
                .position(|t| t.iter().any(|&k| mesh.positions[k as usize] == q));
            assert_eq!(Some(found.triangle as usize), lowest, "{q}");
        }
        mesh.transform(|p| p * 2.0 + DVec3::new(5.0, 0.0, 0.0));
        let boxes: Vec<_> = (triangles.iter())
            .map(|t| bounds(t.map(|k| mesh.positions[k as usize]), 0.0))
            .collect();
        assert!(wide.refit_boxes(&boxes));
        for q in queries(3.0).map(|q| q + DVec3::new(5.0, 0.0, 0.0)) {
            let found = wide.closest(&mesh.positions, &triangles, q, 10.0);
            assert_eq!(found, brute(&mesh.positions, &triangles, q, 10.0), "{q}");
        }
        let far = DVec3::new(5.0, 3.0, 0.0);
        assert!(wide
            .closest(&mesh.positions, &triangles, far, 0.5)
            .is_none());
        assert!(WideBvh::default()
            .closest(&mesh.positions, &triangles, far, 1.0)
            .is_none());
    }
}
