//! Keyframed motion (`keys`): pins follow their object's keys exactly, colliders move and push,
//! and contacts with a moving collider use the slip relative to its surface.

use crate::common::*;

#[test]
fn pinned_particles_follow_the_keyed_transform_exactly() {
    // A 1 m cloth pinned at two corners; keys from frame 1 to 11 move it 1 m along X and turn
    // it 90° about Y (about its placed origin, its `translate`), then hold.
    let ws = Workspace::new();
    let scene = "[simulation]\nfps = 10.0\nframes = 16\nsubsteps = 10\n\
                 [[object]]\nname = \"cloth\"\ngrid = { size = [1.0, 1.0], resolution = [8, 8] }\n\
                 translate = [0.0, 2.0, 0.0]\ndensity = 0.2\npin = [0, 7]\nstretch = {}\n\
                 keys = [ { frame = 1, translate = [0.0, 0.0, 0.0], rotate = [0.0, 0.0, 0.0] },\n\
                          { frame = 11, translate = [1.0, 0.0, 0.0], rotate = [0.0, 90.0, 0.0] } ]\n";
    ws.run_ok(scene, &[]);
    let frames = obj_sequence(&ws.out(), "cloth", 16);
    let rest = [[-0.5, 2.0, -0.5], [0.5, 2.0, -0.5]];
    for (f, frame) in frames.iter().enumerate() {
        let s = (f as f64 / 10.0).min(1.0);
        let (sin, cos) = (s * 90f64).to_radians().sin_cos();
        for (slot, vertex) in [(0, 0), (1, 7)] {
            let [x, y, z] = rest[slot];
            // About Y through the pivot (0, 2, 0): x' = cos x + sin z, z' = −sin x + cos z.
            let expected = [cos * x + sin * z + s, y, -sin * x + cos * z];
            let got = frame[vertex];
            assert!(
                distance(got, expected) < 1e-6,
                "frame {} vertex {vertex}: {got:?} vs {expected:?}",
                f + 1
            );
        }
    }
}

#[test]
fn a_fast_keyed_sphere_sweeps_through_hanging_cloth_without_leaving_it_inside() {
    // A 0.2 m ball crosses a hanging curtain at 6 m/s.
    let ws = Workspace::new();
    let scene = "[simulation]\nfps = 24.0\nframes = 24\nsubsteps = 20\n[collision]\nthickness = 0.005\n\
                 [[object]]\nname = \"curtain\"\ngrid = { size = [1.0, 1.0], resolution = [24, 24] }\n\
                 rotate = [90.0, 0.0, 0.0]\ntranslate = [0.0, 1.5, 0.0]\ndensity = 0.1\n\
                 pin_region = { min = [-1.0, 1.95, -1.0], max = [1.0, 2.05, 1.0] }\nstretch = {}\n\
                 bending = { compliance = 10.0 }\n\
                 [[collider]]\nname = \"ball\"\nshape = \"sphere\"\ncenter = [0.0, 1.4, -1.0]\nradius = 0.2\nfriction = 0.2\n\
                 keys = [ { frame = 1, translate = [0.0, 0.0, 0.0] }, { frame = 9, translate = [0.0, 0.0, 2.0] } ]\n";
    ws.run_ok(scene, &[]);
    let frames = obj_sequence(&ws.out(), "curtain", 24);
    let mut pushed = 0;
    for (f, frame) in frames.iter().enumerate() {
        let s = (f as f64 / 8.0).min(1.0);
        let centre = [0.0, 1.4, -1.0 + 2.0 * s];
        for (k, &p) in frame.iter().enumerate() {
            let d = distance(p, centre);
            assert!(
                d > 0.2 + 0.005 - 1e-5,
                "frame {} vertex {k}: {d} from the ball's centre",
                f + 1
            );
            pushed += usize::from(p[2] > 0.1);
        }
    }
    assert!(pushed > 50, "the ball never pushed the curtain");
}

