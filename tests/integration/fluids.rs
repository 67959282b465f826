//! Issue 16: position-based fluids against answers known in advance — a column settling to
//! its volume over the tank's area, a closed tank keeping every particle, a dam break's front,
//! momentum without gravity — and the same bytes on any thread count and after a resume; the
//! reconstructed surface closed, outward and holding the water's volume.

use crate::common::*;

/// A tank `[0, 0.4]² × [0, height]` of five (or six, with `lid`) planes and a column of water
/// `[0, 0.2] × [0, 0.4] × [0, 0.4]` of spacing 0.025 (2 048 particles), `frames` frames.
fn tank(frames: u64, lid: bool) -> String {
    let mut scene = format!(
        "[simulation]\nfps = 24.0\nframes = {frames}\nsubsteps = 20\niterations = 2\n\
         [output]\nformats = [\"obj\"]\ncheckpoint_every = 8\n\
         [collision]\nthickness = 0.0125\n\
         [[object]]\nname = \"water\"\n\
         fluid = {{ box = {{ min = [0.0, 0.0, 0.0], max = [0.2, 0.4, 0.4] }}, spacing = 0.025, viscosity = 0.01 }}\n\
         density = 1000.0\n"
    );
    let walls = [
        ("ground", [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]),
        ("left", [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]),
        ("right", [0.4, 0.0, 0.0], [-1.0, 0.0, 0.0]),
        ("back", [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]),
        ("front", [0.0, 0.0, 0.4], [0.0, 0.0, -1.0]),
        ("lid", [0.0, 0.45, 0.0], [0.0, -1.0, 0.0]),
    ];
    for (name, point, normal) in walls.iter().filter(|w| lid || w.0 != "lid") {
        scene += &format!(
            "[[collider]]\nname = \"{name}\"\nshape = \"plane\"\npoint = {point:?}\n\
             normal = {normal:?}\nfriction = 0.0\n"
        );
    }
    scene
}

#[test]
fn a_column_settles_to_its_volume_over_the_tank_area_and_comes_to_rest() {
    let ws = Workspace::new();
    ws.run_ok(&tank(48, false), &[]);
    let x = obj_positions(&ws.out().join("water.0048.obj"));
    assert_eq!(x.len(), 2048);
    // 2 048 particles of 0.025³ m³ over 0.4 × 0.4 m²: 0.2 m. A column of uniform density
    // has its mean height at half its height.
    let height = 2.0 * x.iter().map(|p| p[1]).sum::<f64>() / x.len() as f64;
    assert!((height / 0.2 - 1.0).abs() < 0.03, "height {height} m");
    // It came to rest: the kinetic energy of the last frame is a small part of its peak.
    let records = frame_records(&ws.out());
    let energy: Vec<f64> = (records.iter())
        .map(|r| r["kinetic_energy"].as_f64().unwrap())
        .collect();
    let peak = energy.iter().cloned().fold(0.0, f64::max);
    assert!(
        *energy.last().unwrap() < 0.01 * peak,
        "still moving: {} J of a {peak} J peak",
        energy.last().unwrap()
    );
    // Stats: a settled fluid is compressed by a few % at most.
    let water = &records.last().unwrap()["objects"]["water"];
    assert_eq!(water["fluid_particles"], 2048);
    assert!(
        water["max_density_error"].as_f64().unwrap() < 0.1,
        "{water}"
    );
    assert!(
        water["mean_density_error"].as_f64().unwrap() < 0.03,
        "{water}"
    );
}

/// `scene` with a reconstructed surface of `resolution` cells per spacing on its water.
fn with_surface(scene: &str, resolution: f64) -> String {
    let surface = format!("viscosity = 0.01, surface = {{ resolution = {resolution} }} }}");
    scene.replace("viscosity = 0.01 }", &surface)
}

