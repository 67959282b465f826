//! What is written of an object's surface (issue 11, items 4 and 5): UV seams kept per face
//! corner, hard edges kept as split normals recomputed on the deformed surface, tetrahedral
//! objects written with only their boundary nodes, and ropes written as tubes.

use crate::common::*;
use std::collections::BTreeMap;
use std::path::Path;

/// A face corner's `v/vt/vn`, 0-based.
type Corner = (usize, Option<usize>, Option<usize>);

/// An OBJ's `v`, `vt`, `vn` values and its faces' `v/vt/vn` corners (0-based; `vt`/`vn`
/// `None` when absent).
struct Obj {
    v: Vec<[f64; 3]>,
    vt: Vec<[f64; 2]>,
    vn: Vec<[f64; 3]>,
    faces: Vec<Vec<Corner>>,
}

fn read_obj(path: &Path) -> Obj {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let numbers = |rest: &str| -> Vec<f64> {
        rest.split_whitespace()
            .map(|w| w.parse().unwrap())
            .collect()
    };
    let mut obj = Obj {
        v: Vec::new(),
        vt: Vec::new(),
        vn: Vec::new(),
        faces: Vec::new(),
    };
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("v ") {
            let c = numbers(rest);
            obj.v.push([c[0], c[1], c[2]]);
        } else if let Some(rest) = line.strip_prefix("vt ") {
            let c = numbers(rest);
            obj.vt.push([c[0], c[1]]);
        } else if let Some(rest) = line.strip_prefix("vn ") {
            let c = numbers(rest);
            obj.vn.push([c[0], c[1], c[2]]);
        } else if let Some(rest) = line.strip_prefix("f ") {
            let index = |w: Option<&str>| {
                w.filter(|w| !w.is_empty())
                    .map(|w| w.parse::<usize>().unwrap() - 1)
            };
            let corners = rest
                .split_whitespace()
                .map(|corner| {
                    let mut parts = corner.split('/');
                    let v = index(parts.next()).unwrap();
                    (v, index(parts.next()), index(parts.next()))
                })
                .collect();
            obj.faces.push(corners);
        }
    }
    obj
}

/// A binary PLY of ours: the vertex property names and values (all 4-byte), and per face its
/// indices and, when present, its `texcoord` list.
struct Ply {
    properties: Vec<String>,
    vertices: Vec<Vec<[u8; 4]>>,
    faces: Vec<(Vec<i32>, Vec<f32>)>,
}

fn read_ply(path: &Path) -> Ply {
    let bytes = std::fs::read(path).unwrap();
    let end = bytes
        .windows(11)
        .position(|w| w == b"end_header\n")
        .unwrap()
        + 11;
    let header = String::from_utf8_lossy(&bytes[..end]).to_string();
    let count = |element: &str| -> usize {
        header
            .lines()
            .find_map(|l| l.strip_prefix(&format!("element {element} ")))
            .map_or(0, |n| n.parse().unwrap())
    };
    let properties: Vec<String> = header
        .lines()
        .skip_while(|l| !l.starts_with("element vertex"))
        .skip(1)
        .take_while(|l| l.starts_with("property"))
        .map(|l| l.rsplit(' ').next().unwrap().to_string())
        .collect();
    let texcoords = header.contains("property list uchar float texcoord");
    let mut at = end;
    let take4 = |at: &mut usize| {
        let word: [u8; 4] = bytes[*at..*at + 4].try_into().unwrap();
        *at += 4;
        word
    };
    let vertices = (0..count("vertex"))
        .map(|_| properties.iter().map(|_| take4(&mut at)).collect())
        .collect();
    let mut faces = Vec::new();
    for _ in 0..count("face") {
        let n = bytes[at] as usize;
        at += 1;
        let indices = (0..n).map(|_| i32::from_le_bytes(take4(&mut at))).collect();
        let mut uvs = Vec::new();
        if texcoords {
            let m = bytes[at] as usize;
            at += 1;
            uvs = (0..m).map(|_| f32::from_le_bytes(take4(&mut at))).collect();
        }
        faces.push((indices, uvs));
    }
    Ply {
        properties,
        vertices,
        faces,
    }
}

