//! The energy terms of the projective solver, one per constraint of the model, each
//! `E_i = W_i/2 · |A_i y − p_i|²` over the positions y of its particles (Bouaziz et al. 2014,
//! eq. 9), in three shapes:
//!
//! - **Centred** (stretch, tetrahedra, dihedral bending, tethers): `A_i` takes each particle's
//!   offset from the term's centroid, `(A_i y)_j = y_j − ȳ`, so `A_iᵀA_i = I − 11ᵀ/N`. The
//!   local step sets `p_j = (y_j − ȳ) − C ∇_j C · W_i⁻¹/α_i` from the constraint's value and
//!   gradient (the same `Constraint::evaluate` XPBD uses), so the term's force
//!   `W_i A_iᵀ(A_i y − p) = C ∇C / α` is exactly XPBD's `∇(C²/2α)`, and a static equilibrium is
//!   the XPBD one — wherever `|∇C|² < 2 |∇C(rest)|²`; where degenerate geometry makes the
//!   gradient larger, `p` moves no farther than twice the linearised projection `|C|/|∇C|`
//!   ([`projection_gain`]). For an edge `|∇C|² = 2` and `W = 2/α`: `p` is then the
//!   paper's own projection (both ends moved to rest length about their midpoint). For the
//!   nonlinear kinds (dihedral angle, tetrahedron volume) it is the quasi-Newton reading of
//!   the local/global step (Liu, Bouaziz, Kavan 2017): the true energy gradient on the
//!   constant matrix, with `W_i = |∇C(rest)|²/α_i`, the curvature of `C²/2α` along `∇C` at
//!   rest. Where the constraint does not act (a slack tether, degenerate geometry) `p = A_i y`
//!   and the term pulls nothing.
//! - **Linear** (isometric and rope bending, `C = s |Σ_j K_j y_j|`): `A_i = s K` and `p = 0`,
//!   with `W_i = 1/α_i`: exactly XPBD's quadratic energy `s²|v|²/2α`. Constant, so the term
//!   lives in the matrix alone; only a pinned particle in it adds to the right-hand side.
//! - **Goal** (shape matching, one term per particle): `A = I`, `p` the particle's goal on
//!   the best-fit rigid copy of the rest shape, `W = 1/α` (XPBD's per-particle
//!   distance-to-goal constraint).
//!
//! Pinned particles are not unknowns: their rows leave the matrix and their known positions
//! move to the right-hand side. Compliance 0 has no weight 1/α; such a term gets the
//! **hard weight** `W = κ · m_min/h² / d` with `κ` = [`HARD_WEIGHT_RATIO`], `m_min` the lightest
//! free particle of the term and `d` its largest diagonal entry of `A_iᵀA_i`: its pull on a
//! particle is κ times that particle's inertia in the substep. Larger κ holds lengths better
//! but stalls the local/global iteration: with the pinned particles fixed, a step can only
//! re-anchor the projected edges at the pins, and the motion the converged solve would give
//! (a swing about the pins) is lost in proportion to κ. Measured on a 10-segment rope pendulum
//! (docs/physics.md, "Projective Dynamics"): κ = 10 keeps 99 % of XPBD's kinetic energy at 10
//! iterations with 0.1 % strain; κ = 10³ keeps 19 %; κ = 10⁶ does not swing at all.

use crate::constraints::Constraint;
use crate::constraints::{curvature::Curvature, Material, Materials};
use glam::DVec3;

/// Ratio of a hard (compliance 0) term's diagonal weight to its lightest particle's `m/h²`.
pub const HARD_WEIGHT_RATIO: f64 = 10.0;

/// Largest ratio of a centred term's curvature now to its curvature at rest (the one in the
/// matrix) at which its local step keeps the exact XPBD force: see [`projection_gain`].
pub const CURVATURE_RATIO_LIMIT: f64 = 2.0;

/// Marks a pinned particle in [`Unknowns::of_particle`].
pub const PINNED: u32 = u32::MAX;

