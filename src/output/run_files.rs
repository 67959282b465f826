//! Whole-run files (SPEC §5): the formats that hold every frame in one file, MDD and PC2
//! point caches and the USD stage, made from the spool ([`super::spool`]).
//!
//! Every frame the frame writer hands each written mesh's vertices to [`RunFiles::record`];
//! [`RunFiles::end_frame`] appends them to the spool and rewrites the files crash-safely from
//! it at the checkpoints `c·2^k` frames in (`c` = `publish_every`, the checkpoint interval:
//! after `c`, `2c`, `4c`, `8c`, … frames) that lie in the first half of the shot;
//! [`RunFiles::publish`] does it once more when the run ends, however it ends. So a file under
//! its final name is always whole, a killed run leaves files holding the frames up to such a
//! checkpoint (at least half of the frames done in the first half of the shot, at least a
//! quarter of the shot after it), and a resumed run (which cuts the spool back to its
//! checkpoint) ends with the same bytes as an uninterrupted one.
//!
//! Why: a rewrite costs as much as the frames so far, so rewriting at every checkpoint costs
//! O(n²/c) frame encodes over a run of `n` frames (a 120-frame run with checkpoints every 10:
//! 780, 6.5 per frame). Doubling intervals in the first half sum to at most `n`, so with the
//! final rewrite a frame is encoded at most twice, whatever the length of the shot (120
//! frames: after 10, 20 and 40, then 120; 1.6 encodes per frame).

use super::durable::write_atomically_with;
use super::frame::VertexData;
use super::point_cache::{PointCache, Timing};
use super::spool::{self, Spool};
use super::stage::{Stage, StageOptions};
use super::surface::Surface;
use crate::scene::types::Format;
use anyhow::Result;
use std::path::{Path, PathBuf};

/// What the whole-run files are and where they go.
#[derive(Debug, Clone)]
pub struct RunFileOptions {
    pub dir: PathBuf,
    /// The whole-run formats asked for (none: no spool, nothing written here).
    pub formats: Vec<Format>,
    pub start_frame: u64,
    pub fps: f64,
    /// The checkpoint interval: the files are rewritten after 1, 2, 4, 8, … intervals (0: only
    /// at the end).
    pub publish_every: u64,
    /// Frames in the whole shot (`simulation.frames`): rewrites stop at its half.
    pub shot_frames: u64,
    /// What the USD stage holds besides the spooled meshes (`usd`, `usda`).
    pub stage: StageOptions,
}

/// What one spooled frame of a written mesh holds: its vertices' positions, and their
/// velocities and normals when the stage writes them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecordLayout {
    pub points: usize,
    pub velocities: bool,
    pub normals: bool,
}

impl RecordLayout {
    /// The layout of `surface`'s records for these whole-run formats: velocities and normals
    /// only for the USD stage (point caches hold positions), normals only where it has faces.
    pub fn new(surface: &Surface, formats: &[Format], velocities: bool, normals: bool) -> Self {
        let stage = formats
            .iter()
            .any(|f| matches!(f, Format::Usd | Format::Usda));
        RecordLayout {
            points: surface.vertex_count(),
            velocities: stage && velocities,
            normals: stage && normals && surface.mesh.face_count() > 0,
        }
    }

    pub fn bytes(&self) -> u64 {
        12 * self.points as u64 * (1 + self.velocities as u64 + self.normals as u64)
    }
}

/// One written mesh as the spool holds it.
struct SpooledMesh {
    /// The file name stem (the object's name).
    name: String,
    layout: RecordLayout,
}

/// The spool and the files made from it.
pub struct RunFiles {
    options: RunFileOptions,
    meshes: Vec<SpooledMesh>,
    /// The stage's prims, when `usd` or `usda` is asked for.
    stage: Option<Stage>,
    spool: Spool,
    /// This frame's record of every mesh, filled by [`RunFiles::record`].
    records: Vec<Vec<u8>>,
    /// Frames the files on disk hold.
    published: u64,
}

