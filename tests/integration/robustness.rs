//! Production robustness (SPEC §4): a killed run resumes to the same bytes, signals stop at a
//! frame boundary with a checkpoint, damaged checkpoints are refused without touching the
//! cache, a full disk and an unwritable directory fail with exit code 1 and leave only whole
//! frames, and a planted symlink is replaced rather than written through.

use crate::common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A tearing banner (topology changes mid-run) for 48 frames, checkpoints every 4.
fn scene() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/tear.toml")
}

const CHECKPOINT_EVERY: &str = "output.checkpoint_every=4";

fn run_args(out: &Path, extra: &[&str]) -> Command {
    run_args_with(out, CHECKPOINT_EVERY, extra)
}

fn run_args_with(out: &Path, setting: &str, extra: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command
        .arg("run")
        .arg(scene())
        .arg("--out")
        .arg(out)
        .args(["--quiet", "--set", setting])
        .args(extra);
    command
}

/// Every frame file of a cache (not the stats log or checkpoints), by name.
fn frame_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "obj" || e == "ply"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            (name, std::fs::read(&p).unwrap())
        })
        .collect()
}

fn reference_cache() -> (Workspace, BTreeMap<String, Vec<u8>>) {
    reference_cache_every(CHECKPOINT_EVERY)
}

fn reference_cache_every(setting: &str) -> (Workspace, BTreeMap<String, Vec<u8>>) {
    let ws = Workspace::new();
    let status = run_args_with(&ws.out(), setting, &["--threads", "1"])
        .status()
        .unwrap();
    assert!(status.success());
    let files = frame_files(&ws.out());
    assert_eq!(files.len(), 48, "a PLY file for each of 48 frames");
    (ws, files)
}

/// Whether the stats log holds a whole `frame` record for `frame` (written after its files).
fn frame_recorded(out: &Path, frame: u64) -> bool {
    let text = std::fs::read_to_string(out.join("stats.jsonl")).unwrap_or_default();
    text.split_inclusive('\n')
        .filter(|line| line.ends_with('\n'))
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .any(|r| r["type"] == "frame" && r["frame"] == frame)
}

/// Starts a run and waits until its checkpoint after `frame` exists and that frame is done:
/// its file written and its stats record appended. The checkpoint is written by the solver
/// thread while the writer thread may still be on the frame, so a kill between the two leaves
/// the frame (and the checkpoint) unusable, which is right but not what these tests are after.
fn start_and_wait_for_checkpoint(out: &Path, frame: u64, threads: &str) -> Child {
    let mut child = run_args(out, &["--threads", threads])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let checkpoint = out.join(format!("checkpoints/frame.{frame:06}.ckpt"));
    let deadline = Instant::now() + Duration::from_secs(120);
    while !checkpoint.exists() || !frame_recorded(out, frame) {
        assert!(Instant::now() < deadline, "no checkpoint after a long wait");
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(2));
    }
    child
}

fn assert_same_frames(got: &BTreeMap<String, Vec<u8>>, expected: &BTreeMap<String, Vec<u8>>) {
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in got {
        assert!(
            bytes == &expected[name],
            "{name} differs from the uninterrupted run"
        );
    }
}

#[test]
fn a_killed_run_resumes_to_the_same_bytes_on_another_thread_count() {
    let (_reference, expected) = reference_cache();
    let ws = Workspace::new();
    let mut child = start_and_wait_for_checkpoint(&ws.out(), 8, "2");
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    let partial = frame_files(&ws.out());
    assert!(partial.len() < 48, "the kill came before the end");
    let resumed = run_args(&ws.out(), &["--resume", "--threads", "1"])
        .output()
        .unwrap();
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert_same_frames(&frame_files(&ws.out()), &expected);
    let records = stats(&ws.out());
    assert_eq!(records[0]["type"], "run");
    assert!(records.iter().any(|r| r["type"] == "resume"));
    assert_eq!(records.last().unwrap()["status"], "ok");
    // One frame record per frame, in order, despite the overlap of the two runs.
    let frames: Vec<u64> = records
        .iter()
        .filter(|r| r["type"] == "frame")
        .map(|r| r["frame"].as_u64().unwrap())
        .collect();
    assert_eq!(frames, (1..=48).collect::<Vec<_>>());
}

