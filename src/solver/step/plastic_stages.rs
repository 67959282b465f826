//! The plastic stage of a substep (`yield` and `creep`, [`crate::constraints::plasticity`]):
//! after the velocity update, every plastic constraint moves its rest value toward its
//! current state. Each constraint owns its rest value and reads only positions, which nobody
//! writes in this stage, so the threads split each block in plain contiguous shares and the
//! result is the same bits on any thread count. The batched kernels read the rest values from
//! the items batch by batch (`Constraint::shape`), so rewriting the items is all it takes; the
//! colouring depends only on which particles a constraint joins, which does not change.
//! Shape-matching clusters (each couples its whole object) flow on thread 0.

use super::xpbd_stages::SharedBlock;
use super::Frame;
use crate::constraints::plasticity::{bending_rest_angle, stretch_rest_length};
use crate::constraints::{Constraint, MaterialId};
use crate::solver::parallel::share;
use glam::DVec3;

impl Frame<'_> {
    /// This thread's share of the plastic stage of a substep of `h` seconds; ends at a
    /// barrier (the next stage writes positions this one reads everywhere).
    pub(super) fn flow_plastically(&self, t: usize, h: f64) {
        if !self.plastic {
            return;
        }
        // SAFETY: no thread writes positions in this stage (it ends at the barrier below).
        let x = unsafe { self.x.as_slice() };
        let table = self.plasticity;
        let of = |id: MaterialId| table.get(id.index()).copied().flatten();
        self.flow_block(&self.stretch, t, |edge| {
            if let Some(plasticity) = of(edge.material) {
                let [a, b] = edge.particles.map(|i| x[i as usize]);
                let length = a.distance(b);
                let fraction = plasticity.fraction(h);
                edge.rest_length =
                    stretch_rest_length(length, edge.rest_length, plasticity, fraction);
            }
        });
        self.flow_block(&self.bending, t, |hinge| {
            if let Some(plasticity) = of(hinge.material) {
                let p: [DVec3; 4] = hinge.particles.map(|i| x[i as usize]);
                // C = wrap(θ − θ0): the deviation from the rest angle (skipped if degenerate).
                if let Some((deviation, _)) = hinge.evaluate(&p) {
                    hinge.rest_angle = bending_rest_angle(
                        deviation,
                        hinge.rest_angle,
                        plasticity,
                        plasticity.fraction(h),
                    );
                }
            }
        });
        if t == 0 && self.has_shape_matching {
            let mut guard = self.whole_objects.lock().unwrap_or_else(|e| e.into_inner());
            for cluster in guard.1.iter_mut() {
                cluster.flow_plastically(x, self.mass, h);
            }
        }
        self.barrier.wait();
    }

    /// Applies `flow` to this thread's contiguous share of `block`'s constraints.
    fn flow_block<K>(&self, block: &SharedBlock<'_, K>, t: usize, flow: impl Fn(&mut K)) {
        let range = share(0..block.len(), t, self.threads);
        // SAFETY: the plastic stage, and `range` is this thread's share: no other thread reads
        // or writes these items until the barrier that ends the stage.
        unsafe { block.items_mut(range) }.iter_mut().for_each(flow);
    }
}
