//! Wavefront OBJ reader.
//!
//! Our own rather than tobj because a simulation cache needs what tobj does not give:
//! `l` polylines kept as rope segments (tobj turns them into faces or drops them), vertex order
//! kept across `o`/`g` groups (tobj re-indexes per model), per-corner UVs and normals kept
//! apart from positions, errors that name the line, and `mtllib` never opened. Supported
//! statements: `v x y z [w]`, `vt u [v [w]]`, `vn x y z`, `s N|off`, `f` with corners `v`,
//! `v/vt`, `v//vn`, `v/vt/vn` (negative = relative), `l` polylines. `o`, `g`, `usemtl`,
//! `mtllib`, `p` and comments are skipped; other statements are skipped with a warning.
//!
//! What is kept beyond positions and polygons (docs/output-format.md, "UV seams and hard
//! edges"):
//! - **UVs.** Every vertex gets the first UV a face corner gives it ([`Mesh::uvs`]). Where some
//!   vertex is given two different UVs (a seam), the whole `vt` list and every corner's index
//!   into it are kept too ([`Mesh::corner_uvs`]); a corner without `vt` then uses its vertex's
//!   first UV, or a `(0, 0)` appended to the list when the vertex has none.
//! - **Hard edges.** A corner's smoothing class is the pair (smoothing group, input normal):
//!   the group is the one set by the last `s` statement (`s off` and `s 0` make every face its
//!   own group; faces before any `s` share one group), the input normal is the value of the
//!   corner's `vn` (none when absent). Corners at one vertex with different classes are split
//!   ([`Mesh::corner_smoothing`]); the normals themselves are recomputed every frame.

use super::{CornerUvs, Mesh, MAX_POLYGON_VERTICES, MAX_VERTICES};
use crate::quote::{quoted, shown_path};
use anyhow::{bail, Context, Result};
use glam::DVec3;
use std::collections::BTreeMap;
use std::path::Path;

/// Most corners of one face in a mesh with UV seams: PLY lists a face's `2 × corners` texture
/// coordinates with a `uchar` count.
pub const MAX_SEAMED_CORNERS: usize = 127;

/// Coordinates beyond this many metres are refused as a broken or mis-scaled file.
pub const MAX_ABS_COORDINATE: f64 = 1e9;

pub fn read_obj(path: &Path) -> Result<Mesh> {
    let text = super::text::read(path)?;
    parse_obj(&text).with_context(|| format!("invalid OBJ file {}", shown_path(path)))
}

/// Parses a whole OBJ file held in memory, as [`super::text::decode`] reads text.
pub fn parse_obj_bytes(bytes: &[u8]) -> Result<Mesh> {
    parse_obj(&super::text::decode(bytes)?)
}

/// Parses OBJ text. Errors read `line N: ...`; the caller adds the file name.
pub fn parse_obj(text: &str) -> Result<Mesh> {
    let mut reader = Reader {
        mesh: Mesh::new(),
        ..Reader::default()
    };
    for (line_index, raw_line) in text.lines().enumerate() {
        let line = raw_line.split('#').next().unwrap_or("").trim();
        reader
            .statement(line, line_index + 1)
            .with_context(|| format!("line {}", line_index + 1))?;
    }
    reader.finish()
}

/// The smoothing group of the faces being read.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Group {
    /// Before any `s` statement: one smooth group.
    Unset,
    /// `s off` / `s 0`: the face with this index is smoothed with nothing.
    Flat(usize),
    /// `s NAME`: smoothed with the other faces of the same name.
    Named(String),
}

/// What the reader has gathered so far.
#[derive(Default)]
struct Reader {
    mesh: Mesh,
    texcoords: Vec<[f64; 2]>,
    normals: Vec<[u64; 3]>,
    /// `None` before the first `s`; `Some(None)` after `s off`.
    group: Option<Option<String>>,
    /// Per face corner: its `vt` index, and its smoothing class key.
    corner_vt: Vec<Option<u32>>,
    corner_class: Vec<(Group, Option<[u64; 3]>)>,
    skipped: Option<(usize, String)>,
    skipped_count: usize,
}

impl Reader {
    fn statement(&mut self, line: &str, line_number: usize) -> Result<()> {
        let mut words = line.split_ascii_whitespace();
        let Some(keyword) = words.next() else {
            return Ok(());
        };
        match keyword {
            "v" => {
                if self.mesh.positions.len() == MAX_VERTICES {
                    bail!("more than {MAX_VERTICES} vertices");
                }
                let xyz = read_numbers::<3>(&mut words, "v", 3)?;
                self.mesh.positions.push(DVec3::from_array(xyz));
            }
            "vt" => self.texcoords.push(read_numbers::<2>(&mut words, "vt", 1)?),
            "vn" => {
                // Only compared for equality: +0 and −0 are the same direction.
                let n = read_numbers::<3>(&mut words, "vn", 3)?;
                self.normals.push(n.map(|c| (c + 0.0).to_bits()));
            }
            "s" => {
                self.group = Some(match words.next() {
                    None | Some("off") | Some("0") => None,
                    Some(name) => Some(name.to_string()),
                })
            }
            "f" | "l" => self.element(keyword, words)?,
            "vp" | "o" | "g" | "usemtl" | "mtllib" | "p" => {}
            other => {
                self.skipped_count += 1;
                self.skipped
                    .get_or_insert_with(|| (line_number, quoted(other)));
            }
        }
        Ok(())
    }

