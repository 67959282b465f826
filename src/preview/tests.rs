//! Tests of the public API, the look-at probe and the timing run (the last two `#[ignore]`).

use super::math::normalize;
use super::*;

/// A camera 5 m in front of the origin on +Z, looking at it, 90° vertical field of view.
fn front_camera() -> Camera {
    Camera {
        eye: [0.0, 0.0, 5.0],
        target: [0.0, 0.0, 0.0],
        up: [0.0, 1.0, 0.0],
        tan_half_fov_y: 1.0,
        near: 0.1,
        ground: None,
    }
}

fn triangle(z: f32, colour: [u8; 3]) -> PreviewMesh {
    PreviewMesh {
        positions: vec![[-1.0, -1.0, z], [1.0, -1.0, z], [0.0, 1.0, z]],
        triangles: vec![[0, 1, 2]],
        colour,
        ..PreviewMesh::default()
    }
}

/// A `n`×`n`-vertex grid over `[-half, half]²` in x/z with height `y(x, z)`, as triangles.
fn grid_mesh(n: usize, half: f32, y: impl Fn(f32, f32) -> f32, colour: [u8; 3]) -> PreviewMesh {
    let mut positions = Vec::with_capacity(n * n);
    for j in 0..n {
        for i in 0..n {
            let x = -half + 2.0 * half * i as f32 / (n - 1) as f32;
            let z = -half + 2.0 * half * j as f32 / (n - 1) as f32;
            positions.push([x, y(x, z), z]);
        }
    }
    let mut triangles = Vec::with_capacity(2 * (n - 1) * (n - 1));
    for j in 0..n - 1 {
        for i in 0..n - 1 {
            let a = (j * n + i) as u32;
            let (b, c, d) = (a + 1, a + n as u32, a + n as u32 + 1);
            triangles.push([a, c, b]);
            triangles.push([b, c, d]);
        }
    }
    PreviewMesh {
        positions,
        triangles,
        colour,
        ..PreviewMesh::default()
    }
}

/// A UV sphere of `rings`×`segments` quads, outward-facing, marked as a collider.
fn sphere(centre: [f32; 3], r: f32, rings: usize, segments: usize) -> PreviewMesh {
    use std::f32::consts::PI;
    let mut positions = Vec::new();
    for j in 0..=rings {
        let theta = PI * j as f32 / rings as f32;
        for i in 0..segments {
            let phi = 2.0 * PI * i as f32 / segments as f32;
            let (s, c) = (theta.sin(), theta.cos());
            positions.push([
                centre[0] + r * s * phi.cos(),
                centre[1] + r * c,
                centre[2] + r * s * phi.sin(),
            ]);
        }
    }
    let mut triangles = Vec::new();
    for j in 0..rings {
        for i in 0..segments {
            let at = |jj: usize, ii: usize| (jj * segments + ii % segments) as u32;
            let (a, b, c, d) = (at(j, i), at(j, i + 1), at(j + 1, i), at(j + 1, i + 1));
            triangles.push([a, b, c]);
            triangles.push([b, d, c]);
        }
    }
    PreviewMesh {
        positions,
        triangles,
        collider: true,
        colour: [255, 0, 255],
        ..PreviewMesh::default()
    }
}

/// A cloth draped over a ball with a hanging rope: what a preview of a real frame looks like.
fn draped_scene(n: usize) -> (Vec<PreviewMesh>, [f32; 3], [f32; 3]) {
    use std::f32::consts::PI;
    let cloth = grid_mesh(
        n,
        1.0,
        |x, z| {
            let r = (x * x + z * z).sqrt();
            let bump = if r < 1.1 {
                0.5 + 0.5 * (PI * r / 1.1).cos()
            } else {
                0.0
            };
            let folds = 0.1 * (7.0 * z.atan2(x)).sin() * (r / 1.4).min(1.0);
            0.45 + 0.6 * bump + folds - 0.25 * (r - 1.1).max(0.0)
        },
        object_colour(0),
    );
    let ball = sphere([0.0, 0.5, 0.0], 0.5, 16, 32);
    let pebble = sphere([-0.9, 0.25, 0.9], 0.25, 12, 24);
    let mut rope = PreviewMesh {
        colour: object_colour(1),
        ..PreviewMesh::default()
    };
    for k in 0..=30 {
        let t = k as f32 / 30.0;
        rope.positions
            .push([1.3, 1.4 - 0.9 * t - 0.3 * (PI * t).sin(), -0.6 + 1.2 * t]);
        if k > 0 {
            rope.lines.push([k - 1, k]);
        }
    }
    (
        vec![ball, cloth, rope, pebble],
        [-1.3, 0.0, -1.3],
        [1.3, 1.6, 1.3],
    )
}

