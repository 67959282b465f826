//! Batched projection: eight constraints of one colour projected side by side, lane by lane,
//! with the XPBD update of the module above (`super`'s docs) written once over [`Real`].
//!
//! A colour's constraints share no moving particle, so the eight lanes of a batch are
//! independent: gather their particles' positions into [`Vec3<F64s>`], evaluate `C` and `∇C`
//! of all eight at once ([`Constraint::value_and_gradient`]), compute eight Δλ, and scatter
//! the corrections back. Batches are consecutive runs of [`LANES`] constraints of a colour
//! (the last one may be short: its missing lanes repeat the last constraint and are masked
//! off), so which constraints share a batch depends on the data only. Threads take whole
//! batches ([`crate::solver::parallel::batch_share`]). Every lane computes exactly what
//! [`super::project`] computes for its constraint alone (same operations in the same order, no
//! fused multiply-add), so the result is the same bits for any thread count and any CPU.
//!
//! [`project_batches`] is compiled for AVX-512, AVX2 and a baseline (SSE2 on x86-64, NEON on
//! aarch64) and picks the best the CPU has when first called (`multiversion`); the lane loops
//! of [`super::lanes`] become vector instructions there. The gathers and scatters stay scalar
//! loads and stores: positions are stored one `DVec3` per particle.

use super::lanes::{F64s, Real, Vec3, LANES};
use super::{Constraint, Positions, Terms};
use glam::DVec3;

/// Projects `items`, a colour's share whose constraints share no moving particle, one batch
/// of [`LANES`] after another, with their multipliers `lambda` and the Δλ coefficients
/// `terms` of every material ([`super::Materials::terms`], indexed by the items' ids).
#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512vl+avx512dq+avx2+avx+fma",
    "x86_64+avx2+avx+fma",
    "aarch64+neon"
))]
pub fn project_batches<const N: usize, K: Constraint<N>, P: Positions + ?Sized>(
    items: &[K],
    lambda: &mut [f64],
    x: &mut P,
    x_prev: &[DVec3],
    inv_mass: &[f64],
    terms: &[Terms<f64>],
) {
    let Some(first) = items.first().map(|item| item.material()) else {
        return;
    };
    if items.iter().all(|item| item.material() == first) {
        project_batches_of::<N, K, P, true>(items, lambda, x, x_prev, inv_mass, terms);
    } else {
        project_batches_of::<N, K, P, false>(items, lambda, x, x_prev, inv_mass, terms);
    }
}

/// [`project_batches`]' loop, with every item of one material when `UNIFORM`.
#[inline(always)]
fn project_batches_of<
    const N: usize,
    K: Constraint<N>,
    P: Positions + ?Sized,
    const UNIFORM: bool,
>(
    items: &[K],
    lambda: &mut [f64],
    x: &mut P,
    x_prev: &[DVec3],
    inv_mass: &[f64],
    terms: &[Terms<f64>],
) {
    let mut items = items.chunks_exact(LANES);
    let mut lambda = lambda.chunks_exact_mut(LANES);
    for (batch, lambda) in (&mut items).zip(&mut lambda) {
        // Full batches as arrays, so the lane count is a constant the loops unroll to.
        let batch: &[K; LANES] = batch.try_into().expect("chunks_exact");
        let lambda: &mut [f64; LANES] = lambda.try_into().expect("chunks_exact");
        project_lanes::<N, K, P, F64s, UNIFORM>(batch, lambda, x, x_prev, inv_mass, terms);
    }
    let (rest, rest_lambda) = (items.remainder(), lambda.into_remainder());
    if !rest.is_empty() {
        project_lanes::<N, K, P, F64s, UNIFORM>(rest, rest_lambda, x, x_prev, inv_mass, terms);
    }
}

/// Projects `items` (1 to `S::LANES` constraints sharing no moving particle) side by side:
/// one constraint with `S = f64` ([`super::project`]), a batch with [`F64s`]. See the module
/// docs. `UNIFORM` says every item has the first one's material: the lanes then take its
/// Δλ coefficients as one value instead of gathering them (the usual case: a colour of one
/// object's kind; 10 % of a dihedral batch's time on cloth-256, docs/benchmarks.md).
#[inline(always)]
pub fn project_lanes<
    const N: usize,
    K: Constraint<N>,
    P: Positions + ?Sized,
    S: Real,
    const UNIFORM: bool,
