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
mod tests {
    use super::*;
    use crate::mesh::primitives;
    use glam::{DMat3, DQuat};

    /// A `size × size` grid of `n × n` vertices in the XZ plane, normal +Y (the crate's grid).
    fn grid(size: f64, n: usize) -> (Vec<DVec3>, Vec<[u32; 3]>) {
        let mesh = primitives::grid([size, size], n, n);
        let triangles = mesh.triangles();
        (mesh.positions, triangles)
    }

    fn placed(binding: &Binding, positions: &[DVec3], triangles: &[[u32; 3]]) -> Vec<DVec3> {
        let (mut normals, mut out) = (Vec::new(), Vec::new());
        binding.place(positions, triangles, &mut normals, &mut out);
        assert_eq!(out.len(), binding.len());
        out
    }

    fn max_error(a: &[DVec3], b: &[DVec3]) -> f64 {
        assert_eq!(a.len(), b.len());
        a.iter()
            .zip(b)
            .map(|(x, y)| x.distance(*y))
            .fold(0.0, f64::max)
    }

    /// Distance from `p` to the triangle mesh, by brute force.
    fn distance_to_mesh(positions: &[DVec3], triangles: &[[u32; 3]], p: DVec3) -> f64 {
        triangles
            .iter()
            .map(|&t| {
                let [a, b, c] = corners(positions, t);
                closest_on_triangle(p, a, b, c).0.distance(p)
            })
            .fold(f64::INFINITY, f64::min)
    }

    #[test]
    fn a_fine_grid_in_the_coarse_plane_places_back_onto_itself() {
        let (coarse, triangles) = grid(1.0, 5);
        let (fine, _) = grid(1.0, 21);
        let binding = Binding::bind(&coarse, &triangles, &fine);
        assert_eq!(binding.len(), 21 * 21);
        let error = max_error(&placed(&binding, &coarse, &triangles), &fine);
        assert!(error < 1e-12, "{error}");
    }

    /// A coarse mesh that is curved at bind time and a fine one that sticks out past its
    /// border and wanders above and below it: every fine vertex is off its triangle's normal
    /// field in some way, and the tangential remainder still places it back exactly.
    fn curved_and_overhanging() -> (Vec<DVec3>, Vec<[u32; 3]>, Vec<DVec3>) {
        let (mut coarse, triangles) = grid(1.0, 5);
        for p in &mut coarse {
            p.y = 0.3 * p.x * p.x - 0.2 * p.z * p.x;
        }
        let (mut fine, _) = grid(1.3, 21);
        for p in &mut fine {
            p.y = 0.3 * p.x * p.x + 0.02 * (7.0 * p.x).sin() * (5.0 * p.z).cos();
        }
        (coarse, triangles, fine)
    }

    #[test]
    fn bind_time_placement_is_exact_off_the_normal_field_too() {
        let (coarse, triangles, fine) = curved_and_overhanging();
        let binding = Binding::bind(&coarse, &triangles, &fine);
        // Without the remainder these would be off: the overhang alone is up to 0.15.
        let largest_remainder = binding
            .vertices()
            .iter()
            .map(|v| v.tangential[0].hypot(v.tangential[1]))
            .fold(0.0, f64::max);
        assert!(largest_remainder > 0.1, "{largest_remainder}");
        let error = max_error(&placed(&binding, &coarse, &triangles), &fine);
        assert!(error < 1e-12, "{error}");
    }

    #[test]
    fn a_rigid_motion_of_the_coarse_mesh_moves_the_fine_mesh_rigidly() {
        let (coarse, triangles, fine) = curved_and_overhanging();
        let binding = Binding::bind(&coarse, &triangles, &fine);
        let rotation = DQuat::from_axis_angle(DVec3::new(1.0, -2.0, 0.5).normalize(), 2.1);
        let shift = DVec3::new(3.0, -1.5, 40.0);
        let moved = |p: &DVec3| rotation * *p + shift;
        let coarse_moved: Vec<DVec3> = coarse.iter().map(moved).collect();
        let fine_moved: Vec<DVec3> = fine.iter().map(moved).collect();
        let error = max_error(&placed(&binding, &coarse_moved, &triangles), &fine_moved);
        assert!(error < 1e-9, "{error}");
    }