/// The 12 edges of a box as grey lines, to see the framing.
fn box_edges(lo: [f32; 3], hi: [f32; 3]) -> PreviewMesh {
    let positions = (0..8)
        .map(|k| {
            let pick = |bit: usize, a: usize| if k & bit == 0 { lo[a] } else { hi[a] };
            [pick(1, 0), pick(2, 1), pick(4, 2)]
        })
        .collect();
    let mut lines = Vec::new();
    for a in 0..8u32 {
        for bit in [1, 2, 4] {
            if a & bit == 0 {
                lines.push([a, a | bit]);
            }
        }
    }
    PreviewMesh {
        positions,
        lines,
        collider: true,
        ..PreviewMesh::default()
    }
}

fn decode(bytes: &[u8]) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

#[test]
fn a_triangle_in_front_colours_its_centre_and_not_the_corners() {
    let cam = front_camera();
    let empty = render(&[], &cam, 64, 48, "");
    let img = render(&[triangle(0.0, [250, 30, 30])], &cam, 64, 48, "");
    let c = cam.project([0.0, -1.0 / 3.0, 0.0], 64, 48).unwrap();
    let px = img.pixel(c[0] as u32, c[1] as u32);
    assert_ne!(px, empty.pixel(c[0] as u32, c[1] as u32));
    assert!(px[0] > 2 * px[1] && px[0] > 2 * px[2], "{px:?}");
    for (x, y) in [(0, 0), (63, 0), (0, 47), (63, 47)] {
        assert_eq!(img.pixel(x, y), empty.pixel(x, y), "corner {x},{y}");
    }
}

#[test]
fn the_z_buffer_shows_the_nearer_of_two_triangles() {
    let cam = front_camera();
    let near = triangle(1.0, [20, 220, 20]);
    let far = triangle(0.0, [220, 20, 20]);
    for scene in [vec![near.clone(), far.clone()], vec![far, near]] {
        let img = render(&scene, &cam, 64, 64, "");
        let px = img.pixel(32, 36);
        assert!(px[1] > 2 * px[0], "{px:?}");
    }
}

#[test]
fn back_faces_are_drawn_darker() {
    let cam = front_camera();
    let mut back = triangle(0.0, [200, 200, 200]);
    back.triangles = vec![[0, 2, 1]];
    let f = render(&[triangle(0.0, [200, 200, 200])], &cam, 32, 32, "").pixel(16, 18);
    let b = render(&[back], &cam, 32, 32, "").pixel(16, 18);
    assert!(b[0] < f[0] && b[0] > 40, "front {f:?} back {b:?}");
}

#[test]
fn colliders_are_grey_whatever_their_colour() {
    let cam = front_camera();
    let mut t = triangle(0.0, [255, 0, 0]);
    t.collider = true;
    let px = render(&[t], &cam, 32, 32, "").pixel(16, 18);
    assert!(
        px[0].abs_diff(px[1]) < 8 && px[1].abs_diff(px[2]) < 8,
        "{px:?}"
    );
}

#[test]
fn ropes_draw_lines() {
    let cam = front_camera();
    let rope = PreviewMesh {
        positions: vec![
            [-2.0, 0.0, 0.0],
            [2.0, 0.0, 0.0],
            [0.0, 0.0, 9.0],
            [0.0, 1.0, 0.0],
        ],
        lines: vec![[0, 1], [2, 3], [0, 7]],
        colour: [250, 250, 20],
        ..PreviewMesh::default()
    };
    let img = render(&[rope], &cam, 64, 64, "");
    let hit = (28..36).any(|y| (0..64).filter(|&x| img.pixel(x, y)[2] < 60).count() > 20);
    assert!(hit);
}

