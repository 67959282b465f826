//! Constraint-kernel throughput per kind (docs/benchmarks.md, "Issue 13"): projections per
//! second and nanoseconds per projection of each hot kind, batched (eight lanes) against one
//! constraint at a time (the same math with `f64` for the lanes) on one thread, and the
//! solver's path for the kind (`Constraint::BATCHED`) on two (each colour split in whole
//! batches, the threads meeting at a barrier after every colour, as in the solver).
//!
//! Workloads: cloth-256 (stretch and dihedral bending), the same cloth with isometric bending,
//! 64 ropes of 1024 segments (stretch and rope bending) and tets-48k (tets and stretch), each
//! stepped 3 frames by the solver first so the constraints see a bent, moving state. A sweep
//! projects every colour of a kind once, forward; the figure is the median of `ROUNDS` timed
//! runs of `SWEEPS` sweeps. Projection changes the state, so each run starts from a copy.
//!
//! Run: `cargo bench --bench kernels` (`XPBD_KERNEL_SWEEPS=20` by default).

use glam::DVec3;
use std::hint::black_box;
use std::path::Path;
use std::time::Instant;
use xpbd_sim::constraints::batch::project_batches;
use xpbd_sim::constraints::lanes::LANES;
use xpbd_sim::constraints::{project, Constraint};
use xpbd_sim::model::Model;
use xpbd_sim::solver::colouring::ConstraintBlock;
use xpbd_sim::solver::parallel::{batch_share, SharedSlice, SpinBarrier};
use xpbd_sim::solver::step::Solver;

const ROUNDS: usize = 5;

fn model(name: &str, text: &str) -> Model {
    let scene = xpbd_sim::scene::load::load_bytes(Path::new(name), text.as_bytes(), &[])
        .expect("bench scene loads");
    let built = xpbd_sim::scene::build::build(&scene).expect("bench scene builds");
    let mut solver = Solver::new(built.model, 2).expect("solver");
    for _ in 0..3 {
        solver.step_frame().expect("bench scene stays finite");
    }
    solver.model
}

fn cloth(bending: &str) -> String {
    format!(
        r#"
[simulation]
fps = 24.0
frames = 3
substeps = 20
iterations = 1
[output]
dir = "unused"
formats = []
[[object]]
name = "cloth"
grid = {{ size = [1.0, 1.0], resolution = [256, 256] }}
translate = [0.0, 1.0, 0.0]
density = 0.2
pin = [0, 255]
stretch = {{ compliance = 0.0 }}
bending = {{ compliance = 100.0, model = "{bending}" }}
"#
    )
}

fn ropes() -> String {
    let mut text = String::from(
        "[simulation]\nfps = 24.0\nframes = 3\nsubsteps = 20\niterations = 1\n[output]\ndir = \"unused\"\nformats = []\n",
    );
    for k in 0..64 {
        let z = k as f64 * 0.05;
        text += &format!(
            "[[object]]\nname = \"rope{k}\"\nrope = {{ start = [0.0, 2.0, {z}], end = [4.0, 2.0, {z}], segments = 1024 }}\ndensity = 0.1\npin = [0]\nstretch = {{ compliance = 0.0 }}\nbending = {{ compliance = 10.0 }}\n"
        );
    }
    text
}

/// Median seconds of `ROUNDS` runs of `run` (each given a fresh copy of the positions).
fn median_seconds(
    model: &Model,
    constraints: usize,
    mut run: impl FnMut(&mut [DVec3], &mut [f64]),
) -> f64 {
    let mut times: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let mut x = model.particles.x.clone();
            let mut lambda = vec![0.0; constraints];
            let start = Instant::now();
            run(&mut x, &mut lambda);
            black_box(&x);
            start.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[ROUNDS / 2]
}

