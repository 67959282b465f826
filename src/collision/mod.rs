//! Colliders and particle contacts.
//!
//! A contact is an inequality constraint `C(p) = φ(p) − r ≥ 0` with `φ` the collider's signed
//! distance and `r` the particle radius (`collision.thickness`) plus the collider's own
//! `thickness`. It acts only when violated and, against an immovable collider, is solved
//! exactly (compliance 0): `p += −C n`. Friction follows Macklin et al. 2014 (Unified Particle
//! Physics, §6.1) at position level: with `Δx_t` the tangential displacement over the substep
//! and `d` the penetration just corrected, `Δx_t` is removed entirely when `|Δx_t| < μ_s d`
//! (static) and shortened by `μ_k d` otherwise (dynamic). On an incline this gives exactly
//! Coulomb's law: a particle holds when `tan θ < μ_s` and otherwise accelerates at
//! `g (sin θ − μ_k cos θ)`.
//!
//! Shapes: a plane, a sphere, an oriented box (`R` its rotation, `h` its half extents: with
//! `q = Rᵀ(p − c)` and `d = |q| − h`, outside `φ = |max(d, 0)|` with the normal along
//! `max(d, 0) · sign(q)`, inside `φ = max_k d_k < 0` with the normal along that axis) and a
//! capsule (`φ = |p − closest point of segment a–b| − R`).

pub mod box_grid;
pub mod bvh;
pub mod clearance;
pub mod edge_edge;
pub mod edge_sides;
pub mod features;
pub mod inside_objects;
pub mod intersections;
pub mod near_lists;
pub mod neighbours;
pub mod node_box;
pub mod particles;
pub mod point_triangle;
pub mod rest_close;
pub mod spatial_hash;
pub mod stencil;
pub mod surface_depth;
pub mod tessellate;
pub mod triangle_sides;
pub mod wide_bvh;
pub mod wide_nearest;

use crate::animation::{Animation, Pose};
use glam::DVec3;
use wide_nearest::Closest;

#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// Half-space above the plane through `point` with unit `normal`.
    Plane { point: DVec3, normal: DVec3 },
    /// Solid ball.
    Sphere { center: DVec3, radius: f64 },
    /// Solid box: centre, rotation (local → world) and half extents.
    Box {
        center: DVec3,
        rotation: glam::DMat3,
        half: DVec3,
    },
    /// Solid capsule: the points within `radius` of the segment `a`–`b`.
    Capsule { a: DVec3, b: DVec3, radius: f64 },
    /// A triangle mesh ([`Collider::mesh`] holds it; distances go through [`MeshPose`]).
    Mesh,
}

/// A mesh collider's geometry: one position list per frame file (one for a static mesh),
/// shared triangles, and the frame rate of the sequence.
#[derive(Debug, Clone, PartialEq)]
pub struct MeshGeometry {
    pub frames: Vec<Vec<DVec3>>,
    pub triangles: Vec<[u32; 3]>,
    pub fps: f64,
}

impl MeshGeometry {
    /// Vertex positions at `time` seconds: linear between frame files, the last one held.
    pub fn positions_at(&self, time: f64, out: &mut Vec<DVec3>) {
        let u = (time * self.fps).max(0.0);
        let i = (u.floor() as usize).min(self.frames.len() - 1);
        let j = (i + 1).min(self.frames.len() - 1);
        let s = if i == j { 0.0 } else { u - i as f64 };
        out.clear();
        out.extend(
            self.frames[i]
                .iter()
                .zip(&self.frames[j])
                .map(|(a, b)| a.lerp(*b, s)),
        );
    }

    /// Whether the mesh moves (several frames).
    pub fn is_sequence(&self) -> bool {
        self.frames.len() > 1
    }
}

/// A point attached to a mesh collider's surface (`pin_to` a mesh): its triangle, the
/// barycentric weights of its nearest point there, and its offset in the triangle's frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SurfaceAttachment {
    pub triangle: u32,
    pub weights: [f64; 3],
    pub offset: DVec3,
}

/// An orthonormal frame of a triangle: along its first edge, across it, and its normal.
fn triangle_frame(positions: &[DVec3], [a, b, c]: [u32; 3]) -> [DVec3; 3] {
    let (a, b, c) = (
        positions[a as usize],
        positions[b as usize],
        positions[c as usize],
    );
    let e1 = (b - a).try_normalize().unwrap_or(DVec3::X);
    let n = (b - a).cross(c - a).try_normalize().unwrap_or(DVec3::Y);
    [e1, n.cross(e1), n]
}

