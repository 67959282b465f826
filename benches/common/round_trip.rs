//! How long two threads take to hand a cache line back and forth: printed beside every
//! two-thread figure, because it decides them on a machine whose two vCPUs the host moves
//! between cores that share a cache and cores that do not (docs/benchmarks.md, "Issue 13: two
//! states of this machine": about 50 ns against about 400 ns a round trip there).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One atomic alone on its cache lines (128 bytes: adjacent-line prefetch pairs them).
#[repr(align(128))]
struct Line(AtomicU64);

/// What the calling thread stores when it has made its trips.
const DONE: u64 = u64::MAX;

/// Prints the load average and [`core_round_trip_ns`], each label followed by `when` ("",
/// " before", " after"): the state of the machine a bench's figures were taken in.
pub fn print_machine_state(when: &str) {
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        println!("load{when}: {}", load.trim());
    }
    println!(
        "core-to-core round trip{when}: {:.0} ns",
        core_round_trip_ns()
    );
}

/// Nanoseconds per round trip of a flag between two threads, the median of 5 runs of up to
/// 100 000 trips or 50 ms (whichever comes first: under valgrind, which runs one thread at a
/// time, a trip takes a time slice): each thread waits for the other's number and answers with
/// the next.
pub fn core_round_trip_ns() -> f64 {
    let mut runs: Vec<f64> = (0..5)
        .map(|_| one_run(100_000, Duration::from_millis(50)))
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[2]
}

fn one_run(most: u64, limit: Duration) -> f64 {
    let flag = Line(AtomicU64::new(0));
    let wait_for = |value: u64| loop {
        let now = flag.0.load(Ordering::Acquire);
        if now == value || now == DONE {
            return now;
        }
        std::hint::spin_loop();
    };
    let start = Instant::now();
    let mut trips = 0;
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut trip = 0;
            while wait_for(2 * trip + 1) != DONE {
                flag.0.store(2 * trip + 2, Ordering::Release);
                trip += 1;
            }
        });
        while trips < most && start.elapsed() < limit {
            flag.0.store(2 * trips + 1, Ordering::Release);
            wait_for(2 * trips + 2);
            trips += 1;
        }
        flag.0.store(DONE, Ordering::Release);
    });
    start.elapsed().as_secs_f64() * 1e9 / trips.max(1) as f64
}
