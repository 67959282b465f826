//! How long two threads take to hand a cache line back and forth: printed beside every
//! two-thread figure, because it decides them on a machine whose two vCPUs the host moves
//! between cores that share a cache and cores that do not (docs/benchmarks.md, "Issue 13: two
//! states of this machine": about 50 ns against about 400 ns a round trip there).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// One atomic alone on its cache lines (128 bytes: adjacent-line prefetch pairs them).
#[repr(align(128))]
struct Line(AtomicU64);

/// Nanoseconds per round trip of a flag between two threads, the median of 5 runs of
/// 100 000: each thread waits for the other's number and answers with the next.
pub fn core_round_trip_ns() -> f64 {
    const TRIPS: u64 = 100_000;
    let mut runs: Vec<f64> = (0..5)
        .map(|_| {
            let flag = Line(AtomicU64::new(0));
            let wait_for = |value: u64| {
                while flag.0.load(Ordering::Acquire) != value {
                    std::hint::spin_loop();
                }
            };
            let start = Instant::now();
            std::thread::scope(|scope| {
                scope.spawn(|| {
                    for trip in 0..TRIPS {
                        wait_for(2 * trip + 1);
                        flag.0.store(2 * trip + 2, Ordering::Release);
                    }
                });
                for trip in 0..TRIPS {
                    flag.0.store(2 * trip + 1, Ordering::Release);
                    wait_for(2 * trip + 2);
                }
            });
            start.elapsed().as_secs_f64() * 1e9 / TRIPS as f64
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[2]
}
