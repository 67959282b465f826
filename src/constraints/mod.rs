//! Constraint kinds and the one XPBD update they share.
//!
//! Each kind supplies only its value `C(p)` and gradients `∇_i C` ([`Constraint::evaluate`]);
//! [`project`] does the rest, following XPBD (Macklin, Müller, Chentanez 2016, eq. 18 with the
//! damping of eq. 26) in the small-steps setting (Macklin et al. 2019):
//!
//! ```text
//! α̃ = α / h²,   γ = α β / h
//! Δλ = (−C(p) − α̃ λ − γ Σ_i ∇_i C · (p_i − x_prev_i)) / ((1 + γ) Σ_i w_i |∇_i C|² + α̃)
//! λ += Δλ,   p_i += w_i ∇_i C Δλ
//! ```
//!
//! `α` is the compliance (inverse stiffness, in the constraint's units: m/N for an edge),
//! `β` the constraint's `damping`, `w_i` inverse masses, `h` the substep. With α = 0 the damping
//! term vanishes. Because `α̃` scales with `1/h²` and λ accumulates the force × h², the
//! equilibrium of a compliant constraint under a load F is `C = −α F` whatever the substeps and
//! iterations: the stiffness is a material property, not a solver artefact.
//!
//! In PBD mode (`solver = "pbd"`, Müller et al. 2007) a constraint has a stiffness instead:
//! `Δλ = −k' C / Σ_i w_i |∇_i C|²` with `k' = 1 − (1 − k)^(1/n)` for n iterations per substep,
//! which removes the dependence on the iteration count but not on the time step.

pub mod curvature;
pub mod dihedral;
pub mod distance;
pub mod long_range;
pub mod shape_matching;
pub mod tet_volume;
pub mod volume;

use glam::DVec3;

/// How a constraint resists being violated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Material {
    /// XPBD: compliance α (inverse stiffness, in the units of `C` per newton, or per N·m) and
    /// damping β (eq. 26; no effect when α = 0).
    Compliant { compliance: f64, damping: f64 },
    /// PBD: stiffness `k'` in [0, 1], already corrected for the iteration count.
    Stiff { stiffness: f64 },
}

impl Material {
    /// Rigid in either mode.
    pub const RIGID: Material = Material::Compliant {
        compliance: 0.0,
        damping: 0.0,
    };

    /// PBD stiffness `k` per iteration corrected for `iterations` per substep:
    /// `k' = 1 − (1 − k)^(1/n)`.
    pub fn pbd(stiffness: f64, iterations: usize) -> Material {
        Material::Stiff {
            stiffness: 1.0 - (1.0 - stiffness).powf(1.0 / iterations as f64),
        }
    }

    /// Δλ for a constraint of value `c`, current multiplier `lambda`, `Σ w |∇C|²`,
    /// `Σ ∇C · (p − x_prev)` and substep reciprocal `inv_h`.
    #[inline]
    pub fn delta_lambda(
        self,
        c: f64,
        lambda: f64,
        w_grad_sq: f64,
        grad_dot_dx: f64,
        inv_h: f64,
    ) -> f64 {
        match self {
            Material::Compliant {
                compliance,
                damping,
            } => delta_lambda(
                c,
                lambda,
                w_grad_sq,
                grad_dot_dx,
                compliance * inv_h * inv_h,
                compliance * damping * inv_h,
            ),
            Material::Stiff { stiffness } if w_grad_sq > 0.0 => -stiffness * c / w_grad_sq,
            Material::Stiff { .. } => 0.0,
        }
    }

    /// Whether the damping term needs `Σ ∇C · (p − x_prev)`.
    #[inline]
    pub fn is_damped(self) -> bool {
        matches!(self, Material::Compliant { compliance, damping } if compliance != 0.0 && damping != 0.0)
    }
}

/// A constraint on `N` particles.
pub trait Constraint<const N: usize>: Sync + Send {
    fn particles(&self) -> [u32; N];
    fn material(&self) -> Material;
    /// `C(p)` and `∇_i C` at `p`, or `None` where the constraint does not act: an undefined
    /// gradient (degenerate geometry) or an inequality that holds; it is then skipped.
    fn evaluate(&self, p: &[DVec3; N]) -> Option<(f64, [DVec3; N])>;
}

/// Where [`project`] reads and corrects particle positions: a plain slice, or a parallel
/// stage's view of the shared positions (`solver::parallel::StageView`).
pub trait Positions {
    fn get(&self, i: usize) -> DVec3;
    fn add(&mut self, i: usize, delta: DVec3);
}

