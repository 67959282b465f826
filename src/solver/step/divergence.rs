//! Where and how a frame blew up: the [`Divergence`] that stops it, and the bounds a
//! position may not leave.

use super::Solver;
use crate::mesh::obj::MAX_ABS_COORDINATE;
use glam::DVec3;

/// Where and how the simulation blew up.
#[derive(Debug, Clone, PartialEq)]
pub struct Divergence {
    /// 1-based substep within the frame.
    pub substep: usize,
    pub object: String,
    /// Vertex index within the object (its index in the output files).
    pub vertex: usize,
    pub reason: String,
}

impl Solver {
    pub(super) fn divergence(&self, substep: usize, i: usize) -> Divergence {
        let p = &self.model.particles;
        let (object, vertex) = self.model.vertex_of(i);
        let reason = if !p.x[i].is_finite() || !p.v[i].is_finite() {
            "position or velocity is not finite".to_string()
        } else if out_of_bounds(p.x[i]) {
            let x = p.x[i];
            format!(
                "position ({:e}, {:e}, {:e}) m is beyond ±{MAX_ABS_COORDINATE:e} m",
                x.x, x.y, x.z
            )
        } else {
            format!(
                "speed {:.6e} m/s exceeds simulation.max_speed = {} m/s",
                p.v[i].length(),
                self.model.params.max_speed
            )
        };
        Divergence {
            substep,
            object: object.name.clone(),
            vertex: vertex as usize,
            reason,
        }
    }
}

pub(super) fn out_of_bounds(x: DVec3) -> bool {
    x.abs().max_element() > MAX_ABS_COORDINATE
}
