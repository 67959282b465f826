//! The velocities written to the caches: each particle's mean velocity over the frame.
//!
//! A renderer blurs a vertex along its written velocity (Cycles, Arnold, Karma read the PLY
//! `vx vy vz` / USD `velocities` attribute), so that velocity must describe the motion between
//! frames, not the last substep. The last substep's `v = (x − x_prev) / h` carries every
//! contact and constraint correction of that one substep divided by `h`: on the skirt it was
//! ~5× the frame-to-frame motion (median 3 m/s against 0.6 m/s), and the hem smeared. The mean
//! of the substep velocities telescopes to
//!
//! ```text
//! v̄_f = (1 / S) Σ_k (x_k − x_{k−1}) / h = (x_f − x_{f−1}) · fps
//! ```
//!
//! (`S` substeps of `h = 1 / (fps S)`), the backward difference of the frame positions: what a
//! point cache's motion is between the frame written before and this one. The first frame
//! writes the initial velocities. A particle that a tear made during the frame starts the
//! frame where its source vertex did. The solver's own state (`v`, the stats' kinetic energy
//! and `max_speed`, divergence checks, checkpoints) keeps the instantaneous velocity; at a
//! frame boundary the start positions equal `x`, so a resumed run writes the same bytes.

use crate::model::Model;
use glam::DVec3;

/// Positions at the start of the frame being stepped, and the frame's mean velocities.
#[derive(Debug, Clone, Default)]
pub struct FrameMotion {
    start: Vec<DVec3>,
    mean: Vec<DVec3>,
}

impl FrameMotion {
    /// Remembers where every particle starts the frame.
    pub fn begin(&mut self, model: &Model) {
        self.start.clear();
        self.start.extend_from_slice(&model.particles.x);
    }

    /// The mean velocities of the frame just stepped, `(x − x_start) · fps`.
    pub fn end(&mut self, model: &Model) {
        let fps = model.params.fps;
        let x = &model.particles.x;
        self.mean.clear();
        self.mean.extend((0..x.len()).map(|i| {
            let start = match self.start.get(i) {
                Some(&start) => start,
                None => {
                    let (object, local) = model.vertex_of(i);
                    self.start[object.global(object.source_vertex[local as usize])]
                }
            };
            (x[i] - start) * fps
        }));
    }

    /// The velocities to write: the mean over the frame just stepped, or the model's own
    /// velocities before the first step.
    pub fn velocities<'a>(&'a self, model: &'a Model) -> &'a [DVec3] {
        if self.mean.len() == model.particles.len() {
            &self.mean
        } else {
            &model.particles.v
        }
    }
}
