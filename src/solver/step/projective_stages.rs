//! The Projective Dynamics stages of a substep iteration (`solver = "projective"`, see
//! [`crate::solver::projective`]): the local step over every term on every thread, the
//! right-hand side per particle, one coordinate's global solve per thread, and the write-back
//! with Chebyshev extrapolation. Contacts follow, as with XPBD.

use super::xpbd_stages::SharedBlock;
use super::{Divergence, Frame, Solver};
use crate::collision::PosedCollider;
use crate::constraints::curvature::Curvature;
use crate::constraints::Constraint;
use crate::solver::parallel::{share, SharedSlice};
use crate::solver::projective::terms::{CentredTerms, LinearTerms};
use crate::solver::projective::{
    topology_version, FactoredContacts, ProjectiveFigures, ProjectiveState, Settings, System,
};
use anyhow::Result;
use faer::dyn_stack::MemBuffer;
use glam::{DMat3, DVec3};
use std::sync::Mutex;

/// The projective solver's state as the threads of a frame share it.
pub(super) struct ProjectiveStage<'a> {
    system: &'a System,
    settings: Settings,
    contributions: SharedSlice<'a, DVec3>,
    rhs: SharedSlice<'a, f64>,
    inertial: SharedSlice<'a, DVec3>,
    previous: SharedSlice<'a, DVec3>,
    solved: SharedSlice<'a, DVec3>,
    touching: SharedSlice<'a, bool>,
    factored: &'a Mutex<FactoredContacts>,
    scratch: &'a [Mutex<MemBuffer>; 3],
}

impl<'a> ProjectiveStage<'a> {
    pub(super) fn new(state: &'a mut ProjectiveState) -> Self {
        ProjectiveStage {
            system: &state.system,
            settings: state.settings,
            contributions: SharedSlice::new(&mut state.contributions),
            rhs: SharedSlice::new(&mut state.rhs),
            inertial: SharedSlice::new(&mut state.inertial),
            previous: SharedSlice::new(&mut state.previous),
            solved: SharedSlice::new(&mut state.solved),
            touching: SharedSlice::new(&mut state.touching),
            factored: &state.factored,
            scratch: &state.scratch,
        }
    }
}

impl Solver {
    /// The projective solver's figures for the stats log (`solver = "projective"`).
    pub fn projective_figures(&self) -> Option<ProjectiveFigures> {
        self.projective.as_ref().map(ProjectiveState::figures)
    }

    /// Refactors the projective system when a tear changed the topology since it was built.
    pub(super) fn refresh_projective(&mut self) -> Result<(), Divergence> {
        let stale = self
            .projective
            .as_ref()
            .is_some_and(|state| state.topology != topology_version(&self.model));
        if !stale {
            return Ok(());
        }
        self.rebuild_projective().map_err(|e| Divergence {
            substep: 0,
            object: self.model.objects[0].name.clone(),
            vertex: 0,
            reason: format!("{e:#}"),
        })
    }

    /// The divergence of `substep` when a projective refactorization failed in it.
    pub(super) fn projective_failure(&mut self, substep: usize) -> Option<Divergence> {
        let state = self.projective.as_mut()?;
        let factored = state.factored.get_mut().unwrap_or_else(|e| e.into_inner());
        let reason = factored.failure.take()?;
        Some(Divergence {
            substep,
            object: self.model.objects[0].name.clone(),
            vertex: 0,
            reason,
        })
    }

    /// Builds and factors the projective system anew from the model (after its topology
    /// changed: a tear, or a checkpoint of a torn object restored).
    pub(crate) fn rebuild_projective(&mut self) -> Result<()> {
        if let Some(state) = &self.projective {
            let (settings, count) = (state.settings, state.factorizations());
            self.projective = Some(ProjectiveState::new(&self.model, settings, count)?);
        }
        Ok(())
    }
}

