//! Render meshes (SPEC §5): a fine mesh bound at frame 1 to the simulated surface is written
//! as `<object>_render` in every format, follows the surface, and keeps its own details.

use crate::common::*;
use std::fmt::Write;

/// An OBJ grid of `n × n` vertices over the unit square in the XZ plane at height `y(x, z)`,
/// with a UV per vertex and quads.
fn fine_grid(n: usize, y: impl Fn(f64, f64) -> f64) -> String {
    let mut text = String::new();
    let at = |k: usize| -0.5 + k as f64 / (n - 1) as f64;
    for j in 0..n {
        for i in 0..n {
            writeln!(text, "v {} {} {}", at(i), y(at(i), at(j)), at(j)).unwrap();
        }
    }
    for j in 0..n {
        for i in 0..n {
            writeln!(
                text,
                "vt {} {}",
                i as f64 / (n - 1) as f64,
                j as f64 / (n - 1) as f64
            )
            .unwrap();
        }
    }
    for j in 0..n - 1 {
        for i in 0..n - 1 {
            let a = j * n + i + 1;
            let (b, c, d) = (a + 1, a + n + 1, a + n);
            writeln!(text, "f {a}/{a} {d}/{d} {c}/{c} {b}/{b}").unwrap();
        }
    }
    text
}

fn scene(extra: &str) -> String {
    format!(
        r#"
[simulation]
frames = 24
substeps = 10
[output]
formats = ["obj", "ply", "mdd"]
[[object]]
name = "sheet"
grid = {{ size = [1.0, 1.0], resolution = [5, 5] }}
render_mesh = "fine.obj"
translate = [0.0, 1.5, 0.0]
density = 0.2
stretch = {{ compliance = 0.0 }}
bending = {{ compliance = 100.0 }}
{extra}
"#
    )
}

#[test]
fn a_fine_grid_in_the_plane_of_a_coarse_one_tracks_it_as_it_falls_into_folds() {
    let ws = Workspace::new();
    ws.write("fine.obj", &fine_grid(21, |_, _| 0.0));
    ws.run_ok(&scene("pin = [0, 4]"), &[]);
    let out = ws.out();
    let fine0 = obj_positions(&out.join("sheet_render.0001.obj"));
    assert_eq!(fine0.len(), 441);
    assert_eq!(
        fine0[22],
        [-0.45, 1.5, -0.45],
        "frame 1 is the input, placed"
    );
    for frame in [1, 12, 24] {
        let coarse = obj_positions(&out.join(format!("sheet.{frame:04}.obj")));
        let fine = obj_positions(&out.join(format!("sheet_render.{frame:04}.obj")));
        // Fine vertex (5i, 5j) sits on coarse vertex (i, j); the others on the coarse
        // triangles between (checked at quad centres: the middle of a diagonal a–c).
        for j in 0..5 {
            for i in 0..5 {
                let d = distance(fine[(5 * j) * 21 + 5 * i], coarse[j * 5 + i]);
                assert!(d < 2e-6, "frame {frame}: vertex ({i},{j}) is {d} m off");
            }
        }
        for j in 0..4 {
            for i in 0..4 {
                let (a, c) = (coarse[j * 5 + i], coarse[(j + 1) * 5 + i + 1]);
                let middle = [0, 1, 2].map(|k| (a[k] + c[k]) / 2.0);
                let f = fine[(5 * j + 2) * 21 + 5 * i + 2];
                // (2.5, 2.5) of a quad is on the diagonal; (2, 2) is 0.5/5 of a quad off it,
                // so compare the point at (2.5, 2.5) through its neighbours' mean.
                let g = fine[(5 * j + 3) * 21 + 5 * i + 3];
                let mean = [0, 1, 2].map(|k| (f[k] + g[k]) / 2.0);
                let d = distance(mean, middle);
                assert!(
                    d < 2e-6,
                    "frame {frame}: quad ({i},{j}) centre is {d} m off"
                );
            }
        }
    }
    // The motion is real: the sheet swung down about its pinned edge.
    let last = obj_positions(&out.join("sheet.0024.obj"));
    let swing = distance(last[12], [0.0, 1.5, 0.0]);
    assert!(swing > 0.3, "the sheet's middle moved {swing} m");
    // Every format carries it.
    assert!(out.join("sheet_render.0024.ply").is_file());
    assert!(out.join("sheet_render.mdd").is_file());
}

#[test]
fn a_fine_garment_over_a_rigidly_moving_cage_keeps_every_detail() {
    let ws = Workspace::new();
    // Bumps of 5 mm on a 41 × 41 grid: detail far finer than the 5 × 5 cage.
    let bump = |x: f64, z: f64| 0.005 * (40.0 * x).sin() * (30.0 * z).cos();
    ws.write("fine.obj", &fine_grid(41, bump));
    // Every cage particle pinned and keyframed: the cage moves rigidly, turning 90° about Y
    // and rising 1 m, so the garment must move with it exactly, bumps and all.
    let keys = "pin_region = { min = [-1.0, 0.0, -1.0], max = [1.0, 3.0, 1.0] }\n\
                keys = [ { frame = 1, translate = [0.0, 0.0, 0.0], rotate = [0.0, 0.0, 0.0] }, \
                { frame = 24, translate = [0.0, 1.0, 0.0], rotate = [0.0, 90.0, 0.0] } ]";
    ws.run_ok(&scene(keys), &[]);
    let out = ws.out();
    let first = obj_positions(&out.join("sheet_render.0001.obj"));
    let last = obj_positions(&out.join("sheet_render.0024.obj"));
    // Rotating (x, y, z) by +90° about Y gives (z, y, -x); the pivot is the placed origin.
    let mut worst: f64 = 0.0;
    for (p, q) in first.iter().zip(&last) {
        let expected = [p[2], p[1] + 1.0, -p[0]];
        worst = worst.max(distance(*q, expected));
    }
    assert!(
        worst < 5e-6,
        "the garment strayed {worst} m from the rigid motion"
    );
    let heights: Vec<f64> = first.iter().map(|p| p[1] - 1.5).collect();
    let amplitude = heights.iter().fold(0.0f64, |m, h| m.max(h.abs()));
    assert!(
        (amplitude - 0.005).abs() < 2e-4,
        "the bumps are written: {amplitude}"
    );
}

#[test]
fn render_meshes_on_ropes_or_without_faces_are_refused() {
    let ws = Workspace::new();
    ws.write("fine.obj", &fine_grid(3, |_, _| 0.0));
    let rope = "[[object]]\nname = \"r\"\nrope = { start = [0.0, 1.0, 0.0], end = [1.0, 1.0, 0.0], segments = 4 }\n\
                render_mesh = \"fine.obj\"\nparticle_mass = 0.1\n";
    assert_refused(
        &ws.run(rope, &[]),
        "render_mesh",
        "a rope with a render mesh",
    );
    ws.write("lines.obj", "v 0 0 0\nv 1 0 0\nl 1 2\n");
    let scene = scene("pin = [0, 4]").replace("fine.obj", "lines.obj");
    assert_refused(
        &ws.run(&scene, &[]),
        "has no faces",
        "a render mesh of lines",
    );
    assert!(!ws.out().exists());
}
