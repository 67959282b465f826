//! Render meshes (SPEC §5): `render_mesh = "hi.obj"` on a surface object. The fine mesh is read
//! (OBJ or PLY, with its UVs, seams and hard edges), placed with the object's own `scale`,
//! `rotate` and `translate`, and bound at frame 1 to the nearest of the object's triangles
//! ([`crate::mesh::binding`]); the writers carry it with the simulated surface.

use super::build::{place, read_mesh, MeshUse};
use super::types::Object;
use crate::mesh::binding::Binding;
use crate::mesh::Mesh;
use crate::model::RenderMesh;
use crate::quote::quoted;
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::sync::Arc;

/// The object's render mesh bound to its placed rest surface (`surface`, triangulated as
/// `triangles`), or `None` when it has none.
pub fn bind(
    object: &Object,
    base_dir: &Path,
    surface: &Mesh,
    triangles: &[[u32; 3]],
) -> Result<Option<Arc<RenderMesh>>> {
    let Some(name) = &object.render_mesh else {
        return Ok(None);
    };
    let mut mesh = read_mesh(base_dir, name, MeshUse::Surface).context("render_mesh")?;
    if mesh.face_count() == 0 {
        bail!("render_mesh `{}` has no faces", quoted(name));
    }
    if triangles.is_empty() {
        bail!(
            "render_mesh `{}`: the object has no triangles to carry it",
            quoted(name)
        );
    }
    place(&mut mesh, object);
    let limit = crate::mesh::obj::MAX_ABS_COORDINATE;
    if let Some((k, p)) = (mesh.positions.iter().enumerate())
        .find(|(_, p)| !p.is_finite() || p.abs().max_element() > limit)
    {
        bail!(
            "render_mesh `{}`: placement puts vertex {k} at {p}, beyond ±{limit:e} m",
            quoted(name)
        );
    }
    let binding = Binding::bind(&surface.positions, triangles, &mesh.positions);
    mesh.warnings.clear();
    Ok(Some(Arc::new(RenderMesh { mesh, binding })))
}