    /// An `f` polygon or an `l` polyline.
    fn element<'a>(
        &mut self,
        keyword: &str,
        words: impl Iterator<Item = &'a str> + Clone,
    ) -> Result<()> {
        // Counted before anything is resolved, so an absurd face is refused at once.
        let count = words.clone().count();
        let face = keyword == "f";
        if face && count < 3 {
            bail!("a face needs at least 3 corners, found {count}");
        }
        if face && count > MAX_POLYGON_VERTICES {
            bail!("a face with {count} corners; at most {MAX_POLYGON_VERTICES} are supported");
        }
        if !face && count < 2 {
            bail!("a line needs at least 2 points, found {count}");
        }
        let group = match &self.group {
            None => Group::Unset,
            Some(None) => Group::Flat(self.mesh.face_count()),
            Some(Some(name)) => Group::Named(name.clone()),
        };
        let mut corners = Vec::with_capacity(count);
        for word in words {
            let mut parts = word.split('/');
            let v = resolve_index(parts.next(), self.mesh.positions.len(), "vertex")?;
            let vt = parts
                .next()
                .filter(|s| !s.is_empty())
                .map(|w| resolve_index(Some(w), self.texcoords.len(), "texture coordinate"))
                .transpose()?;
            let vn = parts
                .next()
                .filter(|s| !s.is_empty())
                .map(|w| resolve_index(Some(w), self.normals.len(), "normal"))
                .transpose()?;
            corners.push(v);
            if face {
                self.corner_vt.push(vt);
                let normal = vn.map(|k| self.normals[k as usize]);
                self.corner_class.push((group.clone(), normal));
            }
        }
        if face {
            self.mesh.add_face(&corners)
        } else {
            let segments = corners.windows(2).map(|w| [w[0], w[1]]);
            self.mesh.segments.extend(segments);
            Ok(())
        }
    }

    fn finish(mut self) -> Result<Mesh> {
        self.vertex_uvs()?;
        self.smoothing_classes();
        let mut mesh = self.mesh;
        if let Some((line_number, keyword)) = self.skipped {
            mesh.warnings.push(format!(
                "skipped {} unsupported statements (first: `{keyword}` at line {line_number})",
                self.skipped_count
            ));
        }
        Ok(mesh)
    }

    /// Per-vertex UVs (each vertex's first), and per-corner UVs where there are seams.
    fn vertex_uvs(&mut self) -> Result<()> {
        let mesh = &mut self.mesh;
        let mut first: Vec<Option<u32>> = vec![None; mesh.positions.len()];
        let mut seam_vertices = vec![false; mesh.positions.len()];
        for (&v, &vt) in mesh.face_indices.iter().zip(&self.corner_vt) {
            let Some(vt) = vt else { continue };
            match first[v as usize] {
                None => first[v as usize] = Some(vt),
                Some(k) if self.texcoords[k as usize] != self.texcoords[vt as usize] => {
                    seam_vertices[v as usize] = true
                }
                Some(_) => {}
            }
        }
        if first.iter().all(Option::is_none) {
            return Ok(());
        }
        let missing = first.iter().filter(|uv| uv.is_none()).count();
        if missing > 0 {
            mesh.warnings.push(format!(
                "{missing} vertices have no texture coordinate; they get (0, 0)"
            ));
        }
        mesh.uvs = Some(
            first
                .iter()
                .map(|uv| uv.map_or([0.0, 0.0], |k| self.texcoords[k as usize]))
                .collect(),
        );
        if !seam_vertices.contains(&true) {
            return Ok(());
        }
        // PLY writes a corner's `u v` as a list with a `uchar` count.
        if let Some(k) = (0..mesh.face_count()).find(|&k| mesh.face(k).len() > MAX_SEAMED_CORNERS) {
            bail!(
                "face {} has {} corners and the mesh has UV seams; at most {MAX_SEAMED_CORNERS} \
                 corners per face are supported then",
                k + 1,
                mesh.face(k).len()
            );
        }
        let mut texcoords = std::mem::take(&mut self.texcoords);
        let origin = texcoords.len() as u32;
        let mut origin_used = false;
        let corners = (mesh.face_indices.iter().zip(&self.corner_vt))
            .map(|(&v, &vt)| {
                vt.or(first[v as usize]).unwrap_or_else(|| {
                    origin_used = true;
                    origin
                })
            })
            .collect();
        if origin_used {
            texcoords.push([0.0, 0.0]);
        }
        mesh.corner_uvs = Some(CornerUvs { texcoords, corners });
        Ok(())
    }

    /// Smoothing classes per corner, kept only when some vertex has corners of two classes.
    fn smoothing_classes(&mut self) {
        let mut ids: BTreeMap<&(Group, Option<[u64; 3]>), u32> = BTreeMap::new();
        let classes: Vec<u32> = self
            .corner_class
            .iter()
            .map(|key| {
                let next = ids.len() as u32;
                *ids.entry(key).or_insert(next)
            })
            .collect();
        let mesh = &mut self.mesh;
        let mut first: Vec<Option<u32>> = vec![None; mesh.positions.len()];
        let mut split = false;
        for (&v, &class) in mesh.face_indices.iter().zip(&classes) {
            match first[v as usize] {
                None => first[v as usize] = Some(class),
                Some(c) => split |= c != class,
            }
        }
        if split {
            mesh.corner_smoothing = Some(classes);
        }
    }
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
        .map_err(|_| anyhow::anyhow!("`{}` is not a number", quoted(word)))?;
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
        .map_err(|_| anyhow::anyhow!("`{}` is not a {what} index", quoted(word)))?;
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

    /// Two quads around a cylinder seam: positions 0..4 with the seam at x = 0 (vertices 1
    /// and 3 are the seam: their UVs are u = 0 on one face and u = 1 on the other).
    const SEAMED: &str = "v 0 0 0\nv 1 0 0\nv 0 0 1\nv 1 0 1\n\
        vt 0 0\nvt 0.5 0\nvt 1 0\nvt 0 1\nvt 0.5 1\nvt 1 1\n\
        f 2/1 1/2 3/5 4/4\nf 1/2 2/3 4/6 3/5\n";

    #[test]
    fn uv_seams_keep_every_corner_uv_and_the_vt_layout() {
        let mesh = parse_obj(SEAMED).unwrap();
        let uvs = mesh.corner_uvs.expect("a seam keeps corner UVs");
        assert_eq!(uvs.texcoords.len(), 6);
        assert_eq!(uvs.corners, vec![0, 1, 4, 3, 1, 2, 5, 4]);
        // Per vertex: the first UV a corner gave it.
        assert_eq!(mesh.uvs.unwrap()[1], [0.0, 0.0]);
        assert!(mesh.warnings.is_empty(), "{:?}", mesh.warnings);
        // No seam: per-vertex UVs only, as before.
        let plain = parse_obj("v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 0 1\nf 1/1 2/2 3/3\n")
            .unwrap();
        assert!(plain.corner_uvs.is_none() && plain.uvs.is_some());
    }

    #[test]
    fn smoothing_groups_and_split_input_normals_mark_hard_edges() {
        let quads = "v 0 0 0\nv 1 0 0\nv 1 0 1\nv 0 0 1\nv 1 1 0\nv 0 1 0\n";
        let faces = "f 1 2 3 4\nf 1 6 5 2\n";
        // No `s`, no `vn`: smooth, as before.
        assert!(parse_obj(&format!("{quads}{faces}"))
            .unwrap()
            .corner_smoothing
            .is_none());
        // One named group: smooth.
        let one = parse_obj(&format!("{quads}s 1\n{faces}")).unwrap();
        assert!(one.corner_smoothing.is_none());
        // `s off`: each face its own class.
        let flat = parse_obj(&format!("{quads}s off\n{faces}")).unwrap();
        assert_eq!(flat.corner_smoothing, Some(vec![0, 0, 0, 0, 1, 1, 1, 1]));
        // Two groups.
        let two = parse_obj(&format!("{quads}s 1\nf 1 2 3 4\ns 2\nf 1 6 5 2\n")).unwrap();
        assert_eq!(two.corner_smoothing, Some(vec![0, 0, 0, 0, 1, 1, 1, 1]));
        // Per-corner normals that differ at the shared vertices 1 and 2: split; equal: smooth.
        let split =
            format!("{quads}vn 0 -1 0\nvn 0 0 -1\nf 1//1 2//1 3//1 4//1\nf 1//2 6//2 5//2 2//2\n");
        assert!(parse_obj(&split).unwrap().corner_smoothing.is_some());
        let same =
            format!("{quads}vn 0 1 0\nvn 0 1 -0\nf 1//1 2//1 3//1 4//1\nf 1//2 6//2 5//2 2//2\n");
        assert!(parse_obj(&same).unwrap().corner_smoothing.is_none());
        let message = format!(
            "{:#}",
            parse_obj(&format!("{quads}vn 0 1 0\nf 1//2 2//1 3//1\n")).unwrap_err()
        );
        assert!(
            message.contains("line 8") && message.contains("normal index 2"),
            "{message}"
        );
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
    fn megabyte_statements_are_quoted_short() {
        let junk = "x".repeat(1 << 20);
        let mesh = parse_obj(&format!("v 0 0 0\n{junk} 1 2\n")).unwrap();
        assert!(mesh.warnings[0].len() < 200, "{}", mesh.warnings[0]);
        let error = format!("{:#}", parse_obj(&format!("v {junk} 0 0\n")).unwrap_err());
        assert!(error.len() < 200, "{error}");
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
