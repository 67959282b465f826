//! A frame's substeps in legs, each on as many of the worker threads as the free cores hold
//! ([`crate::solver::crowding`]), and what the frames ran on.

use super::{Divergence, Solver};
use crate::solver::crowding::FrameThreads;

impl Solver {
    /// Whether frames may run on fewer of the pool's threads while other programs hold the
    /// cores, or where fewer run the scene faster (`simulation.adapt_threads`; off for a new
    /// solver). See [`crate::solver::crowding`].
    pub fn adapt_threads(&mut self, adapts: bool) {
        self.crowding.adapt(adapts);
    }

    /// The threads the last frame ran on, and how long they waited for a core.
    pub fn frame_threads(&self) -> FrameThreads {
        self.crowding.last_frame()
    }

    /// Runs the next legs on 1, 2, … up to all the pool's threads in turn, each at most `leg`
    /// substeps long (tests of the output's independence from the count).
    #[cfg(test)]
    pub(crate) fn cycle_frame_threads(&mut self, leg: usize) {
        self.crowding.cycle(leg);
    }

    /// Frames run so far on fewer than [`Self::threads`] threads.
    pub fn frames_on_fewer_threads(&self) -> u64 {
        self.crowding.fewer_frames()
    }

    /// Of [`Self::frames_on_fewer_threads`], those on fewer because fewer measured faster
    /// with the cores free.
    pub fn frames_on_fewer_threads_for_speed(&self) -> u64 {
        self.crowding.faster_frames()
    }

    /// Of [`Self::frames_on_fewer_threads`], those that timed fewer threads with the cores
    /// free (to learn whether fewer run faster).
    pub fn frames_timing_fewer_threads(&self) -> u64 {
        self.crowding.timing_frames()
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

#[cfg(test)]
mod tests {
    use crate::solver::step::Solver;

    /// `scene` stepped `frames` frames on one thread, and on a pool of three whose legs, 1 to
    /// 7 substeps long, run on 1, 2, 3, 1, … threads in turn: the same bits, frame by frame.
    fn same_bits_when_the_count_changes_between_legs(scene: &str, frames: usize) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(scene);
        let solver = |threads| {
            let scene = crate::scene::load::load(&path, &[]).expect("scene");
            let built = crate::scene::build::build(&scene).expect("model");
            Solver::new(built.model, threads).expect("threads")
        };
        let bits = |s: &Solver| {
            let p = &s.model.particles;
            (p.x.iter().chain(&p.v))
                .flat_map(|v| v.to_array().map(f64::to_bits))
                .collect::<Vec<u64>>()
        };
        let (mut one, mut changing) = (solver(1), solver(3));
        let mut counts = std::collections::BTreeSet::new();
        for frame in 0..frames {
            changing.cycle_frame_threads(1 + frame % 7);
            changing.step_frame().expect("no divergence");
            one.step_frame().expect("no divergence");
            counts.insert(changing.frame_threads().threads);
            assert!(
                bits(&one) == bits(&changing),
                "{scene}: frame {frame} differs"
            );
        }
        // Frames of legs of 1 or 2 substeps run on one thread among others.
        assert!(counts.contains(&1), "{counts:?}");
    }

    #[test]
    fn self_collision_is_the_same_whatever_threads_each_leg_runs_on() {
        same_bits_when_the_count_changes_between_legs("scenes/pile.toml", 18);
    }

    #[test]
    fn tearing_and_fluids_are_the_same_whatever_threads_each_leg_runs_on() {
        same_bits_when_the_count_changes_between_legs("scenes/tear.toml", 12);
        same_bits_when_the_count_changes_between_legs("scenes/water_on_cloth.toml", 4);
    }

    #[test]
    fn moving_meshes_and_projective_dynamics_are_the_same_whatever_threads_each_leg_runs_on() {
        same_bits_when_the_count_changes_between_legs("scenes/dancer.toml", 8);
        same_bits_when_the_count_changes_between_legs("scenes/cantilever.toml", 8);
    }
}
