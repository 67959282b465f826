//! Legs of a frame on fewer threads while other programs hold the cores.
//!
//! The substep runs in lockstep ([`super::parallel`]): its threads meet at a barrier some 80
//! times per substep. When another program runs on a core one of the workers is on, that
//! worker waits for the core, a time slice of the kernel's scheduler at a time (milliseconds),
//! and every other worker waits for it at the next barrier. A substep's share of work is a
//! fraction of a millisecond, so a frame then costs what the slices cost, not what the work
//! costs. Measured on this project's 2-core machine (docs/benchmarks.md, "Issue 13: frames on
//! fewer threads while the cores are busy"): `scenes/pile.toml` took 0.34–0.50 s at 2 threads
//! with the machine to itself, 0.55 s at 1 thread, and 1.4–5.2 s at 2 threads beside one busy
//! program (`yes > /dev/null`).
//!
//! So the solver runs a frame's substeps in *legs* ([`Leg`]), each on the first `n` of the
//! pool's workers. Linux counts, for every thread, how long it was ready to run but waited
//! for a core (the second field of `/proc/self/task/<tid>/schedstat`, "run delay").
//! [`Crowding`] reads it for each worker of a leg before and after the leg and hands the sums
//! to a [`ThreadPolicy`]:
//!
//! - **Windows.** Legs are pooled into windows of at least [`WINDOW_SECONDS`] of wall time,
//!   so one frame's hiccup (the kernel spreading new threads over the cores, the writer
//!   thread's burst) decides nothing. A window's *waiting share* is the workers' waits over
//!   their time (wall × threads).
//! - **Crowded** is a share above [`CROWDED_SHARE`]. Alone on the machine, with its files
//!   written, a whole run's share was 1–7 % for most shipped scenes; beside one busy program on
//!   two cores, about 45 %. A crowded window at `n > 1` threads lowers them to
//!   `⌊n (1 − share)⌋`, at least one fewer: the threads the free cores can hold.
//! - **Trials.** After [`FIRST_PROBE_WINDOWS`] windows at a count below the pool's, the last
//!   [`TRIAL_SUBSTEPS`] substeps of a frame run on one thread more, judged on their own (in a
//!   scene that tears, which runs a leg per substep, the trial is its second-last substep). A
//!   crowded trial doubles the wait before the next, up to [`LAST_PROBE_WINDOWS`]. A calm one
//!   is kept, and the window after it confirms it (the wait starts again from the first) or,
//!   crowded, lowers the count and doubles the wait. Windows at one thread count towards the
//!   next trial whether crowded or not, since there is nothing lower to go to. Trials run at
//!   the end of a frame: at its start this run's writer thread is busiest with the frame
//!   before, and trials there counted its work as crowding.
//! - **Speed.** With the cores free (the policy at its top count, no trial due), [`speed`]
//!   times frames on half (or twice) the threads in use against frames on that count, and
//!   keeps the other count when both its frames are more than a tenth faster: small scenes
//!   spend more time meeting than working on two threads. The count it keeps is the policy's
//!   top count from then on.
//! - **Binding.** While adapting, with a worker for each core the process may use, each
//!   worker is bound to a core of its own until the first crowded window or trial
//!   ([`core_binding`]): woken together at a frame's start, two workers otherwise shared one
//!   core now and then until the kernel moved one, and their waits read as crowding.
//!
//! Every stage splits its work so that its result is the same for any thread count, so the
//! count may change between legs without changing a byte of the output. Off Linux (no such
//! counter) every leg runs on all the pool's threads.

use core_binding::CoreBinding;
use speed::SpeedCap;
use std::time::Duration;

mod core_binding;
mod speed;

/// A window of legs holds at least this much wall time, seconds.
pub const WINDOW_SECONDS: f64 = 0.05;
/// A window whose workers waited for a core more than this share of their time is crowded.
pub const CROWDED_SHARE: f64 = 0.2;
/// Substeps of a trial leg.
pub const TRIAL_SUBSTEPS: usize = 2;
/// Windows at a lowered count before the first trial of one thread more.
pub const FIRST_PROBE_WINDOWS: u32 = 2;
/// The longest wait between trials, in windows.
pub const LAST_PROBE_WINDOWS: u32 = 64;

/// A run of consecutive substeps on one thread count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leg {
    /// How many of the pool's workers run it: the first `threads`.
    pub threads: usize,
    /// How many substeps it runs.
    pub substeps: usize,
    /// Whether the leg is a trial of one thread more, judged on its own.
    pub trial: bool,
}

