//! The fluid stages of a substep (position-based fluids, [`crate::constraints::density`]):
//! after the prediction, the neighbour search; in every iteration, after the other
//! constraints and before the contacts, one Jacobi pass of the density constraints; after the
//! velocity update, XSPH viscosity and vorticity confinement.
//!
//! Every thread works on its share of the fluid particles and writes only their entries;
//! each pass reads what the previous one wrote for every particle behind a barrier, and every
//! sum runs over a neighbour list in ascending order: the same bits on any number of threads.

use super::Frame;
use crate::collision::neighbours::NeighbourLists;
use crate::collision::spatial_hash::SpatialHash;
use crate::collision::PosedCollider;
use crate::constraints::density::{FluidBlock, VelocityFields, Wall};
use crate::solver::fluids::FluidState;
use crate::solver::parallel::{share, SharedSlice};
use glam::DVec3;
use std::ops::Range;
use std::sync::{Mutex, RwLock};

/// What the worker threads share of the fluids during one frame.
pub(super) struct FluidStage<'a> {
    blocks: &'a [crate::constraints::density::FluidBlock],
    particles: &'a [u32],
    runs: &'a [Range<usize>],
    hashes: &'a RwLock<Vec<SpatialHash>>,
    lists: &'a [Mutex<NeighbourLists>],
    density: SharedSlice<'a, f64>,
    lambda: SharedSlice<'a, f64>,
    wall_gradient: SharedSlice<'a, DVec3>,
    delta: SharedSlice<'a, DVec3>,
    omega: SharedSlice<'a, DVec3>,
    smoothed: SharedSlice<'a, DVec3>,
}

impl<'a> FluidStage<'a> {
    /// The stage over `state`'s buffers, `None` without fluids.
    pub(super) fn new(state: &'a mut FluidState, blocks: &'a [FluidBlock]) -> Option<Self> {
        if state.is_empty() {
            return None;
        }
        Some(FluidStage {
            blocks,
            particles: &state.particles,
            runs: &state.runs,
            hashes: &state.hashes,
            lists: &state.lists,
            density: SharedSlice::new(&mut state.density),
            lambda: SharedSlice::new(&mut state.lambda),
            wall_gradient: SharedSlice::new(&mut state.wall_gradient),
            delta: SharedSlice::new(&mut state.delta),
            omega: SharedSlice::new(&mut state.omega),
            smoothed: SharedSlice::new(&mut state.smoothed),
        })
    }

    /// Thread `t`'s part of the fluid particles, block by block: the block, the positions in
    /// the thread's neighbour lists, and the particles (contiguous within a block).
    fn parts(
        &self,
        t: usize,
        threads: usize,
    ) -> impl Iterator<Item = (&FluidBlock, Range<usize>, Range<usize>)> + '_ {
        let mine = share(0..self.particles.len(), t, threads);
        self.blocks
            .iter()
            .zip(self.runs)
            .filter_map(move |(block, run)| {
                let (start, end) = (run.start.max(mine.start), run.end.min(mine.end));
                (start < end).then(|| {
                    let first = self.particles[start] as usize;
                    (
                        block,
                        start - mine.start..end - mine.start,
                        first..first + (end - start),
                    )
                })
            })
    }
}