impl Positions for [DVec3] {
    #[inline]
    fn get(&self, i: usize) -> DVec3 {
        self[i]
    }
    #[inline]
    fn add(&mut self, i: usize, delta: DVec3) {
        self[i] += delta;
    }
}

/// The XPBD multiplier increment Δλ (see the module docs). Returns 0 when nothing can move.
#[inline]
pub fn delta_lambda(
    c: f64,
    lambda: f64,
    w_grad_sq: f64,
    grad_dot_dx: f64,
    alpha_tilde: f64,
    gamma: f64,
) -> f64 {
    let denominator = (1.0 + gamma) * w_grad_sq + alpha_tilde;
    if denominator <= f64::MIN_POSITIVE {
        return 0.0;
    }
    (-c - alpha_tilde * lambda - gamma * grad_dot_dx) / denominator
}

/// Projects one constraint in place (Gauss-Seidel): reads and corrects the predicted positions
/// `x`, using `x_prev` (positions at the start of the substep) for the damping term.
/// Returns the `|C|` it saw before the correction.
#[inline]
pub fn project<const N: usize, K: Constraint<N>, P: Positions + ?Sized>(
    constraint: &K,
    lambda: &mut f64,
    x: &mut P,
    x_prev: &[DVec3],
    inv_mass: &[f64],
    inv_h: f64,
) {
    let indices = constraint.particles();
    let p = indices.map(|i| x.get(i as usize));
    let Some((c, grad)) = constraint.evaluate(&p) else {
        return;
    };
    let w = indices.map(|i| inv_mass[i as usize]);
    let mut w_grad_sq = 0.0;
    for k in 0..N {
        w_grad_sq += w[k] * grad[k].length_squared();
    }
    if w_grad_sq == 0.0 {
        return;
    }
    let material = constraint.material();
    let mut grad_dot_dx = 0.0;
    if material.is_damped() {
        for k in 0..N {
            grad_dot_dx += grad[k].dot(p[k] - x_prev[indices[k] as usize]);
        }
    }
    let dl = material.delta_lambda(c, *lambda, w_grad_sq, grad_dot_dx, inv_h);
    *lambda += dl;
    for k in 0..N {
        // Pinned particles (w = 0) are never written: several threads may read them at once.
        if w[k] != 0.0 {
            x.add(indices[k] as usize, grad[k] * (w[k] * dl));
        }
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Shared checks every constraint kind runs: gradients against central differences, and
    //! the momentum conservation that follows from translation and rotation invariance.
    use super::Constraint;
    use glam::DVec3;

    /// `Σ ∇_i C = 0` (the correction conserves linear momentum) and `Σ p_i × ∇_i C = 0` (and
    /// angular momentum), for a constraint that only depends on the shape of its particles.
    pub fn assert_conserves_momentum<const N: usize, K: Constraint<N>>(
        constraint: &K,
        p: [DVec3; N],
    ) {
        let (_, grad) = constraint.evaluate(&p).expect("non-degenerate test state");
        let linear: DVec3 = grad.iter().copied().sum();
        let angular: DVec3 = (0..N).map(|i| p[i].cross(grad[i])).sum();
        let scale = grad.iter().map(|g| g.length()).fold(0.0, f64::max);
        assert!(linear.length() < 1e-12 * scale, "Σ ∇C = {linear}");
        assert!(
            angular.length() < 1e-12 * scale * 10.0,
            "Σ p × ∇C = {angular}"
        );
    }

    /// Asserts `∇C` matches central finite differences of `C` at `p` within `tolerance`.
    pub fn assert_gradient_matches_finite_differences<const N: usize, K: Constraint<N>>(
        constraint: &K,
        p: [DVec3; N],
        tolerance: f64,
    ) {
        let (_, grad) = constraint.evaluate(&p).expect("non-degenerate test state");
        let step = 1e-6;
        for i in 0..N {
            for axis in 0..3 {
                let mut plus = p;
                let mut minus = p;
                plus[i][axis] += step;
                minus[i][axis] -= step;
                let numeric = (constraint.evaluate(&plus).unwrap().0
                    - constraint.evaluate(&minus).unwrap().0)
                    / (2.0 * step);
                let analytic = grad[i][axis];
                assert!(
                    (numeric - analytic).abs() <= tolerance * (1.0 + numeric.abs()),
                    "particle {i} axis {axis}: analytic {analytic} vs numeric {numeric}"
                );
            }
        }
    }
}
