//! How deep a face or an edge of a surface reaches into an analytic collider: the smallest
//! signed distance `φ` of the collider's shape over the element. With it `max_penetration`
//! measures the deepest point of a surface, not only its vertices (SPEC §5: "edges and faces
//! included"); issue 11 did the same for mesh colliders' corners and edges
//! ([`super::features`]).
//!
//! - Plane: `φ` is linear along the element, so its least value is at a corner.
//! - Sphere: `φ = |p − c| − R`, least at the element's point nearest the centre (Ericson,
//!   *Real-Time Collision Detection*, 2005, §5.1.5 for a triangle).
//! - Capsule: `φ = dist(p, a–b) − R`, least where the element comes closest to the axis:
//!   0 when the axis passes through a triangle, otherwise the nearest of the axis's ends to
//!   the triangle and of the triangle's sides to the axis (the closest points of two convex
//!   sets lie on a vertex–face or an edge–edge pair).
//! - Box (`q` in the box's frame, `h` its half extents): inside, `φ(q) = max_k (|q_k| − h_k)`
//!   is the largest of the six affine pieces `±q_k − h_k`. Its least value over the element
//!   is a linear program, whose optimum lies on a vertex of the element's subdivision by the
//!   equalities of pieces: a corner, a point of a side where two pieces are equal, or (for a
//!   triangle) a point inside where three are. Every such point is clamped into the element
//!   and `φ` evaluated there, so the answer is always `φ` of a point of the element, never
//!   less than the true least value and equal to it up to rounding. When it is positive the
//!   element misses the box, and `φ` there is its distance from the box: the least over the
//!   element's corners, the box's corners against a triangle, and the box's twelve edges
//!   against the element's sides.
//!
//! Mesh colliders are measured by [`super::features`]; [`triangle_distance`] and
//! [`segment_distance`] answer `+∞` for them.

use super::bvh::closest_on_triangle;
use super::edge_edge;
use super::intersections::segment_crosses_triangle;
use super::Shape;
use glam::{DMat3, DVec3};

/// The least signed distance from `shape` over triangle `t` (negative: part of the
/// triangle is inside the shape).
pub fn triangle_distance(shape: &Shape, t: [DVec3; 3]) -> f64 {
    deepest_on_triangle(shape, t, f64::INFINITY).map_or(f64::INFINITY, |(least, _)| least)
}

/// How deep triangle `t` reaches into `shape`: `−φ` at its deepest point, 0 when it stays
/// outside (`max_penetration`; the gap outside is not worked out).
pub fn triangle_depth(shape: &Shape, t: [DVec3; 3]) -> f64 {
    deepest_on_triangle(shape, t, 0.0).map_or(0.0, |(least, _)| (-least).max(0.0))
}

/// How deep segment `s` reaches into `shape`, as [`triangle_depth`].
pub fn segment_depth(shape: &Shape, s: [DVec3; 2]) -> f64 {
    (-segment_distance(shape, s)).max(0.0)
}

/// [`triangle_distance`] and the barycentric weights of a point of `t` where it is reached
/// (the sample a face contact pushes out, [`super::features`]), when it is at most `cutoff`;
/// `None` when the whole triangle is farther than `cutoff` from the shape. The cutoff spares
/// work, never changes an answer within it: pieces and features that cannot be nearer than
/// it are not tried (docs/benchmarks.md, "Face contacts: only the box's pieces and features
/// within reach").
pub fn deepest_on_triangle(shape: &Shape, t: [DVec3; 3], cutoff: f64) -> Option<(f64, [f64; 3])> {
    let (least, weights) = match *shape {
        Shape::Plane { .. } => {
            let mut least = Least::default();
            for (k, &p) in t.iter().enumerate() {
                least.offer(shape.signed_distance(p).0, corner(k));
            }
            least.into()
        }
        Shape::Sphere { center, radius } => {
            let (point, weights) = closest_on_triangle(center, t[0], t[1], t[2]);
            (point.distance(center) - radius, weights)
        }
        Shape::Capsule { a, b, radius } => {
            if lower_bound(shape, &t) > cutoff {
                return None;
            }
            let (distance, weights) = segment_triangle_closest([a, b], t);
            (distance - radius, weights)
        }
        Shape::Box { .. } => return deepest_in_box(BoxFrame::of(shape)?, t, cutoff),
        Shape::Mesh => return None,
    };
    (least <= cutoff).then_some((least, weights))
}

