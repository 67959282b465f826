//! Batched projection: eight constraints of one colour projected side by side, lane by lane,
//! with the XPBD update of the module above (`super`'s docs) written once over [`Real`].
//!
//! A colour's constraints share no moving particle, so the eight lanes of a batch are
//! independent: gather their particles' positions and inverse masses (stored side by side,
//! [`super::weighted`]) into [`Vec3<F64s>`] and [`F64s`], evaluate `C` and `∇C`
//! of all eight at once ([`Constraint::value_and_gradient`]), compute eight Δλ, and scatter
//! the corrections back. Batches are consecutive runs of [`LANES`] constraints of a colour
//! (the last one may be short: its missing lanes repeat the last constraint and are masked
//! off), so which constraints share a batch depends on the data only. Threads take whole
//! batches ([`crate::solver::parallel::batch_share`]). Every lane computes exactly what
//! [`super::project`] computes for its constraint alone (same operations in the same order, no
//! fused multiply-add), so the result is the same bits for any thread count and any CPU.
//!
//! [`project_batches`] runs on the best [`SimdPath`] the CPU has, chosen once per process:
//! AVX-512 or AVX2 registers on x86-64 ([`super::x86`]: every lane operation one instruction,
//! particles moved with 128-bit loads and shuffles), or the portable lane loops of
//! [`super::lanes`] compiled for the baseline (SSE2 on x86-64, NEON on aarch64). All give the
//! same bits.

use super::lane_io::{self, ParticleLanes};
use super::lanes::{F64s, Real, Vec3, LANES};
use super::weighted::WeightedPositions;
use super::{Constraint, Terms};
use glam::DVec3;
use std::mem::MaybeUninit;
use std::sync::OnceLock;

/// How a batch's lanes are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimdPath {
    /// One AVX-512 register per eight lanes (x86-64 with AVX-512 F and DQ).
    Avx512,
    /// Two AVX2 registers per eight lanes (x86-64 with AVX2).
    Avx2,
    /// Lane loops the compiler vectorises for the baseline instruction set.
    Portable,
}

impl SimdPath {
    /// Its name in `XPBD_SIMD` and the stats log.
    pub fn name(self) -> &'static str {
        match self {
            SimdPath::Avx512 => "avx512",
            SimdPath::Avx2 => "avx2",
            SimdPath::Portable => "portable",
        }
    }

    /// Every path this CPU can run, best first.
    pub fn available() -> Vec<SimdPath> {
        let mut paths = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx512f") && has!("avx512dq") && has!("avx2") {
                paths.push(SimdPath::Avx512);
            }
            if has!("avx2") {
                paths.push(SimdPath::Avx2);
            }
        }
        paths.push(SimdPath::Portable);
        paths
    }

    /// The path [`project_batches`] takes: `XPBD_SIMD` (`avx512`, `avx2` or `portable`) when
    /// it names an available one (for benchmarks and diagnosis; every path gives the same
    /// bits); otherwise AVX2 where the CPU has it, and AVX-512 instead on CPUs that run it at
    /// full speed. Those are told by AVX512-VBMI2 (Ice Lake, Zen 4 and later; the line the
    /// `multiversion` crate draws too): on the Cascade Lake Xeon of docs/benchmarks.md
    /// AVX-512 was no faster than AVX2 ("Issue 13: lanes by hand").
    pub fn chosen() -> SimdPath {
        static CHOSEN: OnceLock<SimdPath> = OnceLock::new();
        *CHOSEN.get_or_init(|| {
            let available = SimdPath::available();
            let asked = std::env::var("XPBD_SIMD").ok();
            if let Some(path) = available
                .iter()
                .find(|p| asked.as_deref() == Some(p.name()))
            {
                return *path;
            }
            #[cfg(target_arch = "x86_64")]
            if available.contains(&SimdPath::Avx512)
                && std::arch::is_x86_feature_detected!("avx512vbmi2")
            {
                return SimdPath::Avx512;
            }
            available
                .into_iter()
                .find(|&p| p != SimdPath::Avx512)
                .unwrap_or(SimdPath::Portable)
        })
    }
}

