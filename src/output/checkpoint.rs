//! Checkpoint files for `run --resume` (SPEC §4): the solver's state after a frame, written
//! crash-safely into `DIR/checkpoints/frame.NNNNNN.ckpt` every `output.checkpoint_every`
//! frames (the two newest are kept).
//!
//! Layout, little-endian:
//!
//! | bytes | what |
//! | --- | --- |
//! | 8 | magic `XPBDCKPT` |
//! | 4 | format version (2: plastic rest states added to the solver state; 1 is refused) |
//! | 4 + n | program version (`CARGO_PKG_VERSION`), length-prefixed UTF-8 |
//! | 32 | scene fingerprint: SHA-256 of the resolved scene settings, see [`fingerprint`] |
//! | 8 | frame number the state is the end of |
//! | 8 + n | the solver state ([`crate::solver::state`]), length-prefixed |
//! | 32 | SHA-256 of everything before it |
//!
//! Reading checks, in order: the magic (not a checkpoint), the checksum and length (corrupt
//! or truncated), the format and program version (written by another version), the scene
//! fingerprint (another scene or other settings); each refusal says which.

use super::durable::write_atomically_with;
use crate::quote::shown_path;
use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"XPBDCKPT";
const FORMAT: u32 = 2;
/// Checkpoints kept: the newest may point past the frames on disk (the writer runs one
/// frame behind), so the one before it stays too.
const KEEP: usize = 2;

/// The folder checkpoints live in, inside the output directory.
pub fn directory(out_dir: &Path) -> PathBuf {
    out_dir.join(super::naming::CHECKPOINT_DIRECTORY)
}

fn file_name(frame: u64) -> String {
    format!("frame.{frame:06}.ckpt")
}

/// A fingerprint of everything that decides the simulation's result: the resolved scene
/// settings as JSON, except `simulation.frames` (a resumed run may go further),
/// `simulation.threads` and `simulation.adapt_threads` (the result depends on neither),
/// `gates` (they judge the
/// result, a resumed run may judge it by others), `output.keep_checkpoints` (what happens
/// to these files after the run) and `output.preview` (pictures of the result), plus the scene file's SHA-256 (meshes are read through it).
pub fn fingerprint(settings_json: &serde_json::Value, scene_sha256: &str) -> [u8; 32] {
    let mut settings = settings_json.clone();
    if let Some(root) = settings.as_object_mut() {
        root.remove("gates");
    }
    if let Some(output) = settings.get_mut("output").and_then(|o| o.as_object_mut()) {
        output.remove("keep_checkpoints");
        output.remove("preview");
    }
    if let Some(simulation) = settings
        .get_mut("simulation")
        .and_then(|s| s.as_object_mut())
    {
        simulation.remove("frames");
        simulation.remove("threads");
        simulation.remove("adapt_threads");
    }
    let mut hasher = Sha256::new();
    hasher.update(settings.to_string().as_bytes());
    hasher.update(scene_sha256.as_bytes());
    hasher.finalize().into()
}

/// Writes the state after `frame` and removes checkpoints older than the newest [`KEEP`].
pub fn write(out_dir: &Path, fingerprint: &[u8; 32], frame: u64, state: &[u8]) -> Result<()> {
    let dir = directory(out_dir);
    // `create_dir`, not `create_dir_all`: an output folder deleted during the run must stay
    // gone (the run then fails), never be recreated here holding only the later frames.
    match std::fs::create_dir(&dir) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            return Err(e)
                .with_context(|| format!("frame {frame}: cannot create {}", shown_path(&dir)))
        }
        _ => {}
    }
    let version = env!("CARGO_PKG_VERSION").as_bytes();
    let mut header = Vec::with_capacity(128);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&FORMAT.to_le_bytes());
    header.extend_from_slice(&(version.len() as u32).to_le_bytes());
    header.extend_from_slice(version);
    header.extend_from_slice(fingerprint);
    header.extend_from_slice(&frame.to_le_bytes());
    header.extend_from_slice(&(state.len() as u64).to_le_bytes());
    let checksum: [u8; 32] = Sha256::new()
        .chain_update(&header)
        .chain_update(state)
        .finalize()
        .into();
    // Written piece by piece, not copied into one buffer first: a copy of the state was a
    // second state's worth of memory at every checkpoint (docs/benchmarks.md, "Issue 13:
    // memory freed between frames").
    write_atomically_with(&dir.join(file_name(frame)), |out| {
        out.write_all(&header)?;
        out.write_all(state)?;
        out.write_all(&checksum)
    })
    .with_context(|| format!("frame {frame}"))?;
    for (_, old) in list(out_dir)?.into_iter().skip(KEEP) {
        let _ = std::fs::remove_file(old);
    }
    Ok(())
}

