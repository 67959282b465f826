//! `max_penetration` measures surfaces, not only vertices (SPEC §5): a face or an edge
//! through an analytic collider, and one object's surface inside another object, each with
//! a depth known in advance. Gravity is off and the particles never touch, so nothing moves.

use crate::common::{
    box_distance, distance, frame_records, obj_positions, obj_triangles, Workspace,
};

/// The largest `max_penetration` over the run's frames, and that of `object`.
fn deepest(ws: &Workspace, object: &str) -> (f64, f64) {
    let frames = frame_records(&ws.out());
    let worst = |f: &dyn Fn(&serde_json::Value) -> f64| frames.iter().map(f).fold(0.0, f64::max);
    (
        worst(&|r| r["max_penetration"].as_f64().unwrap()),
        worst(&|r| r["objects"][object]["max_penetration"].as_f64().unwrap()),
    )
}

/// A scene without gravity, `thickness` its particle radius, and `body`'s TOML after it.
fn still_scene(thickness: f64, body: &str) -> String {
    format!(
        "[simulation]\nframes = 3\ngravity = [0.0, 0.0, 0.0]\n[collision]\nthickness = {thickness}\n\
         {body}"
    )
}

#[test]
fn a_face_or_an_edge_through_a_sphere_box_or_capsule_counts_while_its_vertices_are_clear() {
    // A sheet (one free triangle, corners 1–3 m out) and a rope (one segment, ends 1 m out)
    // 3 cm above the middle of each shape, whose top is 10 cm above it: their deepest point
    // is 7 cm inside the shape (the 5 mm contact margin is not part of the depth). Counting
    // vertices, it was 0.
    let sheet = "v -1 0.03 -1\nv 3 0.03 -1\nv -1 0.03 3\nf 1 3 2\n";
    let shapes = [
        "shape = \"sphere\"\ncenter = [0.0, 0.0, 0.0]\nradius = 0.1",
        "shape = \"box\"\ncenter = [0.0, 0.0, 0.0]\nsize = [0.3, 0.2, 0.3]\nrotate = [0.0, 30.0, 0.0]",
        "shape = \"capsule\"\na = [-0.2, 0.0, 0.0]\nb = [0.2, 0.0, 0.0]\nradius = 0.1",
    ];
    for shape in shapes {
        let ws = Workspace::new();
        ws.write("sheet.obj", sheet);
        let scene = still_scene(
            0.005,
            &format!(
                "[[object]]\nname = \"sheet\"\nmesh = \"sheet.obj\"\ndensity = 0.2\n\
                 [[object]]\nname = \"rope\"\nrope = {{ start = [0.0, 0.03, -1.0], end = [0.0, 0.03, 1.0], segments = 1 }}\n\
                 density = 0.2\n\
                 [[collider]]\nname = \"shape\"\n{shape}\n"
            ),
        );
        ws.run_ok(&scene, &["--no-output"]);
        for object in ["sheet", "rope"] {
            let (_, depth) = deepest(&ws, object);
            assert!((depth - 0.07).abs() < 1e-12, "{shape}, {object}: {depth}");
        }
        // The gate sees it: exit 3, naming the worst.
        let output = ws.run(&scene, &["--no-output", "--gate", "max_penetration=0.06"]);
        assert_eq!(output.status.code(), Some(3), "{shape}");
        let error = String::from_utf8_lossy(&output.stderr);
        assert!(error.contains("max_penetration: worst 0.0"), "{error}");
    }
}

/// A solid: a 1 m box centred at the origin, its closed surface (5 lattice points along
/// each side) or filled with tetrahedra.
fn solid_box(tets: bool) -> String {
    let tets = if tets { "tets = {}\n" } else { "" };
    format!(
        "[[object]]\nname = \"solid\"\nbox = {{ size = [1.0, 1.0, 1.0], resolution = [5, 5, 5] }}\n\
         density = 100.0\n{tets}"
    )
}

#[test]
fn a_surface_inside_another_object_counts() {
    // A cloth triangle 3 cm under the solid's top face, its corners 1–3 m out: the solid's
    // top vertices (on a 25 cm lattice) are over points of the face 3 cm deep. And a second
    // cloth moving down at 0.3 m/s, one corner 2 cm over the top face at rest: after two
    // frames (1/12 s) that corner is 5 mm inside. Its rest shape is outside the solid, so it
    // is measured (an object placed inside is not: the next test).
    for tets in [false, true] {
        let ws = Workspace::new();
        ws.write(
            "sheet.obj",
            "v -1 0.47 -1\nv 3 0.47 -1\nv -1 0.47 3\nf 1 3 2\n",
        );
        ws.write(
            "corner.obj",
            "v 0.05 0.52 0.05\nv 3 0.8 0.05\nv 0.05 0.8 3\nf 1 2 3\n",
        );
        let scene = still_scene(
            0.001,
            &format!(
                "{}[[object]]\nname = \"sheet\"\nmesh = \"sheet.obj\"\ndensity = 0.2\n\
                 [[object]]\nname = \"corner\"\nmesh = \"corner.obj\"\ndensity = 0.2\n\
                 velocity = [0.0, -0.3, 0.0]\n",
                solid_box(tets)
            ),
        );
        ws.run_ok(&scene, &["--no-output"]);
        for (object, expected) in [("sheet", 0.03), ("corner", 0.005)] {
            let (_, depth) = deepest(&ws, object);
            assert!(
                (depth - expected).abs() < 1e-9,
                "tets {tets}, {object}: {depth}"
            );
        }
        // The cloth is open: nothing is inside it.
        assert_eq!(deepest(&ws, "solid").1, 0.0);
    }
}

