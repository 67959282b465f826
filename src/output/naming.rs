//! Output file names from `output.name` (`{object}.{frame:04}`) and the guard that keeps
//! every file inside the output directory: a rendered name is a plain file name, never a path.

use super::preview::PREVIEW_DIRECTORY;
use crate::quote::quoted;
use crate::scene::types::Format;
use clap::ValueEnum;

/// Checks a name template: only `{object}`, `{frame}` and `{frame:0N}` (N = 1..9) are
/// placeholders, `{frame…}` must appear (else every frame would overwrite the last) and
/// `{object}` too when the scene has several objects.
pub fn check_template(template: &str, object_count: usize) -> Result<(), String> {
    let shown = quoted(template);
    let mut has_frame = false;
    let mut has_object = false;
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let close = rest[open..]
            .find('}')
            .ok_or_else(|| format!("`{shown}`: unclosed `{{`"))?;
        let token = &rest[open + 1..open + close];
        match token {
            "object" => has_object = true,
            "frame" => has_frame = true,
            t if frame_width(t).is_some() => has_frame = true,
            t => {
                return Err(format!(
                    "`{shown}`: unknown placeholder `{{{}}}`; use {{object}}, {{frame}} or {{frame:04}}",
                    quoted(t)
                ))
            }
        }
        rest = &rest[open + close + 1..];
    }
    if !has_frame {
        return Err(format!(
            "`{shown}` needs a {{frame}} placeholder, or every frame overwrites the last"
        ));
    }
    if object_count > 1 && !has_object {
        return Err(format!(
            "`{shown}` needs an {{object}} placeholder: the scene has {object_count} objects"
        ));
    }
    let rendered = render(template, "object", 0);
    check_file_name(&rendered)?;
    if rendered.starts_with('.') {
        return Err(format!(
            "`{shown}` must not start with `.`: the frame files would be hidden, and the \
             temporary files start with `.`"
        ));
    }
    Ok(())
}

/// Longest file name most file systems accept, bytes.
const MAX_FILE_NAME: usize = 255;
/// What the stats log's temporary file adds to its name: `.` + name + `.tmp`.
const STATS_NAME_EXTRA: usize = 1 + 4;
/// The folder in the output directory that holds the checkpoints (`super::checkpoint`).
pub const CHECKPOINT_DIRECTORY: &str = "checkpoints";
/// What a frame file name adds to the rendered stem at most: `.` + stem + `.obj` + `.tmp`.
const FRAME_NAME_EXTRA: usize = 1 + 4 + 4;
/// Above this many (object, frame) pairs the uniqueness check is not run exhaustively.
const MAX_NAMES_CHECKED: u64 = 2_000_000;

/// Checks that the stats log's name is a plain file name that cannot be mistaken for a frame
/// file or a temporary file.
pub fn check_stats_name(stats: &str) -> Result<(), String> {
    check_file_name(stats)?;
    let shown = quoted(stats);
    // Every format's extension, whether this run writes it or not: a stats log named
    // `cloth.mdd` was overwritten by the MDD file of object `cloth`.
    let cache_file =
        (Format::value_variants().iter()).any(|f| stats.ends_with(&format!(".{}", f.extension())));
    if stats.starts_with('.') || stats.ends_with(".tmp") || cache_file {
        return Err(format!(
            "`{shown}` must not start with `.` or end in .tmp, .obj, .ply, .usdc, .usda, .mdd or \
             .pc2 (temporary and cache files do)"
        ));
    }
    // Rewritten crash-safely through `.NAME.tmp`: five bytes more than the name.
    if stats.len() + STATS_NAME_EXTRA > MAX_FILE_NAME {
        return Err(format!(
            "`{shown}` is {} bytes; a stats file name may have at most {} (its temporary \
             file adds {STATS_NAME_EXTRA})",
            stats.len(),
            MAX_FILE_NAME - STATS_NAME_EXTRA
        ));
    }
    if stats == CHECKPOINT_DIRECTORY {
        return Err(format!(
            "`{shown}` is the folder the checkpoints go to; choose another name"
        ));
    }
    if stats == PREVIEW_DIRECTORY {
        return Err(format!(
            "`{shown}` is the folder the preview images go to; choose another name"
        ));
    }
    Ok(())
}

