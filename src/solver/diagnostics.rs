//! Per-frame figures for the stats log (SPEC §3), computed from the state at the end of the
//! frame. Every sum runs sequentially in particle / constraint order, so the figures do not
//! depend on threads.
//!
//! Kinetic energy `Σ ½ m |v|²`; gravitational potential `−Σ m g · x` (zero at the origin);
//! momentum `Σ m v` (free particles; pinned ones are held by the animation); residuals per kind
//! `max |C|` and `sqrt(mean C²)` in the constraint's units (m, rad, m³); edge strain
//! `|p1 − p2| / d − 1`, reported as the largest magnitude; penetration is how far a colliding
//! particle sits inside its contact margin.

use super::step::Solver;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FrameDiagnostics {
    pub kinetic_energy: f64,
    pub potential_energy: f64,
    pub max_speed: f64,
    pub momentum: [f64; 3],
    /// Per constraint kind the scene uses (`stretch`, `bending`, `volume`): `max |C|`.
    pub residual_max: BTreeMap<&'static str, f64>,
    /// Per constraint kind: `sqrt(mean C²)`.
    pub residual_rms: BTreeMap<&'static str, f64>,
    pub max_edge_strain: f64,
    pub contacts: usize,
    pub max_penetration: f64,
}

pub fn measure(solver: &Solver) -> FrameDiagnostics {
    let model = &solver.model;
    let p = &model.particles;
    let g = model.params.gravity;
    let mut kinetic_energy = 0.0;
    let mut potential_energy = 0.0;
    let mut max_speed: f64 = 0.0;
    let mut momentum = glam::DVec3::ZERO;
    for i in 0..p.len() {
        let speed_sq = p.v[i].length_squared();
        kinetic_energy += 0.5 * p.mass[i] * speed_sq;
        potential_energy -= p.mass[i] * g.dot(p.x[i]);
        max_speed = max_speed.max(speed_sq.sqrt());
        if p.inv_mass[i] > 0.0 {
            momentum += p.v[i] * p.mass[i];
        }
    }
    let volume_values: Vec<f64> = model.volumes.iter().map(|v| v.value(&p.x)).collect();
    let volume_max = volume_values.iter().fold(0.0f64, |m, c| m.max(c.abs()));
    let volume_rms = if volume_values.is_empty() {
        0.0
    } else {
        (volume_values.iter().map(|c| c * c).sum::<f64>() / volume_values.len() as f64).sqrt()
    };
    let mut residual_max = BTreeMap::new();
    let mut residual_rms = BTreeMap::new();
    for (kind, count, (max, rms)) in [
        (
            "stretch",
            model.stretch.len(),
            model.stretch.residuals(&p.x),
        ),
        (
            "bending",
            model.bending.len(),
            model.bending.residuals(&p.x),
        ),
        ("volume", model.volumes.len(), (volume_max, volume_rms)),
    ] {
        if count > 0 {
            residual_max.insert(kind, max);
            residual_rms.insert(kind, rms);
        }
    }
    let max_edge_strain = model
        .stretch
        .items
        .iter()
        .fold(0.0f64, |m, c| m.max(c.strain(&p.x).abs()));
    let mut max_penetration: f64 = 0.0;
    for object in model.objects.iter().filter(|o| o.collide) {
        for i in object.particles.clone().filter(|&i| p.inv_mass[i] > 0.0) {
            for collider in &model.colliders {
                let margin = model.params.particle_radius + collider.thickness;
                let (distance, _) = collider.shape.signed_distance(p.x[i]);
                max_penetration = max_penetration.max(margin - distance);
            }
        }
    }
    FrameDiagnostics {
        kinetic_energy,
        potential_energy,
        max_speed,
        momentum: momentum.to_array(),
        residual_max,
        residual_rms,
        max_edge_strain,
        contacts: solver.contact_count(),
        max_penetration,
    }
}