    #[test]
    fn an_offset_grid_keeps_its_offset_along_the_normal_when_the_coarse_grid_bends() {
        // Coarse 5 × 5 over [−0.5, 0.5]², fine 21 × 21 one centimetre above it (+Y).
        let h = 0.01;
        let (coarse, triangles) = grid(1.0, 5);
        let (mut fine, _) = grid(1.0, 21);
        for p in &mut fine {
            p.y = h;
        }
        let binding = Binding::bind(&coarse, &triangles, &fine);
        for v in binding.vertices() {
            assert!((v.offset - h).abs() < 1e-15, "{v:?}");
        }
        // Bend the coarse grid onto a cylinder of radius R about the Z axis through
        // (0, −R, 0): x becomes the arc length, +Y the outward radial direction.
        let radius = 1.0;
        let bend = |p: DVec3| {
            let angle = p.x / radius;
            DVec3::new(
                (radius + p.y) * angle.sin(),
                (radius + p.y) * angle.cos() - radius,
                p.z,
            )
        };
        let bent: Vec<DVec3> = coarse.iter().map(|&p| bend(p)).collect();
        let out = placed(&binding, &bent, &triangles);
        // Known answer, derived: each quad of the bent grid is a planar rectangle (a chord of
        // the circle times Z) whose normal is radial at its middle angle; every vertex normal
        // is a positive combination of its quads' normals, so it is perpendicular to Z and
        // turned at most one quad angle Δφ = 0.25 / R from the normal of any quad it touches,
        // and so is the interpolated normal d at a bound point. The fine vertex is
        // p = q + h d (no remainder: the grids were flat and parallel), so |p − q| = h, and
        // its distance to the bent coarse surface is at most h (q is on it) and at least its
        // height over the plane of its own quad, h (d · n_face) ≥ h cos Δφ: the polyhedral
        // arc spans less than a half circle, so it lies behind every one of its faces' planes.
        let delta = 0.25 / radius;
        let lower = h * delta.cos();
        for (k, p) in out.iter().enumerate() {
            let v = binding.vertices()[k];
            let [a, b, c] = corners(&bent, v.corners);
            let q = a * v.weights[0] + b * v.weights[1] + c * v.weights[2];
            assert!(
                (p.distance(q) - h).abs() < 1e-14,
                "{k}: |p − q| = {}",
                p.distance(q)
            );
            let distance = distance_to_mesh(&bent, &triangles, *p);
            assert!(
                distance <= h + 1e-14 && distance >= lower - 1e-14,
                "{k}: distance {distance} outside [{lower}, {h}]"
            );
            // And outside the cylinder, as the offset's sign says.
            assert!((*p + DVec3::new(0.0, radius, 0.0)).truncate().length() > radius);
        }
    }

    #[test]
    fn carry_of_a_uniform_velocity_is_that_velocity_and_a_linear_field_is_sampled_exactly() {
        let (coarse, triangles, fine) = curved_and_overhanging();
        let binding = Binding::bind(&coarse, &triangles, &fine);
        let velocity = DVec3::new(0.3, -2.0, 1.25);
        let mut out = Vec::new();
        binding.carry(&vec![velocity; coarse.len()], &mut out);
        assert_eq!(out.len(), fine.len());
        for v in &out {
            assert!((*v - velocity).length() < 1e-15, "{v}");
        }
        // A rigid-body velocity field v(x) = ω × x + u (linear in x): the bound point's.
        let (omega, u) = (DVec3::new(0.1, 0.7, -0.4), DVec3::new(1.0, 0.0, 2.0));
        let field = |x: DVec3| omega.cross(x) + u;
        let velocities: Vec<DVec3> = coarse.iter().map(|&x| field(x)).collect();
        binding.carry(&velocities, &mut out);
        for (v, bound) in out.iter().zip(binding.vertices()) {
            let [a, b, c] = corners(&coarse, bound.corners);
            let q = a * bound.weights[0] + b * bound.weights[1] + c * bound.weights[2];
            assert!((*v - field(q)).length() < 1e-14, "{v}");
        }
    }