#[test]
fn a_moving_platform_carries_what_rests_on_it_by_friction() {
    // A box platform slides along X at 1 m/s (keys), a particle resting on it with μ = 1 is
    // carried at the platform's speed; without friction it stays behind.
    let carried = |friction: f64| {
        let ws = Workspace::new();
        ws.write("point.obj", "v 0 0.205 0\n");
        let scene = format!(
            "[simulation]\nfps = 10.0\nframes = 11\nsubsteps = 20\n[collision]\nthickness = 0.005\n\
             [[object]]\nname = \"p\"\nmesh = \"point.obj\"\nparticle_mass = 1.0\n\
             [[collider]]\nname = \"platform\"\nshape = \"box\"\ncenter = [0.0, 0.1, 0.0]\nsize = [4.0, 0.2, 1.0]\n\
             friction = {friction}\n\
             keys = [ {{ frame = 1, translate = [0.0, 0.0, 0.0] }}, {{ frame = 101, translate = [10.0, 0.0, 0.0] }} ]\n"
        );
        ws.run_ok(&scene, &["--format", "ply", "--format", "obj"]);
        obj_positions(&ws.out().join("p.0011.obj"))[0][0]
    };
    // The platform starts at 1 m/s at once; friction accelerates the particle at μ g until it
    // moves with it, so it lags v² / (2 μ g) behind the platform's 1 m after 1 s.
    let with = carried(1.0);
    let without = carried(0.0);
    let expected = 1.0 - 1.0 / (2.0 * 9.81);
    assert!(
        (with - expected).abs() < 0.01 * expected,
        "carried {with} m instead of {expected} m"
    );
    assert!(without.abs() < 1e-6, "slid {without} m without friction");
}

#[test]
fn a_patch_pinned_to_a_keyed_collider_rides_with_it_exactly() {
    // A box turning about Y and sliding along X; the first key is not the rest pose, so a
    // pinned particle must keep its place relative to the box: pose(t) · pose(0)⁻¹ · rest.
    let ws = Workspace::new();
    let scene = "[simulation]\nfps = 10.0\nframes = 14\nsubsteps = 10\n\
                 [[object]]\nname = \"flap\"\ngrid = { size = [0.6, 0.6], resolution = [7, 7] }\n\
                 translate = [0.0, 0.55, 0.0]\ndensity = 0.2\n\
                 pin_region = { min = [-1.0, 0.5, -0.31], max = [1.0, 0.6, -0.29] }\npin_to = \"block\"\n\
                 stretch = {}\nbending = { compliance = 10.0 }\n\
                 [[collider]]\nname = \"block\"\nshape = \"box\"\ncenter = [0.0, 0.25, 0.0]\nsize = [0.5, 0.5, 0.5]\n\
                 keys = [ { frame = 1, translate = [0.1, 0.0, 0.0], rotate = [0.0, 10.0, 0.0] },\n\
                          { frame = 11, translate = [1.0, 0.0, 0.0], rotate = [0.0, 90.0, 0.0] } ]\n";
    ws.run_ok(scene, &[]);
    let frames = obj_sequence(&ws.out(), "flap", 14);
    let pose = |frame: usize, p: [f64; 3]| {
        // Keys interpolated at frame (1-based), held after frame 11; pivot = box centre.
        let s = ((frame as f64 - 1.0) / 10.0).min(1.0);
        let (tx, angle) = (0.1 + 0.9 * s, (10.0 + 80.0 * s).to_radians());
        let (sin, cos) = angle.sin_cos();
        let (x, z) = (p[0], p[2]);
        [cos * x + sin * z + tx, p[1], -sin * x + cos * z]
    };
    let unpose = |p: [f64; 3]| {
        // Inverse of the frame-1 pose: back out the translation, then turn by −10°.
        let (sin, cos) = 10f64.to_radians().sin_cos();
        let (x, z) = (p[0] - 0.1, p[2]);
        [cos * x - sin * z, p[1], sin * x + cos * z]
    };
    let rest = &frames[0];
    for (f, frame) in frames.iter().enumerate() {
        for k in 0..7 {
            let expected = pose(f + 1, unpose(rest[k]));
            assert!(
                distance(frame[k], expected) < 1e-6,
                "frame {} pinned vertex {k}: {:?} vs {expected:?}",
                f + 1,
                frame[k]
            );
        }
    }
}
