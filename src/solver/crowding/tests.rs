//! The thread-count policy fed made-up legs: windows, trials and their waits.

use super::core_binding::cores_of;
use super::*;

/// A frame's wall time in these tests, s, at any thread count: a power of two.
const FRAME: f64 = 1.0 / 64.0;
/// Frames per window: the fewest whose wall time reaches [`WINDOW_SECONDS`].
const W: usize = 4;
const SUBSTEPS: usize = 16;

/// Feeds `policy` frames of [`SUBSTEPS`] substeps and [`FRAME`] seconds, leg by leg,
/// whose workers waited `share` of their time; returns each frame's legs.
fn frames(policy: &mut ThreadPolicy, count: usize, share: f64) -> Vec<Vec<Leg>> {
    frames_with(policy, count, FRAME, |_| share)
}

/// [`frames`] of `frame_seconds` each, with the share of each leg.
fn frames_with(
    policy: &mut ThreadPolicy,
    count: usize,
    frame_seconds: f64,
    share: impl Fn(Leg) -> f64,
) -> Vec<Vec<Leg>> {
    (0..count)
        .map(|_| {
            let mut legs = Vec::new();
            let mut done = 0;
            while done < SUBSTEPS {
                let leg = policy.next_leg(SUBSTEPS - done);
                let wall = frame_seconds * leg.substeps as f64 / SUBSTEPS as f64;
                policy.observe(leg, wall, wall * leg.threads as f64 * share(leg));
                done += leg.substeps;
                legs.push(leg);
            }
            legs
        })
        .collect()
}

/// The thread count of each frame's first leg.
fn counts(legs: &[Vec<Leg>]) -> Vec<usize> {
    legs.iter().map(|f| f[0].threads).collect()
}

/// The frames that end with a trial.
fn tries(legs: &[Vec<Leg>]) -> Vec<usize> {
    (0..legs.len())
        .filter(|&f| legs[f].iter().any(|leg| leg.trial))
        .collect()
}

#[test]
fn a_window_is_four_test_frames() {
    assert!((W as f64 - 1.0) * FRAME < WINDOW_SECONDS && W as f64 * FRAME >= WINDOW_SECONDS);
}

#[test]
fn alone_on_the_machine_every_frame_runs_on_all_threads() {
    let mut policy = ThreadPolicy::new(2);
    let legs = frames(&mut policy, 1000, 0.07);
    assert!(legs
        .iter()
        .flatten()
        .all(|leg| leg.threads == 2 && !leg.trial));
}

#[test]
fn crowded_later_a_window_lowers_the_count_when_it_is_full() {
    let mut policy = ThreadPolicy::new(2);
    frames(&mut policy, 2 * W, 0.0);
    // Nothing changes before the window is full.
    assert_eq!(counts(&frames(&mut policy, W - 1, 0.45)), vec![2; W - 1]);
    assert_eq!(policy.threads(), 2);
    frames(&mut policy, W, 0.45);
    assert_eq!(policy.threads(), 1);
}

#[test]
fn one_hiccup_in_a_calm_window_decides_nothing() {
    let mut policy = ThreadPolicy::new(2);
    frames(&mut policy, W, 0.0);
    frames(&mut policy, 1, 0.6);
    frames(&mut policy, W - 1, 0.0);
    assert_eq!(policy.threads(), 2);
}

#[test]
fn many_threads_drop_to_what_the_free_cores_hold() {
    let mut policy = ThreadPolicy::new(16);
    frames(&mut policy, W, 1.0 / 3.0);
    assert_eq!(policy.threads(), 10);
    // A share just over the line still takes one thread away.
    let mut policy = ThreadPolicy::new(4);
    frames(&mut policy, W, 0.21);
    assert_eq!(policy.threads(), 3);
}

#[test]
fn tries_that_stay_crowded_come_back_less_and_less_often() {
    let mut policy = ThreadPolicy::new(2);
    let legs = frames(&mut policy, W * 400, 0.45);
    assert!(
        counts(&legs)[W..].iter().all(|&t| t == 1),
        "failed tries keep one thread"
    );
    let tries = tries(&legs);
    // Frames between tries: the windows waited, each of W frames but for the substeps
    // the trial took from the frame it began.
    let gaps: Vec<usize> = tries.windows(2).map(|p| p[1] - p[0]).collect();
    let windows: Vec<usize> = gaps.iter().map(|g| (g + W / 2) / W).collect();
    assert_eq!(&windows[..7], &[4, 8, 16, 32, 64, 64, 64]);
}