#[test]
fn nothing_leaves_a_closed_tank_and_threads_and_resumes_give_the_same_bytes() {
    let scene = with_surface(&tank(16, true), 2.0);
    let reference = Workspace::new();
    reference.run_ok(&scene, &["--threads", "1"]);
    let expected = files_with_extension(&reference.out(), "obj");
    assert_eq!(
        expected.len(),
        32,
        "16 frames of particles and of the surface"
    );
    for frame in 1..=16 {
        let x = obj_positions(&reference.out().join(format!("water.{frame:04}.obj")));
        let inside = |p: &[f64; 3]| {
            (0.0..=0.4).contains(&p[0])
                && (0.0..=0.45).contains(&p[1])
                && (0.0..=0.4).contains(&p[2])
        };
        assert!(
            x.iter().all(inside),
            "a particle left the tank by frame {frame}"
        );
    }
    let ws = Workspace::new();
    ws.run_ok(&scene, &["--threads", "2", "--keep-checkpoints"]);
    assert!(
        files_with_extension(&ws.out(), "obj") == expected,
        "2 threads differ from 1"
    );
    // As if killed after frame 14, past the checkpoint at 8.
    for frame in 9..=16 {
        for name in ["water", "water_surface"] {
            std::fs::remove_file(ws.out().join(format!("{name}.{frame:04}.obj"))).unwrap();
        }
    }
    ws.run_ok(&scene, &["--threads", "2", "--resume"]);
    assert!(stats(&ws.out()).iter().any(|r| r["type"] == "resume"));
    assert!(
        files_with_extension(&ws.out(), "obj") == expected,
        "the resume differs"
    );
}

#[test]
fn a_settled_column_has_a_closed_outward_surface_holding_its_volume() {
    let ws = Workspace::new();
    ws.run_ok(&with_surface(&tank(48, false), 2.0), &[]);
    let path = ws.out().join("water_surface.0048.obj");
    let x = obj_positions(&path);
    let triangles = obj_triangles(&path);
    let records = frame_records(&ws.out());
    let counted = &records.last().unwrap()["objects"]["water"]["surface_triangles"];
    assert_eq!(counted.as_u64(), Some(triangles.len() as u64));
    // Closed and consistently wound: every directed edge once, and its reverse once.
    let mut edges = std::collections::BTreeMap::new();
    for t in &triangles {
        for e in 0..3 {
            *edges.entry((t[e], t[(e + 1) % 3])).or_insert(0) += 1;
        }
    }
    for (&(a, b), &count) in &edges {
        assert!(count == 1 && edges.get(&(b, a)) == Some(&1), "edge {a}-{b}");
    }
    // Outward (a positive signed volume) and holding the water: 2 048 × 0.025³ = 0.032 m³.
    let cross = |u: [f64; 3], v: [f64; 3]| {
        [
            u[1] * v[2] - u[2] * v[1],
            u[2] * v[0] - u[0] * v[2],
            u[0] * v[1] - u[1] * v[0],
        ]
    };
    let volume: f64 = (triangles.iter())
        .map(|t| {
            let c = cross(x[t[1]], x[t[2]]);
            (0..3).map(|i| x[t[0]][i] * c[i]).sum::<f64>() / 6.0
        })
        .sum();
    assert!((volume / 0.032 - 1.0).abs() < 0.05, "{volume} m³");
    // It wraps the particles: every vertex within 1.5 spacings of one, and no further than a
    // fifth of a spacing beyond the tank's walls.
    let particles = obj_positions(&ws.out().join("water.0048.obj"));
    for p in &x {
        let nearest = (particles.iter().map(|q| distance(*p, *q))).fold(f64::MAX, f64::min);
        assert!(
            nearest < 1.5 * 0.025,
            "a surface vertex {nearest} m from the water"
        );
    }
    assert!(x.iter().flatten().all(|&c| (-0.005..=0.405).contains(&c)));
}