/// Removes the checkpoints of `out_dir` after a run that finished: every checkpoint and
/// spool file ([`super::spool`]) and a temporary one a kill left, then the folder when
/// nothing else is in it. Files of other names are left alone.
pub fn remove_all(out_dir: &Path) -> Result<()> {
    let dir = directory(out_dir);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", shown_path(&dir))),
    };
    for entry in entries {
        let path = entry
            .with_context(|| format!("cannot read {}", shown_path(&dir)))?
            .path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let name = name
            .strip_prefix('.')
            .and_then(|n| n.strip_suffix(".tmp"))
            .unwrap_or(name);
        let spool = name.starts_with("spool.") && name.ends_with(".f32");
        if spool || (name.starts_with("frame.") && name.ends_with(".ckpt")) {
            std::fs::remove_file(&path)
                .with_context(|| format!("cannot remove {}", shown_path(&path)))?;
        }
    }
    // Fails, and is meant to, when something else is in the folder.
    let _ = std::fs::remove_dir(&dir);
    Ok(())
}

/// Checkpoint files in `out_dir`, newest first, with the frame their name gives.
pub fn list(out_dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let dir = directory(out_dir);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", shown_path(&dir))),
    };
    let mut found = Vec::new();
    for entry in entries {
        let path = entry
            .with_context(|| format!("cannot read {}", shown_path(&dir)))?
            .path();
        let frame: Option<u64> = path.file_name().and_then(|n| n.to_str()).and_then(|n| {
            n.strip_prefix("frame.")?
                .strip_suffix(".ckpt")?
                .parse()
                .ok()
        });
        if let Some(frame) = frame {
            found.push((frame, path));
        }
    }
    found.sort_by_key(|c| std::cmp::Reverse(c.0));
    Ok(found)
}

/// A checkpoint to resume from: its path, frame and solver state, and the newer ones that
/// were passed over as damaged (each with why).
pub struct Usable {
    pub path: PathBuf,
    pub frame: u64,
    pub state: Vec<u8>,
    pub damaged: Vec<String>,
}

/// The newest checkpoint whose frames are all done (`frames_done(frame)`), read and
/// checked; `None` when there is none to resume from.
///
/// A damaged checkpoint (cut short, a flipped bit, not a checkpoint at all, named for another
/// frame than it holds) is passed over for an older intact one, and the caller says so: a
/// crash or a full disk can leave the newest one broken while the one before is fine.
/// Damaged ones only: a checkpoint of other settings or another version is an error, since an
/// older one of the same run would not fit either. With no intact one left, the newest one's
/// damage is the error.
pub fn newest_usable(
    out_dir: &Path,
    fingerprint: &[u8; 32],
    frames_done: impl Fn(u64) -> bool,
) -> Result<Option<Usable>> {
    let mut damaged = Vec::new();
    let mut first_damage = None;
    for (frame, path) in list(out_dir)? {
        if !frames_done(frame) {
            continue;
        }
        let refused = |why: String| format!("checkpoint {} refused: {why}", shown_path(&path));
        let bytes =
            std::fs::read(&path).with_context(|| format!("cannot read {}", shown_path(&path)))?;
        let why = match parse(&bytes, fingerprint) {
            Ok((stored_frame, state)) if stored_frame == frame => {
                return Ok(Some(Usable {
                    path,
                    frame,
                    state,
                    damaged,
                }))
            }
            Ok((stored_frame, _)) => {
                format!("its name says frame {frame} but it holds frame {stored_frame}")
            }
            Err(Refusal::Damaged(why)) => why,
            Err(Refusal::Other(why)) => bail!(refused(why)),
        };
        first_damage.get_or_insert_with(|| refused(why.clone()));
        damaged.push(refused(why));
    }
    match first_damage {
        Some(message) => bail!("{message}; no older intact checkpoint is left to resume from"),
        None => Ok(None),
    }
}

/// Why a checkpoint cannot be used.
#[derive(Debug)]
enum Refusal {
    /// Its bytes are not what was written: an older checkpoint may still serve.
    Damaged(String),
    /// Intact, but of other settings or another version.
    Other(String),
}

