//! Frame files: one OBJ and/or PLY per object per frame (SPEC §3).
//!
//! What is written per object is its [`Surface`]: for most objects output vertex `k` is input
//! vertex `k`; tetrahedral objects write their boundary nodes only and ropes may become tubes.
//! The topology is the same in every frame, so DCC tools read a sequence as one deforming
//! mesh. Coordinates are written as 32-bit floats (shortest round-trip text in OBJ, IEEE little
//! endian in PLY); the solver runs in f64. `up_axis = "z"` writes `(x, −z, y)`, the usual Y-up →
//! Z-up conversion. When an object tears its vertices split: the new ones follow the others,
//! and PLY carries an `id` per vertex (the input vertex it came from) so DCC tools can follow
//! points. UV seams and hard edges of the input are kept per face corner in OBJ
//! ([`crate::mesh::normals`]). Every file is written crash-safely ([`super::durable`]): a file
//! under its final name is whole.

use super::durable::write_atomically;
use super::naming;
use super::surface::Surface;
use crate::mesh::normals::{slot_normals, vertex_normals};
use crate::model::ObjectLayout;
use crate::scene::types::{Format, RopeTube, UpAxis};
use anyhow::Result;
use glam::DVec3;
use std::path::PathBuf;

/// What to write for every frame.
#[derive(Debug, Clone)]
pub struct FrameOptions {
    pub dir: PathBuf,
    pub formats: Vec<Format>,
    pub name_template: String,
    pub normals: bool,
    pub velocities: bool,
    pub up_axis: UpAxis,
    /// Write ropes as tubes (`output.rope_tube`).
    pub rope_tube: Option<RopeTube>,
}

impl FrameOptions {
    /// Whether frames have files at all (`--no-output` and `formats = []` write none).
    pub fn writes_files(&self) -> bool {
        !self.formats.is_empty()
    }
}

/// Encodes and writes frame files, reusing its buffers from frame to frame.
pub struct FrameWriter {
    options: FrameOptions,
    buffer: Vec<u8>,
    scratch: Scratch,
    /// Per object, the bytes that are the same in every frame (topology never changes), for
    /// the formats written.
    constant_parts: Vec<ConstantParts>,
}

/// Per-frame vertex buffers, reused.
#[derive(Default)]
struct Scratch {
    /// Smooth per-vertex normals (PLY, and OBJ without hard edges).
    normals: Vec<DVec3>,
    /// Normals per slot, for OBJ with hard edges.
    split_normals: Vec<DVec3>,
    /// An object's positions and velocities gathered in vertex order, once it has torn.
    gathered_x: Vec<DVec3>,
    gathered_v: Vec<DVec3>,
    /// Positions and velocities of the output vertices when they are not the object's own.
    surface_x: Vec<DVec3>,
    surface_v: Vec<DVec3>,
}

/// Encoded once per object: OBJ `vt` lines and `f`/`l` elements, PLY header and face/edge
/// elements. A frame then formats only positions, normals and velocities.
struct ConstantParts {
    /// The object's `topology_version` these bytes were made for.
    version: u64,
    surface: Surface,
    obj_uvs: Vec<u8>,
    obj_elements: Vec<u8>,
    ply_header: Vec<u8>,
    ply_elements: Vec<u8>,
}

/// Vertex data of one object in one frame, already converted to the output axes.
struct VertexData<'a> {
    positions: &'a [DVec3],
    /// Per vertex (PLY).
    normals: Option<&'a [DVec3]>,
    /// Per normal slot: what OBJ writes as `vn` (the per-vertex ones without hard edges).
    obj_normals: Option<&'a [DVec3]>,
    velocities: Option<&'a [DVec3]>,
    uvs: Option<&'a [[f64; 2]]>,
    /// Input vertex ids (PLY `id`).
    ids: Option<&'a [u32]>,
    up_axis: UpAxis,
}

impl VertexData<'_> {
    fn axes(&self, v: DVec3) -> [f32; 3] {
        match self.up_axis {
            UpAxis::Y => [v.x as f32, v.y as f32, v.z as f32],
            UpAxis::Z => [v.x as f32, -v.z as f32, v.y as f32],
        }
    }
}