/// How many of the pool's threads the next leg runs on, from the legs measured so far.
#[derive(Debug, Clone)]
pub struct ThreadPolicy {
    /// The pool's threads: never more.
    most: usize,
    /// The count of legs that are not trials.
    threads: usize,
    /// Whether a trial of one thread more than `threads` is due.
    trial_due: bool,
    window: Window,
    /// Windows measured at `threads` since it last changed.
    windows_at_count: u32,
    /// Windows to wait at a lowered count before trying one thread more.
    probe_after: u32,
    /// Whether `threads` was raised by a calm trial and no window has confirmed it yet.
    probing: bool,
    /// Whether a window or a trial has been crowded in this run.
    crowded_once: bool,
}

#[derive(Debug, Clone, Copy, Default)]
struct Window {
    wall: f64,
    thread_time: f64,
    waited: f64,
}

impl Window {
    fn add(&mut self, threads: usize, wall: f64, waited: f64) {
        self.wall += wall;
        self.thread_time += wall * threads as f64;
        self.waited += waited;
    }

    /// The workers' wait for a core as a share of their time.
    fn share(&self) -> f64 {
        self.waited / self.thread_time.max(f64::MIN_POSITIVE)
    }
}

impl ThreadPolicy {
    /// Starts at all `most` threads.
    pub fn new(most: usize) -> Self {
        let most = most.max(1);
        ThreadPolicy {
            most,
            threads: most,
            trial_due: false,
            window: Window::default(),
            windows_at_count: 0,
            probe_after: FIRST_PROBE_WINDOWS,
            probing: false,
            crowded_once: false,
        }
    }

    /// Whether a window or a trial has been crowded so far, at any count.
    pub fn crowded_once(&self) -> bool {
        self.crowded_once
    }

    /// Whether the cores are free as far as the policy knows: all the threads, no trial due.
    fn settled(&self) -> bool {
        self.threads == self.most && !self.trial_due
    }

    /// The count of legs that are not trials.
    #[cfg(test)]
    fn threads(&self) -> usize {
        self.threads
    }

    /// The next leg, of at most `remaining` substeps, the rest of the frame or of the
    /// substeps run between topology changes. A trial takes the last [`TRIAL_SUBSTEPS`] of
    /// them: this run's writer thread is busiest with the frame before at the start of a
    /// frame, and a trial there measured its wait as crowding.
    pub fn next_leg(&self, remaining: usize) -> Leg {
        match self.trial_due {
            true if remaining <= TRIAL_SUBSTEPS => Leg {
                threads: self.threads + 1,
                substeps: remaining,
                trial: true,
            },
            true => Leg {
                threads: self.threads,
                substeps: remaining - TRIAL_SUBSTEPS,
                trial: false,
            },
            false => Leg {
                threads: self.threads,
                substeps: remaining,
                trial: false,
            },
        }
    }

    /// Takes a leg run as [`Self::next_leg`] said: its wall time and the time its workers
    /// waited for a core, summed over them, in seconds.
    pub fn observe(&mut self, leg: Leg, wall: f64, waited: f64) {
        if leg.trial {
            return self.judge_trial(leg.threads, wall, waited);
        }
        self.window.add(leg.threads, wall, waited);
        if self.window.wall < WINDOW_SECONDS {
            return;
        }
        let share = self.window.share();
        self.window = Window::default();
        self.crowded_once |= share > CROWDED_SHARE;
        if share > CROWDED_SHARE && self.threads > 1 {
            if self.probing {
                self.wait_longer();
            }
            self.set(fit(self.threads, share));
            return;
        }
        if self.probing {
            self.probe_after = FIRST_PROBE_WINDOWS;
            self.probing = false;
        }
        if self.threads < self.most {
            self.windows_at_count += 1;
            self.trial_due = self.windows_at_count >= self.probe_after;
        }
    }

    /// A trial leg on `threads`, one more than the count: kept if calm (a window then
    /// confirms it), else the next trial waits twice as long.
    fn judge_trial(&mut self, threads: usize, wall: f64, waited: f64) {
        self.trial_due = false;
        let mut trial = Window::default();
        trial.add(threads, wall, waited);
        if trial.share() > CROWDED_SHARE {
            self.crowded_once = true;
            self.wait_longer();
            self.windows_at_count = 0;
        } else {
            self.set(threads);
            self.probing = true;
        }
    }