#[test]
fn sigint_stops_at_a_frame_boundary_with_a_checkpoint_and_exit_code_130() {
    let (_reference, expected) = reference_cache();
    let ws = Workspace::new();
    let mut child = start_and_wait_for_checkpoint(&ws.out(), 4, "2");
    // SAFETY: plain kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(stderr.contains("stopped by SIGINT after frame"), "{stderr}");
    assert!(stderr.contains("--resume"), "{stderr}");
    let summary = stats(&ws.out()).pop().unwrap();
    assert_eq!(summary["status"], "interrupted");
    let resumed = run_args(&ws.out(), &["--resume"]).output().unwrap();
    assert!(resumed.status.success());
    assert_same_frames(&frame_files(&ws.out()), &expected);
}

/// A cache stopped after its first checkpoint, for the refusal tests.
fn interrupted_cache() -> Workspace {
    let ws = Workspace::new();
    let mut child = start_and_wait_for_checkpoint(&ws.out(), 4, "1");
    child.kill().unwrap();
    child.wait().unwrap();
    // Only the first: a later one the run may have reached would be a fallback.
    for entry in std::fs::read_dir(ws.out().join("checkpoints")).unwrap() {
        let path = entry.unwrap().path();
        if !path.ends_with("frame.000004.ckpt") {
            std::fs::remove_file(path).unwrap();
        }
    }
    ws
}

/// Runs `--resume` expecting exit 2 with `message`, and checks nothing in the cache changed.
fn assert_refused(ws: &Workspace, extra: &[&str], message: &str) {
    let before: BTreeMap<String, Vec<u8>> = frame_files(&ws.out());
    let stats_before = std::fs::read(ws.out().join("stats.jsonl")).unwrap();
    let mut args = vec!["--resume"];
    args.extend_from_slice(extra);
    let output = run_args(&ws.out(), &args).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(message),
        "expected `{message}` in: {stderr}"
    );
    assert!(frame_files(&ws.out()) == before, "frames changed");
    assert!(std::fs::read(ws.out().join("stats.jsonl")).unwrap() == stats_before);
}

