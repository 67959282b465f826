//! Tearing (`stretch.tear_strain`): a heavy sheet hanging from its top row rips; the written
//! mesh splits (more vertices, same faces), PLY carries the input vertex `id` of every vertex,
//! torn pieces fall, and all of it is byte-identical for any thread count.

use crate::common::*;
use xpbd_sim::mesh::ply::read_ply;

const SHEET: &str = "[simulation]\nfps = 24.0\nframes = 24\nsubsteps = 10\n\
    [output]\nformats = [\"obj\", \"ply\"]\n\
    [[object]]\nname = \"sheet\"\ngrid = { size = [1.0, 1.0], resolution = [16, 16] }\n\
    rotate = [90.0, 0.0, 0.0]\ntranslate = [0.0, 1.5, 0.0]\ndensity = 0.5\n\
    pin_region = { min = [-1.0, 1.9, -1.0], max = [1.0, 2.1, 1.0] }\n\
    stretch = { tear_strain = 0.05 }\nbending = { compliance = 10.0 }\n";

#[test]
fn a_heavy_sheet_tears_splits_its_mesh_and_keeps_ids() {
    let ws = Workspace::new();
    ws.run_ok(SHEET, &["--threads", "2"]);
    let frames = frame_records(&ws.out());
    let torn = frames.last().unwrap()["torn_edges"].as_u64().unwrap();
    assert!(torn > 0, "nothing tore");
    assert_eq!(frames[0]["torn_edges"], 0);
    let first = std::fs::read_to_string(ws.out().join("sheet.0001.obj")).unwrap();
    let last = std::fs::read_to_string(ws.out().join("sheet.0024.obj")).unwrap();
    let count = |text: &str, prefix: &str| text.lines().filter(|l| l.starts_with(prefix)).count();
    assert_eq!(count(&first, "v "), 256);
    assert!(count(&last, "v ") > 256, "no vertex was split");
    assert_eq!(
        count(&last, "f "),
        count(&first, "f "),
        "faces are kept, only re-indexed"
    );
    assert_eq!(count(&last, "vt "), count(&last, "v "));
    assert_eq!(count(&last, "vn "), count(&last, "v "));
    // Torn pieces fall far below the pins.
    let lowest = obj_positions(&ws.out().join("sheet.0024.obj"))
        .iter()
        .map(|p| p[1])
        .fold(f64::INFINITY, f64::min);
    assert!(lowest < -0.5, "lowest point {lowest}");

    // PLY: an `id` per vertex, the input vertex each came from.
    let path = ws.out().join("sheet.0024.ply");
    let bytes = std::fs::read(&path).unwrap();
    let header_end = bytes
        .windows(11)
        .position(|w| w == b"end_header\n")
        .unwrap()
        + 11;
    let header = String::from_utf8_lossy(&bytes[..header_end]).to_string();
    assert!(
        header.contains("property float t\nproperty int id\n"),
        "{header}"
    );
    let vertices = read_ply(&path).unwrap().positions.len();
    // x y z nx ny nz vx vy vz s t (11 floats) then the id.
    let stride = 11 * 4 + 4;
    let ids: Vec<i32> = (0..vertices)
        .map(|k| {
            let at = header_end + k * stride + 44;
            i32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
        })
        .collect();
    assert!(
        ids[..256].iter().enumerate().all(|(k, &id)| id == k as i32),
        "originals keep their ids"
    );
    assert!(
        ids[256..].iter().all(|&id| (0..256).contains(&id)),
        "split vertices name their source"
    );
}

#[test]
fn tearing_is_deterministic_for_any_thread_count() {
    let one = Workspace::new();
    one.run_ok(SHEET, &["--threads", "1"]);
    for threads in ["2", "3"] {
        let ws = Workspace::new();
        ws.run_ok(SHEET, &["--threads", threads]);
        for frame in [6, 12, 24] {
            for extension in ["obj", "ply"] {
                let name = format!("sheet.{frame:04}.{extension}");
                let a = std::fs::read(one.out().join(&name)).unwrap();
                let b = std::fs::read(ws.out().join(&name)).unwrap();
                assert!(a == b, "{name} differs with --threads {threads}");
            }
        }
    }
}