    fn wait_longer(&mut self) {
        self.probe_after = (2 * self.probe_after).min(LAST_PROBE_WINDOWS);
    }

    /// Never more than `most` threads from now on (the count that runs the scene fastest,
    /// [`speed`]); a count above it, or at the old top, moves to it.
    fn set_most(&mut self, most: usize) {
        let most = most.max(1);
        if most != self.most {
            let at_top = self.threads == self.most;
            self.most = most;
            if at_top || self.threads > most {
                self.set(most);
            }
        }
    }

    /// Moves to `threads`: a new count starts its windows afresh, and a trial due for the
    /// old one is dropped.
    fn set(&mut self, threads: usize) {
        self.threads = threads;
        self.window = Window::default();
        self.windows_at_count = 0;
        self.trial_due = false;
        self.probing = false;
    }
}

/// `⌊threads (1 − share)⌋`, at least one thread and one fewer than `threads`: the threads
/// that the cores left free by a waiting `share` hold.
fn fit(threads: usize, share: f64) -> usize {
    let fit = (threads as f64 * (1.0 - share)).floor() as usize;
    fit.clamp(1, threads.saturating_sub(1).max(1))
}

/// What one frame ran on.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FrameThreads {
    /// Worker threads that ran the frame: the fewest its legs ran on, leaving out a trial of
    /// one thread more (its last [`TRIAL_SUBSTEPS`] substeps) unless the trial was the whole
    /// frame.
    pub threads: usize,
    /// How long the workers waited for a core during the frame, summed over them,
    /// milliseconds; `None` where the operating system does not say.
    pub core_wait_ms: Option<f64>,
}

/// Whether the count follows the free cores.
#[derive(Debug, Clone, Copy)]
enum Mode {
    /// Every leg on this many threads.
    Fixed(usize),
    Adapting,
    /// Legs of at most `leg` substeps on 1, 2, … up to all the threads in turn, `legs_run`
    /// so far (tests of the output's independence from the count).
    #[cfg(test)]
    Cycling {
        leg: usize,
        legs_run: usize,
    },
}

/// The run's thread count leg by leg: the policy, and the clock it reads.
#[derive(Debug)]
pub struct Crowding {
    policy: ThreadPolicy,
    mode: Mode,
    clock: Option<CoreWaitClock>,
    /// Each worker's thread id, by its index in the pool (none off Linux).
    worker_ids: Vec<i32>,
    /// The workers bound to cores of their own, while adapting and until the first crowded
    /// window or trial ([`core_binding`]).
    binding: Option<CoreBinding>,
    /// The frame being run, then the last one run: no threads and no wait before the first.
    frame: FrameThreads,
    /// The count of the frame's trial, if it ran one.
    frame_trial: Option<usize>,
    /// Frames run on fewer than the pool's threads.
    fewer_frames: u64,
    /// Of those, frames run on the speed cap with the cores free: fewer threads measured
    /// faster ([`speed`]).
    faster_frames: u64,
    /// Of those, frames of a comparison timing fewer threads with the cores free.
    timing_frames: u64,
    /// The count that runs the scene fastest with the cores free; the crowding policy never
    /// goes above it.
    speed: SpeedCap,
    frame_speed: FrameSpeed,
}

/// What [`SpeedCap`] takes of the frame being run. The cap changes only between frames, so
/// its [`SpeedCap::frame_threads`] is the frame's count throughout.
#[derive(Debug, Clone, Copy, Default)]
struct FrameSpeed {
    /// Whether the cores have been free and the legs on the frame's count so far.
    free: bool,
    /// The legs' wall time, s, substeps, and their workers' time and wait for a core, s.
    wall: f64,
    substeps: usize,
    thread_time: f64,
    waited: f64,
}

impl Crowding {
    /// For `pool`'s workers, at first not adapting (every leg on all of them).
    pub fn new(pool: &rayon::ThreadPool) -> Self {
        let threads = pool.current_num_threads();
        let worker_ids = worker_ids(pool);
        let mut crowding = Crowding {
            policy: ThreadPolicy::new(threads),
            mode: Mode::Fixed(threads),
            clock: CoreWaitClock::for_workers(&worker_ids),
            worker_ids,
            binding: None,
            frame: FrameThreads::default(),
            frame_trial: None,
            fewer_frames: 0,
            faster_frames: 0,
            timing_frames: 0,
            speed: SpeedCap::new(threads),
            frame_speed: FrameSpeed::default(),
        };
        crowding.begin_frame();
        crowding
    }

