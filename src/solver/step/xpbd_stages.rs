//! The XPBD constraint stages of a substep iteration: a symmetric Gauss–Seidel sweep over the
//! coloured kinds ([`Sweep`]), each colour split between the threads in whole batches, then the
//! object-wide kinds on thread 0 and the long-range tethers.

use super::{Frame, LANES};
use crate::constraints::batch::project_batches;
use crate::constraints::shape_matching::ShapeMatchingConstraint;
use crate::constraints::volume::VolumeConstraint;
use crate::constraints::weighted::{pack, unpack};
use crate::constraints::{project, Constraint};
use crate::solver::colouring::ConstraintBlock;
use crate::solver::parallel::{batch_share, share, SharedSlice};
use std::sync::Mutex;

/// The direction of a Gauss–Seidel pass over the coloured constraints.
///
/// Each iteration is a *symmetric* Gauss–Seidel sweep: forward through the kinds and colours,
/// then backward. One forward pass alone is a product of non-commuting projections `G`; on a
/// curved, nearly redundant constraint set (a closed tube of inextensible triangles: a skirt)
/// `G` has complex eigenvalues `g` of modulus near 1, and the substep's momentum recurrence
/// `z' = 2 G z − G z₋₁` then has roots `μ = g ± √(g² − g)` with `|μ| > 1`: a flutter that grows
/// by a fixed factor every substep, whatever the mass or the load (measured: a skirt hanging
/// still under 0.01 m/s² of gravity reached 7 m/s; more substeps made it worse). The forward
/// pass followed by its mirror is self-adjoint in the mass metric, its eigenvalues are real
/// in [0, 1], and `|μ|² = g ≤ 1`: the substep cannot create energy. Flat sheets never showed
/// it because their out-of-plane motion is exactly free of the in-plane constraints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sweep {
    Forward,
    Backward,
}

/// A constraint block as the threads of a frame share it: items read-only but in the plastic
/// stage (`plastic_stages`, where each thread rewrites the rest values of its own share), λ
/// written at the indices of the constraints a thread projects.
pub(super) struct SharedBlock<'a, K> {
    items: SharedSlice<'a, K>,
    lambda: SharedSlice<'a, f64>,
    colours: &'a [std::ops::Range<usize>],
    overflow: std::ops::Range<usize>,
}

impl<'a, K> SharedBlock<'a, K> {
    pub(super) fn new(block: &'a mut ConstraintBlock<K>) -> Self {
        SharedBlock {
            items: SharedSlice::new(&mut block.items),
            lambda: SharedSlice::new(&mut block.lambda),
            colours: &block.colours,
            overflow: block.overflow.clone(),
        }
    }

    /// The constraints, read-only. Every stage may read them but the plastic stage, the only
    /// one that writes them ([`Self::items_mut`], between two barrier waits).
    pub(super) fn items(&self) -> &[K] {
        // SAFETY: items are written only in the plastic stage, which calls no `items()` and
        // ends at a barrier before any other stage starts.
        unsafe { self.items.as_slice() }
    }

    /// Items `range`, to rewrite their rest values.
    ///
    /// # Safety
    /// Only in the plastic stage, on this thread's own share; see [`SharedSlice::range`].
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn items_mut(&self, range: std::ops::Range<usize>) -> &mut [K] {
        // SAFETY: the caller's promise.
        unsafe { self.items.range(range) }
    }

    pub(super) fn len(&self) -> usize {
        self.items.len()
    }
}

pub(super) type WholeObjects<'a> = Mutex<(
    &'a mut Vec<VolumeConstraint>,
    &'a mut Vec<ShapeMatchingConstraint>,
)>;

