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
use super::preview::{PreviewShot, Previewer};
use super::run_files::{self, RecordLayout, RunFileOptions, RunFiles};
use super::stage::StageOptions;
use super::surface::Surface;
use super::{obj, ply};
use crate::mesh::fluid_surface::FluidSurfaceMesh;
use crate::mesh::normals::{slot_normals, vertex_normals};
use crate::model::{render_name, surface_name, Model, ObjectLayout};
use crate::scene::types::{Format, RopeTube, SceneFile, UpAxis};
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
    /// The first frame's number and the frame rate (whole-run files record times).
    pub start_frame: u64,
    pub fps: f64,
    /// Frames between checkpoints: whole-run files are rewritten at some of them (0: at the
    /// end).
    pub checkpoint_every: u64,
    /// Frames in the whole shot (`simulation.frames`).
    pub frames: u64,
    /// The USD stage's name (the scene file's stem), rope width and moving colliders.
    pub stage: StageOptions,
}

impl FrameOptions {
    /// What a run of the scene `file` writes into `dir`.
    pub fn for_scene(file: &SceneFile, dir: PathBuf, stage: StageOptions) -> Self {
        FrameOptions {
            dir,
            formats: file.output.formats.clone(),
            name_template: file.output.name.clone(),
            normals: file.output.normals,
            velocities: file.output.velocities,
            up_axis: file.output.up_axis,
            rope_tube: file.output.rope_tube.clone(),
            start_frame: file.simulation.start_frame,
            fps: file.simulation.fps,
            checkpoint_every: file.output.checkpoint_every,
            frames: file.simulation.frames,
            stage,
        }
    }

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
    /// The whole-run files (MDD, PC2, USD) and their spool, once
    /// [`FrameWriter::open_run_files`] opened them.
    run_files: Option<RunFiles>,
    /// Preview images, once [`FrameWriter::open_preview`] set them up.
    previewer: Option<Previewer>,
    /// A preview frame's positions of every written mesh, in the written axes.
    preview_positions: Vec<Vec<[f32; 3]>>,
}

/// One mesh the writers write: an object's surface, or its render mesh.
#[derive(Debug, Clone, PartialEq)]
struct WrittenMesh {
    /// The object it belongs to.
    object: usize,
    /// The name its files carry: the object's, or `<object>_render`.
    name: String,
    /// Whether it is the object's render mesh.
    render: bool,
}

/// Every written mesh, in order: each object, then its render mesh if it has one.
fn written_meshes(objects: &[ObjectLayout]) -> Vec<WrittenMesh> {
    let mut meshes = Vec::new();
    for (k, object) in objects.iter().enumerate() {
        let surface = (k, object.name.clone(), false);
        let render = (object.render.is_some()).then(|| (k, render_name(&object.name), true));
        for (object, name, render) in std::iter::once(surface).chain(render) {
            meshes.push(WrittenMesh {
                object,
                name,
                render,
            });
        }
    }
    meshes
}

impl WrittenMesh {
    /// What this mesh's files hold.
    fn surface(&self, objects: &[ObjectLayout], options: &FrameOptions) -> Surface {
        let object = &objects[self.object];
        match &object.render {
            Some(render) if self.render => Surface::render(render),
            _ => Surface::new(object, options.rope_tube.as_ref()),
        }
    }
}

/// Per-frame vertex buffers, reused.
#[derive(Default)]
struct Scratch {
    /// Smooth per-vertex normals (PLY, and OBJ without hard edges).
    pub(super) normals: Vec<DVec3>,
    /// Normals per slot, for OBJ with hard edges.
    split_normals: Vec<DVec3>,
    /// An object's positions and velocities gathered in vertex order, once it has torn.
    gathered_x: Vec<DVec3>,
    gathered_v: Vec<DVec3>,
    /// Positions and velocities of the output vertices when they are not the object's own.
    surface_x: Vec<DVec3>,
    surface_v: Vec<DVec3>,
    /// A fluid object's particle densities (PLY `density`).
    densities: Vec<f64>,
}

