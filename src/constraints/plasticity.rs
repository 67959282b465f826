//! Plasticity (`yield` and `creep` in the `stretch`, `bending` and `shape_matching` tables):
//! a constraint strained past its yield point moves its rest state toward the current state,
//! so the deformation stays when the load goes. This is the model of Houdini Vellum's
//! "Plasticity" (threshold and rate) and of NVIDIA FleX's `plasticThreshold` /
//! `plasticCreep` on shapes (Macklin et al. 2014, "Unified Particle Physics for Real-Time
//! Applications", §6), with the rate in 1/s so it does not depend on the substep.
//!
//! Once per substep, after the constraint iterations and the velocity update, with `h` the
//! substep and `f = min(1, creep · h)`:
//!
//! ```text
//! d = deviation of the constraint from its rest state   (signed, or a vector)
//! y = the yield point in the same units
//! |d| <= y:  nothing
//! |d| >  y:  rest += f · (|d| − y) · d / |d|             (the excess beyond yield, a fraction f of it)
//! ```
//!
//! - stretch (distance constraints): `d = l − l0`, `y = yield · l0` (yield is a strain,
//!   `|l / l0 − 1|`); the rest length `l0` moves.
//! - dihedral bending: `d = wrap(θ − θ0)` (radians), `y = yield` (an angle in radians); the
//!   rest angle `θ0` moves (and is wrapped into (−π, π]).
//! - shape matching: per particle `d_i = Rᵀ (p_i − c) − q_i` (the offset from its goal, in the
//!   rest frame), with the cluster strain `e = max_i |d_i| / size` (`size` the largest rest
//!   distance of a particle from the centre of mass, fixed at the start). When `e > yield`
//!   every `q_i += f (1 − yield / e) d_i`, then the `q_i` are re-centred on the centre of mass
//!   (`Σ m_i q_i = 0`, which keeps the correction momentum-conserving).
//!
//! With `f = 1` (creep ≥ 1/h) the rest state jumps to the yield surface at once: the strain
//! left after the step is the yield point (perfect plasticity). A smaller creep lets the
//! rest state follow over roughly `1 / creep` seconds. Both are off (the rest state never
//! moves) unless `creep > 0`.

use glam::DVec3;

/// A constraint table's `yield` and `creep`, present only when `creep > 0`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plasticity {
    /// Yield point: a strain (stretch, shape matching) or an angle in radians (bending), ≥ 0.
    pub yield_point: f64,
    /// Creep rate, 1/s, > 0.
    pub creep: f64,
}

impl Plasticity {
    /// The table's plasticity, `None` (off) unless `creep > 0`.
    pub fn from_keys(yield_point: Option<f64>, creep: Option<f64>) -> Option<Plasticity> {
        let creep = creep.unwrap_or(0.0);
        (creep > 0.0).then(|| Plasticity {
            yield_point: yield_point.unwrap_or(0.0),
            creep,
        })
    }

    /// The fraction `f = min(1, creep · h)` of the excess taken per substep of `h` seconds.
    pub fn fraction(self, h: f64) -> f64 {
        (self.creep * h).min(1.0)
    }
}

/// How much a rest value moves for a deviation `deviation` (current − rest) past a yield of
/// `limit` (same units, ≥ 0), taking `fraction` of the excess; 0 within the yield.
#[inline]
pub fn flow(deviation: f64, limit: f64, fraction: f64) -> f64 {
    let excess = deviation.abs() - limit;
    if excess > 0.0 {
        fraction * excess * deviation.signum()
    } else {
        0.0
    }
}

/// The new rest length of an edge of current length `length` and rest length `rest`.
#[inline]
pub fn stretch_rest_length(length: f64, rest: f64, plasticity: Plasticity, fraction: f64) -> f64 {
    let moved = rest + flow(length - rest, plasticity.yield_point * rest, fraction);
    // `fraction <= 1` keeps it at least `length + yield · rest` when shortened: positive.
    if moved > 0.0 {
        moved
    } else {
        rest
    }
}

/// The new rest angle of a hinge whose deviation from its rest angle `rest` is `deviation`
/// (`wrap(θ − θ0)`, radians), wrapped into (−π, π].
#[inline]
pub fn bending_rest_angle(deviation: f64, rest: f64, plasticity: Plasticity, fraction: f64) -> f64 {
    let moved = rest + flow(deviation, plasticity.yield_point, fraction);
    if moved > std::f64::consts::PI {
        moved - std::f64::consts::TAU
    } else if moved <= -std::f64::consts::PI {
        moved + std::f64::consts::TAU
    } else {
        moved
    }
}