/// Which particles are unknowns of the global step (the free ones), and their order.
#[derive(Debug, Clone)]
pub struct Unknowns {
    /// Unknown index of each particle, or [`PINNED`].
    pub of_particle: Vec<u32>,
    /// Particle of each unknown.
    pub particle: Vec<u32>,
}

impl Unknowns {
    pub fn new(inv_mass: &[f64]) -> Self {
        let mut of_particle = vec![PINNED; inv_mass.len()];
        let mut particle = Vec::new();
        for (i, &w) in inv_mass.iter().enumerate() {
            if w > 0.0 {
                of_particle[i] = particle.len() as u32;
                particle.push(i as u32);
            }
        }
        Unknowns {
            of_particle,
            particle,
        }
    }

    pub fn is_free(&self, i: u32) -> bool {
        self.of_particle[i as usize] != PINNED
    }
}

/// What the weights of a block's terms are made from.
pub struct WeightContext<'a> {
    pub materials: &'a Materials,
    pub mass: &'a [f64],
    pub unknowns: &'a Unknowns,
    /// `1/h²`.
    pub inv_h_sq: f64,
}

impl WeightContext<'_> {
    /// The compliance of a material (every projective material is compliant).
    fn compliance(material: Material) -> f64 {
        match material {
            Material::Compliant { compliance, .. } => compliance,
            Material::Stiff { .. } => 0.0,
        }
    }

    /// `W` for a term whose energy is `curvature / α · |A y − p|² / 2`-like: `curvature / α`,
    /// or the hard weight when `α = 0` (see the module docs). `diagonal` is the term's largest
    /// diagonal entry of `AᵀA`.
    fn weight(&self, material: Material, curvature: f64, particles: &[u32], diagonal: f64) -> f64 {
        let compliance = Self::compliance(material);
        if compliance > 0.0 {
            return curvature / compliance;
        }
        let lightest = particles
            .iter()
            .filter(|&&i| self.unknowns.is_free(i))
            .map(|&i| self.mass[i as usize])
            .fold(f64::INFINITY, f64::min);
        HARD_WEIGHT_RATIO * lightest * self.inv_h_sq / diagonal
    }
}

/// The centred terms of one constraint block, aligned with its items.
#[derive(Debug, Clone, Default)]
pub struct CentredTerms {
    /// `W_i`; 0 for a term left out (no free particle, or no gradient at rest).
    pub weight: Vec<f64>,
    /// `1 / |∇C(rest)|²`, the factor of `C ∇C` in the local step (`1/(α W)` when α > 0).
    pub gain: Vec<f64>,
    /// The first of the block's `N · len` slots in the contribution buffer.
    pub first_slot: usize,
}

impl CentredTerms {
    /// The terms of `items`, whose rest positions are `rest`.
    pub fn new<const N: usize, K: Constraint<N>>(
        items: &[K],
        rest: &[DVec3],
        context: &WeightContext,
        first_slot: usize,
    ) -> Self {
        let mut weight = Vec::with_capacity(items.len());
        let mut gain = Vec::with_capacity(items.len());
        for item in items {
            let particles = item.particles();
            let at_rest = particles.map(|i| rest[i as usize]);
            // Tethers are slack at rest: their |∇C|² = 2 (two unit vectors) always.
            let curvature = item
                .evaluate(&at_rest)
                .map(|(_, g)| g.iter().map(|g| g.length_squared()).sum::<f64>())
                .unwrap_or(2.0);
            let any_free = particles.iter().any(|&i| context.unknowns.is_free(i));
            let material = context.materials.get(item.material());
            if !any_free || curvature.is_nan() || curvature <= 0.0 {
                weight.push(0.0);
                gain.push(0.0);
                continue;
            }
            let diagonal = 1.0 - 1.0 / N as f64;
            let w = context.weight(material, curvature, &particles, diagonal);
            weight.push(w);
            gain.push(1.0 / curvature);
        }
        CentredTerms {
            weight,
            gain,
            first_slot,
        }
    }

