//! Issue 12: hostile input. Each test reproduces one way a hostile tester broke a run (an
//! input that overflowed, hung, grew without bound, overwrote an input or echoed a megabyte)
//! and checks the refusal the contract asks for: exit 2 before anything is written, or exit 1
//! keeping every whole frame, with a short message that names the file and the place.

use crate::common::*;
use std::process::Command;

#[test]
fn issue_12_an_obj_with_a_byte_order_mark_keeps_its_first_vertex() {
    // A UTF-8 BOM glued to the first `v` made that statement unknown and dropped vertex 0:
    // output vertex k was no longer input vertex k.
    let ws = Workspace::new();
    ws.write(
        "bom.obj",
        "\u{feff}v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nf 1 2 4 3\n",
    );
    let scene = "[simulation]\nframes = 1\n[[object]]\nname = \"m\"\nmesh = \"bom.obj\"\n\
                 density = 1.0\n";
    ws.run_ok(scene, &["--format", "obj"]);
    let positions = obj_positions(&ws.out().join("m.0001.obj"));
    assert_eq!(positions.len(), 4);
    assert_eq!(positions[0], [0.0, 0.0, 0.0]);
    assert_eq!(positions[3], [1.0, 1.0, 0.0]);
}

#[test]
fn issue_12_a_mesh_without_vertices_is_named() {
    let ws = Workspace::new();
    ws.write("empty.obj", "# nothing here\n");
    let scene = "[[object]]\nname = \"m\"\nmesh = \"empty.obj\"\ndensity = 1.0\n";
    let output = ws.run(scene, &[]);
    assert_refused(&output, "mesh `empty.obj` has no vertices", "empty mesh");
    assert!(!ws.out().exists(), "nothing may be written");
}

#[test]
fn issue_12_a_set_value_is_one_toml_value() {
    // `--set $'simulation.fps=3\nframes = 99'` kept fps = 3 and dropped the rest silently.
    let ws = Workspace::new();
    let scene = "[[object]]\nname = \"c\"\ngrid = { size = [1.0, 1.0], resolution = [2, 2] }\n\
                 density = 1.0\n";
    let output = ws.run(scene, &["--set", "simulation.fps=3\nframes = 99"]);
    assert_refused(
        &output,
        "more than one TOML value",
        "--set with a second key",
    );
    assert!(!ws.out().exists(), "nothing may be written");
    // One value still works.
    ws.run_ok(scene, &["--set", "simulation.fps=3", "--frames", "2"]);
}

#[test]
fn issue_12_keys_and_velocities_that_would_overflow_are_refused() {
    // Keys at 1e300 m and an initial velocity of 1e300 m/s wrote `inf` into the frames.
    let ws = Workspace::new();
    let cloth = "[[object]]\nname = \"c\"\ngrid = { size = [1.0, 1.0], resolution = [2, 2] }\n\
                 density = 1.0\n";
    let keyed = format!(
        "{cloth}pin = [0]\nkeys = [ {{ frame = 1, translate = [0.0, 0.0, 0.0] }}, \
         {{ frame = 3, translate = [1e300, 0.0, 0.0] }} ]\n"
    );
    let output = ws.run(&keyed, &[]);
    assert_refused(&output, "object[0].keys[1].translate", "keys at 1e300 m");
    let fast = format!("{cloth}velocity = [1e300, 0.0, 0.0]\n");
    let output = ws.run(&fast, &[]);
    assert_refused(
        &output,
        "exceeds simulation.max_speed",
        "velocity 1e300 m/s",
    );
    assert!(!ws.out().exists(), "nothing may be written");
}

#[test]
fn issue_12_pinned_particles_carried_out_of_bounds_stop_the_run() {
    // Within the key limit, but the placement plus the keys carry the pin past ±1e9 m: the
    // divergence check skipped pinned particles, and 1e10 m passed silently. Now it stops
    // (exit 1), keeps the whole frames before, and says where in plain scientific notation.
    let ws = Workspace::new();
    let scene = "[simulation]\nframes = 4\n\
                 [[object]]\nname = \"c\"\ngrid = { size = [1.0, 1.0], resolution = [2, 2] }\n\
                 translate = [5e8, 0.0, 0.0]\ndensity = 1.0\npin = [0, 1, 2, 3]\n\
                 keys = [ { frame = 1, translate = [0.0, 0.0, 0.0] }, \
                 { frame = 3, translate = [9e8, 0.0, 0.0] } ]\n";
    let output = ws.run(scene, &["--format", "obj", "--format", "ply"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("is beyond"), "{stderr}");
    let longest_digits = stderr
        .split(|c: char| !c.is_ascii_digit())
        .map(str::len)
        .max()
        .unwrap_or(0);
    assert!(
        longest_digits < 25,
        "a {longest_digits}-digit number: {stderr}"
    );
    for entry in std::fs::read_dir(ws.out()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "obj") {
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(!text.contains("inf") && !text.contains("NaN"), "{path:?}");
        }
    }
}

