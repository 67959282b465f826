//! Crash-safe files (SPEC §3, §4): a file under its final name is always whole, survives a
//! power cut once the call returned, and a planted symlink can never redirect a write.
//!
//! 1. The contents go to `.NAME.tmp` beside the final name. Any file or symlink already
//!    there is removed first (`unlink` removes a symlink, never its target), and the
//!    temporary file is created with `O_CREAT | O_EXCL`, which fails rather than follow a
//!    symlink planted in between.
//! 2. `fsync` the temporary file, then `close` it and check close's result (std's `File`
//!    drops close errors; some file systems report deferred write errors only there).
//! 3. `rename` it over the final name: atomic on POSIX file systems, and it replaces a
//!    symlink under the final name instead of writing through it.
//! 4. `fsync` the directory, so the rename itself is on disk.

use crate::quote::shown_path;
use anyhow::{Context, Result};
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::fd::IntoRawFd;
use std::path::Path;

/// The temporary file a write to `name` goes through before it is renamed over `name`.
pub fn temporary_name(name: &str) -> String {
    format!(".{name}.tmp")
}

/// The file [`check_writable`] creates and removes in the output directory.
pub const WRITE_PROBE: &str = ".xpbd-sim-write-test.tmp";

/// Writes `contents` to `path` crash-safely (see the module notes).
pub fn write_atomically(path: &Path, contents: &[u8]) -> Result<()> {
    write_atomically_with(path, |out| out.write_all(contents))
}

/// Writes what `write` produces to `path` crash-safely (see the module notes), for files too
/// big to hold in memory at once. `write` gets a buffered writer.
pub fn write_atomically_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let temporary = path.with_file_name(temporary_name(file_name));
    let result = write_new_file(&temporary, write)
        .and_then(|()| std::fs::rename(&temporary, path))
        .and_then(|()| sync_directory(path));
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result.with_context(|| format!("cannot write {}", shown_path(path)))
}

/// Creates `path` afresh (never through a symlink), writes, syncs and closes it, checking
/// every step.
fn write_new_file(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let file = OpenOptions::new().write(true).create_new(true).open(path)?;
    let mut buffered = BufWriter::with_capacity(1 << 20, file);
    write(&mut buffered)?;
    let file = buffered.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    close(file)
}

/// Closes `file` and reports close's error, which `Drop` would ignore.
fn close(file: File) -> std::io::Result<()> {
    let fd = file.into_raw_fd();
    // SAFETY: `fd` came from `into_raw_fd`, so nothing else owns or closes it.
    if unsafe { libc::close(fd) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// `fsync`s the directory holding `path`, making a rename or creation in it durable.
pub fn sync_directory(path: &Path) -> std::io::Result<()> {
    let directory = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(directory)?.sync_all()
}

/// Fails unless a file can be created, written and removed in `directory` (a read-only or
/// forbidden output directory is found before any simulating).
pub fn check_writable(directory: &Path) -> Result<()> {
    let probe = directory.join(WRITE_PROBE);
    write_new_file(&probe, |out| out.write_all(b"xpbd-sim"))
        .and_then(|()| std::fs::remove_file(&probe))
        .with_context(|| {
            format!(
                "cannot write into the output directory {}",
                shown_path(directory)
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlink_under_the_final_name_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, b"precious").unwrap();
        let target = dir.path().join("cloth.0001.obj");
        std::os::unix::fs::symlink(&victim, &target).unwrap();
        // And one planted under the temporary name as well.
        std::os::unix::fs::symlink(&victim, dir.path().join(".cloth.0001.obj.tmp")).unwrap();
        write_atomically(&target, b"v 0 0 0\n").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(!std::fs::symlink_metadata(&target).unwrap().is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"v 0 0 0\n");
    }

    #[test]
    fn a_missing_directory_is_an_error_naming_the_file() {
        let error = write_atomically(Path::new("/nonexistent-xpbd/a.obj"), b"x").unwrap_err();
        assert!(format!("{error:#}").contains("/nonexistent-xpbd/a.obj"));
    }
}