/// Each vertex's corners (`3 t + k`) in the triangles of `mesh`, ascending, and where each
/// vertex's run starts (one more entry than vertices; the vertices of the first frame, which
/// every frame has).
fn corners_by_vertex(mesh: &MeshGeometry) -> (Vec<u32>, Vec<u32>) {
    let vertices = mesh.frames[0].len();
    let mut offsets = vec![0u32; vertices + 1];
    for &corner in mesh.triangles.iter().flatten() {
        offsets[corner as usize + 1] += 1;
    }
    for v in 0..vertices {
        offsets[v + 1] += offsets[v];
    }
    let mut next = offsets.clone();
    let mut corners = vec![0u32; offsets[vertices] as usize];
    for (slot, &corner) in (0u32..).zip(mesh.triangles.iter().flatten()) {
        corners[next[corner as usize] as usize] = slot;
        next[corner as usize] += 1;
    }
    (corners, offsets)
}

/// A mesh collider over one substep: vertices at its start and end (sequence and keys applied)
/// and the tree over its triangles refitted to the end.
#[derive(Debug, Clone)]
pub struct MeshPose {
    pub start: Vec<DVec3>,
    pub end: Vec<DVec3>,
    /// The triangles' boxes at the end pose, and a four-wide tree over them for box queries
    /// (the feature contacts' search, [`features`]; the binary tree's walks took 18 % of
    /// `scenes/dancer.toml`'s instructions, docs/benchmarks.md, "Issue 13: the collider
    /// search on the four-wide tree") and nearest-point queries ([`wide_nearest`]).
    pub triangle_boxes: wide_bvh::BoxTree,
    /// The largest distance a vertex moved in the substep.
    pub max_motion: f64,
    /// How far the mesh has travelled since it was first posed: the sum over the poses of
    /// the largest step a vertex made from the last end pose to this one (infinite once the
    /// vertex count changed). No point of the mesh moved farther between two end poses than
    /// the difference of their travels ([`clearance`]).
    pub travel: f64,
    /// The last end pose, while the next is made.
    previous_end: Vec<DVec3>,
    /// The corners at each vertex, for its angle-weighted pseudo-normal: `3 t + k` for
    /// corner k of triangle t, ascending; vertex v's are
    /// `vertex_corners[vertex_offsets[v]..vertex_offsets[v + 1]]`.
    vertex_corners: Vec<u32>,
    vertex_offsets: Vec<u32>,
    /// Every triangle edge `(min, max)` with its triangle, sorted: the faces beside an edge.
    edges: Vec<([u32; 2], u32)>,
    /// Whether every edge has exactly two faces beside it: a closed surface, whose inside is
    /// known however far from it a point is (`max_penetration` asks it of any depth).
    pub closed: bool,
}

impl MeshPose {
    pub fn new(collider: &Collider, time: f64) -> Option<MeshPose> {
        let mesh = collider.mesh.as_ref()?;
        let (vertex_corners, vertex_offsets) = corners_by_vertex(mesh);
        let edges: Vec<([u32; 2], u32)> = {
            let mut edges: Vec<([u32; 2], u32)> = (mesh.triangles.iter().enumerate())
                .flat_map(|(t, &[a, b, c])| {
                    [[a, b], [b, c], [c, a]].map(|[p, q]| ([p.min(q), p.max(q)], t as u32))
                })
                .collect();
            edges.sort_unstable();
            edges
        };
        let closed = (edges.chunk_by(|e, f| e.0 == f.0)).all(|beside| beside.len() == 2);
        let mut pose = MeshPose {
            start: Vec::new(),
            end: Vec::new(),
            triangle_boxes: wide_bvh::BoxTree::default(),
            max_motion: 0.0,
            travel: 0.0,
            previous_end: Vec::new(),
            vertex_corners,
            vertex_offsets,
            edges,
            closed,
        };
        pose.update(collider, time, time);
        Some(pose)
    }

