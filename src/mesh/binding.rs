//! Render meshes: a fine mesh carried by a coarse simulated triangle mesh.
//!
//! Every fine (render) vertex `p` is bound once, at bind time, to one coarse triangle `abc`:
//! the triangle nearest to `p` (smallest Euclidean distance; ties to the lowest triangle
//! index), found with the collider BVH
//! ([`crate::collision::wide_bvh::WideBvh::closest`], which runs Ericson's closest point
//! on a triangle, [`closest_on_triangle`]). The binding keeps
//!
//! - `w = [w_a, w_b, w_c]`, the barycentric weights of the closest point, so the *bound point*
//!   is `q = w_a x_a + w_b x_b + w_c x_c` (weights ≥ 0, summing to 1);
//! - `(h, ρ₁, ρ₂)`, the coordinates of `p − q` in an orthonormal frame `(d, t₁, t₂)` attached
//!   to the triangle at `q` (below): `h = (p − q)·d` is the signed offset along the normal,
//!   `ρ = ((p − q)·t₁, (p − q)·t₂)` the tangential remainder.
//!
//! For any coarse positions the fine vertex is then placed at
//!
//! ```text
//! p = q + h d + ρ₁ t₁ + ρ₂ t₂
//! ```
//!
//! **The frame.** `n_i` is the area-weighted vertex normal of corner `i` at the current
//! positions (the normalised sum of `(x_b − x_a) × (x_c − x_a)` over the triangles at the
//! vertex, [`vertex_normal_sums`]; zero where that sum is zero, so a vertex in a zero-area
//! neighbourhood contributes nothing). The normal direction is
//!
//! ```text
//! d = normalize(w_a n_a + w_b n_b + w_c n_c)      (the interpolated vertex normal)
//!   else normalize((x_b − x_a) × (x_c − x_a))     (the face normal)
//!   else none                                    (no normal: p = q, no offset)
//! ```
//!
//! and the tangents follow the triangle's first edge: `t₂ = normalize(d × e)`, `t₁ = t₂ × d`,
//! with `e` the first of `x_b − x_a`, `x_c − x_a`, `x_c − x_b` not parallel to `d` (none: the
//! tangential remainder is dropped, `p = q + h d`). Nothing divides by a length that can be
//! zero: every normalisation is a `try_normalize` with a fallback, so a zero-area triangle or
//! a whole mesh collapsed to a point gives finite positions for finite input.
//!
//! **Why a tangential remainder.** The bound point is the *closest* point, so `p − q` is along
//! the face normal when `p` projects inside the triangle and points away from an edge or
//! corner when it does not; the interpolated normal `d` is neither in general (it is the face
//! normal only where the coarse mesh is flat around the triangle). Keeping only `h` would
//! leave a bind-time residual `|p − q| sin ∠(p − q, d)`: about `h θ` for a vertex above a
//! curved patch whose normals turn by `θ`, and the whole overhang for a render vertex past
//! the coarse mesh's border (that border would pull the render mesh in). With `ρ` kept,
//! `place` at bind time reproduces every fine vertex to rounding (`~1e-16 · |p|`), inside or
//! outside its triangle's normal field, and any rigid motion of the coarse mesh moves the
//! frame rigidly, so the render mesh follows it exactly. Under bending the offset `h` stays
//! along the new interpolated normal (a render vertex 1 cm above the cloth stays 1 cm above
//! it), and `ρ` (small unless the vertex is outside the coarse mesh) turns with the triangle.
//! The frame depends continuously on the positions except where its edge `e` falls parallel
//! to `d` (a degenerate triangle), so the remainder does not jump from frame to frame.

use crate::collision::bvh::{bounds, closest_on_triangle};
use crate::collision::wide_bvh::WideBvh;
use crate::mesh::normals::vertex_normal_sums;
use glam::DVec3;

/// One render vertex's binding: its triangle, the barycentric weights of its bound (closest)
/// point and its coordinates in the triangle's frame there (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoundVertex {
    /// Index into the coarse triangles.
    pub triangle: u32,
    /// That triangle's vertex indices (so `carry` needs no triangle list).
    pub corners: [u32; 3],
    /// Barycentric weights of the closest point on the triangle at bind time.
    pub weights: [f64; 3],
    /// Signed offset `h` along the normalised interpolated vertex normal `d`.
    pub offset: f64,
    /// Tangential remainder `(ρ₁, ρ₂)` along the frame tangents `(t₁, t₂)`.
    pub tangential: [f64; 2],
}

/// Each render vertex bound to one simulated triangle: barycentric weights of its closest
/// point on that triangle at bind time, and its signed offset along the interpolated vertex
/// normal there, plus the tangential remainder in the triangle's frame that makes placing at
/// bind time exact (module docs for the math).
#[derive(Debug, Clone, PartialEq)]
pub struct Binding {
    vertices: Vec<BoundVertex>,
    /// `0, 3, 6, …, 3m`: the `m` coarse triangles seen as polygons by [`vertex_normal_sums`].
    triangle_offsets: Vec<u32>,
}

