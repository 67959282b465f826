//! Wavefront OBJ reader.
//!
//! Our own rather than tobj because a simulation cache needs what tobj does not give:
//! `l` polylines kept as rope segments (tobj turns them into faces or drops them), vertex order
//! kept across `o`/`g` groups (tobj re-indexes per model), one UV per vertex, errors that name
//! the line, and `mtllib` never opened. Supported statements: `v x y z [w]`, `vt u [v [w]]`,
//! `f` with corners `v`, `v/vt`, `v//vn`, `v/vt/vn` (negative = relative), `l` polylines.
//! `vn` is ignored (normals are recomputed every frame); `o`, `g`, `s`, `usemtl`, `mtllib`,
//! `p` and comments are skipped; other statements are skipped with a warning.

use super::{Mesh, MAX_POLYGON_VERTICES, MAX_VERTICES};
use anyhow::{bail, Context, Result};
use glam::DVec3;
use std::path::Path;

/// Coordinates beyond this many metres are refused as a broken or mis-scaled file.
pub const MAX_ABS_COORDINATE: f64 = 1e9;

pub fn read_obj(path: &Path) -> Result<Mesh> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse_obj_bytes(&bytes).with_context(|| format!("invalid OBJ file {}", path.display()))
}

/// Parses a whole OBJ file held in memory; bytes that are not UTF-8 become U+FFFD (and so
/// fail where a number or index was expected).
pub fn parse_obj_bytes(bytes: &[u8]) -> Result<Mesh> {
    parse_obj(&String::from_utf8_lossy(bytes))
}

/// Parses OBJ text. Errors read `line N: ...`; the caller adds the file name.
pub fn parse_obj(text: &str) -> Result<Mesh> {
    let mut mesh = Mesh::new();
    let mut texcoords: Vec<[f64; 2]> = Vec::new();
    // For each vertex, the first texture coordinate a face corner gave it.
    let mut vertex_uv: Vec<Option<u32>> = Vec::new();
    let mut seam_vertices = 0usize;
    let mut skipped: Option<(usize, String)> = None;
    let mut skipped_count = 0usize;
    let mut corners: Vec<u32> = Vec::new();

    for (line_index, raw_line) in text.lines().enumerate() {
        let line_number = line_index + 1;
        let line = raw_line.split('#').next().unwrap_or("").trim();
        let mut words = line.split_ascii_whitespace();
        let Some(keyword) = words.next() else {
            continue;
        };
        let at = || format!("line {line_number}");
        match keyword {
            "v" => {
                if mesh.positions.len() == MAX_VERTICES {
                    bail!("line {line_number}: more than {MAX_VERTICES} vertices");
                }
                let xyz = read_numbers::<3>(&mut words, "v", 3).with_context(at)?;
                mesh.positions.push(DVec3::from_array(xyz));
                vertex_uv.push(None);
            }
            "vt" => {
                let uv = read_numbers::<2>(&mut words, "vt", 1).with_context(at)?;
                texcoords.push(uv);
            }
            "f" | "l" => {
                // Counted before anything is resolved, so an absurd face is refused at once.
                let count = words.clone().count();
                if keyword == "f" && count < 3 {
                    bail!("line {line_number}: a face needs at least 3 corners, found {count}");
                }
                if keyword == "f" && count > MAX_POLYGON_VERTICES {
                    bail!(
                        "line {line_number}: a face with {count} corners; at most {MAX_POLYGON_VERTICES} are supported"
                    );
                }
                if keyword == "l" && count < 2 {
                    bail!("line {line_number}: a line needs at least 2 points, found {count}");
                }
                corners.clear();
                for word in words {
                    let mut parts = word.split('/');
                    let v = resolve_index(parts.next(), mesh.positions.len(), "vertex")
                        .with_context(at)?;
                    if let Some(vt_word) = parts.next().filter(|s| !s.is_empty()) {
                        let vt =
                            resolve_index(Some(vt_word), texcoords.len(), "texture coordinate")
                                .with_context(at)?;
                        match vertex_uv[v as usize] {
                            None => vertex_uv[v as usize] = Some(vt),
                            Some(first) if texcoords[first as usize] != texcoords[vt as usize] => {
                                seam_vertices += 1
                            }
                            Some(_) => {}
                        }
                    }
                    corners.push(v);
                }
                if keyword == "f" {
                    mesh.add_face(&corners).with_context(at)?;
                } else {
                    mesh.segments
                        .extend(corners.windows(2).map(|w| [w[0], w[1]]));
                }
            }
            "vn" | "vp" | "o" | "g" | "s" | "usemtl" | "mtllib" | "p" => {}
            other => {
                skipped_count += 1;
                skipped.get_or_insert((line_number, other.to_string()));
            }
        }
    }

    if vertex_uv.iter().any(Option::is_some) {
        let missing = vertex_uv.iter().filter(|uv| uv.is_none()).count();
        if missing > 0 {
            mesh.warnings.push(format!(
                "{missing} vertices have no texture coordinate; they get (0, 0)"
            ));
        }
        mesh.uvs = Some(
            vertex_uv
                .iter()
                .map(|uv| uv.map_or([0.0, 0.0], |k| texcoords[k as usize]))
                .collect(),
        );
    }
    if seam_vertices > 0 {
        mesh.warnings.push(format!(
            "{seam_vertices} face corners give a vertex a second, different texture coordinate \
             (UV seams); output keeps one UV per vertex, the first one"
        ));
    }
    if let Some((line_number, keyword)) = skipped {
        mesh.warnings.push(format!(
            "skipped {skipped_count} unsupported statements (first: `{keyword}` at line {line_number})"
        ));
    }
    Ok(mesh)
}

