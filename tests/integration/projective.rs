//! `solver = "projective"` (issue 15, SPEC §5): Projective Dynamics against answers known in
//! advance — a chain hanging at `α m g` per segment, cloth and a soft bar resting where XPBD
//! rests them (the same energy minimum), momentum through a collision with gravity off, a
//! cloth on a sphere, one factorization per run (more only when a tear changes the topology),
//! thread-count determinism and a byte-identical resume — and the kinds it refuses.

use crate::common::*;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const G: f64 = 9.81;

fn projective_figures(dir: &Path) -> Vec<serde_json::Value> {
    frame_records(dir)
        .into_iter()
        .map(|r| r["projective"].clone())
        .collect()
}

#[test]
fn a_hanging_chain_settles_at_alpha_times_the_weight_below_each_segment() {
    let (alpha, mass) = (2e-3, 0.5);
    for (substeps, iterations) in [(1, 1), (20, 1), (4, 10)] {
        let ws = Workspace::new();
        let scene = format!(
            "[simulation]\nfps = 10.0\nframes = 61\nsubsteps = {substeps}\niterations = {iterations}\n\
             solver = \"projective\"\nvelocity_damping = 4.0\n\
             [[object]]\nname = \"c\"\nrope = {{ start = [0.0, 0.0, 0.0], end = [0.0, -3.0, 0.0], segments = 3 }}\n\
             particle_mass = {mass}\npin = [0]\nstretch = {{ compliance = {alpha} }}\n"
        );
        ws.run_ok(&scene, &["--format", "obj", "--threads", "1"]);
        let last = obj_positions(&ws.out().join("c.0061.obj"));
        for segment in 0..3 {
            let below = (3 - segment) as f64 * mass;
            let expected = alpha * below * G;
            let extension = distance(last[segment], last[segment + 1]) - 1.0;
            assert!(
                (extension - expected).abs() < 1e-4 * expected + 2e-7,
                "{substeps}×{iterations}, segment {segment}: {extension} vs {expected}"
            );
        }
        let figures = projective_figures(&ws.out());
        assert!(
            figures.iter().all(|f| f["factorizations"] == 1),
            "{figures:?}"
        );
    }
}

/// A 10 × 10 cloth pinned along its top row, hanging until still; `extra` adds keys to the
/// object. Returns the last frame's positions.
fn hanging_cloth(solver: &str, substeps: u32, iterations: u32, extra: &str) -> Vec<[f64; 3]> {
    let ws = Workspace::new();
    let scene = format!(
        "[simulation]\nfps = 24.0\nframes = 121\nsubsteps = {substeps}\niterations = {iterations}\n\
         solver = \"{solver}\"\nvelocity_damping = 5.0\n\
         [[object]]\nname = \"cloth\"\ngrid = {{ size = [1.0, 1.0], resolution = [10, 10] }}\n\
         rotate = [90.0, 0.0, 0.0]\ndensity = 0.2\npin = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n\
         stretch = {{ compliance = 0.05 }}\n{extra}\n"
    );
    ws.run_ok(&scene, &["--format", "obj", "--threads", "1"]);
    obj_positions(&ws.out().join("cloth.0121.obj"))
}

fn max_difference(a: &[[f64; 3]], b: &[[f64; 3]]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(p, q)| distance(*p, *q))
        .fold(0.0, f64::max)
}

#[test]
fn a_compliant_cloth_rests_in_the_shape_xpbd_gives_it() {
    // Both minimise gravity + Σ C²/2α; XPBD needs many substeps to converge there (80 × 10
    // here; 20 × 1 is 0.3 mm off), Projective Dynamics 20 × 10 (40 with the dihedral angle,
    // whose local step is the quasi-Newton one).
    for (bending, pd_iterations) in [
        ("bending = { compliance = 10.0, model = \"isometric\" }", 10),
        ("bending = { compliance = 1.0 }", 40),
    ] {
        let projective = hanging_cloth("projective", 20, pd_iterations, bending);
        let xpbd = hanging_cloth("xpbd", 80, 40, bending);
        let sag = projective
            .iter()
            .map(|p| p[1])
            .fold(f64::INFINITY, f64::min);
        assert!(sag < -0.5, "the cloth hangs: lowest y {sag}");
        let difference = max_difference(&projective, &xpbd);
        assert!(difference < 2e-5, "{bending}: {difference} m apart");
    }
}