/// The frame at a bound point: `q`, the normal `d` (zero when there is none) and the tangents
/// (zero when there are none).
struct Frame {
    q: DVec3,
    d: DVec3,
    t1: DVec3,
    t2: DVec3,
}

impl Frame {
    fn at(corners: [DVec3; 3], normals: [DVec3; 3], w: [f64; 3]) -> Frame {
        let [a, b, c] = corners;
        let q = a * w[0] + b * w[1] + c * w[2];
        let interpolated = normals[0] * w[0] + normals[1] * w[1] + normals[2] * w[2];
        let Some(d) = interpolated
            .try_normalize()
            .or_else(|| (b - a).cross(c - a).try_normalize())
        else {
            return Frame {
                q,
                d: DVec3::ZERO,
                t1: DVec3::ZERO,
                t2: DVec3::ZERO,
            };
        };
        let (t1, t2) = [b - a, c - a, c - b]
            .into_iter()
            .find_map(|e| d.cross(e).try_normalize())
            .map_or((DVec3::ZERO, DVec3::ZERO), |t2| (t2.cross(d), t2));
        Frame { q, d, t1, t2 }
    }
}

/// Unit area-weighted vertex normals of `triangles` into `normals`, zero where the sum is.
fn unit_vertex_normals(
    positions: &[DVec3],
    triangles: &[[u32; 3]],
    triangle_offsets: &[u32],
    normals: &mut Vec<DVec3>,
) {
    vertex_normal_sums(
        positions,
        triangles.as_flattened(),
        triangle_offsets,
        normals,
    );
    for n in normals.iter_mut() {
        *n = n.try_normalize().unwrap_or(DVec3::ZERO);
    }
}

/// Spreads the low 21 bits of `x` to every third bit (bit `i` to bit `3i`).
fn spread(x: u64) -> u64 {
    let mut x = x & 0x1f_ffff;
    x = (x | x << 32) & 0x001f_0000_0000_ffff;
    x = (x | x << 16) & 0x001f_0000_ff00_00ff;
    x = (x | x << 8) & 0x100f_00f0_0f00_f00f;
    x = (x | x << 4) & 0x10c3_0c30_c30c_30c3;
    (x | x << 2) & 0x1249_2492_4924_9249
}

/// Indices of `points` in Z order (Morton code of the point quantised to 2²¹ cells per axis of
/// their bounding box), ties by index: consecutive indices are mostly neighbours in space,
/// whatever order the points came in.
fn spatial_order(points: &[DVec3]) -> Vec<u32> {
    let (min, max) = bounds(points.iter().copied(), 0.0);
    let cells = f64::from((1u32 << 21) - 1);
    // A flat (or infinite, or NaN) extent gets scale 0: every code 0 along that axis.
    let scale = (max - min).to_array().map(|e| {
        let s = cells / e;
        if s.is_finite() && e > 0.0 {
            s
        } else {
            0.0
        }
    });
    let mut keyed: Vec<(u64, u32)> = points
        .iter()
        .enumerate()
        .map(|(k, p)| {
            let q = (*p - min).to_array();
            // `as` saturates (NaN to 0), and the clamp keeps the top cell for the maximum.
            let cell = |axis: usize| ((q[axis] * scale[axis]) as u64).min(cells as u64);
            let code = spread(cell(0)) | spread(cell(1)) << 1 | spread(cell(2)) << 2;
            (
                code,
                u32::try_from(k).expect("at most u32::MAX render vertices"),
            )
        })
        .collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|(_, k)| k).collect()
}

fn corners<T: Copy>(values: &[T], triangle: [u32; 3]) -> [T; 3] {
    triangle.map(|i| values[i as usize])
}