impl Ply {
    fn float(&self, vertex: usize, name: &str) -> f32 {
        let k = self.properties.iter().position(|p| p == name).unwrap();
        f32::from_le_bytes(self.vertices[vertex][k])
    }
    fn int(&self, vertex: usize, name: &str) -> i32 {
        let k = self.properties.iter().position(|p| p == name).unwrap();
        i32::from_le_bytes(self.vertices[vertex][k])
    }
}

fn skirt_mesh() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/meshes/skirt.obj")
}

#[test]
fn a_seamed_skirt_keeps_its_33_uv_columns_and_every_corner_uv() {
    let ws = Workspace::new();
    std::fs::copy(skirt_mesh(), ws.path("skirt.obj")).unwrap();
    let scene = "[simulation]\nframes = 3\nsubsteps = 5\n[[object]]\nname = \"skirt\"\n\
                 mesh = \"skirt.obj\"\ndensity = 0.15\nstretch = {}\nbending = { compliance = 20.0 }\n\
                 pin_region = { min = [-1.0, 0.99, -1.0], max = [1.0, 1.01, 1.0] }\n";
    ws.run_ok(scene, &["--format", "obj", "--format", "ply"]);
    let input = read_obj(&skirt_mesh());
    let output = read_obj(&ws.out().join("skirt.0003.obj"));
    // 32 positions around, 33 UV columns: the seam stays a seam.
    assert_eq!(output.v.len(), input.v.len());
    let columns: std::collections::BTreeSet<u64> = output
        .vt
        .iter()
        .map(|uv| (uv[0] as f32).to_bits() as u64)
        .collect();
    assert_eq!(columns.len(), 33);
    assert_eq!(output.vt.len(), input.vt.len());
    for (a, b) in output.vt.iter().zip(&input.vt) {
        assert_eq!(a.map(|c| c as f32), b.map(|c| c as f32));
    }
    assert_eq!(output.faces.len(), input.faces.len());
    for (out_face, in_face) in output.faces.iter().zip(&input.faces) {
        for (o, i) in out_face.iter().zip(in_face) {
            assert_eq!((o.0, o.1), (i.0, i.1), "corner v/vt");
        }
    }
    // PLY: every face carries its corners' UVs, the same values.
    let ply = read_ply(&ws.out().join("skirt.0003.ply"));
    assert!(ply.properties.ends_with(&["s".into(), "t".into()]));
    for ((indices, uvs), in_face) in ply.faces.iter().zip(&input.faces) {
        assert_eq!(uvs.len(), 2 * indices.len());
        for (k, corner) in in_face.iter().enumerate() {
            let uv = input.vt[corner.1.unwrap()];
            assert_eq!([uvs[2 * k], uvs[2 * k + 1]], uv.map(|c| c as f32));
        }
    }
}

/// A unit cube of 8 vertices and 6 quads, flat shaded (`s off`).
const CUBE: &str = "v 0 0 0\nv 1 0 0\nv 1 0 1\nv 0 0 1\nv 0 1 0\nv 1 1 0\nv 1 1 1\nv 0 1 1\n\
    s off\nf 1 2 3 4\nf 5 8 7 6\nf 1 5 6 2\nf 2 6 7 3\nf 3 7 8 4\nf 4 8 5 1\n";

/// Newell's normal of a polygon: the unit area vector.
fn polygon_normal(points: &[[f64; 3]]) -> [f64; 3] {
    let mut n = [0.0; 3];
    for k in 0..points.len() {
        let (a, b) = (points[k], points[(k + 1) % points.len()]);
        n[0] += (a[1] - b[1]) * (a[2] + b[2]);
        n[1] += (a[2] - b[2]) * (a[0] + b[0]);
        n[2] += (a[0] - b[0]) * (a[1] + b[1]);
    }
    let length = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
    n.map(|c| c / length)
}