#[test]
fn a_soft_bar_of_tetrahedra_rests_where_xpbd_converges_with_small_steps() {
    // XPBD's rest state of this bar moves with the substep, as h² (measured: 1.6e-5 m from
    // Projective Dynamics at 80 substeps, 4.1e-6 at 160, 1.0e-6 at 320); PD's does not.
    let bar = |solver: &str, substeps: u32, iterations: u32| {
        let ws = Workspace::new();
        let scene = format!(
            "[simulation]\nfps = 24.0\nframes = 241\nsubsteps = {substeps}\niterations = {iterations}\n\
             solver = \"{solver}\"\nvelocity_damping = 8.0\n\
             [[object]]\nname = \"bar\"\nbox = {{ size = [1.0, 0.2, 0.2], resolution = [10, 2, 2] }}\n\
             density = 100.0\npin = [0, 10, 20, 30]\nstretch = {{ compliance = 1e-3 }}\n\
             tets = {{ compliance = 1e-4 }}\n"
        );
        ws.run_ok(&scene, &["--format", "obj", "--threads", "1"]);
        obj_positions(&ws.out().join("bar.0241.obj"))
    };
    let projective = bar("projective", 20, 10);
    let tip = projective
        .iter()
        .map(|p| p[1])
        .fold(f64::INFINITY, f64::min);
    assert!(tip < -0.5, "the cantilever bends: lowest y {tip}");
    let coarse = max_difference(&projective, &bar("xpbd", 80, 5));
    let fine = max_difference(&projective, &bar("xpbd", 320, 5));
    assert!(fine < 3e-6, "{fine} m apart at 320 substeps");
    assert!(fine < coarse / 4.0, "XPBD approaches it: {coarse} → {fine}");
}

#[test]
fn momentum_is_conserved_through_a_collision_with_gravity_off() {
    let ws = Workspace::new();
    let cloth = |name: &str, x: f64, vx: f64| {
        format!(
            "[[object]]\nname = \"{name}\"\ngrid = {{ size = [0.5, 0.5], resolution = [8, 8] }}\n\
             rotate = [0.0, 0.0, 90.0]\ntranslate = [{x}, 0.0, 0.0]\ndensity = 0.3\n\
             velocity = [{vx}, 0.1, 0.0]\nstretch = {{ compliance = 1e-3 }}\n\
             bending = {{ compliance = 5.0 }}\n"
        )
    };
    let scene = format!(
        "[simulation]\nfps = 24.0\nframes = 24\nsubsteps = 10\niterations = 5\n\
         solver = \"projective\"\ngravity = [0.0, 0.0, 0.0]\n\
         [collision]\nthickness = 0.01\n{}{}",
        cloth("a", -0.1, 1.0),
        cloth("b", 0.1, -0.5)
    );
    ws.run_ok(&scene, &["--format", "obj", "--threads", "1"]);
    let frames = frame_records(&ws.out());
    let momentum = |r: &serde_json::Value| -> [f64; 3] {
        let m = r["momentum"].as_array().unwrap();
        [0, 1, 2].map(|k| m[k].as_f64().unwrap())
    };
    let first = momentum(&frames[0]);
    // 64 × 0.5²/64 × 0.3 kg each: p = 0.075 × (1 − 0.5) kg m/s along x.
    assert!((first[0] - 0.0375).abs() < 1e-9, "{first:?}");
    assert!(
        frames
            .iter()
            .any(|r| r["particle_contacts"].as_u64().unwrap() > 0),
        "the cloths meet"
    );
    for r in &frames {
        let p = momentum(r);
        let drift = distance(p, first);
        assert!(
            drift < 1e-9,
            "frame {}: momentum {p:?} vs {first:?}",
            r["frame"]
        );
    }
}