#[test]
fn a_dam_break_front_crosses_a_one_metre_tank_in_under_a_second() {
    // Water 0.25 m long and 0.5 m high at one end of a 1 m tank: the front runs at about
    // 2√(g H) ≈ 4.4 m/s (Ritter's dam break), so it reaches the far wall within 0.3 s.
    let ws = Workspace::new();
    let scene = "[simulation]\nfps = 24.0\nframes = 24\nsubsteps = 20\niterations = 2\n\
         [output]\nformats = [\"obj\"]\n[collision]\nthickness = 0.0125\n\
         [[object]]\nname = \"water\"\n\
         fluid = { box = { min = [0.0, 0.0, 0.0], max = [0.25, 0.5, 0.1] }, spacing = 0.025 }\n\
         density = 1000.0\n\
         [[collider]]\nname = \"ground\"\nshape = \"plane\"\nfriction = 0.0\n\
         [[collider]]\nname = \"near\"\nshape = \"plane\"\npoint = [0.0, 0.0, 0.0]\nnormal = [1.0, 0.0, 0.0]\nfriction = 0.0\n\
         [[collider]]\nname = \"far\"\nshape = \"plane\"\npoint = [1.0, 0.0, 0.0]\nnormal = [-1.0, 0.0, 0.0]\nfriction = 0.0\n\
         [[collider]]\nname = \"back\"\nshape = \"plane\"\npoint = [0.0, 0.0, 0.0]\nnormal = [0.0, 0.0, 1.0]\nfriction = 0.0\n\
         [[collider]]\nname = \"front\"\nshape = \"plane\"\npoint = [0.0, 0.0, 0.1]\nnormal = [0.0, 0.0, -1.0]\nfriction = 0.0\n";
    ws.run_ok(scene, &[]);
    let front = |frame: usize| {
        let x = obj_positions(&ws.out().join(format!("water.{frame:04}.obj")));
        x.iter().map(|p| p[0]).fold(f64::MIN, f64::max)
    };
    assert!(front(1) < 0.25);
    // Frame 24 is at t = 23/24 s.
    let arrival = (1..=24)
        .find(|&f| front(f) > 0.95)
        .expect("the front never arrived");
    let time = (arrival - 1) as f64 / 24.0;
    assert!(time < 1.0, "front arrived at {time} s");
    // Not faster than the wave can run (2√(gH) from 0.25 m to 0.95 m: 0.16 s).
    assert!(time > 0.12, "front arrived at {time} s");
}

#[test]
fn momentum_is_conserved_without_gravity_or_colliders() {
    // A moving block with nothing around it: its surface relaxes (the artificial pressure
    // pushes the outer particles), but every density correction is a sum of equal and
    // opposite pair terms, so the momentum stays m v0.
    let ws = Workspace::new();
    let scene = "[simulation]\nfps = 24.0\nframes = 12\nsubsteps = 20\niterations = 2\n\
         gravity = [0.0, 0.0, 0.0]\n[output]\nformats = [\"obj\"]\n\
         [[object]]\nname = \"water\"\nvelocity = [1.0, -0.5, 0.25]\n\
         fluid = { box = { min = [0.0, 0.0, 0.0], max = [0.2, 0.2, 0.2] }, spacing = 0.025, cohesion = 0.5 }\n\
         density = 1000.0\n";
    ws.run_ok(scene, &[]);
    let mass = 512.0 * 1000.0 * 0.025f64.powi(3);
    let expected = [mass, -0.5 * mass, 0.25 * mass];
    let records = frame_records(&ws.out());
    let first = obj_positions(&ws.out().join("water.0001.obj"));
    let last = obj_positions(&ws.out().join("water.0012.obj"));
    let moved = (first.iter().zip(&last)).any(|(a, b)| {
        let drift = [b[0] - a[0] - 11.0 / 24.0, b[1] - a[1] + 0.5 * 11.0 / 24.0];
        drift[0].abs() > 1e-4 || drift[1].abs() > 1e-4
    });
    assert!(
        moved,
        "the block did not deform: the test would prove nothing"
    );
    for record in &records {
        let momentum = &record["momentum"];
        for axis in 0..3 {
            let p = momentum[axis].as_f64().unwrap();
            assert!(
                (p - expected[axis]).abs() < 1e-9 * mass,
                "frame {}: momentum {momentum} instead of {expected:?}",
                record["frame"]
            );
        }
    }
}

