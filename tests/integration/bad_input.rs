//! The bad-input corpus (`tests/bad_inputs/*.toml`): every file states on its first line,
//! `# expect: TEXT`, what the error message must contain. Each must exit with code 2, name the
//! file, never panic, and write nothing. Plus command-line mistakes.

use crate::common::*;
use std::path::Path;
use std::process::Command;

fn corpus() -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad_inputs");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/bad_inputs")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_bad_input_is_refused_with_its_message_and_writes_nothing() {
    let files = corpus();
    assert!(files.len() >= 40, "corpus has {} files", files.len());
    for file in files {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).to_string();
        let expect = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# expect: "))
            .unwrap_or_else(|| panic!("{} lacks its `# expect:` line", file.display()));
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let ws = Workspace::new();
        let out = ws.path("out");
        let run = Command::new(BIN)
            .arg("run")
            .arg(&file)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert_refused(&run, expect, &name);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(
            stderr.contains(&name),
            "{name}: the message must name the file: {stderr}"
        );
        assert!(!out.exists(), "{name}: wrote {}", out.display());
        let check = Command::new(BIN).arg("check").arg(&file).output().unwrap();
        assert_refused(&check, expect, &format!("check {name}"));
    }
}

/// A mesh collider sequence is held in memory whole: one whose frames cannot fit is refused
/// after its first frame is read, not after the machine runs out. The memory is capped at
/// 1 GB with `XPBD_SIM_MEMORY_LIMIT` (what a farm job would set), and the frames are symlinks
/// to one 3 MB file, enough of them to need twice that.
#[test]
fn a_mesh_sequence_larger_than_memory_is_refused_before_it_is_read() {
    let ws = Workspace::new();
    let side = 317; // 100 489 vertices: 2.4 MB of positions per frame
    let mut obj = String::new();
    for k in 0..side * side {
        obj += &format!("v {} 0 {}\n", k % side, k / side);
    }
    obj += "f 1 2 318\n";
    let first = ws.write("body.0001.obj", &obj);
    let (limit, per_frame) = (1_000_000_000_u64, (side * side * 24) as u64);
    let frames = 2 * limit / per_frame;
    for frame in 2..=frames {
        std::os::unix::fs::symlink(&first, ws.path(&format!("body.{frame:04}.obj"))).unwrap();
    }
    let scene = format!(
        "[simulation]\nframes = {frames}\n[[object]]\nname = \"c\"\n\
         grid = {{ size = [1.0, 1.0], resolution = [2, 2] }}\ndensity = 0.1\n\
         [[collider]]\nname = \"body\"\nshape = \"mesh\"\nmesh = \"body.{{frame:04}}.obj\"\n"
    );
    let path = ws.write("scene.toml", &scene);
    let check = |limit: &str| {
        Command::new(BIN)
            .arg("check")
            .arg(&path)
            .env("XPBD_SIM_MEMORY_LIMIT", limit)
            .output()
            .unwrap()
    };
    let message =
        format!("mesh sequence `body.{{frame:04}}.obj`: {frames} frames of 100489 vertices");
    let output = check(&limit.to_string());
    assert_refused(&output, &message, "sequence");
    assert_refused(&output, "is available", "sequence");
    assert_refused(
        &check("lots"),
        "XPBD_SIM_MEMORY_LIMIT must be a whole number of bytes",
        "limit",
    );
}