fn newest_checkpoint(out: &Path) -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir(out.join("checkpoints"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    found.sort();
    found.pop().unwrap()
}

#[test]
fn damaged_or_foreign_checkpoints_are_refused_and_nothing_is_overwritten() {
    let ws = interrupted_cache();
    // Other settings than the ones the checkpoint was made with.
    assert_refused(
        &ws,
        &["--set", "simulation.substeps=21"],
        "of another scene or other settings",
    );
    let path = newest_checkpoint(&ws.out());
    let original = std::fs::read(&path).unwrap();
    let mut flipped = original.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x10;
    std::fs::write(&path, &flipped).unwrap();
    // With no older intact checkpoint to fall back to.
    assert_refused(&ws, &[], "corrupt");
    assert_refused(&ws, &[], "no older intact checkpoint is left");
    std::fs::write(&path, &original[..original.len() - 100]).unwrap();
    assert_refused(&ws, &[], "truncated");
    std::fs::write(&path, b"not a checkpoint at all").unwrap();
    assert_refused(&ws, &[], "not an xpbd-sim checkpoint");
    std::fs::remove_dir_all(ws.out().join("checkpoints")).unwrap();
    assert_refused(&ws, &[], "nothing to resume");
}

#[test]
fn issue_12_a_damaged_newest_checkpoint_falls_back_to_an_older_intact_one() {
    // A corrupt newest checkpoint was refused although the one before it was intact.
    let (_reference, expected) = reference_cache();
    let ws = Workspace::new();
    let mut child = start_and_wait_for_checkpoint(&ws.out(), 8, "1");
    child.kill().unwrap();
    child.wait().unwrap();
    let newest = newest_checkpoint(&ws.out());
    assert!(newest.ends_with("frame.000008.ckpt"), "{newest:?}");
    assert!(ws.out().join("checkpoints/frame.000004.ckpt").exists());
    let mut bytes = std::fs::read(&newest).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x10;
    std::fs::write(&newest, &bytes).unwrap();
    let resumed = run_args(&ws.out(), &["--resume"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{stderr}");
    assert_same_frames(&frame_files(&ws.out()), &expected);
    let resume = stats(&ws.out())
        .into_iter()
        .find(|r| r["type"] == "resume")
        .unwrap();
    assert_eq!(resume["after_frame"], 4);
    assert!(resume["checkpoint"]
        .as_str()
        .unwrap()
        .ends_with("frame.000004.ckpt"));
    let damaged = resume["damaged_checkpoints"].as_array().unwrap();
    assert_eq!(damaged.len(), 1);
    let why = damaged[0].as_str().unwrap();
    assert!(why.contains("frame.000008.ckpt refused: corrupt"), "{why}");
}

/// Runs the scene with `--set setting` under `ulimit -f kib` (bash counts it in KiB), as a
/// full disk would stop it.
fn run_with_file_size_limit(out: &Path, kib: u32, setting: &str) -> std::process::Output {
    let command = format!(
        "ulimit -f {kib}; exec '{BIN}' run '{}' --out '{}' --quiet --set {setting}",
        scene().display(),
        out.display()
    );
    Command::new("bash")
        .arg("-c")
        .arg(&command)
        .output()
        .unwrap()
}

#[test]
fn a_full_disk_stops_with_exit_code_1_naming_the_frame_and_keeps_whole_frames() {
    let ws = Workspace::new();
    // 80 KiB per file at most (bash counts `ulimit -f` in KiB): the banner's PLY frames
    // start at 74.5 KB and grow past the limit as it tears into more vertices.
    let output = run_with_file_size_limit(&ws.out(), 80, "output.checkpoint_every=0");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("frame "), "{stderr}");
    assert!(stderr.contains(&ws.out().display().to_string()), "{stderr}");
    assert!(stderr.contains("whole frames were written"), "{stderr}");
    assert!(stderr.contains("File too large"), "{stderr}");
    // Every frame file under its final name is whole: the PLY reader checks the header's
    // counts against the file size, so a cut file would not read.
    let files = frame_files(&ws.out());
    assert!(
        !files.is_empty() && files.len() < 48,
        "{} files",
        files.len()
    );
    for name in files.keys() {
        let mesh = xpbd_sim::mesh::ply::read_ply(&ws.out().join(name)).unwrap();
        assert!(mesh.positions.len() >= 32 * 32, "{name}");
    }
    assert_eq!(stats(&ws.out()).pop().unwrap()["status"], "io_error");
}

#[test]
fn a_checkpoint_that_no_longer_fits_stops_the_run_and_the_one_before_resumes_it() {
    // Checkpoints grow as the banner tears (255.8 KB after frame 8, 264.5 KB after frame
    // 20): with 255 KiB per file the early ones fit and a later one does not.
    let ws = Workspace::new();
    let every = "output.checkpoint_every=2";
    let output = run_with_file_size_limit(&ws.out(), 255, every);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("checkpoints/frame."), "{stderr}");
    assert!(stderr.contains("File too large"), "{stderr}");
    assert!(frame_files(&ws.out()).len() < 48);
    // With room again, --resume continues from the last checkpoint that was written and
    // finishes the cache as if nothing had happened.
    let (_reference, expected) = reference_cache_every(every);
    let resumed = run_args_with(&ws.out(), every, &["--resume"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{stderr}");
    assert_same_frames(&frame_files(&ws.out()), &expected);
}

#[test]
fn an_unwritable_output_directory_fails_before_simulating() {
    // /proc/1 exists and refuses new files even to root (tests may run as root, for whom
    // file permissions are no obstacle).
    let output = Command::new(BIN)
        .args(["run"])
        .arg(scene())
        .args(["--out", "/proc/1", "--quiet"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot write into the output directory /proc/1"),
        "{stderr}"
    );
}

#[test]
fn a_symlink_planted_under_a_frame_name_is_replaced_not_followed() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.out()).unwrap();
    let victim = ws.write("victim.txt", "precious");
    std::os::unix::fs::symlink(&victim, ws.out().join("banner.0002.ply")).unwrap();
    let status = run_args(&ws.out(), &["--frames", "3"]).status().unwrap();
    assert!(status.success());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    let written = std::fs::symlink_metadata(ws.out().join("banner.0002.ply")).unwrap();
    assert!(written.file_type().is_file());
}

#[test]
fn sigterm_stops_gracefully_and_a_second_signal_stops_at_once() {
    // One SIGTERM: graceful, exit 143, summary "interrupted".
    let ws = Workspace::new();
    let mut child = start_and_wait_for_checkpoint(&ws.out(), 4, "1");
    // SAFETY: plain kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    assert_eq!(child.wait().unwrap().code(), Some(143));
    assert_eq!(stats(&ws.out()).pop().unwrap()["status"], "interrupted");
    // SIGTERM and SIGINT together: the second one handled exits at once, before the frame
    // boundary, so no summary is written. Should this test be descheduled between its two
    // kill(2) calls for as long as the child takes to reach the frame boundary and stop
    // gracefully, the child rightly writes a summary; three such misses in a row would mean
    // the second signal is not handled.
    let stopped_at_once = (0..3).any(|_| {
        let ws = Workspace::new();
        let mut child = start_and_wait_for_checkpoint(&ws.out(), 4, "1");
        for signal in [libc::SIGTERM, libc::SIGINT] {
            // SAFETY: as above.
            assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        }
        let code = child.wait().unwrap().code();
        assert!(code == Some(130) || code == Some(143), "{code:?}");
        stats(&ws.out()).pop().unwrap()["type"] != "summary"
    });
    assert!(
        stopped_at_once,
        "it stopped at the frame boundary, not at once"
    );
}

#[test]
fn issue_12_one_run_at_a_time_per_output_folder() {
    // Two runs into one folder interleaved their frames and stats lines (one exited 0 with 63
    // of its 200 frames from the other scene). The second is refused with exit 2 naming the
    // holder; the lock goes with the holder, even when it is killed.
    let ws = Workspace::new();
    let slow = "[simulation]\nframes = 100000\n[[object]]\nname = \"c\"\n\
                grid = { size = [1.0, 1.0], resolution = [60, 60] }\ndensity = 0.2\n\
                pin = [0]\nstretch = {}\n";
    let scene = ws.write("slow.toml", slow);
    let mut first = Command::new(BIN)
        .arg("run")
        .arg(&scene)
        .args(["--quiet", "--no-output", "--out"])
        .arg(ws.out())
        .spawn()
        .unwrap();
    let stats = ws.out().join("stats.jsonl");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !stats.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let short_run = || {
        Command::new(BIN)
            .arg("run")
            .arg(&scene)
            .args(["--quiet", "--no-output", "--frames", "2", "--out"])
            .arg(ws.out())
            .output()
            .unwrap()
    };
    let second = short_run();
    let stderr = String::from_utf8_lossy(&second.stderr);
    first.kill().unwrap();
    first.wait().unwrap();
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("is in use by another xpbd-sim run (pid "),
        "{stderr}"
    );
    // The killed run's lock is gone with it.
    let third = short_run();
    assert!(
        third.status.success(),
        "{}",
        String::from_utf8_lossy(&third.stderr)
    );
}

/// Starts a run of a 30 × 30 cloth for 100 000 frames (checkpoints every `checkpoint_every`)
/// into `ws.out()` with `extra` arguments and stderr piped, and returns its scene and process
/// once frame 5 is recorded.
fn start_long_run(ws: &Workspace, checkpoint_every: u32, extra: &[&str]) -> (PathBuf, Child) {
    let slow = format!(
        "[simulation]\nframes = 100000\n[[object]]\nname = \"c\"\n\
         grid = {{ size = [1.0, 1.0], resolution = [30, 30] }}\ndensity = 0.2\n\
         pin = [0]\nstretch = {{}}\n[output]\ncheckpoint_every = {checkpoint_every}\n"
    );
    let scene = ws.write("slow.toml", &slow);
    let run = Command::new(BIN)
        .arg("run")
        .arg(&scene)
        .arg("--quiet")
        .args(extra)
        .arg("--out")
        .arg(ws.out())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !frame_recorded(&ws.out(), 5) {
        assert!(Instant::now() < deadline, "no frame 5 after a long wait");
        std::thread::sleep(Duration::from_millis(5));
    }
    (scene, run)
}

#[test]
fn issue_12_an_output_folder_deleted_mid_run_fails_the_run() {
    // Deleting the output folder mid-run ended with exit 0 twice: the checkpoint writer
    // recreated the folder, and the earlier frames and the stats log were gone.
    let ws = Workspace::new();
    let (_, run) = start_long_run(&ws, 2, &[]);
    // The writer may add a file while the folder is being removed: try until it is gone.
    while ws.out().exists() {
        let _ = std::fs::remove_dir_all(ws.out());
    }
    let output = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("was deleted or replaced during the run"),
        "{stderr}"
    );
    assert!(
        !ws.out().exists(),
        "the deleted folder must not be recreated"
    );
}

#[test]
fn issue_13_no_output_writes_no_checkpoints() {
    // `--no-output` wrote 6.3 MB checkpoints on cloth-256 that nothing could resume into.
    let ws = Workspace::new();
    let (scene, mut run) = start_long_run(&ws, 1, &["--no-output"]);
    assert!(!ws.out().join("checkpoints").exists());
    // SAFETY: plain kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(run.id() as i32, libc::SIGINT) }, 0);
    let status = run.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(run.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("no checkpoint"), "{stderr}");
    assert!(!ws.out().join("checkpoints").exists());
    let refused = Command::new(BIN)
        .arg("run")
        .arg(&scene)
        .args(["--no-output", "--resume"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
}