#[test]
fn bad_fluid_tables_are_refused_with_the_key() {
    let ws = Workspace::new();
    let base = "[[object]]\nname = \"water\"\ndensity = 1000.0\n";
    for (table, expect) in [
        (
            "fluid = { box = { min = [0.0, 0.0, 0.0], max = [0.01, 1.0, 1.0] }, spacing = 0.1 }",
            "object[0].fluid.box",
        ),
        (
            "fluid = { box = { min = [0.0, 0.0, 0.0], max = [1.0, 1.0, 1.0] }, spacing = -0.1 }",
            "object[0].fluid.spacing",
        ),
        (
            "fluid = { box = { min = [0.0, 0.0, 0.0], max = [1.0, 1.0, 1.0] }, spacing = 0.1, viscosity = 2.0 }",
            "object[0].fluid.viscosity",
        ),
        (
            "fluid = { box = { min = [0.0, 0.0, 0.0], max = [1.0, 1.0, 1.0] }, spacing = 0.1, surface = { resolution = 100.0 } }",
            "object[0].fluid.surface.resolution",
        ),
        (
            "fluid = { box = { min = [0.0, 0.0, 0.0], max = [1.0, 1.0, 1.0] }, spacing = 0.1 }\nstretch = {}",
            "object[0].stretch",
        ),
        (
            "fluid = { box = { min = [0.0, 0.0, 0.0], max = [1e6, 1e6, 1e6] }, spacing = 1e-3 }",
            "particles",
        ),
    ] {
        let output = ws.run(&format!("{base}{table}\n"), &[]);
        assert_refused(&output, expect, table);
    }
}

#[test]
fn ply_frames_carry_each_particles_density() {
    let ws = Workspace::new();
    let scene = tank(2, false).replace("formats = [\"obj\"]", "formats = [\"ply\"]");
    ws.run_ok(&scene, &[]);
    let bytes = std::fs::read(ws.out().join("water.0001.ply")).unwrap();
    let end = b"end_header\n";
    let at = bytes.windows(end.len()).position(|w| w == end).unwrap() + end.len();
    let header = String::from_utf8_lossy(&bytes[..at]);
    assert!(
        header.contains(
            "element vertex 2048\nproperty float x\nproperty float y\nproperty float z\n\
         property float vx\nproperty float vy\nproperty float vz\nproperty float density\n"
        ),
        "{header}"
    );
    assert!(!header.contains("element face"));
    let floats: Vec<f32> = bytes[at..]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(floats.len(), 2048 * 7);
    let density: Vec<f32> = floats.chunks_exact(7).map(|v| v[6]).collect();
    // Frame 1 is the rest lattice: a particle with a whole neighbourhood reads the rest
    // density (the block is 8 × 16 × 16; particle (3, 7, 7) is two spacings from every face).
    let inner = 3 + 8 * 7 + 8 * 16 * 7;
    assert!((density[inner] - 1000.0).abs() < 1e-3, "{}", density[inner]);
    // A corner reads far less (the walls are left out of this figure).
    assert!(density[0] < 600.0, "{}", density[0]);
}

#[test]
fn a_usd_stage_holds_a_fluid_as_points() {
    // It used to fail at the end of the run: particles without segments became one-point
    // curves, which a stage refuses.
    let ws = Workspace::new();
    let scene = tank(3, false).replace("formats = [\"obj\"]", "formats = [\"usda\"]");
    ws.run_ok(&scene, &[]);
    let text = std::fs::read_to_string(ws.out().join("scene.usda")).unwrap();
    assert!(
        text.contains("def Points \"water\""),
        "{}",
        &text[..text.len().min(2000)]
    );
    // As wide as the particles (2 × collision.thickness = the spacing).
    assert!(text.contains("float[] widths = [0.025"), "no widths");
    assert!(text.contains("point3f[] points.timeSamples"));
}

