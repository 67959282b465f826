//! The batched kernels against one constraint at a time, on every path this CPU has.

use super::*;
use crate::constraints::curvature::{IsometricBendingConstraint, RopeBendingConstraint};
use crate::constraints::dihedral::DihedralConstraint;
use crate::constraints::distance::DistanceConstraint;
use crate::constraints::long_range::LongRangeConstraint;
use crate::constraints::tet_volume::TetVolumeConstraint;
use crate::constraints::weighted::{packed, WeightedPosition};
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

/// Projects `items` (sharing no particle) as batches on every path this CPU has and one
/// at a time, from the same jittered positions, and requires the same bits.
fn batches_match_one_at_a_time<const N: usize, K: Constraint<N>>(items: &[K], particles: usize) {
    for path in SimdPath::available() {
        path_matches_one_at_a_time(path, items, particles);
    }
}

fn path_matches_one_at_a_time<const N: usize, K: Constraint<N>>(
    path: SimdPath,
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
    let mut batched = packed(&x0, &inv_mass);
    let mut alone = batched.clone();
    let mut lambda_batched = vec![0.01; items.len()];
    let mut lambda_alone = lambda_batched.clone();
    let terms = materials().terms(480.0);
    project_batches_on(
        path,
        items,
        &mut lambda_batched,
        batched.as_mut_slice(),
        &x_prev,
        &terms,
    );
    for (item, lambda) in items.iter().zip(&mut lambda_alone) {
        project(item, lambda, alone.as_mut_slice(), &x_prev, &terms);
    }
    let bits = |particles: &[WeightedPosition]| -> Vec<[u64; 4]> {
        (particles.iter())
            .map(|p| [p.position.x, p.position.y, p.position.z, p.inv_mass].map(f64::to_bits))
            .collect()
    };
    assert_eq!(bits(&batched), bits(&alone), "{path:?}");
    assert_eq!(
        bits(&batched).iter().map(|b| b[3]).collect::<Vec<_>>(),
        inv_mass.iter().map(|w| w.to_bits()).collect::<Vec<_>>(),
        "inverse masses untouched"
    );
    assert_eq!(
        lambda_batched
            .iter()
            .map(|l| l.to_bits())
            .collect::<Vec<_>>(),
        lambda_alone.iter().map(|l| l.to_bits()).collect::<Vec<_>>(),
        "{path:?}"
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
    // Materials mixed within a batch, and each alone (the uniform batches, and the
    // compliant-only and stiff-only formulas of Δλ).
    let mixed = |k: usize| damped(k);
    for material in [mixed, |_| damped(0), |_| damped(1), |_| damped(2)] {
        every_kind_matches(material);
    }
}

/// Every batched kind: 19 constraints on disjoint particles (two full batches and a short
/// one), constraint `k` of material `material(k)`.
fn every_kind_matches(material: fn(usize) -> MaterialId) {
    let count = 19;
    let stretch: Vec<DistanceConstraint> = (0..count)
        .map(|k| DistanceConstraint {
            particles: [2 * k as u32, 2 * k as u32 + 1],
            rest_length: 0.08,
            material: material(k),
            tearable: false,
            diagonal: false,
        })
        .collect();
    batches_match_one_at_a_time(&stretch, 2 * count);
    let four = |k: usize| [0, 1, 2, 3].map(|j| (4 * k + j) as u32);
    let hinges: Vec<DihedralConstraint> = (0..count)
        .map(|k| DihedralConstraint {
            particles: four(k),
            rest_angle: 0.3 - 0.05 * k as f64,
            material: material(k),
        })
        .collect();
    batches_match_one_at_a_time(&hinges, 4 * count);
    let isometric: Vec<IsometricBendingConstraint> = (0..count)
        .map(|k| IsometricBendingConstraint {
            particles: four(k),
            weights: [1.0, 1.2, -1.1, -1.1],
            scale: 2.0,
            material: material(k),
        })
        .collect();
    batches_match_one_at_a_time(&isometric, 4 * count);
    let ropes: Vec<RopeBendingConstraint> = (0..count)
        .map(|k| RopeBendingConstraint {
            particles: [0, 1, 2].map(|j| (3 * k + j) as u32),
            scale: 12.0,
            material: material(k),
        })
        .collect();
    batches_match_one_at_a_time(&ropes, 3 * count);
    let tets: Vec<TetVolumeConstraint> = (0..count)
        .map(|k| TetVolumeConstraint {
            particles: four(k),
            rest_volume: 1e-4,
            material: material(k),
        })
        .collect();
    batches_match_one_at_a_time(&tets, 4 * count);
    // Tethers sharing their pinned end (particle 3), as a colour may: never written.
    let tethers: Vec<LongRangeConstraint> = (0..count)
        .map(|k| LongRangeConstraint {
            particles: [(4 + k) as u32, 3],
            max_length: 0.05 * k as f64,
        })
        .collect();
    batches_match_one_at_a_time(&tethers, 4 + count);
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