#[test]
fn a_flat_shaded_cube_writes_face_normals_on_a_deformed_frame() {
    let ws = Workspace::new();
    ws.write("cube.obj", CUBE);
    // Soft edges, pinned at one corner and spun: the cube sags and tilts, so its faces turn.
    let scene = "[simulation]\nframes = 6\nsubsteps = 10\n[[object]]\nname = \"cube\"\n\
                 mesh = \"cube.obj\"\nscale = 0.3\ntranslate = [0.0, 1.0, 0.0]\ndensity = 1.0\n\
                 velocity = [0.0, 0.0, 1.0]\npin = [0]\nstretch = { compliance = 1e-3 }\n";
    ws.run_ok(scene, &["--format", "obj", "--format", "ply"]);
    let first = read_obj(&ws.out().join("cube.0001.obj"));
    let obj = read_obj(&ws.out().join("cube.0006.obj"));
    assert_eq!(obj.v.len(), 8);
    assert_eq!(obj.vn.len(), 24, "three normals per corner of a flat cube");
    assert_eq!(first.faces, obj.faces, "the same topology in every frame");
    let mut worst_turn: f64 = 1.0;
    for face in &obj.faces {
        let points: Vec<[f64; 3]> = face.iter().map(|c| obj.v[c.0]).collect();
        let normal = polygon_normal(&points);
        for corner in face {
            let n = obj.vn[corner.2.unwrap()];
            let dot: f64 = (0..3).map(|a| n[a] * normal[a]).sum();
            worst_turn = worst_turn.min(dot);
        }
        let rest_normal = polygon_normal(&face.iter().map(|c| first.v[c.0]).collect::<Vec<_>>());
        let moved: f64 = (0..3).map(|a| normal[a] * rest_normal[a]).sum();
        assert!(moved < 0.9999, "the faces must have turned");
    }
    // Each quad is slightly non-planar once deformed; its corners' normals stay within 1°
    // of the quad's own normal (a smooth normal at a cube corner is 55° off).
    assert!(
        worst_turn > 0.9998,
        "corner normal off its face by {worst_turn}"
    );
    // PLY keeps one normal per vertex (smooth): at a cube corner it leans into all three
    // faces (area-weighted over the fan triangles), it is none of the face normals.
    let ply = read_ply(&ws.out().join("cube.0001.ply"));
    assert_eq!(ply.vertices.len(), 8);
    let n = ["nx", "ny", "nz"].map(|p| ply.float(0, p) as f64);
    assert!(n.iter().all(|&c| c < -0.3), "{n:?}");
}