#[test]
fn an_object_placed_inside_a_solid_is_where_the_user_put_it() {
    // A ball inside a closed box from the start (a ball in a balloon): every vertex is 40 cm
    // or more inside the box's surface, and none of it is a penetration.
    let ws = Workspace::new();
    let ball = "[[object]]\nname = \"ball\"\nsphere = { radius = 0.1, subdivisions = 1 }\n\
                density = 10.0\n";
    let scene = still_scene(0.001, &format!("{}{ball}", solid_box(false)));
    ws.run_ok(&scene, &["--no-output"]);
    assert_eq!(deepest(&ws, "ball"), (0.0, 0.0));
}

#[test]
fn a_coarse_cloth_over_a_box_edge_and_a_thin_capsule_keeps_every_face_out() {
    // 10 cm cells fall over a box's edge and a 2 cm capsule: vertex contacts alone let both
    // through the faces between the vertices (measured 2026-12-03 before faces had contacts:
    // `max_penetration` up to 24.8 mm, 20 mm in 22 of 36 frames where the bar's axis ran
    // through a face). Every face, sampled from the OBJ frames on a 12-step grid, stays
    // outside both shapes (to the f32 rounding of the files), and the stats log agrees.
    let ws = Workspace::new();
    let scene = "[simulation]\nfps = 24.0\nframes = 36\nsubsteps = 20\n\
        [[object]]\nname = \"cloth\"\ngrid = { size = [0.6, 0.6], resolution = [7, 7] }\n\
        translate = [0.25, 0.9, 0.05]\ndensity = 0.2\nstretch = { compliance = 0.0 }\n\
        bending = { compliance = 50.0 }\n\
        [[collider]]\nname = \"block\"\nshape = \"box\"\ncenter = [0.0, 0.4, 0.0]\n\
        size = [0.5, 0.8, 0.5]\nrotate = [0.0, 20.0, 0.0]\nfriction = 0.4\n\
        [[collider]]\nname = \"bar\"\nshape = \"capsule\"\na = [0.45, 0.6, -0.4]\n\
        b = [0.45, 0.6, 0.4]\nradius = 0.02\nfriction = 0.4\n";
    ws.run_ok(scene, &["--format", "obj"]);
    let triangles = obj_triangles(&ws.out().join("cloth.0001.obj"));
    let (angle, half) = (20f64.to_radians(), [0.25, 0.4, 0.25]);
    let block = |p: [f64; 3]| {
        // Into the box's frame: R = Ry(20°), q = Rᵀ (p − c).
        let (x, y, z) = (p[0], p[1] - 0.4, p[2]);
        let q = [
            angle.cos() * x - angle.sin() * z,
            y,
            angle.sin() * x + angle.cos() * z,
        ];
        box_distance(q, half)
    };
    let bar = |p: [f64; 3]| {
        let t = ((p[2] + 0.4) / 0.8).clamp(0.0, 1.0);
        distance(p, [0.45, 0.6, -0.4 + 0.8 * t]) - 0.02
    };
    let mut touched = false;
    for frame in 1..=36 {
        let x = obj_positions(&ws.out().join(format!("cloth.{frame:04}.obj")));
        for t in &triangles {
            for i in 0..=12 {
                for j in 0..=12 - i {
                    let (u, v) = (i as f64 / 12.0, j as f64 / 12.0);
                    let p: [f64; 3] = std::array::from_fn(|k| {
                        x[t[0]][k] * (1.0 - u - v) + x[t[1]][k] * u + x[t[2]][k] * v
                    });
                    let (b, c) = (block(p), bar(p));
                    assert!(
                        b > -1e-6 && c > -1e-6,
                        "frame {frame}: a face point {b}, {c} inside"
                    );
                    touched |= b < 0.01 || c < 0.01;
                }
            }
        }
    }
    assert!(touched, "the cloth never reached the shapes");
    let frames = frame_records(&ws.out());
    assert!(frames
        .iter()
        .all(|r| r["max_penetration"].as_f64().unwrap() == 0.0));
    assert!(frames
        .iter()
        .any(|r| r["feature_contacts"].as_u64().unwrap() > 0));
}
