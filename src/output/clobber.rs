//! Refuses a run whose output would replace one of its own inputs: `dir = "."` with
//! `stats = "scene.toml"` wrote the stats log over the scene, and an object `c` read from
//! `c.0001.obj` had its mesh replaced by frame 1 (issue 12). Checked before anything is
//! written, for every file the run may write in the output directory: frame files (render
//! meshes' too) and their temporaries, whole-run files (MDD, PC2, the USD stage), the stats log
//! and its temporary, the write probe, and anything under `checkpoints/` (removed when the run
//! ends) or `preview/`.

use super::durable::{temporary_name, WRITE_PROBE};
use super::naming::{self, CHECKPOINT_DIRECTORY};
use super::preview::PREVIEW_DIRECTORY;
use super::run_files::file_name;
use crate::quote::shown_path;
use crate::scene::inputs::input_files;
use crate::scene::load::LoadedScene;
use crate::scene::types::{Format, SceneFile};
use anyhow::{bail, Result};
use std::path::{Path, PathBuf};

/// The names a run writes in its output directory.
struct OutputNames<'a> {
    dir: &'a Path,
    stats: &'a str,
    template: &'a str,
    /// Every written mesh: the objects, and `<object>_render` for their render meshes.
    objects: Vec<String>,
    formats: &'a [Format],
    /// The USD stage's file name stem (the scene file's).
    stage: String,
    first_frame: u64,
    last_frame: u64,
}

impl<'a> OutputNames<'a> {
    /// What a run of `scene` (read from a file of stem `stage`) writes into `dir`.
    fn new(scene: &'a SceneFile, stage: String, dir: &'a Path) -> Self {
        let simulation = &scene.simulation;
        let objects = crate::model::written_names(&scene.objects);
        OutputNames {
            dir,
            stats: &scene.output.stats,
            template: &scene.output.name,
            objects,
            formats: &scene.output.formats,
            stage,
            first_frame: simulation.start_frame,
            last_frame: simulation
                .start_frame
                .saturating_add(simulation.frames.max(1) - 1),
        }
    }
}

/// An error naming the first file `scene` reads that a run of it into `dir` would replace.
pub fn refuse_writing_over_inputs(scene: &LoadedScene, dir: &Path) -> Result<()> {
    let stage = (scene.path.file_stem()).map_or("scene".into(), |s| s.to_string_lossy().into());
    refuse_writing_over(
        &OutputNames::new(&scene.file, stage, dir),
        &input_files(scene),
    )
}

/// An error naming the first input that one of the run's output files would replace.
///
/// Directory entries are compared, not file contents: an input's folder is resolved through
/// symlinks (`canonicalize`), its last component is kept as written, since writing replaces
/// the entry in the output directory and never writes through a symlink.
fn refuse_writing_over(outputs: &OutputNames, inputs: &[PathBuf]) -> Result<()> {
    let Ok(dir) = outputs.dir.canonicalize() else {
        // Not created yet: no input can be in it.
        return Ok(());
    };
    let checkpoints = dir.join(CHECKPOINT_DIRECTORY);
    let previews = dir.join(PREVIEW_DIRECTORY);
    for input in inputs {
        let (Some(parent), Some(name)) = (input.parent(), input.file_name()) else {
            continue;
        };
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        let Ok(parent) = parent.canonicalize() else {
            continue;
        };
        let replaced = if parent.starts_with(&checkpoints) {
            Some("the checkpoints, which are removed when the run ends")
        } else if parent.starts_with(&previews) {
            Some("in the preview images' folder")
        } else if parent == dir {
            written_as(outputs, &name.to_string_lossy())
        } else {
            None
        };
        if let Some(what) = replaced {
            bail!(
                "the output would write over an input: {} is {what}; choose another output \
                 directory or names",
                shown_path(input)
            );
        }
    }
    Ok(())
}

