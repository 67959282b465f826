//! Whole-run files (SPEC §5): MDD and PC2 point caches hold the OBJ frames' positions, a
//! killed run leaves whole point caches and a readable USD stage of the frames up to its
//! checkpoint, and a resumed run ends with the bytes of an uninterrupted one.

use crate::common::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A 12 × 12 cloth pinned at two corners, falling into folds: 24 frames, checkpoints every 4.
const FLAG: &str = r#"
[simulation]
frames = 24
substeps = 10
[output]
formats = ["obj", "mdd", "pc2", "usd"]
checkpoint_every = 4
normals = true
[[object]]
name = "flag"
grid = { size = [1.0, 1.0], resolution = [12, 12] }
rotate = [90.0, 0.0, 0.0]
translate = [0.0, 1.5, 0.0]
density = 0.2
pin = [0, 11]
stretch = { compliance = 0.0 }
bending = { compliance = 100.0 }
"#;

fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}
fn le_i32(b: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn be_f32(b: &[u8], at: usize) -> f32 {
    f32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}
fn le_f32(b: &[u8], at: usize) -> f32 {
    f32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// Frame `index` of a point cache as positions, with the frame count.
fn mdd_frame(bytes: &[u8], index: usize) -> (usize, Vec<[f32; 3]>) {
    let (frames, points) = (be_i32(bytes, 0) as usize, be_i32(bytes, 4) as usize);
    assert_eq!(bytes.len(), 8 + 4 * frames + 12 * frames * points);
    let start = 8 + 4 * frames + 12 * points * index;
    let at = |k: usize| be_f32(bytes, start + 4 * k);
    (
        frames,
        (0..points)
            .map(|p| [at(3 * p), at(3 * p + 1), at(3 * p + 2)])
            .collect(),
    )
}

fn pc2_frame(bytes: &[u8], index: usize) -> (usize, Vec<[f32; 3]>) {
    assert_eq!(&bytes[..12], b"POINTCACHE2\0");
    assert_eq!(le_i32(bytes, 12), 1);
    let (points, frames) = (le_i32(bytes, 16) as usize, le_i32(bytes, 28) as usize);
    assert_eq!(bytes.len(), 32 + 12 * frames * points);
    let start = 32 + 12 * points * index;
    let at = |k: usize| le_f32(bytes, start + 4 * k);
    (
        frames,
        (0..points)
            .map(|p| [at(3 * p), at(3 * p + 1), at(3 * p + 2)])
            .collect(),
    )
}

/// The OBJ's `v` lines as the `f32` values they were written from.
fn obj_f32(path: &Path) -> Vec<[f32; 3]> {
    obj_positions(path)
        .into_iter()
        .map(|p| p.map(|c| c as f32))
        .collect()
}

#[test]
fn mdd_and_pc2_hold_every_obj_frame_bit_for_bit() {
    let ws = Workspace::new();
    ws.run_ok(FLAG, &[]);
    let out = ws.out();
    let mdd = std::fs::read(out.join("flag.mdd")).unwrap();
    let pc2 = std::fs::read(out.join("flag.pc2")).unwrap();
    assert_eq!(be_i32(&mdd, 4), 144);
    assert_eq!(
        le_f32(&pc2, 20),
        1.0,
        "PC2 starts at the first frame number"
    );
    assert_eq!(le_f32(&pc2, 24), 1.0, "one sample per frame");
    for (index, frame) in [(0, 1), (11, 12), (23, 24)] {
        let obj = obj_f32(&out.join(format!("flag.{frame:04}.obj")));
        let (frames, from_mdd) = mdd_frame(&mdd, index);
        assert_eq!(frames, 24);
        assert_eq!(be_f32(&mdd, 8 + 4 * index), (index as f64 / 24.0) as f32);
        assert_eq!(from_mdd, obj, "MDD frame {frame}");
        let (frames, from_pc2) = pc2_frame(&pc2, index);
        assert_eq!(frames, 24);
        assert_eq!(from_pc2, obj, "PC2 frame {frame}");
    }
    assert!(
        !out.join("checkpoints").exists(),
        "the spool goes with the checkpoints after a finished run"
    );
}

/// Every file of a cache but the stats log, by name.
fn cache_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.file_name().unwrap() != "stats.jsonl")
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            (name, std::fs::read(&p).unwrap())
        })
        .collect()
}

#[test]
fn a_killed_run_leaves_whole_point_caches_and_resumes_to_the_same_bytes() {
    // Many substeps slow the run down so that the kill lands in the middle.
    let slow = [
        "--set",
        "simulation.substeps=300",
        "--set",
        "simulation.frames=40",
    ];
    let reference = Workspace::new();
    reference.run_ok(FLAG, &[&slow[..], &["--threads", "1"]].concat());
    let expected = cache_files(&reference.out());
    assert!(expected.contains_key("flag.mdd") && expected.contains_key("flag.pc2"));

    let ws = Workspace::new();
    let scene = ws.write("scene.toml", FLAG);
    let out = ws.out();
    let run = |extra: &[&str]| {
        let mut command = Command::new(BIN);
        command
            .arg("run")
            .arg(&scene)
            .arg("--out")
            .arg(&out)
            .arg("--quiet");
        command.args(slow).args(extra);
        command
    };
    let mut child = run(&["--threads", "2"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let published = || {
        std::fs::read(out.join("flag.mdd"))
            .map_or(0, |b| if b.len() >= 8 { be_i32(&b, 0) } else { 0 })
    };
    while published() < 8 {
        assert!(
            Instant::now() < deadline,
            "no point cache after a long wait"
        );
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(1));
    }
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    // What the kill left under the final names is whole: a multiple of 4 frames (a
    // checkpoint's worth), the last one matching its OBJ.
    let mdd = std::fs::read(out.join("flag.mdd")).unwrap();
    let (frames, last) = mdd_frame(&mdd, (be_i32(&mdd, 0) - 1) as usize);
    assert!(frames % 4 == 0 && frames < 40, "{frames} frames");
    assert_eq!(last, obj_f32(&out.join(format!("flag.{frames:04}.obj"))));
    let pc2 = std::fs::read(out.join("flag.pc2")).unwrap();
    assert_eq!(pc2_frame(&pc2, 0).0 % 4, 0);
    // The stage too: readable, ending at a checkpoint's frame.
    let stage = crate::usd_stage::read_stage(&out.join("scene.usdc"));
    let end = crate::usd_stage::metadata(&stage, "endTimeCode");
    assert!(
        (end as u64).is_multiple_of(4) && end < 40.0,
        "endTimeCode {end}"
    );

    let resumed = run(&["--resume", "--threads", "1"]).output().unwrap();
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let got = cache_files(&out);
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in &got {
        assert!(
            bytes == &expected[name],
            "{name} differs from the uninterrupted run"
        );
    }
}

#[test]
fn point_caches_of_an_object_that_tears_are_refused() {
    let ws = Workspace::new();
    let scene = FLAG.replace(
        "compliance = 0.0 }",
        "compliance = 0.0, tear_strain = 0.5 }",
    );
    let output = ws.run(&scene, &[]);
    assert_refused(
        &output,
        "tears (stretch.tear_strain)",
        "point caches of a tearing object",
    );
    assert!(!ws.out().exists(), "nothing is written");
}