    /// Lets the count follow the cores left free, where the operating system says how long
    /// threads wait for a core (or not: every leg on all the threads).
    ///
    /// While adapting, and until the first crowded window or trial, the workers are bound to
    /// cores of their own ([`core_binding`]).
    pub fn adapt(&mut self, adapts: bool) {
        self.mode = match adapts && self.clock.is_some() {
            true => Mode::Adapting,
            false => Mode::Fixed(self.speed.most()),
        };
        let bind = matches!(self.mode, Mode::Adapting) && !self.policy.crowded_once();
        match bind {
            true if self.binding.is_none() => {
                self.binding = CoreBinding::bind(&self.worker_ids);
            }
            true => {}
            false => self.release_cores(),
        }
    }

    /// Lets the workers run on any core again, if they are bound.
    fn release_cores(&mut self) {
        if let Some(binding) = self.binding.take() {
            binding.release(&self.worker_ids);
        }
    }

    /// The next leg, of at most `remaining` substeps.
    pub fn next_leg(&self, remaining: usize) -> Leg {
        match self.mode {
            Mode::Fixed(threads) => Leg {
                threads,
                substeps: remaining,
                trial: false,
            },
            // With the cores free, the policy is at the speed cap, which a comparison's frame
            // on the other count leaves.
            Mode::Adapting => match self.policy.next_leg(remaining) {
                leg if leg.trial || !self.frame_speed.free => leg,
                leg => Leg {
                    threads: self.speed.frame_threads(),
                    ..leg
                },
            },
            #[cfg(test)]
            Mode::Cycling { leg, legs_run } => Leg {
                threads: 1 + legs_run % self.speed.most(),
                substeps: remaining.min(leg),
                trial: false,
            },
        }
    }

    /// Starts the figures of a frame.
    pub fn begin_frame(&mut self) {
        self.frame = FrameThreads {
            threads: 0,
            core_wait_ms: self.clock.as_ref().map(|_| 0.0),
        };
        self.frame_trial = None;
        self.frame_speed = FrameSpeed {
            free: self.policy.settled(),
            ..FrameSpeed::default()
        };
    }

    /// The workers' summed wait for a core so far, nanoseconds, to pass to
    /// [`Self::end_leg`].
    pub fn begin_leg(&self, leg: Leg) -> Option<u64> {
        self.clock.as_ref()?.waited(leg.threads)
    }

    /// Closes `leg`, begun with `waited_before` (from [`Self::begin_leg`]), which took
    /// `wall`.
    pub fn end_leg(&mut self, leg: Leg, waited_before: Option<u64>, wall: Duration) {
        let waited_after = self.clock.as_ref().and_then(|c| c.waited(leg.threads));
        let waited = match (waited_before, waited_after) {
            (Some(before), Some(after)) => Some(after.saturating_sub(before) as f64 * 1e-9),
            _ => None,
        };
        self.record_leg(leg, waited, wall);
    }

    /// Closes `leg`, whose workers waited `waited` seconds for a core (if known) and which
    /// took `wall`.
    fn record_leg(&mut self, leg: Leg, waited: Option<f64>, wall: Duration) {
        let frame_threads = self.speed.frame_threads();
        let speed = &mut self.frame_speed;
        speed.wall += wall.as_secs_f64();
        speed.substeps += leg.substeps;
        speed.thread_time += wall.as_secs_f64() * leg.threads as f64;
        speed.waited += waited.unwrap_or(0.0);
        speed.free &= !leg.trial && leg.threads == frame_threads;
        let frame = &mut self.frame;
        match leg.trial {
            true => self.frame_trial = Some(leg.threads),
            false if frame.threads == 0 => frame.threads = leg.threads,
            false => frame.threads = frame.threads.min(leg.threads),
        }
        frame.core_wait_ms = (frame.core_wait_ms.zip(waited)).map(|(sum, s)| sum + s * 1e3);
        match (self.mode, waited) {
            (Mode::Adapting, Some(waited)) => {
                self.policy.observe(leg, wall.as_secs_f64(), waited);
                if self.policy.crowded_once() {
                    self.release_cores();
                }
            }
            #[cfg(test)]
            (Mode::Cycling { leg, legs_run }, _) => {
                self.mode = Mode::Cycling {
                    leg,
                    legs_run: legs_run + 1,
                }
            }
            _ => {}
        }
    }