#[test]
fn a_tet_jelly_writes_only_its_boundary_nodes_and_obj_and_ply_agree() {
    let ws = Workspace::new();
    let scene = "[simulation]\nframes = 2\nsubsteps = 5\n[[object]]\nname = \"jelly\"\n\
                 box = { size = [0.4, 0.4, 0.4], resolution = [6, 6, 6] }\n\
                 translate = [0.0, 0.7, 0.0]\ndensity = 1000.0\ntets = { compliance = 0.0 }\n\
                 stretch = { compliance = 5e-4 }\n";
    ws.run_ok(scene, &["--format", "obj", "--format", "ply"]);
    let obj = read_obj(&ws.out().join("jelly.0002.obj"));
    // 6³ nodes, of which the 4³ inside are dropped.
    assert_eq!(obj.v.len(), 216 - 64);
    let mut used = vec![false; obj.v.len()];
    for face in &obj.faces {
        for corner in face {
            used[corner.0] = true;
        }
    }
    assert!(used.iter().all(|&u| u), "an OBJ vertex no face uses");
    let ply = read_ply(&ws.out().join("jelly.0002.ply"));
    assert_eq!(ply.vertices.len(), obj.v.len());
    for (k, p) in obj.v.iter().enumerate() {
        let q = ["x", "y", "z"].map(|c| ply.float(k, c));
        assert_eq!(p.map(|c| c as f32), q, "vertex {k}");
    }
    // `id` is the node index: increasing, and every boundary node of the lattice.
    let ids: Vec<i32> = (0..ply.vertices.len()).map(|k| ply.int(k, "id")).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    let on_boundary = |n: i32| {
        let (i, j, k) = (n % 6, (n / 6) % 6, n / 36);
        [i, j, k].iter().any(|&c| c == 0 || c == 5)
    };
    assert_eq!(
        ids,
        (0..216).filter(|&n| on_boundary(n)).collect::<Vec<_>>()
    );
    // The same map once, in the stats `run` record.
    let run = &stats(&ws.out())[0];
    let written: Vec<i32> = run["objects"][0]["written_nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_i64().unwrap() as i32)
        .collect();
    assert_eq!(written, ids);
    for (face, (indices, _)) in obj.faces.iter().zip(&ply.faces) {
        let corners: Vec<i32> = face.iter().map(|c| c.0 as i32).collect();
        assert_eq!(&corners, indices);
    }
}

#[test]
fn a_rope_tube_is_a_closed_mesh_that_follows_the_rope() {
    let ws = Workspace::new();
    let scene = "[simulation]\nframes = 6\nsubsteps = 10\n[output]\n\
                 rope_tube = { radius = 0.02, sides = 6 }\n[[object]]\nname = \"rope\"\n\
                 rope = { start = [0.0, 2.0, 0.0], end = [1.0, 2.0, 0.0], segments = 10 }\n\
                 density = 0.1\npin = [0]\nstretch = {}\n";
    ws.run_ok(scene, &["--format", "obj", "--format", "ply"]);
    let plain = Workspace::new();
    plain.run_ok(
        &scene.replace("rope_tube", "# rope_tube"),
        &["--format", "ply"],
    );
    let obj = read_obj(&ws.out().join("rope.0006.obj"));
    assert_eq!(obj.v.len(), 11 * 6 + 2);
    assert_eq!(obj.faces.len(), 10 * 6 + 2 * 6);
    assert!(obj.vn.len() == obj.v.len());
    // Closed: every edge borders two faces, once each way.
    let mut edges: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    for face in &obj.faces {
        for k in 0..face.len() {
            *edges
                .entry((face[k].0, face[(k + 1) % face.len()].0))
                .or_default() += 1;
        }
    }
    for (&(a, b), &n) in &edges {
        assert_eq!((n, edges.get(&(b, a))), (1, Some(&1)), "edge {a}-{b}");
    }
    // Every ring sits at the tube radius around its rope vertex, which moved like the plain
    // rope's; velocities are the rope vertex's.
    let tube = read_ply(&ws.out().join("rope.0006.ply"));
    let rope = read_ply(&plain.out().join("rope.0006.ply"));
    for k in 0..tube.vertices.len() {
        let id = tube.int(k, "id") as usize;
        let p = ["x", "y", "z"].map(|c| tube.float(k, c) as f64);
        let q = ["x", "y", "z"].map(|c| rope.float(id, c) as f64);
        let expected = if k < 66 { 0.02 } else { 0.0 };
        assert!((distance(p, q) - expected).abs() < 1e-5, "vertex {k}");
        for c in ["vx", "vy", "vz"] {
            assert_eq!(tube.float(k, c), rope.float(id, c));
        }
    }
    assert!(rope.float(10, "y") < 1.9, "the rope swung down");
}

#[test]
fn a_misspelt_or_bad_rope_tube_is_refused_with_its_key() {
    let ws = Workspace::new();
    let scene = "[simulation]\nframes = 2\n[output]\nrope_tube = { raduis = 0.02 }\n\
                 [[object]]\nname = \"rope\"\nrope = { start = [0.0, 2.0, 0.0], end = [1.0, 2.0, 0.0], segments = 4 }\n\
                 density = 0.1\nstretch = {}\n";
    let output = ws.run(scene, &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("output.rope_tube.raduis"), "{stderr}");
    assert!(stderr.contains("did you mean `radius`?"), "{stderr}");
    let output = ws.run(
        &scene.replace("raduis = 0.02", "radius = 0.0, sides = 2"),
        &[],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("output.rope_tube.radius: must be > 0"),
        "{stderr}"
    );
    assert!(
        stderr.contains("output.rope_tube.sides: must be from 3"),
        "{stderr}"
    );
    assert!(!ws.out().exists());
}