/// [`deepest_on_triangle`] for a box: the cheap answers first (beyond the lower bound, the
/// least at a corner, wholly beyond one face's plane), then the linear program and, outside,
/// the gap.
fn deepest_in_box(frame: BoxFrame, t: [DVec3; 3], cutoff: f64) -> Option<(f64, [f64; 3])> {
    let half = frame.half;
    let local = t.map(|p| frame.local(p));
    let bound = box_lower_bound(half, local.iter().copied());
    if bound > cutoff {
        return None;
    }
    if let Some(at_a_corner) = least_at_a_corner(half, &local) {
        return at_a_corner.within(cutoff);
    }
    // Wholly beyond one face's plane (a positive lower bound): it misses the box, and the
    // linear program can be skipped.
    if bound > 0.0 {
        return box_triangle_gap(half, local, cutoff).within(cutoff);
    }
    let inside = least_inside_on_triangle(half, local);
    if inside.value <= 0.0 {
        inside.within(cutoff)
    } else if inside.value > cutoff {
        None // outside, the inside distance is a lower bound of the gap
    } else {
        box_triangle_gap(half, local, cutoff).within(cutoff)
    }
}

/// A box collider's frame: its centre, the turn into its axes and its half extents.
/// [`deepest_on_triangle`] turns a face's corners into it; the face search turns each
/// particle once instead, for [`box_face_may_sample`] (a particle is a corner of about six
/// faces).
#[derive(Debug, Clone, Copy)]
pub struct BoxFrame {
    center: DVec3,
    to_local: DMat3,
    pub half: DVec3,
}

impl BoxFrame {
    /// The frame of `shape` when it is a box.
    pub fn of(shape: &Shape) -> Option<BoxFrame> {
        match *shape {
            Shape::Box {
                center,
                rotation,
                half,
            } => Some(BoxFrame {
                center,
                to_local: rotation.transpose(),
                half,
            }),
            _ => None,
        }
    }

    /// Point `p` in the box's frame.
    pub fn local(&self, p: DVec3) -> DVec3 {
        self.to_local * (p - self.center)
    }
}

/// Whether a face with corners `local` (in the box's frame, [`BoxFrame::local`]) may have its
/// deepest point off its corners and within `cutoff`: `false` only where
/// [`deepest_on_triangle`] with that cutoff answers nothing or a corner, found from the
/// lower bound and the one-face prism alone.
pub fn box_face_may_sample(half: DVec3, local: &[DVec3; 3], cutoff: f64) -> bool {
    box_lower_bound(half, local.iter().copied()) <= cutoff
        && least_at_a_corner(half, local).is_none()
}

/// Whether a face with corners `t`, at signed distances `corner_distances` from a shape, may
/// come within `cutoff` of it. Signed distances are 1-Lipschitz, and every point `p` of a
/// triangle is within `ℓ/√3` of a corner (`ℓ` its longest side: of the three angles the
/// corners make at `p`, one is at least 120°, and the side it faces is then at least `√3`
/// times the shorter of its two legs), so `φ ≥ min_k φ_k − ℓ/√3` on the face. A nanometre
/// is spared for rounding. The face search's cheap first test for spheres and capsules.
pub fn face_may_reach(corner_distances: [f64; 3], t: [DVec3; 3], cutoff: f64) -> bool {
    let least = corner_distances.into_iter().fold(f64::INFINITY, f64::min);
    let beyond = least - cutoff - 1e-9;
    let longest_squared = sides(&t).fold(0.0f64, |m, [p, q]| m.max(p.distance_squared(q)));
    !(beyond > 0.0 && 3.0 * beyond * beyond > longest_squared)
}