/// Defines `fn $chosen(args…)`, which runs the generic pass `$with::<S, IO>(args…)` on
/// [`SimdPath::chosen`], `fn $on(path, args…)`, which runs it on `path`, and their
/// `#[target_feature]` entry points `$avx2` and `$avx512` (x86-64), as [`project_batches`]
/// and [`project_batches_on`] do for the constraint kinds: for the passes over lists that
/// are not constraint kinds (the side tests of [`crate::collision`], the fluid neighbour
/// search, the density sums). A pass may return a value (`fn sum(…) -> f64;`). Each user
/// keeps its own entry points, so that profiles name them (`edge_sides::contacts_avx2`).
macro_rules! lane_passes {
    ($(#[$chosen_meta:meta])* $vis:vis fn $chosen:ident($($arg:ident: $ty:ty),* $(,)?)
        $(-> $ret:ty)?;
     $(#[$on_meta:meta])* fn $on:ident / $avx2:ident / $avx512:ident = $with:ident;) => {
        $(#[$chosen_meta])*
        $vis fn $chosen($($arg: $ty),*) $(-> $ret)? {
            $on($crate::constraints::batch::SimdPath::chosen(), $($arg),*)
        }

        $(#[$on_meta])*
        ///
        /// # Panics
        /// If `path` is not one of [`SimdPath::available`](crate::constraints::batch::SimdPath::available).
        $vis fn $on(path: $crate::constraints::batch::SimdPath, $($arg: $ty),*) $(-> $ret)? {
            use $crate::constraints::batch::SimdPath;
            match path {
                #[cfg(target_arch = "x86_64")]
                SimdPath::Avx512 => {
                    use std::arch::is_x86_feature_detected as has;
                    assert!(has!("avx512f") && has!("avx512dq") && has!("avx2"));
                    // SAFETY: the CPU has AVX-512 F and DQ, and AVX2 (checked just above).
                    unsafe { $avx512($($arg),*) }
                }
                #[cfg(target_arch = "x86_64")]
                SimdPath::Avx2 => {
                    assert!(std::arch::is_x86_feature_detected!("avx2"));
                    // SAFETY: the CPU has AVX2 (checked just above).
                    unsafe { $avx2($($arg),*) }
                }
                SimdPath::Portable => $with::<
                    $crate::constraints::lanes::F64s,
                    $crate::constraints::lane_io::Portable,
                >($($arg),*),
                #[cfg(not(target_arch = "x86_64"))]
                _ => panic!("{} is not a path of this CPU", path.name()),
            }
        }

        /// The pass in AVX2 registers.
        ///
        /// # Safety
        /// The CPU must have AVX2.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx,avx2")]
        unsafe fn $avx2($($arg: $ty),*) $(-> $ret)? {
            use $crate::constraints::x86::avx2::{Avx2, F64x8};
            $with::<F64x8, Avx2>($($arg),*)
        }

        /// The pass in AVX-512 registers.
        ///
        /// # Safety
        /// The CPU must have AVX-512 F and DQ, and AVX2.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx,avx2,avx512f,avx512dq")]
        unsafe fn $avx512($($arg: $ty),*) $(-> $ret)? {
            use $crate::constraints::x86::avx512::{Avx512, F64x8};
            $with::<F64x8, Avx512>($($arg),*)
        }
    };
}
pub(crate) use lane_passes;

/// Projects `items`, a colour's share whose constraints share no moving particle, one batch
/// of [`LANES`] after another, with their multipliers `lambda` and the Δλ coefficients
/// `terms` of every material ([`super::Materials::terms`], indexed by the items' ids), on
/// [`SimdPath::chosen`]. The particles `x` are positions with their inverse masses
/// ([`super::weighted`]); `x_prev`, read only by damped materials, are plain positions.
pub fn project_batches<const N: usize, K: Constraint<N>, W: WeightedPositions + ?Sized>(
    items: &[K],
    lambda: &mut [f64],
    x: &mut W,
    x_prev: &[DVec3],
    terms: &[Terms<f64>],
) {
    project_batches_on(SimdPath::chosen(), items, lambda, x, x_prev, terms);
}

/// [`project_batches`] on `path`.
///
/// # Panics
/// If `path` is not one of [`SimdPath::available`].
pub fn project_batches_on<const N: usize, K: Constraint<N>, W: WeightedPositions + ?Sized>(
    path: SimdPath,
    items: &[K],
    lambda: &mut [f64],
    x: &mut W,
    x_prev: &[DVec3],
    terms: &[Terms<f64>],
) {
    match path {
        #[cfg(target_arch = "x86_64")]
        SimdPath::Avx512 => {
            use std::arch::is_x86_feature_detected as has;
            assert!(has!("avx512f") && has!("avx512dq") && has!("avx2"));
            // SAFETY: the CPU has AVX-512 F and DQ, and AVX2 (checked just above).
            unsafe { project_batches_avx512(items, lambda, x, x_prev, terms) }
        }
        #[cfg(target_arch = "x86_64")]
        SimdPath::Avx2 => {
            assert!(std::arch::is_x86_feature_detected!("avx2"));
            // SAFETY: the CPU has AVX2 (checked just above).
            unsafe { project_batches_avx2(items, lambda, x, x_prev, terms) }
        }
        SimdPath::Portable => project_batches_with::<N, K, W, F64s, lane_io::Portable>(
            items, lambda, x, x_prev, terms,
        ),
        #[cfg(not(target_arch = "x86_64"))]
        _ => panic!("{} is not a path of this CPU", path.name()),
    }
}

/// [`project_batches`] in AVX2 registers ([`super::x86::avx2`]).
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,avx2")]
unsafe fn project_batches_avx2<const N: usize, K: Constraint<N>, W: WeightedPositions + ?Sized>(
    items: &[K],
    lambda: &mut [f64],
    x: &mut W,
    x_prev: &[DVec3],
    terms: &[Terms<f64>],
) {
    use super::x86::avx2::{Avx2, F64x8};
    project_batches_with::<N, K, W, F64x8, Avx2>(items, lambda, x, x_prev, terms)
}

/// [`project_batches`] in AVX-512 registers ([`super::x86::avx512`]).
///
/// # Safety
/// The CPU must have AVX-512 F and DQ, and AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,avx2,avx512f,avx512dq")]
unsafe fn project_batches_avx512<
    const N: usize,
    K: Constraint<N>,
    W: WeightedPositions + ?Sized,
>(
    items: &[K],
    lambda: &mut [f64],
    x: &mut W,
    x_prev: &[DVec3],
    terms: &[Terms<f64>],
) {
    use super::x86::avx512::{Avx512, F64x8};
    project_batches_with::<N, K, W, F64x8, Avx512>(items, lambda, x, x_prev, terms)
}

/// [`project_batches`] in lanes of `S`, moving particles with `IO`.
#[inline(always)]
fn project_batches_with<
    const N: usize,
    K: Constraint<N>,
    W: WeightedPositions + ?Sized,
    S: Real,
    IO: ParticleLanes<S>,
>(
    items: &[K],
    lambda: &mut [f64],
    x: &mut W,
    x_prev: &[DVec3],
    terms: &[Terms<f64>],
) {
    let mut items = items.chunks_exact(LANES);
    let mut lambda = lambda.chunks_exact_mut(LANES);
    for (batch, lambda) in (&mut items).zip(&mut lambda) {
        // Full batches as arrays, so the lane count is a constant the loops unroll to.
        let batch: &[K; LANES] = batch.try_into().expect("chunks_exact");
        let lambda: &mut [f64; LANES] = lambda.try_into().expect("chunks_exact");
        project_lanes::<N, K, W, S, IO, true>(batch, lambda, x, x_prev, terms);
    }
    let (rest, rest_lambda) = (items.remainder(), lambda.into_remainder());
    if !rest.is_empty() {
        project_lanes::<N, K, W, S, IO, false>(rest, rest_lambda, x, x_prev, terms);
    }
}

/// Projects `items` (1 to `S::LANES` constraints sharing no moving particle) side by side:
/// one constraint with `S = f64` ([`super::project`]), a batch with [`F64s`], moving the
/// particles with `IO`. See the module docs. `FULL` says there are `S::LANES` items: every
/// lane is present, which the compiler then need not check.
#[inline(always)]
pub fn project_lanes<
    const N: usize,
    K: Constraint<N>,
    W: WeightedPositions + ?Sized,
    S: Real,
    IO: ParticleLanes<S>,
    const FULL: bool,
>(
    items: &[K],
    lambda: &mut [f64],
    x: &mut W,
    x_prev: &[DVec3],
    terms: &[Terms<f64>],
) {
    let count = if FULL { S::LANES } else { items.len() };
    assert!((1..=S::LANES).contains(&count) && items.len() == count && lambda.len() == count);
    assert!(x_prev.len() == x.len(), "particle arrays differ in length");
    let particles = lane_particles::<N, K, S>(items, count, x.len());
    // Written element by element without zeroing them first (a memset call per batch).
    let mut p = MaybeUninit::<[Vec3<S>; N]>::uninit();
    let mut w = MaybeUninit::<[S; N]>::uninit();
    for (k, index) in particles.iter().enumerate() {
        // SAFETY: every index was checked against the length by `lane_particles`; element k
        // of each array.
        unsafe {
            let (position, inv_mass) = IO::gather_weighted(x, index);
            p.as_mut_ptr().cast::<Vec3<S>>().add(k).write(position);
            w.as_mut_ptr().cast::<S>().add(k).write(inv_mass);
        }
    }
    // SAFETY: all N elements of both were written above. (References, not moves: a move
    // copied the positions of a hinge batch, 768 bytes, with a memcpy call.)
    let (p, w) = unsafe { (p.assume_init_ref(), w.assume_init_ref()) };
    let shape = K::shape::<S>(items);
    let (c, grad, acts) = K::value_and_gradient(&shape, p);
    let w_grad_sq = K::weighted_gradient_sq(&shape, &grad, w);
    let present = if FULL {
        S::mask_from_lanes(|_| true)
    } else {
        S::mask_from_lanes(|l| l < count)
    };
    let active = acts & present & w_grad_sq.gt(S::splat(0.0));
    if !S::any(active) {
        return;
    }
    let terms = batch_terms::<N, K, S>(items, count, terms);
    let damped = terms.damped() & active;
    let grad_dot_dx = if S::any(damped) {
        // SAFETY: checked by `lane_particles`, and `x_prev` is as long as `x`.
        let moved = unsafe { moved_along_gradient::<N, S, IO>(&particles, &grad, p, x_prev) };
        S::select(damped, moved, S::splat(0.0))
    } else {
        S::splat(0.0)
    };
    let delta = add_to_lambda::<S>(lambda, count, |lambda_now| {
        S::select(
            active,
            terms.delta_lambda(c, lambda_now, w_grad_sq, grad_dot_dx),
            S::splat(0.0),
        )
    });
    let acting = S::mask_bits(active);
    for (k, index) in particles.iter().enumerate() {
        // Pinned particles (w = 0) are never written: several threads may read them.
        let moves = S::mask_bits(w[k].gt(S::splat(0.0)));
        let correction = grad[k].scale(w[k] * delta);
        // SAFETY: checked by `lane_particles`.
        unsafe { IO::scatter_weighted(x, index, correction, acting & moves) };
    }
}

/// The particle indices of `items`' first `count` lanes, by stencil slot: `[k][l]` is slot
/// `k` of lane `l` (lanes past `count` repeat the last item). Checks each against `len`
/// here, once, so the gathers and scatters need no check each.
///
/// # Panics
/// If an index is not below `len`.
#[inline(always)]
fn lane_particles<const N: usize, K: Constraint<N>, S: Real>(
    items: &[K],
    count: usize,
    len: usize,
) -> [[u32; LANES]; N] {
    // Indexed loops, not `array::from_fn` (see `super::lanes`). Started from the first
    // item's indices in every lane, not from zeros: zeroing was a `memset` call per batch
    // whenever the compiler did not see that the loop below writes every element
    // (docs/benchmarks.md, "Issue 13: the crossing count's tree refitted").
    let mut particles = items[0].particles().map(|k| [k; LANES]);
    let mut highest = 0;
    for l in 0..S::LANES {
        let of_lane = items[l.min(count - 1)].particles();
        for k in 0..N {
            particles[k][l] = of_lane[k];
            highest = highest.max(of_lane[k]);
        }
    }
    assert!((highest as usize) < len, "particle index out of bounds");
    particles
}

/// The Δλ coefficients of `items`' lanes. Where every item has the first one's material (the
/// usual case: a colour of one object's kind) the lanes take its coefficients as one value
/// instead of gathering them (10 % of a dihedral batch's time on cloth-256,
/// docs/benchmarks.md). That is asked of the batch's own items, already in cache, not of the
/// whole share in a pass before the batches: on cloth-256 that pass read every stretch
/// constraint from memory twice a sweep ("Issue 13: a batch's material asked of the batch").
#[inline(always)]
fn batch_terms<const N: usize, K: Constraint<N>, S: Real>(
    items: &[K],
    count: usize,
    terms: &[Terms<f64>],
) -> Terms<S> {
    let first_material = items[0].material();
    if items[1..count]
        .iter()
        .all(|item| item.material() == first_material)
    {
        Terms::<S>::gather(|_| terms[first_material.index()])
    } else {
        Terms::<S>::gather(|l| terms[items[l.min(count - 1)].material().index()])
    }
}

/// `Σ_k ∇_k C · (p_k − x_prev_k)`, lane by lane: how far the stencil moved along the gradient
/// since the substep began, which the damping term of Δλ reads.
///
/// # Safety
/// Every index in `particles` is in bounds of `x_prev`.
#[inline(always)]
unsafe fn moved_along_gradient<const N: usize, S: Real, IO: ParticleLanes<S>>(
    particles: &[[u32; LANES]; N],
    grad: &[Vec3<S>; N],
    p: &[Vec3<S>; N],
    x_prev: &[DVec3],
) -> S {
    let mut sum = S::splat(0.0);
    for k in 0..N {
        // SAFETY: the caller's promise.
        let start = unsafe { IO::gather(x_prev, &particles[k]) };
        sum = sum + grad[k].dot(p[k] - start);
    }
    sum
}

/// Adds `delta(λ)` to the first `count` multipliers `lambda`, in lanes, and returns it.
///
/// λ never holds −0 (it starts at +0 and x + y is −0 in round-to-nearest only when both
/// are), so adding the +0 of a lane that does not act leaves its bits as they are.
#[inline(always)]
fn add_to_lambda<S: Real>(lambda: &mut [f64], count: usize, delta: impl FnOnce(S) -> S) -> S {
    let mut lambda_lanes = [0.0; LANES];
    for l in 0..S::LANES {
        lambda_lanes[l] = lambda[l.min(count - 1)];
    }
    let lambda_now = S::load(&lambda_lanes);
    let delta = delta(lambda_now);
    (lambda_now + delta).store(&mut lambda_lanes);
    lambda.copy_from_slice(&lambda_lanes[..count]);
    delta
}

#[cfg(test)]
mod tests;
