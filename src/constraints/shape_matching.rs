//! Shape matching (Müller, Heidelberger, Teschner, Gross 2005, "Meshless Deformations Based
//! on Shape Matching"): the whole object is one cluster pulled towards a rigidly moved copy of
//! its rest shape.
//!
//! ```text
//! c = Σ m_i p_i / M                 (centre of mass now)
//! q_i = x̄_i − c̄                     (rest positions about the rest centre of mass)
//! A = Σ m_i (p_i − c) q_iᵀ          (3 × 3)
//! R = rotation of A                 (Müller, Bender, Chentanez, Macklin 2016, below)
//! g_i = R q_i + c                   (goal positions)
//! C_i = |p_i − g_i|,  ∇C_i = (p_i − g_i) / |p_i − g_i|  (goal held fixed)
//! ```
//!
//! Each particle gets its own XPBD distance-to-goal constraint with the table's compliance
//! (0 = rigid: every particle lands on its goal). Because `Σ m_i q_i = 0`, the rigid correction
//! `Σ m_i (g_i − p_i) = 0` conserves linear momentum.
//!
//! Rotation extraction ("A Robust Method to Extract the Rotational Part of Deformations",
//! 2016): starting from the previous frame's rotation q, repeat
//! `ω = Σ_k r_k × a_k / (|Σ_k r_k · a_k| + ε)`, `q ← quat(axis ω/|ω|, angle |ω|) · q` with
//! `r_k`, `a_k` the columns of R(q) and A. No SVD, so no sign flips or reflections, and the
//! result depends only on its inputs (deterministic). The rotation is state carried from
//! substep to substep.

use super::plasticity::{cluster_factor, move_rest_shape, Plasticity};
use super::Material;
use glam::{DMat3, DQuat, DVec3};
use std::ops::Range;

/// Iterations of the rotation extraction per projection; warm-started, so few are needed.
const ROTATION_ITERATIONS: usize = 10;

#[derive(Debug, Clone)]
pub struct ShapeMatchingConstraint {
    pub particles: Range<usize>,
    /// `q_i`, rest positions relative to the rest centre of mass.
    rest: Vec<DVec3>,
    total_mass: f64,
    /// Current rotation estimate (warm start).
    pub rotation: DQuat,
    pub material: Material,
    /// `yield` and `creep` of the table (the rest shape `q_i` flows, [`super::plasticity`]).
    pub plasticity: Option<Plasticity>,
    /// The cluster's size for the plastic strain: the largest rest distance of a particle
    /// from the centre of mass at the start (fixed as the rest shape flows).
    size: f64,
    /// One multiplier per particle.
    lambda: Vec<f64>,
}

/// The rotational part of `a`, refined from `q` (Müller et al. 2016).
pub fn extract_rotation(a: &DMat3, mut q: DQuat, iterations: usize) -> DQuat {
    for _ in 0..iterations {
        let r = DMat3::from_quat(q);
        let torque = r.x_axis.cross(a.x_axis) + r.y_axis.cross(a.y_axis) + r.z_axis.cross(a.z_axis);
        let alignment = r.x_axis.dot(a.x_axis) + r.y_axis.dot(a.y_axis) + r.z_axis.dot(a.z_axis);
        let omega = torque / (alignment.abs() + 1e-9);
        let angle = omega.length();
        if angle < 1e-12 {
            break;
        }
        q = (DQuat::from_axis_angle(omega / angle, angle) * q).normalize();
    }
    q
}

impl ShapeMatchingConstraint {
    /// A cluster of `particles` (global range) whose rest positions are `rest` with masses `mass`.
    pub fn new(particles: Range<usize>, rest: &[DVec3], mass: &[f64], material: Material) -> Self {
        let total_mass: f64 = mass.iter().sum();
        let centre = rest.iter().zip(mass).map(|(&p, &m)| p * m).sum::<DVec3>() / total_mass;
        let rest: Vec<DVec3> = rest.iter().map(|&p| p - centre).collect();
        ShapeMatchingConstraint {
            lambda: vec![0.0; rest.len()],
            size: rest.iter().map(|q| q.length()).fold(0.0, f64::max),
            plasticity: None,
            rest,
            particles,
            total_mass,
            rotation: DQuat::IDENTITY,
            material,
        }
    }