/// The factor `f (1 − yield / e)` by which every offset of a shape-matching cluster moves its
/// rest position, for a largest offset `largest` and cluster size `size`; 0 within the yield.
#[inline]
pub fn cluster_factor(largest: f64, size: f64, plasticity: Plasticity, fraction: f64) -> f64 {
    let strain = largest / size;
    if size > 0.0 && strain > plasticity.yield_point {
        fraction * (1.0 - plasticity.yield_point / strain)
    } else {
        0.0
    }
}

/// Moves the rest shape `rest` (about its centre of mass, masses `mass`) by `factor` of the
/// offsets `offsets`, then re-centres it so `Σ m_i q_i = 0`.
pub fn move_rest_shape(rest: &mut [DVec3], offsets: &[DVec3], mass: &[f64], factor: f64) {
    for (q, &d) in rest.iter_mut().zip(offsets) {
        *q += d * factor;
    }
    let total: f64 = mass.iter().sum();
    if total > 0.0 {
        let centre = rest.iter().zip(mass).map(|(&q, &m)| q * m).sum::<DVec3>() / total;
        rest.iter_mut().for_each(|q| *q -= centre);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLASTIC: Plasticity = Plasticity {
        yield_point: 0.1,
        creep: 50.0,
    };

    #[test]
    fn off_unless_creep_is_positive() {
        assert_eq!(Plasticity::from_keys(Some(0.1), None), None);
        assert_eq!(Plasticity::from_keys(Some(0.1), Some(0.0)), None);
        assert_eq!(
            Plasticity::from_keys(None, Some(2.0)),
            Some(Plasticity {
                yield_point: 0.0,
                creep: 2.0
            })
        );
        assert_eq!(PLASTIC.fraction(0.001), 0.05);
        assert_eq!(PLASTIC.fraction(1.0), 1.0);
    }

    #[test]
    fn within_yield_nothing_moves() {
        assert_eq!(stretch_rest_length(1.09, 1.0, PLASTIC, 1.0), 1.0);
        assert_eq!(stretch_rest_length(0.91, 1.0, PLASTIC, 1.0), 1.0);
        assert_eq!(bending_rest_angle(-0.1, 0.3, PLASTIC, 1.0), 0.3);
    }

    #[test]
    fn past_yield_the_excess_flows_by_the_fraction() {
        // Stretched to 1.5: excess 0.5 − 0.1 = 0.4, a quarter of it flows.
        let rest = stretch_rest_length(1.5, 1.0, PLASTIC, 0.25);
        assert!((rest - 1.1).abs() < 1e-15, "{rest}");
        // All of it: the strain left is the yield point.
        let rest = stretch_rest_length(0.5, 1.0, PLASTIC, 1.0);
        assert!((rest - 0.6).abs() < 1e-15, "{rest}");
        // Bent 0.5 rad past a rest angle of 3.0: wraps through π.
        let angle = bending_rest_angle(0.5, 3.0, PLASTIC, 1.0);
        assert!(
            (angle - (3.4 - std::f64::consts::TAU)).abs() < 1e-12,
            "{angle}"
        );
    }

    #[test]
    fn a_cluster_moves_its_rest_shape_and_stays_centred() {
        let mut rest = vec![DVec3::new(-1.0, 0.0, 0.0), DVec3::new(1.0, 0.0, 0.0)];
        let mass = [1.0, 3.0];
        // Largest offset 0.5 on a size-1 cluster: strain 0.5, factor (1 − 0.1/0.5) = 0.8.
        let factor = cluster_factor(0.5, 1.0, PLASTIC, 1.0);
        assert!((factor - 0.8).abs() < 1e-15);
        assert_eq!(cluster_factor(0.05, 1.0, PLASTIC, 1.0), 0.0);
        let offsets = [DVec3::new(-0.5, 0.0, 0.0), DVec3::new(0.0, 0.25, 0.0)];
        move_rest_shape(&mut rest, &offsets, &mass, factor);
        let centre: DVec3 = rest.iter().zip(&mass).map(|(&q, &m)| q * m).sum();
        assert!(centre.length() < 1e-15, "{centre}");
        // Spacing along x grew by 0.4, the second point rose by 0.2.
        assert!((rest[1].x - rest[0].x - 2.4).abs() < 1e-15);
        assert!((rest[1].y - rest[0].y - 0.2).abs() < 1e-15);
    }
}
