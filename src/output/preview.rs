//! Preview images of a cache (SPEC §5): `[output] preview = { every, size }` during a run and
//! `xpbd-sim preview DIR` afterwards write `DIR/preview/<scene stem>.####.png`, rendered by
//! [`crate::preview`] (a software rasteriser: no GPU, no Blender).
//!
//! What a frame shows: every written mesh (objects, their render meshes, rope tubes or lines)
//! in its own colour, and every collider (grey, checkered) where its animation has it at that
//! frame's time, seen from one camera for the whole shot: [`Camera::framing`] of the frame-1
//! box (the placed rest geometry of every object and render mesh, the colliders at time 0
//! without plane extents, and each plane's point, so a floor is the ground).
//!
//! Same cache, same PNG bytes: the run renders the `f32` positions it writes, and `preview DIR`
//! reads them back from the frame files (PLY when there, else OBJ, whose shortest-text floats
//! read back to the same `f32`), turned back from the written axes to +Y up the same way; the
//! camera and colliders come from the same scene model in both.

use super::durable::write_atomically;
use super::frame::{FrameOptions, FrameWriter};
use super::naming;
use super::stage::StageOptions;
use super::surface::Surface;
use crate::collision::tessellate::tessellate;
use crate::collision::{Collider, Shape};
use crate::model::Model;
use crate::preview::{self, Camera, Image, PreviewMesh};
use crate::quote::shown_path;
use crate::scene::load::LoadedScene;
use crate::scene::types::SceneFile;
use crate::scene::types::{Preview, UpAxis};
use anyhow::{ensure, Context, Result};
use std::path::{Path, PathBuf};

/// A written mesh's triangles (polygons as fans) and lines, in output indices.
type Drawn = (Vec<[u32; 3]>, Vec<[u32; 2]>);

/// The folder previews go to, inside the output directory.
pub const PREVIEW_DIRECTORY: &str = "preview";

/// Largest preview side, pixels.
pub const MAX_SIZE: u32 = 8192;

/// What a shot's previews look like and where they go.
#[derive(Debug, Clone)]
pub struct Previewer {
    dir: PathBuf,
    stem: String,
    every: u64,
    size: [u32; 2],
    start_frame: u64,
    fps: f64,
    up_axis: UpAxis,
    camera: Camera,
    colliders: Vec<Collider>,
    plane_half_size: f64,
    /// Per written mesh: its triangles (polygons as fans) and lines, in output indices.
    topology: Vec<Drawn>,
}

/// The shot a previewer is made for.
#[derive(Debug, Clone)]
pub struct PreviewShot {
    pub out_dir: PathBuf,
    /// The scene file's stem.
    pub stem: String,
    pub every: u64,
    pub size: [u32; 2],
    pub start_frame: u64,
    pub fps: f64,
    pub up_axis: UpAxis,
    pub plane_half_size: f64,
}

impl PreviewShot {
    /// The previews `preview` asks for of `scene`'s cache in `out_dir` (named and with planes
    /// as the USD stage has them).
    pub fn new(
        scene: &LoadedScene,
        out_dir: &Path,
        preview: &Preview,
        stage: &StageOptions,
    ) -> Self {
        let size = preview.size.map(|s| s.clamp(1, MAX_SIZE as u64) as u32);
        PreviewShot {
            out_dir: out_dir.to_path_buf(),
            stem: stage.name.clone(),
            every: preview.every,
            size,
            start_frame: scene.file.simulation.start_frame,
            fps: scene.file.simulation.fps,
            up_axis: scene.file.output.up_axis,
            plane_half_size: stage.plane_half_size,
        }
    }
}