    /// Centre of mass `c` and rotation `R` of the current positions.
    fn fit(&self, x: &[DVec3], mass: &[f64]) -> (DVec3, DQuat) {
        let range = self.particles.clone();
        let centre = x[range.clone()]
            .iter()
            .zip(&mass[range.clone()])
            .map(|(&p, &m)| p * m)
            .sum::<DVec3>()
            / self.total_mass;
        let mut a = DMat3::ZERO;
        for (k, i) in range.enumerate() {
            let d = (x[i] - centre) * mass[i];
            let q = self.rest[k];
            a += DMat3::from_cols(d * q.x, d * q.y, d * q.z);
        }
        (
            centre,
            extract_rotation(&a, self.rotation, ROTATION_ITERATIONS),
        )
    }

    /// Centre of mass and rotation of the current positions (Projective Dynamics' local
    /// step); the rotation is kept as the next warm start.
    pub fn fit_rotation(&mut self, x: &[DVec3], mass: &[f64]) -> (DVec3, DQuat) {
        let (centre, rotation) = self.fit(x, mass);
        self.rotation = rotation;
        (centre, rotation)
    }

    /// `q_i`: the rest positions about the rest centre of mass, in particle order.
    pub fn rest(&self) -> &[DVec3] {
        &self.rest
    }

    /// Puts back a rest shape from [`Self::rest`] (a checkpoint); false when it does not fit.
    pub fn set_rest(&mut self, rest: Vec<DVec3>) -> bool {
        let fits = rest.len() == self.rest.len() && rest.iter().all(|q| q.is_finite());
        if fits {
            self.rest = rest;
        }
        fits
    }

    /// The plastic pass of a substep of `h` seconds (module docs of [`super::plasticity`]):
    /// past the yield strain `max_i |p_i − g_i| / size`, the rest shape follows the current
    /// one, seen in the rest frame. The rotation is fitted afresh but not kept (the warm start
    /// stays the projections').
    pub fn flow_plastically(&mut self, x: &[DVec3], mass: &[f64], h: f64) {
        let Some(plasticity) = self.plasticity else {
            return;
        };
        let (centre, rotation) = self.fit(x, mass);
        let to_rest = rotation.inverse();
        let offsets: Vec<DVec3> = (self.particles.clone())
            .zip(&self.rest)
            .map(|(i, &q)| to_rest * (x[i] - centre) - q)
            .collect();
        let largest = offsets.iter().map(|d| d.length()).fold(0.0, f64::max);
        let factor = cluster_factor(largest, self.size, plasticity, plasticity.fraction(h));
        if factor > 0.0 {
            move_rest_shape(
                &mut self.rest,
                &offsets,
                &mass[self.particles.clone()],
                factor,
            );
        }
    }

    pub fn reset_lambda(&mut self) {
        self.lambda.fill(0.0);
    }

    /// One XPBD projection of every particle towards its goal.
    pub fn project(
        &mut self,
        x: &mut [DVec3],
        x_prev: &[DVec3],
        inv_mass: &[f64],
        mass: &[f64],
        inv_h: f64,
    ) {
        let (centre, rotation) = self.fit(x, mass);
        self.rotation = rotation;
        let r = DMat3::from_quat(rotation);
        for (k, i) in self.particles.clone().enumerate() {
            let w = inv_mass[i];
            let d = x[i] - (r * self.rest[k] + centre);
            let c = d.length();
            if w == 0.0 || c < 1e-15 {
                continue;
            }
            let n = d / c;
            let dl =
                self.material
                    .delta_lambda(c, self.lambda[k], w, n.dot(x[i] - x_prev[i]), inv_h);
            self.lambda[k] += dl;
            x[i] += n * (w * dl);
        }
    }

