//! What two threads can give on this machine, beside what a scene gets from them.
//!
//! The issue's target for the pile is a 2-thread speed-up of 1.7. Whether a scene falls short
//! of it because of the solver (serial stages, waiting at barriers) or because of the machine
//! (two vCPUs that share a physical core's execution units with each other or with other
//! tenants) cannot be told from the scene alone. So each round times, back to back:
//!
//! 1. the *ceiling*: an arithmetic loop with no shared data and no synchronisation (twelve
//!    independent chains of four `f64` lanes, bound by the floating-point units like the
//!    solver's kernels), once on one thread and then twice as much on two; its speed-up is
//!    what compute-bound work with nothing shared gets from the second thread in that minute;
//! 2. `BINARY run SCENE --no-output --quiet` at `--threads 1` and `--threads 2`.
//!
//! Between the two, it times the *lock-step ceilings*: the same two shares cut into pieces of
//! about 2 µs and about 100 µs, the threads meeting at the solver's [`SpinBarrier`] after every
//! piece, as the solver's threads meet after every colour (the pile's colours hold 1–2 µs of
//! work per thread, cloth-256's about 100 µs). The free ceiling's threads wait for each other
//! once, at the end; the lock-step ones after every piece. So a lock-step ceiling also pays
//! what the barriers cost at that grain, and every moment one vCPU runs slower than the other
//! (a host whose other tenants share our vCPUs' cores: docs/benchmarks.md, "Issue 13: the
//! targets on Zen 3 again, on vCPUs that change speed"). The scene's share of a lock-step
//! ceiling is what the solver itself loses: serial stages, uneven shares, data crossing cores.
//!
//! Each round prints the speed-ups and the scene's share of the free ceiling, then the medians
//! with the scene's share of both lock-step ceilings (docs/benchmarks.md, "Issue 13: what two
//! threads can give on this machine").
//!
//! ```sh
//! cargo bench --bench ceiling -- target/release/xpbd-sim scenes/pile.toml 15
//! ```
//!
//! Without arguments it times the ceiling alone, 15 rounds.

#[path = "common/round_trip.rs"]
mod round_trip;

use std::hint::black_box;
use std::process::Command;
use std::time::Instant;
use xpbd_sim::solver::parallel::SpinBarrier;

/// Multiply–add steps per chain in one thread's share: about 0.2 s on the Zen 3 of
/// docs/benchmarks.md.
const STEPS: u64 = 60_000_000;

/// One thread's share of the ceiling loop: `STEPS` steps of twelve independent chains of four
/// `f64` lanes (a multiply and an add each, 6 cycles of latency a step on Zen 3, so twelve
/// chains keep its two multiply and two add pipes busy), in AVX2 registers where the CPU has
/// them, as the solver's kernels run (`SimdPath::chosen`); the same arithmetic in plain
/// `f64` arrays otherwise.
fn chains(steps: u64) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { chains_avx2(steps) };
    }
    let mut acc: [[f64; 4]; 12] = std::array::from_fn(|k| [1.0 + 0.01 * k as f64; 4]);
    for step in 0..steps {
        let add = 1e-9 * step as f64;
        for chain in &mut acc {
            for value in chain {
                *value = *value * 0.999_999_9 + add;
            }
        }
    }
    acc.iter().flatten().sum()
}

/// [`chains`] in AVX2 registers.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,avx2")]
unsafe fn chains_avx2(steps: u64) -> f64 {
    use std::arch::x86_64::*;
    let factor = _mm256_set1_pd(0.999_999_9);
    let mut acc: [__m256d; 12] = std::array::from_fn(|k| _mm256_set1_pd(1.0 + 0.01 * k as f64));
    for step in 0..steps {
        let add = _mm256_set1_pd(1e-9 * step as f64);
        for chain in &mut acc {
            *chain = _mm256_add_pd(_mm256_mul_pd(*chain, factor), add);
        }
    }
    let mut lanes = [0.0; 4];
    let sum = acc
        .iter()
        .fold(_mm256_setzero_pd(), |s, &c| _mm256_add_pd(s, c));
    // SAFETY: `lanes` holds four `f64`.
    unsafe { _mm256_storeu_pd(lanes.as_mut_ptr(), sum) };
    lanes.iter().sum()
}

/// Seconds for one share on one thread, and for two shares on two threads that meet once, at
/// the end (a lock-step ceiling of one piece).
fn ceiling_round() -> (f64, f64) {
    let start = Instant::now();
    black_box(chains(black_box(STEPS)));
    let one = start.elapsed().as_secs_f64();
    (one, lock_step_seconds(STEPS))
}

/// Multiply–add steps between two barriers of the lock-step ceilings, with the work a piece
/// holds on the Zen 3 of docs/benchmarks.md (`STEPS` take about 0.2 s there).
const PIECES: [(&str, u64); 2] = [("2 µs", 600), ("100 µs", 30_000)];

/// Seconds for two shares on two threads cut into pieces of `piece` steps, the threads
/// meeting at a barrier after each piece.
fn lock_step_seconds(piece: u64) -> f64 {
    let barrier = SpinBarrier::new(2);
    let share = || {
        for _ in 0..STEPS / piece {
            black_box(chains(black_box(piece)));
            barrier.wait();
        }
    };
    let start = Instant::now();
    std::thread::scope(|scope| {
        scope.spawn(share);
        share();
    });
    start.elapsed().as_secs_f64()
}

