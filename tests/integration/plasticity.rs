//! Plasticity (`yield` and `creep`): a strip flicked past its yield keeps a bend, one flicked
//! below it springs back flat (bit for bit the run without plasticity), a rope pulled past its
//! yield keeps a longer rest length, and plastic runs are byte-identical on any thread count
//! and after a resume.
//!
//! The loads are initial velocities without gravity, so they are gone once the motion is
//! damped: what is left is the rest state. The numbers in the comments were measured.

use crate::common::*;

/// A 1 m × 0.2 m strip pinned along two columns at x = −0.5 (one column would be a free
/// hinge: no bending stencil spans a border edge), flicked downward at 2 m/s with no gravity
/// and damped; plastic dihedral bending past 0.05 rad.
const STRIP: &str = "[simulation]\nfps = 24.0\nframes = 72\nsubsteps = 10\n\
    gravity = [0.0, 0.0, 0.0]\nvelocity_damping = 8.0\n\
    [output]\nformats = [\"obj\"]\n\
    [[object]]\nname = \"strip\"\ngrid = { size = [1.0, 0.2], resolution = [11, 3] }\n\
    density = 1.0\nvelocity = [0.0, -2.0, 0.0]\n\
    pin_region = { min = [-0.6, -1.0, -1.0], max = [-0.35, 1.0, 1.0] }\n\
    stretch = { compliance = 0.0 }\n\
    bending = { compliance = 1e-3, yield = 0.05, creep = 1000.0 }\n";

/// A 1 m rope of 10 segments pinned at x = 0, thrown along itself at 1 m/s; plastic stretch
/// past 2 % strain.
const ROPE: &str = "[simulation]\nfps = 24.0\nframes = 72\nsubsteps = 10\n\
    gravity = [0.0, 0.0, 0.0]\nvelocity_damping = 8.0\n\
    [output]\nformats = [\"obj\"]\n\
    [[object]]\nname = \"rope\"\n\
    rope = { start = [0.0, 0.0, 0.0], end = [1.0, 0.0, 0.0], segments = 10 }\n\
    mass = 0.1\npin = [0]\nvelocity = [1.0, 0.0, 0.0]\n\
    stretch = { compliance = 0.01, yield = 0.02, creep = 1000.0 }\n";

/// The largest |y| of a strip frame: its distance from the flat rest shape (the plane y = 0).
fn largest_deflection(ws: &Workspace, frame: u32) -> f64 {
    obj_positions(&ws.out().join(format!("strip.{frame:04}.obj")))
        .iter()
        .map(|p| p[1].abs())
        .fold(0.0, f64::max)
}

fn rope_length(ws: &Workspace, frame: u32) -> f64 {
    let p = obj_positions(&ws.out().join(format!("rope.{frame:04}.obj")));
    p.windows(2).map(|w| distance(w[0], w[1])).sum()
}

#[test]
fn a_strip_bent_past_yield_keeps_its_bend_and_without_creep_springs_back() {
    let plastic = Workspace::new();
    plastic.run_ok(STRIP, &[]);
    // Measured 0.2101 m, still at frame 60 and 72 (within 1e-4 m).
    let kept = largest_deflection(&plastic, 72);
    assert!(kept > 0.15, "the bend was not kept: {kept} m");
    assert!(
        (kept - largest_deflection(&plastic, 60)).abs() < 1e-3,
        "not settled"
    );
    // The same flick without creep: back to flat (measured 9e-6 m).
    let elastic = Workspace::new();
    elastic.run_ok(STRIP, &["--set", "object.strip.bending.creep=0.0"]);
    let left = largest_deflection(&elastic, 72);
    assert!(
        left < 1e-4,
        "the elastic strip did not spring back: {left} m"
    );
}