    /// Attaches point `p` to the nearest triangle at the end pose: barycentric weights of the
    /// nearest point, and `p`'s offset from it in the triangle's own frame.
    pub fn attach(&self, mesh: &MeshGeometry, p: DVec3) -> Option<SurfaceAttachment> {
        let hit = self
            .triangle_boxes
            .tree
            .closest(&self.end, &mesh.triangles, p, f64::INFINITY)?;
        let frame = triangle_frame(&self.end, mesh.triangles[hit.triangle as usize]);
        let offset = p - hit.point;
        Some(SurfaceAttachment {
            triangle: hit.triangle,
            weights: hit.weights,
            offset: DVec3::new(
                offset.dot(frame[0]),
                offset.dot(frame[1]),
                offset.dot(frame[2]),
            ),
        })
    }

    /// Where an attached point is at the end pose: it moves and turns with its triangle.
    pub fn attached_point(&self, mesh: &MeshGeometry, at: &SurfaceAttachment) -> DVec3 {
        let corners = mesh.triangles[at.triangle as usize];
        let base: DVec3 = corners
            .iter()
            .zip(at.weights)
            .map(|(&i, w)| self.end[i as usize] * w)
            .sum();
        let [e1, e2, n] = triangle_frame(&self.end, corners);
        base + e1 * at.offset.x + e2 * at.offset.y + n * at.offset.z
    }

    /// Poses the mesh for the substep from `start` to `end` seconds.
    pub fn update(&mut self, collider: &Collider, start: f64, end: f64) {
        let Some(mesh) = collider.mesh.as_ref() else {
            return;
        };
        std::mem::swap(&mut self.previous_end, &mut self.end);
        for (time, out) in [(start, &mut self.start), (end, &mut self.end)] {
            mesh.positions_at(time, out);
            let pose = collider.pose(time);
            for p in out.iter_mut() {
                *p = pose.apply(*p);
            }
        }
        let end = &self.end;
        let boxes = (mesh.triangles.iter())
            .map(|&[a, b, c]| bvh::bounds([a, b, c].map(|k| end[k as usize]), 0.0));
        let kept = std::mem::take(&mut self.triangle_boxes);
        self.triangle_boxes = wide_bvh::BoxTree::refill(Some(kept), boxes);
        self.max_motion = self
            .start
            .iter()
            .zip(&self.end)
            .fold(0.0, |m, (a, b)| m.max(a.distance(*b)));
        self.travel += match (self.previous_end.len(), self.end.len()) {
            (0, _) => 0.0, // the first pose: nothing was measured against an earlier one
            (before, now) if before == now => (self.previous_end.iter().zip(&self.end))
                .fold(0.0f64, |m, (a, b)| m.max(a.distance_squared(*b)))
                .sqrt(),
            _ => f64::INFINITY,
        };
    }

    /// The unit normal of triangle `corners` at the end pose (`+y` without area).
    fn face_normal(&self, corners: [u32; 3]) -> DVec3 {
        let p = corners.map(|i| self.end[i as usize]);
        (p[1] - p[0])
            .cross(p[2] - p[0])
            .try_normalize()
            .unwrap_or(DVec3::Y)
    }

    /// The angle-weighted pseudo-normal of `vertex` at the end pose (Bærentzen & Aanæs
    /// 2005): its faces' normals, each weighted by the face's angle at the vertex, summed in
    /// the order of the triangles (`+y` without faces or area).
    fn vertex_normal(&self, mesh: &MeshGeometry, vertex: u32) -> DVec3 {
        let v = vertex as usize;
        let slots = self.vertex_offsets[v] as usize..self.vertex_offsets[v + 1] as usize;
        let mut sum = DVec3::ZERO;
        for &slot in &self.vertex_corners[slots] {
            let (corners, k) = (mesh.triangles[slot as usize / 3], slot as usize % 3);
            let p = corners.map(|i| self.end[i as usize]);
            let (u, w) = (p[(k + 1) % 3] - p[k], p[(k + 2) % 3] - p[k]);
            sum += self.face_normal(corners) * u.angle_between(w);
        }
        sum.try_normalize().unwrap_or(DVec3::Y)
    }

