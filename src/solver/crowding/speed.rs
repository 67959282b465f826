//! Fewer threads where fewer run the scene faster, with the cores free.
//!
//! The substep's threads meet some 80 times ([`crate::solver::parallel`]). Where a substep's
//! work is a few microseconds a thread, those meetings cost more than a second thread gives:
//! up to half a microsecond each when two cores share no cache (docs/benchmarks.md, "Issue
//! 13: two states of this machine"). Measured on this project's 2-core machine with the files
//! written, 13 of the 20 shipped scenes ran slower on 2 threads than on 1 (the flag 0.44 s
//! against 0.31, the drape 0.27 against 0.18), while the large ones ran faster
//! (the dam break 5.9 s against 8.6). Which scenes lose depends on the machine, and on this
//! one on its state from minute to minute, so the count is measured, not guessed
//! (docs/benchmarks.md, "Issue 13: fewer threads where they are faster").
//!
//! - **Comparisons.** [`PATTERN`] frames alternate between the count in use `c` and another
//!   `o`: `c, o, c, o, c`. Each frame's wall time per substep is taken, and `o` is kept when
//!   both its frames beat the median of `c`'s three by more than [`GAIN`]. Alternating
//!   cancels a steady change in the scene's cost over the five frames (a cloth settling, a
//!   fold forming). `o` is half of `c` (rounded up) or twice it (at most the pool's): lower
//!   first, then the other way after a comparison that kept the count.
//! - **When.** The first comparison starts with the second frame simulated (in the first the
//!   kernel spreads the new threads over the cores). After a comparison that keeps the count,
//!   the next waits for free frames worth [`FIRST_BACKOFF`] times the comparison's own wall
//!   time, then twice as long each time up to [`LAST_BACKOFF`] times, so a large scene whose
//!   threads pay loses about one frame's worth of time to the first comparison and little to
//!   the later ones. A change is checked at once by a comparison the way back (a decision
//!   made in a spell of the machine's noise would otherwise stand for the rest of a short
//!   shot); the waits then start again from the first.
//! - **Given up early.** When the other count's first frame took more than [`GIVE_UP`]
//!   times the first frame's time per substep, the comparison stops there: for `o` to win,
//!   the count in use would have to slow down by more than a half within two frames, which no
//!   steady change the alternation allows for does. A large scene whose second thread pays
//!   (cloth-256 on two cores: 2.0× per frame) thus spends one frame on fewer threads, not two
//!   (on two Zen 1 cores its 24 frames at 2 threads took 12 % less time, median of ten
//!   rounds; docs/benchmarks.md, "Issue 13: the targets on a Zen 1 host"). The wait after it
//!   is counted as after the whole comparison (its wall time scaled to [`PATTERN`] frames),
//!   so comparisons come no more often.
//! - **Only with the cores free.** A frame is compared only if the crowding policy
//!   ([`super::ThreadPolicy`]) was at its top count with no trial due all along, and its own
//!   workers waited for a core at most the policy's crowded share of their time. Any other
//!   frame drops a comparison under way, which then waits as one that kept the count does:
//!   the waits for a core would decide it, not the scene, and a frame on the other count that
//!   itself crowds the cores (this run's writer thread beside more workers) must not be tried
//!   again at every frame.
//!
//! Like every count, this one changes no byte of the output: only how fast frames come.

/// How much faster per substep the other count's frames must both be: a tenth.
pub const GAIN: f64 = 0.1;
/// A comparison stops when the other count's first frame took more than this times the
/// first frame's time per substep: the other count cannot win it.
pub const GIVE_UP: f64 = 1.5;
/// Frames in a comparison: the count in use, the other, in turn.
pub const PATTERN: usize = 5;
/// The first wait after a comparison that kept the count, in comparison wall times.
pub const FIRST_BACKOFF: f64 = 16.0;
/// The longest wait, in comparison wall times.
pub const LAST_BACKOFF: f64 = 1024.0;

/// The count frames run on while the cores are free, and the comparisons that move it.
#[derive(Debug, Clone)]
pub struct SpeedCap {
    /// The pool's threads.
    most: usize,
    /// The count in use.
    cap: usize,
    /// Whether the next comparison tries fewer threads (else more), where both are possible.
    lower_next: bool,
    /// Wall time of free frames, outside comparisons, to run before the next comparison, s.
    wait: f64,
    /// The next wait, in comparison wall times.
    backoff: f64,
    /// Whether a frame has been observed (the first is never compared).
    started: bool,
    comparison: Option<Comparison>,
}

