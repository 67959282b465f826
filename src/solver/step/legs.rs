//! A frame's substeps in legs, each on as many of the worker threads as the free cores hold
//! ([`crate::solver::crowding`]), and what the frames ran on.

use super::{Divergence, Solver};
use crate::solver::crowding::FrameThreads;

impl Solver {
    /// Whether frames may run on fewer of the pool's threads while other programs hold the
    /// cores (`simulation.adapt_threads`; off for a new solver). See [`crate::solver::crowding`].
    pub fn adapt_threads(&mut self, adapts: bool) {
        self.crowding.adapt(adapts);
    }

    /// The threads the last frame ran on, and how long they waited for a core.
    pub fn frame_threads(&self) -> FrameThreads {
        self.crowding.last_frame()
    }

    /// Runs the next frames on `threads` of the pool's threads, in legs of at most `leg`
    /// substeps (tests of the output's independence from the count).
    #[cfg(test)]
    pub(crate) fn pin_frame_threads(&mut self, threads: usize, leg: usize) {
        self.crowding.pin(threads, leg);
    }

    /// Frames run so far on fewer than [`Self::threads`] threads.
    pub fn frames_on_fewer_threads(&self) -> u64 {
        self.crowding.fewer_frames()
    }

    /// Runs the substeps `range` (1-based) of a frame that ends before substep `frame_end`
    /// in legs, each on as many of the worker threads as
    /// [`crate::solver::crowding::Crowding`] says.
    pub(super) fn run_legs(
        &mut self,
        range: std::ops::Range<usize>,
        frame_end: usize,
    ) -> Result<(), Divergence> {
        let mut first = range.start;
        while first < range.end {
            let mut leg = self.crowding.next_leg(frame_end - first);
            leg.substeps = leg.substeps.min(range.end - first);
            let (started, waited) = (std::time::Instant::now(), self.crowding.begin_leg(leg));
            self.run_substeps(first..first + leg.substeps, leg.threads)?;
            self.crowding.end_leg(leg, waited, started.elapsed());
            first += leg.substeps;
        }
        Ok(())
    }
}