#[test]
fn cloth_comes_to_rest_on_a_sphere_without_entering_it() {
    let ws = Workspace::new();
    let (radius, thickness) = (0.3, 0.005);
    let scene = format!(
        "[simulation]\nfps = 24.0\nframes = 96\nsubsteps = 10\niterations = 10\n\
         solver = \"projective\"\nvelocity_damping = 1.0\n\
         [collision]\nthickness = {thickness}\n\
         [[object]]\nname = \"cloth\"\ngrid = {{ size = [1.0, 1.0], resolution = [20, 20] }}\n\
         translate = [0.0, 0.8, 0.0]\ndensity = 0.15\nstretch = {{ compliance = 1e-4 }}\n\
         bending = {{ compliance = 20.0 }}\n\
         [[collider]]\nname = \"ball\"\nshape = \"sphere\"\ncenter = [0.0, 0.3, 0.0]\n\
         radius = {radius}\nfriction = 0.5\n"
    );
    ws.run_ok(&scene, &["--format", "obj", "--threads", "1"]);
    let frames = obj_sequence(&ws.out(), "cloth", 96);
    for (k, frame) in frames.iter().enumerate() {
        for p in frame {
            let d = distance(*p, [0.0, 0.3, 0.0]);
            // f32 output: a few 1e-7 m of rounding.
            assert!(
                d > radius + thickness - 1e-6,
                "frame {}: a vertex {d} m from the centre",
                k + 1
            );
        }
    }
    let records = frame_records(&ws.out());
    let last = records.last().unwrap();
    assert_eq!(last["max_penetration"].as_f64().unwrap(), 0.0);
    assert!(
        last["contacts"].as_u64().unwrap() >= 8,
        "it lies on the ball"
    );
    let nearest = frames[95]
        .iter()
        .map(|p| distance(*p, [0.0, 0.3, 0.0]))
        .fold(f64::INFINITY, f64::min);
    assert!(
        nearest < radius + thickness + 1e-3,
        "it lies on the ball: {nearest}"
    );
    // At rest: the kinetic energy falls to a thousandth of its peak (a few particles at the
    // ball's equator still move at 0.05-0.1 m/s).
    let kinetic: Vec<f64> = records
        .iter()
        .map(|r| r["kinetic_energy"].as_f64().unwrap())
        .collect();
    let peak = kinetic.iter().copied().fold(0.0, f64::max);
    assert!(kinetic[95] < 1e-3 * peak, "{} of {peak} J", kinetic[95]);
    // Factored once before the cloth lands, again when the touching set changes, and not
    // while it rests (the last second).
    let factorizations: Vec<u64> = projective_figures(&ws.out())
        .iter()
        .map(|f| f["factorizations"].as_u64().unwrap())
        .collect();
    assert_eq!(factorizations[0], 1);
    assert!(factorizations[95] > 1, "{factorizations:?}");
    assert!(
        factorizations[95] - factorizations[71] <= 2,
        "{factorizations:?}"
    );
}

