//! Reading a scene: TOML text → [`SceneFile`], with errors a person can act on.
//!
//! Every error names the file, then the line:column when the text has one, the key path
//! (`object[2].bending.compliance`) and what was expected; an unknown key or value gets a
//! "did you mean" when a known one is close. Non-finite numbers (`nan`, `inf`) are refused.
//! `--set KEY=VALUE` overrides are applied to the parsed document before the typed read, so
//! they are checked exactly like keys written in the file.

use super::override_origin::name_overrides;
use super::types::SceneFile;
use crate::quote::{quoted, shown_path, window};
use anyhow::{anyhow, bail, ensure, Context, Result};
use std::path::{Path, PathBuf};

/// A scene read from disk, with what the run log records about its source.
pub struct LoadedScene {
    pub path: PathBuf,
    /// Folder that relative paths in the scene are resolved against.
    pub base_dir: PathBuf,
    pub sha256: String,
    pub file: SceneFile,
}

/// Largest scene file read, bytes (a scene is a few kilobytes of TOML).
const MAX_SCENE_BYTES: u64 = 64 << 20;

/// Reads the scene file at `path` and applies the `--set` overrides.
pub fn load(path: &Path, overrides: &[String]) -> Result<LoadedScene> {
    // `check /dev/zero` read forever and a FIFO blocked: only regular files are read.
    if let Ok(metadata) = std::fs::metadata(path) {
        ensure!(
            metadata.is_file(),
            "cannot read scene {}: not a regular file (a device, pipe or folder)",
            shown_path(path)
        );
        // Scenes are text of a few kilobytes; anything this large is not one.
        ensure!(
            metadata.len() <= MAX_SCENE_BYTES,
            "cannot read scene {}: {} bytes is more than a scene file's {MAX_SCENE_BYTES}",
            shown_path(path),
            metadata.len()
        );
    }
    let bytes =
        std::fs::read(path).with_context(|| format!("cannot read scene {}", shown_path(path)))?;
    load_bytes(path, &bytes, overrides)
}

/// Reads a scene from `bytes` as though they were the contents of the file at `path`: errors
/// name `path`, relative mesh paths resolve against its folder, and nothing is read from
/// disk. [`load`] reads the file and comes here; the fuzzer comes here directly.
pub fn load_bytes(path: &Path, bytes: &[u8], overrides: &[String]) -> Result<LoadedScene> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let valid = &bytes[..e.valid_up_to()];
        let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
        let column = valid.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
        anyhow!(
            "{}:{line}:{column}: not UTF-8 text (TOML files are UTF-8)",
            shown_path(path)
        )
    })?;
    let mut file = parse(text).map_err(|e| anyhow!("{}:{e}", shown_path(path)))?;
    if !overrides.is_empty() {
        file = apply_overrides(text, overrides)
            .with_context(|| format!("{}: in a --set override", shown_path(path)))?;
    }
    let base_dir = path
        .parent()
        .map(Path::to_path_buf)
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| PathBuf::from("."));
    Ok(LoadedScene {
        path: path.to_path_buf(),
        base_dir,
        sha256: sha256_hex(bytes),
        file,
    })
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Parses scene text. Errors start with `line:col: ` (the caller puts the file in front).
pub fn parse(text: &str) -> Result<SceneFile> {
    let document = toml::de::DeTable::parse(text).map_err(|e| located(text, &e, ""))?;
    if let Some((key, span, message)) = first_refused_value(document.get_ref(), "") {
        return Err(at_span(text, span.start, &key, &message));
    }
    // `[[simulation]]` read as "invalid type: map, expected a number": say what it is.
    for (key, value) in document.get_ref().iter() {
        let name = key.get_ref();
        let single = ["simulation", "output", "collision", "gates"].contains(&name.as_ref());
        if single && matches!(value.get_ref(), toml::de::DeValue::Array(_)) {
            return Err(at_span(
                text,
                key.span().start,
                name,
                &format!("is one table: write `[{name}]`, not `[[{name}]]`"),
            ));
        }
    }
    let deserializer = toml::Deserializer::from(document);
    let file: SceneFile = serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let path = e.path().to_string();
        located(text, e.inner(), &path)
    })?;
    Ok(file)
}

/// `line:col: key.path: message [did you mean ...]` plus the offending line with a caret.
fn located(text: &str, error: &toml::de::Error, key_path: &str) -> anyhow::Error {
    let message = plain_words(error.message().trim_end());
    let hint = suggestion(&message)
        .map(|s| format!("; did you mean `{s}`?"))
        .unwrap_or_default();
    let message = format!("{message}{hint}");
    match error.span() {
        Some(span) => at_span(text, span.start, key_path, &message),
        None if key_path.is_empty() || key_path == "." => anyhow!(" {message}"),
        None => anyhow!(" {}: {message}", window(key_path, 1).0),
    }
}

