//! Self collision: a cloth dropped in folds onto the ground, or hanging folded over a rod with
//! one half pushed through the other, must never pass through itself. The known answer is zero
//! crossing triangle pairs, counted independently of the solver from the written OBJ frames
//! (as well as by the stats log); the same scenes without self collision must cross, or the
//! tests could not tell the difference.

use crate::common::*;
use glam::DVec3;
use xpbd_sim::collision::intersections::count_crossing_pairs;
use xpbd_sim::mesh::obj::read_obj;

const FRAMES: usize = 36;

/// An accordion: a 0.4 m wide strip folded into four 0.5 m layers 0.1 m apart (each layer
/// tilted by 11°, sharp folds between them), its lowest edge 5 cm above the ground.
fn folded_strip_obj() -> String {
    let (columns, per_layer, layers) = (11, 20, 4);
    let mut text = String::new();
    let rows = per_layer * layers + 1;
    for row in 0..rows {
        let (layer, step) = (row / per_layer, row % per_layer);
        let along = step as f64 / per_layer as f64;
        let (z, y) = if row == rows - 1 {
            (
                if layers % 2 == 0 { 0.0 } else { 0.5 },
                0.05 + 0.1 * layers as f64,
            )
        } else {
            let z = if layer % 2 == 0 { along } else { 1.0 - along } * 0.5;
            (z, 0.05 + 0.1 * (layer as f64 + along))
        };
        for column in 0..columns {
            let x = 0.4 * column as f64 / (columns - 1) as f64 - 0.2;
            text += &format!("v {x} {y} {z}\n");
        }
    }
    for row in 0..rows - 1 {
        for column in 0..columns - 1 {
            let v = |r: usize, c: usize| r * columns + c + 1;
            text += &format!(
                "f {} {} {} {}\n",
                v(row, column),
                v(row, column + 1),
                v(row + 1, column + 1),
                v(row + 1, column)
            );
        }
    }
    text
}

fn scene(self_collision: bool) -> String {
    format!(
        r#"
[simulation]
fps = 24.0
frames = {FRAMES}
substeps = 20
velocity_damping = 0.5

[collision]
thickness = 0.006

[[object]]
name = "strip"
mesh = "folded.obj"
density = 0.2
stretch = {{ compliance = 0.0 }}
bending = {{ compliance = 20.0 }}
self_collision = {self_collision}

[[collider]]
name = "ground"
shape = "plane"
point = [0.0, 0.0, 0.0]
normal = [0.0, 1.0, 0.0]
friction = 0.5
"#
    )
}

/// Crossing triangle pairs of `object` in every written frame, counted from the files.
fn crossings_per_frame(ws: &Workspace, object: &str, frames: usize) -> Vec<usize> {
    (1..=frames)
        .map(|frame| {
            let mesh = read_obj(&ws.out().join(format!("{object}.{frame:04}.obj"))).unwrap();
            let x: Vec<DVec3> = mesh.positions.clone();
            count_crossing_pairs(&x, &mesh.triangles())
        })
        .collect()
}

#[test]
fn a_cloth_dropped_in_folds_never_passes_through_itself() {
    let ws = Workspace::new();
    ws.write("folded.obj", &folded_strip_obj());
    ws.run_ok(&scene(true), &[]);
    let crossings = crossings_per_frame(&ws, "strip", FRAMES);
    assert!(crossings.iter().all(|&c| c == 0), "{crossings:?}");
    let frames: Vec<_> = stats(&ws.out())
        .into_iter()
        .filter(|r| r["type"] == "frame")
        .collect();
    assert!(frames.iter().all(|f| f["self_intersections"]["strip"] == 0));
    // The folds did meet: contacts between the layers were working, not idle.
    let touching: u64 = frames
        .iter()
        .map(|f| {
            f["triangle_contacts"].as_u64().unwrap() + f["particle_contacts"].as_u64().unwrap()
        })
        .sum();
    assert!(touching > 0, "the layers never touched");
    // The four layers lie on each other: the pile is at least three sheet thicknesses
    // (3 x 2r) high at the end.
    let last = obj_positions(&ws.out().join(format!("strip.{FRAMES:04}.obj")));
    let top = last.iter().map(|p| p[1]).fold(f64::MIN, f64::max);
    assert!(top > 3.0 * 0.012, "pile height {top}");
}

#[test]
fn without_self_collision_the_same_drop_crosses_itself() {
    let ws = Workspace::new();
    ws.write("folded.obj", &folded_strip_obj());
    ws.run_ok(&scene(false), &[]);
    let crossings = crossings_per_frame(&ws, "strip", FRAMES);
    assert_eq!(crossings[0], 0, "the folded strip starts clean");
    assert!(crossings.iter().any(|&c| c > 0), "{crossings:?}");
}

