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
/// caret in it. Control characters but tabs are shown escaped (`\n`, `\u{1b}`), so quoted
/// input is always one line and cannot drive the terminal.
pub fn window(line: &str, column: usize) -> (String, usize) {
    let escaped = escape_controls(line);
    // The caret's column in the escaped line: the escaped width of what comes before it.
    let column = 1 + escape_controls(
        &line
            .chars()
            .take(column.saturating_sub(1))
            .collect::<String>(),
    )
    .chars()
    .count();
    let line = &escaped;
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

/// `text` with its control characters but tabs escaped as Rust escapes them; borrowed when it
/// has none.
fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    let escaped = |c: char| c.is_control() && c != '\t';
    if !text.chars().any(escaped) {
        return std::borrow::Cow::Borrowed(text);
    }
    let escaped = text
        .chars()
        .map(|c| {
            if escaped(c) {
                c.escape_debug().to_string()
            } else {
                c.to_string()
            }
        })
        .collect();
    std::borrow::Cow::Owned(escaped)
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

    #[test]
    fn control_characters_are_escaped_so_a_quote_is_one_line() {
        assert_eq!(quoted("a\nb\u{1b}[31m"), "a\\nb\\u{1b}[31m");
        let long = "x\n".repeat(1000);
        assert!(!quoted(&long).contains('\n') && quoted(&long).chars().count() <= 101);
        // The caret stays under the character it points at.
        assert_eq!(window("a\u{7}b", 3), ("a\\u{7}b".to_string(), 7));
        assert_eq!(window("a\tb", 3), ("a\tb".to_string(), 3));
    }
}
