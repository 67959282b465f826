//! Which `--set` argument wrote the key a message names, so that a value out of range or of
//! the wrong type set on the command line is reported with the argument that set it
//! (docs/scene-format.md, "Overriding keys": "Errors name the `--set` argument").

use crate::quote::quoted;

/// `errors`, each `KEY: message`, with ` (from --set ARG)` after each whose key (or a table
/// holding it) the last matching `--set` in `overrides` wrote. `index_of(table, name)` is
/// the place of the object or collider called `name`: `--set object.cloth.bending.compliance`
/// writes the key `object[i].bending.compliance`.
pub fn name_overrides(
    errors: &mut [String],
    overrides: &[String],
    index_of: impl Fn(&str, &str) -> Option<usize>,
) {
    let written: Vec<(String, &String)> = (overrides.iter())
        .filter_map(|arg| Some((written_key(arg, &index_of)?, arg)))
        .collect();
    for error in errors {
        let key = error.split(": ").next().unwrap_or_default();
        let origin = (written.iter().rev()).find(|(written, _)| covers(written, key));
        if let Some((_, arg)) = origin {
            *error = format!("{error} (from --set {})", quoted(arg));
        }
    }
}

/// The key `arg` (`KEY=VALUE`) writes, as messages name it.
fn written_key(arg: &str, index_of: impl Fn(&str, &str) -> Option<usize>) -> Option<String> {
    let (key, _) = arg.split_once('=')?;
    let parts: Vec<&str> = key.trim().split('.').collect();
    match parts.as_slice() {
        [table @ ("object" | "collider"), name, rest @ ..] => {
            let place = format!("{table}[{}]", index_of(table, name)?);
            Some(
                std::iter::once(place.as_str())
                    .chain(rest.iter().copied())
                    .collect::<Vec<_>>()
                    .join("."),
            )
        }
        _ => Some(parts.join(".")),
    }
}

/// Whether `key` is `written` or a key inside it.
fn covers(written: &str, key: &str) -> bool {
    (key.strip_prefix(written))
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.') || rest.starts_with('['))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_set_that_wrote_their_key() {
        let overrides = [
            "simulation.fps=0".to_string(),
            "object.cloth.bending={ compliance = -1.0 }".to_string(),
            "collider.ball.friction=-2".to_string(),
        ];
        let index_of = |table: &str, name: &str| match (table, name) {
            ("object", "cloth") => Some(1),
            ("collider", "ball") => Some(0),
            _ => None,
        };
        let mut errors = vec![
            "simulation.fps: must be from 0.001 to 1e6, got 0".to_string(),
            "simulation.fps_extra: not ours".to_string(),
            "object[1].bending.compliance: must be >= 0".to_string(),
            "object[0].bending.compliance: the scene file's own".to_string(),
            "collider[0].friction: must be >= 0".to_string(),
        ];
        name_overrides(&mut errors, &overrides, index_of);
        assert!(
            errors[0].ends_with("(from --set simulation.fps=0)"),
            "{}",
            errors[0]
        );
        assert!(!errors[1].contains("--set"), "{}", errors[1]);
        assert!(errors[2].ends_with("(from --set object.cloth.bending={ compliance = -1.0 })"));
        assert!(!errors[3].contains("--set"), "{}", errors[3]);
        assert!(errors[4].ends_with("(from --set collider.ball.friction=-2)"));
    }
}
