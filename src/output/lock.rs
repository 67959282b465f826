//! One run per output folder: an advisory lock on `DIR/.xpbd-sim.lock`, held for the whole
//! run and released by the operating system when the process ends, however it ends (a crash
//! or SIGKILL included), so a stale lock never blocks a later run.
//!
//! Two runs into one folder at once interleaved their frame files and stats lines (one
//! exited 0 with 63 of its 200 frames from the other scene; issue 12). The second run is now
//! refused with exit code 2, naming the process that holds the folder (its pid, written into
//! the lock file). The lock file stays after the run: removing it would let a run that had
//! already opened it and one that creates a new one both hold "the" lock.

use anyhow::{Context, Result};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::Path;

/// The lock file's name inside the output folder.
pub const LOCK_FILE: &str = ".xpbd-sim.lock";

/// Holds the output folder until dropped (or the process ends).
#[derive(Debug)]
pub struct FolderLock {
    _file: File,
}

/// Why the folder could not be locked.
pub enum LockError {
    /// Another run holds it: the message names it.
    InUse(anyhow::Error),
    /// The lock file could not be opened or locked (an I/O error).
    Io(anyhow::Error),
}

impl FolderLock {
    /// Locks `dir` (which must exist) for this process.
    pub fn acquire(dir: &Path) -> Result<FolderLock, LockError> {
        let path = dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("cannot open the lock file {}", path.display()))
            .map_err(LockError::Io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                let who = if holder.is_empty() {
                    "another xpbd-sim run".to_string()
                } else {
                    format!(
                        "another xpbd-sim run ({})",
                        crate::scene::load::quoted(holder)
                    )
                };
                return Err(LockError::InUse(anyhow::anyhow!(
                    "output directory {} is in use by {who}: one run at a time per output \
                     directory (choose another --out, or wait for it to finish)",
                    dir.display()
                )));
            }
            Err(TryLockError::Error(e)) => {
                return Err(LockError::Io(
                    anyhow::Error::new(e).context(format!("cannot lock {}", path.display())),
                ))
            }
        }
        let record = |file: &mut File| -> Result<()> {
            file.set_len(0)?;
            file.rewind()?;
            writeln!(file, "pid {}", std::process::id())?;
            Ok(())
        };
        record(&mut file)
            .map_err(|e| LockError::Io(e.context(format!("cannot write {}", path.display()))))?;
        Ok(FolderLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_one_folder_is_refused_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = FolderLock::acquire(dir.path()).ok().expect("first lock");
        match FolderLock::acquire(dir.path()) {
            Err(LockError::InUse(e)) => {
                let message = format!("{e:#}");
                assert!(
                    message.contains(&format!("pid {}", std::process::id())),
                    "{message}"
                );
            }
            _ => panic!("the folder was locked twice"),
        }
        drop(first);
        assert!(FolderLock::acquire(dir.path()).is_ok());
    }
}
