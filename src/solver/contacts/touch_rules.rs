//! Who may touch whom among the particles (the module notes of [`super`]): the objects'
//! rules, and the pairs of one self-colliding object too close at rest to be contacts.

use super::ParticleContacts;
use crate::collision::bvh::bounds;
use crate::collision::edge_edge::segment_distance;
use crate::collision::near_lists::NearRules;
use crate::collision::point_triangle::distance_to_triangle;
use crate::collision::rest_close::RestClose;
use glam::DVec3;

impl ParticleContacts {
    /// Whether particles (or features) of `a`'s and `b`'s objects may touch: different objects
    /// when both touch others, the same object when it touches itself and `rest_apart()`
    /// (the two were at least 2r apart at rest). Always inlined, as the rules calling it.
    #[inline(always)]
    fn may_touch(&self, a: u32, b: u32, rest_apart: impl FnOnce() -> bool) -> bool {
        let (oa, ob) = (self.owner[a as usize], self.owner[b as usize]);
        if oa != ob {
            self.touches_others[oa as usize] && self.touches_others[ob as usize]
        } else {
            self.touches_itself[oa as usize] && rest_apart()
        }
    }
}

/// The near lists take who may touch whom from the objects' rules.
/// Always inlined into the tree walks that ask them for every leaf found: left to the
/// compiler, one edit elsewhere could move them out of line, a call per leaf (docs/benchmarks.md,
/// "Issue 13: the crossing count's tree refitted").
impl NearRules for ParticleContacts {
    #[inline(always)]
    fn spheres(&self, i: u32, j: u32) -> bool {
        let rest = &self.rest;
        let apart = || rest[i as usize].distance(rest[j as usize]) >= 2.0 * self.radius;
        self.may_touch(i, j, apart)
    }

    #[inline(always)]
    fn point_triangle(&self, p: u32, t: u32) -> bool {
        let corner = self.triangles[t as usize][0];
        self.may_touch(p, corner, || !self.close_triangles.contains(p, t))
    }

    #[inline(always)]
    fn edges(&self, i: u32, j: u32) -> bool {
        let (a, c) = (self.edges[i as usize][0], self.edges[j as usize][0]);
        self.may_touch(a, c, || !self.close_edges.contains(i.min(j), i.max(j)))
    }
}

/// Whether a rest distance fails the searches' rule `distance >= reach` (closer, or not a
/// number).
fn not_apart(distance: f64, reach: f64) -> bool {
    !matches!(
        distance.partial_cmp(&reach),
        Some(std::cmp::Ordering::Greater | std::cmp::Ordering::Equal)
    )
}

/// The pairs of the same object closer than 2r at rest (`!(distance >= 2r)`, exactly the
/// rule the searches apply): particles against triangles, and edges against later edges.
/// Boxes grown by a little more than r overlap for every such pair.
pub(super) fn rest_close_tables(
    rest: &[DVec3],
    owner: &[u32],
    triangles: &[[u32; 3]],
    edges: &[[u32; 2]],
    radius: f64,
) -> (RestClose, RestClose) {
    if triangles.is_empty() {
        return Default::default();
    }
    let (reach, grow) = (2.0 * radius, 1.01 * radius);
    let at = |k: u32| rest[k as usize];
    let same_object = |a: u32, b: u32| owner[a as usize] == owner[b as usize];
    let triangle_boxes: Vec<_> = (triangles.iter())
        .map(|t| bounds(t.map(at), grow))
        .collect();
    let close_triangles = RestClose::build(
        rest.len(),
        |p| bounds([at(p)], grow),
        &triangle_boxes,
        |p, t| {
            let corners = triangles[t as usize];
            same_object(p, corners[0])
                && !corners.contains(&p)
                && not_apart(distance_to_triangle(at(p), corners.map(at)), reach)
        },
    );
    let edge_boxes: Vec<_> = (edges.iter()).map(|e| bounds(e.map(at), grow)).collect();
    let close_edges = RestClose::build(
        edges.len(),
        |i| edge_boxes[i as usize],
        &edge_boxes,
        |i, j| {
            let ([a, b], [c, d]) = (edges[i as usize], edges[j as usize]);
            j > i
                && same_object(a, c)
                && not_apart(segment_distance(at(a), at(b), at(c), at(d)), reach)
        },
    );
    (close_triangles, close_edges)
}