fn parse(bytes: &[u8], fingerprint: &[u8; 32]) -> Result<(u64, Vec<u8>), Refusal> {
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        return Err(Refusal::Damaged("not an xpbd-sim checkpoint".into()));
    }
    if bytes.len() < MAGIC.len() + 4 + 4 + 32 + 8 + 8 + 32 {
        return Err(Refusal::Damaged(format!(
            "truncated ({} bytes)",
            bytes.len()
        )));
    }
    let (body, checksum) = bytes.split_at(bytes.len() - 32);
    // The fields as declared; none of them is trusted before the checksum, but a layout that
    // does not add up to the file's length means it was cut short (or grown).
    let mut rest = &body[MAGIC.len()..];
    let mut take = |n: usize| -> Option<&[u8]> {
        let (head, tail) = rest.split_at_checked(n)?;
        rest = tail;
        Some(head)
    };
    let header = (|| {
        let format = u32::from_le_bytes(take(4)?.try_into().ok()?);
        let version_length = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
        let version = String::from_utf8_lossy(take(version_length)?).into_owned();
        let stored_fingerprint = take(32)?.to_vec();
        let frame = u64::from_le_bytes(take(8)?.try_into().ok()?);
        let state_length = u64::from_le_bytes(take(8)?.try_into().ok()?);
        let state = take(usize::try_from(state_length).ok()?)?;
        if take(1).is_some() {
            return None; // bytes after the state
        }
        Some((format, version, stored_fingerprint, frame, state))
    })();
    let Some((format, version, stored_fingerprint, frame, state)) = header else {
        return Err(Refusal::Damaged(
            "truncated or padded: its length does not match what it declares".into(),
        ));
    };
    if Sha256::digest(body).as_slice() != checksum {
        return Err(Refusal::Damaged(
            "corrupt: the checksum does not match its contents".into(),
        ));
    }
    let ours = env!("CARGO_PKG_VERSION");
    if format != FORMAT || version != ours {
        return Err(Refusal::Other(format!("written by xpbd-sim {version} (checkpoint format {format}); this is xpbd-sim {ours} (format {FORMAT})")));
    }
    if stored_fingerprint != fingerprint {
        return Err(Refusal::Other("of another scene or other settings (the scene, a mesh or a --set value changed since it was written)".into()));
    }
    Ok((frame, state.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(dir: &Path, frame: u64) -> Vec<u8> {
        write(dir, &[7; 32], frame, b"state bytes").unwrap();
        std::fs::read(directory(dir).join(file_name(frame))).unwrap()
    }

    #[test]
    fn round_trip_and_every_refusal_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = written(dir.path(), 10);
        assert_eq!(
            parse(&bytes, &[7; 32]).unwrap(),
            (10, b"state bytes".to_vec())
        );
        let refusal = |b: &[u8], f: &[u8; 32]| match parse(b, f) {
            Err(Refusal::Damaged(why) | Refusal::Other(why)) => why,
            Ok(_) => panic!("accepted"),
        };
        assert!(refusal(&bytes, &[8; 32]).contains("another scene"));
        let mut flipped = bytes.clone();
        flipped[70] ^= 1;
        assert!(refusal(&flipped, &[7; 32]).contains("corrupt"));
        assert!(refusal(&bytes[..bytes.len() - 5], &[7; 32]).contains("truncated"));
        assert!(refusal(b"PK\x03\x04 something else", &[7; 32]).contains("not an xpbd-sim"));
        // Another version: rewrite the version string and the checksum.
        let mut other = bytes.clone();
        let at = MAGIC.len() + 8;
        other[at] = b'9';
        let body_len = other.len() - 32;
        let checksum: [u8; 32] = Sha256::digest(&other[..body_len]).into();
        other[body_len..].copy_from_slice(&checksum);
        assert!(refusal(&other, &[7; 32]).contains("written by xpbd-sim 9"));
    }

    #[test]
    fn removing_them_leaves_other_files_alone() {
        let dir = tempfile::tempdir().unwrap();
        remove_all(dir.path()).unwrap(); // no folder: nothing to do
        for frame in [5, 10] {
            written(dir.path(), frame);
        }
        std::fs::write(
            directory(dir.path()).join(".frame.000015.ckpt.tmp"),
            b"torn",
        )
        .unwrap();
        remove_all(dir.path()).unwrap();
        assert!(!directory(dir.path()).exists());
        written(dir.path(), 5);
        std::fs::write(directory(dir.path()).join("notes.txt"), b"mine").unwrap();
        remove_all(dir.path()).unwrap();
        let left: Vec<_> = std::fs::read_dir(directory(dir.path()))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from("notes.txt")]);
    }

    #[test]
    fn only_the_two_newest_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        for frame in [5, 10, 15] {
            written(dir.path(), frame);
        }
        let frames: Vec<u64> = list(dir.path()).unwrap().iter().map(|c| c.0).collect();
        assert_eq!(frames, vec![15, 10]);
    }
}