/// An error at byte `offset` of `text`: `line:col: key: message`, then the line and a caret.
fn at_span(text: &str, offset: usize, key_path: &str, message: &str) -> anyhow::Error {
    let key = if key_path.is_empty() || key_path == "." {
        String::new()
    } else {
        format!("{}: ", window(key_path, 1).0)
    };
    let (line, column, source_line) = line_column(text, offset);
    let (shown, caret_column) = window(source_line, column);
    let caret = " ".repeat(caret_column.saturating_sub(1)) + "^";
    anyhow!("{line}:{column}: {key}{message}\n    | {shown}\n    | {caret}")
}

/// Serde names Rust types; say what they mean to someone writing a scene. Text quoted from
/// the scene (`` `name` ``) is clipped, so a megabyte-long key gives a short message.
fn plain_words(message: &str) -> String {
    clip_quoted(message)
        .replace("expected u64", "expected a whole number >= 0")
        .replace("expected f64", "expected a number")
        .replace("expected a boolean", "expected true or false")
}

/// `message` with the scene's text in it cut to [`crate::quote::MAX_QUOTED`] characters.
///
/// Serde quotes names in backticks, but a name may hold backticks itself (a TOML quoted key,
/// a `--set` key): in "unknown field `…`, expected …" the user's name is everything between
/// the first backtick and the last "`, expected" / "`, there are no", whatever it holds, and
/// is quoted as one piece. A string where another type goes, "invalid type: string "…",
/// expected …", is quoted the same way, so what was expected is kept after a long string.
/// Elsewhere every backtick-separated piece is clipped, serde's own words included (they are
/// short).
fn clip_quoted(message: &str) -> String {
    for (prefix, close) in [
        ("unknown field `", "`"),
        ("unknown variant `", "`"),
        ("invalid type: string \"", "\""),
        ("invalid value: string \"", "\""),
    ] {
        let Some(rest) = message.strip_prefix(prefix) else {
            continue;
        };
        let end = (rest.rfind(&format!("{close}, expected")))
            .or_else(|| rest.rfind(&format!("{close}, there are no")));
        if let Some(end) = end {
            let (name, tail) = rest.split_at(end);
            return format!("{prefix}{}{}", quoted(name), clip_quoted(tail));
        }
    }
    let pieces: Vec<String> = message.split('`').map(|piece| window(piece, 1).0).collect();
    pieces.join("`")
}

/// 1-based line and column (in characters) of a byte offset, and that line's text.
fn line_column(text: &str, offset: usize) -> (usize, usize, &str) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |k| k + 1);
    let column = text[line_start..offset].chars().count() + 1;
    let line_text = text[line_start..].lines().next().unwrap_or("");
    (line, column, line_text)
}

/// The first `nan`/`inf` in a parsed document: its key path, span and spelling.
fn first_refused_value(
    table: &toml::de::DeTable<'_>,
    path: &str,
) -> Option<(String, std::ops::Range<usize>, String)> {
    table.iter().find_map(|(key, value)| {
        let child = if path.is_empty() {
            key.get_ref().to_string()
        } else {
            format!("{path}.{}", key.get_ref())
        };
        refused_value(value, child)
    })
}

/// A value no scene key takes: NaN or an infinity, or a date-time (which serde would only
/// call "invalid type: map"); its key path, span and what to say.
fn refused_value(
    value: &toml::Spanned<toml::de::DeValue<'_>>,
    path: String,
) -> Option<(String, std::ops::Range<usize>, String)> {
    use toml::de::DeValue;
    match value.get_ref() {
        DeValue::Float(f) => {
            let written = f.as_str();
            let finite = written.parse::<f64>().is_ok_and(f64::is_finite);
            (!finite).then(|| {
                (
                    path,
                    value.span(),
                    format!("{written} is not a finite number"),
                )
            })
        }
        DeValue::Datetime(when) => Some((path, value.span(), date_time_message(when))),
        DeValue::Table(table) => first_refused_value(table, &path),
        DeValue::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(k, item)| refused_value(item, format!("{path}[{k}]"))),
        _ => None,
    }
}

/// What to say of a date-time where a scene value was expected.
fn date_time_message(when: &impl std::fmt::Display) -> String {
    format!(
        "`{}` is a TOML date-time; no scene key takes one",
        quoted(&when.to_string())
    )
}

