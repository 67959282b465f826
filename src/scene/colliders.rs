//! The scene's colliders: analytic shapes (plane, sphere, box, capsule) and mesh colliders,
//! read from one file or from a `{frame}` sequence of files held in memory whole.

use super::build::{animation, read_mesh, MeshUse};
use super::load::LoadedScene;
use super::memory_budget::{ensure_available, human_bytes};
use super::types::{self, ColliderShape};
use crate::animation::rotation;
use crate::collision::{Collider, MeshGeometry, Shape};
use crate::output::naming;
use crate::quote::quoted;
use anyhow::{bail, Context, Result};
use glam::DVec3;
use std::path::Path;

/// Every `[[collider]]` of the scene, in order; a problem names the collider's key path.
pub(super) fn build_all(scene: &LoadedScene) -> Result<Vec<Collider>> {
    let file = &scene.file;
    file.colliders
        .iter()
        .enumerate()
        .map(|(k, c)| {
            collider(c, &scene.base_dir, &file.simulation)
                .with_context(|| format!("collider[{k}] ({})", quoted(&c.name)))
        })
        .collect::<Result<Vec<_>>>()
}

/// A mesh collider's frames: one file, or with `{frame}` in the name a file per output frame,
/// read from `start_frame` on until one is missing (the last is held after it). Every frame
/// is held in memory: once the first is read, the sequence is refused if its frames would not
/// fit in the memory available.
fn mesh_geometry(template: &str, base_dir: &Path, sim: &types::Simulation) -> Result<MeshGeometry> {
    let read = |name: &str| read_mesh(base_dir, name, MeshUse::Surface);
    let mut frames: Vec<Vec<DVec3>> = Vec::new();
    let mut triangles = Vec::new();
    if template.contains("{frame") {
        let last = sim.start_frame + sim.frames.max(1) - 1;
        let name_of = |frame: u64| naming::render(template, "", frame);
        for frame in sim.start_frame..=last {
            let name = name_of(frame);
            if frame > sim.start_frame && !base_dir.join(&name).exists() {
                break;
            }
            let mesh = read(&name).with_context(|| format!("mesh sequence frame {frame}"))?;
            if frames.is_empty() {
                triangles = mesh.triangles();
                if triangles.is_empty() {
                    bail!("mesh: `{}` has no faces to collide with", quoted(&name));
                }
                let count = (sim.start_frame + 1..=last)
                    .take_while(|&f| base_dir.join(name_of(f)).exists())
                    .count() as u64
                    + 1;
                let bytes = (mesh.positions.len() as u64)
                    .saturating_mul(std::mem::size_of::<DVec3>() as u64)
                    .saturating_mul(count);
                ensure_available(bytes, || {
                    format!(
                        "mesh sequence `{}`: {count} frames of {} vertices need about {} \
                         of memory",
                        quoted(template),
                        mesh.positions.len(),
                        human_bytes(bytes)
                    )
                })?;
            } else if mesh.triangles() != triangles || mesh.positions.len() != frames[0].len() {
                bail!("mesh: `{}` does not have the topology of the first frame (same vertices and faces are needed)", quoted(&name));
            }
            frames.push(mesh.positions);
        }
    } else {
        let mesh = read(template).context("mesh")?;
        triangles = mesh.triangles();
        frames.push(mesh.positions);
    }
    if triangles.is_empty() {
        bail!("mesh: `{}` has no faces to collide with", quoted(template));
    }
    Ok(MeshGeometry {
        frames,
        triangles,
        fps: sim.fps,
    })
}

fn collider(c: &types::Collider, base_dir: &Path, sim: &types::Simulation) -> Result<Collider> {
    let (start_frame, fps) = (sim.start_frame, sim.fps);
    let vector = |v: Option<[f64; 3]>| DVec3::from_array(v.unwrap_or_default());
    let shape = match c.shape {
        ColliderShape::Sphere => Shape::Sphere {
            center: vector(c.center),
            radius: c.radius.unwrap_or(1.0),
        },
        ColliderShape::Box => Shape::Box {
            center: vector(c.center),
            rotation: rotation(c.rotate.unwrap_or_default()),
            half: vector(c.size) * 0.5,
        },
        ColliderShape::Capsule => Shape::Capsule {
            a: vector(c.a),
            b: vector(c.b),
            radius: c.radius.unwrap_or(1.0),
        },
        ColliderShape::Plane => Shape::Plane {
            point: vector(c.point),
            normal: DVec3::from_array(c.normal.unwrap_or([0.0, 1.0, 0.0])).normalize(),
        },
        ColliderShape::Mesh => Shape::Mesh,
    };
    let mesh = match (&c.shape, &c.mesh) {
        (ColliderShape::Mesh, Some(template)) => Some(mesh_geometry(template, base_dir, sim)?),
        _ => None,
    };
    Ok(Collider {
        name: c.name.clone(),
        shape,
        mesh,
        animation: animation(&c.keys, start_frame, fps),
        static_friction: c.static_friction.unwrap_or(c.friction),
        dynamic_friction: c.dynamic_friction.unwrap_or(c.friction),
        restitution: c.restitution,
        thickness: c.thickness,
    })
}
