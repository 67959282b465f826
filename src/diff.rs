//! `diff`: compares two caches frame file by frame file (SPEC §1, docs/diff.md).
//!
//! Frame files are the `*.obj` and `*.ply` files directly inside each directory; everything
//! else (the stats log, temporary `.NAME.tmp` files, sub-directories) is ignored. Files with
//! the same name are read with the scene mesh readers ([`crate::mesh`]) one pair at a time, so
//! a cache of any size is compared in the memory of its largest frame. Vertex `k` of one side
//! is compared with vertex `k` of the other; their distance is Euclidean, in f64. Only
//! positions and connectivity (polygons, line segments) count: normals, UVs, velocities, PLY
//! `id`s and comments are not compared.

use crate::mesh::obj::read_obj;
use crate::mesh::ply::read_ply;
use crate::mesh::Mesh;
use crate::quote::shown_path;
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::cmp::Ordering;
use std::ffi::OsString;
use std::path::Path;

/// What `diff` found; serialised as it is for `--json` (the schema in docs/diff.md).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffReport {
    /// True when nothing below makes the caches differ.
    pub equal: bool,
    /// Largest vertex distance, in metres, still counted as equal.
    pub tolerance: f64,
    /// Frame files present on both sides (compared, or listed as a topology change or as
    /// unreadable).
    pub files_compared: usize,
    /// Compared files with at least one vertex farther than `tolerance`.
    pub files_over_tolerance: usize,
    /// The largest vertex distance of all compared files; the first one in file-name and
    /// vertex order on ties; `None` when no vertex was compared.
    pub worst: Option<WorstVertex>,
    /// Frame files only in the first directory, sorted by name.
    pub only_in_a: Vec<String>,
    /// Frame files only in the second directory, sorted by name.
    pub only_in_b: Vec<String>,
    /// Files whose vertex count, polygons or line segments differ (no distances for them).
    pub topology_changes: Vec<TopologyChange>,
    /// Files one side (or both) cannot read or parse.
    pub unreadable: Vec<UnreadableFile>,
}

/// The vertex farthest from its counterpart.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorstVertex {
    pub file: String,
    /// From a file named `OBJECT.FRAME.ext` (the default `output.name`), else `None`.
    pub frame: Option<u64>,
    pub object: Option<String>,
    /// 0-based vertex index in the file.
    pub vertex: usize,
    /// Distance between the two positions, metres.
    pub distance: f64,
    /// Position in the first directory's file.
    pub a: [f64; 3],
    /// Position in the second directory's file.
    pub b: [f64; 3],
}

/// A file present on both sides whose meshes are not the same shape.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopologyChange {
    pub file: String,
    /// E.g. `vertex count 1024 vs 1089` (first directory's value first).
    pub reason: String,
}

/// Which directory a file is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    A,
    B,
}

/// A frame file that could not be read or parsed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnreadableFile {
    pub file: String,
    pub side: Side,
    /// The reader's message.
    pub error: String,
}

/// Compares the caches in `dir_a` and `dir_b`. An error means the request itself is wrong (a
/// directory missing or not listable, a tolerance that is negative or not finite); what the
/// files hold, corrupt files included, is reported in the [`DiffReport`].
pub fn compare_caches(dir_a: &Path, dir_b: &Path, tolerance: f64) -> Result<DiffReport> {
    if !tolerance.is_finite() || tolerance < 0.0 {
        bail!("--tolerance must be a finite number of metres >= 0, got {tolerance}");
    }
    let files_a = frame_files(dir_a)?;
    let files_b = frame_files(dir_b)?;
    let mut report = DiffReport {
        equal: false,
        tolerance,
        files_compared: 0,
        files_over_tolerance: 0,
        worst: None,
        only_in_a: Vec::new(),
        only_in_b: Vec::new(),
        topology_changes: Vec::new(),
        unreadable: Vec::new(),
    };
    let (mut next_a, mut next_b) = (files_a.iter().peekable(), files_b.iter().peekable());
    loop {
        let order = match (next_a.peek(), next_b.peek()) {
            (None, None) => break,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(a), Some(b)) => a.name.cmp(&b.name),
        };
        match order {
            Ordering::Less => report
                .only_in_a
                .extend(next_a.next().map(FrameFile::display_name)),
            Ordering::Greater => report
                .only_in_b
                .extend(next_b.next().map(FrameFile::display_name)),
            Ordering::Equal => {
                next_b.next();
                if let Some(frame_file) = next_a.next() {
                    compare_file(dir_a, dir_b, frame_file, &mut report);
                }
            }
        }
    }
    report.equal = report.files_over_tolerance == 0
        && report.only_in_a.is_empty()
        && report.only_in_b.is_empty()
        && report.topology_changes.is_empty()
        && report.unreadable.is_empty();
    Ok(report)
}