#[test]
fn a_calm_try_keeps_the_thread_and_resets_the_wait() {
    let mut policy = ThreadPolicy::new(3);
    frames(&mut policy, W, 0.5);
    assert_eq!(policy.threads(), 1);
    // The cores free up.
    let legs = frames(&mut policy, W * 40, 0.0);
    let tries = tries(&legs);
    assert_eq!(tries.len(), 2, "one try to 2 threads, one to 3, then none");
    assert!(tries[0] <= W * FIRST_PROBE_WINDOWS as usize);
    assert_eq!(counts(&legs)[tries[0] + 1], 2, "the calm try is kept");
    // The first wait again, the window that confirms the try counting as its first.
    let windows = (tries[1] - tries[0] + W / 2) / W;
    assert_eq!(windows, FIRST_PROBE_WINDOWS as usize);
    assert!(
        counts(&legs)[tries[1] + 1..].iter().all(|&t| t == 3),
        "never more than 3"
    );
}

#[test]
fn a_calm_try_that_a_crowded_window_contradicts_waits_longer() {
    let mut policy = ThreadPolicy::new(2);
    frames(&mut policy, W, 0.5);
    // The trial's own leg is calm; whole legs on two threads are crowded.
    let legs = frames_with(&mut policy, W * 40, FRAME, |leg| match leg {
        Leg {
            threads: 2,
            trial: false,
            ..
        } => 0.5,
        _ => 0.0,
    });
    let tries = tries(&legs);
    let gaps: Vec<usize> = (tries.windows(2))
        .map(|p| (p[1] - p[0] + W / 2) / W)
        .collect();
    // Each try runs one window on two threads before it is found out.
    assert_eq!(&gaps[..3], &[1 + 4, 1 + 8, 1 + 16]);
}

#[test]
fn a_window_that_lowers_the_count_drops_the_trial_due() {
    // Frames of a window each: a window closes within a frame's leg before its trial.
    let long = W as f64 * FRAME;
    let mut policy = ThreadPolicy::new(4);
    frames_with(&mut policy, 1, long, |_| 0.5);
    assert_eq!(policy.threads(), 2);
    frames_with(&mut policy, FIRST_PROBE_WINDOWS as usize, long, |_| 0.0);
    assert_eq!(
        policy.next_leg(TRIAL_SUBSTEPS).threads,
        3,
        "a trial of 3 is due"
    );
    let legs = frames_with(&mut policy, 1, long, |_| 0.6);
    assert_eq!(policy.threads(), 1);
    assert!(legs[0].iter().all(|leg| !leg.trial), "{legs:?}");
    // The next try is of one thread more than the count, not of the trial once due.
    let legs = frames_with(&mut policy, 100, long, |_| 0.0);
    let tried: Vec<usize> = (legs.iter().flatten())
        .filter(|leg| leg.trial)
        .map(|leg| leg.threads)
        .collect();
    assert_eq!(&tried[..3], &[2, 3, 4]);
}

#[test]
fn at_one_thread_crowded_windows_still_lead_to_a_try() {
    let mut policy = ThreadPolicy::new(2);
    frames(&mut policy, W, 0.6);
    assert_eq!(policy.threads(), 1);
    // Two busy programs on two cores: one thread waits too, and tries two again.
    let legs = frames(&mut policy, W * FIRST_PROBE_WINDOWS as usize + 1, 0.34);
    assert_eq!(tries(&legs).len(), 1);
}

#[test]
fn one_thread_stays_one() {
    let mut policy = ThreadPolicy::new(1);
    let legs = frames(&mut policy, 100, 0.9);
    assert!(legs
        .iter()
        .flatten()
        .all(|leg| leg.threads == 1 && !leg.trial));
}

