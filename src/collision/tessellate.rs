//! Colliders as triangle meshes, for pictures and caches (preview images, the USD stage), never
//! for contacts: those use the exact shapes of [`super::Shape`].
//!
//! A collider is tessellated where its animation has it at a given time: spheres and capsules
//! as latitude–longitude meshes (`SEGMENTS` around, `SEGMENTS / 2` pole to pole), boxes as
//! their 12 triangles, planes as a square of a given half size around their point, mesh
//! colliders as their own triangles (sequence and keys applied). The vertex count of a
//! collider never changes with time, so a moving collider is one deforming mesh.

use super::{Collider, Shape};
use glam::{DMat3, DVec3};

/// Vertices around a sphere's or capsule's axis.
const SEGMENTS: usize = 24;

/// A collider's surface at one time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ColliderMesh {
    pub positions: Vec<DVec3>,
    pub triangles: Vec<[u32; 3]>,
}

/// Whether the collider moves: keyframes or a mesh sequence.
pub fn moves(collider: &Collider) -> bool {
    collider.animation.is_some() || collider.mesh.as_ref().is_some_and(|m| m.is_sequence())
}

/// `collider` at `time` seconds; planes are squares of half size `plane_half_size` (m).
pub fn tessellate(collider: &Collider, time: f64, plane_half_size: f64) -> ColliderMesh {
    let mut out = ColliderMesh::default();
    match collider.posed(time, time).shape {
        Shape::Sphere { center, radius } => {
            capsule(&mut out, center, center, radius);
        }
        Shape::Capsule { a, b, radius } => capsule(&mut out, a, b, radius),
        Shape::Box {
            center,
            rotation,
            half,
        } => cuboid(&mut out, center, rotation, half),
        Shape::Plane { point, normal } => {
            let (u, v) = tangents(normal);
            let h = plane_half_size;
            for (s, t) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
                out.positions.push(point + u * (s * h) + v * (t * h));
            }
            // Counter-clockwise seen from the normal's side: (u × v) = normal.
            out.triangles.extend([[0, 1, 2], [0, 2, 3]]);
        }
        Shape::Mesh => {
            if let Some(mesh) = &collider.mesh {
                mesh.positions_at(time, &mut out.positions);
                let pose = collider.pose(time);
                for p in &mut out.positions {
                    *p = pose.apply(*p);
                }
                out.triangles.clone_from(&mesh.triangles);
            }
        }
    }
    out
}

/// Two unit vectors with `u × v = normal`.
fn tangents(normal: DVec3) -> (DVec3, DVec3) {
    let n = normal.try_normalize().unwrap_or(DVec3::Y);
    let u = n.any_orthonormal_vector();
    (u, n.cross(u))
}

/// The points within `radius` of the segment a–b (a sphere when a = b): rings of a
/// latitude–longitude sphere, the northern half moved to `b`, the southern to `a`.
fn capsule(out: &mut ColliderMesh, a: DVec3, b: DVec3, radius: f64) {
    let axis = (b - a).try_normalize().unwrap_or(DVec3::Y);
    let (u, v) = tangents(axis);
    // Latitude j of `rings` steps from the south pole (polar angle π) to the north pole (0);
    // the rings are j = 1..=rings/2 around `a` and j = rings/2..rings around `b` (the equator
    // twice, once for each end).
    let rings = SEGMENTS / 2;
    let ring_count = rings;
    out.positions.push(a - axis * radius);
    for r in 0..ring_count {
        let north = r >= rings / 2;
        let j = if north { r } else { r + 1 };
        let polar = std::f64::consts::PI * (1.0 - j as f64 / rings as f64);
        let centre = if north { b } else { a };
        for k in 0..SEGMENTS {
            let azimuth = std::f64::consts::TAU * k as f64 / SEGMENTS as f64;
            let around = u * libm::cos(azimuth) + v * libm::sin(azimuth);
            out.positions
                .push(centre + (around * libm::sin(polar) + axis * libm::cos(polar)) * radius);
        }
    }
    out.positions.push(b + axis * radius);
    let ring_start = |r: usize| 1 + r * SEGMENTS;
    let last = (out.positions.len() - 1) as u32;
    for k in 0..SEGMENTS {
        let next = (k + 1) % SEGMENTS;
        out.triangles.push([0, (1 + next) as u32, (1 + k) as u32]);
        let top = ring_start(ring_count - 1);
        out.triangles
            .push([last, (top + k) as u32, (top + next) as u32]);
        for r in 0..ring_count - 1 {
            let (lo, hi) = (ring_start(r), ring_start(r + 1));
            let (a0, a1, b0, b1) = (lo + k, lo + next, hi + k, hi + next);
            out.triangles.push([a0 as u32, a1 as u32, b1 as u32]);
            out.triangles.push([a0 as u32, b1 as u32, b0 as u32]);
        }
    }
}