#[test]
fn bad_geometry_and_tiny_sizes_do_not_panic() {
    let (mut scene, lo, hi) = draped_scene(6);
    scene[1].positions[3] = [f32::NAN, 0.0, 0.0];
    scene[1].positions[4] = [f32::INFINITY, 1.0, 0.0];
    scene[1].triangles.push([0, 1, 999]);
    scene[2].positions[0] = [0.0, f32::NEG_INFINITY, 0.0];
    scene.push(PreviewMesh {
        positions: vec![[0.0, 0.0, 0.0]; 3],
        triangles: vec![[0, 1, 2]],
        lines: vec![[0, 0]],
        ..PreviewMesh::default()
    });
    for (w, h) in [(1, 1), (2, 1), (1, 3), (7, 5), (64, 36)] {
        let cam = Camera::framing(lo, hi, w, h);
        let img = render(&scene, &cam, w, h, "frame 0001");
        assert_eq!(img.rgb.len(), (3 * w * h) as usize);
        assert!(!encode_png(&img).is_empty());
    }
    assert!(render(&scene, &front_camera(), 0, 10, "x").rgb.is_empty());
    let mut inside = front_camera();
    inside.eye = [0.0, 0.5, 0.0];
    render(&scene, &inside, 16, 16, "");
    inside.eye = inside.target;
    render(&scene, &inside, 16, 16, "");
}

#[test]
fn the_grid_shows_on_a_floor_collider_lying_on_the_ground() {
    let floor = PreviewMesh {
        positions: vec![
            [-3.0, 0.0, -3.0],
            [3.0, 0.0, -3.0],
            [3.0, 0.0, 3.0],
            [-3.0, 0.0, 3.0],
        ],
        triangles: vec![[0, 2, 1], [0, 3, 2]],
        collider: true,
        ..PreviewMesh::default()
    };
    let cam = Camera::framing([-3.0, 0.0, -3.0], [3.0, 1.0, 3.0], 160, 90);
    let bare = Camera {
        ground: None,
        ..cam
    };
    let scene = [floor];
    let (with, without) = (
        render(&scene, &cam, 160, 90, ""),
        render(&scene, &bare, 160, 90, ""),
    );
    let centre = cam.project([0.0, 0.0, 0.0], 160, 90).unwrap();
    let (cx, cy) = (centre[0] as u32, centre[1] as u32);
    assert!(
        without.pixel(cx, cy)[1] > 128,
        "the floor is drawn light grey"
    );
    let differ = (cy - 10..cy + 10)
        .flat_map(|y| (cx - 20..cx + 20).map(move |x| (x, y)))
        .filter(|&(x, y)| i32::from(with.pixel(x, y)[1]) + 20 < i32::from(without.pixel(x, y)[1]))
        .count();
    assert!(differ > 20, "{differ} darker grid-line pixels on the floor");
}

#[test]
fn the_same_scene_gives_identical_png_bytes() {
    let (scene, lo, hi) = draped_scene(20);
    let cam = Camera::framing(lo, hi, 160, 90);
    let a = encode_png(&render(&scene, &cam, 160, 90, "frame 0024"));
    let b = encode_png(&render(&scene, &cam, 160, 90, "frame 0024"));
    assert_eq!(a, b);
    let c = encode_png(&render(&scene, &cam, 160, 90, "frame 0025"));
    assert_ne!(a, c);
}

/// An octahedron subdivided `levels` times and pushed onto the sphere with `sqrt` only (no
/// platform `sin`/`cos`, so the mesh itself is the same on every machine), as a collider.
fn ball(centre: [f32; 3], r: f32, levels: usize) -> PreviewMesh {
    let mut tris: Vec<[[f32; 3]; 3]> = Vec::new();
    let axes = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
    for sx in [1.0f32, -1.0] {
        for sy in [1.0f32, -1.0] {
            for sz in [1.0f32, -1.0] {
                let (x, y, z) = (
                    math::scale(axes[0], sx),
                    math::scale(axes[1], sy),
                    math::scale(axes[2], sz),
                );
                tris.push(if sx * sy * sz > 0.0 {
                    [x, y, z]
                } else {
                    [x, z, y]
                });
            }
        }
    }
    for _ in 0..levels {
        let mid = |a: [f32; 3], b: [f32; 3]| normalize(math::add(a, b)).unwrap();
        tris = tris
            .iter()
            .flat_map(|&[a, b, c]| {
                let (ab, bc, ca) = (mid(a, b), mid(b, c), mid(c, a));
                [[a, ab, ca], [ab, b, bc], [ca, bc, c], [ab, bc, ca]]
            })
            .collect();
    }
    let positions = tris
        .iter()
        .flatten()
        .map(|p| math::add(centre, math::scale(*p, r)))
        .collect();
    let triangles = (0..tris.len() as u32)
        .map(|k| [3 * k, 3 * k + 1, 3 * k + 2])
        .collect();
    PreviewMesh {
        positions,
        triangles,
        collider: true,
        ..PreviewMesh::default()
    }
}