    /// Closes the figures of a frame: its count is the fewest threads its legs ran on, but
    /// for a trial, unless the trial was the whole frame.
    pub fn end_frame(&mut self) {
        if self.frame.threads == 0 {
            self.frame.threads = self.frame_trial.unwrap_or(0);
        }
        let speed = self.frame_speed;
        let calm = speed.waited <= CROWDED_SHARE * speed.thread_time;
        let free = speed.free && calm && self.policy.settled();
        // Counted before the cap takes this frame, which may move it.
        if self.frame.threads < self.speed.most() {
            self.fewer_frames += 1;
            match (free, self.speed.frame_threads() == self.speed.cap()) {
                (true, true) => self.faster_frames += 1,
                (true, false) => self.timing_frames += 1,
                (false, _) => {}
            }
        }
        if let Mode::Adapting = self.mode {
            self.speed.observe_frame(free, speed.wall, speed.substeps);
            self.policy.set_most(self.speed.cap());
        }
    }

    /// What the last frame ran on.
    pub fn last_frame(&self) -> FrameThreads {
        self.frame
    }

    /// Frames run on fewer than the pool's threads so far.
    pub fn fewer_frames(&self) -> u64 {
        self.fewer_frames
    }

    /// Of [`Self::fewer_frames`], those run on fewer because fewer measured faster.
    pub fn faster_frames(&self) -> u64 {
        self.faster_frames
    }

    /// Of [`Self::fewer_frames`], those that timed fewer threads with the cores free.
    pub fn timing_frames(&self) -> u64 {
        self.timing_frames
    }

    /// Runs every leg from now on the next of 1, 2, … up to all the threads in turn, at most
    /// `leg` substeps long.
    #[cfg(test)]
    pub(crate) fn cycle(&mut self, leg: usize) {
        assert!(leg > 0, "a leg runs at least one substep");
        let legs_run = match self.mode {
            Mode::Cycling { legs_run, .. } => legs_run,
            _ => 0,
        };
        self.mode = Mode::Cycling { leg, legs_run };
    }
}

/// Each of `pool`'s workers' thread id, by its index in the pool; none off Linux.
#[cfg(target_os = "linux")]
fn worker_ids(pool: &rayon::ThreadPool) -> Vec<i32> {
    // SAFETY: `gettid` has no preconditions.
    pool.broadcast(|_| unsafe { libc::gettid() })
}

#[cfg(not(target_os = "linux"))]
fn worker_ids(_pool: &rayon::ThreadPool) -> Vec<i32> {
    Vec::new()
}

/// Reads how long the pool's workers have waited for a core: Linux's scheduler statistics.
#[derive(Debug)]
struct CoreWaitClock {
    /// `/proc/self/task/<tid>/schedstat` of each worker, by its index in the pool, kept open
    /// and read again from its start for each figure: 0.2 µs a read, against 1.5 µs to open,
    /// read and close it (a scene that tears reads it at every substep).
    #[cfg(target_os = "linux")]
    files: Vec<std::fs::File>,
}

impl CoreWaitClock {
    #[cfg(target_os = "linux")]
    fn for_workers(tids: &[i32]) -> Option<Self> {
        let files = (tids.iter())
            .map(|tid| std::fs::File::open(format!("/proc/self/task/{tid}/schedstat")))
            .collect::<std::io::Result<Vec<_>>>()
            .ok()?;
        let clock = CoreWaitClock { files };
        clock.waited(tids.len())?;
        Some(clock)
    }

    #[cfg(not(target_os = "linux"))]
    fn for_workers(_tids: &[i32]) -> Option<Self> {
        None
    }

    /// Nanoseconds workers `0..threads` have waited for a core since they started (the
    /// second of the file's three figures), or `None` if the statistics cannot be read.
    #[cfg(target_os = "linux")]
    fn waited(&self, threads: usize) -> Option<u64> {
        use std::os::unix::fs::FileExt;
        let mut line = [0u8; 96];
        let mut sum = 0u64;
        for file in &self.files[..threads] {
            let len = file.read_at(&mut line, 0).ok()?;
            let text = std::str::from_utf8(&line[..len]).ok()?;
            let run_delay = text.split_whitespace().nth(1)?.parse::<u64>().ok()?;
            sum = sum.saturating_add(run_delay);
        }
        Some(sum)
    }

    #[cfg(not(target_os = "linux"))]
    fn waited(&self, _threads: usize) -> Option<u64> {
        None
    }
}

#[cfg(test)]
mod tests;
