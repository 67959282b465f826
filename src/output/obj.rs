//! OBJ frame files (SPEC §3): `o`, `v`, `vt`, `vn`, `f v/vt/vn` polygons, `l a b` segments.
//! Floats are the shortest text that reads back to the same `f32`.

use super::frame::VertexData;
use super::surface::Surface;

fn push_f32(out: &mut Vec<u8>, value: f32, ryu: &mut ryu::Buffer) {
    out.push(b' ');
    out.extend_from_slice(ryu.format_finite(value).as_bytes());
}

fn push_index(out: &mut Vec<u8>, index: u32, itoa: &mut itoa::Buffer) {
    out.extend_from_slice(itoa.format(index + 1).as_bytes());
}

/// OBJ `vt` lines, and the `f` and `l` elements. A corner is `v/vt/vn` with `vt` the
/// vertex's own (one per `v`) or, with UV seams, the corner's index into the input's `vt`
/// list; `vn` the vertex's own or, with hard edges, the corner's normal slot.
pub(super) fn constant(surface: &Surface, with_normals: bool) -> (Vec<u8>, Vec<u8>) {
    let mesh = &surface.mesh;
    let mut ryu = ryu::Buffer::new();
    let mut itoa = itoa::Buffer::new();
    let mut uvs = Vec::new();
    let texcoords = match &mesh.corner_uvs {
        Some(corner_uvs) => Some(&corner_uvs.texcoords),
        None => mesh.uvs.as_ref(),
    };
    for uv in texcoords.into_iter().flatten() {
        uvs.extend_from_slice(b"vt");
        push_f32(&mut uvs, uv[0] as f32, &mut ryu);
        push_f32(&mut uvs, uv[1] as f32, &mut ryu);
        uvs.push(b'\n');
    }
    let with_uvs = texcoords.is_some();
    let mut out = Vec::new();
    for window in mesh.face_offsets.windows(2) {
        out.push(b'f');
        for c in window[0] as usize..window[1] as usize {
            let v = mesh.face_indices[c];
            let vt = mesh.corner_uvs.as_ref().map_or(v, |uvs| uvs.corners[c]);
            let vn = surface.slots.as_ref().map_or(v, |s| s.slot_of_corner[c]);
            out.push(b' ');
            push_index(&mut out, v, &mut itoa);
            if with_uvs || with_normals {
                out.push(b'/');
            }
            if with_uvs {
                push_index(&mut out, vt, &mut itoa);
            }
            if with_normals {
                out.push(b'/');
                push_index(&mut out, vn, &mut itoa);
            }
        }
        out.push(b'\n');
    }
    for &[a, b] in &mesh.segments {
        out.extend_from_slice(b"l ");
        push_index(&mut out, a, &mut itoa);
        out.push(b' ');
        push_index(&mut out, b, &mut itoa);
        out.push(b'\n');
    }
    (uvs, out)
}

/// OBJ: `o`, `v`, `vt`, `vn`, `f v/vt/vn` polygons, `l a b` segments.
pub(super) fn encode(
    out: &mut Vec<u8>,
    name: &str,
    data: &VertexData,
    (uvs, elements): (&[u8], &[u8]),
) {
    let mut ryu = ryu::Buffer::new();
    out.extend_from_slice(b"# xpbd-sim ");
    out.extend_from_slice(env!("CARGO_PKG_VERSION").as_bytes());
    out.extend_from_slice(b"\no ");
    out.extend_from_slice(name.as_bytes());
    out.push(b'\n');
    for &p in data.positions {
        out.push(b'v');
        for c in data.axes(p) {
            push_f32(out, c, &mut ryu);
        }
        out.push(b'\n');
    }
    out.extend_from_slice(uvs);
    if let Some(normals) = data.obj_normals {
        for &n in normals {
            out.extend_from_slice(b"vn");
            for c in data.axes(n) {
                push_f32(out, c, &mut ryu);
            }
            out.push(b'\n');
        }
    }
    out.extend_from_slice(elements);
}
