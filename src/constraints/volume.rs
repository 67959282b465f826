//! Global volume of a closed triangle surface (balloons; Müller et al. 2007, §4.4 "closed
//! meshes" / overpressure).
//!
//! ```text
//! C = Σ_t (p_a × p_b) · p_c / 6 − pressure · V0          (m³)
//! ∇_i C = Σ over triangles t containing i of (p_j × p_k) / 6, with (i, j, k) in t's winding
//! ```
//!
//! `V0` is the rest volume, `pressure` scales the target (1 keeps it, 2 inflates to twice).
//! Compliance in m⁵/N (m³ of volume per pascal of pressure difference). The gradient of a
//! closed surface sums to zero, so the correction conserves linear momentum.
//!
//! One constraint couples every particle of the object, so it is not coloured: it is solved
//! by one pass over the object's triangles with a gradient buffer owned by the constraint.

use super::Material;
use glam::DVec3;
use std::ops::Range;

#[derive(Debug, Clone)]
pub struct VolumeConstraint {
    /// The object's particles; triangle indices are global and inside this range.
    pub particles: Range<usize>,
    pub triangles: Vec<[u32; 3]>,
    /// `pressure · V0`, m³.
    pub target_volume: f64,
    pub material: Material,
    pub lambda: f64,
    /// ∇C per particle of `particles` (scratch, reused every projection).
    gradient: Vec<DVec3>,
}

/// Signed enclosed volume `Σ (p_a × p_b) · p_c / 6` (positive for outward winding).
pub fn enclosed_volume(x: &[DVec3], triangles: &[[u32; 3]]) -> f64 {
    triangles
        .iter()
        .map(|&[a, b, c]| x[a as usize].cross(x[b as usize]).dot(x[c as usize]))
        .sum::<f64>()
        / 6.0
}

impl VolumeConstraint {
    pub fn new(
        particles: Range<usize>,
        triangles: Vec<[u32; 3]>,
        target_volume: f64,
        material: Material,
    ) -> Self {
        let gradient = vec![DVec3::ZERO; particles.len()];
        VolumeConstraint {
            particles,
            triangles,
            target_volume,
            material,
            lambda: 0.0,
            gradient,
        }
    }

    /// `C` at positions `x`.
    pub fn value(&self, x: &[DVec3]) -> f64 {
        enclosed_volume(x, &self.triangles) - self.target_volume
    }

    /// One XPBD projection of the whole surface (see [`crate::constraints`]).
    pub fn project(&mut self, x: &mut [DVec3], x_prev: &[DVec3], inv_mass: &[f64], inv_h: f64) {
        let offset = self.particles.start;
        self.gradient.fill(DVec3::ZERO);
        let mut volume = 0.0;
        for &[a, b, c] in &self.triangles {
            let (pa, pb, pc) = (x[a as usize], x[b as usize], x[c as usize]);
            volume += pa.cross(pb).dot(pc);
            self.gradient[a as usize - offset] += pb.cross(pc);
            self.gradient[b as usize - offset] += pc.cross(pa);
            self.gradient[c as usize - offset] += pa.cross(pb);
        }
        let c = volume / 6.0 - self.target_volume;
        let mut w_grad_sq = 0.0;
        let mut grad_dot_dx = 0.0;
        for (k, g) in self.gradient.iter_mut().enumerate() {
            *g /= 6.0;
            let i = offset + k;
            w_grad_sq += inv_mass[i] * g.length_squared();
            grad_dot_dx += g.dot(x[i] - x_prev[i]);
        }
        let dl = self
            .material
            .delta_lambda(c, self.lambda, w_grad_sq, grad_dot_dx, inv_h);
        self.lambda += dl;
        for (k, g) in self.gradient.iter().enumerate() {
            let i = offset + k;
            x[i] += *g * (inv_mass[i] * dl);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::primitives;

    fn balloon(pressure: f64) -> (Vec<DVec3>, VolumeConstraint) {
        let mesh = primitives::sphere(1.0, 2);
        let triangles = mesh.triangles();
        let v0 = enclosed_volume(&mesh.positions, &triangles);
        let n = mesh.positions.len();
        let constraint = VolumeConstraint::new(0..n, triangles, pressure * v0, Material::RIGID);
        (mesh.positions, constraint)
    }

    #[test]
    fn zero_at_rest_and_gradient_matches_finite_differences() {
        let (mut x, constraint) = balloon(1.0);
        assert!(constraint.value(&x).abs() < 1e-14);
        // Finite differences of the volume for a few vertices against the projection's
        // gradient, read back from a projection with tiny inverse masses.
        let mut probe = constraint.clone();
        probe.target_volume = 0.0;
        let x_prev = x.clone();
        let w = vec![0.0; x.len()];
        probe.project(&mut x.clone(), &x_prev, &w, 1.0);
        for i in [0usize, 7, 40] {
            for axis in 0..3 {
                let step = 1e-6;
                x[i][axis] += step;
                let plus = constraint.value(&x);
                x[i][axis] -= 2.0 * step;
                let minus = constraint.value(&x);
                x[i][axis] += step;
                let numeric = (plus - minus) / (2.0 * step);
                assert!((numeric - probe.gradient[i][axis]).abs() < 1e-7);
            }
        }
    }

    #[test]
    fn rigid_projection_reaches_the_target_and_conserves_momentum() {
        let (mut x, mut constraint) = balloon(1.5);
        let x_prev = x.clone();
        let inv_mass: Vec<f64> = (0..x.len()).map(|k| 1.0 + (k % 3) as f64).collect();
        for _ in 0..20 {
            constraint.project(&mut x, &x_prev, &inv_mass, 60.0);
        }
        assert!(constraint.value(&x).abs() < 1e-9 * constraint.target_volume);
        let momentum: DVec3 = (0..x.len()).map(|i| (x[i] - x_prev[i]) / inv_mass[i]).sum();
        assert!(momentum.length() < 1e-12, "{momentum}");
    }
}
