//! Projective Dynamics (Bouaziz, Martin, Liu, Kavan, Pauly 2014, "Projective Dynamics: Fusing
//! Constraint Projections for Fast Simulation"; the seeds' local/global solver), used with
//! `simulation.solver = "projective"` in place of XPBD's Gauss–Seidel sweeps. The substep,
//! pins, contacts and velocity update are the XPBD solver's (solver/step); only the
//! constraint solve differs. Per substep, with `s = x + h v + h² g` the inertial prediction:
//!
//! ```text
//! minimise  1/(2h²) |x − s|²_M + Σ_i W_i/2 |A_i x − p_i|²        (eq. 9)
//! repeat `iterations` times:
//!   local:   p_i = projection of A_i x for every term (in parallel, per term)
//!   global:  (M/h² + Σ_i W_i A_iᵀA_i) x = M s/h² + Σ_i W_i A_iᵀ p_i      (eq. 11)
//!   contacts: the XPBD contact projections (colliders, particles, mesh features)
//! ```
//!
//! The matrix is the same for the three coordinates. Its elastic part is factored once per
//! run ([`factor`]) and again only when the model's topology changes (tearing); contacts add
//! to its diagonal while particles touch, and change it with a numeric refactorization on the
//! same symbolic analysis. All are counted in [`ProjectiveState::factorizations`] and the
//! stats log. The terms and their weights are in [`terms`]: a compliance α gives XPBD's
//! energy `C²/2α` exactly, so a static equilibrium is XPBD's.
//!
//! **Contacts** (the paper's collision constraints, in the matrix while they act): a particle
//! touches in an iteration when its iterate is inside a collider's contact margin, or when
//! the contact projections (colliders, particles, mesh features) moved it after the previous
//! global step; it then has a term `W |x − p|²/2` with `p` its iterate pushed out of the
//! colliders ([`terms::ContactTerms`]). When the touching set differs from the one the factor
//! holds, thread 0 refactors `H + Σ W` (numeric only). After each global step the positions
//! also go through XPBD's contact projections, so nothing ends an iteration inside a
//! collider. The projection alone gained energy at impacts, and terms kept in the matrix for
//! the whole run dragged every colliding particle (docs/physics.md).
//!
//! **Chebyshev acceleration** (Wang 2015, "A Chebyshev Semi-Iterative Approach for
//! Accelerating Projective and Position-based Dynamics"), with `chebyshev_rho = ρ > 0`: the
//! global step's result x̂ of iteration k is extrapolated from the iterate before last,
//! `x_{k+1} = ω_{k+1} (x̂ − x_{k−1}) + x_{k−1}`, with `ω_1 = 1`, `ω_2 = 2/(2 − ρ²)`,
//! `ω_{k+1} = 4/(4 − ρ² ω_k)`.
//!
//! Determinism: the local step writes each term's contributions to its own slots; the
//! right-hand side sums each particle's slots in slot order; each coordinate is solved by
//! one thread with a sequential solve. The bits do not depend on the thread count.

pub mod factor;
pub mod terms;

use crate::model::Model;
use anyhow::Result;
use factor::{Factor, LowerTriangle};
use faer::dyn_stack::MemBuffer;
use glam::DVec3;
use serde::Serialize;
use std::sync::{Mutex, RwLock};
use terms::{CentredTerms, ContactTerms, GoalTerms, LinearTerms, Unknowns, WeightContext};

/// `[simulation.projective]` as the solver uses it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// ρ of Chebyshev acceleration; 0 = off.
    pub chebyshev_rho: f64,
}

impl Settings {
    /// The Chebyshev weight `ω` of iteration `k` (0-based); 1 when acceleration is off.
    pub fn chebyshev_omega(&self, k: usize) -> f64 {
        let rho_sq = self.chebyshev_rho * self.chebyshev_rho;
        if rho_sq == 0.0 || k == 0 {
            return 1.0;
        }
        let mut omega = 2.0 / (2.0 - rho_sq);
        for _ in 1..k {
            omega = 4.0 / (4.0 - rho_sq * omega);
        }
        omega
    }
}

/// The terms of every constraint kind the projective solver expresses and the prefactored
/// matrix.
#[derive(Debug)]
pub struct System {
    pub terms: Terms,
    /// The factor of `H`, with the contact terms of the particles touching now; thread 0
    /// refactors it between barriers when they change.
    pub factor: RwLock<Factor>,
}

