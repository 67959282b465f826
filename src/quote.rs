//! How messages show what the user wrote. Names, keys, values, lines and paths come from the
//! scene or the command line and may be a megabyte long; a message shows at most
//! [`MAX_QUOTED`] characters of each, with `…` where it was cut (docs/scene-format.md,
//! "Hostile input").

use std::path::Path;

/// Most characters of one name, value, line or path a message shows.
pub const MAX_QUOTED: usize = 100;

/// `text` as a message quotes it: its first [`MAX_QUOTED`] characters, `…` where cut.
pub fn quoted(text: &str) -> String {
    window(text, 1).0
}

/// A path as a message shows it: whole when short, else its last characters after `…`, since
/// the file name at the end says most.
pub fn shown_path(path: &Path) -> String {
    let text = path.display().to_string();
    let length = text.chars().count();
    if length <= MAX_QUOTED {
        return text;
    }
    let tail: String = text.chars().skip(length - (MAX_QUOTED - 1)).collect();
    format!("…{tail}")
}

/// The part of `line` a message shows: all of it when short, else [`MAX_QUOTED`] characters
/// around 1-based `column`, with `…` where it was cut. Returns the text and the column of the
/// caret in it.
pub fn window(line: &str, column: usize) -> (String, usize) {
    let length = line.chars().count();
    if length <= MAX_QUOTED {
        return (line.to_string(), column);
    }
    let start = column
        .saturating_sub(MAX_QUOTED / 2)
        .min(length - MAX_QUOTED);
    let shown: String = line.chars().skip(start).take(MAX_QUOTED).collect();
    let before = if start > 0 { "…" } else { "" };
    let after = if start + MAX_QUOTED < length {
        "…"
    } else {
        ""
    };
    (
        format!("{before}{shown}{after}"),
        column - start + before.chars().count(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_and_paths_are_cut_to_the_limit() {
        let long = "n".repeat(1_000_000);
        let q = quoted(&long);
        assert_eq!(q.chars().count(), MAX_QUOTED + 1);
        assert!(q.ends_with('…'));
        assert_eq!(quoted("short"), "short");
        let path = Path::new("/farm").join("d".repeat(500)).join("cloth.obj");
        let shown = shown_path(&path);
        assert_eq!(shown.chars().count(), MAX_QUOTED);
        assert!(shown.starts_with('…') && shown.ends_with("/cloth.obj"));
        assert_eq!(shown_path(Path::new("a/b.obj")), "a/b.obj");
    }
}
