//! `xpbd-sim diff` (SPEC §1, docs/diff.md): caches made equal or different on purpose, by a
//! known amount at a known vertex, and the report and exit code checked against that.

use crate::common::*;
use std::path::Path;
use std::process::{Command, Output};
use xpbd_sim::diff::compare_caches;

/// A 1 m rope of 30 segments (31 vertices) pinned at one end: OBJ `v` and `l` lines.
fn rope_scene() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/rope.toml");
    std::fs::read_to_string(path).expect("scenes/rope.toml")
}

/// A 3 x 4 cloth: faces, normals, UVs and velocities in every frame file.
const CLOTH: &str = "[simulation]\nfps = 24.0\nframes = 3\nsubsteps = 4\n\
    [[object]]\nname = \"cloth\"\ngrid = { size = [1.0, 2.0], resolution = [3, 4] }\n\
    translate = [0.0, 1.0, 0.0]\ndensity = 0.2\npin = [0]\nstretch = {}\n";

/// Three frames of the rope scene as OBJ, in the workspace's `out/`.
fn rope_cache(extra_args: &[&str]) -> Workspace {
    let ws = Workspace::new();
    let mut args = vec!["--frames", "3", "--format", "obj"];
    args.extend_from_slice(extra_args);
    ws.run_ok(&rope_scene(), &args);
    ws
}

/// A copy of the files (not sub-directories) of `from`, in a new temporary directory.
fn copy_of(from: &Path) -> tempfile::TempDir {
    let copy = tempfile::tempdir().expect("temporary directory");
    for entry in std::fs::read_dir(from).expect("list cache") {
        let path = entry.expect("list cache").path();
        if path.is_file() {
            std::fs::copy(&path, copy.path().join(path.file_name().unwrap())).expect("copy");
        }
    }
    copy
}

fn diff(a: &Path, b: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("diff")
        .arg(a)
        .arg(b)
        .args(args)
        .output()
        .expect("run xpbd-sim diff")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `diff --json`, with its exit code.
fn diff_json(a: &Path, b: &Path, args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let output = diff(a, b, &all);
    let report = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&output), stderr(&output)));
    (output.status.code(), report)
}

/// Moves OBJ vertex `vertex` (0-based) of the file at `path` up by `dy` by editing its `v`
/// line; returns the position before and after, as the file says them.
fn move_obj_vertex(path: &Path, vertex: usize, dy: f64) -> ([f64; 3], [f64; 3]) {
    let text = std::fs::read_to_string(path).expect("read OBJ");
    let mut seen = 0;
    let mut moved = None;
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            let Some(rest) = line.strip_prefix("v ") else {
                return line.to_string();
            };
            seen += 1;
            if seen != vertex + 1 {
                return line.to_string();
            }
            let p: Vec<f64> = rest.split(' ').map(|w| w.parse().unwrap()).collect();
            let before = [p[0], p[1], p[2]];
            let after = [p[0], p[1] + dy, p[2]];
            moved = Some((before, after));
            format!("v {} {} {}", after[0], after[1], after[2])
        })
        .collect();
    std::fs::write(path, lines.join("\n") + "\n").expect("write OBJ");
    moved.expect("the vertex exists")
}

#[test]
fn two_runs_of_the_same_scene_are_equal_and_other_files_are_ignored() {
    let (first, second) = (rope_cache(&[]), rope_cache(&[]));
    // The stats logs differ (times); anything that is not .obj/.ply does not count.
    std::fs::write(second.out().join("notes.txt"), "only here").unwrap();
    std::fs::create_dir(second.out().join("extra.obj")).unwrap();
    let output = diff(&first.out(), &second.out(), &[]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}{}", stderr(&output));
    assert!(
        text.starts_with(
            "compared 3 files: worst distance 0 m at frame 1, object rope, vertex 0 (rope.0001.obj)\n"
        ),
        "{text}"
    );
    assert!(text.ends_with("\ncaches equal within 0 m\n"), "{text}");
    assert!(stderr(&output).is_empty(), "{}", stderr(&output));

    let (code, report) = diff_json(&first.out(), &second.out(), &[]);
    assert_eq!(code, Some(0));
    assert_eq!(report["equal"], true);
    assert_eq!(report["files_compared"], 3);
    assert_eq!(report["worst"]["distance"], 0.0);
    assert_eq!(report["only_in_a"], serde_json::json!([]));
    assert_eq!(report["only_in_b"], serde_json::json!([]));
}

