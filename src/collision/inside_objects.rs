//! How deep one object's surface sits inside another object: SPEC §5's `max_penetration`
//! counts "the deepest point of any object surface inside a collider or another object".
//!
//! A *solid* is a colliding object with a volume: a closed surface (every edge shared by two
//! faces) or tetrahedra, the objects with a rest volume ([`ObjectLayout::rest_volume`]; not
//! those that can tear). Its surface at the end of the frame is posed as a still mesh
//! collider ([`MeshPose`]), wound outward (by the sign of the volume its faces enclose at
//! rest), and a point's signed distance from it is the distance to its nearest triangle, on
//! the side the angle-weighted pseudo-normal there says (Bærentzen & Aanæs 2005): right for
//! any point, however deep, while the surface does not cross itself.
//!
//! Another colliding object's surface is sampled where it can first go in:
//!
//! - at its free vertices;
//! - at the point of its faces nearest each vertex of the solid, when that face's corners
//!   are all free: a solid's corner pushed through a cloth face between the cloth's vertices
//!   (the sample [`super::features`] takes of a mesh collider's corner). A solid's edge
//!   through a face between both ends' samples is not measured.
//!
//! Its depth is how far inside the solid's surface it is, with no contact margin: particles
//! of different objects keep `2 × thickness` apart as spheres, but their faces do not, so a
//! margin would read the sag of faces between resting particles; what shows in a render is
//! a surface gone under another. Ropes are measured at their vertices, fluids not at all
//! (they have no surface). An object that starts inside a solid (a ball inside a balloon: one
//! of its rest vertices inside the solid's rest surface) is where the user put it, and that
//! pair is not measured.

use super::bvh::bounds;
use super::wide_bvh::BoxTree;
use super::{Collider, MeshGeometry, MeshPose, PosedCollider, Shape};
use crate::model::{Model, ObjectLayout};
use glam::DVec3;

/// A solid's surface at some positions: a mesh collider and its pose.
struct SolidSurface {
    collider: Collider,
    pose: MeshPose,
}

impl SolidSurface {
    /// Object `o`'s surface with its local vertex `k` at `positions[k]`, wound outward.
    fn new(o: &ObjectLayout, positions: Vec<DVec3>) -> Option<SolidSurface> {
        let rest = &o.topology.positions;
        let outward = crate::constraints::volume::enclosed_volume(rest, &o.triangles) >= 0.0;
        let triangles = (o.triangles.iter())
            .map(|&[a, b, c]| if outward { [a, b, c] } else { [a, c, b] })
            .collect();
        let collider = Collider {
            name: o.name.clone(),
            shape: Shape::Mesh,
            static_friction: 0.0,
            dynamic_friction: 0.0,
            restitution: 0.0,
            thickness: 0.0,
            animation: None,
            mesh: Some(MeshGeometry {
                frames: vec![positions],
                triangles,
                fps: 1.0,
            }),
        };
        let pose = MeshPose::new(&collider, 0.0)?;
        Some(SolidSurface { collider, pose })
    }

    /// How deep `p` is inside the surface (0 outside), at any depth: it is closed.
    fn depth(&self, p: DVec3) -> f64 {
        let posed = PosedCollider {
            mesh: Some(&self.pose),
            ..self.collider.posed(0.0, 0.0)
        };
        posed.depth(p, f64::INFINITY)
    }

    /// A box holding the surface.
    fn bounds(&self) -> (DVec3, DVec3) {
        bounds(self.pose.end.iter().copied(), 0.0)
    }
}

/// Per object, the deepest its surface sits inside another colliding object's solid (0 for
/// none); see the module notes.
pub fn depths(model: &Model) -> Vec<f64> {
    let x = &model.particles.x;
    let objects = &model.objects;
    let mut deepest = vec![0.0f64; objects.len()];
    let sampled = |o: &ObjectLayout| o.collide && o.fluid.is_none();
    let solids = (0..objects.len()).filter(|&b| sampled(&objects[b]) && is_solid(&objects[b]));
    for b in solids {
        let solid = &objects[b];
        let others: Vec<usize> = (0..objects.len())
            .filter(|&a| a != b && sampled(&objects[a]))
            .collect();
        if others.is_empty() {
            continue;
        }
        let Some(now) = SolidSurface::new(solid, solid.globals().map(|i| x[i]).collect()) else {
            continue;
        };
        let mut rest = None; // built for the first pair near enough to need it
        let solid_box = now.bounds();
        for a in others {
            let object = &objects[a];
            let reach = bounds(object.globals().map(|i| x[i]), 0.0);
            if !super::bvh::boxes_overlap(reach, solid_box) {
                continue;
            }
            let rest = rest
                .get_or_insert_with(|| SolidSurface::new(solid, solid.topology.positions.clone()));
            let starts_inside = (object.topology.positions.iter())
                .any(|&p| rest.as_ref().is_some_and(|rest| rest.depth(p) > 0.0));
            if !starts_inside {
                deepest[a] = deepest[a].max(surface_depth(model, object, solid, &now));
            }
        }
    }
    deepest
}

/// Whether `o` has a volume another object's surface can be inside.
fn is_solid(o: &ObjectLayout) -> bool {
    o.rest_volume.is_some() && !o.triangles.is_empty()
}

/// The deepest sample of `object`'s surface inside `solid`, posed as `surface`.
fn surface_depth(
    model: &Model,
    object: &ObjectLayout,
    solid: &ObjectLayout,
    surface: &SolidSurface,
) -> f64 {
    let (x, inv_mass) = (&model.particles.x, &model.particles.inv_mass);
    let free = |i: u32| inv_mass[i as usize] > 0.0;
    let vertices = (object.globals())
        .filter(|&i| free(i as u32))
        .fold(0.0f64, |m, i| m.max(surface.depth(x[i])));
    let faces: Vec<[u32; 3]> = object.global_triangles().collect();
    if faces.is_empty() {
        return vertices;
    }
    let face_boxes = faces.iter().map(|t| bounds(t.map(|i| x[i as usize]), 0.0));
    let tree = BoxTree::refill(None, face_boxes);
    (solid.globals())
        .map(|i| x[i])
        .filter_map(|q| tree.tree.closest(x, &faces, q, f64::INFINITY))
        .filter(|hit| faces[hit.triangle as usize].iter().all(|&i| free(i)))
        .fold(vertices, |m, hit| m.max(surface.depth(hit.point)))
}