/// The least value offered so far and the weights of the point it was found at (the first
/// offered of equal values, so the answer does not depend on rounding ties' order).
struct Least {
    value: f64,
    weights: [f64; 3],
}

impl Default for Least {
    fn default() -> Least {
        Least {
            value: f64::INFINITY,
            weights: corner(0),
        }
    }
}

impl Least {
    fn offer(&mut self, value: f64, weights: [f64; 3]) {
        if value < self.value {
            *self = Least { value, weights };
        }
    }

    /// The value and its weights when the value is at most `cutoff`.
    fn within(self, cutoff: f64) -> Option<(f64, [f64; 3])> {
        (self.value <= cutoff).then_some((self.value, self.weights))
    }
}

impl From<Least> for (f64, [f64; 3]) {
    fn from(least: Least) -> (f64, [f64; 3]) {
        (least.value, least.weights)
    }
}

/// The weights of corner `k`.
fn corner(k: usize) -> [f64; 3] {
    let mut weights = [0.0; 3];
    weights[k] = 1.0;
    weights
}

/// The weights of the point at `s` along side `k` (from corner `k` to corner `k + 1`).
fn on_side(k: usize, s: f64) -> [f64; 3] {
    let mut weights = [0.0; 3];
    weights[k] = 1.0 - s;
    weights[(k + 1) % 3] = s;
    weights
}

/// The least signed distance from `shape` over segment `s`.
pub fn segment_distance(shape: &Shape, s: [DVec3; 2]) -> f64 {
    match *shape {
        Shape::Plane { .. } => corners_distance(shape, &s),
        Shape::Sphere { center, radius } => point_segment_distance(center, s) - radius,
        Shape::Capsule { a, b, radius } => edge_edge::segment_distance(s[0], s[1], a, b) - radius,
        Shape::Box {
            center,
            rotation,
            half,
        } => {
            let local = s.map(|p| rotation.transpose() * (p - center));
            let least = least_inside_on_segment(half, local);
            if least <= 0.0 {
                least
            } else {
                box_segment_gap(half, local)
            }
        }
        Shape::Mesh => f64::INFINITY,
    }
}

/// The corner of triangle `t` (box frame) where `φ` is least, when that is sure without the
/// linear program: all three corners beyond the same face of the box and within that face's
/// outline. In that prism `φ` is the height over the face, linear, and the prism is convex,
/// so it holds the whole triangle. Most faces near a box lie on one of its sides; their
/// least is at a corner, which the face contacts leave to that vertex's own contact.
fn least_at_a_corner(half: DVec3, t: &[DVec3; 3]) -> Option<Least> {
    // The face a point is over: (axis, side), when exactly one coordinate is out.
    let face_over = |q: DVec3| {
        let out = (q.abs() - half).cmpgt(DVec3::ZERO).bitmask();
        let k = out.trailing_zeros() as usize;
        (out.count_ones() == 1).then(|| (k, q[k] > 0.0))
    };
    let first = face_over(t[0])?;
    if face_over(t[1]) != Some(first) || face_over(t[2]) != Some(first) {
        return None;
    }
    let mut least = Least::default();
    for (k, &q) in t.iter().enumerate() {
        least.offer(q[first.0].abs() - half[first.0], corner(k));
    }
    Some(least)
}