#[test]
fn issue_12_devices_and_pipes_are_refused_not_read() {
    // A mesh symlinked to /dev/zero read forever (2.65 GB in 5 s), `check /dev/zero` too, and a
    // FIFO blocked forever: only regular files are read.
    let ws = Workspace::new();
    std::os::unix::fs::symlink("/dev/zero", ws.path("zero.obj")).unwrap();
    let scene = "[[object]]\nname = \"m\"\nmesh = \"zero.obj\"\ndensity = 1.0\n";
    let output = ws.run(scene, &[]);
    assert_refused(&output, "is not a regular file", "mesh on /dev/zero");
    let fifo = ws.path("pipe.obj");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        let scene = "[[object]]\nname = \"m\"\nmesh = \"pipe.obj\"\ndensity = 1.0\n";
        let output = ws.run(scene, &[]);
        assert_refused(&output, "is not a regular file", "mesh on a FIFO");
    }
    let output = Command::new(BIN)
        .args(["check", "/dev/zero"])
        .output()
        .unwrap();
    assert_refused(&output, "not a regular file", "check /dev/zero");
    assert!(!ws.out().exists(), "nothing may be written");
}

#[test]
fn issue_12_no_output_with_a_format_is_refused() {
    // `--no-output --format ply` silently ignored the format.
    let ws = Workspace::new();
    let scene = "[[object]]\nname = \"c\"\ngrid = { size = [1.0, 1.0], resolution = [2, 2] }\n\
                 density = 1.0\n";
    let output = ws.run(scene, &["--no-output", "--format", "ply"]);
    assert_refused(&output, "cannot be used with", "--no-output --format");
    assert!(!ws.out().exists(), "nothing may be written");
}

#[test]
fn issue_12_a_date_time_in_a_set_value_is_named() {
    let ws = Workspace::new();
    let scene = "[[object]]\nname = \"c\"\ngrid = { size = [1.0, 1.0], resolution = [2, 2] }\n\
                 density = 1.0\n";
    let output = ws.run(scene, &["--set", "simulation.fps=1979-05-27"]);
    assert_refused(&output, "is a TOML date-time", "--set with a date");
}

#[test]
fn issue_12_megabyte_strings_are_quoted_in_at_most_100_characters() {
    // A 1 MB `name`, `mesh`, `output.name`, `pin_to`, `stats` or `dir` was echoed whole (1 MB
    // of stderr); a 1 MB `dir` passed `check` and failed only when the run created it.
    let big = "a".repeat(1_000_000);
    let grid = "grid = { size = [1.0, 1.0], resolution = [3, 3] }";
    let scene = |name: &str, geometry: &str, object_extra: &str, output: &str| {
        format!(
            "[simulation]\nframes = 2\n[[object]]\nname = \"{name}\"\n{geometry}\ndensity = 1.0\n\
             {object_extra}\n[output]\n{output}\n"
        )
    };
    let cases = [
        ("name", scene(&big, grid, "", "")),
        ("mesh", scene("c", &format!("mesh = \"{big}.obj\""), "", "")),
        (
            "mesh extension",
            scene("c", &format!("mesh = \"{big}\""), "", ""),
        ),
        (
            "output.name",
            scene("c", grid, "", &format!("name = \"{big}\"")),
        ),
        (
            "pin_to",
            scene("c", grid, &format!("pin = [0]\npin_to = \"{big}\""), ""),
        ),
        ("stats", scene("c", grid, "", &format!("stats = \"{big}\""))),
        ("dir", scene("c", grid, "", &format!("dir = \"{big}\""))),
    ];
    for (what, text) in cases {
        let ws = Workspace::new();
        let path = ws.write("scene.toml", &text);
        for command in ["check", "run"] {
            let output = Command::new(BIN)
                .arg(command)
                .arg(&path)
                .output()
                .expect("run xpbd-sim");
            assert_refused(
                &output,
                "scene.toml",
                &format!("{command} with a 1 MB {what}"),
            );
            let stderr = String::from_utf8_lossy(&output.stderr);
            let longest_run = stderr
                .split(|c: char| c != 'a')
                .map(str::len)
                .max()
                .unwrap_or(0);
            assert!(
                longest_run <= 100 && stderr.len() < 2_000,
                "{command} with a 1 MB {what}: {} bytes of stderr, {longest_run} quoted",
                stderr.len()
            );
        }
        assert_eq!(
            std::fs::read_dir(ws.dir.path()).unwrap().count(),
            1,
            "{what}: nothing but the scene may be in the folder"
        );
    }
}