    /// Slots this block uses.
    pub fn slots<const N: usize>(&self) -> usize {
        self.weight.len() * N
    }

    /// `W_i A_iᵀA_i` into the matrix (unknowns only).
    pub fn add_to_matrix<const N: usize, K: Constraint<N>>(
        &self,
        items: &[K],
        unknowns: &Unknowns,
        matrix: &mut super::factor::LowerTriangle,
    ) {
        let centring = 1.0 / N as f64;
        for (item, &w) in items.iter().zip(&self.weight) {
            if w == 0.0 {
                continue;
            }
            let unknown = item.particles().map(|i| unknowns.of_particle[i as usize]);
            for a in 0..N {
                for b in 0..=a {
                    if unknown[a] == PINNED || unknown[b] == PINNED {
                        continue;
                    }
                    let entry = if a == b { 1.0 - centring } else { -centring };
                    matrix.add(unknown[a], unknown[b], w * entry);
                }
            }
        }
    }

    /// The local step of item `k`: its contribution `W (Aᵀp)_j + W/N Σ_pinned y` to the
    /// right-hand side of each of its particles, written to `out` (its `N` slots).
    #[inline]
    pub fn contribute<const N: usize, K: Constraint<N>>(
        &self,
        k: usize,
        item: &K,
        x: &[DVec3],
        unknowns: &Unknowns,
        out: &mut [DVec3],
    ) {
        let w = self.weight[k];
        if w == 0.0 {
            return;
        }
        let particles = item.particles();
        let y = particles.map(|i| x[i as usize]);
        let n = N as f64;
        let centroid = y.iter().copied().sum::<DVec3>() / n;
        let mut p = y.map(|y| y - centroid);
        if let Some((c, gradient)) = item.evaluate(&y) {
            let scale = c * projection_gain(self.gain[k], &gradient);
            for (p, g) in p.iter_mut().zip(gradient) {
                *p -= g * scale;
            }
        }
        let mean = p.iter().copied().sum::<DVec3>() / n;
        let pinned: DVec3 = (0..N)
            .filter(|&j| !unknowns.is_free(particles[j]))
            .map(|j| y[j])
            .sum();
        for j in 0..N {
            out[j] = (p[j] - mean + pinned / n) * w;
        }
    }
}

/// The factor of `C ∇C` in a centred term's local step: `1/|∇C(rest)|²`, the quasi-Newton
/// gain whose force is exactly XPBD's, as long as the term's curvature along its gradient now,
/// `|∇C(y)|²/α`, is less than [`CURVATURE_RATIO_LIMIT`] times the one the matrix holds,
/// `|∇C(rest)|²/α`; beyond that `ratio/|∇C(y)|²`, which moves `p` at most `ratio · |C|/|∇C|`
/// (`|C|/|∇C|` is the distance to the constraint's linearised surface, PBD's step). A step of
/// `1/L̃` on a quadratic of curvature `L` converges only while `L < 2 L̃`, and where geometry
/// degenerates the curvature grows without bound: a dihedral's `∇C` goes as one over its
/// triangles' heights, and a corner of cloth crushed against the ground makes one nearly
/// flat. Uncapped, that flung a particle of scenes/pile.toml under the projective solver
/// 0.72 m in one substep (53 m/s, edge strain 20.7). Edges and tethers (`|∇C|² = 2` always)
/// never reach the cap; a bent soft bar of tetrahedra (tests/integration/projective.rs)
/// stays below it, and so rests exactly where XPBD does, while a cap at ratio 1 moved it
/// 9 µm off.
#[inline]
fn projection_gain<const N: usize>(rest_gain: f64, gradient: &[DVec3; N]) -> f64 {
    let current: f64 = gradient.iter().map(|g| g.length_squared()).sum();
    if current > 0.0 {
        rest_gain.min(CURVATURE_RATIO_LIMIT / current)
    } else {
        rest_gain
    }
}

