//! One run per output folder: an advisory lock (`flock`) on the output directory itself,
//! held for the whole run and released by the operating system when the process ends,
//! however it ends (a crash or SIGKILL included), so a stale lock never blocks a later run
//! and no lock file is left in the cache.
//!
//! Two runs into one folder at once interleaved their frame files and stats lines (one
//! exited 0 with 63 of its 200 frames from the other scene; issue 12). The second run is now
//! refused with exit code 2, naming the holder from the first line of its stats log (its
//! process id, scene and start time).

use crate::quote::{quoted, shown_path};
use anyhow::Context;
use std::fs::{File, TryLockError};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// Holds the output folder until dropped (or the process ends).
#[derive(Debug)]
pub struct FolderLock {
    directory: File,
    path: PathBuf,
}

/// Why the folder could not be locked.
pub enum LockError {
    /// Another run holds it: the message names it.
    InUse(anyhow::Error),
    /// The directory could not be opened or locked (an I/O error).
    Io(anyhow::Error),
}

impl FolderLock {
    /// Locks `dir` (which must exist) for this process. `stats` is the name of the stats log
    /// in it, read to name a holder.
    pub fn acquire(dir: &Path, stats: &str) -> Result<FolderLock, LockError> {
        let directory = File::open(dir)
            .with_context(|| format!("cannot open the output directory {}", shown_path(dir)))
            .map_err(LockError::Io)?;
        match try_lock_briefly(&directory) {
            Ok(()) => Ok(FolderLock {
                directory,
                path: dir.to_path_buf(),
            }),
            Err(TryLockError::WouldBlock) => Err(LockError::InUse(anyhow::anyhow!(
                "output directory {} is in use by {}: one run at a time per output directory \
                 (choose another --out, or wait for it to finish)",
                shown_path(dir),
                holder(&dir.join(stats))
            ))),
            Err(TryLockError::Error(e)) => Err(LockError::Io(
                anyhow::Error::new(e).context(format!("cannot lock {}", shown_path(dir))),
            )),
        }
    }
}

/// How long a run waits for a folder another process holds before refusing it: long enough
/// for `wedge status`, which takes a task folder's lock for a moment to see whether a run
/// holds it, never to make a task starting at that moment fail.
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_millis(500);

/// `try_lock`, tried again for [`LOCK_PATIENCE`] while another holder has it.
fn try_lock_briefly(directory: &File) -> Result<(), TryLockError> {
    let deadline = std::time::Instant::now() + LOCK_PATIENCE;
    loop {
        match directory.try_lock() {
            Err(TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            result => return result,
        }
    }
}

/// Whether a process holds the lock on `dir` now (a run is writing into it). Takes the lock
/// for a moment when it is free; a run starting then waits for it ([`LOCK_PATIENCE`]).
pub fn held_by_another(dir: &Path) -> bool {
    File::open(dir).is_ok_and(|d| matches!(d.try_lock(), Err(TryLockError::WouldBlock)))
}

impl FolderLock {
    /// Fails when the locked directory is no longer at its path: deleted (or moved, or
    /// replaced by another folder of that name) during the run. Frames written into it would
    /// be lost, and a folder recreated under the name would hold only the later frames and no
    /// stats log, so the run must stop with exit code 1 rather than end "ok" (issue 12). The
    /// directory the lock holds open is compared with the one at the path by device and
    /// inode.
    pub fn still_in_place(&self) -> anyhow::Result<()> {
        use std::os::unix::fs::MetadataExt;
        let held = self.directory.metadata()?;
        let same = std::fs::metadata(&self.path)
            .is_ok_and(|now| now.dev() == held.dev() && now.ino() == held.ino());
        if same && held.nlink() > 0 {
            return Ok(());
        }
        anyhow::bail!(
            "the output directory {} was deleted or replaced during the run: the frames and the \
             stats log written into it are gone with it",
            shown_path(&self.path)
        )
    }

    /// The run's error when a write failed because what it wrote into was missing: the
    /// output directory (or a folder in it) was being deleted while the run wrote, even if
    /// the deletion has not finished when this is asked (`still_in_place` then still passes).
    /// `None` for other errors.
    pub fn lost_during_run(&self, error: &anyhow::Error) -> Option<anyhow::Error> {
        let missing = error.chain().any(|e| {
            e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound)
        });
        missing.then(|| {
            anyhow::anyhow!(
                "the output directory {} (or a folder in it) was deleted or replaced during the \
                 run: {error:#}",
                shown_path(&self.path)
            )
        })
    }
}

/// Who holds the folder, from the `run` record its stats log starts with (a resumed run's
/// log keeps the first run's record, so its pid may be the earlier process's).
fn holder(stats: &Path) -> String {
    let record = File::open(stats).ok().and_then(|file| {
        // A run record is a few kilobytes; read at most 1 MiB of the first line.
        let mut line = String::new();
        BufReader::new(file.take(1 << 20))
            .read_line(&mut line)
            .ok()?;
        serde_json::from_str::<serde_json::Value>(&line).ok()
    });
    let field = |name: &str| {
        record
            .as_ref()
            .and_then(|r| r.get(name).cloned())
            .map(|v| quoted(&v.to_string()))
    };
    match (field("pid"), field("scene"), field("start_time")) {
        (Some(pid), Some(scene), Some(start)) => {
            format!("another xpbd-sim run (pid {pid}, scene {scene}, started {start})")
        }
        _ => "another xpbd-sim run".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_one_folder_is_refused_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("stats.jsonl"),
            "{\"type\":\"run\",\"pid\":42,\"scene\":\"a.toml\",\"start_time\":\"T\"}\n",
        )
        .unwrap();
        let first = FolderLock::acquire(dir.path(), "stats.jsonl")
            .ok()
            .expect("first lock");
        match FolderLock::acquire(dir.path(), "stats.jsonl") {
            Err(LockError::InUse(e)) => {
                let message = format!("{e:#}");
                assert!(message.contains("(pid 42, scene \"a.toml\""), "{message}");
            }
            _ => panic!("the folder was locked twice"),
        }
        drop(first);
        assert!(FolderLock::acquire(dir.path(), "stats.jsonl").is_ok());
        // No file is left in the folder.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