/// A 0.5 m square cloth (31 × 31, 0.3 kg/m², self colliding) lying on the ground, and a
/// column of 576 water particles (spacing 0.0125, each 23 times a cloth particle's mass)
/// dropped onto its middle from 0.15 m.
const WATER_ON_CLOTH: &str = "[simulation]\nfps = 24.0\nframes = 12\nsubsteps = 20\niterations = 2\n\
     [output]\nformats = [\"obj\"]\n\
     [collision]\nthickness = 0.00625\n\
     [[object]]\nname = \"cloth\"\ngrid = { size = [0.5, 0.5], resolution = [31, 31] }\n\
     translate = [0.0, 0.00625, 0.0]\ndensity = 0.3\nstretch = { compliance = 0.0 }\n\
     bending = { compliance = 10.0 }\nself_collision = true\n\
     [[object]]\nname = \"water\"\n\
     fluid = { box = { min = [-0.0375, 0.15, -0.0375], max = [0.0375, 0.35, 0.0375] }, spacing = 0.0125, viscosity = 0.01 }\n\
     density = 1000.0\n\
     [[collider]]\nname = \"ground\"\nshape = \"plane\"\nfriction = 0.5\n";

#[test]
fn water_poured_on_a_cloth_on_the_ground_stays_on_it_and_gains_no_energy() {
    // Before the cloth's particles pressed on the ground were held by it in the contacts
    // (collision::stencil), the water pushed them into the ground, the ground pushed them
    // back, and the water went under the cloth as it landed (frame 5); a frame later the
    // energy was 4.4 times its start and the cloth crossed itself 17 000 times.
    let ws = Workspace::new();
    ws.run_ok(WATER_ON_CLOTH, &[]);
    let records = frame_records(&ws.out());
    let energy = |r: &serde_json::Value| {
        r["kinetic_energy"].as_f64().unwrap() + r["potential_energy"].as_f64().unwrap()
    };
    let start = energy(&records[0]);
    let (r, thickness) = (0.00625, 0.00625);
    let mut landed = false;
    for (k, record) in records.iter().enumerate() {
        let frame = k + 1;
        // The falling column alone gains 0.5 % before it lands (the density solve spreads
        // it); the fault this guards against gained 340 % in a frame.
        assert!(energy(record) <= 1.02 * start, "frame {frame}: {record}");
        assert_eq!(record["self_intersections"]["cloth"], 0, "frame {frame}");
        let cloth = obj_positions(&ws.out().join(format!("cloth.{frame:04}.obj")));
        let water = obj_positions(&ws.out().join(format!("water.{frame:04}.obj")));
        let lowest_cloth = cloth.iter().map(|p| p[1]).fold(f64::INFINITY, f64::min);
        assert!(
            lowest_cloth > r - 1e-3,
            "frame {frame}: the cloth is in the ground"
        );
        // Over the cloth (away from its border) the water rests on it, its centres 2r above
        // the cloth's mid-plane: below 2r above the ground it would be in or under the cloth.
        for p in water
            .iter()
            .filter(|p| p[0].abs() < 0.23 && p[2].abs() < 0.23)
        {
            assert!(
                p[1] > 2.0 * thickness,
                "frame {frame}: water at {p:?} went through"
            );
            landed |= p[1] < 4.0 * thickness;
        }
    }
    assert!(
        landed,
        "the water never reached the cloth: the test proves nothing"
    );
}