/// Encoded once per written mesh: OBJ `vt` lines and `f`/`l` elements, PLY header and
/// face/edge elements. A frame then formats only positions, normals and velocities.
struct ConstantParts {
    mesh: WrittenMesh,
    /// The object's `topology_version` these bytes were made for.
    version: u64,
    surface: Surface,
    obj_uvs: Vec<u8>,
    obj_elements: Vec<u8>,
    ply_header: Vec<u8>,
    ply_elements: Vec<u8>,
}

/// Vertex data of one object in one frame, already converted to the output axes.
pub(super) struct VertexData<'a> {
    pub(super) positions: &'a [DVec3],
    /// Per vertex (PLY).
    pub(super) normals: Option<&'a [DVec3]>,
    /// Per normal slot: what OBJ writes as `vn` (the per-vertex ones without hard edges).
    pub(super) obj_normals: Option<&'a [DVec3]>,
    pub(super) velocities: Option<&'a [DVec3]>,
    pub(super) uvs: Option<&'a [[f64; 2]]>,
    /// Input vertex ids (PLY `id`).
    pub(super) ids: Option<&'a [u32]>,
    /// Fluids: each particle's SPH density, kg/m³ (PLY `density`).
    pub(super) densities: Option<&'a [f64]>,
    pub(super) up_axis: UpAxis,
}

impl VertexData<'_> {
    pub(super) fn axes(&self, v: DVec3) -> [f32; 3] {
        written_axes(self.up_axis, v)
    }
}

/// `v` in the written axes, as `f32`: `up_axis = "z"` writes `(x, −z, y)`.
pub(super) fn written_axes(up_axis: UpAxis, v: DVec3) -> [f32; 3] {
    match up_axis {
        UpAxis::Y => [v.x as f32, v.y as f32, v.z as f32],
        UpAxis::Z => [v.x as f32, -v.z as f32, v.y as f32],
    }
}

impl FrameWriter {
    pub fn new(options: FrameOptions) -> Self {
        FrameWriter {
            options,
            buffer: Vec::new(),
            scratch: Scratch::default(),
            constant_parts: Vec::new(),
            run_files: None,
            previewer: None,
            preview_positions: Vec::new(),
        }
    }

    /// Every written mesh of `objects`: its name and what its files hold.
    pub fn written_meshes(&self, objects: &[ObjectLayout]) -> Vec<(String, Surface)> {
        let meshes = written_meshes(objects).into_iter();
        meshes
            .map(|m| {
                let surface = m.surface(objects, &self.options);
                (m.name, surface)
            })
            .collect()
    }

    /// Writes a preview image of every frame `shot` asks for (when frames have files).
    pub fn open_preview(&mut self, shot: &PreviewShot, model: &Model) {
        if !self.options.writes_files() {
            return;
        }
        let surfaces = self.surfaces(&model.objects);
        let surfaces: Vec<&Surface> = surfaces.iter().collect();
        self.previewer = Some(Previewer::new(shot, model, &surfaces));
    }

    /// Every written mesh's surface, as the whole-run files hold it.
    fn surfaces(&self, objects: &[ObjectLayout]) -> Vec<Surface> {
        let meshes = written_meshes(objects).into_iter();
        meshes.map(|m| m.surface(objects, &self.options)).collect()
    }

    fn run_file_formats(&self) -> Vec<Format> {
        let formats = self.options.formats.iter();
        formats.copied().filter(|f| !f.per_frame()).collect()
    }