#[test]
fn a_strip_loaded_below_yield_springs_back_as_if_it_were_elastic() {
    // A gentle flick (0.5 m/s) bends no hinge by 1 rad: the rest angles never move, so the
    // run is the run without plasticity, bit for bit, and ends flat (measured 2.2e-6 m).
    let args = ["--set", "object.strip.velocity=[0.0, -0.5, 0.0]", "--set"];
    let below = Workspace::new();
    below.run_ok(
        STRIP,
        &[&args[..], &["object.strip.bending.yield=1.0"]].concat(),
    );
    let elastic = Workspace::new();
    elastic.run_ok(
        STRIP,
        &[&args[..], &["object.strip.bending.creep=0.0"]].concat(),
    );
    assert!(
        largest_deflection(&below, 12) > 0.01,
        "the flick did not bend the strip"
    );
    assert!(
        files_with_extension(&below.out(), "obj") == files_with_extension(&elastic.out(), "obj"),
        "plasticity below its yield changed the motion"
    );
    let left = largest_deflection(&below, 72);
    assert!(left < 1e-4, "did not spring back: {left} m");
}

#[test]
fn a_rope_stretched_past_yield_keeps_a_longer_rest_length() {
    let plastic = Workspace::new();
    plastic.run_ok(ROPE, &[]);
    // Measured 1.0576 m at frames 48 and 72: 5.8 % longer for good.
    let kept = rope_length(&plastic, 72);
    assert!(kept > 1.04 && kept < 1.2, "final length {kept} m");
    assert!(
        (kept - rope_length(&plastic, 48)).abs() < 1e-4,
        "not settled"
    );
    // Without creep it returns to its 1 m rest length.
    let elastic = Workspace::new();
    elastic.run_ok(ROPE, &["--set", "object.rope.stretch.creep=0.0"]);
    let back = rope_length(&elastic, 72);
    assert!((back - 1.0).abs() < 1e-4, "elastic final length {back} m");
}

#[test]
fn plastic_runs_are_the_same_bits_on_any_thread_count_and_after_a_resume() {
    // Both kinds flow; frames 1–4 bend the strip past yield, so the resume from frame 4 must
    // carry the moved rest angles and lengths.
    let scene = format!("{STRIP}stretch = {{ compliance = 1e-4, yield = 0.001, creep = 50.0 }}\n")
        .replace("stretch = { compliance = 0.0 }\n", "");
    let args = |threads: &'static str| {
        [
            "--frames",
            "8",
            "--set",
            "output.checkpoint_every=4",
            "--threads",
            threads,
        ]
    };
    let reference = Workspace::new();
    reference.run_ok(&scene, &args("1"));
    let expected = files_with_extension(&reference.out(), "obj");
    assert_eq!(expected.len(), 8);
    let ws = Workspace::new();
    ws.run_ok(&scene, &[&args("2")[..], &["--keep-checkpoints"]].concat());
    assert!(
        files_with_extension(&ws.out(), "obj") == expected,
        "2 threads differ"
    );
    // As if killed after frame 8 but before its checkpoint: frames 5–8 are redone from the
    // checkpoint at 4.
    for frame in 5..=8 {
        std::fs::remove_file(ws.out().join(format!("strip.{frame:04}.obj"))).unwrap();
    }
    ws.run_ok(&scene, &[&args("2")[..], &["--resume"]].concat());
    let resume = stats(&ws.out());
    let record = resume.iter().find(|r| r["type"] == "resume").unwrap();
    assert_eq!(record["after_frame"], 4);
    assert!(
        files_with_extension(&ws.out(), "obj") == expected,
        "the resume differs"
    );
}

#[test]
fn bad_plasticity_keys_are_refused_with_the_key_named() {
    let ws = Workspace::new();
    let cases = [
        (
            "object.strip.bending.yield=-0.1",
            "object[0].bending.yield: must be a finite number >= 0",
        ),
        (
            "object.strip.bending.creep=-1.0",
            "object[0].bending.creep: must be a finite number >= 0",
        ),
        (
            "simulation.solver=\"projective\"",
            "object[0].bending.creep: plasticity is built for solver = \"xpbd\"",
        ),
        (
            "object.strip.bending.model=\"isometric\"",
            "needs model = \"dihedral\"",
        ),
        (
            "object.strip.stretch.tear_strain=0.5",
            "cannot be combined with stretch.tear_strain",
        ),
    ];
    for (set, expect) in cases {
        assert_refused(&ws.run(STRIP, &["--set", set]), expect, set);
    }
    let rope = ROPE.replace(
        "mass = 0.1",
        "mass = 0.1\nbending = { yield = 0.1, creep = 1.0 }",
    );
    assert_refused(
        &ws.run(&rope, &[]),
        "object[0].bending.creep: plastic bending needs the rest angles",
        "rope",
    );
}