/// The linear terms of an isometric or rope bending block: weights, and slots only for the
/// terms that hold a pinned particle (the others add nothing to the right-hand side).
#[derive(Debug, Clone, Default)]
pub struct LinearTerms {
    pub weight: Vec<f64>,
    /// `(item, first slot)` of every term with a pinned particle, in item order.
    pub pinned_terms: Vec<(u32, u32)>,
}

impl LinearTerms {
    pub fn new<const N: usize>(
        items: &[impl Curvature<N>],
        context: &WeightContext,
        mut next_slot: usize,
    ) -> Self {
        let mut weight = Vec::with_capacity(items.len());
        let mut pinned_terms = Vec::new();
        for (k, item) in items.iter().enumerate() {
            let particles = item.particles();
            let any_free = particles.iter().any(|&i| context.unknowns.is_free(i));
            if !any_free {
                weight.push(0.0);
                continue;
            }
            let s_sq = item.scale() * item.scale();
            let diagonal = (item.weights().iter())
                .map(|k| s_sq * k * k)
                .fold(0.0, f64::max);
            let material = context.materials.get(item.material());
            weight.push(context.weight(material, 1.0, &particles, diagonal));
            if particles.iter().any(|&i| !context.unknowns.is_free(i)) {
                pinned_terms.push((k as u32, next_slot as u32));
                next_slot += N;
            }
        }
        LinearTerms {
            weight,
            pinned_terms,
        }
    }

    pub fn slots<const N: usize>(&self) -> usize {
        self.pinned_terms.len() * N
    }

    /// `W s² K Kᵀ` into the matrix (unknowns only).
    pub fn add_to_matrix<const N: usize>(
        &self,
        items: &[impl Curvature<N>],
        unknowns: &Unknowns,
        matrix: &mut super::factor::LowerTriangle,
    ) {
        for (item, &w) in items.iter().zip(&self.weight) {
            if w == 0.0 {
                continue;
            }
            let unknown = item.particles().map(|i| unknowns.of_particle[i as usize]);
            let (weights, s_sq) = (item.weights(), item.scale() * item.scale());
            for a in 0..N {
                for b in 0..=a {
                    if unknown[a] != PINNED && unknown[b] != PINNED {
                        let entry = w * s_sq * weights[a] * weights[b];
                        matrix.add(unknown[a], unknown[b], entry);
                    }
                }
            }
        }
    }

    /// A term with a pinned particle: `−W s² K_j Σ_pinned K_k y_k` for each of its particles.
    pub fn contribute<const N: usize>(
        &self,
        item_index: usize,
        item: &impl Curvature<N>,
        x: &[DVec3],
        unknowns: &Unknowns,
        out: &mut [DVec3],
    ) {
        let w = self.weight[item_index];
        let (particles, weights) = (item.particles(), item.weights());
        let pinned: DVec3 = (0..N)
            .filter(|&j| !unknowns.is_free(particles[j]))
            .map(|j| x[particles[j] as usize] * weights[j])
            .sum();
        let s_sq = item.scale() * item.scale();
        for (out, k) in out.iter_mut().zip(weights) {
            *out = pinned * (-w * s_sq * k);
        }
    }
}

/// The goal terms of one shape-matching cluster: one per particle.
#[derive(Debug, Clone, Default)]
pub struct GoalTerms {
    /// `W` of each particle of the cluster, in order.
    pub weight: Vec<f64>,
    pub first_slot: usize,
}

impl GoalTerms {
    pub fn new(
        particles: std::ops::Range<usize>,
        material: Material,
        context: &WeightContext,
        first_slot: usize,
    ) -> Self {
        let weight = particles
            .map(|i| {
                if context.unknowns.is_free(i as u32) {
                    context.weight(material, 1.0, &[i as u32], 1.0)
                } else {
                    0.0
                }
            })
            .collect();
        GoalTerms { weight, first_slot }
    }