impl FrameWriter {
    pub fn new(options: FrameOptions) -> Self {
        FrameWriter {
            options,
            buffer: Vec::new(),
            scratch: Scratch::default(),
            constant_parts: Vec::new(),
        }
    }

    pub fn options(&self) -> &FrameOptions {
        &self.options
    }

    /// Whether every file of frame `frame` (each object, each format) exists.
    pub fn frame_on_disk(&self, objects: &[ObjectLayout], frame: u64) -> bool {
        objects.iter().all(|object| {
            let stem = naming::render(&self.options.name_template, &object.name, frame);
            self.options.formats.iter().all(|format| {
                let name = format!("{stem}.{}", format.extension());
                self.options.dir.join(name).is_file()
            })
        })
    }

    /// Writes every object as frame number `frame` from the positions `x` and velocities `v`
    /// of all particles; returns the bytes written.
    pub fn write_frame(
        &mut self,
        objects: &[ObjectLayout],
        x: &[DVec3],
        v: &[DVec3],
        frame: u64,
    ) -> Result<u64> {
        let mut bytes = 0;
        if !self.options.writes_files() {
            return Ok(bytes);
        }
        if self.constant_parts.len() != objects.len() {
            self.constant_parts = objects
                .iter()
                .map(|o| ConstantParts::encode(o, &self.options))
                .collect();
        }
        for (k, object) in objects.iter().enumerate() {
            if self.constant_parts[k].version != object.topology_version {
                self.constant_parts[k] = ConstantParts::encode(object, &self.options);
            }
            let constant = &self.constant_parts[k];
            let data = self
                .scratch
                .vertex_data(&self.options, object, &constant.surface, x, v);
            let stem = naming::render(&self.options.name_template, &object.name, frame);
            for &format in &self.options.formats {
                self.buffer.clear();
                match format {
                    Format::Obj => encode_obj(&mut self.buffer, object, &data, constant),
                    Format::Ply => encode_ply(&mut self.buffer, &data, constant),
                }
                let path = self
                    .options
                    .dir
                    .join(format!("{stem}.{}", format.extension()));
                write_atomically(&path, &self.buffer)?;
                bytes += self.buffer.len() as u64;
            }
        }
        Ok(bytes)
    }
}

impl Scratch {
    /// An object's output vertices for this frame: positions and velocities through its
    /// surface's `source`, normals (per vertex, and per slot where it has hard edges).
    fn vertex_data<'a>(
        &'a mut self,
        options: &FrameOptions,
        object: &ObjectLayout,
        surface: &'a Surface,
        x: &'a [DVec3],
        v: &'a [DVec3],
    ) -> VertexData<'a> {
        let Scratch {
            normals,
            split_normals,
            gathered_x,
            gathered_v,
            surface_x,
            surface_v,
        } = self;
        let range = object.particles.clone();
        let (local_x, local_v) = if object.split_particles.is_empty() {
            (&x[range.clone()], &v[range])
        } else {
            gathered_x.clear();
            gathered_v.clear();
            for i in object.globals() {
                gathered_x.push(x[i]);
                gathered_v.push(v[i]);
            }
            (&gathered_x[..], &gathered_v[..])
        };
        let faces = &surface.mesh;
        let with_normals = options.normals && faces.face_count() > 0;
        let (positions, velocities) = if surface.identity {
            (local_x, local_v)
        } else {
            surface_v.clear();
            surface_v.extend(surface.source.iter().map(|&i| local_v[i as usize]));
            if let Some(tube) = &surface.tube {
                tube.frame(local_x, surface_x, normals);
            } else {
                surface_x.clear();
                surface_x.extend(surface.source.iter().map(|&i| local_x[i as usize]));
            }
            (&surface_x[..], &surface_v[..])
        };
        if with_normals && surface.tube.is_none() {
            let (indices, offsets) = (&faces.face_indices, &faces.face_offsets);
            vertex_normals(positions, indices, offsets, normals);
            if let Some(slots) = &surface.slots {
                slot_normals(positions, indices, offsets, slots, normals, split_normals);
            }
        }
        let normals = with_normals.then_some(&normals[..]);
        VertexData {
            positions,
            normals,
            obj_normals: match &surface.slots {
                Some(_) if with_normals => Some(&split_normals[..]),
                _ => normals,
            },
            velocities: options.velocities.then_some(velocities),
            ids: surface.ids.as_deref(),
            uvs: faces.uvs.as_deref(),
            up_axis: options.up_axis,
        }
    }
}