/// Longest path most systems accept, bytes (Linux `PATH_MAX` less its NUL).
const MAX_PATH: usize = 4095;

/// Checks that the output directory is a path the file system can hold: not empty, no NUL,
/// no component longer than a file name may be, not longer than a path may be. Refused here,
/// such a folder would fail only when the run creates it.
pub fn check_directory(dir: &str) -> Result<(), String> {
    if dir.is_empty() {
        return Err("must not be empty".into());
    }
    if dir.contains('\0') {
        return Err(format!("`{}` contains a NUL character", quoted(dir)));
    }
    if dir.len() > MAX_PATH {
        return Err(format!(
            "`{}` is {} bytes; a path may have at most {MAX_PATH}",
            quoted(dir),
            dir.len()
        ));
    }
    if let Some(part) = dir.split('/').find(|part| part.len() > MAX_FILE_NAME) {
        return Err(format!(
            "`{}` has a folder name of {} bytes; at most {MAX_FILE_NAME} are allowed",
            quoted(dir),
            part.len()
        ));
    }
    Ok(())
}

/// Checks that every frame file of every object gets its own plain name of acceptable length.
pub fn check_names(
    template: &str,
    objects: &[&str],
    first_frame: u64,
    last_frame: u64,
) -> Result<(), String> {
    check_template(template, objects.len())?;
    let shown = quoted(template);
    for object in objects {
        let longest = render(template, object, last_frame).len() + FRAME_NAME_EXTRA;
        if longest > MAX_FILE_NAME {
            return Err(format!(
                "`{shown}` gives object `{}` file names of {longest} bytes; at most {MAX_FILE_NAME} are allowed",
                quoted(object)
            ));
        }
    }
    if objects.len() < 2 || fixed_width_frames(template, last_frame) {
        // One object, or frame numbers of fixed width: a name's length fixes the object
        // name's length and so its position, so equal names mean equal object and frame.
        return Ok(());
    }
    let pairs = objects.len() as u64 * (last_frame - first_frame + 1);
    if pairs > MAX_NAMES_CHECKED {
        return Err(format!(
            "`{shown}` with several objects needs a zero-padded frame wide enough for frame {last_frame}, e.g. {{frame:0{}}}",
            last_frame.to_string().len()
        ));
    }
    let mut seen = std::collections::BTreeMap::new();
    for object in objects {
        for frame in first_frame..=last_frame {
            if let Some((other, other_frame)) =
                seen.insert(render(template, object, frame), (*object, frame))
            {
                return Err(format!(
                    "`{shown}` gives object `{}` frame {frame} and object `{}` frame {other_frame} the same file name; separate {{object}} and {{frame}} or pad the frame ({{frame:04}})",
                    quoted(object),
                    quoted(other)
                ));
            }
        }
    }
    Ok(())
}

/// Whether every `{frame…}` placeholder is zero-padded wide enough for `last_frame`.
fn fixed_width_frames(template: &str, last_frame: u64) -> bool {
    let digits = last_frame.to_string().len();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            return false;
        };
        let token = &rest[open + 1..open + close];
        if token == "frame" || frame_width(token).is_some_and(|w| w < digits) {
            return false;
        }
        rest = &rest[open + close + 1..];
    }
    true
}

/// A plain file name: not empty, not `.`/`..`, no path separator or NUL.
pub fn check_file_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
        return Err(format!(
            "`{}` must be a plain file name (no `/`, `\\`, `..`): files stay inside the output directory",
            quoted(name)
        ));
    }
    Ok(())
}