#[test]
fn issue_12_binary_data_in_a_text_mesh_is_refused_at_its_first_nul() {
    // A NUL-filled 2 GB OBJ was read whole (14 s, 6.3 GB) before it was refused; one valid
    // triangle followed by NULs was accepted, and `check` quoted the whole NUL "statement".
    // The 2 GB files here are sparse: creating them costs nothing, reading them would.
    let ws = Workspace::new();
    let zeros = std::fs::File::create(ws.path("zeros.obj")).unwrap();
    zeros.set_len(2 << 30).unwrap();
    let mut after = std::fs::File::create(ws.path("after.obj")).unwrap();
    std::io::Write::write_all(&mut after, b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n").unwrap();
    after.set_len(2 << 30).unwrap();
    let tet = std::fs::File::create(ws.path("jelly.node")).unwrap();
    tet.set_len(2 << 30).unwrap();
    ws.write("jelly.ele", "1 4 0\n1 1 2 3 4\n");
    for (mesh, line) in [("zeros.obj", 1), ("after.obj", 5), ("jelly.node", 1)] {
        let scene = format!("[[object]]\nname = \"m\"\nmesh = \"{mesh}\"\ndensity = 1.0\n");
        for command in ["check", "run"] {
            let output = if command == "run" {
                ws.run(&scene, &[])
            } else {
                let path = ws.write("scene.toml", &scene);
                Command::new(BIN).arg("check").arg(path).output().unwrap()
            };
            let expect = format!("{mesh} is not text: line {line}: a NUL byte");
            assert_refused(&output, &expect, &format!("{command} {mesh}"));
            assert!(
                output.stderr.len() < 1_000,
                "{command} {mesh}: long message"
            );
        }
        assert!(!ws.out().exists(), "nothing may be written");
    }
}

#[test]
fn issue_12_a_tetrahedron_turned_against_the_rest_is_reported() {
    // Two nodes of one tetrahedron swapped (a broken export): it passed with no warning.
    let ws = Workspace::new();
    ws.write(
        "jelly.node",
        "5 3 0 0\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n5 1 1 1\n",
    );
    let scene = ws.write(
        "scene.toml",
        "[[object]]\nname = \"j\"\nmesh = \"jelly.node\"\ndensity = 100.0\n\
         tets = { compliance = 1e-6 }\nstretch = {}\n",
    );
    let check = |elements: &str| {
        ws.write("jelly.ele", elements);
        let output = Command::new(BIN).arg("check").arg(&scene).output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        String::from_utf8_lossy(&output.stdout).to_string()
            + &String::from_utf8_lossy(&output.stderr)
    };
    let consistent = check("2 4 0\n1 1 2 3 4\n2 2 3 4 5\n");
    assert!(!consistent.contains("inverted"), "{consistent}");
    let swapped = check("3 4 0\n1 1 2 3 4\n2 2 3 4 5\n3 1 3 2 5\n");
    assert!(
        swapped.contains(
            "1 of 3 tetrahedra are flat or inverted against the rest (first: .ele line 4)"
        ),
        "{swapped}"
    );
}

#[test]
fn issue_12_outputs_never_replace_the_scene_or_its_meshes() {
    // `dir = "."` with `stats = "scene.toml"` wrote JSON over the scene; an object `c` read
    // from `c.0001.obj` had its mesh replaced by frame 1.
    let quad = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3 4\n";
    let cases = [
        (
            "[simulation]\nframes = 2\n[[object]]\nname = \"c\"\nmesh = \"quad.obj\"\n\
             density = 1.0\n[output]\ndir = \".\"\nstats = \"scene.toml\"\n",
            "scene.toml is the stats log",
        ),
        (
            "[simulation]\nframes = 2\n[[object]]\nname = \"c\"\nmesh = \"c.0001.obj\"\n\
             density = 1.0\n[output]\ndir = \".\"\nformats = [\"obj\"]\n",
            "c.0001.obj is a frame file of this run",
        ),
        (
            "[simulation]\nframes = 2\n[[object]]\nname = \"c\"\nmesh = \"out/c.0002.ply\"\n\
             density = 1.0\n[output]\ndir = \"out\"\nformats = [\"ply\"]\n",
            "c.0002.ply is a frame file of this run",
        ),
    ];
    for (scene, expect) in cases {
        let ws = Workspace::new();
        ws.write("quad.obj", quad);
        ws.write("c.0001.obj", quad);
        std::fs::create_dir(ws.path("out")).unwrap();
        ws.write(
            "out/c.0002.ply",
            "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\n\
             property float y\nproperty float z\nelement face 1\n\
             property list uchar int vertex_indices\nend_header\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n",
        );
        let path = ws.write("scene.toml", scene);
        let before = folder_contents(ws.dir.path());
        for command in ["check", "run"] {
            let output = Command::new(BIN).arg(command).arg(&path).output().unwrap();
            assert_refused(&output, expect, &format!("{command}: {expect}"));
            assert!(
                String::from_utf8_lossy(&output.stderr).contains("write over an input"),
                "{output:?}"
            );
        }
        assert_eq!(
            folder_contents(ws.dir.path()),
            before,
            "{expect}: nothing may change"
        );
    }
}

/// Every file under `dir` with its bytes.
fn folder_contents(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(folder_contents(&path));
        } else {
            files.push((path.clone(), std::fs::read(&path).unwrap()));
        }
    }
    files.sort();
    files
}
