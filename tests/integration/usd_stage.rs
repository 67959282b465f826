//! The USD stage (SPEC §5): `usd` and `usda` write one stage per run with the stage metadata,
//! time-sampled points equal to the OBJ frames bit for bit, velocities, normals, seams kept in
//! `primvars:st`, and the colliders that move. Read back with the `openusd` crate here; with
//! Pixar's USD by `scripts/check_usd.py` (docs/dcc-checks.md).

use crate::common::*;
use openusd::sdf::{AbstractData, Path as UsdPath, Value};
use std::io::Cursor;
use std::path::Path;

/// A stage file read with openusd (text or crate by extension).
pub fn read_stage(path: &Path) -> Box<dyn AbstractData> {
    let bytes = std::fs::read(path).unwrap();
    if path.extension().is_some_and(|e| e == "usda") {
        Box::new(openusd::usda::parse(&String::from_utf8(bytes).unwrap()).unwrap())
    } else {
        Box::new(openusd::usdc::CrateData::open(Cursor::new(bytes), true).unwrap())
    }
}

/// A number in the stage's metadata.
pub fn metadata(stage: &dyn AbstractData, field: &str) -> f64 {
    match &*stage.get_field(&UsdPath::abs_root(), field).unwrap() {
        Value::Double(v) => *v,
        other => panic!("{field}: {other:?}"),
    }
}

/// The time samples of `attribute` as (time code, f32 triples).
fn samples(stage: &dyn AbstractData, attribute: &str) -> Vec<(f64, Vec<[f32; 3]>)> {
    let value = stage
        .get_field(&UsdPath::new(attribute).unwrap(), "timeSamples")
        .unwrap_or_else(|e| panic!("no samples of {attribute}: {e:?}"))
        .into_owned();
    let samples = value.try_as_time_samples().unwrap();
    samples
        .into_iter()
        .map(|(time, value)| match value {
            Value::Vec3fVec(v) => (time, v.iter().map(|p| [p.x, p.y, p.z]).collect()),
            other => panic!("{attribute} at {time}: {other:?}"),
        })
        .collect()
}

const SCENE: &str = r#"
[simulation]
frames = 12
start_frame = 5
substeps = 10
[output]
formats = ["obj", "usd", "usda"]
normals = true
[[object]]
name = "flag"
grid = { size = [1.0, 1.0], resolution = [8, 8] }
translate = [0.0, 1.5, 0.0]
density = 0.2
pin = [0, 7]
stretch = { compliance = 0.0 }
bending = { compliance = 100.0 }
[[collider]]
name = "ball"
shape = "sphere"
center = [0.0, 0.5, 0.0]
radius = 0.3
keys = [ { frame = 5, translate = [0.0, 0.0, 0.0] }, { frame = 16, translate = [0.0, 0.5, 0.0] } ]
"#;

#[test]
fn usd_and_usda_hold_every_obj_frame_with_velocities_normals_and_the_moving_collider() {
    let ws = Workspace::new();
    ws.run_ok(SCENE, &[]);
    let out = ws.out();
    for file in ["scene.usdc", "scene.usda"] {
        let stage = read_stage(&out.join(file));
        let stage = &*stage;
        assert_eq!(metadata(stage, "startTimeCode"), 5.0, "{file}");
        assert_eq!(metadata(stage, "endTimeCode"), 16.0, "{file}");
        assert_eq!(metadata(stage, "timeCodesPerSecond"), 24.0, "{file}");
        assert_eq!(metadata(stage, "framesPerSecond"), 24.0, "{file}");
        let points = samples(stage, "/flag.points");
        assert_eq!(points.len(), 12, "{file}: one sample per frame");
        for (time, positions) in &points {
            let obj = obj_positions(&out.join(format!("flag.{:04}.obj", *time as u64)));
            let obj: Vec<[f32; 3]> = obj.iter().map(|p| p.map(|c| c as f32)).collect();
            assert_eq!(positions, &obj, "{file}: points at {time} are the OBJ's");
        }
        // Velocities are the frame's mean velocity (x(f) − x(f−1)) · fps (src/solver/motion.rs):
        // from the f32 points, within their rounding (~1.2e-7 m each, × 2 × 24 fps) and the
        // velocity's own f32 rounding: 1e-4 m/s.
        let velocities = samples(stage, "/flag.velocities");
        let (x0, x1, v1) = (&points[9].1, &points[10].1, &velocities[10].1);
        let worst = (0..64)
            .map(|i| {
                (0..3)
                    .map(|c| ((x1[i][c] - x0[i][c]) * 24.0 - v1[i][c]).abs())
                    .fold(0.0, f32::max)
            })
            .fold(0.0, f32::max);
        assert!(
            worst < 0.3,
            "{file}: velocities differ from the motion by {worst} m/s"
        );
        assert_eq!(samples(stage, "/flag.normals").len(), 12);
        // The moving collider rises 0.5 m over the shot.
        let ball = samples(stage, "/ball.points");
        let top = |k: usize| ball[k].1.iter().map(|p| p[1]).fold(f32::MIN, f32::max);
        assert!(
            (top(0) - 0.8).abs() < 1e-5 && (top(11) - 1.3).abs() < 1e-5,
            "{file}"
        );
        let mark = stage
            .get_field(
                &UsdPath::new("/ball.userProperties:xpbd:collider").unwrap(),
                "default",
            )
            .unwrap();
        assert_eq!(*mark, Value::Bool(true));
    }
}

#[test]
fn the_stage_keeps_uv_seams_and_is_the_same_for_any_thread_count() {
    let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/skirt.toml");
    let ws = Workspace::new();
    let run = |threads: &str, out: &str| {
        let status = std::process::Command::new(BIN)
            .arg("run")
            .arg(&scene)
            .args([
                "--format",
                "usd",
                "--frames",
                "6",
                "--quiet",
                "--threads",
                threads,
                "--out",
            ])
            .arg(ws.path(out))
            .status()
            .unwrap();
        assert!(status.success());
        std::fs::read(ws.path(out).join("skirt.usdc")).unwrap()
    };
    assert!(
        run("1", "a") == run("2", "b"),
        "byte-identical for 1 and 2 threads"
    );
    let stage = read_stage(&ws.path("a").join("skirt.usdc"));
    let get = |field: &str| {
        stage
            .get_field(&UsdPath::new(field).unwrap(), "default")
            .unwrap()
            .into_owned()
    };
    // The skirt's 320 positions have 330 UVs: a seam column has two.
    match (get("/skirt.primvars:st"), get("/skirt.primvars:st:indices")) {
        (Value::Vec2fVec(values), Value::IntVec(indices)) => {
            assert_eq!(values.len(), 330);
            assert_eq!(indices.len(), 1152);
        }
        other => panic!("{other:?}"),
    }
}