/// A self-colliding, soft jelly block (tetrahedra, 0.4 × 0.2 × 0.4 m, 200 kg/m³) on the
/// ground, and, with `water`, 1 280 water particles (2.5 kg) poured on it at 1 m/s.
fn jelly_under_water(water: bool) -> String {
    let mut scene = "[simulation]\nfps = 24.0\nframes = 16\nsubsteps = 20\niterations = 2\n\
         [output]\nformats = [\"obj\"]\n\
         [collision]\nthickness = 0.00625\n\
         [[object]]\nname = \"jelly\"\nbox = { size = [0.4, 0.2, 0.4], resolution = [9, 5, 9] }\n\
         translate = [0.0, 0.10625, 0.0]\ndensity = 200.0\ntets = { compliance = 1e-4 }\n\
         stretch = { compliance = 2e-3, damping = 0.05 }\nself_collision = true\n\
         [[collider]]\nname = \"ground\"\nshape = \"plane\"\nfriction = 0.5\n"
        .to_string();
    if water {
        scene += "[[object]]\nname = \"water\"\nvelocity = [0.0, -1.0, 0.0]\n\
             fluid = { box = { min = [-0.05, 0.25, -0.05], max = [0.05, 0.5, 0.05] }, spacing = 0.0125, viscosity = 0.01 }\n\
             density = 1000.0\n";
    }
    scene
}

#[test]
fn water_poured_on_a_soft_body_stays_on_it_and_presses_it_down() {
    // The water's weight reaches the block through the contacts (two-way), and none of the
    // water gets into or under the block.
    let (ws, dry) = (Workspace::new(), Workspace::new());
    ws.run_ok(&jelly_under_water(true), &[]);
    dry.run_ok(&jelly_under_water(false), &[]);
    // The mean height of the block's surface vertices: lower when the block is squeezed.
    let height = |ws: &Workspace, frame: usize| {
        let jelly = obj_positions(&ws.out().join(format!("jelly.{frame:04}.obj")));
        jelly.iter().map(|p| p[1]).sum::<f64>() / jelly.len() as f64
    };
    let records = frame_records(&ws.out());
    let mut resting = 0;
    for frame in 1..=records.len() {
        assert_eq!(records[frame - 1]["self_intersections"]["jelly"], 0);
        let water = obj_positions(&ws.out().join(format!("water.{frame:04}.obj")));
        let jelly = obj_positions(&ws.out().join(format!("jelly.{frame:04}.obj")));
        let upper: Vec<_> = jelly.iter().filter(|q| q[1] > 0.1).collect();
        for p in water
            .iter()
            .filter(|p| p[0].abs() < 0.18 && p[2].abs() < 0.18)
        {
            // The block's top surface under p lies above the lowest of the top vertices
            // around it (the lattice spacing is 0.05 m): water below them is in the block.
            let around = upper
                .iter()
                .filter(|q| (q[0] - p[0]).hypot(q[2] - p[2]) < 0.05)
                .map(|q| q[1]);
            let floor = around.fold(f64::INFINITY, f64::min);
            assert!(
                p[1] > floor,
                "frame {frame}: water at {p:?} is in the block"
            );
            resting += (p[1] < floor + 0.02) as usize;
        }
    }
    assert!(
        resting > 0,
        "the water never reached the block: the test proves nothing"
    );
    // Two-way: under the water the block is squeezed lower than the same block alone
    // (measured 0.8 mm lower at frame 16).
    let (wet, alone) = (height(&ws, 16), height(&dry, 16));
    assert!(
        wet < alone - 3e-4,
        "mean height {alone} m alone, {wet} m under water"
    );
}

/// A 0.6 m trampoline (25 × 25 particles, 0.5 kg/m², self-colliding, pinned all round its
/// edge) with 4 kg of water (256 particles, each 50 times a cloth particle) let go 2 cm above
/// it; 24 frames of 20 substeps × 2 iterations.
fn water_in_a_trampoline() -> String {
    let n = 25;
    let edge: Vec<String> = (0..n * n)
        .filter(|k| k / n == 0 || k / n == n - 1 || k % n == 0 || k % n == n - 1)
        .map(|k| k.to_string())
        .collect();
    format!(
        "[simulation]\nfps = 24.0\nframes = 24\nsubsteps = 20\niterations = 2\n\
         [output]\nformats = [\"obj\"]\n\
         [collision]\nthickness = 0.0125\n\
         [[object]]\nname = \"cloth\"\ngrid = {{ size = [0.6, 0.6], resolution = [{n}, {n}] }}\n\
         translate = [0.0, 0.3, 0.0]\ndensity = 0.5\nstretch = {{ compliance = 0.0 }}\n\
         self_collision = true\nbending = {{ compliance = 10.0 }}\npin = [{}]\n\
         [[object]]\nname = \"water\"\n\
         fluid = {{ box = {{ min = [-0.1, 0.32, -0.1], max = [0.1, 0.42, 0.1] }}, spacing = 0.025, viscosity = 0.01 }}\n\
         density = 1000.0\n\
         [[collider]]\nname = \"ground\"\nshape = \"plane\"\n",
        edge.join(", ")
    )
}