/// The terms of every kind, the unknowns, and where each term's contributions go.
#[derive(Debug)]
pub struct Terms {
    pub unknowns: Unknowns,
    pub stretch: CentredTerms,
    pub tets: CentredTerms,
    pub bending: CentredTerms,
    pub long_range: CentredTerms,
    pub isometric_bending: LinearTerms,
    pub rope_bending: LinearTerms,
    /// One per shape-matching cluster, in the model's order.
    pub goals: Vec<GoalTerms>,
    /// With colliders: one per particle.
    pub contacts: ContactTerms,
    /// Per unknown, `m/h²`.
    pub inertia: Vec<f64>,
    /// Per unknown, its slots in the contribution buffer (compressed rows, slot order).
    incidence_starts: Vec<u32>,
    incidence_slots: Vec<u32>,
    slots: usize,
}

impl System {
    /// The system of `model` at its substep, factored.
    pub fn new(model: &Model) -> Result<Self> {
        let (terms, matrix) = Terms::assemble(model);
        Ok(System {
            terms,
            factor: RwLock::new(Factor::new(matrix)?),
        })
    }

    /// `check`'s estimate of what the projective solver adds to a run's peak memory: the
    /// factor (from the symbolic analysis alone), the matrix it is made from, the terms and
    /// the per-substep buffers.
    pub fn estimate_bytes(model: &Model) -> usize {
        let (terms, matrix) = Terms::assemble(model);
        let n = terms.unknowns.particle.len();
        let particles = model.particles.len();
        let factor = Factor::analysed_bytes(matrix);
        let indices = terms.incidence_slots.len() * 4 + terms.incidence_starts.len() * 4;
        let unknowns = particles * 4 + n * 12;
        let weights =
            (model.stretch.len() + model.tets.len() + model.bending.len() + model.long_range.len())
                * 16
                + (model.isometric_bending.len() + model.rope_bending.len()) * 8;
        // contributions, rhs, inertial + previous + solved, touching (two copies).
        let buffers = terms.slots * 24 + 3 * n * 8 + 3 * particles * 24 + 2 * particles;
        factor + indices + unknowns + weights + buffers
    }
}

/// The contact terms of the particles of objects that touch colliders, each other or
/// themselves, weighted by the diagonal of `H` before contacts; none where no object does.
fn contact_terms(
    model: &Model,
    diagonal: &[f64],
    unknowns: &Unknowns,
    first_slot: usize,
) -> ContactTerms {
    let touches: Vec<bool> = (0..model.objects.len())
        .map(|k| {
            let (others, itself) = model.touches_particles(k);
            model.objects[k].collide && !model.colliders.is_empty() || others || itself
        })
        .collect();
    if !touches.contains(&true) {
        return ContactTerms::default();
    }
    let collides = (0..model.particles.len()).map(|i| touches[model.owner[i] as usize]);
    ContactTerms::new(collides, diagonal, unknowns, first_slot)
}

impl Terms {
    /// The terms, their slots and the matrix of `model`.
    fn assemble(model: &Model) -> (Terms, LowerTriangle) {
        let h = model.params.substep();
        let particles = &model.particles;
        let unknowns = Unknowns::new(&particles.inv_mass);
        let rest = rest_positions(model);
        let context = WeightContext {
            materials: &model.materials,
            mass: &particles.mass,
            unknowns: &unknowns,
            inv_h_sq: 1.0 / (h * h),
        };
        let mut slot = 0;
        let stretch = CentredTerms::new(&model.stretch.items, &rest, &context, slot);
        slot += stretch.slots::<2>();
        let tets = CentredTerms::new(&model.tets.items, &rest, &context, slot);
        slot += tets.slots::<4>();
        let bending = CentredTerms::new(&model.bending.items, &rest, &context, slot);
        slot += bending.slots::<4>();
        let long_range = CentredTerms::new(&model.long_range.items, &rest, &context, slot);
        slot += long_range.slots::<2>();
        let isometric_bending = LinearTerms::new(&model.isometric_bending.items, &context, slot);
        slot += isometric_bending.slots::<4>();
        let rope_bending = LinearTerms::new(&model.rope_bending.items, &context, slot);
        slot += rope_bending.slots::<3>();
        let mut goals = Vec::new();
        for cluster in &model.shape_matching {
            let terms = GoalTerms::new(cluster.particles.clone(), cluster.material, &context, slot);
            slot += cluster.particles.len();
            goals.push(terms);
        }

        let contacts_first_slot = slot;
        let n = unknowns.particle.len();
        let inertia: Vec<f64> = unknowns
            .particle
            .iter()
            .map(|&i| particles.mass[i as usize] * context.inv_h_sq)
            .collect();
        let mut matrix = LowerTriangle::new(n);
        for (k, &m) in inertia.iter().enumerate() {
            matrix.add(k as u32, k as u32, m);
        }
        stretch.add_to_matrix(&model.stretch.items, &unknowns, &mut matrix);
        tets.add_to_matrix(&model.tets.items, &unknowns, &mut matrix);
        bending.add_to_matrix(&model.bending.items, &unknowns, &mut matrix);
        long_range.add_to_matrix(&model.long_range.items, &unknowns, &mut matrix);
        isometric_bending.add_to_matrix(&model.isometric_bending.items, &unknowns, &mut matrix);
        rope_bending.add_to_matrix(&model.rope_bending.items, &unknowns, &mut matrix);
        for (cluster, terms) in model.shape_matching.iter().zip(&goals) {
            terms.add_to_matrix(cluster.particles.clone(), &unknowns, &mut matrix);
        }
        let contacts = contact_terms(model, &matrix.diagonal(), &unknowns, contacts_first_slot);
        slot += contacts.weight.len();
        let mut terms = Terms {
            unknowns,
            stretch,
            tets,
            bending,
            long_range,
            isometric_bending,
            rope_bending,
            goals,
            contacts,
            inertia,
            incidence_starts: Vec::new(),
            incidence_slots: Vec::new(),
            slots: slot,
        };
        terms.index_slots(model);
        (terms, matrix)
    }

