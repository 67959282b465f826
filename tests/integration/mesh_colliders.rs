//! Triangle-mesh colliders: a static mesh, a per-frame sequence interpolated at every substep,
//! and the continuous test that keeps a fast particle from tunnelling through a thin surface.

use crate::common::*;

/// An OBJ box of full extents `size` centred at `center`, outward-facing triangles.
fn box_obj(center: [f64; 3], size: [f64; 3]) -> String {
    let mut text = String::new();
    for k in 0..8 {
        let corner =
            |axis: usize| center[axis] + size[axis] * if k >> axis & 1 == 1 { 0.5 } else { -0.5 };
        text.push_str(&format!("v {} {} {}\n", corner(0), corner(1), corner(2)));
    }
    // Corner k: bit 0 = +x, bit 1 = +y, bit 2 = +z (1-based in OBJ). Quads wound outward.
    for [a, b, c, d] in [
        [1, 3, 4, 2],
        [5, 6, 8, 7],
        [1, 2, 6, 5],
        [3, 7, 8, 4],
        [1, 5, 7, 3],
        [2, 4, 8, 6],
    ] {
        text.push_str(&format!("f {a} {b} {c}\nf {a} {c} {d}\n"));
    }
    text
}

/// `anim/lift.0001.obj` … `lift.0011.obj`: a box starting at `center` that rises 5 cm per
/// frame file.
fn write_lift(ws: &Workspace, center: [f64; 3], size: [f64; 3]) {
    std::fs::create_dir_all(ws.path("anim")).unwrap();
    for frame in 1..=11 {
        let lift = 0.05 * (frame - 1) as f64;
        let at = [center[0], center[1] + lift, center[2]];
        ws.write(&format!("anim/lift.{frame:04}.obj"), &box_obj(at, size));
    }
}

#[test]
fn cloth_never_ends_inside_a_static_mesh() {
    let ws = Workspace::new();
    ws.write("block.obj", &box_obj([0.0, 0.15, 0.0], [0.5, 0.3, 0.4]));
    let scene = "[simulation]\nfps = 24.0\nframes = 30\nsubsteps = 20\n[collision]\nthickness = 0.004\n\
                 [[object]]\nname = \"cloth\"\ngrid = { size = [1.0, 1.0], resolution = [24, 24] }\n\
                 translate = [0.03, 0.6, -0.02]\ndensity = 0.1\nstretch = {}\nbending = { compliance = 10.0 }\n\
                 [[collider]]\nname = \"block\"\nshape = \"mesh\"\nmesh = \"block.obj\"\nfriction = 0.3\n\
                 [[collider]]\nname = \"ground\"\nshape = \"plane\"\n";
    ws.run_ok(scene, &[]);
    let half = [0.25, 0.15, 0.2];
    let mut touching = 0;
    for (f, frame) in obj_sequence(&ws.out(), "cloth", 30).iter().enumerate() {
        for (k, p) in frame.iter().enumerate() {
            let q = [p[0], p[1] - 0.15, p[2]];
            let distance = box_distance(q, half);
            assert!(
                distance > 0.004 - 1e-5,
                "frame {} vertex {k} is {distance} m from the block",
                f + 1
            );
            touching += usize::from(distance < 0.004 + 1e-3);
        }
    }
    assert!(touching > 20, "the cloth never reached the block");
}