impl RunFiles {
    /// Opens the spool for meshes `names[k]` written as `surfaces[k]` with records laid out as
    /// `layouts[k]`, keeping its first `keep` frames (those before the checkpoint a resumed
    /// run continues from; 0 for a new run).
    pub fn open(
        options: RunFileOptions,
        names: &[&str],
        surfaces: &[&Surface],
        layouts: &[RecordLayout],
        keep: u64,
    ) -> Result<RunFiles> {
        let bytes = layouts.iter().map(RecordLayout::bytes).collect();
        let spool = Spool::open(&options.dir, bytes, keep)?;
        let meshes = names
            .iter()
            .zip(layouts)
            .map(|(name, &layout)| SpooledMesh {
                name: name.to_string(),
                layout,
            })
            .collect();
        let stage = options
            .formats
            .iter()
            .any(|f| matches!(f, Format::Usd | Format::Usda))
            .then(|| Stage::new(&options.stage, names, surfaces, layouts));
        Ok(RunFiles {
            options,
            meshes,
            stage,
            spool,
            records: vec![Vec::new(); names.len()],
            published: keep,
        })
    }

    /// Sets mesh `k`'s record for this frame: its positions in the written axes, then the
    /// velocities and normals its layout holds.
    pub(super) fn record(&mut self, k: usize, data: &VertexData) {
        let layout = self.meshes[k].layout;
        let record = &mut self.records[k];
        record.clear();
        let push = |record: &mut Vec<u8>, values: &[glam::DVec3]| {
            for &v in values {
                for c in data.axes(v) {
                    record.extend_from_slice(&c.to_le_bytes());
                }
            }
        };
        push(record, data.positions);
        // The layout follows the same options as the vertex data, so both are there; a
        // missing one would still keep the record's size (zeros).
        for (wanted, values) in [
            (layout.velocities, data.velocities),
            (layout.normals, data.normals),
        ] {
            match values {
                Some(values) if wanted => push(record, values),
                None if wanted => record.resize(record.len() + 12 * layout.points, 0),
                _ => {}
            }
        }
    }

    /// Appends the frame's records to the spool, and rewrites the files at the checkpoints
    /// `c·2^k` frames in, in the first half of the shot (see the module notes). Returns the bytes of files written.
    pub fn end_frame(&mut self) -> Result<u64> {
        self.spool.append(&self.records)?;
        let (frames, every) = (self.spool.frames(), self.options.publish_every);
        let first_half = frames.saturating_mul(2) <= self.options.shot_frames;
        let doubling =
            every > 0 && frames.is_multiple_of(every) && (frames / every).is_power_of_two();
        if doubling && first_half {
            return self.publish();
        }
        Ok(0)
    }

    /// Rewrites every whole-run file from the spool, unless it already holds every spooled
    /// frame. Returns the bytes written.
    pub fn publish(&mut self) -> Result<u64> {
        if self.published == self.spool.frames() {
            return Ok(0);
        }
        self.spool.sync()?;
        let timing = Timing {
            start_frame: self.options.start_frame,
            fps: self.options.fps,
        };
        let mut bytes = 0;
        for format in self.options.formats.clone() {
            let cache = match format {
                Format::Mdd => PointCache::Mdd,
                Format::Pc2 => PointCache::Pc2,
                Format::Usd | Format::Usda => {
                    bytes += self.publish_stage(format)?;
                    continue;
                }
                Format::Obj | Format::Ply => continue,
            };
            for (k, mesh) in self.meshes.iter().enumerate() {
                let path = self.options.dir.join(file_name(&mesh.name, format));
                let spool = &mut self.spool;
                write_atomically_with(&path, |out| {
                    cache.write(out, spool, k, mesh.layout.points, &timing)
                })?;
                bytes += std::fs::metadata(&path).map_or(0, |m| m.len());
            }
        }
        self.published = self.spool.frames();
        Ok(bytes)
    }

    /// Rewrites the stage `DIR/<stage name>.usdc` (or `.usda`) from the spool.
    fn publish_stage(&mut self, format: Format) -> Result<u64> {
        let Some(stage) = &self.stage else {
            return Ok(0);
        };
        let bytes = stage.encode(&mut self.spool, format == Format::Usd)?;
        let name = file_name(&self.options.stage.name, format);
        write_atomically_with(&self.options.dir.join(name), |out| out.write_all(&bytes))?;
        Ok(bytes.len() as u64)
    }
}

/// The file of mesh (or stage) `name` in a whole-run `format`: `<name>.mdd`, `<name>.pc2`,
/// `<name>.usdc`, `<name>.usda`.
pub fn file_name(name: &str, format: Format) -> String {
    format!("{name}.{}", format.extension())
}

/// How many whole frames the spool of `dir` holds for meshes with these layouts.
pub fn frames_on_disk(dir: &Path, layouts: &[RecordLayout]) -> u64 {
    let bytes: Vec<u64> = layouts.iter().map(RecordLayout::bytes).collect();
    spool::frames_on_disk(dir, &bytes)
}
