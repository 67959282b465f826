//! Edge–edge contacts: two edges of cloth passing each other. Point–triangle contacts stop
//! every vertex at a sheet, but two folds can still interlock where edges cross edges with
//! no vertex near a triangle (measured on `scenes/pile.toml`: 12 crossing triangle pairs,
//! every one an edge of one fold through a triangle of the other, with vertex and triangle
//! contacts only). Bridson et al. 2002 ("Robust treatment of collisions, contact and
//! friction for cloth animation") close this case with edge–edge repulsion.
//!
//! For edges `a–b` and `c–d` whose closest points `p = a + s (b − a)` and
//! `q = c + t (d − c)` lie inside both (0 < s, t < 1), the gap `p − q` is along the common
//! normal `m = (b − a) × (d − c)`, and
//!
//! `C = σ m̂ · (p − q) − 2r ≥ 0`
//!
//! with `σ = ±1` the side: the sign of `(p − q) · m` at `x_prev`, before the edges could
//! cross, when their closest points are inside both there (or else now, when they are now;
//! or else no contact this substep). Only between interior closest points does a change of
//! sign mean the edges passed through each other: the infinite lines also swap sides when
//! they pass beyond an edge's end, which is no crossing. Remembering a side from one substep
//! to the next would keep such stale sides, and on `scenes/pile.toml` it pushed neighbouring
//! edges of a crumpling fold through each other (hundreds of thousands of crossings within
//! two frames). The contact is a
//! [`Stencil`] with coefficients `[1 − s, s, −(1 − t), −t]`: solved exactly, conserving
//! momentum, with Coulomb friction on the edges' relative slip. Where the closest points sit
//! at an end of an edge the contact is a vertex's, and the point–triangle and sphere
//! contacts hold it; nearly parallel edges (angle under ~6°) are also left to them, lying
//! on each other like two layers of a pile.

use super::bvh::{boxes_overlap, swept_bounds};
use super::edge_sides;
use super::stencil::{Mobility, Stencil};
use crate::constraints::Positions;
use glam::DVec3;

/// Two edges near each other, and the side of edge 1 that edge 0 belongs on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EdgeContact {
    /// Indices into the edge list the contacts were found with, ascending.
    pub edges: [u32; 2],
    /// `+1` when edge 0 lies along `+m` from edge 1, `−1` otherwise.
    pub side: f64,
}

/// Below this squared length a segment counts as a point ([`closest_parameters`], and the
/// side test's copy of its interior case in [`super::edge_sides`]).
pub(super) const TINY: f64 = 1e-24;

