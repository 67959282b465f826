//! Scene-level checks with known answers for the constraint kinds beyond stretch and dihedral
//! bending: shape matching, tetrahedra, long-range tethers, PBD against XPBD, isometric and
//! rope bending.

use crate::common::*;

/// Enclosed volume of the faces of an OBJ frame (divergence theorem).
fn obj_volume(path: &std::path::Path) -> f64 {
    let text = std::fs::read_to_string(path).unwrap();
    let v = obj_positions(path);
    text.lines()
        .filter_map(|l| l.strip_prefix("f "))
        .map(|f| {
            let idx: Vec<usize> = f
                .split_whitespace()
                .map(|c| c.split('/').next().unwrap().parse::<usize>().unwrap() - 1)
                .collect();
            (1..idx.len() - 1)
                .map(|k| {
                    let (a, b, c) = (v[idx[0]], v[idx[k]], v[idx[k + 1]]);
                    let cross = [
                        a[1] * b[2] - a[2] * b[1],
                        a[2] * b[0] - a[0] * b[2],
                        a[0] * b[1] - a[1] * b[0],
                    ];
                    (cross[0] * c[0] + cross[1] * c[1] + cross[2] * c[2]) / 6.0
                })
                .sum::<f64>()
        })
        .sum()
}

#[test]
fn rigid_shape_matched_box_falls_and_lands_without_deforming() {
    let ws = Workspace::new();
    let frames = 48;
    let scene = format!(
        "[simulation]\nfps = 24.0\nframes = {frames}\nsubsteps = 20\n\
         [[object]]\nname = \"crate\"\nbox = {{ size = [0.4, 0.3, 0.5], resolution = [3, 3, 3] }}\n\
         rotate = [20.0, 30.0, 10.0]\ntranslate = [0.0, 1.0, 0.0]\nvelocity = [0.5, 0.0, 0.0]\n\
         density = 2.0\nshape_matching = {{ compliance = 0.0 }}\n\
         [[collider]]\nname = \"ground\"\nshape = \"plane\"\nfriction = 0.6\n"
    );
    ws.run_ok(&scene, &[]);
    let sequence = obj_sequence(&ws.out(), "crate", frames);
    let rest = &sequence[0];
    let mut worst: f64 = 0.0;
    for frame in &sequence {
        for a in 0..rest.len() {
            for b in a + 1..rest.len() {
                worst =
                    worst.max((distance(frame[a], frame[b]) - distance(rest[a], rest[b])).abs());
            }
        }
    }
    // Exact to the f32 precision of the files, even through the impact.
    assert!(worst < 1e-6, "the box deformed by {worst} m");
    // It landed: the lowest vertex rests on the ground at the particle radius. Shape matching
    // has the last word, so contacts may leave up to a millimetre inside the 5 mm margin.
    let last = sequence.last().unwrap();
    let lowest = last.iter().map(|p| p[1]).fold(f64::INFINITY, f64::min);
    assert!((lowest - 0.005).abs() < 1e-3, "lowest vertex at {lowest}");
    let frames_stats = frame_records(&ws.out());
    let penetration = frames_stats
        .iter()
        .map(|f| f["max_penetration"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!(penetration < 1e-3, "max_penetration {penetration}");
    let ke = frames_stats.last().unwrap()["kinetic_energy"]
        .as_f64()
        .unwrap();
    assert!(ke < 1e-3, "still moving: KE {ke}");
}

#[test]
fn soft_tet_cube_on_the_ground_keeps_its_volume() {
    // A 0.4 m jelly cube (5³ lattice, 384 tets) dropped on the ground: with rigid tet volumes
    // and compliant edges it squashes and wobbles, but its volume stays within 0.5 % (measured
    // worst −0.19 % at impact with 40 substeps, −1.4 % with 20: the error falls with the
    // substep) and within 0.1 % once it rests.
    let ws = Workspace::new();
    let frames = 36;
    let scene = format!(
        "[simulation]\nfps = 24.0\nframes = {frames}\nsubsteps = 40\n\
         [[object]]\nname = \"jelly\"\nbox = {{ size = [0.4, 0.4, 0.4], resolution = [5, 5, 5] }}\n\
         translate = [0.0, 0.5, 0.0]\ndensity = 1000.0\n\
         tets = {{ compliance = 0.0 }}\nstretch = {{ compliance = 1e-3 }}\n\
         [[collider]]\nname = \"ground\"\nshape = \"plane\"\nfriction = 0.5\n"
    );
    ws.run_ok(&scene, &[]);
    let rest = 0.4f64.powi(3);
    let mut squashed = false;
    for frame in 1..=frames {
        let path = ws.out().join(format!("jelly.{frame:04}.obj"));
        let volume = obj_volume(&path);
        let bound = if frame == frames { 0.001 } else { 0.005 };
        assert!(
            (volume - rest).abs() < bound * rest,
            "frame {frame}: volume {volume} vs {rest}"
        );
        let heights: Vec<f64> = obj_positions(&path).iter().map(|p| p[1]).collect();
        let height = heights.iter().fold(f64::MIN, |a, &b| a.max(b))
            - heights.iter().fold(f64::MAX, |a, &b| a.min(b));
        squashed |= height < 0.39;
    }
    assert!(
        squashed,
        "the cube never deformed: the test would not see a volume loss"
    );
}

/// A 1 m cloth pinned along its −Z edge, hanging in +Z direction under gravity along +Z.
fn tethered_cloth(extra: &str, gravity: &str, velocity: &str) -> Workspace {
    let ws = Workspace::new();
    let scene = format!(
        "[simulation]\nfps = 24.0\nframes = 24\nsubsteps = 5\ngravity = {gravity}\n\
         [[object]]\nname = \"cloth\"\ngrid = {{ size = [1.0, 1.0], resolution = [12, 12] }}\n\
         density = 0.2\nvelocity = {velocity}\npin_region = {{ min = [-1.0, -1.0, -0.51], max = [1.0, 1.0, -0.49] }}\n\
         stretch = {{}}\nbending = {{ compliance = 10.0 }}\n{extra}"
    );
    ws.run_ok(&scene, &[]);
    ws
}

#[test]
fn tethered_cloth_never_stretches_past_max_stretch() {
    // With 5 substeps the cloth alone stretches far (the check below fails without tethers).
    let max_stretch = 1.05;
    let free = tethered_cloth("", "[0.0, 0.0, 9.81]", "[0.0, 0.0, 0.0]");
    let tethered = tethered_cloth(
        &format!("long_range = {{ max_stretch = {max_stretch} }}\n"),
        "[0.0, 0.0, 9.81]",
        "[0.0, 0.0, 0.0]",
    );
    let worst = |ws: &Workspace| {
        let frames = obj_sequence(&ws.out(), "cloth", 24);
        let rest = &frames[0];
        // Particle (i, j) hangs below anchor (i, 0): the nearest pinned particle.
        let mut worst: f64 = 0.0;
        for frame in &frames {
            for j in 1..12 {
                for i in 0..12 {
                    let ratio =
                        distance(frame[j * 12 + i], rest[i]) / distance(rest[j * 12 + i], rest[i]);
                    worst = worst.max(ratio);
                }
            }
        }
        worst
    };
    assert!(
        worst(&free) > max_stretch + 0.02,
        "without tethers: {}",
        worst(&free)
    );
    assert!(
        worst(&tethered) <= max_stretch + 1e-6,
        "with tethers: {}",
        worst(&tethered)
    );
}

#[test]
fn slack_tethers_never_pull() {
    // Drifting 2 cm towards its pins without gravity (less than a row's 9 cm), no particle
    // gets farther from its anchor than its tether allows: the run must be byte-identical
    // with and without tethers.
    let no_gravity = "[0.0, 0.0, 0.0]";
    let towards_pins = "[0.0, 0.0, -0.02]";
    let plain = tethered_cloth("", no_gravity, towards_pins);
    let tethered = tethered_cloth(
        "long_range = { max_stretch = 1.05 }\n",
        no_gravity,
        towards_pins,
    );
    for frame in 1..=24 {
        let name = format!("cloth.{frame:04}.obj");
        let a = std::fs::read(plain.out().join(&name)).unwrap();
        let b = std::fs::read(tethered.out().join(&name)).unwrap();
        assert!(a == b, "{name} differs: a slack tether pulled");
    }
}

/// Final extension of an edge (rest 1 m) holding 1 kg under a pin, for a stretch table and a
/// substep × iteration split.
fn hanging_extension(solver: &str, stretch: &str, substeps: u32, iterations: u32) -> f64 {
    let ws = Workspace::new();
    let scene = format!(
        "[simulation]\nsolver = \"{solver}\"\nfps = 10.0\nframes = 41\nsubsteps = {substeps}\niterations = {iterations}\n\
         velocity_damping = 5.0\n\
         [[object]]\nname = \"r\"\nrope = {{ start = [0.0, 0.0, 0.0], end = [0.0, -1.0, 0.0], segments = 2 }}\n\
         particle_mass = 1.0\npin = [0]\nstretch = {stretch}\n"
    );
    ws.run_ok(&scene, &[]);
    let last = obj_positions(&ws.out().join("r.0041.obj"));
    distance(last[0], last[2]) - 1.0
}

#[test]
fn pbd_stiffness_depends_on_the_time_step_while_xpbd_compliance_does_not() {
    // The same projection budget (20 per substep-frame) split two ways.
    let pbd_coarse = hanging_extension("pbd", "{ stiffness = 0.01 }", 2, 10);
    let pbd_fine = hanging_extension("pbd", "{ stiffness = 0.01 }", 20, 1);
    assert!(
        pbd_coarse > 3.0 * pbd_fine,
        "PBD: 2×10 → {pbd_coarse} m, 20×1 → {pbd_fine} m; more substeps must be much stiffer"
    );
    let xpbd_coarse = hanging_extension("xpbd", "{ compliance = 1e-3 }", 2, 10);
    let xpbd_fine = hanging_extension("xpbd", "{ compliance = 1e-3 }", 20, 1);
    // Two segments under a pin: the top holds both 1 kg masses, the bottom one: 3 α m g.
    let expected = 3.0 * 1e-3 * 9.81;
    for (label, extension) in [("2×10", xpbd_coarse), ("20×1", xpbd_fine)] {
        assert!(
            (extension - expected).abs() < 0.02 * expected,
            "XPBD {label}: {extension} vs {expected}"
        );
    }
}

#[test]
fn isometric_bending_holds_a_cantilever_that_dihedral_also_holds() {
    // A stiff strip clamped along two columns: with either bending model it must droop far
    // less than with none.
    let droop = |bending: &str| {
        let ws = Workspace::new();
        let scene = format!(
            "[simulation]\nfps = 24.0\nframes = 24\nsubsteps = 40\nvelocity_damping = 5.0\n\
             [[object]]\nname = \"s\"\ngrid = {{ size = [0.5, 0.1], resolution = [11, 3] }}\n\
             density = 0.05\npin_region = {{ min = [-1.0, -1.0, -1.0], max = [-0.19, 1.0, 1.0] }}\n\
             stretch = {{}}\n{bending}"
        );
        ws.run_ok(&scene, &[]);
        let last = obj_positions(&ws.out().join("s.0024.obj"));
        -last[10][1]
    };
    let none = droop("");
    let dihedral = droop("bending = { compliance = 1e-3 }\n");
    let isometric = droop("bending = { compliance = 1e-3, model = \"isometric\" }\n");
    assert!(none > 0.3, "no bending: {none}");
    assert!(dihedral < 0.2 * none, "dihedral: {dihedral} vs {none}");
    assert!(isometric < 0.2 * none, "isometric: {isometric} vs {none}");
}

#[test]
fn rope_bending_keeps_a_cantilevered_rope_up() {
    let droop = |bending: &str| {
        let ws = Workspace::new();
        let scene = format!(
            "[simulation]\nfps = 24.0\nframes = 24\nsubsteps = 40\nvelocity_damping = 5.0\n\
             [[object]]\nname = \"r\"\nrope = {{ start = [0.0, 0.0, 0.0], end = [1.0, 0.0, 0.0], segments = 10 }}\n\
             density = 0.01\npin = [0, 1]\nstretch = {{}}\n{bending}"
        );
        ws.run_ok(&scene, &[]);
        -obj_positions(&ws.out().join("r.0024.obj"))[10][1]
    };
    let limp = droop("");
    let stiff = droop("bending = { compliance = 1e-6 }\n");
    assert!(limp > 0.5, "without bending the rope hangs: {limp}");
    assert!(stiff < 0.2 * limp, "with bending: {stiff} vs {limp}");
}