/// Reads `N` numbers of which the first `required` must be present; the rest default to 0.
fn read_numbers<'a, const N: usize>(
    words: &mut impl Iterator<Item = &'a str>,
    keyword: &str,
    required: usize,
) -> Result<[f64; N]> {
    let mut out = [0.0; N];
    for (k, slot) in out.iter_mut().enumerate() {
        match words.next() {
            Some(word) => *slot = parse_coordinate(word)?,
            None if k < required => {
                bail!("`{keyword}` needs {required} numbers, found {k}")
            }
            None => break,
        }
    }
    Ok(out)
}

/// A finite coordinate of sane size; NaN, inf and values like 1e39 are refused.
pub fn parse_coordinate(word: &str) -> Result<f64> {
    let value: f64 = word
        .parse()
        .map_err(|_| anyhow::anyhow!("`{word}` is not a number"))?;
    check_coordinate(value)?;
    Ok(value)
}

pub fn check_coordinate(value: f64) -> Result<()> {
    if !value.is_finite() || value.abs() > MAX_ABS_COORDINATE {
        bail!("coordinate {value:e} is not finite or beyond ±{MAX_ABS_COORDINATE:e}");
    }
    Ok(())
}

/// Resolves a 1-based (or negative, relative) OBJ index against the `count` elements so far.
fn resolve_index(word: Option<&str>, count: usize, what: &str) -> Result<u32> {
    let word = word
        .filter(|w| !w.is_empty())
        .context(format!("missing {what} index"))?;
    let index: i64 = word
        .parse()
        .map_err(|_| anyhow::anyhow!("`{word}` is not a {what} index"))?;
    let resolved = match index {
        0 => bail!("{what} index 0 (OBJ indices start at 1)"),
        i if i > 0 => i - 1,
        i => count as i64 + i,
    };
    if resolved < 0 || resolved >= count as i64 {
        bail!("{what} index {index} refers to a {what} not defined before it ({count} so far)");
    }
    Ok(resolved as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_polygons_polylines_order_and_uvs() {
        let text = "mtllib missing.mtl\no a\nv 0 0 0\nv 1 0 0\nv 1 0 1\nv 0 0 1\nv 0 1 0\n\
                    vt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\nvn 0 1 0\n\
                    f 1/1/1 2/2/1 3/3/1 4/4/1\ng rope\nl 4 5 -5\n";
        let mesh = parse_obj(text).unwrap();
        assert_eq!(mesh.positions.len(), 5);
        assert_eq!(mesh.face(0), &[0, 1, 2, 3]);
        assert_eq!(mesh.segments, vec![[3, 4], [4, 0]]);
        let uvs = mesh.uvs.unwrap();
        assert_eq!(uvs[2], [1.0, 1.0]);
        assert_eq!(uvs[4], [0.0, 0.0]);
        assert_eq!(mesh.warnings.len(), 1, "{:?}", mesh.warnings); // vertex 5 has no UV
    }

    #[test]
    fn refuses_bad_numbers_and_indices_with_the_line() {
        for (text, needle) in [
            ("v 0 0 nan\n", "line 1"),
            ("v 0 0 0\nv 1e39 0 0\n", "line 2"),
            ("v 0 0 inf\n", "not finite"),
            ("v 0 0\n", "needs 3 numbers"),
            ("v 0 0 0\nf 1 2 3\n", "not defined"),
            ("v 0 0 0\nv 0 0 0\nf 1 2\n", "at least 3"),
            ("v 0 0 0\nf 0 1 1\n", "start at 1"),
            ("v 0 0 0\nl 1\n", "at least 2"),
            ("v a b c\n", "not a number"),
        ] {
            let message = format!("{:#}", parse_obj(text).unwrap_err());
            assert!(message.contains(needle), "{text:?}: {message}");
        }
    }

    #[test]
    fn mtllib_is_never_opened() {
        // Material libraries that do not exist, or that are not ours to read, change nothing:
        // the reader only ever opens the OBJ file itself.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.obj");
        std::fs::write(
            &path,
            "mtllib missing.mtl\nmtllib /etc/passwd\nmtllib ../../x.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n",
        )
        .unwrap();
        let mesh = read_obj(&path).unwrap();
        assert_eq!(mesh.face_count(), 1);
        assert!(mesh.warnings.is_empty(), "{:?}", mesh.warnings);
    }

    #[test]
    fn refuses_absurd_faces() {
        let mut text = String::from("v 0 0 0\n");
        text.push('f');
        for _ in 0..300 {
            text.push_str(" 1");
        }
        let message = format!("{:#}", parse_obj(&text).unwrap_err());
        assert!(message.contains("300 corners"), "{message}");
        // Corners are counted before any is resolved: the undefined last one is not reached.
        let message = format!("{:#}", parse_obj(&format!("{text} 9")).unwrap_err());
        assert!(message.contains("301 corners"), "{message}");
    }
}
