//! The run's USD stage (SPEC §5): which prims it holds and where their samples come from. The
//! stage itself is encoded by [`super::usd`]; this module turns written meshes and moving
//! colliders into its prims.
//!
//! - Every written mesh (objects, their render meshes, rope tubes) is a `Mesh` prim with the
//!   mesh's faces, and `primvars:st` from its UVs: per face corner where the input had seams,
//!   else the vertex's own UV. Its samples are the spooled records: positions, velocities,
//!   normals, already in the written axes.
//! - A rope written as lines is a linear `BasisCurves` prim: its segments joined into chains
//!   (a segment that starts where the last one ended continues the curve), as wide as the
//!   particles' collision diameter (`2 × collision.thickness`).
//! - A collider that moves (keys or a mesh sequence) is a `Mesh` prim marked as a collider,
//!   tessellated at every frame's time ([`crate::collision::tessellate`]); still colliders
//!   are left out (the lighter has them in the layout already, and a plane has no extent).
//! - Prim names are the object and collider names with `-` turned into `_` (USD identifiers),
//!   prefixed with `_` when they start with a digit; a name already taken gets `_2`, `_3`, ….

use super::run_files::RecordLayout;
use super::spool::Spool;
use super::surface::Surface;
use super::usd::{encode_stage, FaceVaryingUvs, PrimSample, PrimShape, StageInfo, StagePrim};
use crate::collision::tessellate::tessellate;
use crate::collision::Collider;
use crate::model::Model;
use crate::scene::load::LoadedScene;
use crate::scene::types::UpAxis;
use anyhow::Result;

/// What the stage holds besides the written meshes, and its metadata.
#[derive(Debug, Clone)]
pub struct StageOptions {
    /// The stage's file name stem: the scene file's.
    pub name: String,
    pub fps: f64,
    pub start_frame: u64,
    pub up_axis: UpAxis,
    /// Width of ropes written as curves and of particles written as points, m: the particles'
    /// diameter.
    pub rope_width: f64,
    /// The colliders that move.
    pub colliders: Vec<Collider>,
    /// Half size of a moving plane collider's square, m.
    pub plane_half_size: f64,
}

impl StageOptions {
    /// What the USD stage holds besides the written meshes: named after the scene file, ropes as
    /// wide as the particles, the colliders that move, planes drawn 1.5 scene sizes wide.
    pub fn for_shot(scene: &LoadedScene, model: &Model) -> StageOptions {
        let file = &scene.file;
        let x = &model.particles.x;
        let min = x.iter().fold(glam::DVec3::INFINITY, |m, &p| m.min(p));
        let max = x.iter().fold(glam::DVec3::NEG_INFINITY, |m, &p| m.max(p));
        let size = if x.is_empty() { 0.0 } else { min.distance(max) };
        StageOptions {
            name: (scene.path.file_stem())
                .map_or("scene".into(), |s| s.to_string_lossy().into_owned()),
            fps: file.simulation.fps,
            start_frame: file.simulation.start_frame,
            up_axis: file.output.up_axis,
            rope_width: f64::max(2.0 * file.collision.thickness, ROPE_MIN_WIDTH),
            colliders: (model.colliders.iter())
                .filter(|c| crate::collision::tessellate::moves(c))
                .cloned()
                .collect(),
            plane_half_size: (1.5 * size).max(2.0),
        }
    }
}

/// Ropes written as curves are never thinner than this (m), so they stay visible.
const ROPE_MIN_WIDTH: f64 = 0.001;

/// Where a prim's samples come from.
enum Source {
    /// Written mesh `k`'s spool records; for curves, the order of the points along them.
    Spooled {
        k: usize,
        layout: RecordLayout,
        order: Option<Vec<u32>>,
    },
    /// `options.colliders[k]`, tessellated at each frame's time.
    Collider(usize),
}

/// The stage's prims and their sources.
pub struct Stage {
    options: StageOptions,
    prims: Vec<StagePrim>,
    sources: Vec<Source>,
}

impl Stage {
    /// The stage of written meshes `names[k]` (`surfaces[k]`, spooled as `layouts[k]`) and the
    /// moving colliders.
    pub fn new(
        options: &StageOptions,
        names: &[&str],
        surfaces: &[&Surface],
        layouts: &[RecordLayout],
    ) -> Stage {
        let mut prims = Vec::new();
        let mut sources = Vec::new();
        let mut taken = Vec::new();
        for (k, (surface, &layout)) in surfaces.iter().zip(layouts).enumerate() {
            let (shape, order) = shape(surface, options.rope_width as f32);
            prims.push(StagePrim {
                name: prim_name(names[k], &mut taken),
                shape,
                collider: false,
            });
            sources.push(Source::Spooled { k, layout, order });
        }
        for (k, collider) in options.colliders.iter().enumerate() {
            let mesh = tessellate(collider, 0.0, options.plane_half_size);
            let counts = vec![3; mesh.triangles.len()];
            let indices = mesh.triangles.iter().flatten().map(|&i| i as i32);
            prims.push(StagePrim {
                name: prim_name(&collider.name, &mut taken),
                shape: PrimShape::Mesh {
                    face_vertex_counts: counts,
                    face_vertex_indices: indices.collect(),
                    uvs: None,
                },
                collider: true,
            });
            sources.push(Source::Collider(k));
        }
        Stage {
            options: options.clone(),
            prims,
            sources,
        }
    }

