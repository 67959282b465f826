//! The throughput benchmarks (docs/benchmarks.md): runs the real binary on
//! `scenes/bench/cloth-N.toml` for N = 64, 128, 256 at 1 and 2 threads without output, then
//! the largest cloth at 2 threads with OBJ and with PLY output, then the soft-body workload
//! `scenes/bench/tets-48k.toml` at 1 and 2 threads, and prints wall time, ms per frame,
//! particle-substeps and constraint projections per second, the 2-thread speed-up, the cost
//! of writing, max edge strain and peak memory.
//!
//! Run: `cargo bench --bench workloads`. `XPBD_BENCH_SIZES=64,128` and `XPBD_BENCH_FRAMES=24`
//! shorten it (the reference figures use all sizes and the scenes' 120 frames);
//! `XPBD_BENCH_SOFT=0` skips the soft body. Last, the collision-heavy `drape-128` at 2 threads
//! with and without contacts (`XPBD_BENCH_COLLIDE=0` skips it), for their share of the frame,
//! and `scenes/pile.toml` (a cloth folding onto itself) with and without self collision.

#[path = "common/round_trip.rs"]
mod round_trip;

use std::path::Path;
use std::process::Command;

struct Measurement {
    wall: f64,
    simulation: f64,
    frames: u64,
    particle_substeps: f64,
    projections: f64,
    strain: f64,
    peak_memory: f64,
}

fn run(scene: &Path, threads: usize, formats: &[&str], frames: Option<u64>) -> Measurement {
    run_with(scene, threads, formats, frames, &[])
}

fn run_with(
    scene: &Path,
    threads: usize,
    formats: &[&str],
    frames: Option<u64>,
    extra: &[&str],
) -> Measurement {
    let out = std::env::temp_dir().join(format!("xpbd-cloth-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut command = Command::new(env!("CARGO_BIN_EXE_xpbd-sim"));
    command
        .arg("run")
        .arg(scene)
        .arg("--quiet")
        .arg("--out")
        .arg(&out);
    command.arg("--threads").arg(threads.to_string());
    if formats.is_empty() {
        command.arg("--no-output");
    }
    for format in formats {
        command.args(["--format", format]);
    }
    if let Some(frames) = frames {
        command.args(["--frames", &frames.to_string()]);
    }
    command.args(extra);
    let status = command.status().expect("run xpbd-sim");
    assert!(status.success(), "xpbd-sim failed on {}", scene.display());
    let log = std::fs::read_to_string(out.join("stats.jsonl")).expect("stats.jsonl");
    let records: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary = records.last().unwrap();
    let strain = records
        .iter()
        .filter(|r| r["type"] == "frame")
        .map(|r| r["max_edge_strain"].as_f64().unwrap())
        .fold(0.0, f64::max);
    let _ = std::fs::remove_dir_all(&out);
    Measurement {
        wall: summary["wall_seconds"]["total"].as_f64().unwrap(),
        simulation: summary["wall_seconds"]["simulation"].as_f64().unwrap(),
        frames: summary["frames_written"].as_u64().unwrap(),
        particle_substeps: summary["particle_substeps_per_second"].as_f64().unwrap(),
        projections: summary["constraint_projections_per_second"]
            .as_f64()
            .unwrap(),
        strain,
        peak_memory: summary["peak_memory_bytes"].as_f64().unwrap_or(0.0),
    }
}

fn main() {
    let scenes = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/bench");
    let sizes: Vec<u32> = std::env::var("XPBD_BENCH_SIZES")
        .unwrap_or_else(|_| "64,128,256".into())
        .split(',')
        .map(|s| s.trim().parse().expect("XPBD_BENCH_SIZES: numbers"))
        .collect();
    let frames: Option<u64> = std::env::var("XPBD_BENCH_FRAMES")
        .ok()
        .map(|f| f.parse().expect("XPBD_BENCH_FRAMES"));
    round_trip::print_machine_state("");
    println!();
    println!(
        "{:<10} {:>7} {:>8} {:>9} {:>9} {:>14} {:>13} {:>8} {:>9} {:>9}",
        "workload",
        "threads",
        "output",
        "wall s",
        "ms/frame",
        "p-substeps/s",
        "projections/s",
        "speedup",
        "strain",
        "peak MiB"
    );
    let mut largest = None;
    let pair = |scene: &Path, name: &str| {
        let one = run(scene, 1, &[], frames);
        print_row(name, 1, "none", &one, None);
        let two = run(scene, 2, &[], frames);
        print_row(name, 2, "none", &two, Some(one.simulation / two.simulation));
        two
    };
    for &n in &sizes {
        let scene = scenes.join(format!("cloth-{n}.toml"));
        let name = format!("cloth-{n}");
        let two = pair(&scene, &name);
        largest = Some((scene, name, two));
    }
    if let Some((scene, name, baseline)) = largest {
        for format in ["obj", "ply"] {
            let m = run(&scene, 2, &[format], frames);
            print_row(&name, 2, format, &m, None);
            println!(
                "{:<10} {format} output costs {:+.1} % of wall time against --no-output",
                "",
                100.0 * (m.wall / baseline.wall - 1.0)
            );
        }
    }
    if std::env::var("XPBD_BENCH_SOFT").map_or(true, |v| v != "0") {
        pair(&scenes.join("tets-48k.toml"), "tets-48k");
    }
    if std::env::var("XPBD_BENCH_COLLIDE").map_or(true, |v| v != "0") {
        let drape = scenes.join("drape-128.toml");
        let with = run(&drape, 2, &[], frames);
        print_row("drape-128", 2, "none", &with, None);
        let off = "object.cloth.collide=false";
        share_of(&drape, &with, "(no hits)", off, "collisions", frames);
        // The pile at 1 and 2 threads (the self-collision 2-thread speed-up), and the cost
        // of self collision against the same pile without it.
        let pile = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/pile.toml");
        let with = pair(&pile, "pile");
        let off = "object.cloth.self_collision=false";
        share_of(&pile, &with, "(no self)", off, "self collision", frames);
    }
}

/// Runs `scene` at 2 threads with `--set off` and prints the share of the simulation time of
/// `with` (the same scene as is) that what `off` turns off (`what`) costs, and the ratio.
fn share_of(
    scene: &Path,
    with: &Measurement,
    off_label: &str,
    off: &str,
    what: &str,
    frames: Option<u64>,
) {
    let without = run_with(scene, 2, &[], frames, &["--set", off]);
    print_row(off_label, 2, "none", &without, None);
    println!(
        "{:<10} {what}: {:.1} % of the simulation time; with / without = {:.2}x",
        "",
        100.0 * (1.0 - without.simulation / with.simulation),
        with.simulation / without.simulation
    );
}

/// One row of the results table.
fn print_row(name: &str, threads: usize, output: &str, m: &Measurement, speedup: Option<f64>) {
    println!(
        "{:<10} {:>7} {:>8} {:>9.2} {:>9.2} {:>14.3e} {:>13.3e} {:>8} {:>9.4} {:>9.1}",
        name,
        threads,
        output,
        m.wall,
        m.simulation * 1e3 / (m.frames - 1) as f64,
        m.particle_substeps,
        m.projections,
        speedup.map_or("-".into(), |s| format!("{s:.2}x")),
        m.strain,
        m.peak_memory / (1024.0 * 1024.0)
    );
}