/// A frame file found in a cache directory.
struct FrameFile {
    name: OsString,
    format: FrameFormat,
}

impl FrameFile {
    fn display_name(&self) -> String {
        self.name.to_string_lossy().into_owned()
    }
}

/// The `*.obj` and `*.ply` entries of `dir` that are not directories, sorted by name.
fn frame_files(dir: &Path) -> Result<Vec<FrameFile>> {
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("directory {} does not exist", shown_path(dir))
        }
        Err(e) => bail!("cannot read directory {}: {e}", shown_path(dir)),
        Ok(metadata) if !metadata.is_dir() => bail!("{} is not a directory", shown_path(dir)),
        Ok(_) => {}
    }
    let mut files = Vec::new();
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot list {}", shown_path(dir)))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", shown_path(dir)))?;
        let path = entry.path();
        if let Some(format) = frame_format(&path).filter(|_| !path.is_dir()) {
            files.push(FrameFile {
                name: entry.file_name(),
                format,
            });
        }
    }
    files.sort_unstable_by(|x, y| x.name.cmp(&y.name));
    Ok(files)
}

/// The two frame file formats, told apart by extension (lower case, as the writer names them).
#[derive(Debug, Clone, Copy)]
enum FrameFormat {
    Obj,
    Ply,
}

fn frame_format(path: &Path) -> Option<FrameFormat> {
    match path.extension()?.to_str()? {
        "obj" => Some(FrameFormat::Obj),
        "ply" => Some(FrameFormat::Ply),
        _ => None,
    }
}

/// Reads one frame file with the scene mesh reader of its format.
fn read_frame(path: &Path, format: FrameFormat) -> Result<Mesh> {
    match format {
        FrameFormat::Obj => read_obj(path),
        FrameFormat::Ply => read_ply(path),
    }
}

/// Reads `frame_file` from both directories and adds what the pair holds to `report`.
fn compare_file(dir_a: &Path, dir_b: &Path, frame_file: &FrameFile, report: &mut DiffReport) {
    report.files_compared += 1;
    let file = frame_file.display_name();
    let mut unreadable = |side, error: anyhow::Error| {
        report.unreadable.push(UnreadableFile {
            file: file.clone(),
            side,
            error: format!("{error:#}"),
        })
    };
    let read = |dir: &Path| read_frame(&dir.join(&frame_file.name), frame_file.format);
    let (mesh_a, mesh_b) = match (read(dir_a), read(dir_b)) {
        (Ok(a), Ok(b)) => (a, b),
        (a, b) => {
            if let Err(e) = a {
                unreadable(Side::A, e);
            }
            if let Err(e) = b {
                unreadable(Side::B, e);
            }
            return;
        }
    };
    if let Some(reason) = topology_difference(&mesh_a, &mesh_b) {
        report
            .topology_changes
            .push(TopologyChange { file, reason });
        return;
    }
    let Some((vertex, distance)) = farthest_vertex(&mesh_a, &mesh_b) else {
        return;
    };
    if distance > report.tolerance {
        report.files_over_tolerance += 1;
    }
    if report.worst.as_ref().is_none_or(|w| distance > w.distance) {
        let (object, frame) = object_and_frame(&file).unzip();
        report.worst = Some(WorstVertex {
            object: object.map(str::to_string),
            frame,
            vertex,
            distance,
            a: mesh_a.positions[vertex].to_array(),
            b: mesh_b.positions[vertex].to_array(),
            file,
        });
    }
}

/// Why two meshes cannot be compared vertex by vertex, or `None` when their vertex counts,
/// polygons and line segments are the same. The first mesh's values come first.
pub fn topology_difference(a: &Mesh, b: &Mesh) -> Option<String> {
    let counts = [
        ("vertex count", a.positions.len(), b.positions.len()),
        ("face count", a.face_count(), b.face_count()),
        ("line segment count", a.segments.len(), b.segments.len()),
    ];
    if let Some((what, count_a, count_b)) = counts.iter().find(|(_, x, y)| x != y) {
        return Some(format!("{what} {count_a} vs {count_b}"));
    }
    if let Some(k) = (0..a.face_count()).find(|&k| a.face(k) != b.face(k)) {
        return Some(format!(
            "face {k} has corners {:?} vs {:?}",
            a.face(k),
            b.face(k)
        ));
    }
    if let Some(k) = (0..a.segments.len()).find(|&k| a.segments[k] != b.segments[k]) {
        return Some(format!(
            "line segment {k} joins {:?} vs {:?}",
            a.segments[k], b.segments[k]
        ));
    }
    None
}

