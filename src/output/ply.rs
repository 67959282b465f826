//! PLY frame files (SPEC §3): `binary_little_endian 1.0` with the classic type names.

use super::frame::{FrameOptions, VertexData};
use super::surface::Surface;

/// `list uchar float texcoord`: `u v` per corner (MeshLab's per-wedge texture coordinates).
pub(super) fn constant(
    name: &str,
    surface: &Surface,
    options: &FrameOptions,
    (with_normals, with_density): (bool, bool),
) -> (Vec<u8>, Vec<u8>) {
    let mesh = &surface.mesh;
    let mut header = format!(
        "ply\nformat binary_little_endian 1.0\ncomment xpbd-sim {} object {}\nelement vertex {}\n\
         property float x\nproperty float y\nproperty float z\n",
        env!("CARGO_PKG_VERSION"),
        name,
        surface.vertex_count()
    );
    if with_normals {
        header.push_str("property float nx\nproperty float ny\nproperty float nz\n");
    }
    if options.velocities {
        header.push_str("property float vx\nproperty float vy\nproperty float vz\n");
    }
    if mesh.uvs.is_some() {
        header.push_str("property float s\nproperty float t\n");
    }
    if surface.ids.is_some() {
        header.push_str("property int id\n");
    }
    if with_density {
        header.push_str("property float density\n");
    }
    if mesh.face_count() > 0 {
        header.push_str(&format!(
            "element face {}\nproperty list uchar int vertex_indices\n",
            mesh.face_count()
        ));
        if mesh.corner_uvs.is_some() {
            header.push_str("property list uchar float texcoord\n");
        }
    }
    if !mesh.segments.is_empty() {
        header.push_str(&format!(
            "element edge {}\nproperty int vertex1\nproperty int vertex2\n",
            mesh.segments.len()
        ));
    }
    header.push_str("end_header\n");
    let mut out = Vec::new();
    for window in mesh.face_offsets.windows(2) {
        let corners = window[0] as usize..window[1] as usize;
        // Faces have at most MAX_POLYGON_VERTICES (255) corners: enforced on import; a tube's
        // are quads and triangles. 2 × 255 texcoord floats would not fit a uchar count, so
        // seamed faces over 127 corners are refused on import (`CornerUvs`).
        out.push(corners.len() as u8);
        for &k in &mesh.face_indices[corners.clone()] {
            out.extend_from_slice(&(k as i32).to_le_bytes());
        }
        if let Some(uvs) = &mesh.corner_uvs {
            out.push((2 * corners.len()) as u8);
            for &t in &uvs.corners[corners] {
                let [u, v] = uvs.texcoords[t as usize];
                out.extend_from_slice(&(u as f32).to_le_bytes());
                out.extend_from_slice(&(v as f32).to_le_bytes());
            }
        }
    }
    for &[a, b] in &mesh.segments {
        out.extend_from_slice(&(a as i32).to_le_bytes());
        out.extend_from_slice(&(b as i32).to_le_bytes());
    }
    (header.into_bytes(), out)
}

/// PLY `binary_little_endian 1.0`: `vertex` (`x y z`, `nx ny nz`, `vx vy vz`, `s t`, `id`,
/// fluids' `density`),
/// `face` (`list uchar int vertex_indices`, with seams `list uchar float texcoord`), `edge`
/// (`int vertex1 vertex2`).
pub(super) fn encode(out: &mut Vec<u8>, data: &VertexData, (header, elements): (&[u8], &[u8])) {
    out.extend_from_slice(header);
    let push3 = |out: &mut Vec<u8>, v: [f32; 3]| {
        for c in v {
            out.extend(c.to_le_bytes());
        }
    };
    for k in 0..data.positions.len() {
        push3(out, data.axes(data.positions[k]));
        if let Some(normals) = data.normals {
            push3(out, data.axes(normals[k]));
        }
        if let Some(velocities) = data.velocities {
            push3(out, data.axes(velocities[k]));
        }
        if let Some(uvs) = data.uvs {
            out.extend((uvs[k][0] as f32).to_le_bytes());
            out.extend((uvs[k][1] as f32).to_le_bytes());
        }
        if let Some(ids) = data.ids {
            out.extend((ids[k] as i32).to_le_bytes());
        }
        if let Some(densities) = data.densities {
            out.extend((densities[k] as f32).to_le_bytes());
        }
    }
    out.extend_from_slice(elements);
}