    /// The pseudo-normal at the closest feature of a hit: the face normal inside a triangle,
    /// the sum of both faces' normals on an edge, the angle-weighted normal at a vertex. With
    /// it the inside/outside sign is right at edges and corners too, where the normal of
    /// whichever face happened to be found may point the wrong way. Computed for the hit
    /// alone: the dancer's dress hit a vertex 17 521 times over its run, where normals of
    /// every vertex at every substep took 9.8 M `acos` calls on thread 0 while the other
    /// threads waited (docs/benchmarks.md, "Issue 13: collider normals where they are used").
    fn pseudo_normal(&self, mesh: &MeshGeometry, triangle: u32, weights: [f64; 3]) -> DVec3 {
        let corners = mesh.triangles[triangle as usize];
        // Counted, not collected: this runs for every contact with a mesh collider, and a
        // list of the zero weights was an allocation each time.
        let zeros = weights.iter().filter(|&&w| w == 0.0).count();
        match zeros {
            2 => {
                let vertex = (0..3)
                    .find(|&k| weights[k] != 0.0)
                    .expect("one weight left");
                self.vertex_normal(mesh, corners[vertex])
            }
            1 => {
                let edge_free = (0..3)
                    .find(|&k| weights[k] == 0.0)
                    .expect("one weight is zero");
                let (a, b) = (corners[(edge_free + 1) % 3], corners[(edge_free + 2) % 3]);
                let key = [a.min(b), a.max(b)];
                let from = self.edges.partition_point(|e| e.0 < key);
                self.edges[from..]
                    .iter()
                    .take_while(|e| e.0 == key)
                    .map(|e| self.face_normal(mesh.triangles[e.1 as usize]))
                    .sum::<DVec3>()
                    .try_normalize()
                    .unwrap_or(self.face_normal(corners))
            }
            _ => self.face_normal(corners),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Collider {
    pub name: String,
    pub shape: Shape,
    /// Coulomb coefficients: static μ_s (sticking) and dynamic μ_k (sliding).
    pub static_friction: f64,
    pub dynamic_friction: f64,
    /// Restitution e in [0, 1] (Müller et al. 2020).
    pub restitution: f64,
    /// Extra margin, metres, added to the particle radius.
    pub thickness: f64,
    /// Keyframed motion, if any.
    pub animation: Option<Animation>,
    /// The triangles of a mesh collider.
    pub mesh: Option<MeshGeometry>,
}

/// A collider placed where its animation has it at one substep: the shape then, and its
/// poses at the start and end of the substep (to follow a point on its surface).
#[derive(Debug, Clone)]
pub struct PosedCollider<'a> {
    pub collider: &'a Collider,
    pub shape: Shape,
    pub start: Pose,
    pub end: Pose,
    /// The mesh of a mesh collider, posed for the substep.
    pub mesh: Option<&'a MeshPose>,
}

impl Collider {
    /// The point the collider turns about: plane `point`, sphere and box `center`, capsule the
    /// middle of a–b.
    pub fn pivot(&self) -> DVec3 {
        match self.shape {
            Shape::Plane { point, .. } => point,
            Shape::Sphere { center, .. } | Shape::Box { center, .. } => center,
            Shape::Capsule { a, b, .. } => (a + b) * 0.5,
            Shape::Mesh => DVec3::ZERO,
        }
    }

    /// The contact distance between this collider's surface and a particle's centre: the
    /// particle radius (`collision.thickness`) plus the collider's own `thickness`.
    pub fn contact_margin(&self, particle_radius: f64) -> f64 {
        particle_radius + self.thickness
    }

    pub fn pose(&self, time: f64) -> Pose {
        self.animation
            .as_ref()
            .map_or(Pose::IDENTITY, |a| a.pose(time, self.pivot()))
    }

    /// The collider over the substep from `start` to `end` seconds.
    pub fn posed(&self, start: f64, end: f64) -> PosedCollider<'_> {
        let (start, end) = (self.pose(start), self.pose(end));
        let shape = match self.shape {
            Shape::Plane { point, normal } => Shape::Plane {
                point: end.apply(point),
                normal: end.rotation * normal,
            },
            Shape::Sphere { center, radius } => Shape::Sphere {
                center: end.apply(center),
                radius,
            },
            Shape::Box {
                center,
                rotation,
                half,
            } => Shape::Box {
                center: end.apply(center),
                rotation: end.rotation * rotation,
                half,
            },
            Shape::Capsule { a, b, radius } => Shape::Capsule {
                a: end.apply(a),
                b: end.apply(b),
                radius,
            },
            Shape::Mesh => Shape::Mesh,
        };
        PosedCollider {
            collider: self,
            shape,
            start,
            end,
            mesh: None,
        }
    }
}

impl PosedCollider<'_> {
    /// Whether the collider has an animation (without one, its surface never moves).
    pub fn moves(&self) -> bool {
        self.collider.animation.is_some()
    }

