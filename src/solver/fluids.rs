//! The solver's buffers for fluid objects (density constraints,
//! [`crate::constraints::density`]) kept from substep to substep, and the per-frame density
//! figures of the stats log.
//!
//! Every thread owns a contiguous share of the fluid particles (all fluid objects' particles,
//! ascending) and its neighbour lists; the per-particle fields are indexed by particle. A
//! particle's neighbours are the particles of its own fluid object within the kernel radius
//! (two fluid objects meet through particle contacts, not through each other's densities).

use crate::collision::neighbours::NeighbourLists;
use crate::collision::spatial_hash::SpatialHash;
use crate::constraints::density::FluidBlock;
use crate::model::Model;
use glam::DVec3;
use std::sync::{Mutex, RwLock};

/// The fluid objects' particles and the buffers their stages fill.
#[derive(Debug, Default)]
pub struct FluidState {
    /// Every fluid particle, ascending, and the index of its block in `model.fluids`.
    pub particles: Vec<u32>,
    /// Each block's run of `particles` (blocks in `model.fluids` order).
    pub runs: Vec<std::ops::Range<usize>>,
    /// Each block's hash of its particles at the substep's predicted positions.
    pub hashes: RwLock<Vec<SpatialHash>>,
    /// Each thread's neighbour lists, for its share of `particles`.
    pub lists: Vec<Mutex<NeighbourLists>>,
    /// Per particle (all particles, so neighbours index them directly): density, λ, the
    /// position correction, the vorticity and the smoothed velocity.
    pub density: Vec<f64>,
    pub lambda: Vec<f64>,
    /// The walls' part of each particle's own constraint gradient.
    pub wall_gradient: Vec<DVec3>,
    pub delta: Vec<DVec3>,
    pub omega: Vec<DVec3>,
    pub smoothed: Vec<DVec3>,
}

impl FluidState {
    /// Buffers for `model`'s fluids on `threads` threads (empty without fluids).
    pub fn new(model: &Model, threads: usize) -> FluidState {
        if model.fluids.is_empty() {
            return FluidState::default();
        }
        let n = model.particles.len();
        let mut particles = Vec::new();
        let mut runs = Vec::new();
        for block in &model.fluids {
            let start = particles.len();
            particles.extend(block.particles.clone().map(|i| i as u32));
            runs.push(start..particles.len());
        }
        FluidState {
            particles,
            runs,
            hashes: RwLock::new(Vec::new()),
            lists: (0..threads).map(|_| Mutex::default()).collect(),
            density: vec![0.0; n],
            lambda: vec![0.0; n],
            wall_gradient: vec![DVec3::ZERO; n],
            delta: vec![DVec3::ZERO; n],
            omega: vec![DVec3::ZERO; n],
            smoothed: vec![DVec3::ZERO; n],
        }
    }

    pub fn is_empty(&self) -> bool {
        self.particles.is_empty()
    }
}

/// A fluid object's figures for one frame.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FluidFigures {
    /// Mean and largest density error over the object's particles (see
    /// [`FluidBlock::density_error`]).
    pub mean_density_error: f64,
    pub max_density_error: f64,
    pub particles: usize,
}

/// The SPH densities of `block`'s particles at positions `x` (all particles), in particle
/// order, into `out`, by a fresh neighbour search on one thread; the walls are left out.
pub fn densities(block: &FluidBlock, x: &[DVec3], out: &mut Vec<f64>) {
    let particles: Vec<u32> = block.particles.clone().map(|i| i as u32).collect();
    let hash = SpatialHash::build(x, &particles, block.kernel.h);
    let mut lists = NeighbourLists::default();
    lists.build(&particles, x, &hash, block.kernel.h);
    out.clear();
    out.extend(
        (particles.iter().enumerate()).map(|(k, &i)| block.density(x[i as usize], lists.of(k), x)),
    );
}

/// Every fluid object's figures at positions `x`, from [`densities`].
pub fn figures(blocks: &[FluidBlock], x: &[DVec3]) -> Vec<FluidFigures> {
    let mut density = Vec::new();
    blocks
        .iter()
        .map(|block| {
            densities(block, x, &mut density);
            let errors = density.iter().map(|&rho| block.density_error(rho));
            let (sum, max) = errors.fold((0.0, 0.0_f64), |(s, m), e| (s + e, m.max(e)));
            FluidFigures {
                mean_density_error: sum / density.len().max(1) as f64,
                max_density_error: max,
                particles: density.len(),
            }
        })
        .collect()
}