    /// Builds, per unknown, the list of slots that add to its right-hand side.
    fn index_slots(&mut self, model: &Model) {
        let mut slot_particle = vec![terms::PINNED; self.slots];
        let mut place = |first: usize, particles: &mut dyn Iterator<Item = u32>| {
            for (k, i) in particles.enumerate() {
                slot_particle[first + k] = i;
            }
        };
        place(
            self.stretch.first_slot,
            &mut model.stretch.items.iter().flat_map(|c| c.particles),
        );
        place(
            self.tets.first_slot,
            &mut model.tets.items.iter().flat_map(|c| c.particles),
        );
        place(
            self.bending.first_slot,
            &mut model.bending.items.iter().flat_map(|c| c.particles),
        );
        place(
            self.long_range.first_slot,
            &mut model.long_range.items.iter().flat_map(|c| c.particles),
        );
        for &(k, first) in &self.isometric_bending.pinned_terms {
            let particles = model.isometric_bending.items[k as usize].particles;
            place(first as usize, &mut particles.into_iter());
        }
        for &(k, first) in &self.rope_bending.pinned_terms {
            let particles = model.rope_bending.items[k as usize].particles;
            place(first as usize, &mut particles.into_iter());
        }
        for (cluster, terms) in model.shape_matching.iter().zip(&self.goals) {
            place(
                terms.first_slot,
                &mut cluster.particles.clone().map(|i| i as u32),
            );
        }
        place(
            self.contacts.first_slot,
            &mut (0..self.contacts.weight.len() as u32),
        );
        // Left-out terms (weight 0) leave their slots at zero: harmless to sum.
        let n = self.unknowns.particle.len();
        let mut starts = vec![0u32; n + 1];
        for &i in &slot_particle {
            if i != terms::PINNED && self.unknowns.is_free(i) {
                starts[self.unknowns.of_particle[i as usize] as usize + 1] += 1;
            }
        }
        for k in 0..n {
            starts[k + 1] += starts[k];
        }
        let mut fill = starts.clone();
        let mut slots = vec![0u32; starts[n] as usize];
        for (slot, &i) in slot_particle.iter().enumerate() {
            if i != terms::PINNED && self.unknowns.is_free(i) {
                let u = self.unknowns.of_particle[i as usize] as usize;
                slots[fill[u] as usize] = slot as u32;
                fill[u] += 1;
            }
        }
        self.incidence_starts = starts;
        self.incidence_slots = slots;
    }

    /// Slots of the contribution buffer.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// The slots whose contributions add to unknown `u`'s right-hand side, in slot order.
    pub fn slots_of(&self, u: usize) -> &[u32] {
        let range = self.incidence_starts[u] as usize..self.incidence_starts[u + 1] as usize;
        &self.incidence_slots[range]
    }
}

/// Every particle's rest position: its object's rest geometry (split particles of a torn
/// object at the vertex they came from).
fn rest_positions(model: &Model) -> Vec<DVec3> {
    let mut rest = vec![DVec3::ZERO; model.particles.len()];
    for object in &model.objects {
        for (local, i) in object.globals().enumerate() {
            let source = object.source_vertex[local] as usize;
            rest[i] = object.topology.positions[source];
        }
    }
    rest
}