/// Parameters `(s, t)` of the closest points of segments `p1–q1` and `p2–q2` (Ericson,
/// "Real-Time Collision Detection", §5.1.9). Always inlined, so that its callers (each
/// contact's projection, the collider feature search) keep the ends in registers: passed
/// through memory they cost 2.5 % of the self-colliding pile's instructions when the side
/// test called this (docs/benchmarks.md, "Issue 13: the edge side test inlined"). The side
/// test now has its own copy of the interior case, in lanes ([`super::edge_sides`]).
#[inline(always)]
pub fn closest_parameters(p1: DVec3, q1: DVec3, p2: DVec3, q2: DVec3) -> (f64, f64) {
    let (d1, d2, r) = (q1 - p1, q2 - p2, p1 - p2);
    let (a, e, f) = (d1.dot(d1), d2.dot(d2), d2.dot(r));
    if a <= TINY && e <= TINY {
        return (0.0, 0.0);
    }
    if a <= TINY {
        return (0.0, (f / e).clamp(0.0, 1.0));
    }
    let c = d1.dot(r);
    if e <= TINY {
        return ((-c / a).clamp(0.0, 1.0), 0.0);
    }
    let b = d1.dot(d2);
    let denominator = a * e - b * b;
    let s = if denominator > 0.0 {
        ((b * f - c * e) / denominator).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let t = (b * s + f) / e;
    if t < 0.0 {
        (((-c) / a).clamp(0.0, 1.0), 0.0)
    } else if t > 1.0 {
        (((b - c) / a).clamp(0.0, 1.0), 1.0)
    } else {
        (s, t)
    }
}

/// Edges closer to parallel than this sine are left to the point–triangle contacts: their
/// common normal, and which points are closest, are ill-defined (rounding alone can turn
/// two parallel sides of one quad into a "crossing" along an in-plane direction).
pub(super) const MIN_SINE: f64 = 0.1;

/// The unit common normal `(b − a) × (d − c)` of two edges, unless they are nearly parallel.
fn common_normal([a, b]: [DVec3; 2], [c, d]: [DVec3; 2]) -> Option<DVec3> {
    let (e, f) = (b - a, d - c);
    let m = e.cross(f);
    (m.length_squared() > MIN_SINE * MIN_SINE * e.length_squared() * f.length_squared())
        .then(|| m.normalize())
}

/// Distance between segments `p1–q1` and `p2–q2`.
pub fn segment_distance(p1: DVec3, q1: DVec3, p2: DVec3, q2: DVec3) -> f64 {
    let (s, t) = closest_parameters(p1, q1, p2, q2);
    (p1 + (q1 - p1) * s).distance(p2 + (q2 - p2) * t)
}

/// The box edge `e` sweeps over a substep (`x_prev` → `x`), grown by half the contact
/// distance, so two edges' boxes overlap when the edges can come within it.
/// Always inlined: left to itself, LLVM moved it out of line whenever the search stage
/// around it grew (docs/benchmarks.md, "Issue 13: a four-wide tree for the pair searches").
#[inline(always)]
pub fn swept_box(e: [u32; 2], x: &[DVec3], x_prev: &[DVec3], distance: f64) -> (DVec3, DVec3) {
    swept_bounds(e, x, x_prev, 0.5 * distance)
}

/// The contact of edges `pair` (indices into `edges`, sharing no particle; their swept boxes
/// from [`swept_box`] in `boxes`) in the substep `x_prev` → `x`, if there is one: when their
/// boxes overlap and the side is known (see the module notes). One pair at a time; the
/// solver tests its listed pairs eight at a time ([`super::edge_sides::contacts`]), which
/// gives the contacts this gives.
pub fn contact(
    pair: [u32; 2],
    edges: &[[u32; 2]],
    boxes: &[(DVec3, DVec3)],
    x: &[DVec3],
    x_prev: &[DVec3],
) -> Option<EdgeContact> {
    let [i, j] = pair.map(|k| k as usize);
    if !boxes_overlap(boxes[i], boxes[j]) {
        return None;
    }
    edge_sides::sided_contact(pair, edges, x, x_prev)
}

/// Projects one contact (see the module notes); `distance` is 2r. Returns whether it
/// touched.
pub fn resolve_edge_contact<P: Positions + ?Sized>(
    contact: EdgeContact,
    edges: &[[u32; 2]],
    x: &mut P,
    x_prev: &[DVec3],
    mobility: &Mobility,
    distance: f64,
    friction: f64,
) -> bool {
    let [a, b] = edges[contact.edges[0] as usize].map(|k| k as usize);
    let [c, d] = edges[contact.edges[1] as usize].map(|k| k as usize);
    let [pa, pb, pc, pd] = [a, b, c, d].map(|k| x.position(k));
    let Some(m) = common_normal([pa, pb], [pc, pd]) else {
        return false;
    };
    let (s, t) = closest_parameters(pa, pb, pc, pd);
    let interior = |u: f64| u > 0.0 && u < 1.0;
    if !interior(s) || !interior(t) {
        return false;
    }
    let stencil = Stencil {
        particles: [a, b, c, d],
        coefficients: [1.0 - s, s, t - 1.0, -t],
    };
    stencil.resolve(m * contact.side, distance, x, x_prev, mobility, friction)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Edge 0 along x at height `y`, edge 1 along z at height 0: they cross over the origin.
    fn crossed_edges(y: f64) -> Vec<DVec3> {
        vec![
            DVec3::new(-0.5, y, 0.1),
            DVec3::new(0.5, y, 0.1),
            DVec3::new(0.0, 0.0, -0.5),
            DVec3::new(0.0, 0.0, 0.5),
        ]
    }

    /// The contacts of every pair of edges sharing no particle, as the solver finds them.
    fn contacts_of(x: &[DVec3], x_prev: &[DVec3], edges: &[[u32; 2]]) -> Vec<EdgeContact> {
        let boxes: Vec<_> = edges
            .iter()
            .map(|&e| swept_box(e, x, x_prev, 0.01))
            .collect();
        let n = edges.len() as u32;
        (0..n)
            .flat_map(|i| (i + 1..n).map(move |j| [i, j]))
            .filter(|&[i, j]| {
                !edges[i as usize]
                    .iter()
                    .any(|k| edges[j as usize].contains(k))
            })
            .filter_map(|pair| contact(pair, edges, &boxes, x, x_prev))
            .collect()
    }

    #[test]
    fn closest_parameters_of_crossing_and_parallel_segments() {
        let x = crossed_edges(0.3);
        let (s, t) = closest_parameters(x[0], x[1], x[2], x[3]);
        assert!(
            (s - 0.5).abs() < 1e-15 && (t - 0.6).abs() < 1e-15,
            "{s} {t}"
        );
        assert!((segment_distance(x[0], x[1], x[2], x[3]) - 0.3).abs() < 1e-15);
        // Parallel segments one above the other, overlapping in x.
        let d = segment_distance(
            DVec3::ZERO,
            DVec3::X,
            DVec3::new(0.5, 0.2, 0.0),
            DVec3::new(2.0, 0.2, 0.0),
        );
        assert!((d - 0.2).abs() < 1e-15);
        // Beyond the end: distance to the endpoint.
        let d = segment_distance(
            DVec3::ZERO,
            DVec3::X,
            DVec3::new(2.0, 0.0, 0.0),
            DVec3::new(3.0, 0.0, 0.0),
        );
        assert!((d - 1.0).abs() < 1e-15);
    }

    #[test]
    fn an_edge_passing_through_another_in_one_substep_is_put_back() {
        let x_prev = crossed_edges(0.02);
        let mut x = crossed_edges(-0.01);
        let edges = [[0, 1], [2, 3]];
        let contacts = contacts_of(&x, &x_prev, &edges);
        assert_eq!(contacts.len(), 1);
        let inv_mass = [1.0, 1.0, 0.0, 0.0]; // edge 1 pinned
        let before = x.clone();
        assert!(resolve_edge_contact(
            contacts[0],
            &edges,
            x.as_mut_slice(),
            &x_prev,
            &Mobility::free(&inv_mass),
            0.01,
            0.0
        ));
        // Both ends of edge 0 rise together (s = 1/2) to 1 cm above edge 1.
        assert!(
            (x[0].y - 0.01).abs() < 1e-15 && (x[1].y - 0.01).abs() < 1e-15,
            "{x:?}"
        );
        assert_eq!(x[2..], before[2..]);
    }

    #[test]
    fn edges_sharing_a_particle_or_far_apart_are_not_contacts() {
        let x = vec![
            DVec3::ZERO,
            DVec3::X,
            DVec3::Y,
            DVec3::new(5.0, 5.0, 5.0),
            DVec3::new(6.0, 5.0, 5.0),
        ];
        let edges = [[0, 1], [0, 2], [3, 4]];
        let contacts = contacts_of(&x, &x, &edges);
        assert!(contacts.is_empty(), "{contacts:?}");
    }
}