#[test]
fn water_in_a_trampoline_pinned_at_its_edges_rests_in_it() {
    // Gauss–Seidel cannot carry a load 50 times a cloth particle's mass to the pins within a
    // substep: with true masses in the contacts (a ratio cap of 1e9) the cloth stretches to
    // twice its length by frame 7 and the run diverges at frame 10. The default cap
    // (collision.max_mass_ratio = 4, collision::stencil) keeps it whole.
    let ws = Workspace::new();
    let uncapped = ws.run(
        &water_in_a_trampoline(),
        &["--set", "collision.max_mass_ratio=1e9"],
    );
    assert_eq!(uncapped.status.code(), Some(1), "{uncapped:?}");

    let ws = Workspace::new();
    ws.run_ok(&water_in_a_trampoline(), &[]);
    // `check` says the cap is in use, and between which objects.
    let check = std::process::Command::new(BIN)
        .arg("check")
        .arg(ws.path("scene.toml"))
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&check.stdout);
    assert!(
        report.contains("objects `cloth` and `water`: a particle of one weighs up to 50.0 times"),
        "{report}"
    );
    let records = frame_records(&ws.out());
    assert_eq!(records.len(), 24);
    let energy = |r: &serde_json::Value| {
        r["kinetic_energy"].as_f64().unwrap() + r["potential_energy"].as_f64().unwrap()
    };
    let start = energy(&records[0]);
    let thickness = 0.0125;
    for (k, record) in records.iter().enumerate() {
        let frame = k + 1;
        // Measured: at most 1.4 % over the start (frame 2, the column spreading as it
        // falls, before it lands) and at most 22.5 % strain.
        assert!(energy(record) <= 1.02 * start, "frame {frame}: {record}");
        let strain = record["objects"]["cloth"]["max_edge_strain"]
            .as_f64()
            .unwrap();
        assert!(strain < 0.3, "frame {frame}: the cloth stretched {strain}");
        assert_eq!(record["self_intersections"]["cloth"], 0, "frame {frame}");
        let cloth = obj_positions(&ws.out().join(format!("cloth.{frame:04}.obj")));
        let water = obj_positions(&ws.out().join(format!("water.{frame:04}.obj")));
        for p in &water {
            // Above the cloth particle under it (in x and z) by at least one radius: a water
            // particle in or under the cloth would be level with it or below.
            let under = (cloth.iter())
                .min_by(|a, b| {
                    let d = |q: &[f64; 3]| (q[0] - p[0]).powi(2) + (q[2] - p[2]).powi(2);
                    d(a).total_cmp(&d(b))
                })
                .unwrap();
            assert!(
                p[1] > under[1] + thickness,
                "frame {frame}: water at {p:?} is not over the cloth at {under:?}"
            );
        }
    }
    // It sagged: the water weighs on the cloth (the lowest point was 0.19 m, from 0.3).
    let sagged = (1..=24)
        .map(|frame| obj_positions(&ws.out().join(format!("cloth.{frame:04}.obj"))))
        .map(|cloth| cloth.iter().map(|p| p[1]).fold(f64::INFINITY, f64::min))
        .fold(f64::INFINITY, f64::min);
    assert!(sagged < 0.25, "lowest cloth point {sagged}");
}