/// A value `φ` is at least everywhere on the element with `corners`, cheap to find. For a
/// box, the largest over its six affine pieces of the piece's least value at the corners
/// (outside as inside, `φ ≥ max_j f_j`, and each `f_j` is linear, least at a corner). For a
/// sphere or capsule, the distance from its centre or axis to the element's middle, less the
/// radius of a ball about the middle holding the element and the shape's radius. The
/// searches skip elements whose bound is beyond their reach before the exact answer.
pub fn lower_bound(shape: &Shape, corners: &[DVec3]) -> f64 {
    let middle = || corners.iter().sum::<DVec3>() / corners.len() as f64;
    let size = |middle: DVec3| (corners.iter()).fold(0.0f64, |m, p| m.max(p.distance(middle)));
    match *shape {
        Shape::Box {
            center,
            rotation,
            half,
        } => {
            let local = (corners.iter()).map(|&p| rotation.transpose() * (p - center));
            box_lower_bound(half, local)
        }
        Shape::Sphere { center, radius } => {
            let middle = middle();
            middle.distance(center) - size(middle) - radius
        }
        Shape::Capsule { a, b, radius } => {
            let middle = middle();
            point_segment_distance(middle, [a, b]) - size(middle) - radius
        }
        Shape::Plane { .. } | Shape::Mesh => f64::NEG_INFINITY,
    }
}

/// [`lower_bound`] of a box, for corners in its frame.
fn box_lower_bound(half: DVec3, corners: impl Iterator<Item = DVec3>) -> f64 {
    let mut least = [f64::INFINITY; 6];
    for p in corners {
        for (l, f) in least.iter_mut().zip(pieces(half, p)) {
            *l = l.min(f);
        }
    }
    least.into_iter().fold(f64::NEG_INFINITY, f64::max)
}

/// Whether faces and edges are measured against `shape` here: a sphere, capsule or box. A
/// plane is flat, so its least over an element is at a corner, which the vertex contacts and
/// measures hold; a mesh is measured by [`super::features`].
pub fn measures_faces(shape: &Shape) -> bool {
    matches!(
        shape,
        Shape::Sphere { .. } | Shape::Capsule { .. } | Shape::Box { .. }
    )
}

/// The least of the shape's signed distances at `corners`.
fn corners_distance(shape: &Shape, corners: &[DVec3]) -> f64 {
    (corners.iter()).fold(f64::INFINITY, |m, &p| m.min(shape.signed_distance(p).0))
}

/// Distance from `p` to segment `s`.
fn point_segment_distance(p: DVec3, [a, b]: [DVec3; 2]) -> f64 {
    let d = b - a;
    let t = if d.length_squared() > 0.0 {
        ((p - a).dot(d) / d.length_squared()).clamp(0.0, 1.0)
    } else {
        0.0
    };
    (a + d * t).distance(p)
}

/// Distance between segment `a–b` and triangle `t`, and the weights of the triangle's point
/// nearest the segment.
fn segment_triangle_closest([a, b]: [DVec3; 2], t: [DVec3; 3]) -> (f64, [f64; 3]) {
    if segment_crosses_triangle(a, b, t) {
        // Where the segment meets the triangle's plane: inside the triangle.
        let n = (t[1] - t[0]).cross(t[2] - t[0]);
        let (da, db) = (n.dot(a - t[0]), n.dot(b - t[0]));
        let hit = a + (b - a) * (da / (da - db));
        return (0.0, closest_on_triangle(hit, t[0], t[1], t[2]).1);
    }
    let mut least = Least::default();
    for end in [a, b] {
        let (point, weights) = closest_on_triangle(end, t[0], t[1], t[2]);
        least.offer(point.distance(end), weights);
    }
    for (k, [p, q]) in sides(&t).enumerate() {
        let (s, u) = edge_edge::closest_parameters(p, q, a, b);
        least.offer((p.lerp(q, s)).distance(a.lerp(b, u)), on_side(k, s));
    }
    least.into()
}

/// The sides of triangle `t`.
fn sides(t: &[DVec3; 3]) -> impl Iterator<Item = [DVec3; 2]> + '_ {
    (0..3).map(move |k| [t[k], t[(k + 1) % 3]])
}

/// The six affine pieces of an axis-aligned box's inside distance at `q`: `q_k − h_k` and
/// `−q_k − h_k` for each axis.
fn pieces(half: DVec3, q: DVec3) -> [f64; 6] {
    [
        q.x - half.x,
        -q.x - half.x,
        q.y - half.y,
        -q.y - half.y,
        q.z - half.z,
        -q.z - half.z,
    ]
}