/// A box's 8 corners and 12 outward triangles.
fn cuboid(out: &mut ColliderMesh, center: DVec3, rotation: DMat3, half: DVec3) {
    for k in 0..8 {
        let sign = |bit: usize| if k & bit != 0 { 1.0 } else { -1.0 };
        let local = DVec3::new(sign(1) * half.x, sign(2) * half.y, sign(4) * half.z);
        out.positions.push(center + rotation * local);
    }
    // Faces -x, +x, -y, +y, -z, +z as quads of corner indices, counter-clockwise from outside.
    let quads = [
        [0, 4, 6, 2],
        [1, 3, 7, 5],
        [0, 1, 5, 4],
        [2, 6, 7, 3],
        [0, 2, 3, 1],
        [4, 5, 7, 6],
    ];
    for [a, b, c, d] in quads {
        out.triangles.extend([[a, b, c], [a, c, d]]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collider(shape: Shape) -> Collider {
        Collider {
            name: "c".into(),
            shape,
            static_friction: 0.0,
            dynamic_friction: 0.0,
            restitution: 0.0,
            thickness: 0.0,
            animation: None,
            mesh: None,
        }
    }

    /// Every triangle's normal points away from `inside` (a closed convex shape).
    fn assert_outward(mesh: &ColliderMesh, inside: DVec3) {
        for t in &mesh.triangles {
            let [a, b, c] = t.map(|i| mesh.positions[i as usize]);
            let normal = (b - a).cross(c - a);
            if normal.length() > 1e-12 {
                assert!(
                    normal.dot((a + b + c) / 3.0 - inside) > 0.0,
                    "{t:?} faces inward"
                );
            }
        }
    }

    #[test]
    fn spheres_capsules_and_boxes_are_closed_outward_surfaces_of_their_size() {
        let center = DVec3::new(1.0, 2.0, 3.0);
        let sphere = tessellate(
            &collider(Shape::Sphere {
                center,
                radius: 0.5,
            }),
            0.0,
            1.0,
        );
        assert!(sphere
            .positions
            .iter()
            .all(|p| (p.distance(center) - 0.5).abs() < 1e-12));
        assert_outward(&sphere, center);
        let (a, b) = (DVec3::ZERO, DVec3::new(0.0, 2.0, 0.0));
        let capsule = tessellate(&collider(Shape::Capsule { a, b, radius: 0.25 }), 0.0, 1.0);
        let top = capsule
            .positions
            .iter()
            .map(|p| p.y)
            .fold(f64::MIN, f64::max);
        assert!((top - 2.25).abs() < 1e-12);
        assert_outward(&capsule, DVec3::new(0.0, 1.0, 0.0));
        let half = DVec3::new(1.0, 0.5, 0.25);
        let cube = tessellate(
            &collider(Shape::Box {
                center,
                rotation: DMat3::IDENTITY,
                half,
            }),
            0.0,
            1.0,
        );
        assert_eq!((cube.positions.len(), cube.triangles.len()), (8, 12));
        assert_outward(&cube, center);
        for mesh in [&sphere, &capsule, &cube] {
            // Closed: every edge is shared by exactly two triangles, in opposite directions.
            let mut edges: Vec<(u32, u32)> = mesh
                .triangles
                .iter()
                .flat_map(|&[a, b, c]| [(a, b), (b, c), (c, a)])
                .collect();
            edges.sort_unstable();
            for &(p, q) in &edges {
                assert!(edges.binary_search(&(q, p)).is_ok(), "open edge {p}-{q}");
            }
        }
    }

    #[test]
    fn a_plane_is_a_square_facing_its_normal() {
        let normal = DVec3::new(0.0, 1.0, 0.0);
        let plane = tessellate(
            &collider(Shape::Plane {
                point: DVec3::ZERO,
                normal,
            }),
            0.0,
            2.0,
        );
        assert_eq!(plane.positions.len(), 4);
        assert!(plane.positions.iter().all(|p| p.y.abs() < 1e-15));
        assert!(plane
            .positions
            .iter()
            .all(|p| p.x.abs().max(p.z.abs()) <= 2.0 + 1e-12));
        assert_outward(&plane, DVec3::new(0.0, -1.0, 0.0));
    }
}
