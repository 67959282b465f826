//! Frame files: one OBJ and/or PLY per object per frame (SPEC §3).
//!
//! Output vertex `k` is input vertex `k` and the topology is the same in every frame, so DCC
//! tools read a sequence as one deforming mesh. Coordinates are written as 32-bit floats
//! (shortest round-trip text in OBJ, IEEE little endian in PLY); the solver runs in f64.
//! `up_axis = "z"` writes `(x, −z, y)`, the usual Y-up → Z-up conversion. When an object tears
//! its vertices split: the new ones follow the others, and PLY carries an `id` per vertex (the
//! input vertex it came from) so DCC tools can follow points. Every file is written
//! crash-safely ([`super::durable`]): a file under its final name is whole.

use super::durable::write_atomically;
use super::naming;
use crate::mesh::vertex_normals;
use crate::model::ObjectLayout;
use crate::scene::types::{Format, UpAxis};
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
}

/// Encodes and writes frame files, reusing its buffers from frame to frame.
pub struct FrameWriter {
    options: FrameOptions,
    buffer: Vec<u8>,
    normals: Vec<DVec3>,
    /// An object's positions and velocities gathered in vertex order, once it has torn.
    gathered_x: Vec<DVec3>,
    gathered_v: Vec<DVec3>,
    /// Per object, the bytes that are the same in every frame (topology never changes).
    constant_parts: Vec<ConstantParts>,
}

/// Encoded once per object: OBJ `vt` lines and `f`/`l` elements, PLY header and face/edge
/// elements. A frame then formats only positions, normals and velocities.
#[derive(Default)]
struct ConstantParts {
    /// The object's `topology_version` these bytes were made for.
    version: u64,
    obj_uvs: Vec<u8>,
    obj_elements: Vec<u8>,
    ply_header: Vec<u8>,
    ply_elements: Vec<u8>,
}

