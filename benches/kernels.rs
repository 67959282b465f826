//! Constraint-kernel throughput per kind (docs/benchmarks.md, "Issue 13"): nanoseconds per
//! projection of each hot kind one constraint at a time and in batches of eight lanes on every
//! SIMD path the CPU has (AVX-512, AVX2, portable), on one thread; then the solver's path
//! ([`SimdPath::chosen`], `XPBD_SIMD` to force one) on two threads (each colour split in
//! whole batches, the threads meeting at a barrier after every colour, as in the solver), in
//! projections per second. The SIMD speed-up is one at a time over the solver's path.
//!
//! Workloads: cloth-256 (stretch and dihedral bending), the same cloth with isometric bending,
//! 64 ropes of 1024 segments (stretch and rope bending) and tets-48k (tets and stretch), each
//! stepped 3 frames by the solver first so the constraints see a bent, moving state. A sweep
//! projects every colour of a kind once, forward; the figure is the median of `ROUNDS` timed
//! runs of `SWEEPS` sweeps, the variants interleaved round by round. Projection changes the
//! state, so each run starts from a copy.
//!
//! The two threads are the calling thread and one worker ([`on_two_threads`]): a pool of two
//! woken after the one-thread runs lost about 11 ms of every run to the operating system's
//! placement of its threads, which is what made short two-thread runs look slow per
//! projection at the last stop.
//!
//! Run: `cargo bench --bench kernels` (`XPBD_KERNEL_SWEEPS=200` by default;
//! `XPBD_KERNEL_ONLY="cloth-256 stretch"` for one row, `XPBD_KERNEL_FRAMES=0` to skip the
//! three warm-up frames, e.g. under valgrind).