impl Frame<'_> {
    /// The XPBD part of one iteration: the coloured kinds forward and back, the object-wide
    /// kinds (volumes, shape matching) and the tethers.
    ///
    /// The coloured kinds and the tethers work on the padded copy of the particles
    /// ([`crate::constraints::weighted`]): packed before them and unpacked after, and around
    /// the object-wide kinds, which read the positions.
    pub(super) fn solve_constraints(&self, t: usize, first: bool, h: f64) {
        self.pack_weighted(t);
        self.solve_block(&self.stretch, t, first, Sweep::Forward);
        self.solve_block(&self.tets, t, first, Sweep::Forward);
        self.solve_block(&self.bending, t, first, Sweep::Forward);
        self.solve_block(&self.isometric_bending, t, first, Sweep::Forward);
        self.solve_block(&self.rope_bending, t, first, Sweep::Forward);
        self.sweep_back(t);
        if self.has_volumes || self.has_shape_matching {
            self.unpack_weighted(t);
            self.solve_whole_objects(t, first, true, h);
            self.pack_weighted(t);
        }
        self.solve_block(&self.long_range, t, first, Sweep::Forward);
        self.unpack_weighted(t);
    }

    /// Copies this thread's share of the positions and inverse masses into the padded
    /// particles the constraint kinds read, then waits for the others. Nothing to do (and no
    /// wait) where the sweeps keep no padded copy ([`Frame::weighted`] empty).
    fn pack_weighted(&self, t: usize) {
        if self.weighted.is_empty() {
            return;
        }
        let share = share(0..self.x.len(), t, self.threads);
        // SAFETY: a per-particle stage: this thread's share of both arrays is its own until
        // the barrier below.
        unsafe {
            pack(
                self.x.range(share.clone()),
                &self.inv_mass[share.clone()],
                self.weighted.range(share),
            )
        };
        self.barrier.wait();
    }

    /// Copies this thread's share of the padded particles' positions back, then waits for the
    /// others (see [`Frame::pack_weighted`]).
    fn unpack_weighted(&self, t: usize) {
        if self.weighted.is_empty() {
            return;
        }
        let share = share(0..self.x.len(), t, self.threads);
        // SAFETY: as in `pack_weighted`.
        unsafe { unpack(self.weighted.range(share.clone()), self.x.range(share)) };
        self.barrier.wait();
    }

    /// The backward half of a symmetric Gauss–Seidel iteration: the coloured kinds again in
    /// reverse order, each block's colours reversed (see [`Sweep`]).
    fn sweep_back(&self, t: usize) {
        self.solve_block(&self.rope_bending, t, false, Sweep::Backward);
        self.solve_block(&self.isometric_bending, t, false, Sweep::Backward);
        self.solve_block(&self.bending, t, false, Sweep::Backward);
        self.solve_block(&self.tets, t, false, Sweep::Backward);
        self.solve_block(&self.stretch, t, false, Sweep::Backward);
    }

    /// Projects this thread's share of every colour (whole batches, see
    /// [`crate::constraints::batch`]) and (thread 0) the overflow group, one constraint at a
    /// time: colours first and the overflow last going forward, the reverse going backward.
    fn solve_block<const N: usize, K: Constraint<N>>(
        &self,
        block: &SharedBlock<'_, K>,
        t: usize,
        first_iteration: bool,
        sweep: Sweep,
    ) {
        let terms = self.material_terms;
        // SAFETY: read-only for every thread during constraint stages (written only in the
        // predict stage, behind a barrier).
        let x_prev = unsafe { self.x_prev.as_slice() };
        let solve = |range: std::ops::Range<usize>, batched: bool| {
            // SAFETY: `range` is this thread's share of one colour (or the overflow group,
            // solved by thread 0 alone): its constraints share no particle with any other
            // thread's constraints in this stage, and their λ are this thread's.
            let (mut x, lambda) = unsafe {
                (
                    self.weighted.stage_view(),
                    block.lambda.range(range.clone()),
                )
            };
            if first_iteration {
                lambda.fill(0.0);
            }
            let items = &block.items()[range];
            if batched {
                project_batches(items, lambda, &mut x, x_prev, terms);
            } else {
                for (item, lambda) in items.iter().zip(lambda) {
                    project(item, lambda, &mut x, x_prev, terms);
                }
            }
        };
        let overflow = || {
            if !block.overflow.is_empty() {
                if t == 0 {
                    solve(block.overflow.clone(), false);
                }
                self.barrier.wait();
            }
        };
        let colour = |colour: &std::ops::Range<usize>| {
            solve(batch_share(colour.clone(), LANES, t, self.threads), true);
            self.barrier.wait();
        };
        match sweep {
            Sweep::Forward => {
                block.colours.iter().for_each(colour);
                overflow();
            }
            Sweep::Backward => {
                overflow();
                block.colours.iter().rev().for_each(colour);
            }
        }
    }

    /// Thread 0 projects the volume constraints (when `with_volumes`) and the shape-matching
    /// clusters while the others wait.
    pub(super) fn solve_whole_objects(
        &self,
        t: usize,
        first_iteration: bool,
        with_volumes: bool,
        h: f64,
    ) {
        let volumes_here = with_volumes && self.has_volumes;
        if !volumes_here && !self.has_shape_matching {
            return;
        }
        if t == 0 {
            let mut guard = self.whole_objects.lock().unwrap_or_else(|e| e.into_inner());
            let (volumes, clusters) = &mut *guard;
            // SAFETY: thread 0 alone touches the particles in this stage; the others are
            // waiting at the barrier below. x_prev is read-only here.
            let (x, x_prev) = unsafe { (self.x.range(0..self.x.len()), self.x_prev.as_slice()) };
            let inv_h = 1.0 / h;
            if volumes_here {
                for volume in volumes.iter_mut() {
                    if first_iteration {
                        volume.lambda = 0.0;
                    }
                    volume.project(x, x_prev, self.inv_mass, inv_h);
                }
            }
            for cluster in clusters.iter_mut() {
                if first_iteration {
                    cluster.reset_lambda();
                }
                cluster.project(x, x_prev, self.inv_mass, self.mass, inv_h);
            }
        }
        self.barrier.wait();
    }
}
