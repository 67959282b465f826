//! Helpers: write a scene into a temporary folder, run the binary, read frames and stats.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const BIN: &str = env!("CARGO_BIN_EXE_xpbd-sim");

/// A temporary folder holding a scene file (and anything else a test writes beside it).
pub struct Workspace {
    pub dir: tempfile::TempDir,
}

impl Workspace {
    pub fn new() -> Self {
        Workspace {
            dir: tempfile::tempdir().expect("temporary directory"),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn write(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, contents).expect("write test file");
        path
    }

    /// Writes `scene.toml` and runs `xpbd-sim run` on it with `args`; output in `out/`.
    pub fn run(&self, scene: &str, args: &[&str]) -> Output {
        self.command(scene, args).output().expect("run xpbd-sim")
    }

    /// The command [`Self::run`] runs, for a test that sets more on it (its environment).
    pub fn command(&self, scene: &str, args: &[&str]) -> Command {
        let path = self.write("scene.toml", scene);
        let out = self.path("out");
        let mut command = Command::new(BIN);
        command
            .arg("run")
            .arg(&path)
            .arg("--out")
            .arg(&out)
            .arg("--quiet");
        command.args(args);
        command
    }

    /// Runs and asserts success.
    pub fn run_ok(&self, scene: &str, args: &[&str]) {
        let output = self.run(scene, args);
        assert!(
            output.status.success(),
            "xpbd-sim failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }

    pub fn out(&self) -> PathBuf {
        self.path("out")
    }
}

/// The `v` lines of an OBJ file.
pub fn obj_positions(path: &Path) -> Vec<[f64; 3]> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter_map(|l| l.strip_prefix("v "))
        .map(|rest| {
            let v: Vec<f64> = rest
                .split_whitespace()
                .map(|w| w.parse().unwrap())
                .collect();
            [v[0], v[1], v[2]]
        })
        .collect()
}

/// Positions of object `name` in every frame file `{name}.{frame:04}.obj` from frame 1.
pub fn obj_sequence(dir: &Path, name: &str, frames: usize) -> Vec<Vec<[f64; 3]>> {
    (1..=frames)
        .map(|f| obj_positions(&dir.join(format!("{name}.{f:04}.obj"))))
        .collect()
}

/// The stats log as JSON values, one per line.
pub fn stats(dir: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join("stats.jsonl")).expect("stats.jsonl");
    text.lines()
        .map(|l| serde_json::from_str(l).expect("stats line is JSON"))
        .collect()
}

/// The `frame` records of a stats log.
pub fn frame_records(dir: &Path) -> Vec<serde_json::Value> {
    stats(dir)
        .into_iter()
        .filter(|r| r["type"] == "frame")
        .collect()
}

pub fn distance(a: [f64; 3], b: [f64; 3]) -> f64 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
}

/// Distance from a box of half extents `half` centred at the origin (box axes) to `q`:
/// Euclidean outside (rounded at edges and corners), minus the depth to the nearest face inside.
pub fn box_distance(q: [f64; 3], half: [f64; 3]) -> f64 {
    let d: Vec<f64> = (0..3).map(|a| q[a].abs() - half[a]).collect();
    let outside = d.iter().map(|c| c.max(0.0).powi(2)).sum::<f64>().sqrt();
    if outside > 0.0 {
        outside
    } else {
        d.iter().cloned().fold(f64::MIN, f64::max)
    }
}

/// Asserts exit code 2 (bad input), `expect` in the message, and no panic text.
pub fn assert_refused(output: &std::process::Output, expect: &str, what: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(2),
        "{what}: exit code; stderr: {stderr}"
    );
    assert!(
        stderr.contains(expect),
        "{what}: expected `{expect}` in: {stderr}"
    );
    assert!(
        !stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"),
        "{what}: {stderr}"
    );
}

/// The bytes of every file in `dir` whose extension is `extension`, by file name.
pub fn files_with_extension(
    dir: &Path,
    extension: &str,
) -> std::collections::BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            (name, std::fs::read(&p).unwrap())
        })
        .collect()
}

/// Triangles of an OBJ file (faces fanned), 0-based.
pub fn obj_triangles(path: &std::path::Path) -> Vec<[usize; 3]> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut triangles = Vec::new();
    for line in text.lines().filter(|l| l.starts_with("f ")) {
        let corners: Vec<usize> = line[2..]
            .split_whitespace()
            .map(|c| c.split('/').next().unwrap().parse::<usize>().unwrap() - 1)
            .collect();
        for k in 1..corners.len() - 1 {
            triangles.push([corners[0], corners[k], corners[k + 1]]);
        }
    }
    triangles
}