    pub fn add_to_matrix(
        &self,
        particles: std::ops::Range<usize>,
        unknowns: &Unknowns,
        matrix: &mut super::factor::LowerTriangle,
    ) {
        for (i, &w) in particles.zip(&self.weight) {
            let unknown = unknowns.of_particle[i];
            if unknown != PINNED {
                matrix.add(unknown, unknown, w);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constraints::distance::DistanceConstraint;
    use crate::constraints::MaterialId;

    /// A dihedral whose second triangle is crushed almost onto the hinge (its height 1e-4 of
    /// the rest one's) has a gradient thousands of times the rest one: the local step moves
    /// `p` at most twice the linearised projection, `2 |C| / |∇C|`, not the rest gain's
    /// `|C| |∇C| / |∇C(rest)|²` (which flung a particle of the pile 0.72 m in a substep).
    #[test]
    fn a_crushed_dihedral_moves_its_projection_no_farther_than_the_constraint() {
        use crate::constraints::dihedral::DihedralConstraint;
        let mut materials = Materials::default();
        let id = materials.intern(Material::Compliant {
            compliance: 1.0,
            damping: 0.0,
        });
        let rest = [
            DVec3::ZERO,
            DVec3::X,
            DVec3::new(0.5, 1.0, 0.0),
            DVec3::new(0.5, -1.0, 0.0),
        ];
        let mut hinge = DihedralConstraint {
            particles: [0, 1, 2, 3],
            rest_angle: 0.0,
            material: id,
        };
        hinge.rest_angle = hinge.evaluate(&rest).unwrap().0;
        let unknowns = Unknowns::new(&[1.0; 4]);
        let context = WeightContext {
            materials: &materials,
            mass: &[1.0; 4],
            unknowns: &unknowns,
            inv_h_sq: 1.0,
        };
        let terms = CentredTerms::new(std::slice::from_ref(&hinge), &rest, &context, 0);
        let gradient_sq = |x: &[DVec3; 4]| -> f64 {
            let (_, g) = hinge.evaluate(x).unwrap();
            g.iter().map(|g| g.length_squared()).sum()
        };
        let crushed = [
            rest[0],
            rest[1],
            rest[2],
            DVec3::new(0.5, -1e-4 * 0.6, 1e-4 * 0.8),
        ];
        let (c, _) = hinge.evaluate(&crushed).unwrap();
        assert!(c.abs() > 0.5, "the hinge is bent: C = {c}");
        assert!(gradient_sq(&crushed) > 1e6 * gradient_sq(&rest));
        let mut out = [DVec3::ZERO; 4];
        terms.contribute(0, &hinge, &crushed, &unknowns, &mut out);
        let centroid = crushed.iter().copied().sum::<DVec3>() / 4.0;
        let moved: f64 = (0..4)
            .map(|j| (out[j] / terms.weight[0] - (crushed[j] - centroid)).length_squared())
            .sum::<f64>()
            .sqrt();
        let linearised = c.abs() / gradient_sq(&crushed).sqrt();
        let limit = CURVATURE_RATIO_LIMIT * linearised * (1.0 + 1e-9);
        assert!(moved > 0.0 && moved <= limit, "{moved} vs {linearised}");
        // Near rest the force is still exactly XPBD's (the rest gain is the smaller).
        let bent = [rest[0], rest[1], rest[2], DVec3::new(0.5, -1.1, 0.6)];
        assert!(gradient_sq(&bent) < gradient_sq(&rest));
        terms.contribute(0, &hinge, &bent, &unknowns, &mut out);
        let (c, gradient) = hinge.evaluate(&bent).unwrap();
        let centroid = bent.iter().copied().sum::<DVec3>() / 4.0;
        for j in 0..4 {
            let force = (bent[j] - centroid) * terms.weight[0] - out[j];
            assert!((force - gradient[j] * c).length() < 1e-9, "{force} vs XPBD");
        }
    }

    /// The centred stretch term's force is XPBD's `C ∇C / α` in any state, and its weight the
    /// paper's `2/α` over the centred pair (= `1/α` on the difference).
    #[test]
    fn the_stretch_force_is_the_xpbd_gradient() {
        let mut materials = Materials::default();
        let alpha = 0.01;
        let id = materials.intern(Material::Compliant {
            compliance: alpha,
            damping: 0.0,
        });
        let edge = DistanceConstraint {
            particles: [0, 1],
            rest_length: 1.0,
            material: id,
            tearable: false,
            diagonal: false,
        };
        let rest = [DVec3::ZERO, DVec3::X];
        let unknowns = Unknowns::new(&[1.0, 1.0]);
        let context = WeightContext {
            materials: &materials,
            mass: &[1.0, 1.0],
            unknowns: &unknowns,
            inv_h_sq: 1.0,
        };
        let terms = CentredTerms::new(std::slice::from_ref(&edge), &rest, &context, 0);
        assert!((terms.weight[0] - 2.0 / alpha).abs() < 1e-9);
        let x = [DVec3::new(0.1, 0.2, 0.0), DVec3::new(1.4, -0.3, 0.2)];
        let mut out = [DVec3::ZERO; 2];
        terms.contribute(0, &edge, &x, &unknowns, &mut out);
        // Force on particle j: W (A y)_j − contribution_j.
        let centroid = (x[0] + x[1]) / 2.0;
        let (c, gradient) = edge.evaluate(&x).unwrap();
        for j in 0..2 {
            let force = (x[j] - centroid) * terms.weight[0] - out[j];
            let xpbd = gradient[j] * (c / alpha);
            assert!((force - xpbd).length() < 1e-9, "{force} vs {xpbd}");
        }
        let _ = MaterialId::RIGID;
    }
}

/// Contact terms (the paper's collision constraints in the local step): a particle of an
/// object that touches colliders, other objects or itself gets, while it *touches* (inside a
/// collider's contact margin when the local step looks at it, or moved by a contact
/// projection after the last global step, or touching earlier in the same substep), the term
/// `A = I`, `p` = the particle projected out of the colliders (with friction; itself when
/// clear of them), `W` = [`CONTACT_WEIGHT_RATIO`] × the particle's own diagonal entry of `H`
/// without contacts (its inertia and every other term's weight on it), so a contact holds a
/// particle as firmly as its neighbours pull it. The term is in the matrix only while the
/// particle touches: when the set of touching particles changes, `H + Σ W` is factored again
/// on the same symbolic analysis ([`super::factor::Factor::refactor_with_diagonal`]).
#[derive(Debug, Clone, Default)]
pub struct ContactTerms {
    /// `W` per particle; 0 for particles that touch nothing (or are pinned).
    pub weight: Vec<f64>,
    pub first_slot: usize,
}

/// Ratio of a contact term's weight to its particle's diagonal entry of `H` without it.
pub const CONTACT_WEIGHT_RATIO: f64 = 1.0;

impl ContactTerms {
    pub fn new(
        collides: impl Iterator<Item = bool>,
        diagonal: &[f64],
        unknowns: &Unknowns,
        first_slot: usize,
    ) -> Self {
        let weight = collides
            .enumerate()
            .map(|(i, collides)| {
                let u = unknowns.of_particle[i];
                if collides && u != PINNED {
                    CONTACT_WEIGHT_RATIO * diagonal[u as usize]
                } else {
                    0.0
                }
            })
            .collect();
        ContactTerms { weight, first_slot }
    }

    /// The diagonal the terms of the `touching` particles add to `H`, per unknown.
    pub fn added_diagonal(&self, touching: &[bool], unknowns: &Unknowns) -> Vec<f64> {
        let mut added = vec![0.0; unknowns.particle.len()];
        for ((&w, &touches), &u) in self.weight.iter().zip(touching).zip(&unknowns.of_particle) {
            if touches && w > 0.0 {
                added[u as usize] = w;
            }
        }
        added
    }
}
