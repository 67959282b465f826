//! Output file names from `output.name` (`{object}.{frame:04}`) and the guard that keeps
//! every file inside the output directory: a rendered name is a plain file name, never a path.

/// Checks a name template: only `{object}`, `{frame}` and `{frame:0N}` (N = 1..9) are
/// placeholders, `{frame…}` must appear (else every frame would overwrite the last) and
/// `{object}` too when the scene has several objects.
pub fn check_template(template: &str, object_count: usize) -> Result<(), String> {
    let mut has_frame = false;
    let mut has_object = false;
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let close = rest[open..]
            .find('}')
            .ok_or_else(|| format!("`{template}`: unclosed `{{`"))?;
        let token = &rest[open + 1..open + close];
        match token {
            "object" => has_object = true,
            "frame" => has_frame = true,
            t if frame_width(t).is_some() => has_frame = true,
            t => {
                return Err(format!(
                    "`{template}`: unknown placeholder `{{{t}}}`; use {{object}}, {{frame}} or {{frame:04}}"
                ))
            }
        }
        rest = &rest[open + close + 1..];
    }
    if !has_frame {
        return Err(format!(
            "`{template}` needs a {{frame}} placeholder, or every frame overwrites the last"
        ));
    }
    if object_count > 1 && !has_object {
        return Err(format!(
            "`{template}` needs an {{object}} placeholder: the scene has {object_count} objects"
        ));
    }
    check_file_name(&render(template, "object", 0))
}

/// A plain file name: not empty, not `.`/`..`, no path separator or NUL.
pub fn check_file_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
        return Err(format!(
            "`{name}` must be a plain file name (no `/`, `\\`, `..`): files stay inside the output directory"
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
        assert!(check_template("{object}", 1).is_err());
        assert!(check_template("{frame}", 2).is_err());
        assert!(check_template("{frame}", 1).is_ok());
        assert!(check_template("{object}.{frame:4}", 1).is_err());
        assert!(check_template("{object}.{frame:04", 1).is_err());
        assert!(check_file_name("..").is_err());
    }
}