/// The figures of the projective solver in the stats log.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ProjectiveFigures {
    /// Factorizations of the system matrix since the run (or its resume) started.
    pub factorizations: usize,
    /// Unknowns of the global step (free particles).
    pub unknowns: usize,
    /// Nonzeros of the matrix's lower triangle.
    pub matrix_nonzeros: usize,
    /// Bytes of the Cholesky factor's values.
    pub factor_bytes: usize,
}

/// The projective solver's part of a run: the system and its per-substep buffers.
pub struct ProjectiveState {
    pub settings: Settings,
    pub system: System,
    /// Per slot, one term's contribution to one particle's right-hand side.
    pub contributions: Vec<DVec3>,
    /// The right-hand side, then the solution: three columns (x, y, z) of one entry per
    /// unknown.
    pub rhs: Vec<f64>,
    /// The inertial prediction `s` of every particle.
    pub inertial: Vec<DVec3>,
    /// The iterate before the current one (Chebyshev); empty when acceleration is off.
    pub previous: Vec<DVec3>,
    /// Every particle where the last iteration's write-back put it (the global step's
    /// solution, extrapolated with Chebyshev), before the contact projections.
    pub solved: Vec<DVec3>,
    /// Solve scratch, one per coordinate.
    pub scratch: [Mutex<MemBuffer>; 3],
    /// Per particle, whether its contact term acts in this iteration ([`ContactTerms`]).
    pub touching: Vec<bool>,
    /// The touching particles the factor holds contact terms for, and the factorizations made
    /// since the run started.
    pub factored: Mutex<FactoredContacts>,
    /// The model's topology version the system was built for.
    pub topology: u64,
}

impl ProjectiveState {
    pub fn new(model: &Model, settings: Settings, factorizations: usize) -> Result<Self> {
        let system = System::new(model)?;
        let n = model.particles.len();
        let unknowns = system.terms.unknowns.particle.len();
        let accelerated = settings.chebyshev_rho > 0.0;
        Ok(ProjectiveState {
            settings,
            contributions: vec![DVec3::ZERO; system.terms.slots()],
            rhs: vec![0.0; 3 * unknowns],
            inertial: vec![DVec3::ZERO; n],
            previous: if accelerated {
                vec![DVec3::ZERO; n]
            } else {
                Vec::new()
            },
            scratch: std::array::from_fn(|_| {
                Mutex::new(
                    system
                        .factor
                        .read()
                        .unwrap_or_else(|e| e.into_inner())
                        .solve_scratch(),
                )
            }),
            solved: vec![DVec3::ZERO; n],
            touching: vec![false; n],
            factored: Mutex::new(FactoredContacts {
                touching: vec![false; n],
                factorizations: factorizations + 1,
                failure: None,
            }),
            system,
            topology: topology_version(model),
        })
    }

    pub fn figures(&self) -> ProjectiveFigures {
        let factor = self.system.factor.read().unwrap_or_else(|e| e.into_inner());
        ProjectiveFigures {
            factorizations: self.factorizations(),
            unknowns: factor.len(),
            matrix_nonzeros: factor.matrix_nonzeros(),
            factor_bytes: factor.value_bytes(),
        }
    }

    /// Factorizations made since the run started.
    pub fn factorizations(&self) -> usize {
        self.factored
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .factorizations
    }
}

/// Which particles' contact terms the factor holds.
#[derive(Debug)]
pub struct FactoredContacts {
    pub touching: Vec<bool>,
    pub factorizations: usize,
    /// Why the last refactorization failed (it cannot: a positive diagonal added to a
    /// positive definite matrix), reported as the frame's divergence.
    pub failure: Option<String>,
}

/// Sum of the objects' topology versions: changes whenever a tear remade constraints.
pub fn topology_version(model: &Model) -> u64 {
    model.objects.iter().map(|o| o.topology_version).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chebyshev_weights_follow_wang_2015() {
        let off = Settings { chebyshev_rho: 0.0 };
        assert_eq!(off.chebyshev_omega(5), 1.0);
        let on = Settings { chebyshev_rho: 0.9 };
        assert_eq!(on.chebyshev_omega(0), 1.0);
        let w1 = 2.0 / (2.0 - 0.81);
        assert!((on.chebyshev_omega(1) - w1).abs() < 1e-15);
        let w2 = 4.0 / (4.0 - 0.81 * w1);
        assert!((on.chebyshev_omega(2) - w2).abs() < 1e-15);
        // ω rises towards 2/(1 + √(1 − ρ²)).
        let limit = 2.0 / (1.0 + (1.0f64 - 0.81).sqrt());
        assert!((on.chebyshev_omega(200) - limit).abs() < 1e-9);
    }
}