    #[test]
    fn degenerate_triangles_give_no_nan() {
        let finite = |points: &[DVec3]| points.iter().all(|p| p.is_finite());
        let (fine, _) = grid(1.3, 9);
        let fine: Vec<DVec3> = fine.iter().map(|p| *p + DVec3::Y * 0.05).collect();
        // A good mesh with a sliver (collinear) and a point triangle among its triangles.
        let (mut coarse, mut triangles) = grid(1.0, 3);
        let base = coarse.len() as u32;
        coarse.extend([
            DVec3::new(0.0, 0.0, 0.0),
            DVec3::new(0.1, 0.0, 0.0),
            DVec3::new(0.2, 0.0, 0.0),
            DVec3::new(0.25, 0.0, 0.25),
        ]);
        triangles.insert(0, [base, base + 1, base + 2]); // a line
        triangles.insert(0, [base + 3, base + 3, base + 3]); // a point
        let binding = Binding::bind(&coarse, &triangles, &fine);
        assert!(binding.vertices().iter().any(|v| v.triangle < 2));
        let out = placed(&binding, &coarse, &triangles);
        assert!(finite(&out));
        // The sliver's vertices have no area around them: its normal is the face normal's
        // fallback, which is zero too, so vertices bound to it sit on it (no offset); the
        // point triangle likewise.
        for (p, v) in out.iter().zip(binding.vertices()) {
            if v.triangle < 2 {
                assert!(p.y.abs() < 1e-15, "{p}");
            }
        }
        // The whole coarse mesh collapsed to one point: everything lands on it.
        let point = DVec3::new(0.5, 2.0, -1.0);
        let collapsed = vec![point; coarse.len()];
        let out = placed(&binding, &collapsed, &triangles);
        assert!(out.iter().all(|&p| p == point));
        // Collapsed onto a line (the X axis): finite, and on the line.
        let line: Vec<DVec3> = coarse.iter().map(|p| DVec3::X * p.x).collect();
        let out = placed(&binding, &line, &triangles);
        assert!(finite(&out));
        // Bound to a collapsed mesh in the first place.
        let binding = Binding::bind(&collapsed, &triangles, &fine);
        assert!(finite(&placed(&binding, &collapsed, &triangles)));
        assert!(finite(&placed(&binding, &coarse, &triangles)));
        let binding = Binding::bind(&line, &triangles, &fine);
        assert!(finite(&placed(&binding, &line, &triangles)));
        assert!(finite(&placed(&binding, &coarse, &triangles)));
    }

    #[test]
    fn ties_pick_the_lowest_triangle_index() {
        let (coarse, triangles) = grid(1.0, 5);
        // Straight above the middle vertex (the origin, exactly): its six triangles are all
        // exactly 0.3 away.
        let middle = 12u32;
        assert_eq!(coarse[middle as usize], DVec3::ZERO);
        let p = DVec3::new(0.0, 0.3, 0.0);
        let around: Vec<u32> = (0..triangles.len() as u32)
            .filter(|&t| triangles[t as usize].contains(&middle))
            .collect();
        assert_eq!(around.len(), 6);
        for &t in &around {
            let [a, b, c] = corners(&coarse, triangles[t as usize]);
            assert_eq!(closest_on_triangle(p, a, b, c).0.distance(p), 0.3);
        }
        let binding = Binding::bind(&coarse, &triangles, &[p]);
        assert_eq!(binding.vertices()[0].triangle, around[0]);
        // Reversed triangle order: the lowest index is now the one that was the highest.
        let reversed: Vec<[u32; 3]> = triangles.iter().rev().copied().collect();
        let binding = Binding::bind(&coarse, &reversed, &[p]);
        let expected = triangles.len() as u32 - 1 - around[around.len() - 1];
        assert_eq!(binding.vertices()[0].triangle, expected);
        // A duplicated triangle: the first copy, wherever the copies are.
        let mut doubled = triangles.clone();
        doubled.push(triangles[7]);
        doubled.swap(3, 7); // copies at 3 and at the end
        let q = {
            let [a, b, c] = corners(&coarse, triangles[7]);
            (a + b + c) / 3.0 + DVec3::Y * 0.1
        };
        let binding = Binding::bind(&coarse, &doubled, &[q, q]);
        assert!(binding.vertices().iter().all(|v| v.triangle == 3));
        // Binding is a function of its input: the same twice, bit for bit.
        let (_, _, fine) = curved_and_overhanging();
        assert_eq!(
            Binding::bind(&coarse, &triangles, &fine),
            Binding::bind(&coarse, &triangles, &fine)
        );
    }