>(
    items: &[K],
    lambda: &mut [f64],
    x: &mut P,
    x_prev: &[DVec3],
    inv_mass: &[f64],
    terms: &[Terms<f64>],
) {
    let count = items.len();
    debug_assert!((1..=S::LANES).contains(&count) && lambda.len() == count);
    // Indexed loops, not `array::from_fn` (see `super::lanes`). Indices are checked once
    // here, so the gathers and scatters below need no check each.
    let len = x.len();
    assert!(
        x_prev.len() == len && inv_mass.len() == len,
        "particle arrays differ in length"
    );
    let mut particles = [[0usize; LANES]; N];
    let mut in_bounds = true;
    for l in 0..S::LANES {
        let of_lane = items[l.min(count - 1)].particles();
        for k in 0..N {
            particles[k][l] = of_lane[k] as usize;
            in_bounds &= particles[k][l] < len;
        }
    }
    assert!(in_bounds, "particle index out of bounds");
    // Each particle's lanes gathered into plain arrays and moved into lanes once (LLVM
    // builds the vectors from them with fewer shuffles than from one lane at a time).
    let mut p = [Vec3::splat(S::splat(0.0)); N];
    let mut w = [S::splat(0.0); N];
    for k in 0..N {
        let (mut px, mut py, mut pz, mut pw) =
            ([0.0; LANES], [0.0; LANES], [0.0; LANES], [0.0; LANES]);
        for l in 0..S::LANES {
            let i = particles[k][l];
            // SAFETY (both): every index was checked against `len` above.
            let position = unsafe { x.get_unchecked(i) };
            px[l] = position.x;
            py[l] = position.y;
            pz[l] = position.z;
            pw[l] = unsafe { *inv_mass.get_unchecked(i) };
        }
        p[k] = Vec3::new(
            S::from_lanes(|l| px[l]),
            S::from_lanes(|l| py[l]),
            S::from_lanes(|l| pz[l]),
        );
        w[k] = S::from_lanes(|l| pw[l]);
    }
    let shape = K::shape::<S>(items);
    let (c, grad, acts) = K::value_and_gradient(&shape, &p);
    let mut w_grad_sq = w[0] * grad[0].length_squared();
    for k in 1..N {
        w_grad_sq = w_grad_sq + w[k] * grad[k].length_squared();
    }
    let present = S::mask_from_lanes(|l| l < count);
    let active = acts & present & w_grad_sq.gt(S::splat(0.0));
    if !S::any(active) {
        return;
    }
    let terms = if UNIFORM {
        Terms::<S>::gather(|_| terms[items[0].material().index()])
    } else {
        Terms::<S>::gather(|l| terms[items[l.min(count - 1)].material().index()])
    };
    let damped = terms.damped() & active;
    let grad_dot_dx = if S::any(damped) {
        let mut sum = S::splat(0.0);
        for k in 0..N {
            // SAFETY: checked against `len` above.
            let start = Vec3::from_fn(|l| unsafe { *x_prev.get_unchecked(particles[k][l]) });
            sum = sum + grad[k].dot(p[k] - start);
        }
        S::select(damped, sum, S::splat(0.0))
    } else {
        S::splat(0.0)
    };
    let lambda_now = S::from_lanes(|l| lambda[l.min(count - 1)]);
    let delta = S::select(
        active,
        terms.delta_lambda(c, lambda_now, w_grad_sq, grad_dot_dx),
        S::splat(0.0),
    );
    // The corrections of all lanes at once, moved out of the lanes into plain arrays once,
    // then written lane by lane (reading a lane of a vector register at a run-time index
    // spilled the whole register for every particle written).
    let mut correction = [[[0.0; LANES]; 3]; N];
    let mut weight = [[0.0; LANES]; N];
    for k in 0..N {
        let c = grad[k].scale(w[k] * delta);
        for l in 0..S::LANES {
            correction[k][0][l] = c.x.lane(l);
            correction[k][1][l] = c.y.lane(l);
            correction[k][2][l] = c.z.lane(l);
            weight[k][l] = w[k].lane(l);
        }
    }
    let mut delta_lanes = [0.0; LANES];
    let mut acts = [false; LANES];
    for l in 0..S::LANES {
        delta_lanes[l] = delta.lane(l);
        acts[l] = S::mask_lane(active, l);
    }
    for l in 0..count {
        if !acts[l] {
            continue;
        }
        lambda[l] += delta_lanes[l];
        for k in 0..N {
            // Pinned particles (w = 0) are never written: several threads may read them.
            if weight[k][l] != 0.0 {
                let c = &correction[k];
                // SAFETY: checked against `len` above.
                unsafe { x.add_unchecked(particles[k][l], DVec3::new(c[0][l], c[1][l], c[2][l])) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constraints::curvature::IsometricBendingConstraint;
    use crate::constraints::dihedral::DihedralConstraint;
    use crate::constraints::distance::DistanceConstraint;
    use crate::constraints::tet_volume::TetVolumeConstraint;
    use crate::constraints::{project, Material, MaterialId, Materials};

    /// A fixed xorshift sequence in [−1, 1).
    fn noise(seed: u64) -> impl FnMut() -> f64 {
        let mut state = seed;
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        }
    }

    /// Projects `items` (sharing no particle) as batches and one at a time, from the same
    /// jittered positions, and requires the same bits.
    fn batches_match_one_at_a_time<const N: usize, K: Constraint<N>>(
        items: &[K],
        particles: usize,
    ) {
        let mut next = noise(0x5eed);
        let x0: Vec<DVec3> = (0..particles)
            .map(|i| DVec3::new(i as f64 * 0.1 + 0.02 * next(), 0.05 * next(), 0.03 * next()))
            .collect();
        let x_prev: Vec<DVec3> = x0
            .iter()
            .map(|&p| p + DVec3::splat(0.001 * next()))
            .collect();
        let inv_mass: Vec<f64> = (0..particles)
            .map(|i| if i % 7 == 3 { 0.0 } else { 1.0 + 0.1 * next() })
            .collect();
        let (mut batched, mut alone) = (x0.clone(), x0);
        let mut lambda_batched = vec![0.01; items.len()];
        let mut lambda_alone = lambda_batched.clone();
        let terms = materials().terms(480.0);
        project_batches(
            items,
            &mut lambda_batched,
            batched.as_mut_slice(),
            &x_prev,
            &inv_mass,
            &terms,
        );
        for (item, lambda) in items.iter().zip(&mut lambda_alone) {
            project(
                item,
                lambda,
                alone.as_mut_slice(),
                &x_prev,
                &inv_mass,
                &terms,
            );
        }
        assert!(batched
            .iter()
            .zip(&alone)
            .all(|(a, b)| a.to_array().map(f64::to_bits) == b.to_array().map(f64::to_bits)));
        assert_eq!(
            lambda_batched
                .iter()
                .map(|l| l.to_bits())
                .collect::<Vec<_>>(),
            lambda_alone.iter().map(|l| l.to_bits()).collect::<Vec<_>>()
        );
        assert!(
            lambda_alone.iter().any(|&l| l != 0.01),
            "something was projected"
        );
    }

    /// Rigid, damped compliant and PBD stiff: ids 0, 1 and 2 of [`materials`].
    fn material(k: usize) -> Material {
        match k % 3 {
            0 => Material::RIGID,
            1 => Material::Compliant {
                compliance: 1e-3,
                damping: 0.5,
            },
            _ => Material::Stiff { stiffness: 0.7 },
        }
    }

    fn materials() -> Materials {
        let mut table = Materials::default();
        for k in 0..3 {
            table.intern(material(k));
        }
        table
    }

    fn damped(k: usize) -> MaterialId {
        materials().intern(material(k))
    }

    #[test]
    fn every_kind_projects_the_same_bits_in_a_batch_as_alone() {
        // 19 constraints on disjoint particles: two full batches and a short one.
        let count = 19;
        let stretch: Vec<DistanceConstraint> = (0..count)
            .map(|k| DistanceConstraint {
                particles: [2 * k as u32, 2 * k as u32 + 1],
                rest_length: 0.08,
                material: damped(k),
                tear_length: f64::INFINITY,
                diagonal: false,
            })
            .collect();
        batches_match_one_at_a_time(&stretch, 2 * count);
        let four = |k: usize| [0, 1, 2, 3].map(|j| (4 * k + j) as u32);
        let hinges: Vec<DihedralConstraint> = (0..count)
            .map(|k| DihedralConstraint {
                particles: four(k),
                rest_angle: 0.3 - 0.05 * k as f64,
                material: damped(k),
            })
            .collect();
        batches_match_one_at_a_time(&hinges, 4 * count);
        let isometric: Vec<IsometricBendingConstraint> = (0..count)
            .map(|k| IsometricBendingConstraint {
                particles: four(k),
                weights: [1.0, 1.2, -1.1, -1.1],
                scale: 2.0,
                material: damped(k),
            })
            .collect();
        batches_match_one_at_a_time(&isometric, 4 * count);
        let tets: Vec<TetVolumeConstraint> = (0..count)
            .map(|k| TetVolumeConstraint {
                particles: four(k),
                rest_volume: 1e-4,
                material: damped(k),
            })
            .collect();
        batches_match_one_at_a_time(&tets, 4 * count);
    }

    #[test]
    fn lanes_evaluate_what_one_constraint_evaluates() {
        let mut next = noise(7);
        let hinges: Vec<DihedralConstraint> = (0..LANES)
            .map(|k| DihedralConstraint {
                particles: [0; 4],
                rest_angle: 3.0 * next() + 0.01 * k as f64,
                material: MaterialId::RIGID,
            })
            .collect();
        let stencils: Vec<[DVec3; 4]> = (0..LANES)
            .map(|_| std::array::from_fn(|_| DVec3::new(next(), next(), next())))
            .collect();
        let p: [Vec3<F64s>; 4] = std::array::from_fn(|k| Vec3::from_fn(|l| stencils[l][k]));
        let (c, grad, acts) =
            DihedralConstraint::value_and_gradient(&DihedralConstraint::shape::<F64s>(&hinges), &p);
        for l in 0..LANES {
            let (c1, grad1) = hinges[l].evaluate(&stencils[l]).expect("generic stencil");
            assert!(acts.lane(l));
            assert_eq!(c.0[l].to_bits(), c1.to_bits());
            for k in 0..4 {
                assert_eq!(grad[k].lane(l), grad1[k]);
            }
        }
    }
}