/// One kind's figures: (batched 1 thread, one-at-a-time 1 thread, the solver's path at 2
/// threads) in ns per projection. The solver's path is batched where `K::BATCHED`.
fn measure<const N: usize, K: Constraint<N>>(
    model: &Model,
    block: &ConstraintBlock<K>,
    sweeps: usize,
) -> [f64; 3] {
    let (x_prev, inv_mass) = (&model.particles.x_prev, &model.particles.inv_mass);
    let terms = model.materials.terms(480.0);
    let terms = terms.as_slice();
    let coloured = block.colours.last().map_or(0, |c| c.end);
    let projections = (coloured * sweeps) as f64;
    let batched = median_seconds(model, block.len(), |x, lambda| {
        for _ in 0..sweeps {
            for colour in &block.colours {
                let (items, lambda) = (&block.items[colour.clone()], &mut lambda[colour.clone()]);
                project_batches(items, lambda, x, x_prev, inv_mass, terms);
            }
        }
    });
    let alone = median_seconds(model, block.len(), |x, lambda| {
        for _ in 0..sweeps {
            for (item, lambda) in block.items[..coloured].iter().zip(lambda.iter_mut()) {
                project(item, lambda, x, x_prev, inv_mass, terms);
            }
        }
    });
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let two = median_seconds(model, block.len(), |x, lambda| {
        let barrier = SpinBarrier::new(2);
        let (x, lambda) = (SharedSlice::new(x), SharedSlice::new(lambda));
        pool.broadcast(|context| {
            let t = context.index();
            for _ in 0..sweeps {
                for colour in &block.colours {
                    let range = batch_share(colour.clone(), LANES, t, 2);
                    // SAFETY: one colour's share per thread: no particle or λ in common.
                    let (mut view, lambda) =
                        unsafe { (x.stage_view(), lambda.range(range.clone())) };
                    let items = &block.items[range];
                    if K::BATCHED {
                        project_batches(items, lambda, &mut view, x_prev, inv_mass, terms);
                    } else {
                        for (item, lambda) in items.iter().zip(lambda) {
                            project(item, lambda, &mut view, x_prev, inv_mass, terms);
                        }
                    }
                    barrier.wait();
                }
            }
        });
    });
    [batched, alone, two].map(|s| s / projections * 1e9)
}

/// Measures one kind of `model` and prints its table row.
fn row<const N: usize, K: Constraint<N>>(
    workload: &str,
    kind: &str,
    model: &Model,
    block: &ConstraintBlock<K>,
    sweeps: usize,
) {
    let [batched, alone, two] = measure(model, block, sweeps);
    let (path, one) = if K::BATCHED {
        ("batched", batched)
    } else {
        ("one at a time", alone)
    };
    println!(
        "| {workload} | {kind} | {} | {batched:.2} | {alone:.2} | {:.2}× | {path} | {two:.2} | {:.0} | {:.2}× |",
        block.len(),
        alone / batched,
        1e3 / two,
        one / two,
    );
}

fn main() {
    let sweeps: usize = std::env::var("XPBD_KERNEL_SWEEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    println!(
        "load: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    println!("{sweeps} sweeps per run, median of {ROUNDS} runs\n");
    println!("| workload | kind | constraints | ns/proj batched, 1 thread | ns/proj one at a time | SIMD speed-up | solver's path | ns/proj solver's path, 2 threads | M proj/s, 2 threads | 2-thread speed-up |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let cloth_dihedral = model("cloth-256.toml", &cloth("dihedral"));
    row(
        "cloth-256",
        "stretch",
        &cloth_dihedral,
        &cloth_dihedral.stretch,
        sweeps,
    );
    row(
        "cloth-256",
        "dihedral",
        &cloth_dihedral,
        &cloth_dihedral.bending,
        sweeps,
    );
    let cloth_isometric = model("cloth-256-isometric.toml", &cloth("isometric"));
    let isometric = &cloth_isometric.isometric_bending;
    row(
        "cloth-256",
        "isometric",
        &cloth_isometric,
        isometric,
        sweeps,
    );
    let ropes = model("ropes.toml", &ropes());
    row(
        "ropes 64×1024",
        "rope bending",
        &ropes,
        &ropes.rope_bending,
        sweeps,
    );
    let tets_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/bench/tets-48k.toml");
    let tets_scene = std::fs::read_to_string(tets_path).expect("tets-48k scene");
    let tets = model("tets-48k.toml", &tets_scene);
    row("tets-48k", "tets", &tets, &tets.tets, sweeps);
    row("tets-48k", "stretch", &tets, &tets.stretch, sweeps);
}
