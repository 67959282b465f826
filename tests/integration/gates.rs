//! SPEC §5 quality gates (exit code 3) and the checkpoint clean-up after a successful run.

use crate::common::*;
use std::path::Path;

const FRAMES: usize = 10;

/// A cloth swinging from one pinned corner (it stretches a little) and a rigid ball thrown up
/// at 5 m/s (its speed is largest in frame 1, then falls). Checkpoints every 4 frames.
fn scene(gates: &str) -> String {
    format!(
        r#"
[simulation]
fps = 24.0
frames = {FRAMES}
substeps = 4

[output]
checkpoint_every = 4

[[object]]
name = "cloth"
grid = {{ size = [1.0, 1.0], resolution = [5, 5] }}
translate = [0.0, 1.0, 0.0]
density = 0.2
pin = [0]
stretch = {{ compliance = 1e-3 }}

[[object]]
name = "ball"
sphere = {{ radius = 0.2, subdivisions = 1 }}
translate = [3.0, 1.0, 0.0]
velocity = [0.0, 5.0, 0.0]
density = 0.2
shape_matching = {{}}

{gates}
"#
    )
}

const BROKEN: &str = "[gates]\nmax_speed = 1.0\nmax_edge_strain = 1e-9\n";

fn summary(dir: &Path) -> serde_json::Value {
    let records = stats(dir);
    let last = records.last().unwrap().clone();
    assert_eq!(last["type"], "summary", "{last}");
    last
}

/// The gate entry the frame records imply: the largest per-object figure, ties to the earlier
/// frame and then to the object first in the scene.
fn expected_gate(dir: &Path, name: &str, field: &str, limit: f64) -> serde_json::Value {
    let mut worst: Option<(f64, u64, &str)> = None;
    for record in frame_records(dir) {
        for object in ["cloth", "ball"] {
            let value = record["objects"][object][field].as_f64().unwrap();
            if worst.is_none_or(|(w, _, _)| value > w) {
                worst = Some((value, record["frame"].as_u64().unwrap(), object));
            }
        }
    }
    let (value, frame, object) = worst.unwrap();
    serde_json::json!({"name": name, "limit": limit, "worst": value, "frame": frame,
                       "object": object, "ok": value <= limit})
}

fn all_frames_written(dir: &Path) {
    for object in ["cloth", "ball"] {
        for frame in 1..=FRAMES {
            let path = dir.join(format!("{object}.{frame:04}.obj"));
            assert!(path.is_file(), "{} missing", path.display());
        }
    }
    assert_eq!(frame_records(dir).len(), FRAMES);
}

