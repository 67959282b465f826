//! The spool: every written frame of the whole-run formats (USD, MDD, PC2), kept on disk in
//! `DIR/checkpoints/spool.<k>.f32` (one file per written mesh `k`) until the run's files are
//! made from it.
//!
//! A whole-run file holds every frame, so it cannot be written frame by frame under its final
//! name and stay whole (SPEC §3). Instead each frame is appended to the spool as one fixed-size
//! record, and the run's files are rewritten from the spool, crash-safely, at checkpoints (after
//! 1, 2, 4, … intervals) and when the run ends ([`super::run_files`]). A killed run leaves files
//! holding the frames up to such a checkpoint; `--resume` cuts the spool back to the checkpoint
//! it continues from,
//! so the finished files are byte-identical to an uninterrupted run's.
//!
//! A record is the mesh's output vertices in the written axes as little-endian `f32`:
//! positions, then velocities and normals when the formats write them. A record cut short by a
//! kill does not count: the frames on disk are the whole records.

use crate::quote::shown_path;
use anyhow::{Context, Result};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The spool file of written mesh `k` in the output directory `out_dir`.
pub fn path(out_dir: &Path, k: usize) -> PathBuf {
    super::checkpoint::directory(out_dir).join(format!("spool.{k}.f32"))
}

/// How many whole frames the spools of `out_dir` hold for meshes with these record sizes (0
/// when any is missing).
pub fn frames_on_disk(out_dir: &Path, record_bytes: &[u64]) -> u64 {
    record_bytes
        .iter()
        .enumerate()
        .map(|(k, &bytes)| {
            let length = std::fs::metadata(path(out_dir, k)).map_or(0, |m| m.len());
            length.checked_div(bytes).unwrap_or(u64::MAX)
        })
        .min()
        .unwrap_or(0)
}

/// The open spool files of a run.
pub struct Spool {
    files: Vec<File>,
    paths: Vec<PathBuf>,
    record_bytes: Vec<u64>,
    /// Frames held (the same in every file).
    frames: u64,
}

impl Spool {
    /// Opens (or creates) the spool files of `out_dir` for meshes with these record sizes and
    /// keeps their first `keep` frames: 0 for a new run, the frames before the checkpoint a
    /// resumed run continues from.
    pub fn open(out_dir: &Path, record_bytes: Vec<u64>, keep: u64) -> Result<Spool> {
        let dir = super::checkpoint::directory(out_dir);
        match std::fs::create_dir(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                return Err(e).with_context(|| format!("cannot create {}", shown_path(&dir)))
            }
            _ => {}
        }
        let mut files = Vec::new();
        let mut paths = Vec::new();
        for (k, &bytes) in record_bytes.iter().enumerate() {
            let path = path(out_dir, k);
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .and_then(|mut file| {
                    file.set_len(keep * bytes)?;
                    file.seek(SeekFrom::End(0))?;
                    Ok(file)
                })
                .with_context(|| format!("cannot open {}", shown_path(&path)))?;
            file.flush()?;
            files.push(file);
            paths.push(path);
        }
        Ok(Spool {
            files,
            paths,
            record_bytes,
            frames: keep,
        })
    }

    /// Frames held.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Appends one frame: `records[k]` is mesh `k`'s record.
    pub fn append(&mut self, records: &[Vec<u8>]) -> Result<()> {
        for (k, record) in records.iter().enumerate() {
            debug_assert_eq!(record.len() as u64, self.record_bytes[k]);
            self.files[k]
                .write_all(record)
                .with_context(|| format!("cannot write {}", shown_path(&self.paths[k])))?;
        }
        self.frames += 1;
        Ok(())
    }

    /// Reads frame `index` (from 0) of mesh `k` into `record`.
    pub fn read(&mut self, k: usize, index: u64, record: &mut Vec<u8>) -> Result<()> {
        let bytes = self.record_bytes[k];
        record.resize(bytes as usize, 0);
        let file = &mut self.files[k];
        let read = file
            .seek(SeekFrom::Start(index * bytes))
            .and_then(|_| file.read_exact(record))
            .and_then(|()| file.seek(SeekFrom::End(0)).map(drop));
        read.with_context(|| format!("cannot read {}", shown_path(&self.paths[k])))
    }

    /// Makes the frames appended so far durable (before the files made from them replace the
    /// last ones).
    pub fn sync(&mut self) -> Result<()> {
        for (file, path) in self.files.iter().zip(&self.paths) {
            file.sync_data()
                .with_context(|| format!("cannot write {}", shown_path(path)))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_whole_records_and_cuts_back_to_a_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let mut spool = Spool::open(dir.path(), vec![4, 8], 0).unwrap();
        for f in 0..3u8 {
            spool.append(&[vec![f; 4], vec![f + 10; 8]]).unwrap();
        }
        assert_eq!(frames_on_disk(dir.path(), &[4, 8]), 3);
        let mut record = Vec::new();
        spool.read(1, 1, &mut record).unwrap();
        assert_eq!(record, vec![11; 8]);
        drop(spool);
        // A kill in the middle of a record: only whole records count.
        let mut torn = OpenOptions::new()
            .append(true)
            .open(path(dir.path(), 0))
            .unwrap();
        torn.write_all(&[9, 9]).unwrap();
        assert_eq!(frames_on_disk(dir.path(), &[4, 8]), 3);
        // Resuming after frame index 1 keeps two frames and continues from there.
        let mut spool = Spool::open(dir.path(), vec![4, 8], 2).unwrap();
        spool.append(&[vec![7; 4], vec![7; 8]]).unwrap();
        assert_eq!(spool.frames(), 3);
        spool.read(0, 2, &mut record).unwrap();
        assert_eq!(record, vec![7; 4]);
        spool.read(0, 1, &mut record).unwrap();
        assert_eq!(record, vec![1; 4]);
        assert_eq!(frames_on_disk(dir.path(), &[4, 8, 4]), 0);
    }
}