impl Previewer {
    /// The previewer of `model`'s shot, whose written meshes are `surfaces`.
    pub fn new(shot: &PreviewShot, model: &Model, surfaces: &[&Surface]) -> Previewer {
        let topology = surfaces.iter().map(|s| topology(s)).collect();
        let mut min = [f32::INFINITY; 3];
        let mut max = [f32::NEG_INFINITY; 3];
        let mut include = |p: glam::DVec3| {
            let p = p.as_vec3().to_array();
            for k in 0..3 {
                min[k] = min[k].min(p[k]);
                max[k] = max[k].max(p[k]);
            }
        };
        for object in &model.objects {
            object.topology.positions.iter().for_each(|&p| include(p));
            if let Some(render) = &object.render {
                render.mesh.positions.iter().for_each(|&p| include(p));
            }
        }
        for collider in &model.colliders {
            match collider.posed(0.0, 0.0).shape {
                Shape::Plane { point, .. } => include(point),
                _ => (tessellate(collider, 0.0, 0.0).positions.into_iter()).for_each(&mut include),
            }
        }
        let [width, height] = shot.size;
        Previewer {
            dir: shot.out_dir.join(PREVIEW_DIRECTORY),
            stem: shot.stem.to_string(),
            every: shot.every.max(1),
            size: shot.size,
            start_frame: shot.start_frame,
            fps: shot.fps,
            up_axis: shot.up_axis,
            camera: Camera::framing(min, max, width, height),
            colliders: model.colliders.clone(),
            plane_half_size: shot.plane_half_size,
            topology,
        }
    }

    /// Whether frame `frame` gets a preview: the first, then every `every`-th.
    pub fn wants(&self, frame: u64) -> bool {
        frame
            .checked_sub(self.start_frame)
            .is_some_and(|k| k.is_multiple_of(self.every))
    }

    /// The preview file of `frame`.
    pub fn path(&self, frame: u64) -> PathBuf {
        self.dir.join(format!("{}.{frame:04}.png", self.stem))
    }

    /// Renders frame `frame` from every written mesh's positions in the written axes.
    pub fn render(&self, frame: u64, written: &[Vec<[f32; 3]>]) -> Image {
        self.render_labelled(frame, written, &format!("frame {frame:04}"))
    }

    /// [`Previewer::render`] with `label` at the top-left.
    pub fn render_labelled(&self, frame: u64, written: &[Vec<[f32; 3]>], label: &str) -> Image {
        let mut meshes = Vec::new();
        for (k, (positions, (triangles, lines))) in written.iter().zip(&self.topology).enumerate() {
            meshes.push(PreviewMesh {
                positions: positions.iter().map(|&p| y_up(self.up_axis, p)).collect(),
                triangles: triangles.clone(),
                lines: lines.clone(),
                points: triangles.is_empty() && lines.is_empty(),
                colour: preview::object_colour(k),
                collider: false,
            });
        }
        let time = (frame - self.start_frame) as f64 / self.fps;
        for collider in &self.colliders {
            // A plane seen from its solid side (a tank's wall from outside) would hide the
            // shot: it is left out, as a cutaway.
            if let crate::collision::Shape::Plane { point, normal } =
                collider.posed(time, time).shape
            {
                let eye = glam::DVec3::from_array(self.camera.eye.map(f64::from));
                if (eye - point).dot(normal) < 0.0 {
                    continue;
                }
            }
            let mesh = tessellate(collider, time, self.plane_half_size);
            meshes.push(PreviewMesh {
                positions: mesh
                    .positions
                    .iter()
                    .map(|p| p.as_vec3().to_array())
                    .collect(),
                triangles: mesh.triangles,
                lines: Vec::new(),
                points: false,
                colour: [0, 0, 0],
                collider: true,
            });
        }
        let [width, height] = self.size;
        preview::render(&meshes, &self.camera, width, height, label)
    }

    /// Renders and writes frame `frame`'s preview crash-safely; returns the bytes written.
    pub fn write(&self, frame: u64, written: &[Vec<[f32; 3]>]) -> Result<u64> {
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("cannot create {}", crate::quote::shown_path(&self.dir)))?;
        let png = preview::encode_png(&self.render(frame, written));
        write_atomically(&self.path(frame), &png)?;
        Ok(png.len() as u64)
    }

    /// A contact sheet of `images` in reading order, written as `DIR/preview/<stem>.sheet.png`.
    pub fn write_sheet(&self, images: &[Image]) -> Result<PathBuf> {
        let columns = (images.len() as f64).sqrt().ceil().max(1.0) as u32;
        let sheet = preview::contact_sheet(images, columns);
        let path = self.dir.join(format!("{}.sheet.png", self.stem));
        write_atomically(&path, &preview::encode_png(&sheet))?;
        Ok(path)
    }
}

