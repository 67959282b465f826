//! Issue 17: wedges. Every task's cache is the bytes of the same `run` typed by hand; a bad
//! value anywhere writes nothing; a wedge stopped by Ctrl-C resumes to the same bytes; the
//! Slurm script holds one array index per task; `wedge status` reports every task.

use crate::common::*;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use xpbd_sim::output::checkpoint;

/// A small drape: a 12 × 12 cloth on a ball, `frames` frames, a checkpoint every 2.
fn drape(frames: u64) -> String {
    drape_of(frames, 12)
}

/// The drape with an `n` × `n` cloth.
fn drape_of(frames: u64, n: usize) -> String {
    format!(
        "[simulation]\nfps = 24.0\nframes = {frames}\nsubsteps = 10\niterations = 1\n\
         [output]\nformats = [\"obj\"]\ncheckpoint_every = 2\n\
         [[object]]\nname = \"cloth\"\ngrid = {{ size = [1.0, 1.0], resolution = [{n}, {n}] }}\n\
         translate = [0.0, 1.0, 0.0]\ndensity = 0.2\nstretch = {{ compliance = 0.0 }}\n\
         bending = {{ compliance = 10.0 }}\n\
         [[collider]]\nname = \"ball\"\nshape = \"sphere\"\ncenter = [0.0, 0.4, 0.0]\nradius = 0.4\nfriction = 0.3\n"
    )
}

fn wedge(ws: &Workspace, args: &[&str]) -> Output {
    let mut command = Command::new(BIN);
    command.arg("wedge").args(args).current_dir(ws.dir.path());
    command.output().expect("run xpbd-sim wedge")
}