impl Frame<'_> {
    /// Thread 0 hashes every fluid block at the predicted positions; then every thread lists
    /// the neighbours of its share.
    pub(super) fn find_fluid_neighbours(&self, t: usize) {
        let Some(fluids) = &self.fluids else {
            return;
        };
        // SAFETY: read-only; nobody writes positions in this stage.
        let x = unsafe { self.x.as_slice() };
        if t == 0 {
            // Rebuilt in place: the hashes keep their buffers from one substep to the next.
            let mut hashes = fluids.hashes.write().unwrap_or_else(|e| e.into_inner());
            hashes.resize_with(fluids.blocks.len(), SpatialHash::default);
            for ((block, run), hash) in fluids.blocks.iter().zip(fluids.runs).zip(&mut *hashes) {
                hash.rebuild(x, &fluids.particles[run.clone()], block.kernel.h);
            }
        }
        self.barrier.wait();
        let hashes = fluids.hashes.read().unwrap_or_else(|e| e.into_inner());
        let mut lists = fluids.lists[t].lock().unwrap_or_else(|e| e.into_inner());
        lists.clear();
        let mine = share(0..fluids.particles.len(), t, self.threads);
        for (b, (block, run)) in fluids.blocks.iter().zip(fluids.runs).enumerate() {
            let (start, end) = (run.start.max(mine.start), run.end.min(mine.end));
            if start < end {
                let particles = &fluids.particles[start..end];
                lists.append(particles, x, &hashes[b], block.kernel.h);
            }
        }
    }

    /// The wall term of particle `i` at `xi` from the colliders it collides with.
    fn wall(&self, block: &FluidBlock, i: usize, xi: DVec3, posed: &[PosedCollider]) -> Wall {
        if !self.collides[i] {
            return Wall::default();
        }
        block.wall(posed.iter().filter_map(|collider| {
            let thickness = collider.collider.thickness;
            let (d, n) = collider.distance_and_normal(xi, block.kernel.h + thickness)?;
            (d - thickness < block.kernel.h).then_some((d - thickness, n))
        }))
    }

    /// One Jacobi pass of the density constraints: densities and λ, then the corrections,
    /// then the moves, each behind a barrier.
    pub(super) fn solve_fluids(&self, t: usize, posed: &[PosedCollider]) {
        let Some(fluids) = &self.fluids else {
            return;
        };
        self.barrier.wait();
        let lists = fluids.lists[t].lock().unwrap_or_else(|e| e.into_inner());
        {
            // SAFETY: positions are read-only in this pass; each thread writes the density
            // and λ of its own particles only.
            let x = unsafe { self.x.as_slice() };
            for (block, listed, particles) in fluids.parts(t, self.threads) {
                let density = unsafe { fluids.density.range(particles.clone()) };
                let lambda = unsafe { fluids.lambda.range(particles.clone()) };
                let walls = unsafe { fluids.wall_gradient.range(particles.clone()) };
                for (k, i) in listed.zip(particles.clone()) {
                    let near = lists.of(k);
                    let wall = self.wall(block, i, x[i], posed);
                    let rho = block.density(x[i], near, x) + wall.density;
                    let own = i - particles.start;
                    density[own] = rho;
                    walls[own] = wall.gradient;
                    lambda[own] = block.lambda((x[i], rho, wall.gradient), near, x);
                }
            }
        }
        self.barrier.wait();
        {
            // SAFETY: positions and λ are read-only in this pass; each thread writes the
            // corrections of its own particles only.
            let (x, lambda) = unsafe { (self.x.as_slice(), fluids.lambda.as_slice()) };
            for (block, listed, particles) in fluids.parts(t, self.threads) {
                let delta = unsafe { fluids.delta.range(particles.clone()) };
                let walls = unsafe { fluids.wall_gradient.range(particles.clone()) };
                for (k, i) in listed.zip(particles.clone()) {
                    let own = i - particles.start;
                    let at = (x[i], lambda[i], walls[own]);
                    delta[own] = block.correction(at, lists.of(k), x, lambda);
                }
            }
        }
        self.barrier.wait();
        for (_, _, particles) in fluids.parts(t, self.threads) {
            // SAFETY: each thread moves its own particles only.
            let (x, delta) = unsafe {
                (
                    self.x.range(particles.clone()),
                    fluids.delta.range(particles.clone()),
                )
            };
            for (x, d) in x.iter_mut().zip(delta.iter()) {
                *x += *d;
            }
        }
        self.barrier.wait();
    }

    /// XSPH viscosity and vorticity confinement of the velocities just updated (`h`: the
    /// substep): the vorticities, then the new velocities, then the copy, each behind a
    /// barrier.
    pub(super) fn smooth_fluid_velocities(&self, t: usize, h: f64) {
        let Some(fluids) = &self.fluids else {
            return;
        };
        let smooths = |b: &FluidBlock| b.viscosity > 0.0 || b.vorticity > 0.0;
        if !fluids.blocks.iter().any(smooths) {
            return;
        }
        let lists = fluids.lists[t].lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY (both passes): positions, velocities and densities are read-only until the
        // copy; each thread writes the vorticity and smoothed velocity of its own particles.
        let fields = unsafe {
            VelocityFields {
                x: self.x.as_slice(),
                v: self.v.as_slice(),
                density: fluids.density.as_slice(),
            }
        };
        if fluids.blocks.iter().any(|b| b.vorticity > 0.0) {
            for (block, listed, particles) in fluids.parts(t, self.threads) {
                let omega = unsafe { fluids.omega.range(particles.clone()) };
                for (k, i) in listed.zip(particles.clone()) {
                    omega[i - particles.start] = block.vorticity_at(i, lists.of(k), &fields);
                }
            }
            self.barrier.wait();
        }
        for (block, listed, particles) in fluids.parts(t, self.threads) {
            if !smooths(block) {
                continue;
            }
            // SAFETY: as above; the vorticities are read-only from here on.
            let omega = (block.vorticity > 0.0).then(|| unsafe { fluids.omega.as_slice() });
            let smoothed = unsafe { fluids.smoothed.range(particles.clone()) };
            for (k, i) in listed.zip(particles.clone()) {
                smoothed[i - particles.start] =
                    block.smoothed_velocity(i, lists.of(k), &fields, omega, h);
            }
        }
        self.barrier.wait();
        for (block, _, particles) in fluids.parts(t, self.threads) {
            if smooths(block) {
                // SAFETY: each thread writes the velocities of its own particles only.
                let (v, smoothed) = unsafe {
                    (
                        self.v.range(particles.clone()),
                        fluids.smoothed.range(particles.clone()),
                    )
                };
                v.copy_from_slice(smoothed);
            }
        }
        self.barrier.wait();
    }
}