fn push_f32(out: &mut Vec<u8>, value: f32, ryu: &mut ryu::Buffer) {
    out.push(b' ');
    out.extend_from_slice(ryu.format_finite(value).as_bytes());
}

fn push_index(out: &mut Vec<u8>, index: u32, itoa: &mut itoa::Buffer) {
    out.extend_from_slice(itoa.format(index + 1).as_bytes());
}

impl ConstantParts {
    fn encode(object: &ObjectLayout, options: &FrameOptions) -> Self {
        let surface = Surface::new(object, options.rope_tube.as_ref());
        let with_normals = options.normals && surface.mesh.face_count() > 0;
        let (obj_uvs, obj_elements) = if options.formats.contains(&Format::Obj) {
            obj_constant(&surface, with_normals)
        } else {
            Default::default()
        };
        let (ply_header, ply_elements) = if options.formats.contains(&Format::Ply) {
            ply_constant(object, &surface, options, with_normals)
        } else {
            Default::default()
        };
        ConstantParts {
            version: object.topology_version,
            surface,
            obj_uvs,
            obj_elements,
            ply_header,
            ply_elements,
        }
    }
}

/// OBJ `vt` lines, and the `f` and `l` elements. A corner is `v/vt/vn` with `vt` the
/// vertex's own (one per `v`) or, with UV seams, the corner's index into the input's `vt`
/// list; `vn` the vertex's own or, with hard edges, the corner's normal slot.
fn obj_constant(surface: &Surface, with_normals: bool) -> (Vec<u8>, Vec<u8>) {
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

/// The PLY header, and the `face` and `edge` elements. With UV seams each face also carries
/// `list uchar float texcoord`: `u v` per corner (MeshLab's per-wedge texture coordinates).
fn ply_constant(
    object: &ObjectLayout,
    surface: &Surface,
    options: &FrameOptions,
    with_normals: bool,
) -> (Vec<u8>, Vec<u8>) {
    let mesh = &surface.mesh;
    let mut header = format!(
        "ply\nformat binary_little_endian 1.0\ncomment xpbd-sim {} object {}\nelement vertex {}\n\
         property float x\nproperty float y\nproperty float z\n",
        env!("CARGO_PKG_VERSION"),
        object.name,
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

/// OBJ: `o`, `v`, `vt`, `vn`, `f v/vt/vn` polygons, `l a b` segments.
fn encode_obj(
    out: &mut Vec<u8>,
    object: &ObjectLayout,
    data: &VertexData,
    constant: &ConstantParts,
) {
    let mut ryu = ryu::Buffer::new();
    out.extend_from_slice(b"# xpbd-sim ");
    out.extend_from_slice(env!("CARGO_PKG_VERSION").as_bytes());
    out.extend_from_slice(b"\no ");
    out.extend_from_slice(object.name.as_bytes());
    out.push(b'\n');
    for &p in data.positions {
        out.push(b'v');
        for c in data.axes(p) {
            push_f32(out, c, &mut ryu);
        }
        out.push(b'\n');
    }
    out.extend_from_slice(&constant.obj_uvs);
    if let Some(normals) = data.obj_normals {
        for &n in normals {
            out.extend_from_slice(b"vn");
            for c in data.axes(n) {
                push_f32(out, c, &mut ryu);
            }
            out.push(b'\n');
        }
    }
    out.extend_from_slice(&constant.obj_elements);
}

/// PLY `binary_little_endian 1.0`: `vertex` (`x y z`, `nx ny nz`, `vx vy vz`, `s t`, `id`),
/// `face` (`list uchar int vertex_indices`, with seams `list uchar float texcoord`), `edge`
/// (`int vertex1 vertex2`).
fn encode_ply(out: &mut Vec<u8>, data: &VertexData, constant: &ConstantParts) {
    out.extend_from_slice(&constant.ply_header);
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
    }
    out.extend_from_slice(&constant.ply_elements);
}