/// A comparison under way: the other count, and the time per substep of its frames so far
/// (frame `k` of the pattern ran on the other count when `k` is odd).
#[derive(Debug, Clone)]
struct Comparison {
    other: usize,
    per_substep: [f64; PATTERN],
    frames: usize,
    wall: f64,
}

impl SpeedCap {
    /// At all `most` threads, the first comparison due with the second frame.
    pub fn new(most: usize) -> SpeedCap {
        SpeedCap {
            most: most.max(1),
            cap: most.max(1),
            lower_next: true,
            wait: 0.0,
            backoff: FIRST_BACKOFF,
            started: false,
            comparison: None,
        }
    }

    /// The count in use.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// The pool's threads.
    pub fn most(&self) -> usize {
        self.most
    }

    /// The count of the next frame's legs while the cores are free: the comparison's or the
    /// count in use.
    pub fn frame_threads(&self) -> usize {
        match &self.comparison {
            Some(c) if c.frames % 2 == 1 => c.other,
            _ => self.cap,
        }
    }

    /// Takes a frame: `free` if the cores were free all along and every leg ran on
    /// [`Self::frame_threads`]; its legs' wall time, seconds, and substeps.
    pub fn observe_frame(&mut self, free: bool, wall: f64, substeps: usize) {
        let first = !std::mem::replace(&mut self.started, true);
        if !free || substeps == 0 || first {
            if let Some(dropped) = self.comparison.take() {
                self.back_off(dropped.wall + wall);
            }
            return;
        }
        let per_substep = wall / substeps as f64;
        let comparison = match &mut self.comparison {
            Some(comparison) => comparison,
            None if self.wait > 0.0 => {
                self.wait -= wall;
                return;
            }
            None => {
                // The wait is over: this frame, on the count in use, is the comparison's
                // first.
                let Some(other) = self.other() else { return };
                self.comparison.insert(Comparison {
                    other,
                    per_substep: [0.0; PATTERN],
                    frames: 0,
                    wall: 0.0,
                })
            }
        };
        comparison.per_substep[comparison.frames] = per_substep;
        comparison.frames += 1;
        comparison.wall += wall;
        let hopeless = comparison.frames == 2
            && comparison.per_substep[1] > GIVE_UP * comparison.per_substep[0];
        if hopeless {
            // Waits as after the whole comparison: its wall time as if all five had run.
            let given_up = self.comparison.take().expect("a comparison under way");
            self.back_off(given_up.wall * PATTERN as f64 / given_up.frames as f64);
        } else if comparison.frames == PATTERN {
            let done = self.comparison.take().expect("a comparison under way");
            self.decide(&done);
        }
    }

    /// The count the next comparison tries, if the pool has another.
    fn other(&self) -> Option<usize> {
        let lower = self.cap.div_ceil(2);
        let higher = (2 * self.cap).min(self.most);
        match (self.cap > 1, self.cap < self.most) {
            (true, true) if self.lower_next => Some(lower),
            (_, true) => Some(higher),
            (true, false) => Some(lower),
            (false, false) => None,
        }
    }

    /// Keeps the other count if both its frames beat the median of the count in use by more
    /// than [`GAIN`], and then compares the way back at once; else sets the wait before the
    /// next comparison.
    fn decide(&mut self, done: &Comparison) {
        let mut in_use = [
            done.per_substep[0],
            done.per_substep[2],
            done.per_substep[4],
        ];
        in_use.sort_by(f64::total_cmp);
        let bar = (1.0 - GAIN) * in_use[1];
        if done.per_substep[1] < bar && done.per_substep[3] < bar {
            // Checked at once by a comparison the way back: a change decided in a spell of
            // the machine's noise is undone five frames later, not after a long wait.
            self.lower_next = done.other > self.cap;
            self.cap = done.other;
            self.backoff = FIRST_BACKOFF;
            self.wait = 0.0;
        } else {
            self.back_off(done.wall);
        }
    }

