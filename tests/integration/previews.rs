//! Preview images (SPEC §5): `output.preview` writes a PNG every N frames during the run, and
//! `xpbd-sim preview DIR` remakes the same bytes from the cache.

use crate::common::*;
use std::process::Command;

const SCENE: &str = r#"
[simulation]
frames = 9
substeps = 10
[output]
formats = ["ply"]
preview = { every = 4, size = [160, 90] }
[[object]]
name = "flag"
grid = { size = [1.0, 1.0], resolution = [8, 8] }
translate = [0.0, 1.0, 0.0]
density = 0.2
pin = [0, 7]
stretch = { compliance = 0.0 }
[[collider]]
name = "floor"
shape = "plane"
point = [0.0, 0.0, 0.0]
normal = [0.0, 1.0, 0.0]
[[collider]]
name = "ball"
shape = "sphere"
center = [0.0, 0.5, 0.0]
radius = 0.25
"#;

fn decode(bytes: &[u8]) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    (info.width, info.height, pixels)
}

fn preview(args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .arg("preview")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_run_writes_previews_and_preview_dir_remakes_the_same_bytes() {
    let ws = Workspace::new();
    ws.run_ok(SCENE, &[]);
    let dir = ws.out().join("preview");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut names = names;
    names.sort();
    assert_eq!(
        names,
        ["scene.0001.png", "scene.0005.png", "scene.0009.png"]
    );
    let first = std::fs::read(dir.join("scene.0001.png")).unwrap();
    let last = std::fs::read(dir.join("scene.0009.png")).unwrap();
    let (width, height, pixels) = decode(&last);
    assert_eq!((width, height), (160, 90));
    // Something is drawn beyond the backdrop: many distinct colours.
    let mut colours: Vec<&[u8]> = pixels.chunks(3).collect();
    colours.sort_unstable();
    colours.dedup();
    assert!(colours.len() > 50, "{} colours", colours.len());
    assert_ne!(first, last, "the cloth moved between frame 1 and 9");

    std::fs::remove_dir_all(&dir).unwrap();
    let out = ws.out();
    let remade = preview(&[out.to_str().unwrap(), "--sheet"]);
    assert!(
        remade.status.success(),
        "{}",
        String::from_utf8_lossy(&remade.stderr)
    );
    assert_eq!(std::fs::read(dir.join("scene.0001.png")).unwrap(), first);
    assert_eq!(std::fs::read(dir.join("scene.0009.png")).unwrap(), last);
    let (w, h, _) = decode(&std::fs::read(dir.join("scene.sheet.png")).unwrap());
    assert!(w > 160 && h > 90, "a sheet of three tiles: {w} x {h}");
}

#[test]
fn preview_refuses_what_is_not_a_cache_or_a_bad_size() {
    let ws = Workspace::new();
    let empty = ws.path("empty");
    std::fs::create_dir(&empty).unwrap();
    assert_refused(
        &preview(&[empty.to_str().unwrap()]),
        "not an xpbd-sim cache",
        "no stats log",
    );
    ws.run_ok(SCENE, &[]);
    let out = ws.out();
    let bad = preview(&[out.to_str().unwrap(), "--size", "8", "90"]);
    assert_refused(&bad, "--size", "a tiny preview");
    let fresh = Workspace::new();
    let bad = fresh.run(&SCENE.replace("every = 4", "every = 0"), &[]);
    assert_refused(&bad, "output.preview.every", "every = 0");
}