    /// Opens the spool of the whole-run formats (when any is asked for), keeping its first
    /// `keep` frames: the ones before the checkpoint a resumed run continues from.
    pub fn open_run_files(&mut self, objects: &[ObjectLayout], keep: u64) -> Result<()> {
        let formats = self.run_file_formats();
        if formats.is_empty() {
            return Ok(());
        }
        let options = RunFileOptions {
            dir: self.options.dir.clone(),
            formats,
            start_frame: self.options.start_frame,
            fps: self.options.fps,
            publish_every: self.options.checkpoint_every,
            shot_frames: self.options.frames,
            stage: self.options.stage.clone(),
        };
        let surfaces = self.surfaces(objects);
        let meshes = written_meshes(objects);
        let names: Vec<&str> = meshes.iter().map(|m| m.name.as_str()).collect();
        let surfaces: Vec<&Surface> = surfaces.iter().collect();
        let layouts = self.record_layouts(&surfaces);
        let files = RunFiles::open(options, &names, &surfaces, &layouts, keep)?;
        self.run_files = Some(files);
        Ok(())
    }

    /// How many frames from the first the whole-run files can be remade with (every frame
    /// when there are none).
    pub fn spooled_frames(&self, objects: &[ObjectLayout]) -> u64 {
        if self.run_file_formats().is_empty() {
            return u64::MAX;
        }
        let surfaces = self.surfaces(objects);
        let layouts = self.record_layouts(&surfaces.iter().collect::<Vec<_>>());
        run_files::frames_on_disk(&self.options.dir, &layouts)
    }

    /// What each written mesh's spool records hold.
    fn record_layouts(&self, surfaces: &[&Surface]) -> Vec<RecordLayout> {
        let (formats, o) = (self.run_file_formats(), &self.options);
        let layout = |s: &&Surface| RecordLayout::new(s, &formats, o.velocities, o.normals);
        surfaces.iter().map(layout).collect()
    }

    /// Rewrites the whole-run files with every frame written so far (at the end of a run,
    /// however it ended). Returns the bytes written.
    pub fn finish(&mut self) -> Result<u64> {
        self.run_files
            .as_mut()
            .map_or(Ok(0), |files| files.publish())
    }

    pub fn options(&self) -> &FrameOptions {
        &self.options
    }