/// What the run writes under `name` in its output directory, if anything.
fn written_as(outputs: &OutputNames, name: &str) -> Option<&'static str> {
    if name == outputs.stats || name == temporary_name(outputs.stats) {
        return Some("the stats log (output.stats)");
    }
    if name == CHECKPOINT_DIRECTORY || name == WRITE_PROBE || name == PREVIEW_DIRECTORY {
        return Some("a file the run writes");
    }
    let name = name
        .strip_prefix('.')
        .and_then(|n| n.strip_suffix(".tmp"))
        .unwrap_or(name);
    for format in outputs.formats.iter().filter(|f| !f.per_frame()) {
        let stage = matches!(format, Format::Usd | Format::Usda);
        let mut stems = outputs.objects.iter().map(String::as_str);
        let hit = if stage {
            name == file_name(&outputs.stage, *format)
        } else {
            stems.any(|o| name == file_name(o, *format))
        };
        if hit {
            return Some("a whole-run file of this run (MDD, PC2 or USD)");
        }
    }
    let stem = (outputs.formats.iter().filter(|f| f.per_frame()))
        .find_map(|f| name.strip_suffix(&format!(".{}", f.extension())))?;
    let frames = candidate_frames(stem)
        .into_iter()
        .filter(|f| (outputs.first_frame..=outputs.last_frame).contains(f));
    for frame in frames {
        if outputs
            .objects
            .iter()
            .any(|object| naming::render(outputs.template, object, frame) == stem)
        {
            return Some("a frame file of this run (output.name)");
        }
    }
    None
}

/// Every number a frame placeholder could have rendered into `stem`: each run of digits and
/// every part of one (an object or literal text may put digits next to the frame's).
fn candidate_frames(stem: &str) -> Vec<u64> {
    let digits: Vec<(usize, char)> = stem.char_indices().collect();
    let mut frames = Vec::new();
    for (start, &(i, c)) in digits.iter().enumerate() {
        if !c.is_ascii_digit() {
            continue;
        }
        let mut end = start;
        while end < digits.len() && digits[end].1.is_ascii_digit() && end - start < 20 {
            end += 1;
            let j = digits.get(end).map_or(stem.len(), |&(j, _)| j);
            if let Ok(frame) = stem[i..j].parse() {
                frames.push(frame);
            }
        }
    }
    frames.sort_unstable();
    frames.dedup();
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_numbers_are_found_wherever_digits_may_hide_them() {
        assert_eq!(candidate_frames("c.0012"), vec![0, 1, 2, 12]);
        assert_eq!(candidate_frames("c15"), vec![1, 5, 15]);
        assert!(candidate_frames("cloth").is_empty());
    }

    #[test]
    fn outputs_over_inputs_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let outputs = OutputNames {
            dir: dir.path(),
            stats: "stats.jsonl",
            template: "{object}.{frame:04}",
            objects: vec!["c".into(), "d7".into(), "c_render".into()],
            formats: &[Format::Obj, Format::Ply, Format::Mdd, Format::Usd],
            stage: "shot".into(),
            first_frame: 1,
            last_frame: 48,
        };
        let refused = |name: &str| refuse_writing_over(&outputs, &[dir.path().join(name)]).is_err();
        for name in [
            "stats.jsonl",
            ".stats.jsonl.tmp",
            "c.0001.obj",
            "d7.0048.ply",
            ".c.0010.obj.tmp",
            "checkpoints/frame.bin",
            "c_render.0002.obj",
            "d7.mdd",
            "shot.usdc",
            "preview/shot.0001.png",
        ] {
            std::fs::create_dir_all(dir.path().join("checkpoints")).unwrap();
            std::fs::create_dir_all(dir.path().join("preview")).unwrap();
            assert!(refused(name), "{name}");
        }
        for name in [
            "c.0049.obj",
            "c.0001.stl",
            "e.0001.obj",
            "c.001.obj",
            "scene.toml",
            "c.pc2",
            "shot.usda",
        ] {
            assert!(!refused(name), "{name}");
        }
        // An input elsewhere, and an output folder that does not exist yet.
        let other = tempfile::tempdir().unwrap();
        assert!(refuse_writing_over(&outputs, &[other.path().join("c.0001.obj")]).is_ok());
        let missing = OutputNames {
            dir: &dir.path().join("new"),
            ..outputs
        };
        assert!(refuse_writing_over(&missing, &[dir.path().join("new/c.0001.obj")]).is_ok());
    }
}