#[test]
fn a_broken_gate_writes_every_frame_then_exits_3_with_the_verdicts() {
    let ws = Workspace::new();
    let output = ws.run(&scene(BROKEN), &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    all_frames_written(&ws.out());
    let summary = summary(&ws.out());
    assert_eq!(summary["status"], "ok");
    let expected = serde_json::json!([
        expected_gate(&ws.out(), "max_edge_strain", "max_edge_strain", 1e-9),
        expected_gate(&ws.out(), "max_speed", "max_speed", 1.0),
    ]);
    assert_eq!(summary["gates"], expected);
    // The ball is thrown at 5 m/s: the worst speed is in the first frame.
    assert_eq!(summary["gates"][1]["worst"], 5.0);
    assert_eq!(summary["gates"][1]["frame"], 1);
    assert_eq!(summary["gates"][1]["object"], "ball");
    assert_eq!(summary["gates"][0]["object"], "cloth");
    assert_eq!(summary["gates"][0]["ok"], false);
    // Each broken gate is printed with its limit, worst value, frame and object (--quiet too).
    assert!(stderr.contains("breaks 2 of 2 quality gates"), "{stderr}");
    assert!(
        stderr.contains("max_speed: worst 5 at frame 1, object `ball`; limit 1 (m/s)"),
        "{stderr}"
    );
    assert!(stderr.contains("max_edge_strain: worst"), "{stderr}");
    // The closed ball has a volume figure, the open cloth none.
    let first = &frame_records(&ws.out())[0];
    assert_eq!(first["objects"]["ball"]["volume_change"], 0.0);
    assert!(first["objects"]["cloth"].get("volume_change").is_none());
}

#[test]
fn loose_gates_exit_0_and_gate_options_override_the_table() {
    let ws = Workspace::new();
    let output = ws.run(
        &scene(BROKEN),
        &[
            "--gate",
            "max_speed=10",
            "--gate",
            "max_edge_strain=0.5",
            "--gate",
            "max_volume_change=0.01",
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("quality gate"), "{stderr}");
    let gates = &summary(&ws.out())["gates"];
    let names: Vec<&str> = gates
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["max_edge_strain", "max_speed", "max_volume_change"]);
    assert_eq!(gates[0]["limit"], 0.5);
    assert_eq!(gates[1]["limit"], 10.0);
    assert!(gates.as_array().unwrap().iter().all(|g| g["ok"] == true));
    assert_eq!(gates[2]["object"], "ball", "only the ball has a volume");
    // The same scene without gates has no `gates` in its summary.
    let plain = Workspace::new();
    plain.run_ok(&scene(""), &[]);
    assert!(summary(&plain.out()).get("gates").is_none());
}

#[test]
fn misspelt_gates_and_bad_values_are_refused_with_exit_2_and_nothing_written() {
    let cases: [(&str, &[&str], &str); 7] = [
        (
            "[gates]\nmax_sped = 1.0\n",
            &[],
            "did you mean `max_speed`?",
        ),
        (
            "",
            &["--gate", "max_strain=0.1"],
            "did you mean `max_edge_strain`?",
        ),
        (
            "",
            &["--gate", "max_speed=-1"],
            "gates.max_speed: must be >= 0",
        ),
        (
            "",
            &["--gate", "max_speed=nan"],
            "gates.max_speed: nan is not a finite number",
        ),
        (
            "",
            &["--gate", "max_speed=fast"],
            "gates.max_speed: `fast` is not a number",
        ),
        (
            "[gates]\nmax_penetration = -0.1\n",
            &[],
            "gates.max_penetration: must be >= 0",
        ),
        ("[gates]\nmax_speed = \"fast\"\n", &[], "gates.max_speed"),
    ];
    for (gates, args, message) in cases {
        let ws = Workspace::new();
        let output = ws.run(&scene(gates), args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{gates} {args:?}: {stderr}");
        assert!(stderr.contains(message), "{gates} {args:?}: {stderr}");
        assert!(
            !ws.out().exists(),
            "{gates} {args:?}: something was written"
        );
    }
}

#[test]
fn check_lists_the_gates() {
    let ws = Workspace::new();
    let path = ws.write("scene.toml", &scene(BROKEN));
    let output = std::process::Command::new(BIN)
        .arg("check")
        .arg(&path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.contains("gate max_edge_strain <= 0.000000001"),
        "{stdout}"
    );
    assert!(stdout.contains("gate max_speed <= 1 (m/s)"), "{stdout}");
}

#[test]
fn checkpoints_are_removed_after_success_unless_kept() {
    let ws = Workspace::new();
    ws.run_ok(&scene(""), &[]);
    assert!(!ws.out().join("checkpoints").exists());
    // A broken gate (exit 3) is a finished run too.
    let broken = Workspace::new();
    assert_eq!(broken.run(&scene(BROKEN), &[]).status.code(), Some(3));
    assert!(!broken.out().join("checkpoints").exists());
    for keep in [
        &["--keep-checkpoints"][..],
        &["--set", "output.keep_checkpoints=true"][..],
    ] {
        let ws = Workspace::new();
        ws.run_ok(&scene(""), keep);
        let kept: Vec<String> = std::fs::read_dir(ws.out().join("checkpoints"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        assert_eq!(kept.len(), 2, "{keep:?}: {kept:?}");
    }
}

#[test]
fn a_resumed_run_reaches_the_same_verdict() {
    let ws = Workspace::new();
    let output = ws.run(&scene(BROKEN), &["--keep-checkpoints"]);
    assert_eq!(output.status.code(), Some(3));
    let uninterrupted = summary(&ws.out())["gates"].clone();
    // As if killed after frame 6: the checkpoint at 8 is ahead of the frames on disk, so the
    // run resumes after frame 4, and the worst speed (frame 1) is in the records it keeps.
    for object in ["cloth", "ball"] {
        for frame in 5..=FRAMES {
            std::fs::remove_file(ws.out().join(format!("{object}.{frame:04}.obj"))).unwrap();
        }
    }
    let resumed = ws.run(&scene(BROKEN), &["--resume"]);
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert_eq!(resumed.status.code(), Some(3), "{stderr}");
    let records = stats(&ws.out());
    assert!(records
        .iter()
        .any(|r| r["type"] == "resume" && r["after_frame"] == 4));
    assert_eq!(summary(&ws.out())["gates"], uninterrupted);
    assert_eq!(uninterrupted[1]["frame"], 1);
    assert!(
        !ws.out().join("checkpoints").exists(),
        "removed after the resumed run"
    );
}