#[test]
fn command_line_mistakes_exit_2() {
    let ws = Workspace::new();
    let good = "[[object]]\nname = \"c\"\ngrid = { size = [1.0, 1.0], resolution = [3, 3] }\ndensity = 0.1\n";
    for (args, expect) in [
        (vec!["--format", "fbx"], "fbx"),
        (
            vec!["--format", "obj", "--format", "ply", "--format", "obj"],
            "--format obj is given twice",
        ),
        (
            vec!["--set", "output.name=\"..{frame}\""],
            "must not start with `.`",
        ),
        (vec!["--frames", "0"], "simulation.frames"),
        (vec!["--frames", "many"], "many"),
        (
            vec!["--set", "simulation.substep=4"],
            "did you mean `substeps`?",
        ),
        (
            vec!["--set", "object.shirt.bending.compliance=1"],
            "no object named `shirt`",
        ),
        (vec!["--set", "simulation.fps"], "KEY=VALUE"),
        (vec!["--set", "simulation.fps=nan"], "not a finite number"),
        (
            vec!["--set", "output.name=\"../{frame}\""],
            "plain file name",
        ),
        // A value out of range or of the wrong type names the --set that gave it.
        (
            vec!["--set", "simulation.fps=0"],
            "simulation.fps: must be from 0.001 to 1e6, got 0 (from --set simulation.fps=0)",
        ),
        (
            vec!["--set", "object.c.density=-1"],
            "object[0].density: must be > 0, got -1 (from --set object.c.density=-1)",
        ),
        (
            vec!["--set", "simulation.fps=true"],
            "expected a number (from --set simulation.fps=true)",
        ),
        (vec!["--bogus"], "--bogus"),
    ] {
        let output = ws.run(good, &args);
        assert_refused(&output, expect, &format!("{args:?}"));
        assert!(!ws.out().exists());
    }
    let missing = Command::new(BIN)
        .args(["run", "no/such/scene.toml"])
        .output()
        .unwrap();
    assert_refused(&missing, "no/such/scene.toml", "missing scene");
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    // 100 000 levels in every form TOML nests, written here rather than committed. Each is
    // refused with exit 2 and a short message (the offending line is shown clipped).
    const DEPTH: usize = 100_000;
    let ws = Workspace::new();
    let chain = vec!["a"; DEPTH].join(".");
    for (name, scene) in [
        (
            "arrays",
            format!("a = {}{}\n", "[".repeat(DEPTH), "]".repeat(DEPTH)),
        ),
        (
            "inline_tables",
            format!("a = {}1{}\n", "{ b = ".repeat(DEPTH), " }".repeat(DEPTH)),
        ),
        (
            "arrays_of_tables",
            format!("a = {}{{}}{}\n", "[".repeat(DEPTH), "]".repeat(DEPTH)),
        ),
        ("table_header", format!("[{chain}]\n")),
        ("dotted_key", format!("{chain} = 1\n")),
    ] {
        let file = format!("{name}.toml");
        let path = ws.write(&file, &scene);
        let check = Command::new(BIN).arg("check").arg(&path).output().unwrap();
        assert_refused(&check, &file, name);
        assert!(
            check.stderr.len() < 1000,
            "{name}: {} bytes of stderr",
            check.stderr.len()
        );
    }
    // `--set` builds its own tables: a key of 60 000 parts (about the longest argument Linux
    // passes) would nest them too deep to drop.
    let good = "[[object]]\nname = \"c\"\ngrid = { size = [1.0, 1.0], resolution = [3, 3] }\ndensity = 0.1\n";
    let key = format!("--set=simulation.{}=1", vec!["a"; 60_000].join("."));
    let output = ws.run(good, &[&key]);
    assert_refused(&output, "scene keys have at most 16", "deep --set key");
    let value = format!(
        "--set=simulation.fps={}{}",
        "[".repeat(60_000),
        "]".repeat(60_000)
    );
    let output = ws.run(good, &[&value]);
    assert_refused(&output, "is not a TOML value", "deep --set value");
    assert!(output.stderr.len() < 1000);
    assert!(!ws.out().exists());
}

#[test]
fn a_closed_pipe_is_not_a_crash() {
    // `xpbd-sim check scene | head -0`: the reader goes away before we print.
    use std::process::Stdio;
    let ws = Workspace::new();
    let scene = ws.write(
        "scene.toml",
        "[[object]]\nname = \"c\"\ngrid = { size = [1.0, 1.0], resolution = [3, 3] }\ndensity = 0.1\n",
    );
    for args in [vec!["check"], vec!["run", "--frames", "3", "--out"]] {
        let mut command = Command::new(BIN);
        command.args(&args);
        if args[0] == "run" {
            command.arg(ws.path("out"));
        }
        let mut child = command
            .arg(&scene)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        drop(child.stderr.take());
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{args:?}");
    }
}