impl Binding {
    /// Binds every fine vertex to the nearest coarse triangle (smallest distance to the
    /// triangle; ties broken by lowest triangle index, deterministic), through a four-wide
    /// tree over the coarse triangles' boxes ([`WideBvh::closest`]). The fine vertices are visited in
    /// Z order, each search starting with the previous vertex's triangle as the bound, so a
    /// search visits few nodes: about `O(n log n + m log m)` for `n` fine vertices and `m`
    /// triangles, whatever order the fine vertices come in (the order changes the time only,
    /// never the answer). Weights, offset and tangential remainder as in the module
    /// docs, with the normals of `coarse_positions`.
    ///
    /// # Panics
    /// If there are fine vertices but no coarse triangles, if a fine position is not finite
    /// (it has no nearest triangle), or on a triangle index out of range.
    pub fn bind(
        coarse_positions: &[DVec3],
        coarse_triangles: &[[u32; 3]],
        fine_positions: &[DVec3],
    ) -> Binding {
        let triangle_offsets = Self::triangle_offsets(coarse_triangles.len());
        assert!(
            fine_positions.is_empty() || !coarse_triangles.is_empty(),
            "cannot bind {} render vertices to a mesh without triangles",
            fine_positions.len()
        );
        let mut normals = Vec::new();
        unit_vertex_normals(
            coarse_positions,
            coarse_triangles,
            &triangle_offsets,
            &mut normals,
        );
        let boxes: Vec<_> = (coarse_triangles.iter())
            .map(|&triangle| bounds(corners(coarse_positions, triangle), 0.0))
            .collect();
        let tree = WideBvh::over_boxes(&boxes);
        let unbound = BoundVertex {
            triangle: 0,
            corners: [0; 3],
            weights: [0.0; 3],
            offset: 0.0,
            tangential: [0.0; 2],
        };
        let mut vertices = vec![unbound; fine_positions.len()];
        let mut guess = 0u32;
        for k in spatial_order(fine_positions) {
            let p = fine_positions[k as usize];
            // Start the search no farther than the previous vertex's triangle (in Z order the
            // previous vertex is almost always a neighbour; the reach is widened a little past
            // rounding): `closest` keeps the nearest, lowest index first, of all triangles
            // within the reach, so when the nearest is within it the answer is that of an
            // unbounded search, ties included, only found far sooner; and when no triangle is,
            // the unbounded search runs. So the order changes the time, never the answer.
            let [a, b, c] = corners(coarse_positions, coarse_triangles[guess as usize]);
            let reach = closest_on_triangle(p, a, b, c).0.distance(p) * (1.0 + 1e-9);
            let found = tree
                .closest(coarse_positions, coarse_triangles, p, reach)
                .or_else(|| tree.closest(coarse_positions, coarse_triangles, p, f64::INFINITY))
                .unwrap_or_else(|| panic!("render vertex {k} at {p} has no nearest triangle"));
            guess = found.triangle;
            let triangle = coarse_triangles[found.triangle as usize];
            let frame = Frame::at(
                corners(coarse_positions, triangle),
                corners(&normals, triangle),
                found.weights,
            );
            let r = p - frame.q;
            vertices[k as usize] = BoundVertex {
                triangle: found.triangle,
                corners: triangle,
                weights: found.weights,
                offset: r.dot(frame.d),
                tangential: [r.dot(frame.t1), r.dot(frame.t2)],
            };
        }
        Binding {
            vertices,
            triangle_offsets,
        }
    }

    fn triangle_offsets(triangles: usize) -> Vec<u32> {
        (0..=triangles)
            .map(|t| u32::try_from(3 * t).expect("at most u32::MAX triangle corners"))
            .collect()
    }

    /// Places the fine vertices for deformed coarse positions:
    /// `p = Σ w_i x_i + offset · normalize(Σ w_i n_i) + ρ₁ t₁ + ρ₂ t₂`, `n_i` the area-weighted
    /// vertex normals of the coarse mesh at its current positions (computed here into
    /// `normals_scratch`, reused across calls), `t₁, t₂` the triangle's tangents (module docs).
    /// Degenerate normals (zero length) fall back to the triangle's face normal, then to no
    /// offset; never NaN for finite input. `out` is cleared and filled, one per render vertex.
    ///
    /// `coarse_triangles` must be the list bound to (its length is checked, its contents in
    /// debug builds).
    ///
    /// # Panics
    /// If `coarse_triangles` is not as long as at bind time.
    pub fn place(
        &self,
        coarse_positions: &[DVec3],
        coarse_triangles: &[[u32; 3]],
        normals_scratch: &mut Vec<DVec3>,
        out: &mut Vec<DVec3>,
    ) {
        assert_eq!(
            coarse_triangles.len() + 1,
            self.triangle_offsets.len(),
            "placing with another triangle list than the one bound to"
        );
        unit_vertex_normals(
            coarse_positions,
            coarse_triangles,
            &self.triangle_offsets,
            normals_scratch,
        );
        out.clear();
        out.extend(self.vertices.iter().map(|v| {
            debug_assert_eq!(coarse_triangles[v.triangle as usize], v.corners);
            let frame = Frame::at(
                corners(coarse_positions, v.corners),
                corners(normals_scratch, v.corners),
                v.weights,
            );
            frame.q + frame.d * v.offset + frame.t1 * v.tangential[0] + frame.t2 * v.tangential[1]
        }));
    }

    /// Velocities of the render vertices: the same weights applied to coarse velocities
    /// (`Σ w_i v_i`), for motion blur. (The offset's own motion, from the turning normal, is
    /// left out: motion blur wants the surface's velocity, and a first-order term would need
    /// the normals' rates.) Works for any per-vertex vector quantity. `out` is cleared and
    /// filled, one per render vertex.
    ///
    /// # Panics
    /// If `coarse_values` is shorter than the coarse vertices the binding uses.
    pub fn carry(&self, coarse_values: &[DVec3], out: &mut Vec<DVec3>) {
        out.clear();
        out.extend(self.vertices.iter().map(|v| {
            let [a, b, c] = corners(coarse_values, v.corners);
            a * v.weights[0] + b * v.weights[1] + c * v.weights[2]
        }));
    }

    /// Number of render vertices.
    pub fn len(&self) -> usize {
        self.vertices.len()
    }

    /// Whether there are no render vertices.
    pub fn is_empty(&self) -> bool {
        self.vertices.is_empty()
    }

    /// The per-vertex bindings, in render-vertex order.
    pub fn vertices(&self) -> &[BoundVertex] {
        &self.vertices
    }
}

#[cfg(test)]
mod tests;