/// Runs `count` frames of [`SUBSTEPS`] substeps through `crowding` (adapting), each leg
/// taking `per_substep(threads)` seconds a substep, its workers waiting `share` of their time;
/// returns each frame's count.
fn crowding_frames(
    crowding: &mut Crowding,
    count: usize,
    per_substep: impl Fn(usize) -> f64,
    share: f64,
) -> Vec<usize> {
    (0..count)
        .map(|_| {
            crowding.begin_frame();
            let mut done = 0;
            while done < SUBSTEPS {
                let leg = crowding.next_leg(SUBSTEPS - done);
                let wall = per_substep(leg.threads) * leg.substeps as f64;
                let waited = wall * leg.threads as f64 * share;
                crowding.record_leg(leg, Some(waited), Duration::from_secs_f64(wall));
                done += leg.substeps;
            }
            crowding.end_frame();
            crowding.last_frame().threads
        })
        .collect()
}

/// A crowding of two threads, adapting whether or not this system says how long threads
/// wait (the tests give the waits).
fn adapting_pair() -> Crowding {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build();
    let mut crowding = Crowding::new(&pool.expect("a pool of two"));
    crowding.mode = Mode::Adapting;
    crowding
}

#[test]
fn with_the_cores_free_frames_run_on_fewer_threads_where_fewer_are_faster() {
    let mut crowding = adapting_pair();
    let per_substep = |threads| if threads == 1 { 0.6e-3 } else { 1e-3 };
    let counts = crowding_frames(&mut crowding, 40, per_substep, 0.02);
    // The first frame is not compared; the second starts the comparison (2, 1, 2, 1, 2),
    // which changes to one thread; the check the way back (1, 2) keeps it, given up after
    // its first frame on two threads, 1.67 times as slow.
    assert_eq!(
        counts[..11],
        [2, 2, 1, 2, 1, 2, 1, 2, 1, 1, 1],
        "{counts:?}"
    );
    assert!(counts[8..].iter().all(|&c| c == 1), "{counts:?}");
    assert_eq!(crowding.fewer_frames(), 35);
    assert_eq!(
        (crowding.faster_frames(), crowding.timing_frames()),
        (33, 2)
    );
}

#[test]
fn busy_cores_time_no_thread_count() {
    // Crowded from the start: the crowding policy lowers the count and tries two threads
    // now and then; no frame is compared for speed, though one thread is faster.
    let mut crowding = adapting_pair();
    let per_substep = |threads| if threads == 1 { 0.6e-3 } else { 1e-3 };
    crowding_frames(&mut crowding, 400, per_substep, 0.45);
    assert!(crowding.fewer_frames() > 390, "{}", crowding.fewer_frames());
    assert_eq!((crowding.faster_frames(), crowding.timing_frames()), (0, 0));
    assert_eq!(crowding.speed.cap(), 2);
}

#[test]
fn workers_bound_while_adapting_are_released_at_the_first_crowded_window() {
    let cores = cores_of(0).len();
    // The pool outlives the test's binding: a bound worker must be alive to be bound.
    let pool = rayon::ThreadPoolBuilder::new().num_threads(cores).build();
    let pool = pool.expect("a pool");
    let mut crowding = Crowding::new(&pool);
    crowding.adapt(true);
    // Bound only where the system says how long threads wait (else nothing adapts), with a
    // worker for each of more than one core.
    let adapting = matches!(crowding.mode, Mode::Adapting);
    assert_eq!(
        crowding.binding.is_some(),
        cfg!(target_os = "linux") && adapting && cores > 1
    );
    crowding.mode = Mode::Adapting;
    let per_substep = |_| 1e-3;
    crowding_frames(&mut crowding, 8, per_substep, 0.02);
    assert!(!crowding.policy.crowded_once());
    assert_eq!(
        crowding.binding.is_some(),
        cfg!(target_os = "linux") && adapting && cores > 1
    );
    let bound = crowding.binding.is_some();
    assert!(
        !bound
            || crowding
                .worker_ids
                .iter()
                .all(|&tid| cores_of(tid).len() == 1)
    );
    crowding_frames(&mut crowding, 8, per_substep, 0.45);
    assert!(crowding.policy.crowded_once());
    assert!(crowding.binding.is_none());
    // Released: every worker may run on every core again.
    assert!(crowding
        .worker_ids
        .iter()
        .all(|&tid| cores_of(tid).len() == cores));
    // Once crowded, a later `adapt` binds nothing again.
    crowding.adapt(true);
    assert!(crowding.binding.is_none());
}