/// A written position back in +Y-up axes (`up_axis = "z"` wrote `(x, −z, y)`).
fn y_up(up_axis: UpAxis, [x, y, z]: [f32; 3]) -> [f32; 3] {
    match up_axis {
        UpAxis::Y => [x, y, z],
        UpAxis::Z => [x, z, -y],
    }
}

/// A written mesh's triangles (each polygon as a fan from its first corner) and segments.
fn topology(surface: &Surface) -> Drawn {
    let mesh = &surface.mesh;
    let mut triangles = Vec::new();
    for window in mesh.face_offsets.windows(2) {
        let corners = &mesh.face_indices[window[0] as usize..window[1] as usize];
        for k in 1..corners.len().saturating_sub(1) {
            triangles.push([corners[0], corners[k], corners[k + 1]]);
        }
    }
    (triangles, mesh.segments.clone())
}

/// What `xpbd-sim preview DIR` made.
#[derive(Debug)]
pub struct Remade {
    pub files: Vec<PathBuf>,
    pub sheet: Option<PathBuf>,
}

/// `xpbd-sim preview DIR`: remakes the previews of the cache in `dir` from its frame files, with
/// the scene its stats log names (its run record's resolved settings), every `every` frames at
/// `size` (by default the scene's `output.preview`, else every frame at 640 × 360), and a
/// contact sheet of them with `sheet`. The files are the ones the run would have written.
pub fn remake(
    dir: &Path,
    every: Option<u64>,
    size: Option<[u32; 2]>,
    sheet: bool,
) -> Result<Remade> {
    let cache = CachePreview::open(dir, every, size)?;
    let (previewer, simulation) = (&cache.previewer, &cache.scene.file.simulation);
    let (first, count) = (simulation.start_frame, simulation.frames);
    let mut remade = Remade {
        files: Vec::new(),
        sheet: None,
    };
    let mut images = Vec::new();
    for frame in (first..first.saturating_add(count)).filter(|&f| previewer.wants(f)) {
        let Some(written) = cache.read_frame(frame)? else {
            break; // the frames written end here
        };
        let image = previewer.render(frame, &written);
        let png = preview::encode_png(&image);
        std::fs::create_dir_all(&previewer.dir)
            .with_context(|| format!("cannot create {}", shown_path(&previewer.dir)))?;
        write_atomically(&previewer.path(frame), &png)?;
        remade.files.push(previewer.path(frame));
        if sheet {
            images.push(image);
        }
    }
    ensure!(
        !remade.files.is_empty(),
        "{} holds no OBJ or PLY frame files of its scene's objects to preview",
        shown_path(dir)
    );
    if sheet {
        remade.sheet = Some(previewer.write_sheet(&images)?);
    }
    Ok(remade)
}

/// The last frame of the cache in `dir` whose files and stats record are written, rendered
/// at `size` with `label` (for a wedge's contact sheet); `None` before the first frame.
pub fn last_frame(dir: &Path, size: [u32; 2], label: &str) -> Result<Option<Image>> {
    let cache = CachePreview::open(dir, Some(1), Some(size))?;
    let recorded = crate::output::stats::StatsLog::recorded_frames(&dir.join("stats.jsonl"))?;
    let Some(&frame) = recorded.last() else {
        return Ok(None);
    };
    let written = cache.read_frame(frame)?;
    Ok(written.map(|w| {
        cache
            .previewer
            .render_labelled(frame, &w, &format!("{label} {frame:04}"))
    }))
}

/// A cache ready to preview: the scene its stats log records, its written meshes, and the
/// previewer the run would have had.
struct CachePreview {
    dir: PathBuf,
    scene: LoadedScene,
    meshes: Vec<(String, Surface)>,
    previewer: Previewer,
}