impl Frame<'_> {
    /// One local/global iteration (the `iteration`-th of the substep, from 0) on thread `t`.
    pub(super) fn projective_iteration(
        &self,
        pd: &ProjectiveStage,
        t: usize,
        iteration: usize,
        posed: &[PosedCollider],
    ) {
        let particles = share(0..self.x.len(), t, self.threads);
        if iteration == 0 {
            // SAFETY: this thread's share of the particles; nothing writes positions until
            // the barrier after the local step.
            let (x, inertial) = unsafe {
                (
                    &*self.x.range(particles.clone()),
                    pd.inertial.range(particles.clone()),
                )
            };
            inertial.copy_from_slice(x);
            if !pd.previous.is_empty() {
                unsafe { pd.previous.range(particles.clone()) }.copy_from_slice(x);
            }
        }
        self.local_step(pd, t);
        self.contact_share(pd, t, iteration, posed);
        self.barrier.wait();
        if t == 0 {
            self.refactor_for_contacts(pd);
        }
        self.assemble_rhs(pd, t);
        self.barrier.wait();
        let factor = pd.system.factor.read().unwrap_or_else(|e| e.into_inner());
        for coordinate in (0..3).filter(|c| c % self.threads == t) {
            let n = pd.system.terms.unknowns.particle.len();
            // SAFETY: column `coordinate` is this thread's alone in this stage.
            let column = unsafe { pd.rhs.range(coordinate * n..(coordinate + 1) * n) };
            let mut scratch = pd.scratch[coordinate]
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            factor.solve(column, &mut scratch);
        }
        drop(factor);
        self.barrier.wait();
        self.write_back(pd, t, iteration);
        self.barrier.wait();
    }

    /// Every term's contributions: this thread's share of each block; thread 0 also fits the
    /// shape-matching clusters (each couples its whole object).
    fn local_step(&self, pd: &ProjectiveStage, t: usize) {
        let system = &pd.system.terms;
        self.centred_share(pd, &self.stretch, &system.stretch, t);
        self.centred_share(pd, &self.tets, &system.tets, t);
        self.centred_share(pd, &self.bending, &system.bending, t);
        self.centred_share(pd, &self.long_range, &system.long_range, t);
        self.linear_share(
            pd,
            self.isometric_bending.items(),
            &system.isometric_bending,
            t,
        );
        self.linear_share(pd, self.rope_bending.items(), &system.rope_bending, t);
        if t == 0 && self.has_shape_matching {
            let mut guard = self.whole_objects.lock().unwrap_or_else(|e| e.into_inner());
            let clusters = &mut *guard.1;
            // SAFETY: read-only in this stage.
            let x = unsafe { self.x.as_slice() };
            for (cluster, terms) in clusters.iter_mut().zip(&system.goals) {
                let (centre, rotation) = cluster.fit_rotation(x, self.mass);
                let r = DMat3::from_quat(rotation);
                // SAFETY: the cluster's slots are its own; thread 0 alone writes them.
                let out = unsafe {
                    pd.contributions
                        .range(terms.first_slot..terms.first_slot + terms.weight.len())
                };
                for ((out, &w), q) in out.iter_mut().zip(&terms.weight).zip(cluster.rest()) {
                    *out = (r * *q + centre) * w;
                }
            }
        }
    }

    /// This thread's share of the contact terms: a particle touches when it is inside a
    /// collider's contact margin, or (after the first iteration of the substep) when it touched
    /// in an earlier iteration or the contact projections moved it after the last global step;
    /// its target is where it is, pushed out of the colliders.
    fn contact_share(
        &self,
        pd: &ProjectiveStage,
        t: usize,
        iteration: usize,
        posed: &[PosedCollider],
    ) {
        let terms = &pd.system.terms.contacts;
        if terms.weight.is_empty() {
            return;
        }
        let range = share(0..terms.weight.len(), t, self.threads);
        let slots = terms.first_slot + range.start..terms.first_slot + range.end;
        // SAFETY: read-only in this stage; the slots and flags of this thread's particles are
        // its own.
        let (x, x_prev, solved, out, touching) = unsafe {
            (
                self.x.as_slice(),
                self.x_prev.as_slice(),
                pd.solved.as_slice(),
                pd.contributions.range(slots),
                pd.touching.range(range.clone()),
            )
        };
        for ((i, out), touches) in range.zip(out).zip(touching) {
            let w = terms.weight[i];
            let mut target = x[i];
            // Within a substep a particle that touched keeps its term (its target then is
            // where it is): the set only grows, so the iterations refactor at most as often
            // as new particles touch, not each time one leaves and comes back.
            let mut touched = w > 0.0 && iteration > 0 && (*touches || x[i] != solved[i]);
            // The velocity update takes the normal speed off a particle the contact term
            // holds, as off one the projection moves.
            // SAFETY: particle i is in this thread's share.
            let collides = w > 0.0 && self.collides[i];
            if collides && unsafe { self.push_out_of_colliders(i, &mut target, x_prev[i], posed) } {
                touched = true;
            }
            *touches = touched;
            *out = if touched { target * w } else { DVec3::ZERO };
        }
    }

    /// Thread 0, while the others assemble their right-hand sides: factors `H` again with the
    /// contact terms of the particles touching now, when they are not the ones it holds. A
    /// failure (it cannot happen: a positive diagonal added to a positive definite matrix)
    /// stops the frame as a divergence that says so ([`Solver::projective_failure`]).
    fn refactor_for_contacts(&self, pd: &ProjectiveStage) {
        if pd.system.terms.contacts.weight.is_empty() {
            return;
        }
        // SAFETY: written in the local step, behind a barrier; read-only now.
        let touching = unsafe { pd.touching.as_slice() };
        let mut factored = pd.factored.lock().unwrap_or_else(|e| e.into_inner());
        if factored.touching == touching {
            return;
        }
        let terms = &pd.system.terms;
        let added = terms.contacts.added_diagonal(touching, &terms.unknowns);
        let mut factor = pd.system.factor.write().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = factor.refactor_with_diagonal(&added) {
            factored.failure = Some(format!("with its contact terms, {e:#}"));
            self.first_bad
                .fetch_min(0, std::sync::atomic::Ordering::AcqRel);
        }
        factored.touching.copy_from_slice(touching);
        factored.factorizations += 1;
    }

    fn centred_share<const N: usize, K: Constraint<N>>(
        &self,
        pd: &ProjectiveStage,
        block: &SharedBlock<'_, K>,
        terms: &CentredTerms,
        t: usize,
    ) {
        let range = share(0..block.len(), t, self.threads);
        let slots = terms.first_slot + range.start * N..terms.first_slot + range.end * N;
        // SAFETY: read-only in this stage; the slots of this thread's terms are its own.
        let (x, out) = unsafe { (self.x.as_slice(), pd.contributions.range(slots)) };
        for (k, out) in range.zip(out.chunks_exact_mut(N)) {
            terms.contribute(k, &block.items()[k], x, &pd.system.terms.unknowns, out);
        }
    }

    fn linear_share<const N: usize>(
        &self,
        pd: &ProjectiveStage,
        items: &[impl Curvature<N>],
        terms: &LinearTerms,
        t: usize,
    ) {
        let range = share(0..terms.pinned_terms.len(), t, self.threads);
        // SAFETY: read-only in this stage.
        let x = unsafe { self.x.as_slice() };
        for &(k, first) in &terms.pinned_terms[range] {
            let first = first as usize;
            // SAFETY: the term's own slots.
            let out = unsafe { pd.contributions.range(first..first + N) };
            let k = k as usize;
            terms.contribute(k, &items[k], x, &pd.system.terms.unknowns, out);
        }
    }

    /// `b = M s/h² + Σ contributions`, per unknown in this thread's share, in slot order.
    fn assemble_rhs(&self, pd: &ProjectiveStage, t: usize) {
        let system = &pd.system.terms;
        let n = system.unknowns.particle.len();
        // SAFETY: written in the local step, behind a barrier; read-only now.
        let (contributions, inertial) =
            unsafe { (pd.contributions.as_slice(), pd.inertial.as_slice()) };
        for u in share(0..n, t, self.threads) {
            let i = system.unknowns.particle[u] as usize;
            let mut b = inertial[i] * system.inertia[u];
            for &slot in system.slots_of(u) {
                b += contributions[slot as usize];
            }
            // SAFETY: entry u of each column is this thread's in this stage.
            unsafe {
                for (c, value) in b.to_array().into_iter().enumerate() {
                    pd.rhs.range(c * n + u..c * n + u + 1)[0] = value;
                }
            }
        }
    }

    /// The solved positions into `x` (free particles of this thread's share), extrapolated
    /// from the iterate before last with Chebyshev acceleration.
    fn write_back(&self, pd: &ProjectiveStage, t: usize, iteration: usize) {
        let system = &pd.system.terms;
        let n = system.unknowns.particle.len();
        let omega = pd.settings.chebyshev_omega(iteration);
        // SAFETY: the solution is read-only now.
        let solution = unsafe { pd.rhs.as_slice() };
        for u in share(0..n, t, self.threads) {
            let i = system.unknowns.particle[u] as usize;
            let solved = DVec3::new(solution[u], solution[n + u], solution[2 * n + u]);
            // SAFETY: particle i is an unknown of this thread's share: no other thread touches
            // it in this stage.
            let x = unsafe { &mut self.x.range(i..i + 1)[0] };
            if pd.previous.is_empty() {
                *x = solved;
            } else {
                let previous = unsafe { &mut pd.previous.range(i..i + 1)[0] };
                let before = *x;
                *x = (solved - *previous) * omega + *previous;
                *previous = before;
            }
            // SAFETY: as for `x`.
            unsafe { pd.solved.range(i..i + 1)[0] = *x };
        }
    }
}