    /// How far the collider's surface point at `p` moved during the substep (exactly zero,
    /// without the three pose products, for a collider without animation).
    pub fn surface_motion(&self, p: DVec3) -> DVec3 {
        if !self.moves() {
            return DVec3::ZERO;
        }
        p - self.start.apply(self.end.invert(p))
    }

    /// [`Self::distance`] without the surface's motion: signed distance and outward normal
    /// (for an analytic shape, the shape's formula alone). The fluids' wall term asks it of
    /// every collider for every particle in every iteration. Not inlined: inlined into that
    /// pass it took fewer instructions but 2 % more time (docs/benchmarks.md, "Issue 13: the
    /// fluid hash by rows").
    #[inline(never)]
    pub fn distance_and_normal(&self, p: DVec3, reach: f64) -> Option<(f64, DVec3)> {
        match self.mesh {
            None => Some(self.shape.signed_distance(p)),
            Some(_) => self.distance(p, reach).map(|(d, n, _)| (d, n)),
        }
    }

    /// Signed distance, outward normal and the surface's motion over the substep at `p`.
    /// Analytic shapes always answer; a mesh answers only within `reach` of its surface, with
    /// the side taken from the nearest triangle's winding (one-sided: outward normals).
    pub fn distance(&self, p: DVec3, reach: f64) -> Option<(f64, DVec3, DVec3)> {
        let Some(pose) = self.mesh else {
            let (distance, normal) = self.shape.signed_distance(p);
            return Some((distance, normal, self.surface_motion(p)));
        };
        let mesh = self.collider.mesh.as_ref()?;
        let hit = (pose.triangle_boxes.tree).closest(&pose.end, &mesh.triangles, p, reach)?;
        Some(self.mesh_contact(pose, mesh, p, hit))
    }

    /// How deep `p` is inside the collider's shape (0 outside; the contact margin is not
    /// part of it), for `max_penetration`. A closed mesh is asked at any depth (a point
    /// outside its box is outside it); an open mesh has no inside far from it, and is asked
    /// within `reach` of its surface.
    pub fn depth(&self, p: DVec3, reach: f64) -> f64 {
        let reach = match self.mesh {
            Some(pose) if pose.closed => {
                let holds = (pose.triangle_boxes.tree.root_box())
                    .is_none_or(|(lower, upper)| p.cmpge(lower).all() && p.cmple(upper).all());
                if !holds {
                    return 0.0;
                }
                f64::INFINITY
            }
            _ => reach,
        };
        self.distance(p, reach)
            .map_or(0.0, |(d, _, _)| (-d).max(0.0))
    }

    /// Signed distance, outward normal and surface motion at `p` of a mesh whose nearest
    /// point to `p` is `hit`.
    fn mesh_contact(
        &self,
        pose: &MeshPose,
        mesh: &MeshGeometry,
        p: DVec3,
        hit: Closest,
    ) -> (f64, DVec3, DVec3) {
        let face = pose.pseudo_normal(mesh, hit.triangle, hit.weights);
        let outside = (p - hit.point).dot(face) >= 0.0;
        let towards = (p - hit.point).try_normalize().unwrap_or(face);
        let (distance, normal) = if outside {
            (hit.distance, towards)
        } else {
            (-hit.distance, -towards)
        };
        let corners = mesh.triangles[hit.triangle as usize];
        let motion = corners
            .iter()
            .zip(hit.weights)
            .map(|(&i, w)| (pose.end[i as usize] - pose.start[i as usize]) * w)
            .sum();
        (distance, normal, motion)
    }
}