/// Refuses NaN, infinities and date-times anywhere in the document; the error starts with
/// the key path.
fn check_finite(value: &toml::Value, path: &str) -> Result<()> {
    match value {
        toml::Value::Datetime(when) => bail!("{path}: {}", date_time_message(when)),
        toml::Value::Float(f) if !f.is_finite() => {
            let written = match f {
                f if f.is_nan() => "nan",
                f if *f > 0.0 => "inf",
                _ => "-inf",
            };
            bail!("{path}: {written} is not a finite number")
        }
        toml::Value::Table(table) => {
            for (key, item) in table {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                check_finite(item, &child)?;
            }
            Ok(())
        }
        toml::Value::Array(items) => {
            for (k, item) in items.iter().enumerate() {
                check_finite(item, &format!("{path}[{k}]"))?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// From serde's "unknown field `x`, expected one of `a`, `b`" (or "unknown variant"), the
/// closest expected name when it is close enough to be a typo.
fn suggestion(message: &str) -> Option<String> {
    if !message.starts_with("unknown field") && !message.starts_with("unknown variant") {
        return None;
    }
    let quoted: Vec<&str> = message.split('`').skip(1).step_by(2).collect();
    let (unknown, candidates) = quoted.split_first()?;
    closest(unknown, candidates.iter().copied()).map(str::to_string)
}

/// The candidate closest to `unknown` when it is close enough to be a typo of it.
pub fn closest<'a>(unknown: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let allowed = |c: &str| (c.len().max(unknown.len()) / 3).max(1);
    candidates
        // The distance is at least the difference in length: skip the hopeless ones unmeasured.
        .filter(|c| c.len().abs_diff(unknown.len()) <= allowed(c))
        .map(|c| (edit_distance(unknown, c), c))
        .filter(|&(d, c)| d <= allowed(c))
        .min()
        .map(|(_, c)| c)
}

/// Reads `run --gate KEY=VALUE` as the `--set` override `gates.KEY=VALUE`, refusing an
/// unknown gate (with a "did you mean") or a value that is not a number >= 0 (a whole number
/// for `self_intersections`), naming the key.
pub fn gate_override(assignment: &str) -> Result<String> {
    use crate::gates::Gate;
    let shown = window(assignment, 1).0;
    let (key, value) = assignment.split_once('=').with_context(|| {
        format!("--gate {shown}: expected KEY=VALUE, e.g. max_edge_strain=0.05")
    })?;
    let key = key.trim();
    let names = || Gate::ALL.into_iter().map(Gate::name);
    let Some(gate) = Gate::named(key) else {
        let hint = closest(key, names())
            .map(|s| format!("; did you mean `{s}`?"))
            .unwrap_or_default();
        let list: Vec<&str> = names().collect();
        bail!(
            "--gate {shown}: unknown gate `{}`{hint} (gates: {})",
            window(key, 1).0,
            list.join(", ")
        );
    };
    let name = gate.name();
    let value = value.trim();
    let number: f64 = value.parse().map_err(|_| {
        anyhow!(
            "--gate {shown}: gates.{name}: `{}` is not a number ({})",
            window(value, 1).0,
            gate.unit()
        )
    })?;
    if !number.is_finite() {
        bail!("--gate {shown}: gates.{name}: {value} is not a finite number");
    }
    if number < 0.0 {
        bail!("--gate {shown}: gates.{name}: must be >= 0, got {value}");
    }
    if gate.is_count() && number.fract() != 0.0 {
        bail!("--gate {shown}: gates.{name}: expected a whole number >= 0, got {value}");
    }
    // Numbers written back as TOML: a float stays a float, a count an integer.
    let toml_value = if gate.is_count() {
        format!("{}", number as u64)
    } else {
        format!("{number:?}")
    };
    Ok(format!("gates.{name}={toml_value}"))
}

/// Edit distance counting insertions, deletions, substitutions and swaps of neighbours
/// (optimal string alignment), so `xbpd` is one typo away from `xpbd`.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    d[0] = (0..=b.len()).collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

/// Applies `--set KEY=VALUE` overrides to the document and reads it again.
///
/// `KEY` is a dotted path (`simulation.substeps`); `object.NAME.…` and `collider.NAME.…`
/// address an `[[object]]` / `[[collider]]` by its `name` (or by its 0-based index).
/// `VALUE` is read as a TOML value (`40`, `1e-4`, `true`, `[0, -9.81, 0]`, `"text"`); a bare
/// word (letters first, then letters, digits, `_`, `-`, `.`) is taken as a string
/// (`--set simulation.solver=pbd`); anything else that is not TOML (`1e309`) is an error.
fn apply_overrides(text: &str, overrides: &[String]) -> Result<SceneFile> {
    let mut document: toml::Table = toml::from_str(text)?;
    for assignment in overrides {
        apply_override(&mut document, assignment)
            .with_context(|| format!("--set {}", window(assignment, 1).0))?;
    }
    let root = toml::Value::Table(document);
    check_finite(&root, "")?;
    // The objects' and colliders' names, for a message naming the `--set` that wrote a key
    // (`object.cloth.…` is `object[i].…` there): read before the typed read takes the document.
    let names_in = |table: &str| -> Vec<Option<String>> {
        let entries = root.get(table).and_then(toml::Value::as_array);
        let name = |t: &toml::Value| t.get("name")?.as_str().map(str::to_owned);
        entries.map_or_else(Vec::new, |a| a.iter().map(name).collect())
    };
    let (objects, colliders) = (names_in("object"), names_in("collider"));
    let file: SceneFile = serde_path_to_error::deserialize(root).map_err(|e| {
        let suffix = suggestion(e.inner().message())
            .map(|s| format!("; did you mean `{s}`?"))
            .unwrap_or_default();
        let mut message = [format!(
            "{}: {}{suffix}",
            quoted(&e.path().to_string()),
            plain_words(e.inner().message().trim_end())
        )];
        name_overrides(&mut message, overrides, |table, name| {
            let names = if table == "object" {
                &objects
            } else {
                &colliders
            };
            names.iter().position(|n| n.as_deref() == Some(name))
        });
        let [message] = message;
        anyhow!(message)
    })?;
    Ok(file)
}

/// Most parts a `--set` key may have. The deepest scene keys have four
/// (`object.NAME.stretch.compliance`); a much deeper one would only build tables nested so
/// deep that reading and dropping them overflows the stack.
const MAX_KEY_PARTS: usize = 16;

fn apply_override(document: &mut toml::Table, assignment: &str) -> Result<()> {
    let (key, raw_value) = assignment
        .split_once('=')
        .context("expected KEY=VALUE, e.g. simulation.substeps=40")?;
    let value = parse_value(raw_value.trim())?;
    let segments: Vec<&str> = key.trim().split('.').collect();
    if segments.iter().any(|s| s.is_empty()) {
        bail!("`{}` is not a dotted key path", window(key, 1).0);
    }
    if segments.len() > MAX_KEY_PARTS {
        bail!(
            "the key has {} parts; scene keys have at most {MAX_KEY_PARTS}",
            segments.len()
        );
    }
    let (mut table, rest): (&mut toml::Table, &[&str]) = match segments.as_slice() {
        [array @ ("object" | "collider"), selector, rest @ ..] if !rest.is_empty() => {
            let element = find_named(document, array, selector)?;
            (element, rest)
        }
        _ => (document, segments.as_slice()),
    };
    let (last, parents) = rest.split_last().context("empty key")?;
    for segment in parents {
        let entry = table
            .entry(segment.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        table = entry
            .as_table_mut()
            .with_context(|| format!("`{segment}` is not a table"))?;
    }
    table.insert(last.to_string(), value);
    Ok(())
}

/// The `[[array]]` element whose `name` is `selector` (or whose index it is).
fn find_named<'a>(
    document: &'a mut toml::Table,
    array: &str,
    selector: &str,
) -> Result<&'a mut toml::Table> {
    let elements = document
        .get_mut(array)
        .and_then(toml::Value::as_array_mut)
        .with_context(|| format!("the scene has no [[{array}]]"))?;
    let names: Vec<String> = elements
        .iter()
        .filter_map(|e| e.get("name").and_then(|n| n.as_str()).map(str::to_string))
        .collect();
    let position = elements
        .iter()
        .position(|e| e.get("name").and_then(|n| n.as_str()) == Some(selector))
        .or_else(|| {
            selector
                .parse::<usize>()
                .ok()
                .filter(|&k| k < elements.len())
        })
        .with_context(|| {
            let have: Vec<String> = names.iter().take(10).map(|n| quoted(n)).collect();
            let more = if names.len() > 10 { ", …" } else { "" };
            format!(
                "no {array} named `{}` (have: {}{more})",
                quoted(selector),
                have.join(", ")
            )
        })?;
    elements[position]
        .as_table_mut()
        .with_context(|| format!("{array}[{position}] is not a table"))
}

fn parse_value(raw: &str) -> Result<toml::Value> {
    if let Ok(mut table) = toml::from_str::<toml::Table>(&format!("value = {raw}")) {
        // `3\nframes = 99` reads as a table of two keys: anything after the value is an
        // error, not silently dropped.
        ensure!(
            table.len() == 1,
            "`{}` is more than one TOML value: a --set value is a single value, with nothing after it",
            window(raw, 1).0
        );
        if let Some(value) = table.remove("value") {
            return Ok(value);
        }
    }
    let bare_word = raw.starts_with(|c: char| c.is_ascii_alphabetic())
        && raw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if bare_word {
        Ok(toml::Value::String(raw.to_string()))
    } else {
        bail!(
            "`{}` is not a TOML value (numbers must fit a 64-bit float; quote text as \"...\")",
            window(raw, 1).0
        )
    }
}

#[cfg(test)]
mod tests;
