//! Frame-writer throughput: encodes and writes frames of a 256 × 256 cloth (65 536 vertices,
//! UVs, normals, velocities) in every format into a temporary directory, and prints MB/s. The
//! whole-run formats (MDD, PC2, USD) are timed as a run writes them: spooled every frame and
//! rewritten at every checkpoint (every 10 frames) and at the end.
//! Run: `cargo bench --bench writers` (see docs/benchmarks.md).

use std::time::Instant;
use xpbd_sim::output::frame::{FrameOptions, FrameWriter};
use xpbd_sim::output::stage::StageOptions;
use xpbd_sim::scene::build::build;
use xpbd_sim::scene::load::load;
use xpbd_sim::scene::types::{Format, UpAxis};

fn main() {
    let scene_path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/bench/cloth-256.toml");
    let scene = load(std::path::Path::new(scene_path), &[]).expect("bench scene");
    let model = build(&scene).expect("bench model").model;
    let dir = std::env::temp_dir().join(format!("xpbd-writer-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let frames = 20;
    println!(
        "{:<6} {:>10} {:>12} {:>10}",
        "format", "MB/frame", "ms/frame", "MB/s"
    );
    for format in [
        Format::Obj,
        Format::Ply,
        Format::Mdd,
        Format::Pc2,
        Format::Usd,
        Format::Usda,
    ] {
        let mut writer = FrameWriter::new(FrameOptions {
            dir: dir.clone(),
            formats: vec![format],
            name_template: "{object}.{frame:04}".into(),
            normals: true,
            velocities: true,
            up_axis: UpAxis::Y,
            rope_tube: None,
            start_frame: 0,
            fps: 24.0,
            checkpoint_every: 10,
            frames: frames + 1,
            stage: StageOptions {
                name: "cloth-256".into(),
                fps: 24.0,
                start_frame: 0,
                up_axis: UpAxis::Y,
                rope_width: 0.01,
                colliders: Vec::new(),
                plane_half_size: 2.0,
            },
        });
        let p = &model.particles;
        writer
            .open_run_files(&model.objects, 0)
            .expect("whole-run files");
        writer
            .write_frame(&model.objects, &p.x, &p.v, 0)
            .expect("warm-up frame");
        let start = Instant::now();
        let mut bytes = 0;
        for frame in 1..=frames {
            bytes += writer
                .write_frame(&model.objects, &p.x, &p.v, frame)
                .expect("frame");
        }
        bytes += writer.finish().expect("whole-run files");
        let seconds = start.elapsed().as_secs_f64();
        println!(
            "{:<6} {:>10.2} {:>12.2} {:>10.0}",
            format.extension(),
            bytes as f64 / frames as f64 / 1e6,
            seconds * 1e3 / frames as f64,
            bytes as f64 / seconds / 1e6
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