#[test]
fn a_shape_matched_crate_lands_and_rests_without_deforming() {
    // scenes/crate.toml (thrown at 1.5 m/s onto the ground) under projective with its shape
    // matching given a compliance: converged (40 iterations) it keeps its shape within 1e-5 m
    // (measured 3.2e-6 m; 4.5e-5 m at 10 iterations, where the contact terms' weight still
    // holds the iteration back) and comes to rest on the plane.
    let ws = Workspace::new();
    let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/crate.toml");
    let output = Command::new(BIN)
        .arg("run")
        .arg(&scene)
        .arg("--out")
        .arg(ws.out())
        .arg("--quiet")
        .args(["--format", "obj", "--threads", "1"])
        .args(["--set", "simulation.solver=projective"])
        .args([
            "--set",
            "simulation.substeps=10",
            "--set",
            "simulation.iterations=40",
        ])
        .args(["--set", "object.crate.shape_matching.compliance=1e-6"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let first = obj_positions(&ws.out().join("crate.0001.obj"));
    let last = obj_positions(&ws.out().join("crate.0048.obj"));
    let mut worst: f64 = 0.0;
    for a in 0..first.len() {
        for b in 0..a {
            let change = distance(last[a], last[b]) - distance(first[a], first[b]);
            worst = worst.max(change.abs());
        }
    }
    assert!(worst < 1e-5, "the crate deformed by {worst} m");
    let lowest = last.iter().map(|p| p[1]).fold(f64::INFINITY, f64::min);
    assert!(
        (lowest - 0.005).abs() < 1e-4,
        "it rests on the ground: lowest y {lowest}"
    );
    let records = frame_records(&ws.out());
    assert!(records.last().unwrap()["kinetic_energy"].as_f64().unwrap() < 1e-6);
}

const BANNER: &str = "[simulation]\nfps = 24.0\nframes = 24\nsubsteps = 10\niterations = 4\n\
    solver = \"projective\"\n\
    [output]\ncheckpoint_every = 4\n\
    [[object]]\nname = \"banner\"\ngrid = { size = [1.0, 0.5], resolution = [16, 8] }\n\
    rotate = [90.0, 0.0, 0.0]\ndensity = 2.0\nvelocity = [0.0, 0.0, 3.0]\n\
    pin = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]\n\
    stretch = { compliance = 1e-3, tear_strain = 0.04 }\nbending = { compliance = 50.0 }\n";

#[test]
fn the_factor_is_made_once_and_again_only_when_a_tear_changes_the_topology() {
    let ws = Workspace::new();
    ws.run_ok(BANNER, &["--format", "ply"]);
    let records = frame_records(&ws.out());
    let last = records.last().unwrap();
    let torn = last["torn_edges"].as_u64().unwrap();
    assert!(torn > 0, "the gust tears the banner off its pins");
    let mut previous = 1;
    for r in &records {
        let count = r["projective"]["factorizations"].as_u64().unwrap();
        let grew = count > previous;
        // A frame with new tears refactors; a frame without any does not.
        assert!(count >= previous);
        previous = count;
        if !grew {
            continue;
        }
        let frame = r["frame"].as_u64().unwrap() as usize;
        let before = records[frame - 2]["torn_edges"].as_u64().unwrap();
        assert!(
            r["torn_edges"].as_u64().unwrap() > before,
            "frame {frame} refactored without a tear"
        );
    }
    assert!(
        previous > 1 && previous <= 1 + torn,
        "{previous} factorizations, {torn} tears"
    );
    // The same scene without tearing: one factorization for the whole run.
    let still = Workspace::new();
    still.run_ok(
        &BANNER.replace(", tear_strain = 0.04", ""),
        &["--format", "ply"],
    );
    let figures = projective_figures(&still.out());
    assert_eq!(figures.len(), 24);
    assert!(
        figures.iter().all(|f| f["factorizations"] == 1),
        "{figures:?}"
    );
    assert!(figures[0]["factor_bytes"].as_u64().unwrap() > 0);
}

#[test]
fn the_same_bytes_at_any_thread_count_and_after_a_resume() {
    // Each test runs beside others: one worker thread for the references keeps the machine's
    // cores for the runs under test.
    let quick = ["--set", "simulation.substeps=200", "--format", "ply"];
    let reference = Workspace::new();
    reference.run_ok(BANNER, &[&quick[..], &["--threads", "1"]].concat());
    let expected = files_with_extension(&reference.out(), "ply");
    assert_eq!(expected.len(), 24);
    for threads in ["2", "3"] {
        let ws = Workspace::new();
        ws.run_ok(BANNER, &[&quick[..], &["--threads", threads]].concat());
        assert!(
            files_with_extension(&ws.out(), "ply") == expected,
            "{threads} threads differ"
        );
    }
    let slow = ["--set", "simulation.substeps=1000", "--format", "ply"];
    let reference = Workspace::new();
    reference.run_ok(BANNER, &[&slow[..], &["--threads", "1"]].concat());
    let expected = files_with_extension(&reference.out(), "ply");
    // Killed after its checkpoint at frame 8, resumed on another thread count.
    let ws = Workspace::new();
    let scene = ws.write("scene.toml", BANNER);
    let run = |extra: &[&str]| {
        let mut command = Command::new(BIN);
        command
            .arg("run")
            .arg(&scene)
            .arg("--out")
            .arg(ws.out())
            .arg("--quiet");
        command.args(slow).args(extra);
        command
    };
    let mut child = run(&["--threads", "2"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let checkpoint = ws.out().join("checkpoints/frame.000008.ckpt");
    let deadline = Instant::now() + Duration::from_secs(120);
    while !checkpoint.exists() || frame_records(&ws.out()).len() < 9 {
        assert!(Instant::now() < deadline, "no checkpoint after a long wait");
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().ok();
    child.wait().unwrap();
    assert!(
        files_with_extension(&ws.out(), "ply").len() < 24,
        "the kill came before the end"
    );
    let resumed = run(&["--resume", "--threads", "1"]).output().unwrap();
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert!(
        files_with_extension(&ws.out(), "ply") == expected,
        "the resumed cache differs"
    );
}

#[test]
fn chebyshev_acceleration_brings_few_iterations_closer_to_the_converged_step() {
    // A stiff 24 × 24 cloth swinging from two corners, 2 substeps a frame: frame 12 at 10
    // iterations against 400 (converged). Measured: 4.6e-4 m off plain, 4.4e-5 with ρ = 0.9.
    let cloth = |iterations: u32, rho: f64| {
        let ws = Workspace::new();
        let scene = format!(
            "[simulation]\nfps = 24.0\nframes = 12\nsubsteps = 2\niterations = {iterations}\n\
             solver = \"projective\"\nprojective = {{ chebyshev_rho = {rho} }}\n\
             [[object]]\nname = \"c\"\ngrid = {{ size = [1.0, 1.0], resolution = [24, 24] }}\n\
             rotate = [90.0, 0.0, 0.0]\ndensity = 0.2\npin = [0, 23]\n\
             stretch = {{ compliance = 1e-5 }}\nbending = {{ compliance = 10.0, model = \"isometric\" }}\n"
        );
        ws.run_ok(&scene, &["--format", "obj", "--threads", "1"]);
        obj_positions(&ws.out().join("c.0012.obj"))
    };
    let converged = cloth(400, 0.0);
    let plain = max_difference(&cloth(10, 0.0), &converged);
    let accelerated = max_difference(&cloth(10, 0.9), &converged);
    assert!(
        plain > 1e-4,
        "10 plain iterations are not converged: {plain}"
    );
    assert!(
        accelerated < plain / 4.0,
        "ρ = 0.9: {accelerated} m off, plain {plain} m"
    );
}

#[test]
fn kinds_and_keys_it_cannot_express_are_refused() {
    let cases = [
        (
            "[[object]]\nname = \"b\"\nsphere = { radius = 0.5, subdivisions = 2 }\nstretch = { compliance = 1e-3 }\nvolume = { compliance = 1e-3 }\n",
            "object[0].volume",
        ),
        (
            "[[object]]\nname = \"c\"\ngrid = { size = [1.0, 1.0], resolution = [4, 4] }\nstretch = { compliance = 1e-3, damping = 0.1 }\n",
            "object[0].stretch.damping",
        ),
        (
            "[[object]]\nname = \"c\"\ngrid = { size = [1.0, 1.0], resolution = [4, 4] }\nstretch = { stiffness = 0.5 }\n",
            "object[0].stretch.stiffness",
        ),
    ];
    for (object, key) in cases {
        let ws = Workspace::new();
        let scene = format!("[simulation]\nsolver = \"projective\"\n{object}");
        let output = ws.run(&scene, &[]);
        assert_refused(&output, key, key);
    }
    let ws = Workspace::new();
    let scene = "[simulation]\nsolver = \"projective\"\nprojective = { chebyshev_rho = 1.0 }\n\
                 [[object]]\nname = \"c\"\ngrid = { size = [1.0, 1.0], resolution = [4, 4] }\n";
    assert_refused(&ws.run(scene, &[]), "chebyshev_rho", "ρ = 1");
    let ws = Workspace::new();
    let scene = "[simulation]\nprojective = { chebyshev_rho = 0.5 }\n\
                 [[object]]\nname = \"c\"\ngrid = { size = [1.0, 1.0], resolution = [4, 4] }\n";
    assert_refused(&ws.run(scene, &[]), "simulation.projective", "with xpbd");
}

/// Total energy (kinetic + gravitational) per frame.
fn energies(dir: &Path) -> Vec<f64> {
    frame_records(dir)
        .iter()
        .map(|r| r["kinetic_energy"].as_f64().unwrap() + r["potential_energy"].as_f64().unwrap())
        .collect()
}

#[test]
fn a_stiff_cube_dropped_on_the_ground_never_gains_energy() {
    // Contacts only projected after each iteration gained 54 % of tets-48k's energy at this
    // impact (docs/physics.md); the contact terms in the matrix while a particle touches do not.
    let ws = Workspace::new();
    let scene = "[simulation]\nfps = 24.0\nframes = 24\nsubsteps = 40\niterations = 1\n\
         solver = \"projective\"\n\
         [[object]]\nname = \"cube\"\nbox = { size = [0.5, 0.5, 0.5], resolution = [7, 7, 7] }\n\
         translate = [0.0, 0.6, 0.0]\ndensity = 1000.0\ntets = { compliance = 1e-8 }\n\
         stretch = { compliance = 1e-6 }\n\
         [[collider]]\nname = \"ground\"\nshape = \"plane\"\nfriction = 0.5\n";
    ws.run_ok(scene, &["--no-output", "--threads", "1"]);
    let energy = energies(&ws.out());
    let records = frame_records(&ws.out());
    assert!(
        records.last().unwrap()["contacts"].as_u64().unwrap() > 0,
        "it lands"
    );
    for (k, e) in energy.iter().enumerate() {
        assert!(
            *e <= energy[0] * (1.0 + 1e-9),
            "frame {}: {e} J > {} J",
            k + 1,
            energy[0]
        );
    }
    let strain = records
        .iter()
        .map(|r| r["max_edge_strain"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!(strain < 0.1, "the stiff cube is crushed: strain {strain}");
}

#[test]
fn a_cloth_piling_onto_itself_stays_calm_and_uncrossed() {
    // scenes/pile.toml (self collision, a ground, stretch compliance 0) under projective, as a
    // user sees it: with contact terms held in the matrix for the whole run it ended with 1-34
    // crossing pairs and edges 36-45 % short in the folds; a crushed corner once flung a
    // particle to 53 m/s (the gain cap's unit test in terms.rs guards that).
    let ws = Workspace::new();
    let pile = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/pile.toml");
    let scene = std::fs::read_to_string(pile).unwrap();
    ws.run_ok(
        &scene,
        &[
            "--no-output",
            "--frames",
            "48",
            "--set",
            "simulation.solver=\"projective\"",
        ],
    );
    let records = frame_records(&ws.out());
    let energy = energies(&ws.out());
    for (k, r) in records.iter().enumerate() {
        let frame = k + 1;
        assert_eq!(r["self_intersections"]["cloth"], 0, "frame {frame}");
        assert!(
            energy[k] <= energy[0] * (1.0 + 1e-9),
            "frame {frame}: energy rose"
        );
        let strain = r["max_edge_strain"].as_f64().unwrap();
        assert!(strain < 0.5, "frame {frame}: strain {strain}");
    }
    let last = records.last().unwrap()["max_edge_strain"].as_f64().unwrap();
    assert!(
        last < 0.05,
        "at rest the cloth keeps its lengths: strain {last}"
    );
}

/// Contacts refactor the matrix whenever the touching set changes; a resumed run starts with
/// none factored. Neither may change a bit: the pile (ground and self contacts) at 1 and 2
/// threads, and resumed on 3 from its checkpoint at frame 8.
#[test]
fn contacts_refactor_the_same_bits_at_any_thread_count_and_after_a_resume() {
    let pile = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/pile.toml");
    let scene = std::fs::read_to_string(pile).unwrap();
    let args = |threads: &'static str| {
        [
            "--frames",
            "16",
            "--format",
            "ply",
            "--set",
            "simulation.solver=\"projective\"",
            "--set",
            "output.checkpoint_every=8",
            "--threads",
            threads,
        ]
    };
    let reference = Workspace::new();
    reference.run_ok(&scene, &args("1"));
    let expected = files_with_extension(&reference.out(), "ply");
    assert_eq!(expected.len(), 16);
    let last = frame_records(&reference.out()).pop().unwrap();
    assert!(last["projective"]["factorizations"].as_u64().unwrap() > 2);
    let ws = Workspace::new();
    ws.run_ok(&scene, &[&args("2")[..], &["--keep-checkpoints"]].concat());
    assert!(
        files_with_extension(&ws.out(), "ply") == expected,
        "2 threads differ"
    );
    // As if killed after frame 16 but before its checkpoint: the frames after the checkpoint
    // at 8 are redone.
    for frame in 9..=16 {
        std::fs::remove_file(ws.out().join(format!("cloth.{frame:04}.ply"))).unwrap();
    }
    let resume = [&args("3")[..], &["--resume"]].concat();
    ws.run_ok(&scene, &resume);
    assert!(stats(&ws.out()).iter().any(|r| r["type"] == "resume"));
    assert!(
        files_with_extension(&ws.out(), "ply") == expected,
        "the resume differs"
    );
}

#[test]
fn an_object_that_does_not_collide_passes_through_colliders_also_with_self_collision() {
    // Self collision gives its particles contact terms; `collide = false` must still keep the
    // colliders from pushing them, as under XPBD.
    let ws = Workspace::new();
    let scene = "[simulation]\nfps = 24.0\nframes = 12\nsubsteps = 10\niterations = 4\n\
         solver = \"projective\"\n\
         [[object]]\nname = \"cloth\"\ngrid = { size = [0.5, 0.5], resolution = [6, 6] }\n\
         translate = [0.0, 0.2, 0.0]\ndensity = 0.2\nstretch = { compliance = 1e-6 }\n\
         collide = false\nself_collision = true\n\
         [[collider]]\nname = \"ground\"\nshape = \"plane\"\n";
    ws.run_ok(scene, &["--format", "obj"]);
    let last = obj_positions(&ws.out().join("cloth.0012.obj"));
    // Free fall for 11/24 s from 0.2 m: about 0.83 m below the ground.
    assert!(last.iter().all(|p| p[1] < -0.5), "the ground held it");
    assert_eq!(frame_records(&ws.out()).last().unwrap()["contacts"], 0);
}