/// `max_k (|q_k| − h_k)`: the signed distance inside the box, and a lower bound outside.
fn inside_distance(half: DVec3, q: DVec3) -> f64 {
    (q.abs() - half).max_element()
}

/// Distance from the box to a point outside it.
fn outside_distance(half: DVec3, q: DVec3) -> f64 {
    (q.abs() - half).max(DVec3::ZERO).length()
}

/// The pieces that can be the largest somewhere on an element whose corners have the piece
/// values `at`, in order: a piece below another at every corner is below it everywhere on
/// the element (both are affine), so its equalities with the others are never vertices of
/// the largest piece, and the linear program need not try them. Near a box's edge or corner
/// two or three pieces are left of six, and 6 candidates or so of 68.
struct ActivePieces {
    index: [usize; 6],
    count: usize,
}

impl ActivePieces {
    fn of(at: &[[f64; 6]]) -> ActivePieces {
        let below = |j: usize, i: usize| at.iter().all(|f| f[j] < f[i]);
        let mut active = ActivePieces {
            index: [0; 6],
            count: 0,
        };
        for j in (0..6).filter(|&j| !(0..6).any(|i| below(j, i))) {
            active.index[active.count] = j;
            active.count += 1;
        }
        active
    }

    fn as_slice(&self) -> &[usize] {
        &self.index[..self.count]
    }
}

/// Along the side from the point with piece values `from` to the one with `to`, each
/// parameter in [0, 1] where two of the `active` pieces are equal, given to `found`.
fn equal_pieces_on_side(
    from: [f64; 6],
    to: [f64; 6],
    active: &[usize],
    mut found: impl FnMut(f64),
) {
    for (n, &i) in active.iter().enumerate() {
        for &j in &active[n + 1..] {
            // f_i(s) − f_j(s) = (from_i − from_j) + s · (slope_i − slope_j) = 0.
            let offset = from[i] - from[j];
            let slope = (to[i] - from[i]) - (to[j] - from[j]);
            if slope != 0.0 {
                found((-offset / slope).clamp(0.0, 1.0));
            }
        }
    }
}

/// The least of [`inside_distance`] over segment `s` (box frame).
fn least_inside_on_segment(half: DVec3, s: [DVec3; 2]) -> f64 {
    let at = s.map(|p| pieces(half, p));
    let mut least = inside_distance(half, s[0]).min(inside_distance(half, s[1]));
    let active = ActivePieces::of(&at);
    equal_pieces_on_side(at[0], at[1], active.as_slice(), |t| {
        least = least.min(inside_distance(half, s[0].lerp(s[1], t)));
    });
    least
}

/// The least of [`inside_distance`] over triangle `t` (box frame): at its corners, where two
/// of the [`ActivePieces`] are equal on a side, and where three are equal inside.
fn least_inside_on_triangle(half: DVec3, t: [DVec3; 3]) -> Least {
    let at = t.map(|p| pieces(half, p));
    let active = ActivePieces::of(&at);
    let active = active.as_slice();
    let mut least = Least::default();
    for (k, &p) in t.iter().enumerate() {
        least.offer(inside_distance(half, p), corner(k));
    }
    for (k, [p, q]) in sides(&t).enumerate() {
        equal_pieces_on_side(at[k], at[(k + 1) % 3], active, |s| {
            least.offer(inside_distance(half, p.lerp(q, s)), on_side(k, s));
        });
    }
    // f_i(u, v) = c_i + u · a_i + v · b_i over t0 + u (t1 − t0) + v (t2 − t0).
    let (a, b): ([f64; 6], [f64; 6]) = (
        std::array::from_fn(|i| at[1][i] - at[0][i]),
        std::array::from_fn(|i| at[2][i] - at[0][i]),
    );
    let c = at[0];
    for (n, &i) in active.iter().enumerate() {
        for (m, &j) in active.iter().enumerate().skip(n + 1) {
            for &k in &active[m + 1..] {
                // f_i = f_j and f_j = f_k, by Cramer's rule.
                let (a1, b1, r1) = (a[i] - a[j], b[i] - b[j], c[j] - c[i]);
                let (a2, b2, r2) = (a[j] - a[k], b[j] - b[k], c[k] - c[j]);
                let det = a1 * b2 - a2 * b1;
                if det == 0.0 {
                    continue;
                }
                let (u, v) = ((r1 * b2 - r2 * b1) / det, (a1 * r2 - a2 * r1) / det);
                let (u, v) = clamp_to_triangle(u, v);
                let p = t[0] + (t[1] - t[0]) * u + (t[2] - t[0]) * v;
                least.offer(inside_distance(half, p), [1.0 - u - v, u, v]);
            }
        }
    }
    least
}