/// Vertex data of one object in one frame, already converted to the output axes.
struct VertexData<'a> {
    positions: &'a [DVec3],
    normals: Option<&'a [DVec3]>,
    velocities: Option<&'a [DVec3]>,
    uvs: Option<&'a [[f64; 2]]>,
    /// Input vertex ids (PLY `id`), for objects that can tear.
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
            normals: Vec::new(),
            gathered_x: Vec::new(),
            gathered_v: Vec::new(),
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
        if self.constant_parts.len() != objects.len() {
            self.constant_parts = objects
                .iter()
                .map(|o| ConstantParts::encode(o, &self.options))
                .collect();
        }
        for (object, constant) in objects.iter().zip(self.constant_parts.iter_mut()) {
            if constant.version != object.topology_version {
                *constant = ConstantParts::encode(object, &self.options);
            }
            let range = object.particles.clone();
            let (positions, velocities) = if object.split_particles.is_empty() {
                (&x[range.clone()], &v[range])
            } else {
                self.gathered_x.clear();
                self.gathered_v.clear();
                for i in object.globals() {
                    self.gathered_x.push(x[i]);
                    self.gathered_v.push(v[i]);
                }
                (&self.gathered_x[..], &self.gathered_v[..])
            };
            let with_normals = self.options.normals && !object.triangles.is_empty();
            if with_normals {
                vertex_normals(positions, &object.triangles, &mut self.normals);
            }
            let data = VertexData {
                positions,
                normals: with_normals.then_some(self.normals.as_slice()),
                velocities: self.options.velocities.then_some(velocities),
                ids: object
                    .tearing
                    .is_some()
                    .then_some(&object.source_vertex[..]),
                uvs: object.topology.uvs.as_deref(),
                up_axis: self.options.up_axis,
            };
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

fn push_f32(out: &mut Vec<u8>, value: f32, ryu: &mut ryu::Buffer) {
    out.push(b' ');
    out.extend_from_slice(ryu.format_finite(value).as_bytes());
}

fn push_index(out: &mut Vec<u8>, index: u32, itoa: &mut itoa::Buffer) {
    out.extend_from_slice(itoa.format(index + 1).as_bytes());
}

impl ConstantParts {
    fn encode(object: &ObjectLayout, options: &FrameOptions) -> Self {
        let topology = &object.topology;
        let with_normals = options.normals && !object.triangles.is_empty();
        let with_uvs = topology.uvs.is_some();
        let mut parts = ConstantParts {
            version: object.topology_version,
            ..ConstantParts::default()
        };
        let mut ryu = ryu::Buffer::new();
        let mut itoa = itoa::Buffer::new();

        for uv in topology.uvs.iter().flatten() {
            parts.obj_uvs.extend_from_slice(b"vt");
            push_f32(&mut parts.obj_uvs, uv[0] as f32, &mut ryu);
            push_f32(&mut parts.obj_uvs, uv[1] as f32, &mut ryu);
            parts.obj_uvs.push(b'\n');
        }
        let out = &mut parts.obj_elements;
        for face in topology.faces() {
            out.push(b'f');
            for &k in face {
                out.push(b' ');
                push_index(out, k, &mut itoa);
                match (with_uvs, with_normals) {
                    (true, true) => {
                        out.push(b'/');
                        push_index(out, k, &mut itoa);
                        out.push(b'/');
                        push_index(out, k, &mut itoa);
                    }
                    (true, false) => {
                        out.push(b'/');
                        push_index(out, k, &mut itoa);
                    }
                    (false, true) => {
                        out.extend_from_slice(b"//");
                        push_index(out, k, &mut itoa);
                    }
                    (false, false) => {}
                }
            }
            out.push(b'\n');
        }
        for &[a, b] in &topology.segments {
            out.extend_from_slice(b"l ");
            push_index(out, a, &mut itoa);
            out.push(b' ');
            push_index(out, b, &mut itoa);
            out.push(b'\n');
        }

        let mut header = format!(
            "ply\nformat binary_little_endian 1.0\ncomment xpbd-sim {} object {}\nelement vertex {}\n\
             property float x\nproperty float y\nproperty float z\n",
            env!("CARGO_PKG_VERSION"),
            object.name,
            object.vertex_count()
        );
        if with_normals {
            header.push_str("property float nx\nproperty float ny\nproperty float nz\n");
        }
        if options.velocities {
            header.push_str("property float vx\nproperty float vy\nproperty float vz\n");
        }
        if with_uvs {
            header.push_str("property float s\nproperty float t\n");
        }
        if object.tearing.is_some() {
            header.push_str("property int id\n");
        }
        if topology.face_count() > 0 {
            header.push_str(&format!(
                "element face {}\nproperty list uchar int vertex_indices\n",
                topology.face_count()
            ));
        }
        if !topology.segments.is_empty() {
            header.push_str(&format!(
                "element edge {}\nproperty int vertex1\nproperty int vertex2\n",
                topology.segments.len()
            ));
        }
        header.push_str("end_header\n");
        parts.ply_header = header.into_bytes();
        let out = &mut parts.ply_elements;
        for face in topology.faces() {
            // Faces have at most MAX_POLYGON_VERTICES (255) corners: enforced on import.
            out.push(face.len() as u8);
            for &k in face {
                out.extend_from_slice(&(k as i32).to_le_bytes());
            }
        }
        for &[a, b] in &topology.segments {
            out.extend_from_slice(&(a as i32).to_le_bytes());
            out.extend_from_slice(&(b as i32).to_le_bytes());
        }
        parts
    }
}

/// OBJ: `o`, `v`, `vt` and `vn` one per vertex, `f i/i/i` polygons, `l a b` segments.
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
    if let Some(normals) = data.normals {
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

/// PLY `binary_little_endian 1.0`: `vertex` (`x y z`, `nx ny nz`, `vx vy vz`, `s t`),
/// `face` (`list uchar int vertex_indices`), `edge` (`int vertex1 vertex2`).
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