/// The vertex index with the largest distance between `a` and `b` (the first one on ties) and
/// that distance; `None` without vertices. The meshes have the same vertex count.
pub fn farthest_vertex(a: &Mesh, b: &Mesh) -> Option<(usize, f64)> {
    let mut farthest: Option<(usize, f64)> = None;
    for (k, (pa, pb)) in a.positions.iter().zip(&b.positions).enumerate() {
        let distance = pa.distance(*pb);
        if farthest.is_none_or(|(_, d)| distance > d) {
            farthest = Some((k, distance));
        }
    }
    farthest
}

/// Object and frame of a file named by the default template `{object}.{frame:04}` plus
/// extension (`cloth.0017.obj` → `("cloth", 17)`); `None` for any other name.
pub fn object_and_frame(file_name: &str) -> Option<(&str, u64)> {
    let (stem, _extension) = file_name.rsplit_once('.')?;
    let (object, digits) = stem.rsplit_once('.')?;
    let object_name_ok = !object.is_empty()
        && object
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-');
    if !object_name_ok || digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some((object, digits.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::DVec3;

    fn triangle(offset: DVec3) -> Mesh {
        let mut mesh = Mesh::new();
        mesh.positions = vec![DVec3::ZERO, DVec3::X, DVec3::Z]
            .into_iter()
            .map(|p| p + offset)
            .collect();
        mesh.push_face(&[0, 1, 2]);
        mesh
    }

    #[test]
    fn object_and_frame_come_from_the_default_name_only() {
        assert_eq!(object_and_frame("cloth.0017.obj"), Some(("cloth", 17)));
        assert_eq!(
            object_and_frame("my-rope_2.12345.ply"),
            Some(("my-rope_2", 12345))
        );
        for name in [
            "cloth.obj",
            ".0001.obj",
            "cloth..obj",
            "cloth.00a1.obj",
            "a.b.0001.obj",
            "f12_cloth.obj",
            "cloth.99999999999999999999999.obj",
        ] {
            assert_eq!(object_and_frame(name), None, "{name}");
        }
    }

    #[test]
    fn farthest_vertex_is_the_first_of_equals() {
        let a = triangle(DVec3::ZERO);
        assert_eq!(farthest_vertex(&a, &a), Some((0, 0.0)));
        let mut b = a.clone();
        b.positions[1].y += 0.25;
        b.positions[2].y -= 0.25;
        assert_eq!(farthest_vertex(&a, &b), Some((1, 0.25)));
        assert_eq!(farthest_vertex(&Mesh::new(), &Mesh::new()), None);
    }

    #[test]
    fn topology_differences_name_what_changed() {
        let a = triangle(DVec3::ZERO);
        assert_eq!(topology_difference(&a, &triangle(DVec3::ONE)), None);

        let mut more_vertices = a.clone();
        more_vertices.positions.push(DVec3::Y);
        assert_eq!(
            topology_difference(&a, &more_vertices).as_deref(),
            Some("vertex count 3 vs 4")
        );

        let mut flipped = Mesh::new();
        flipped.positions = a.positions.clone();
        flipped.push_face(&[0, 2, 1]);
        assert_eq!(
            topology_difference(&a, &flipped).as_deref(),
            Some("face 0 has corners [0, 1, 2] vs [0, 2, 1]")
        );

        let mut rope_a = a.clone();
        rope_a.segments = vec![[0, 1], [1, 2]];
        let mut rope_b = a.clone();
        rope_b.segments = vec![[0, 1], [0, 2]];
        assert_eq!(
            topology_difference(&rope_a, &rope_b).as_deref(),
            Some("line segment 1 joins [1, 2] vs [0, 2]")
        );
        assert_eq!(
            topology_difference(&rope_a, &a).as_deref(),
            Some("line segment count 2 vs 0")
        );
    }

    #[test]
    fn refuses_bad_tolerances_and_directories() {
        let dir = std::env::temp_dir();
        for tolerance in [-1e-9, f64::NAN, f64::INFINITY] {
            let message = format!("{:#}", compare_caches(&dir, &dir, tolerance).unwrap_err());
            assert!(message.contains("--tolerance"), "{message}");
        }
        let missing = dir.join("xpbd-sim-diff-no-such-directory");
        let message = format!("{:#}", compare_caches(&missing, &dir, 0.0).unwrap_err());
        assert!(message.contains("does not exist"), "{message}");
        assert!(
            message.contains("xpbd-sim-diff-no-such-directory"),
            "{message}"
        );
    }
}