/// The nearest point of the parameter triangle `u, v ≥ 0, u + v ≤ 1` along the way back: a
/// point of the triangle whatever rounding did (NaN parameters from a degenerate triangle
/// become its first corner).
fn clamp_to_triangle(u: f64, v: f64) -> (f64, f64) {
    let (u, v) = (u.max(0.0), v.max(0.0)); // max turns NaN into 0
    let sum = u + v;
    if sum > 1.0 {
        (u / sum, v / sum)
    } else {
        (u, v)
    }
}

/// The box's twelve edges (box frame).
fn box_edges(half: DVec3) -> impl Iterator<Item = [DVec3; 2]> {
    (0..3).flat_map(move |axis| {
        (0..4).map(move |signs| {
            let mut corner = -half;
            let others = [(axis + 1) % 3, (axis + 2) % 3];
            for (bit, &k) in others.iter().enumerate() {
                if signs & (1 << bit) != 0 {
                    corner[k] = half[k];
                }
            }
            let mut end = corner;
            end[axis] = half[axis];
            [corner, end]
        })
    })
}

/// Distance between the box and a segment that misses it (box frame).
fn box_segment_gap(half: DVec3, s: [DVec3; 2]) -> f64 {
    let ends = outside_distance(half, s[0]).min(outside_distance(half, s[1]));
    box_edges(half).fold(ends, |m, [p, q]| {
        m.min(edge_edge::segment_distance(p, q, s[0], s[1]))
    })
}

/// Distance between the box and a triangle that misses it (box frame), and where on the
/// triangle it is reached, when at most `cutoff`. Only the box's corners and edges within
/// `cutoff` of the triangle's bounding box are tried: the nearest pair of points is within
/// it, so the answer within the cutoff is exact; beyond it, it is a distance between points
/// of the two, so beyond it too.
fn box_triangle_gap(half: DVec3, t: [DVec3; 3], cutoff: f64) -> Least {
    let (low, high) = (
        t[0].min(t[1]).min(t[2]) - cutoff,
        t[0].max(t[1]).max(t[2]) + cutoff,
    );
    let meets = |[p, q]: [DVec3; 2]| p.min(q).cmple(high).all() && p.max(q).cmpge(low).all();
    let mut least = Least::default();
    for (k, &p) in t.iter().enumerate() {
        least.offer(outside_distance(half, p), corner(k));
    }
    for box_corner in 0..8 {
        let pick = |bit: usize, h: f64| if box_corner & (1 << bit) != 0 { h } else { -h };
        let p = DVec3::new(pick(0, half.x), pick(1, half.y), pick(2, half.z));
        if meets([p, p]) {
            let (point, weights) = closest_on_triangle(p, t[0], t[1], t[2]);
            least.offer(point.distance(p), weights);
        }
    }
    for [p, q] in box_edges(half).filter(|&edge| meets(edge)) {
        for (k, [a, b]) in sides(&t).enumerate() {
            let (s, u) = edge_edge::closest_parameters(a, b, p, q);
            least.offer((a.lerp(b, s)).distance(p.lerp(q, u)), on_side(k, s));
        }
    }
    least
}

#[cfg(test)]
mod tests;