    /// Whether every frame file of frame `frame` (each written mesh and fluid surface, each
    /// per-frame format) exists.
    pub fn frame_on_disk(&self, objects: &[ObjectLayout], frame: u64) -> bool {
        let meshes = written_meshes(objects).into_iter().map(|m| m.name);
        let surfaces = (objects.iter())
            .filter(|o| o.fluid_surface.is_some())
            .map(|o| surface_name(&o.name));
        meshes.chain(surfaces).all(|name| {
            let stem = naming::render(&self.options.name_template, &name, frame);
            let mut formats = self.options.formats.iter().filter(|f| f.per_frame());
            formats.all(|format| {
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
        let meshes = written_meshes(objects);
        if self.constant_parts.len() != meshes.len() {
            self.constant_parts = (meshes.iter().cloned())
                .map(|m| ConstantParts::encode(m, objects, &self.options))
                .collect();
        }
        for (k, mesh) in meshes.into_iter().enumerate() {
            let object = &objects[mesh.object];
            if self.constant_parts[k].version != object.topology_version
                || self.constant_parts[k].mesh != mesh
            {
                self.constant_parts[k] = ConstantParts::encode(mesh, objects, &self.options);
            }
            let constant = &self.constant_parts[k];
            let data = self
                .scratch
                .vertex_data(&self.options, object, &constant.surface, x, v);
            if let Some(run_files) = &mut self.run_files {
                run_files.record(k, &data);
            }
            if self.previewer.as_ref().is_some_and(|p| p.wants(frame)) {
                self.preview_positions.resize(k + 1, Vec::new());
                let positions = &mut self.preview_positions[k];
                positions.clear();
                positions.extend(data.positions.iter().map(|&p| data.axes(p)));
            }
            let name = &constant.mesh.name;
            let stem = naming::render(&self.options.name_template, name, frame);
            for &format in &self.options.formats {
                self.buffer.clear();
                match format {
                    Format::Obj => obj::encode(
                        &mut self.buffer,
                        name,
                        &data,
                        (&constant.obj_uvs, &constant.obj_elements),
                    ),
                    Format::Ply => ply::encode(
                        &mut self.buffer,
                        &data,
                        (&constant.ply_header, &constant.ply_elements),
                    ),
                    _ => continue, // whole-run formats: spooled above
                }
                let path = self
                    .options
                    .dir
                    .join(format!("{stem}.{}", format.extension()));
                write_atomically(&path, &self.buffer)?;
                bytes += self.buffer.len() as u64;
            }
        }
        if let Some(previewer) = self.previewer.as_ref().filter(|p| p.wants(frame)) {
            bytes += previewer.write(frame, &self.preview_positions)?;
        }
        if let Some(run_files) = &mut self.run_files {
            bytes += run_files.end_frame()?;
        }
        Ok(bytes)
    }
}

impl FrameWriter {
    /// Writes each fluid surface as `<object>_surface` in the per-frame formats (its topology
    /// is new every frame, so the whole-run formats, which need one topology, leave it out);
    /// returns the bytes written.
    pub fn write_fluid_surfaces(
        &mut self,
        objects: &[ObjectLayout],
        surfaces: &[FluidSurfaceMesh],
        frame: u64,
    ) -> Result<u64> {
        let mut bytes = 0;
        let options = &self.options;
        for fluid in surfaces {
            let name = surface_name(&objects[fluid.object].name);
            let surface = Surface::fluid(fluid);
            let with_normals = options.normals && !fluid.triangles.is_empty();
            let normals = &mut self.scratch.normals;
            if with_normals {
                let faces = &surface.mesh;
                let (indices, offsets) = (&faces.face_indices, &faces.face_offsets);
                vertex_normals(&fluid.positions, indices, offsets, normals);
            }
            let normals = with_normals.then_some(&normals[..]);
            let data = VertexData {
                positions: &fluid.positions,
                normals,
                obj_normals: normals,
                velocities: options.velocities.then_some(&fluid.velocities[..]),
                uvs: None,
                ids: None,
                densities: None,
                up_axis: options.up_axis,
            };
            let stem = naming::render(&options.name_template, &name, frame);
            for &format in &options.formats {
                self.buffer.clear();
                match format {
                    Format::Obj => {
                        let (uvs, faces) = obj::constant(&surface, with_normals);
                        obj::encode(&mut self.buffer, &name, &data, (&uvs, &faces));
                    }
                    Format::Ply => {
                        let properties = (with_normals, false);
                        let (header, faces) = ply::constant(&name, &surface, options, properties);
                        ply::encode(&mut self.buffer, &data, (&header, &faces));
                    }
                    _ => continue, // one topology for the whole run: not a fluid surface
                }
                let path = options.dir.join(format!("{stem}.{}", format.extension()));
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
            densities,
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
            if let Some(render) = &surface.carried {
                let binding = &render.binding;
                binding.place(local_x, &object.triangles, normals, surface_x);
                binding.carry(local_v, surface_v);
            } else if let Some(tube) = &surface.tube {
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
            densities: (object.fluid.as_ref())
                .filter(|_| options.formats.contains(&Format::Ply))
                .map(|block| {
                    crate::solver::fluids::densities(block, x, densities);
                    &densities[..]
                }),
            uvs: faces.uvs.as_deref(),
            up_axis: options.up_axis,
        }
    }
}

impl ConstantParts {
    fn encode(mesh: WrittenMesh, objects: &[ObjectLayout], options: &FrameOptions) -> Self {
        let surface = mesh.surface(objects, options);
        let object = &objects[mesh.object];
        let with_normals = options.normals && surface.mesh.face_count() > 0;
        let (obj_uvs, obj_elements) = if options.formats.contains(&Format::Obj) {
            obj::constant(&surface, with_normals)
        } else {
            Default::default()
        };
        let (ply_header, ply_elements) = if options.formats.contains(&Format::Ply) {
            ply::constant(
                &mesh.name,
                &surface,
                options,
                (with_normals, object.fluid.is_some()),
            )
        } else {
            Default::default()
        };
        ConstantParts {
            version: object.topology_version,
            mesh,
            surface,
            obj_uvs,
            obj_elements,
            ply_header,
            ply_elements,
        }
    }
}