fn assert_ok(output: &Output) {
    assert!(
        output.status.success(),
        "exit {}: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

const VARY: [&str; 4] = [
    "--vary",
    "object.cloth.bending.compliance=1,50",
    "--vary",
    "collider.ball.friction=0.2,0.5",
];

fn status_json(ws: &Workspace, dir: &str) -> serde_json::Value {
    let output = wedge(ws, &["status", dir, "--json"]);
    assert_ok(&output);
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn every_task_is_the_run_typed_by_hand_and_a_rerun_skips_finished_tasks() {
    let ws = Workspace::new();
    ws.write("drape.toml", &drape(6));
    let args = [&["drape.toml", "--out", "w", "--jobs", "2"][..], &VARY[..]].concat();
    assert_ok(&wedge(&ws, &args));
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(ws.path("w/wedge.json")).unwrap()).unwrap();
    let tasks = plan["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 4);
    assert_eq!(
        tasks[3]["name"],
        "w003-bending.compliance=50-ball.friction=0.5"
    );
    assert_eq!(plan["scene_sha256"].as_str().unwrap().len(), 64);
    for task in tasks {
        let mut command = Command::new(BIN);
        command
            .arg("run")
            .arg(ws.path("drape.toml"))
            .arg("--out")
            .arg(ws.path("hand"));
        for pair in task["set"].as_array().unwrap() {
            command.arg("--set").arg(pair.as_str().unwrap());
        }
        assert_ok(
            &command
                .arg("--quiet")
                .arg("--threads")
                .arg("1")
                .output()
                .unwrap(),
        );
        let name = task["name"].as_str().unwrap();
        let got = files_with_extension(&ws.path(&format!("w/{name}")), "obj");
        assert_eq!(got.len(), 6);
        assert!(
            got == files_with_extension(&ws.path("hand"), "obj"),
            "{name} differs"
        );
        std::fs::remove_dir_all(ws.path("hand")).unwrap();
    }
    // Different bending gives a different cache: the values reached the runs.
    let a = files_with_extension(
        &ws.path(&format!("w/{}", tasks[0]["name"].as_str().unwrap())),
        "obj",
    );
    let c = files_with_extension(
        &ws.path(&format!("w/{}", tasks[2]["name"].as_str().unwrap())),
        "obj",
    );
    assert!(a["cloth.0006.obj"] != c["cloth.0006.obj"]);
    let status = status_json(&ws, "w");
    for row in status["tasks"].as_array().unwrap() {
        assert_eq!(row["state"], "done", "{row}");
        assert_eq!(row["frames"], 6);
    }
    // Again: nothing is run (the frame files keep their modification times).
    let stamp = |p: &Path| std::fs::metadata(p).unwrap().modified().unwrap();
    let first = ws.path(&format!(
        "w/{}/cloth.0006.obj",
        tasks[0]["name"].as_str().unwrap()
    ));
    let before = stamp(&first);
    let again = wedge(&ws, &args);
    assert_ok(&again);
    assert!(String::from_utf8_lossy(&again.stderr).contains("done already, skipped"));
    assert_eq!(stamp(&first), before);
    // Another wedge into the same folder is refused.
    let other = [&[
        "drape.toml",
        "--out",
        "w",
        "--vary",
        "collider.ball.friction=0.9",
    ][..]]
    .concat();
    let refused = wedge(&ws, &other);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("holds another wedge"));
}

#[test]
fn a_bad_value_in_any_task_is_refused_before_anything_is_written() {
    let ws = Workspace::new();
    ws.write("drape.toml", &drape(6));
    for (vary, expect) in [
        (
            "object.cloth.bending.compliance=1,-5",
            "w001-bending.compliance=-5",
        ),
        ("object.cloth.bending.compliance=1,soft", "w001"),
        ("object.nothing.density=1,2", "nothing"),
        ("collider.ball.friction=0.1,0.1", "listed twice"),
        ("collider.ball.friction", "KEY=V1,V2"),
    ] {
        let output = wedge(&ws, &["drape.toml", "--out", "w", "--vary", vary]);
        assert_eq!(output.status.code(), Some(2), "{vary}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expect), "{vary}: {stderr}");
        assert!(!ws.path("w").exists(), "{vary} wrote something");
    }
}

/// `--dry-run` without a farm checks and plans every task, writes `wedge.json`, lists the
/// tasks and runs none of them; `wedge status` then shows them all pending.
#[test]
fn a_dry_run_here_plans_the_tasks_and_runs_none() {
    let ws = Workspace::new();
    ws.write("drape.toml", &drape(6));
    let args = [&["drape.toml", "--out", "w", "--dry-run"][..], &VARY[..]].concat();
    let output = wedge(&ws, &args);
    assert_ok(&output);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("w002-bending.compliance=50-ball.friction=0.2: --set 'object.cloth.bending.compliance=50' --set 'collider.ball.friction=0.2'"),
        "{stdout}"
    );
    assert!(ws.path("w/wedge.json").exists());
    let status = status_json(&ws, "w");
    let states: Vec<&str> = (status["tasks"].as_array().unwrap().iter())
        .map(|r| r["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["pending"; 4]);
    let task_folders = std::fs::read_dir(ws.path("w"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("w0")
        })
        .count();
    assert_eq!(task_folders, 0, "a dry run ran a task");
}

/// A scene kept in the wedge's directory under the name of the Slurm script is refused, not
/// replaced by the script.
#[test]
fn a_wedge_never_writes_over_its_scene() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path("w")).unwrap();
    ws.write("w/wedge.sbatch", &drape(6));
    let args = [
        &[
            "w/wedge.sbatch",
            "--out",
            "w",
            "--submit",
            "slurm",
            "--dry-run",
        ][..],
        &VARY[..],
    ]
    .concat();
    let output = wedge(&ws, &args);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("and that is the scene"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(ws.path("w/wedge.sbatch")).unwrap(),
        drape(6)
    );
    assert!(!ws.path("w/wedge.json").exists());
}

#[test]
fn the_slurm_script_runs_one_task_per_array_index_and_resumes() {
    let ws = Workspace::new();
    ws.write("drape.toml", &drape(6));
    let args = [
        &["drape.toml", "--out", "w", "--submit", "slurm", "--dry-run"][..],
        &["--cpus", "2", "--time", "00:10:00", "--partition", "debug"][..],
        &VARY[..],
    ]
    .concat();
    let output = wedge(&ws, &args);
    assert_ok(&output);
    let script = std::fs::read_to_string(ws.path("w/wedge.sbatch")).unwrap();
    for line in [
        "#SBATCH --array=0-3\n",
        "#SBATCH --cpus-per-task=2\n",
        "#SBATCH --time=00:10:00\n",
        "#SBATCH --partition=debug\n",
        "#SBATCH --requeue\n",
        "  2) task='w002-bending.compliance=50-ball.friction=0.2'; sets=(--set 'object.cloth.bending.compliance=50' --set 'collider.ball.friction=0.2') ;;\n",
    ] {
        assert!(script.contains(line), "{line} missing from\n{script}");
    }
    assert!(script.contains(" run ") && script.contains("--resume"));
    // Run array index 1 by hand as Slurm would, twice: the second resumes or leaves it as is.
    let run_index = || {
        let status = Command::new("bash")
            .arg(ws.path("w/wedge.sbatch"))
            .env("SLURM_ARRAY_TASK_ID", "1")
            .env("SLURM_CPUS_PER_TASK", "1")
            .status()
            .unwrap();
        assert!(status.success());
    };
    run_index();
    let status = status_json(&ws, "w");
    let states: Vec<&str> = (status["tasks"].as_array().unwrap().iter())
        .map(|r| r["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["pending", "done", "pending", "pending"]);
}

#[test]
fn a_wedge_stopped_by_ctrl_c_resumes_to_the_same_bytes() {
    let ws = Workspace::new();
    // Long enough that a task takes far longer than noticing its checkpoints: about 0.6 s
    // here at 1 thread. At 60 frames (0.2 s) the wedge once finished first, on a busy
    // machine, once the solver had become faster.
    const FRAMES: usize = 200;
    ws.write("drape.toml", &drape_of(FRAMES as u64, 48));
    let args = [&["drape.toml", "--out", "w", "--jobs", "2"][..], &VARY[..2]].concat();
    let mut child = Command::new(BIN)
        .arg("wedge")
        .args(&args)
        .current_dir(ws.dir.path())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until both tasks have a checkpoint, then interrupt the wedge. Any checkpoint: a
    // run keeps only its newest two, so on a busy machine one task may have deleted a given
    // frame's before the other wrote it.
    let has_checkpoint = |task: &str| {
        checkpoint::list(&ws.path(&format!("w/{task}"))).is_ok_and(|found| !found.is_empty())
    };
    let tasks = ["w000-bending.compliance=1", "w001-bending.compliance=50"];
    let deadline = Instant::now() + Duration::from_secs(120);
    while !tasks.iter().all(|t| has_checkpoint(t)) {
        assert!(Instant::now() < deadline, "no checkpoints");
        assert!(child.try_wait().unwrap().is_none(), "the wedge ended early");
        std::thread::sleep(Duration::from_millis(5));
    }
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let rows = status_json(&ws, "w");
    assert!(rows["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["state"] == "pending"));
    assert_ok(&wedge(&ws, &args));
    for (task, bending) in tasks.iter().zip(["1", "50"]) {
        let hand = Workspace::new();
        let mut command = Command::new(BIN);
        command
            .arg("run")
            .arg(ws.path("drape.toml"))
            .arg("--out")
            .arg(hand.out());
        command
            .arg("--set")
            .arg(format!("object.cloth.bending.compliance={bending}"));
        assert_ok(&command.arg("--quiet").output().unwrap());
        let got = files_with_extension(&ws.path(&format!("w/{task}")), "obj");
        assert_eq!(got.len(), FRAMES);
        assert!(
            got == files_with_extension(&hand.out(), "obj"),
            "{task} differs"
        );
    }
}

#[test]
fn status_sorts_by_a_column_and_refuses_an_unknown_one() {
    let ws = Workspace::new();
    ws.write("drape.toml", &drape(4));
    let args = [&["drape.toml", "--out", "w"][..], &VARY[2..]].concat();
    assert_ok(&wedge(&ws, &args));
    let output = wedge(
        &ws,
        &["status", "w", "--csv", "--sort", "-collider.ball.friction"],
    );
    assert_ok(&output);
    let csv = String::from_utf8_lossy(&output.stdout).to_string();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(
        lines[0].starts_with("task,collider.ball.friction,state,frames,"),
        "{csv}"
    );
    assert!(
        lines[1].starts_with("w001-ball.friction=0.5,0.5,done,4,"),
        "{csv}"
    );
    assert!(
        lines[2].starts_with("w000-ball.friction=0.2,0.2,done,4,"),
        "{csv}"
    );
    // The contact sheet: both tasks' last frames, side by side.
    assert_ok(&wedge(&ws, &["status", "w", "--sheet"]));
    let png = std::fs::read(ws.path("w/contact_sheet.png")).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    assert!(width >= 640, "{width} px wide for two 320 px tiles");
    let refused = wedge(&ws, &["status", "w", "--sort", "colour"]);
    assert_eq!(refused.status.code(), Some(2));
    let missing = wedge(&ws, &["status", "nowhere"]);
    assert_eq!(missing.status.code(), Some(2));
}