#[test]
fn a_vertex_moved_by_a_quarter_metre_is_found_exactly() {
    let golden = rope_cache(&[]);
    let new = copy_of(&golden.out());
    let (before, after) = move_obj_vertex(&new.path().join("rope.0002.obj"), 17, 0.25);

    let output = diff(&golden.out(), new.path(), &[]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}{}", stderr(&output));
    assert!(
        text.contains(" at frame 2, object rope, vertex 17 (rope.0002.obj)\n"),
        "{text}"
    );
    assert!(text.contains("\nbeyond 0 m: 1 of 3 files\n"), "{text}");
    assert!(text.ends_with("\ncaches differ\n"), "{text}");
    // Differences are a result, not an error.
    assert!(!stderr(&output).contains("error"), "{}", stderr(&output));

    let (code, report) = diff_json(&golden.out(), new.path(), &[]);
    assert_eq!(code, Some(1));
    assert_eq!(report["equal"], false);
    assert_eq!(report["files_over_tolerance"], 1);
    let worst = &report["worst"];
    assert_eq!(worst["file"], "rope.0002.obj");
    assert_eq!(worst["frame"], 2);
    assert_eq!(worst["object"], "rope");
    assert_eq!(worst["vertex"], 17);
    let distance = worst["distance"].as_f64().unwrap();
    assert!((distance - 0.25).abs() < 1e-9, "{distance}");
    assert_eq!(worst["a"], serde_json::json!(before));
    assert_eq!(worst["b"], serde_json::json!(after));

    // Within a tolerance above the move the caches are equal; below it they are not.
    let output = diff(&golden.out(), new.path(), &["--tolerance", "0.3"]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(stdout(&output).ends_with("\ncaches equal within 0.3 m\n"));
    let output = diff(&golden.out(), new.path(), &["--tolerance", "0.2"]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
}

#[test]
fn files_on_one_side_only_are_listed_and_make_the_caches_differ() {
    let golden = rope_cache(&[]);
    let new = copy_of(&golden.out());
    std::fs::remove_file(new.path().join("rope.0003.obj")).unwrap();
    std::fs::copy(
        new.path().join("rope.0002.obj"),
        new.path().join("rope.0004.obj"),
    )
    .unwrap();

    let output = diff(&golden.out(), new.path(), &[]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("\nonly in A: rope.0003.obj\n"), "{text}");
    assert!(text.contains("\nonly in B: rope.0004.obj\n"), "{text}");
    assert!(text.ends_with("\ncaches differ\n"), "{text}");

    let (code, report) = diff_json(&golden.out(), new.path(), &[]);
    assert_eq!(code, Some(1));
    assert_eq!(report["files_compared"], 2);
    assert_eq!(report["only_in_a"], serde_json::json!(["rope.0003.obj"]));
    assert_eq!(report["only_in_b"], serde_json::json!(["rope.0004.obj"]));
    assert_eq!(report["worst"]["distance"], 0.0);
}

#[test]
fn topology_changes_are_reported_per_file() {
    let golden = rope_cache(&[]);
    let new = copy_of(&golden.out());
    // One vertex more in frame 2; the segments of frame 3 reversed.
    let frame_2 = new.path().join("rope.0002.obj");
    let text = std::fs::read_to_string(&frame_2).unwrap();
    std::fs::write(&frame_2, format!("{text}v 0 0 0\n")).unwrap();
    let frame_3 = new.path().join("rope.0003.obj");
    let text = std::fs::read_to_string(&frame_3).unwrap();
    std::fs::write(&frame_3, text.replace("\nl 1 2\n", "\nl 2 1\n")).unwrap();

    let output = diff(&golden.out(), new.path(), &["--tolerance", "1"]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("\ntopology changed: rope.0002.obj (vertex count 31 vs 32)\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "\ntopology changed: rope.0003.obj (line segment 0 joins [0, 1] vs [1, 0])\n"
        ),
        "{text}"
    );

    let (code, report) = diff_json(&golden.out(), new.path(), &[]);
    assert_eq!(code, Some(1));
    assert_eq!(report["files_compared"], 3);
    let changes = report["topology_changes"].as_array().unwrap();
    assert_eq!(changes.len(), 2);
    assert_eq!(changes[0]["file"], "rope.0002.obj");
    assert_eq!(changes[0]["reason"], "vertex count 31 vs 32");
    assert_eq!(changes[1]["file"], "rope.0003.obj");
    // Only frame 1 was compared vertex by vertex.
    assert_eq!(report["worst"]["file"], "rope.0001.obj");
}

/// The byte offset of vertex `vertex`'s float property `name` in a PLY file the writer made
/// (every vertex property is 4 bytes).
fn ply_vertex_offset(bytes: &[u8], vertex: usize, name: &str) -> usize {
    let header_len = bytes
        .windows(11)
        .position(|w| w == b"end_header\n")
        .expect("PLY header")
        + 11;
    let header = String::from_utf8_lossy(&bytes[..header_len]);
    let vertex_properties: Vec<&str> = header
        .lines()
        .skip_while(|l| !l.starts_with("element vertex"))
        .skip(1)
        .take_while(|l| l.starts_with("property "))
        .map(|l| l.rsplit(' ').next().unwrap())
        .collect();
    let index = vertex_properties.iter().position(|p| *p == name).unwrap();
    header_len + (vertex * vertex_properties.len() + index) * 4
}

fn read_f32(bytes: &[u8], offset: usize) -> f32 {
    f32::from_le_bytes(bytes[offset..offset + 4].try_into().unwrap())
}

#[test]
fn ply_frames_compare_positions_but_not_velocities() {
    let golden = Workspace::new();
    golden.run_ok(CLOTH, &["--format", "ply"]);
    let new = copy_of(&golden.out());
    let (code, report) = diff_json(&golden.out(), new.path(), &[]);
    assert_eq!((code, &report["files_compared"]), (Some(0), &3.into()));

    // A velocity changed: not a difference. Vertex 5's y moved: one.
    let path = new.path().join("cloth.0003.ply");
    let mut bytes = std::fs::read(&path).unwrap();
    let vx = ply_vertex_offset(&bytes, 2, "vx");
    let faster = read_f32(&bytes, vx) + 1.0;
    bytes[vx..vx + 4].copy_from_slice(&faster.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let (code, report) = diff_json(&golden.out(), new.path(), &[]);
    assert_eq!(code, Some(0), "{report}");

    let y = ply_vertex_offset(&bytes, 5, "y");
    let before = read_f32(&bytes, y);
    let after = before + 0.25;
    bytes[y..y + 4].copy_from_slice(&after.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let (code, report) = diff_json(&golden.out(), new.path(), &[]);
    assert_eq!(code, Some(1));
    let worst = &report["worst"];
    assert_eq!(worst["file"], "cloth.0003.ply");
    assert_eq!(
        (&worst["frame"], &worst["object"], &worst["vertex"]),
        (&3.into(), &"cloth".into(), &5.into())
    );
    let expected = (after as f64 - before as f64).abs();
    let distance = worst["distance"].as_f64().unwrap();
    assert!(
        (distance - expected).abs() < 1e-9,
        "{distance} vs {expected}"
    );
    assert!((distance - 0.25).abs() < 1e-6, "{distance}");
}

#[test]
fn corrupt_frame_files_are_unreadable_never_a_crash() {
    let golden = Workspace::new();
    golden.run_ok(CLOTH, &["--format", "ply", "--format", "obj"]);
    let new = copy_of(&golden.out());
    let path = new.path().join("cloth.0002.ply");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();

    let output = diff(&golden.out(), new.path(), &[]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("\nunreadable in B: cloth.0002.ply (invalid PLY file "),
        "{text}"
    );
    let (_, report) = diff_json(&golden.out(), new.path(), &[]);
    let unreadable = report["unreadable"].as_array().unwrap();
    assert_eq!(unreadable.len(), 1, "{report}");
    assert_eq!(unreadable[0]["file"], "cloth.0002.ply");
    assert_eq!(unreadable[0]["side"], "b");
    std::fs::write(&path, &bytes).unwrap();

    // Every truncation of an OBJ and a PLY frame is reported, never a panic.
    for name in ["cloth.0003.obj", "cloth.0003.ply"] {
        let path = new.path().join(name);
        let bytes = std::fs::read(&path).unwrap();
        for length in (0..bytes.len()).step_by(7) {
            std::fs::write(&path, &bytes[..length]).unwrap();
            let report = compare_caches(&golden.out(), new.path(), 0.0).unwrap();
            // A cut inside the last `f` line can leave the same mesh (`2/2/` reads as `2/2`).
            let listed = report.unreadable.iter().any(|u| u.file == name)
                || report.topology_changes.iter().any(|t| t.file == name);
            assert!(report.equal || listed, "{name} cut at {length}: {report:?}");
        }
        std::fs::write(&path, &bytes).unwrap();
    }
}

#[test]
fn names_other_than_the_default_give_the_file_only() {
    let golden = rope_cache(&["--set", "output.name=\"f{frame}_{object}\""]);
    let new = copy_of(&golden.out());
    move_obj_vertex(&new.path().join("f2_rope.obj"), 3, 0.25);
    let output = diff(&golden.out(), new.path(), &[]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains(" m at vertex 3 (f2_rope.obj)\n"), "{text}");
    let (_, report) = diff_json(&golden.out(), new.path(), &[]);
    assert_eq!(report["worst"]["file"], "f2_rope.obj");
    assert_eq!(report["worst"]["frame"], serde_json::Value::Null);
    assert_eq!(report["worst"]["object"], serde_json::Value::Null);
}

#[test]
fn bad_command_lines_exit_2_and_name_the_problem() {
    let ws = rope_cache(&[]);
    let missing = ws.path("no_such_cache");
    let stats = ws.out().join("stats.jsonl");
    for (a, b, args, needle) in [
        (
            ws.out(),
            missing.clone(),
            vec![],
            missing.display().to_string(),
        ),
        (
            missing.clone(),
            ws.out(),
            vec![],
            missing.display().to_string(),
        ),
        (
            ws.out(),
            stats.clone(),
            vec![],
            format!("{} is not a directory", stats.display()),
        ),
        (
            ws.out(),
            ws.out(),
            vec!["--tolerance", "-0.1"],
            "--tolerance".into(),
        ),
        (
            ws.out(),
            ws.out(),
            vec!["--tolerance=NaN"],
            "--tolerance".into(),
        ),
        (
            ws.out(),
            ws.out(),
            vec!["--tolerance", "a lot"],
            "--tolerance".into(),
        ),
    ] {
        let output = diff(&a, &b, &args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains(&needle),
            "{needle}: {}",
            stderr(&output)
        );
        assert!(stdout(&output).is_empty(), "{}", stdout(&output));
    }
}