#[path = "common/round_trip.rs"]
mod round_trip;

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;
use xpbd_sim::constraints::batch::{project_batches, project_batches_on, SimdPath};
use xpbd_sim::constraints::lanes::LANES;
use xpbd_sim::constraints::weighted::{packed, WeightedPosition};
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
    let frames = std::env::var("XPBD_KERNEL_FRAMES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    for _ in 0..frames {
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

/// A timed run: projects from the given positions and multipliers.
type Run<'a> = &'a mut dyn FnMut(&mut [WeightedPosition], &mut [f64]);

/// Median seconds of `ROUNDS` runs of each of `runs`, the runs interleaved (first, second, …,
/// first, second, …) so a slow spell of the shared machine lands on all of them alike. Every
/// run is given a fresh copy of the positions and zeroed multipliers.
fn median_seconds(model: &Model, constraints: usize, runs: &mut [Run<'_>]) -> Vec<f64> {
    let mut times = vec![Vec::new(); runs.len()];
    for _ in 0..ROUNDS {
        for (run, times) in runs.iter_mut().zip(&mut times) {
            let mut x = packed(&model.particles.x, &model.particles.inv_mass);
            let mut lambda = vec![0.0; constraints];
            let start = Instant::now();
            run(&mut x, &mut lambda);
            black_box(&x);
            times.push(start.elapsed().as_secs_f64());
        }
    }
    times
        .into_iter()
        .map(|mut t| {
            t.sort_by(f64::total_cmp);
            t[ROUNDS / 2]
        })
        .collect()
}

/// Runs `work(0)` on the calling thread and `work(1)` on `helper`'s one worker, and waits for
/// both.
///
/// Not `ThreadPool::broadcast` on a pool of two, as the solver starts its frames: right after
/// a one-thread run has kept the calling thread's core busy, Linux queued both woken workers
/// on the other core and moved one back only at a later periodic balance, so the two took
/// turns on one core, each spinning at every barrier for the other: about 11 ms of every
/// two-thread run (docs/benchmarks.md, "Issue 13: the kernel bench's two threads on two
/// cores"). The solver's frames do not start after such a spell and do not show it; here the
/// calling thread works, so only one worker wakes, on the idle core.
fn on_two_threads(helper: &rayon::ThreadPool, work: impl Fn(usize) + Sync) {
    let work = &work;
    helper.in_place_scope(|scope| {
        scope.spawn(move |_| work(1));
        work(0);
    });
}

/// One kind's figures in ns per projection: one at a time and each available SIMD path on one
/// thread, then the solver's path ([`SimdPath::chosen`]) on two threads.
fn measure<const N: usize, K: Constraint<N>>(
    model: &Model,
    block: &ConstraintBlock<K>,
    sweeps: usize,
) -> (f64, Vec<f64>, f64) {
    let x_prev = &model.particles.x_prev;
    let terms = model.materials.terms(480.0);
    let terms = terms.as_slice();
    let coloured = block.colours.last().map_or(0, |c| c.end);
    let projections = (coloured * sweeps) as f64;
    let batched_on = |path: SimdPath| {
        move |x: &mut [WeightedPosition], lambda: &mut [f64]| {
            for _ in 0..sweeps {
                for colour in &block.colours {
                    let (items, lambda) =
                        (&block.items[colour.clone()], &mut lambda[colour.clone()]);
                    project_batches_on(path, items, lambda, x, x_prev, terms);
                }
            }
        }
    };
    let mut alone = |x: &mut [WeightedPosition], lambda: &mut [f64]| {
        for _ in 0..sweeps {
            for (item, lambda) in block.items[..coloured].iter().zip(lambda.iter_mut()) {
                project(item, lambda, x, x_prev, terms);
            }
        }
    };
    let helper = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let mut two = |x: &mut [WeightedPosition], lambda: &mut [f64]| {
        let barrier = SpinBarrier::new(2);
        let (x, lambda) = (SharedSlice::new(x), SharedSlice::new(lambda));
        on_two_threads(&helper, |t| {
            for _ in 0..sweeps {
                for colour in &block.colours {
                    let range = batch_share(colour.clone(), LANES, t, 2);
                    // SAFETY: one colour's share per thread: no particle or λ in common.
                    let (mut view, lambda) =
                        unsafe { (x.stage_view(), lambda.range(range.clone())) };
                    let items = &block.items[range];
                    project_batches(items, lambda, &mut view, x_prev, terms);
                    barrier.wait();
                }
            }
        });
    };
    let mut paths: Vec<_> = SimdPath::available().into_iter().map(batched_on).collect();
    let mut runs: Vec<Run<'_>> = vec![&mut alone, &mut two];
    runs.extend(paths.iter_mut().map(|run| run as Run<'_>));
    let ns: Vec<f64> = median_seconds(model, block.len(), &mut runs)
        .into_iter()
        .map(|s| s / projections * 1e9)
        .collect();
    (ns[0], ns[2..].to_vec(), ns[1])
}

/// Whether `XPBD_KERNEL_ONLY` (a part of "workload kind", e.g. "cloth-256 stretch") selects
/// this row; every row without it.
fn wanted(row: &str) -> bool {
    std::env::var("XPBD_KERNEL_ONLY").map_or(true, |only| row.contains(&only))
}

/// Measures one kind of `model` and prints its table row.
fn row<const N: usize, K: Constraint<N>>(
    workload: &str,
    kind: &str,
    model: &Model,
    block: &ConstraintBlock<K>,
    sweeps: usize,
) {
    if !wanted(&format!("{workload} {kind}")) {
        return;
    }
    let (alone, paths, two) = measure(model, block, sweeps);
    let available = SimdPath::available();
    let chosen = SimdPath::chosen();
    let one = paths[available
        .iter()
        .position(|&p| p == chosen)
        .expect("chosen is available")];
    let path_columns: String = [SimdPath::Avx512, SimdPath::Avx2, SimdPath::Portable]
        .iter()
        .map(|path| match available.iter().position(|p| p == path) {
            Some(k) => format!(" {:.2} |", paths[k]),
            None => " — |".to_string(),
        })
        .collect();
    println!(
        "| {workload} | {kind} | {} | {alone:.2} |{path_columns} {} | {:.2}× | {two:.2} | {:.0} | {:.2}× |",
        block.len(),
        chosen.name(),
        alone / one,
        1e3 / two,
        one / two,
    );
}

fn main() {
    let sweeps: usize = std::env::var("XPBD_KERNEL_SWEEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    round_trip::print_machine_state("");
    println!("{sweeps} sweeps per run, median of {ROUNDS} runs\n");
    println!("| workload | kind | constraints | ns/proj one at a time | ns/proj AVX-512 | ns/proj AVX2 | ns/proj portable | solver's path | SIMD speed-up | ns/proj solver's path, 2 threads | M proj/s, 2 threads | 2-thread speed-up |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    if wanted("cloth-256 stretch") || wanted("cloth-256 dihedral") {
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
    }
    if wanted("cloth-256 isometric") {
        let cloth_isometric = model("cloth-256-isometric.toml", &cloth("isometric"));
        let isometric = &cloth_isometric.isometric_bending;
        row(
            "cloth-256",
            "isometric",
            &cloth_isometric,
            isometric,
            sweeps,
        );
    }
    if wanted("ropes 64×1024 rope bending") {
        let ropes = model("ropes.toml", &ropes());
        row(
            "ropes 64×1024",
            "rope bending",
            &ropes,
            &ropes.rope_bending,
            sweeps,
        );
    }
    if wanted("tets-48k tets") || wanted("tets-48k stretch") {
        let tets_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/bench/tets-48k.toml");
        let tets_scene = std::fs::read_to_string(tets_path).expect("tets-48k scene");
        let tets = model("tets-48k.toml", &tets_scene);
        row("tets-48k", "tets", &tets, &tets.tets, sweeps);
        row("tets-48k", "stretch", &tets, &tets.stretch, sweeps);
    }
}
