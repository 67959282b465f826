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

pub mod atan2;
pub mod batch;
pub mod curvature;
pub mod density;
pub mod dihedral;
pub mod distance;
pub mod lane_io;
pub mod lanes;
pub mod long_range;
pub mod material;
pub mod plasticity;
pub mod shape_matching;
pub mod tet_volume;
pub mod volume;
pub mod weighted;
#[cfg(target_arch = "x86_64")]
pub(crate) mod x86;

use glam::DVec3;
use lanes::{Real, Vec3};
pub use material::{Material, MaterialId, Materials, Terms};

/// A constraint on `N` particles, its math written once over any [`Real`]: one constraint at
/// a time ([`Constraint::evaluate`]) or eight side by side ([`batch`]).
pub trait Constraint<const N: usize>: Sync + Send + Sized {
    /// What the value and gradient read of a constraint besides the positions (a rest length,
    /// a rest angle…), as numbers or lanes.
    type Shape<S: Real>: Copy;

    fn particles(&self) -> [u32; N];
    fn material(&self) -> MaterialId;

    /// The shapes of `items` (one per lane; lanes past the end repeat the last item).
    fn shape<S: Real>(items: &[Self]) -> Self::Shape<S>;

    /// `C(p)`, `∇_i C`, and where the constraint acts: not where the gradient is undefined
    /// (degenerate geometry) or an inequality holds; it is then skipped.
    fn value_and_gradient<S: Real>(
        shape: &Self::Shape<S>,
        p: &[Vec3<S>; N],
    ) -> (S, [Vec3<S>; N], S::Mask);

    /// `Σ_i w_i |∇_i C|²`, the sum in the denominator of Δλ, for the gradient `grad` that
    /// [`Constraint::value_and_gradient`] gave and inverse masses `w`. A kind whose gradient
    /// lengths have a closed form in its shape overrides it ([`curvature`]), so a batch need
    /// not wait for the gradient to start the division.
    #[inline(always)]
    fn weighted_gradient_sq<S: Real>(
        _shape: &Self::Shape<S>,
        grad: &[Vec3<S>; N],
        w: &[S; N],
    ) -> S {
        let mut sum = w[0] * grad[0].length_squared();
        for k in 1..N {
            sum = sum + w[k] * grad[k].length_squared();
        }
        sum
    }

    /// `C(p)` and `∇_i C` of this one constraint, or `None` where it does not act.
    #[inline(always)]
    fn evaluate(&self, p: &[DVec3; N]) -> Option<(f64, [DVec3; N])> {
        let shape = Self::shape::<f64>(std::slice::from_ref(self));
        let (c, grad, acts) = Self::value_and_gradient(&shape, &p.map(Vec3::from));
        acts.then(|| (c, grad.map(DVec3::from)))
    }
}

/// Lane `l` of a shape: `field` of `items[l]`, the last item's past the end.
#[inline(always)]
pub fn per_lane<S: Real, K>(items: &[K], field: impl Fn(&K) -> f64) -> S {
    S::from_lanes(|l| field(&items[l.min(items.len() - 1)]))
}

/// Where the contact passes ([`crate::collision`]) read and correct particle positions: a plain
/// slice, or a parallel stage's view of the shared positions (`solver::parallel::StageView`).
/// The constraint kinds read them padded with their inverse masses instead
/// ([`weighted::WeightedPositions`]).
pub trait Positions {
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Particle `i`'s position.
    ///
    /// # Safety
    /// `i < self.len()`.
    unsafe fn get_unchecked(&self, i: usize) -> DVec3;
    /// Moves particle `i` by `delta`.
    ///
    /// # Safety
    /// `i < self.len()`.
    unsafe fn add_unchecked(&mut self, i: usize, delta: DVec3);
    /// Particle `i`'s position (bounds-checked).
    fn position(&self, i: usize) -> DVec3 {
        assert!(i < self.len(), "particle {i} out of bounds");
        // SAFETY: in bounds (checked).
        unsafe { self.get_unchecked(i) }
    }
    /// Moves particle `i` by `delta` (bounds-checked).
    fn move_by(&mut self, i: usize, delta: DVec3) {
        assert!(i < self.len(), "particle {i} out of bounds");
        // SAFETY: in bounds (checked).
        unsafe { self.add_unchecked(i, delta) }
    }
    /// The first particle's position; particle `i` is `len()` positions on, one `DVec3`
    /// (`[f64; 3]`, no padding) each. For the vector loads of [`lane_io`].
    fn as_ptr(&self) -> *const DVec3;
}

impl Positions for [DVec3] {
    #[inline(always)]
    fn len(&self) -> usize {
        <[DVec3]>::len(self)
    }
    #[inline(always)]
    unsafe fn get_unchecked(&self, i: usize) -> DVec3 {
        // SAFETY: the caller's promise.
        unsafe { *<[DVec3]>::get_unchecked(self, i) }
    }
    #[inline(always)]
    unsafe fn add_unchecked(&mut self, i: usize, delta: DVec3) {
        // SAFETY: the caller's promise.
        unsafe { *<[DVec3]>::get_unchecked_mut(self, i) += delta }
    }
    #[inline(always)]
    fn as_ptr(&self) -> *const DVec3 {
        <[DVec3]>::as_ptr(self)
    }
}

/// Projects one constraint in place (Gauss-Seidel): reads and corrects the predicted positions
/// `x` (with their inverse masses, [`weighted`]), using `x_prev` (positions at the start of the
/// substep) for the damping term. The solver projects whole batches
/// ([`batch::project_batches`]); this is the same update for one.
#[inline]
pub fn project<const N: usize, K: Constraint<N>, W: weighted::WeightedPositions + ?Sized>(
    constraint: &K,
    lambda: &mut f64,
    x: &mut W,
    x_prev: &[DVec3],
    terms: &[Terms<f64>],
) {
    batch::project_lanes::<N, K, W, f64, lane_io::Scalar, true>(
        std::slice::from_ref(constraint),
        std::slice::from_mut(lambda),
        x,
        x_prev,
        terms,
    );
}

#[cfg(test)]
pub(crate) mod testing {
    //! Shared checks every constraint kind runs: gradients against central differences, and
    //! the momentum conservation that follows from translation and rotation invariance.
    use super::lanes::Vec3;
    use super::Constraint;
    use glam::DVec3;

    /// [`Constraint::weighted_gradient_sq`] against `Σ w_i |∇_i C|²` summed from the gradient
    /// at `p` (where the constraint acts), within rounding: for the kinds that override it
    /// with a closed form.
    pub fn assert_weighted_gradient_sq_is_the_gradients<const N: usize, K: Constraint<N>>(
        constraint: &K,
        p: &[DVec3; N],
        w: [f64; N],
    ) {
        let shape = K::shape::<f64>(std::slice::from_ref(constraint));
        let (_, grad) = constraint.evaluate(p).expect("acts");
        let from_gradient: f64 = (0..N).map(|i| w[i] * grad[i].length_squared()).sum();
        let closed = K::weighted_gradient_sq(&shape, &grad.map(Vec3::from), &w);
        assert!(
            (closed - from_gradient).abs() <= 1e-14 * from_gradient,
            "{closed} against {from_gradient}"
        );
    }

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