/// The near lists of self-collision candidates are not in checkpoints: a resumed run starts
/// with new ones, and must still write the same bytes as a run never stopped.
#[test]
fn a_folding_strip_resumed_mid_run_matches_the_uninterrupted_run() {
    let ws = Workspace::new();
    ws.write("folded.obj", &folded_strip_obj());
    let every = ["--set", "output.checkpoint_every=12"];
    // Kept after the finished run, to resume from as if it had been killed.
    ws.run_ok(
        &scene(true),
        &[&every[..], &["--threads", "2", "--keep-checkpoints"]].concat(),
    );
    let frame_path = |frame: usize| ws.out().join(format!("strip.{frame:04}.obj"));
    let uninterrupted: Vec<Vec<u8>> = (1..=FRAMES)
        .map(|frame| std::fs::read(frame_path(frame)).unwrap())
        .collect();
    // As if killed after frame 30: the frames after the checkpoint at 24 are redone.
    for frame in 25..=30 {
        std::fs::remove_file(frame_path(frame)).unwrap();
    }
    ws.run_ok(
        &scene(true),
        &[&every[..], &["--threads", "1", "--resume"]].concat(),
    );
    assert!(stats(&ws.out()).iter().any(|r| r["type"] == "resume"));
    for frame in 1..=FRAMES {
        assert!(
            std::fs::read(frame_path(frame)).unwrap() == uninterrupted[frame - 1],
            "frame {frame} differs"
        );
    }
}

const TOWEL_FRAMES: usize = 60;

/// A towel (0.4 m × 1 m, 2 cm spacing) dropped across a horizontal rod hangs folded over it,
/// its halves 5 cm apart; from frame 25 to 45 a second bar sweeps through the hanging halves
/// at mid-height, pushing the near half into the far one.
fn towel_on_rod(self_collision: bool) -> String {
    format!(
        r#"
[simulation]
fps = 24.0
frames = {TOWEL_FRAMES}
substeps = 20
velocity_damping = 0.5

[collision]
thickness = 0.006

[[object]]
name = "towel"
grid = {{ size = [0.4, 1.0], resolution = [20, 50] }}
translate = [0.0, 1.05, 0.0]
density = 0.2
stretch = {{ compliance = 0.0 }}
bending = {{ compliance = 20.0 }}
self_collision = {self_collision}

[[collider]]
name = "rod"
shape = "capsule"
a = [-0.5, 1.0, 0.0]
b = [0.5, 1.0, 0.0]
radius = 0.025
friction = 0.5

[[collider]]
name = "pusher"
shape = "capsule"
a = [-0.5, 0.6, -0.3]
b = [0.5, 0.6, -0.3]
radius = 0.03
friction = 0.0
keys = [{{ frame = 25 }}, {{ frame = 45, translate = [0.0, 0.0, 0.6] }}]
"#
    )
}

#[test]
fn a_towel_folded_over_a_rod_and_pushed_does_not_pass_through_itself() {
    let ws = Workspace::new();
    ws.run_ok(&towel_on_rod(true), &[]);
    let crossings = crossings_per_frame(&ws, "towel", TOWEL_FRAMES);
    assert!(crossings.iter().all(|&c| c == 0), "{crossings:?}");
    // It hangs on the rod to the end: folded over it, not slipped off or carried away.
    let last = obj_positions(&ws.out().join(format!("towel.{TOWEL_FRAMES:04}.obj")));
    let top = last.iter().map(|p| p[1]).fold(f64::MIN, f64::max);
    assert!((1.0..1.1).contains(&top), "top of the towel at {top}");
    // The halves were pressed together.
    let touching: u64 = frame_records(&ws.out())
        .iter()
        .map(|f| f["triangle_contacts"].as_u64().unwrap())
        .sum();
    assert!(touching > 0, "the halves never touched");

    let ws = Workspace::new();
    ws.run_ok(&towel_on_rod(false), &[]);
    let crossings = crossings_per_frame(&ws, "towel", TOWEL_FRAMES);
    assert!(crossings.iter().any(|&c| c > 0), "{crossings:?}");
}

#[test]
fn self_collision_without_stretch_is_warned_about() {
    let ws = Workspace::new();
    let scene = "[[object]]\nname = \"cloth\"\ngrid = { size = [1.0, 1.0], resolution = [4, 4] }\n\
        density = 0.2\nbending = {}\nself_collision = true\n";
    let path = ws.write("scene.toml", scene);
    let output = std::process::Command::new(BIN)
        .arg("check")
        .arg(&path)
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(text.contains("self_collision: without `stretch`"), "{text}");
}
