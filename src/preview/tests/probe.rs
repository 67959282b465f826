//! `#[ignore]`d runs: the look-at probe writing PNGs to /tmp, and the timing run.

use super::super::*;
use super::scenes::{box_edges, draped_scene, grid_mesh};

/// Renders the draped scene and a 4-frame sheet to /tmp for a person to look at.
#[test]
#[ignore]
fn probe_writes_preview_pngs() {
    let (mut scene, lo, hi) = draped_scene(40);
    scene.push(box_edges(lo, hi));
    let cam = Camera::framing(lo, hi, 640, 360);
    let img = render(&scene, &cam, 640, 360, "frame 0024");
    std::fs::write("/tmp/preview_probe.png", encode_png(&img)).unwrap();
    let frames: Vec<Image> = (0..4)
        .map(|k| {
            let mut s = scene.clone();
            for p in &mut s[1].positions {
                p[1] += 0.4 * (3 - k) as f32;
            }
            let cam = Camera::framing(lo, [hi[0], hi[1] + 1.2, hi[2]], 320, 180);
            render(&s, &cam, 320, 180, &format!("frame {:04}", 8 * k))
        })
        .collect();
    std::fs::write(
        "/tmp/preview_sheet.png",
        encode_png(&contact_sheet(&frames, 2)),
    )
    .unwrap();
}

/// CPU time of this thread in seconds (wall time is swamped when the machine is shared).
fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Runs `f` `runs` times; returns the wall and the CPU milliseconds per run, fastest run each.
fn best_ms(runs: usize, mut f: impl FnMut()) -> (f64, f64) {
    let (mut wall, mut cpu) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..runs {
        let (w, c) = (std::time::Instant::now(), thread_cpu_seconds());
        f();
        wall = wall.min(w.elapsed().as_secs_f64() * 1e3);
        cpu = cpu.min((thread_cpu_seconds() - c) * 1e3);
    }
    (wall, cpu)
}

/// Times a 256×256-vertex cloth (130 050 triangles) at 640×360, and its parts; run with
/// `--release`.
#[test]
#[ignore]
fn timing_256_grid_at_640x360() {
    let cloth = grid_mesh(
        256,
        1.0,
        |x, z| 0.5 + 0.2 * (3.0 * x).sin() * (2.0 * z).cos(),
        object_colour(3),
    );
    assert_eq!(cloth.triangles.len(), 130_050);
    let scene = [cloth];
    let cam = Camera::framing([-1.0, 0.0, -1.0], [1.0, 0.8, 1.0], 640, 360);
    let bare = Camera {
        ground: None,
        ..cam
    };
    let first = render(&scene, &cam, 640, 360, "frame 0000");
    let parts: [(&str, &[PreviewMesh], &Camera); 3] = [
        ("whole render", &scene, &cam),
        ("  meshes only (no ground)", &scene, &bare),
        ("  ground only (no meshes)", &[], &cam),
    ];
    for (name, meshes, camera) in parts {
        let (wall, cpu) = best_ms(10, || {
            std::hint::black_box(render(meshes, camera, 640, 360, "frame 0000"));
        });
        println!("{name}: {wall:.1} ms wall, {cpu:.1} ms CPU");
    }
    let ground = cam.ground.unwrap();
    let (wall, cpu) = best_ms(10, || {
        std::hint::black_box(shadow::ShadowMap::new(&ground, &scene));
    });
    println!("  shadow map: {wall:.1} ms wall, {cpu:.1} ms CPU");
    let (wall, cpu) = best_ms(10, || {
        std::hint::black_box(encode_png(&first));
    });
    println!(
        "encode_png: {wall:.1} ms wall, {cpu:.1} ms CPU ({} bytes)",
        encode_png(&first).len()
    );
    assert_eq!(render(&scene, &cam, 640, 360, "frame 0000"), first);
}