impl Shape {
    /// Signed distance from the surface (negative inside) and the outward unit normal there.
    #[inline]
    pub fn signed_distance(&self, p: DVec3) -> (f64, DVec3) {
        match *self {
            Shape::Plane { point, normal } => ((p - point).dot(normal), normal),
            Shape::Sphere { center, radius } => ball_distance(p, center, radius),
            Shape::Box {
                center,
                rotation,
                half,
            } => {
                let q = rotation.transpose() * (p - center);
                let sign = DVec3::new(q.x.signum(), q.y.signum(), q.z.signum());
                let d = q.abs() - half;
                let outside = d.max(DVec3::ZERO);
                let outside_length = outside.length();
                if outside_length > 0.0 {
                    (outside_length, rotation * (outside * sign / outside_length))
                } else {
                    let axis = if d.x >= d.y && d.x >= d.z {
                        DVec3::X
                    } else if d.y >= d.z {
                        DVec3::Y
                    } else {
                        DVec3::Z
                    };
                    (d.max_element(), rotation * (axis * sign))
                }
            }
            // A mesh needs its pose: see PosedCollider::distance. Never reached for meshes.
            Shape::Mesh => (f64::INFINITY, DVec3::Y),
            Shape::Capsule { a, b, radius } => {
                let ab = b - a;
                let t = if ab.length_squared() > 0.0 {
                    ((p - a).dot(ab) / ab.length_squared()).clamp(0.0, 1.0)
                } else {
                    0.0
                };
                ball_distance(p, a + ab * t, radius)
            }
        }
    }
}

/// Distance from a ball's surface and the outward normal (+Y at the exact centre, where any
/// direction is as good: deterministic).
fn ball_distance(p: DVec3, center: DVec3, radius: f64) -> (f64, DVec3) {
    let d = p - center;
    let length = d.length();
    let normal = if length > 1e-12 { d / length } else { DVec3::Y };
    (length - radius, normal)
}

impl std::fmt::Display for Collider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = |v: DVec3| format!("({}, {}, {})", v.x, v.y, v.z);
        match self.shape {
            Shape::Plane { point, normal } => {
                write!(f, "plane through {} with normal {}", v(point), v(normal))?
            }
            Shape::Sphere { center, radius } => {
                write!(f, "sphere at {} of radius {radius}", v(center))?
            }
            Shape::Box { center, half, .. } => {
                write!(f, "box at {} of size {}", v(center), v(half * 2.0))?
            }
            Shape::Capsule { a, b, radius } => {
                write!(f, "capsule from {} to {} of radius {radius}", v(a), v(b))?
            }
            Shape::Mesh => {
                let mesh = self.mesh.as_ref().map_or((0, 0, 0), |m| {
                    (m.frames[0].len(), m.triangles.len(), m.frames.len())
                });
                write!(
                    f,
                    "mesh of {} vertices, {} triangles, {} frames",
                    mesh.0, mesh.1, mesh.2
                )?
            }
        }
        write!(
            f,
            ", friction static {} dynamic {}, restitution {}, thickness {}",
            self.static_friction, self.dynamic_friction, self.restitution, self.thickness
        )
    }
}

/// Projects particle position `p` out of a collider with margin `radius` and applies
/// position-level Coulomb friction against the slip since `x_prev` relative to the collider's
/// surface. Returns the contact normal and the surface's motion over the substep when the
/// contact was active. `clearance` is the particle's with this collider where the caller
/// keeps one ([`PosedCollider::distance_near`]; the same answer either way).
#[inline]
pub fn resolve_contact(
    posed: &PosedCollider,
    radius: f64,
    p: &mut DVec3,
    x_prev: DVec3,
    clearance: Option<&mut clearance::Clearance>,
) -> Option<(DVec3, DVec3)> {
    let collider = posed.collider;
    // A mesh is searched as far as this particle, or the mesh, could have moved through the
    // other this substep.
    let reach = 2.0 * radius + p.distance(x_prev) + posed.mesh.map_or(0.0, |m| m.max_motion);
    let (distance, normal, surface) = posed.distance_near(*p, reach, clearance)?;
    let c = distance - radius;
    if c >= 0.0 {
        return None;
    }
    let depth = -c;
    *p += normal * depth;
    let displacement = *p - x_prev - surface;
    let tangential = displacement - normal * displacement.dot(normal);
    let slip = tangential.length();
    if slip > 0.0 {
        *p -= if slip <= collider.static_friction * depth {
            tangential
        } else {
            tangential * ((collider.dynamic_friction * depth) / slip).min(1.0)
        };
    }
    Some((normal, surface))
}

/// Numbers for tests that need many varied inputs without a crate.
#[cfg(test)]
pub(crate) mod test_numbers {
    /// A small deterministic generator (xorshift) of numbers in [0, 1).
    pub struct Numbers(pub u64);

    impl Numbers {
        pub fn next(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
    }
}

#[cfg(test)]
mod tests;