    /// The stage with every frame the spool holds, as `.usdc` bytes (`binary`) or `.usda`.
    pub fn encode(&self, spool: &mut Spool, binary: bool) -> Result<Vec<u8>> {
        let frames = spool.frames();
        let start = self.options.start_frame as f64;
        let info = StageInfo {
            fps: self.options.fps,
            start_frame: start,
            end_frame: start + frames.saturating_sub(1) as f64,
            up_axis: self.options.up_axis,
        };
        let mut record = Vec::new();
        let mut sample = |frame: usize, prim: usize| -> Result<PrimSample> {
            match &self.sources[prim] {
                Source::Spooled { k, layout, order } => {
                    spool.read(*k, frame as u64, &mut record)?;
                    Ok(decode(&record, layout, order.as_deref()))
                }
                Source::Collider(k) => {
                    let time = frame as f64 / self.options.fps;
                    let collider = &self.options.colliders[*k];
                    let mesh = tessellate(collider, time, self.options.plane_half_size);
                    let axes = |p| super::frame::written_axes(self.options.up_axis, p);
                    Ok(PrimSample {
                        points: mesh.positions.into_iter().map(axes).collect(),
                        velocities: None,
                        normals: None,
                    })
                }
            }
        };
        encode_stage(&info, &self.prims, frames as usize, &mut sample, binary)
    }
}

/// A spooled record as a prim sample (points reordered along curves by `order`).
fn decode(record: &[u8], layout: &RecordLayout, order: Option<&[u32]>) -> PrimSample {
    let n = layout.points;
    let vectors = |part: usize| -> Vec<[f32; 3]> {
        let bytes = &record[part * 12 * n..(part + 1) * 12 * n];
        let at =
            |k: usize| f32::from_le_bytes([bytes[k], bytes[k + 1], bytes[k + 2], bytes[k + 3]]);
        let all: Vec<[f32; 3]> = (0..n)
            .map(|i| [at(12 * i), at(12 * i + 4), at(12 * i + 8)])
            .collect();
        match order {
            Some(order) => order.iter().map(|&i| all[i as usize]).collect(),
            None => all,
        }
    };
    PrimSample {
        points: vectors(0),
        velocities: layout.velocities.then(|| vectors(1)),
        normals: layout
            .normals
            .then(|| vectors(1 + layout.velocities as usize)),
    }
}

/// A written mesh's prim topology; for curves also the order of the points along them, when
/// it is not the vertex order.
fn shape(surface: &Surface, rope_width: f32) -> (PrimShape, Option<Vec<u32>>) {
    let mesh = &surface.mesh;
    if mesh.face_count() == 0 && mesh.segments.is_empty() {
        // Particles only (a fluid): points as wide as the particles.
        return (PrimShape::Points { width: rope_width }, None);
    }
    if mesh.face_count() == 0 {
        let (counts, order) = chains(&mesh.segments, surface.vertex_count());
        let identity = order.iter().enumerate().all(|(k, &v)| k == v as usize);
        let shape = PrimShape::Curves {
            curve_vertex_counts: counts,
            width: rope_width,
        };
        return (shape, (!identity).then_some(order));
    }
    let counts = mesh.face_offsets.windows(2).map(|w| (w[1] - w[0]) as i32);
    let indices: Vec<i32> = mesh.face_indices.iter().map(|&i| i as i32).collect();
    let uvs = match (&mesh.corner_uvs, &mesh.uvs) {
        (Some(corners), _) => Some(FaceVaryingUvs {
            values: corners
                .texcoords
                .iter()
                .map(|t| t.map(|c| c as f32))
                .collect(),
            indices: corners.corners.iter().map(|&c| c as i32).collect(),
        }),
        (None, Some(uvs)) => Some(FaceVaryingUvs {
            values: uvs.iter().map(|t| t.map(|c| c as f32)).collect(),
            indices: indices.clone(),
        }),
        (None, None) => None,
    };
    let shape = PrimShape::Mesh {
        face_vertex_counts: counts.collect(),
        face_vertex_indices: indices,
        uvs,
    };
    (shape, None)
}

/// Segments joined into chains, in file order: a segment starting at the last chain's end
/// continues it. Returns each chain's point count and the points in chain order (a point
/// shared by two chains appears in both; a vertex on no segment is a chain of its own, so every
/// point is drawn).
fn chains(segments: &[[u32; 2]], points: usize) -> (Vec<i32>, Vec<u32>) {
    let mut counts = Vec::new();
    let mut order: Vec<u32> = Vec::new();
    let mut used = vec![false; points];
    for &[a, b] in segments {
        if order.last() != Some(&a) || counts.is_empty() {
            counts.push(1);
            order.push(a);
        }
        order.push(b);
        *counts.last_mut().unwrap_or(&mut 0) += 1;
        used[a as usize] = true;
        used[b as usize] = true;
    }
    for (v, _) in used.iter().enumerate().filter(|(_, used)| !**used) {
        counts.push(1);
        order.push(v as u32);
    }
    (counts, order)
}

/// `name` as a USD identifier not in `taken` (which it joins).
fn prim_name(name: &str, taken: &mut Vec<String>) -> String {
    let mut base: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if !base.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        base.insert(0, '_');
    }
    let mut unique = base.clone();
    let mut n = 2;
    while taken.contains(&unique) {
        unique = format!("{base}_{n}");
        n += 1;
    }
    taken.push(unique.clone());
    unique
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_join_into_chains_in_file_order() {
        let (counts, order) = chains(&[[0, 1], [1, 2], [2, 3], [5, 4]], 7);
        assert_eq!(counts, vec![4, 2, 1]);
        assert_eq!(order, vec![0, 1, 2, 3, 5, 4, 6]);
    }

    #[test]
    fn names_become_unique_identifiers() {
        let mut taken = Vec::new();
        assert_eq!(prim_name("cloth-1", &mut taken), "cloth_1");
        assert_eq!(prim_name("cloth_1", &mut taken), "cloth_1_2");
        assert_eq!(prim_name("3d", &mut taken), "_3d");
    }
}