#[test]
fn a_mesh_sequence_is_interpolated_and_carries_what_rests_on_it() {
    // A platform mesh rises 5 cm per frame file (frames 1–11, then held). A particle resting on
    // it rides on its interpolated top at the particle radius.
    let ws = Workspace::new();
    write_lift(&ws, [0.0, 0.1, 0.0], [1.0, 0.2, 1.0]);
    ws.write("point.obj", "v 0.1 0.205 0.1\n");
    let scene = "[simulation]\nfps = 10.0\nframes = 15\nsubsteps = 20\n[collision]\nthickness = 0.005\n\
                 [[object]]\nname = \"p\"\nmesh = \"point.obj\"\nparticle_mass = 1.0\n\
                 [[collider]]\nname = \"lift\"\nshape = \"mesh\"\nmesh = \"anim/lift.{frame:04}.obj\"\nfriction = 0.5\n";
    ws.run_ok(scene, &[]);
    for (f, frame) in obj_sequence(&ws.out(), "p", 15).iter().enumerate() {
        let top = 0.2 + 0.05 * (f.min(10)) as f64;
        assert!(
            (frame[0][1] - (top + 0.005)).abs() < 1e-4,
            "frame {}: y {} vs {}",
            f + 1,
            frame[0][1],
            top + 0.005
        );
        assert!(
            (frame[0][0] - 0.1).abs() < 1e-9,
            "frame {}: slid to x = {}",
            f + 1,
            frame[0][0]
        );
    }
}

#[test]
fn a_fast_particle_does_not_tunnel_through_a_thin_mesh() {
    // A single quad (two triangles, no thickness) and a particle falling at 30 m/s with one
    // substep per frame: it moves 3 m per substep, far more than the contact margin.
    let ws = Workspace::new();
    ws.write(
        "quad.obj",
        "v -1 0 -1\nv 1 0 -1\nv 1 0 1\nv -1 0 1\nf 1 4 3\nf 1 3 2\n",
    );
    ws.write("point.obj", "v 0.2 2 0.3\n");
    let scene = "[simulation]\nfps = 10.0\nframes = 6\nsubsteps = 1\n[collision]\nthickness = 0.01\n\
                 [[object]]\nname = \"p\"\nmesh = \"point.obj\"\nparticle_mass = 1.0\nvelocity = [0.0, -30.0, 0.0]\n\
                 [[collider]]\nname = \"sheet\"\nshape = \"mesh\"\nmesh = \"quad.obj\"\nfriction = 0.0\n";
    ws.run_ok(scene, &[]);
    for (f, frame) in obj_sequence(&ws.out(), "p", 6).iter().enumerate() {
        assert!(
            frame[0][1] > 0.01 - 1e-6,
            "frame {}: tunnelled to y = {}",
            f + 1,
            frame[0][1]
        );
    }
}

#[test]
fn pins_attached_to_a_mesh_sequence_ride_its_surface() {
    // A flap pinned along the top of a block that rises 5 cm per frame file: the pinned
    // particles keep their offset from the surface and rise with it, then hold.
    let ws = Workspace::new();
    write_lift(&ws, [0.0, 0.25, 0.0], [0.4, 0.5, 0.4]);
    let scene = "[simulation]\nfps = 10.0\nframes = 14\nsubsteps = 10\n\
                 [[object]]\nname = \"flap\"\ngrid = { size = [0.4, 0.4], resolution = [5, 5] }\n\
                 rotate = [90.0, 0.0, 0.0]\ntranslate = [0.0, 0.3, 0.21]\ndensity = 0.2\n\
                 pin_region = { min = [-1.0, 0.49, -1.0], max = [1.0, 0.51, 1.0] }\npin_to = \"block\"\n\
                 stretch = {}\n\
                 [[collider]]\nname = \"block\"\nshape = \"mesh\"\nmesh = \"anim/lift.{frame:04}.obj\"\n";
    ws.run_ok(scene, &[]);
    let frames = obj_sequence(&ws.out(), "flap", 14);
    let rest = &frames[0];
    for (f, frame) in frames.iter().enumerate() {
        let lift = 0.05 * f.min(10) as f64;
        for k in 0..5 {
            let expected = [rest[k][0], rest[k][1] + lift, rest[k][2]];
            assert!(
                distance(frame[k], expected) < 1e-6,
                "frame {} pinned vertex {k}: {:?} vs {expected:?}",
                f + 1,
                frame[k]
            );
        }
    }
}