    /// `max |p_i − g_i|` and `Σ |p_i − g_i|²` at positions `x` (for the residual figures).
    pub fn residual_sums(&self, x: &[DVec3], mass: &[f64]) -> (f64, f64, usize) {
        let (centre, rotation) = self.fit(x, mass);
        let r = DMat3::from_quat(rotation);
        let mut max: f64 = 0.0;
        let mut sum_sq = 0.0;
        for (k, i) in self.particles.clone().enumerate() {
            let c = (x[i] - (r * self.rest[k] + centre)).length();
            max = max.max(c);
            sum_sq += c * c;
        }
        (max, sum_sq, self.rest.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extraction_recovers_a_rotation_and_ignores_stretch() {
        let truth = DQuat::from_axis_angle(DVec3::new(1.0, 2.0, -0.5).normalize(), 2.5);
        let stretch = DMat3::from_diagonal(DVec3::new(1.5, 0.7, 1.1));
        let a = DMat3::from_quat(truth) * stretch;
        let found = extract_rotation(&a, DQuat::IDENTITY, 100);
        assert!(found.dot(truth).abs() > 1.0 - 1e-10, "{found} vs {truth}");
    }

    #[test]
    fn plastic_flow_moves_the_rest_shape_only_past_yield_and_ignores_rigid_motion() {
        let rest = vec![
            DVec3::new(0.0, 0.0, 0.0),
            DVec3::new(1.0, 0.0, 0.0),
            DVec3::new(0.0, 1.0, 0.0),
            DVec3::new(0.0, 0.0, 1.0),
        ];
        let mass = [1.0, 2.0, 0.5, 1.5];
        let mut cluster = ShapeMatchingConstraint::new(0..4, &rest, &mass, Material::RIGID);
        cluster.plasticity = Some(Plasticity {
            yield_point: 0.1,
            creep: 1e6,
        });
        let before = cluster.rest().to_vec();
        let size = cluster.size;
        // Moved rigidly: no strain, nothing flows.
        let motion = DQuat::from_rotation_z(0.7);
        let mut x: Vec<DVec3> = rest.iter().map(|&p| motion * p + DVec3::X).collect();
        cluster.flow_plastically(&x, &mass, 1.0);
        assert!(cluster
            .rest()
            .iter()
            .zip(&before)
            .all(|(a, b)| a.distance(*b) < 1e-12));
        // Dented by 0.3 size: past the 0.1 yield, the rest shape takes most of the dent.
        x[2] += motion * DVec3::new(0.0, -0.3 * size, 0.0);
        let (dented, _, _) = cluster.residual_sums(&x, &mass);
        cluster.flow_plastically(&x, &mass, 1.0);
        let (left, _, _) = cluster.residual_sums(&x, &mass);
        assert!(
            dented > 0.2 * size && left < 0.15 * size,
            "{dented} → {left}"
        );
        let centre: DVec3 = cluster.rest().iter().zip(&mass).map(|(&q, &m)| q * m).sum();
        assert!(centre.length() < 1e-12, "{centre}");
    }

    #[test]
    fn rigid_projection_restores_the_shape_and_conserves_momentum() {
        let rest = vec![
            DVec3::new(0.0, 0.0, 0.0),
            DVec3::new(1.0, 0.0, 0.0),
            DVec3::new(0.0, 2.0, 0.0),
            DVec3::new(0.0, 0.0, 3.0),
        ];
        let mass = [1.0, 2.0, 0.5, 1.5];
        let inv_mass = mass.map(|m| 1.0 / m);
        let mut cluster = ShapeMatchingConstraint::new(0..4, &rest, &mass, Material::RIGID);
        // Rotate and translate the shape, then squash one point.
        let motion = DQuat::from_rotation_y(0.8);
        let mut x: Vec<DVec3> = rest
            .iter()
            .map(|&p| motion * p + DVec3::new(5.0, 1.0, 0.0))
            .collect();
        x[2] += DVec3::new(0.3, -0.2, 0.1);
        let x_prev = x.clone();
        for _ in 0..20 {
            cluster.project(&mut x, &x_prev, &inv_mass, &mass, 100.0);
        }
        for a in 0..4 {
            for b in 0..4 {
                let (now, then) = (x[a].distance(x[b]), rest[a].distance(rest[b]));
                assert!((now - then).abs() < 1e-9, "{a}-{b}: {now} vs {then}");
            }
        }
        let momentum: DVec3 = (0..4).map(|i| (x[i] - x_prev[i]) * mass[i]).sum();
        assert!(momentum.length() < 1e-12, "{momentum}");
    }
}