/// The PNG of a fixed scene built with arithmetic only has a fixed SHA-256: the bytes are the
/// same on every machine. A deliberate change to the look changes it; then update the hash
/// after looking at the new image (`probe_writes_preview_pngs`).
#[test]
fn the_png_bytes_match_the_recorded_hash() {
    use sha2::Digest;
    let cloth = grid_mesh(
        24,
        1.0,
        |x, z| 0.35 + 0.6 * (1.0 - x * x) * (1.0 - z * z),
        object_colour(2),
    );
    let rope = PreviewMesh {
        positions: (0..=10)
            .map(|k| [1.2, 1.2 - 0.1 * k as f32, -0.5 + 0.01 * (k * k) as f32])
            .collect(),
        lines: (0..10).map(|k| [k, k + 1]).collect(),
        colour: object_colour(4),
        ..PreviewMesh::default()
    };
    let scene = [ball([0.0, 0.3, 0.0], 0.3, 3), cloth, rope];
    let cam = Camera::framing([-1.0, 0.0, -1.0], [1.2, 1.2, 1.0], 96, 54);
    let bytes = encode_png(&render(&scene, &cam, 96, 54, "frame 0042"));
    let hex: String = sha2::Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        hex,
        "62be41d153e99248bb0d32c1cd2db45796d0b33bc4489bf8229d06dc4eac8571"
    );
}

#[test]
fn encode_png_decodes_to_the_same_pixels() {
    let (scene, lo, hi) = draped_scene(12);
    let img = render(
        &scene,
        &Camera::framing(lo, hi, 97, 61),
        97,
        61,
        "frame 0007",
    );
    let (w, h, rgb) = decode(&encode_png(&img));
    assert_eq!((w, h), (97, 61));
    assert_eq!(rgb, img.rgb);
}

#[test]
fn contact_sheet_tiles_in_reading_order_with_gutters() {
    let tile = |k: u8, w: u32, h: u32| Image {
        width: w,
        height: h,
        rgb: [k, 100, 200].repeat((w * h) as usize),
    };
    let images: Vec<Image> = (0..5).map(|k| tile(k, 10, 8)).collect();
    let sheet = contact_sheet(&images, 2);
    assert_eq!(
        (sheet.width, sheet.height),
        (2 * 10 + 3 * GUTTER, 3 * 8 + 4 * GUTTER)
    );
    assert_eq!(sheet.rgb.len(), (3 * sheet.width * sheet.height) as usize);
    for k in 0..5u32 {
        let (x, y) = (
            GUTTER + (k % 2) * (10 + GUTTER),
            GUTTER + (k / 2) * (8 + GUTTER),
        );
        assert_eq!(sheet.pixel(x, y), [k as u8, 100, 200]);
        assert_eq!(sheet.pixel(x + 9, y + 7), [k as u8, 100, 200]);
        assert_eq!(sheet.pixel(x - 1, y), GUTTER_RGB);
    }
    assert_eq!(sheet.pixel(sheet.width - 1, sheet.height - 1), GUTTER_RGB);
    let row = contact_sheet(&images, 0);
    assert_eq!(
        (row.width, row.height),
        (10 + 2 * GUTTER, 5 * 8 + 6 * GUTTER)
    );
    let wide = contact_sheet(&images, 99);
    assert_eq!(
        (wide.width, wide.height),
        (5 * 10 + 6 * GUTTER, 8 + 2 * GUTTER)
    );
    let mixed = contact_sheet(&[tile(1, 4, 9), tile(2, 12, 3)], 2);
    assert_eq!(
        (mixed.width, mixed.height),
        (2 * 12 + 3 * GUTTER, 9 + 2 * GUTTER)
    );
    assert_eq!(
        (contact_sheet(&[], 3).width, contact_sheet(&[], 3).height),
        (1, 1)
    );
    assert_eq!(decode(&encode_png(&sheet)).2, sheet.rgb);
}

#[test]
fn the_palette_cycles_through_distinct_colours() {
    let colours: Vec<[u8; 3]> = (0..8).map(object_colour).collect();
    for (i, a) in colours.iter().enumerate() {
        assert!(colours[..i].iter().all(|b| b != a));
    }
    assert_eq!(object_colour(8), object_colour(0));
    assert_eq!(object_colour(13), object_colour(5));
}

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