impl CachePreview {
    /// The cache in `dir`, previewed every `every` frames at `size` (by default the scene's
    /// `output.preview`, else every frame at 640 × 360).
    fn open(dir: &Path, every: Option<u64>, size: Option<[u32; 2]>) -> Result<CachePreview> {
        let scene = recorded_scene(dir)?;
        let model = crate::scene::build::build(&scene)
            .with_context(|| format!("cannot rebuild the scene {}", shown_path(&scene.path)))?
            .model;
        let mut preview = scene.file.output.preview.clone().unwrap_or(Preview {
            every: 1,
            size: [640, 360],
        });
        preview.every = every.unwrap_or(preview.every);
        if let Some([w, h]) = size {
            preview.size = [w as u64, h as u64];
        }
        ensure!(preview.every >= 1, "--every must be at least 1");
        for side in preview.size {
            ensure!(
                (16..=MAX_SIZE as u64).contains(&side),
                "--size must be from 16 to {MAX_SIZE} pixels a side, got {side}"
            );
        }
        let stage = StageOptions::for_shot(&scene, &model);
        let shot = PreviewShot::new(&scene, dir, &preview, &stage);
        let writer = FrameWriter::new(FrameOptions::for_scene(
            &scene.file,
            dir.to_path_buf(),
            stage,
        ));
        let meshes = writer.written_meshes(&model.objects);
        let surfaces: Vec<&Surface> = meshes.iter().map(|(_, s)| s).collect();
        let previewer = Previewer::new(&shot, &model, &surfaces);
        Ok(CachePreview {
            dir: dir.to_path_buf(),
            scene,
            meshes,
            previewer,
        })
    }

    fn read_frame(&self, frame: u64) -> Result<Option<Vec<Vec<[f32; 3]>>>> {
        read_frame(&self.dir, &self.scene.file.output.name, &self.meshes, frame)
    }
}

/// The scene a cache was made from: its stats log's run record names the file and holds the
/// resolved settings (with every `--set` applied).
fn recorded_scene(dir: &Path) -> Result<LoadedScene> {
    let stats = dir.join("stats.jsonl");
    let text = std::fs::read_to_string(&stats)
        .with_context(|| format!("cannot read {}: not an xpbd-sim cache", shown_path(&stats)))?;
    let first = text.lines().next().unwrap_or("");
    let record: serde_json::Value = serde_json::from_str(first)
        .with_context(|| format!("{}: the first line is not a run record", shown_path(&stats)))?;
    ensure!(
        record["type"] == "run",
        "{}: the first line is not a run record",
        shown_path(&stats)
    );
    let named = |key: &str| record[key].as_str().map(PathBuf::from);
    let path = named("scene_absolute")
        .or_else(|| named("scene"))
        .unwrap_or_default();
    let file: SceneFile = serde_json::from_value(record["settings"].clone())
        .with_context(|| format!("{}: unreadable settings", shown_path(&stats)))?;
    Ok(LoadedScene {
        base_dir: path.parent().map_or_else(PathBuf::new, Path::to_path_buf),
        sha256: record["scene_sha256"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        path,
        file,
    })
}

/// Frame `frame` of every written mesh, read from its PLY (exact `f32`) or else its OBJ file;
/// `None` when a mesh has neither (the run stopped before it).
fn read_frame(
    dir: &Path,
    template: &str,
    meshes: &[(String, Surface)],
    frame: u64,
) -> Result<Option<Vec<Vec<[f32; 3]>>>> {
    let mut written = Vec::new();
    for (name, _) in meshes {
        let stem = naming::render(template, name, frame);
        let (ply, obj) = (
            dir.join(format!("{stem}.ply")),
            dir.join(format!("{stem}.obj")),
        );
        let mesh = if ply.is_file() {
            crate::mesh::ply::read_ply(&ply)?
        } else if obj.is_file() {
            crate::mesh::obj::read_obj(&obj)?
        } else {
            return Ok(None);
        };
        written.push(
            mesh.positions
                .iter()
                .map(|p| p.as_vec3().to_array())
                .collect(),
        );
    }
    Ok(Some(written))
}