/// Wall seconds of `binary run scene` at `threads`, or `None` if it failed.
fn scene_seconds(binary: &str, scene: &str, threads: u32) -> Option<f64> {
    let out = std::env::temp_dir().join(format!("xpbd-ceiling-{threads}"));
    let start = Instant::now();
    let status = Command::new(binary)
        .args(["run", scene, "--no-output", "--quiet", "--threads"])
        .arg(threads.to_string())
        .arg("--out")
        .arg(&out)
        .status()
        .ok()?;
    let seconds = start.elapsed().as_secs_f64();
    status.success().then_some(seconds)
}

/// Prints `name: median M (range low–high)`.
fn print_median(name: &str, values: &mut [f64]) {
    let middle = median(values);
    let (low, high) = (values[0], values[values.len() - 1]);
    println!("{name}: median {middle:.2} (range {low:.2}–{high:.2})");
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        0.5 * (values[n / 2 - 1] + values[n / 2])
    }
}

/// The command line: the scene's binary and file, if given, and the number of rounds.
fn parse_args() -> (Option<(String, String)>, usize) {
    // `cargo bench` passes `--bench`; the rest are ours.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let scene = match &args[..] {
        [] => None,
        [binary, scene] | [binary, scene, _] => Some((binary.clone(), scene.clone())),
        _ => {
            eprintln!("usage: cargo bench --bench ceiling -- [BINARY SCENE [ROUNDS]]");
            std::process::exit(2);
        }
    };
    let rounds: usize = match args.get(2).map(|r| r.parse()) {
        None => 15,
        Some(Ok(r)) if r > 0 => r,
        Some(_) => {
            eprintln!("ROUNDS must be a positive whole number");
            std::process::exit(2);
        }
    };
    (scene, rounds)
}

/// Every round's figures, for the medians at the end.
struct Rounds {
    /// The arithmetic loop alone on one thread, seconds.
    ones: Vec<f64>,
    /// The free ceiling's speed-ups.
    ceilings: Vec<f64>,
    /// The lock-step speed-ups, one list per entry of [`PIECES`].
    lock_step_speedups: Vec<Vec<f64>>,
    /// The scene's 2-thread speed-ups.
    speedups: Vec<f64>,
    /// The scene's speed-up as a share of the free ceiling, then of each lock-step ceiling.
    scene_shares: Vec<Vec<f64>>,
}

impl Rounds {
    fn new() -> Rounds {
        Rounds {
            ones: Vec::new(),
            ceilings: Vec::new(),
            lock_step_speedups: vec![Vec::new(); PIECES.len()],
            speedups: Vec::new(),
            scene_shares: vec![Vec::new(); 1 + PIECES.len()],
        }
    }

    /// Runs one round (the ceilings, then the scene if there is one) and returns its row.
    fn run(&mut self, round: usize, scene: Option<(&str, &str)>) -> String {
        let (one, two) = ceiling_round();
        self.ones.push(one);
        let ceiling = 2.0 * one / two;
        self.ceilings.push(ceiling);
        let mut row = format!("| {round} | {one:.3} | {two:.3} | {ceiling:.2} |");
        let mut round_ceilings = vec![ceiling];
        for (at_piece, (_, piece)) in self.lock_step_speedups.iter_mut().zip(PIECES) {
            let lock_step = 2.0 * one / lock_step_seconds(piece);
            at_piece.push(lock_step);
            round_ceilings.push(lock_step);
            row += &format!(" {lock_step:.2} |");
        }
        let Some((binary, scene)) = scene else {
            return row + " | | | |";
        };
        let times = (
            scene_seconds(binary, scene, 1),
            scene_seconds(binary, scene, 2),
        );
        let (Some(t1), Some(t2)) = times else {
            return row + " failed | failed | | |";
        };
        let speedup = t1 / t2;
        self.speedups.push(speedup);
        for (shares, reference) in self.scene_shares.iter_mut().zip(&round_ceilings) {
            shares.push(speedup / reference);
        }
        row + &format!(
            " {t1:.3} | {t2:.3} | {speedup:.2} | {:.2} |",
            speedup / ceiling
        )
    }

    /// Prints the pieces' lengths on this host and the medians of every list.
    fn print_summary(mut self) {
        // The pieces' labels are their length on the Zen 3 of docs/benchmarks.md; say this
        // host's.
        let one = median(&mut self.ones);
        for (label, piece) in PIECES {
            let micros = one / (STEPS / piece) as f64 * 1e6;
            println!("a \"{label}\" piece: {piece} steps, {micros:.1} µs on one thread here");
        }
        print_median("ceiling speed-up", &mut self.ceilings);
        for (at_piece, (label, _)) in self.lock_step_speedups.iter_mut().zip(PIECES) {
            print_median(&format!("lock-step {label} speed-up"), at_piece);
        }
        if !self.speedups.is_empty() {
            print_median("scene speed-up", &mut self.speedups);
            print_median("scene / ceiling", &mut self.scene_shares[0]);
            for (shares, (label, _)) in self.scene_shares[1..].iter_mut().zip(PIECES) {
                print_median(&format!("scene / lock-step {label}"), shares);
            }
        }
    }
}

fn main() {
    let (scene, rounds) = parse_args();
    let scene = scene.as_ref().map(|(b, s)| (b.as_str(), s.as_str()));
    round_trip::print_machine_state(" before");
    let lock_step_heads: String = PIECES
        .iter()
        .map(|(label, _)| format!(" lock-step {label} speed-up |"))
        .collect();
    println!("| round | ceiling 1 thread s | ceiling 2 threads s (2× work) | ceiling speed-up |{lock_step_heads} scene 1 thread s | scene 2 threads s | scene speed-up | scene / ceiling |");
    println!("|{}", " --- |".repeat(8 + PIECES.len()));
    let mut figures = Rounds::new();
    for round in 1..=rounds {
        println!("{}", figures.run(round, scene));
    }
    println!();
    figures.print_summary();
    round_trip::print_machine_state(" after");
}