    /// After a comparison of `wall` seconds that kept the count (or was dropped): the next
    /// one the other way, after a wait twice as long as the last.
    fn back_off(&mut self, wall: f64) {
        self.lower_next = !self.lower_next;
        self.wait = self.backoff * wall;
        self.backoff = (2.0 * self.backoff).min(LAST_BACKOFF);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUBSTEPS: usize = 20;

    /// Feeds `cap` `count` free frames whose wall time per substep on `threads` threads is
    /// `per_substep(frame, threads)`; returns each frame's count.
    fn frames(
        cap: &mut SpeedCap,
        count: usize,
        per_substep: impl Fn(usize, usize) -> f64,
    ) -> Vec<usize> {
        (0..count)
            .map(|frame| {
                let threads = cap.frame_threads();
                let wall = per_substep(frame, threads) * SUBSTEPS as f64;
                cap.observe_frame(true, wall, SUBSTEPS);
                threads
            })
            .collect()
    }

    /// One thread at `one`, two at 1.0 (ms per substep, as seconds: only ratios matter).
    fn two_cores(one: f64) -> impl Fn(usize, usize) -> f64 {
        move |_, threads| if threads == 1 { one } else { 1.0 }
    }

    #[test]
    fn fewer_threads_kept_when_both_their_frames_are_faster() {
        let mut cap = SpeedCap::new(2);
        let counts = frames(&mut cap, 12, two_cores(0.7));
        // The first frame is not compared; the second is the comparison's first. The change
        // is checked at once the way back, and stands.
        assert_eq!(counts[..6], [2, 2, 1, 2, 1, 2]);
        assert_eq!(counts[6..11], [1, 2, 1, 2, 1]);
        assert!(counts[11..].iter().all(|&c| c == 1), "{counts:?}");
        assert_eq!(cap.cap(), 1);
    }

    #[test]
    fn all_threads_kept_when_fewer_are_slower_or_not_a_tenth_faster() {
        for one in [1.5, 1.0, 0.91] {
            let mut cap = SpeedCap::new(2);
            let counts = frames(&mut cap, 40, two_cores(one));
            assert_eq!(cap.cap(), 2, "one thread at {one}");
            // One comparison, then a wait of 16 comparisons' wall time (5 frames each, two
            // of them on one thread).
            let fewer = counts.iter().filter(|&&c| c == 1).count();
            assert_eq!(fewer, 2, "one thread at {one}: {counts:?}");
        }
    }

    #[test]
    fn a_comparison_whose_first_frame_on_the_other_count_is_far_slower_stops_there() {
        for one in [1.51, 2.0, 10.0] {
            // The second frame starts the comparison, the third (one thread) ends it, and
            // the next starts after 16 times the whole comparison's wall time (as if five
            // frames had run: (1 + one) · 5 / 2 units), in frames of 1.0, and ends as soon.
            let wait = (FIRST_BACKOFF * (1.0 + one) * 2.5).ceil() as usize;
            let total = 3 + wait + 3;
            let mut cap = SpeedCap::new(2);
            let counts = frames(&mut cap, total, two_cores(one));
            assert_eq!(cap.cap(), 2, "one thread at {one}");
            let mut expected = vec![2; total];
            expected[2] = 1;
            expected[3 + wait + 1] = 1;
            assert_eq!(counts, expected, "one thread at {one}");
        }
    }

    /// The frames that start a comparison (the first on one thread after two on two).
    fn comparison_starts(counts: &[usize]) -> Vec<usize> {
        (2..counts.len())
            .filter(|&f| counts[f] == 1 && counts[f - 1] == 2 && counts[f - 2] == 2)
            .collect()
    }

    #[test]
    fn the_wait_doubles_after_each_comparison_that_keeps_the_count_up_to_its_longest() {
        let mut cap = SpeedCap::new(2);
        let counts = frames(&mut cap, 200_000, two_cores(1.5));
        let starts = comparison_starts(&counts);
        let gaps: Vec<usize> = starts.windows(2).map(|w| w[1] - w[0]).collect();
        // Each comparison (3 frames at 1.0, 2 at 1.5: 6 units) is followed by a wait of
        // 16, 32, … up to 1024 times that, in frames of 1.0, and the comparison itself.
        let expected: Vec<usize> = (0..gaps.len())
            .map(|k| (FIRST_BACKOFF * 2f64.powi(k as i32)).min(LAST_BACKOFF) as usize * 6 + 5)
            .collect();
        assert_eq!(gaps, expected);
        assert!(
            gaps.len() >= 10,
            "{gaps:?}: the longest wait reached and kept"
        );
        assert_eq!(cap.cap(), 2);
    }

    #[test]
    fn a_steady_change_in_the_scene_cost_decides_nothing() {
        // The cost per substep rising 8 % a frame whatever the count (a cloth folding):
        // the frames on one thread come later than the first of two, and are no faster.
        let mut cap = SpeedCap::new(2);
        frames(&mut cap, 200, |frame, _| 1.08f64.powi(frame as i32 % 50));
        assert_eq!(cap.cap(), 2);
        // Falling as steadily: the frames on one thread come earlier, and are no slower.
        let mut cap = SpeedCap::new(2);
        frames(&mut cap, 200, |frame, _| 0.92f64.powi(frame as i32 % 50));
        assert_eq!(cap.cap(), 2);
    }

    #[test]
    fn a_change_decided_in_a_spell_of_noise_is_undone_at_once() {
        // Two threads take 1.0 a substep, one 1.3; but the first comparison's frames on two
        // threads fall in a spell where they take 2.0.
        let noisy = |frame: usize, threads: usize| match threads {
            1 => 1.3,
            _ if frame <= 5 => 2.0,
            _ => 1.0,
        };
        let mut cap = SpeedCap::new(2);
        let counts = frames(&mut cap, 60, noisy);
        assert_eq!(
            counts[..11],
            [2, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1],
            "{counts:?}"
        );
        // Back on two threads, the check the way back keeps them.
        assert_eq!(counts[11..16], [2, 1, 2, 1, 2], "{counts:?}");
        assert!(counts[16..].iter().all(|&c| c == 2), "{counts:?}");
        assert_eq!(cap.cap(), 2);
    }

    #[test]
    fn more_threads_come_back_when_they_become_faster() {
        let mut cap = SpeedCap::new(2);
        frames(&mut cap, 20, two_cores(0.5));
        assert_eq!(cap.cap(), 1);
        // The machine changes: now one thread takes twice what two do.
        let counts = frames(&mut cap, 400, two_cores(2.0));
        assert_eq!(cap.cap(), 2, "{counts:?}");
    }

    #[test]
    fn a_frame_with_busy_cores_drops_the_comparison_and_waits_as_after_one_kept() {
        let mut cap = SpeedCap::new(2);
        frames(&mut cap, 2, two_cores(0.5));
        assert_eq!(
            cap.frame_threads(),
            1,
            "the comparison's frame on one thread"
        );
        cap.observe_frame(false, 10.0, SUBSTEPS);
        assert_eq!(cap.frame_threads(), 2, "dropped");
        // The next comparison waits 16 times the dropped one's wall time (one frame of 20
        // at 1.0 and the busy frame's 10.0: 30 units, 16 · 30 / 20 = 24 frames at 1.0), and
        // then runs to the end: its first frame on two threads, its second on one.
        let counts = frames(&mut cap, 40, two_cores(0.5));
        assert_eq!(comparison_starts(&counts), [25]);
        assert_eq!(cap.cap(), 1);
    }

    #[test]
    fn frames_on_another_count_that_always_crowd_it_are_tried_less_and_less_often() {
        // On two threads every frame is busy (this run's writer beside two workers); on one,
        // free and slower: fewer cores' worth of free frames pass between tries each time.
        let mut cap = SpeedCap::new(2);
        frames(&mut cap, 20, two_cores(0.5));
        assert_eq!(cap.cap(), 1);
        let mut tried = Vec::new();
        for frame in 0..20_000 {
            let threads = cap.frame_threads();
            cap.observe_frame(threads == 1, 0.5 * SUBSTEPS as f64, SUBSTEPS);
            if threads == 2 {
                tried.push(frame);
            }
        }
        // Each try drops its comparison (a frame of 10 on one thread, one of 10 on two: 20),
        // and the next waits 32, 64, … up to 1024 times that in frames of 10 (the check
        // that followed the change kept the count, and so waited 16 times its own), then
        // runs the comparison's first frame on one thread before trying two again.
        let gaps: Vec<usize> = tried.windows(2).map(|w| w[1] - w[0]).collect();
        let expected: Vec<usize> = (0..gaps.len())
            .map(|k| 2 * (2.0 * FIRST_BACKOFF * 2f64.powi(k as i32)).min(LAST_BACKOFF) as usize + 2)
            .collect();
        assert_eq!(gaps, expected);
        assert!(
            gaps.len() >= 8,
            "{gaps:?}: the longest wait reached and kept"
        );
        assert_eq!(cap.cap(), 1);
    }

    #[test]
    fn many_threads_halve_and_double() {
        // Eight threads, each frame's work spread over them but each meeting costing as
        // much as the work of a thread: fastest at about 3.
        let cost = |_: usize, threads: usize| 6.0 / threads as f64 + threads as f64;
        let mut cap = SpeedCap::new(8);
        frames(&mut cap, 2000, cost);
        assert_eq!(
            cap.cap(),
            4,
            "8 (8.75) → 4 (5.5); 2 (5.0) is not a tenth faster than 4"
        );
        let mut one_thread = SpeedCap::new(1);
        assert_eq!(frames(&mut one_thread, 20, cost), vec![1; 20]);
    }
}