    #[test]
    fn bind_finds_the_nearest_triangle() {
        let (coarse, triangles, fine) = curved_and_overhanging();
        let binding = Binding::bind(&coarse, &triangles, &fine);
        for (p, v) in fine.iter().zip(binding.vertices()) {
            let [a, b, c] = corners(&coarse, v.corners);
            let (point, weights) = closest_on_triangle(*p, a, b, c);
            assert_eq!(weights, v.weights);
            assert_eq!(
                point.distance(*p),
                distance_to_mesh(&coarse, &triangles, *p)
            );
        }
    }

    #[test]
    fn spatial_order_is_a_permutation_in_z_order() {
        // The 2 × 2 × 2 corners of a box: Morton order is x fastest, then y, then z.
        let mut points = Vec::new();
        for k in [5, 3, 0, 6, 1, 7, 2, 4u32] {
            points.push(DVec3::new(
                f64::from(k & 1),
                f64::from(k >> 1 & 1) * 2.0,
                f64::from(k >> 2) * 3.0,
            ));
        }
        let order = spatial_order(&points);
        let codes: Vec<u32> = order
            .iter()
            .map(|&i| {
                let p = points[i as usize];
                p.x as u32 | ((p.y / 2.0) as u32) << 1 | ((p.z / 3.0) as u32) << 2
            })
            .collect();
        assert_eq!(codes, (0..8).collect::<Vec<u32>>());
        // Equal points keep index order; a flat or empty set is fine.
        assert_eq!(spatial_order(&[DVec3::ONE; 4]), vec![0, 1, 2, 3]);
        assert!(spatial_order(&[]).is_empty());
        // Bit i goes to bit 3i, for all 21 bits.
        for i in 0..21 {
            assert_eq!(spread(1 << i), 1 << (3 * i));
        }
        assert_eq!(spread(u64::MAX), 0x1249_2492_4924_9249);
    }

    /// `cargo test --release --lib binding -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn timing_100k_render_vertices_on_20k_triangles() {
        // 101 × 101 coarse vertices: 20 000 triangles; 317 × 317 = 100 489 fine vertices.
        let (mut coarse, triangles) = grid(2.0, 101);
        let wave = |p: DVec3| 0.1 * (3.0 * p.x).sin() * (2.0 * p.z).cos();
        for p in &mut coarse {
            p.y = wave(*p);
        }
        let (mut fine, _) = grid(2.0, 317);
        for p in &mut fine {
            p.y = wave(*p) + 0.005;
        }
        assert_eq!(triangles.len(), 20_000);
        let start = std::time::Instant::now();
        let binding = Binding::bind(&coarse, &triangles, &fine);
        let bind = start.elapsed();
        let (mut normals, mut out) = (Vec::new(), Vec::new());
        binding.place(&coarse, &triangles, &mut normals, &mut out);
        let start = std::time::Instant::now();
        let spin = DMat3::from_rotation_y(0.3);
        let moved: Vec<DVec3> = coarse.iter().map(|&p| spin * p).collect();
        binding.place(&moved, &triangles, &mut normals, &mut out);
        let place = start.elapsed();
        println!(
            "bind {} fine vertices on {} triangles: {:.1} ms; place: {:.2} ms",
            fine.len(),
            triangles.len(),
            bind.as_secs_f64() * 1e3,
            place.as_secs_f64() * 1e3
        );
        // The same vertices in a scrambled order (k ↦ 7919 k mod n, a permutation): the
        // binding must not depend on the fine vertices coming in runs of neighbours.
        let n = fine.len();
        let scrambled: Vec<DVec3> = (0..n).map(|k| fine[k * 7919 % n]).collect();
        let start = std::time::Instant::now();
        let binding_scrambled = Binding::bind(&coarse, &triangles, &scrambled);
        println!(
            "bind the same, scrambled order: {:.1} ms",
            start.elapsed().as_secs_f64() * 1e3
        );
        for k in 0..n {
            assert_eq!(
                binding_scrambled.vertices()[k],
                binding.vertices()[k * 7919 % n]
            );
        }
        // Spot-check the nearest triangle against brute force.
        for k in (0..fine.len()).step_by(997) {
            let v = binding.vertices()[k];
            let [a, b, c] = corners(&coarse, v.corners);
            let found = closest_on_triangle(fine[k], a, b, c).0.distance(fine[k]);
            assert_eq!(found, distance_to_mesh(&coarse, &triangles, fine[k]));
        }
    }
}
