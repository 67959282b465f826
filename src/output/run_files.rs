//! Whole-run files (SPEC §5): the formats that hold every frame in one file, MDD and PC2
//! point caches, made from the spool ([`super::spool`]).
//!
//! Every frame the frame writer hands each written mesh's vertices to [`RunFiles::record`];
//! [`RunFiles::end_frame`] appends them to the spool and, every `publish_every` frames (the
//! checkpoint interval) rewrites the files crash-safely from it; [`RunFiles::publish`] does it
//! once more when the run ends, however it ends. So a file under its final name is always
//! whole, a killed run leaves files holding the frames up to its last checkpoint, and a
//! resumed run (which cuts the spool back to its checkpoint) ends with the same bytes as an
//! uninterrupted one.

use super::durable::write_atomically_with;
use super::frame::VertexData;
use super::point_cache::{PointCache, Timing};
use super::spool::{self, Spool};
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
    /// Rewrite the files every this many frames (the checkpoint interval; 0: only at the end).
    pub publish_every: u64,
}

/// One written mesh as the spool holds it.
struct SpooledMesh {
    /// The file name stem (the object's name).
    name: String,
    points: usize,
}

/// The spool and the files made from it.
pub struct RunFiles {
    options: RunFileOptions,
    meshes: Vec<SpooledMesh>,
    spool: Spool,
    /// This frame's record of every mesh, filled by [`RunFiles::record`].
    records: Vec<Vec<u8>>,
    /// Frames the files on disk hold.
    published: u64,
}

impl RunFiles {
    /// Bytes of one spooled frame of each mesh (`surfaces[k]` written as mesh `k`).
    pub fn record_bytes(surfaces: &[&Surface]) -> Vec<u64> {
        surfaces
            .iter()
            .map(|s| 12 * s.vertex_count() as u64)
            .collect()
    }

    /// Opens the spool for meshes `names[k]` written as `surfaces[k]`, keeping its first `keep`
    /// frames (those before the checkpoint a resumed run continues from; 0 for a new run).
    pub fn open(
        options: RunFileOptions,
        names: &[&str],
        surfaces: &[&Surface],
        keep: u64,
    ) -> Result<RunFiles> {
        let spool = Spool::open(&options.dir, Self::record_bytes(surfaces), keep)?;
        let meshes = names
            .iter()
            .zip(surfaces)
            .map(|(name, surface)| SpooledMesh {
                name: name.to_string(),
                points: surface.vertex_count(),
            })
            .collect();
        Ok(RunFiles {
            options,
            meshes,
            spool,
            records: vec![Vec::new(); names.len()],
            published: keep,
        })
    }

    /// Sets mesh `k`'s record for this frame: its positions in the written axes.
    pub(super) fn record(&mut self, k: usize, data: &VertexData) {
        let record = &mut self.records[k];
        record.clear();
        for &p in data.positions {
            for c in data.axes(p) {
                record.extend_from_slice(&c.to_le_bytes());
            }
        }
    }

    /// Appends the frame's records to the spool, and rewrites the files when a checkpoint
    /// interval is full. Returns the bytes of files written.
    pub fn end_frame(&mut self) -> Result<u64> {
        self.spool.append(&self.records)?;
        let every = self.options.publish_every;
        if every > 0 && self.spool.frames().is_multiple_of(every) {
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
        for &format in &self.options.formats {
            let cache = match format {
                Format::Mdd => PointCache::Mdd,
                Format::Pc2 => PointCache::Pc2,
                Format::Obj | Format::Ply => continue,
            };
            for (k, mesh) in self.meshes.iter().enumerate() {
                let path = self.options.dir.join(file_name(&mesh.name, format));
                let spool = &mut self.spool;
                write_atomically_with(&path, |out| {
                    cache.write(out, spool, k, mesh.points, &timing)
                })?;
                bytes += std::fs::metadata(&path).map_or(0, |m| m.len());
            }
        }
        self.published = self.spool.frames();
        Ok(bytes)
    }
}

/// The file of mesh `name` in a whole-run `format`: `<name>.mdd`, `<name>.pc2`.
pub fn file_name(name: &str, format: Format) -> String {
    format!("{name}.{}", format.extension())
}

/// How many whole frames the spool of `dir` holds for these meshes.
pub fn frames_on_disk(dir: &Path, surfaces: &[&Surface]) -> u64 {
    spool::frames_on_disk(dir, &RunFiles::record_bytes(surfaces))
}