/// `0N` → N for `{frame:0N}`.
fn frame_width(token: &str) -> Option<usize> {
    let digits = token.strip_prefix("frame:0")?;
    match digits.parse::<usize>() {
        Ok(width @ 1..=9) if digits.len() == 1 => Some(width),
        _ => None,
    }
}

/// Substitutes the placeholders of a template that passed [`check_template`].
pub fn render(template: &str, object: &str, frame: u64) -> String {
    let mut out = String::with_capacity(template.len() + 16);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = open + rest[open..].find('}').unwrap_or(rest.len() - open);
        let token = &rest[open + 1..close.min(rest.len())];
        match token {
            "object" => out.push_str(object),
            "frame" => out.push_str(&frame.to_string()),
            t => match frame_width(t) {
                Some(width) => out.push_str(&format!("{frame:0width$}")),
                None => out.push_str(&rest[open..=close.min(rest.len() - 1)]),
            },
        }
        rest = rest.get(close + 1..).unwrap_or("");
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_the_default_template() {
        assert_eq!(render("{object}.{frame:04}", "cloth", 7), "cloth.0007");
        assert_eq!(render("f{frame}_{object}", "a", 12), "f12_a");
    }

    #[test]
    fn refuses_templates_that_escape_or_collide() {
        assert!(check_template("../{object}.{frame:04}", 1).is_err());
        assert!(check_template("{object}/{frame}", 1).is_err());
        assert!(check_template("..{frame}", 1).is_err());
        assert!(check_template("{object}", 1).is_err());
        assert!(check_template("{frame}", 2).is_err());
        assert!(check_template("{frame}", 1).is_ok());
        assert!(check_template("{object}.{frame:4}", 1).is_err());
        assert!(check_template("{object}.{frame:04", 1).is_err());
        assert!(check_file_name("..").is_err());
    }

    #[test]
    fn names_of_different_objects_never_collide() {
        // `a` frame 11 and `a1` frame 1 would both be `a11`.
        let message = check_names("{object}{frame}", &["a", "a1"], 1, 12).unwrap_err();
        assert!(message.contains("the same file name"), "{message}");
        assert!(check_names("{object}{frame:04}", &["a", "a1"], 1, 12).is_ok());
        assert!(check_names("{object}.{frame}", &["a", "a1"], 1, 120).is_ok());
        // Padding too narrow for the last frame falls back to the exhaustive check.
        assert!(check_names("{object}{frame:01}", &["a", "a1"], 1, 12).is_err());
    }

    #[test]
    fn stats_log_cannot_pose_as_a_frame_or_temporary_file() {
        for stats in ["c.0001.obj", "x.ply", ".c.0001.obj.tmp", ".hidden"] {
            assert!(check_stats_name(stats).is_err(), "{stats}");
        }
    }

    #[test]
    fn stats_log_cannot_take_a_whole_run_file_or_a_folder() {
        // `cloth.mdd` was overwritten by object `cloth`'s MDD file, `shot.usda` by the stage
        // of `shot.toml`; `preview` failed after frame 1 was written, when the folder was made.
        for stats in [
            "cloth.mdd",
            "cloth.pc2",
            "shot.usda",
            "shot.usdc",
            "preview",
        ] {
            assert!(check_stats_name(stats).is_err(), "{stats}");
        }
        for stats in ["stats.jsonl", "log.json", "previews", "run.mdd.jsonl"] {
            assert!(check_stats_name(stats).is_ok(), "{stats}");
        }
    }

    #[test]
    fn overlong_names_are_refused() {
        let long = "x".repeat(250);
        let message = check_names("{object}.{frame:04}", &[&long], 1, 3).unwrap_err();
        assert!(message.contains("bytes"), "{message}");
    }

    #[test]
    fn a_long_unknown_placeholder_is_quoted_short() {
        // Found by the scene fuzzer: the placeholder's text was echoed whole.
        let template = format!("{{frame}}{{{}}}", "s".repeat(3000));
        let message = check_template(&template, 1).unwrap_err();
        assert!(message.len() < 400, "{message}");
    }
}
