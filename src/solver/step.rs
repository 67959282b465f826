//! One frame of the XPBD small-steps loop (Macklin et al. 2016, 2019; PHYSICS.md "One frame").
//!
//! `h = 1 / (fps · substeps)`; each substep:
//! 1. predict: `v += h g`, `x_prev = x`, `x += h v` (pinned particles stay put, `w = 0`);
//! 2. `λ = 0` for every constraint;
//! 3. `iterations` times: stretch colours, bending colours, volumes, then contacts (after the
//!    other constraints, so they get the last word on penetration);
//! 4. `v = (x − x_prev) / h`, `v *= exp(−k h)`, then restitution for particles that touched a
//!    collider (Müller et al. 2020): `v_n' = −e v_n` with `v_n` the normal speed after the
//!    gravity kick, and `v_n' = 0` below `2 |g| h` so resting contact does not jitter.
//!
//! After every substep a non-finite position, a position beyond ±1e9 m (the input limit, which
//! also keeps the f32 output finite) or a speed above `max_speed` stops the frame with a
//! [`Divergence`] naming the substep, object and vertex.

use crate::collision::resolve_contact;
use crate::mesh::obj::MAX_ABS_COORDINATE;
use crate::model::Model;
use glam::DVec3;

const NO_CONTACT: u32 = u32::MAX;
/// Restitution cut-off speed, m/s, when gravity is zero.
const REST_SPEED_WITHOUT_GRAVITY: f64 = 1e-3;

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

/// The model plus the per-substep contact state.
pub struct Solver {
    pub model: Model,
    /// Collider each particle touched in the current substep (`NO_CONTACT` if none).
    contact_collider: Vec<u32>,
    contact_normal: Vec<DVec3>,
}

impl Solver {
    pub fn new(model: Model) -> Self {
        let n = model.particles.len();
        Solver {
            model,
            contact_collider: vec![NO_CONTACT; n],
            contact_normal: vec![DVec3::ZERO; n],
        }
    }

    /// Particles that touched a collider in the last substep.
    pub fn contact_count(&self) -> usize {
        self.contact_collider
            .iter()
            .filter(|&&c| c != NO_CONTACT)
            .count()
    }

    /// Advances the model by one frame, `1 / fps` seconds.
    pub fn step_frame(&mut self) -> Result<(), Divergence> {
        let h = self.model.params.substep();
        for substep in 1..=self.model.params.substeps {
            self.substep(h);
            self.check_divergence(substep)?;
        }
        Ok(())
    }

    fn substep(&mut self, h: f64) {
        let inv_h = 1.0 / h;
        let params = &self.model.params;
        let gravity = params.gravity;
        let particles = &mut self.model.particles;
        for i in 0..particles.len() {
            particles.x_prev[i] = particles.x[i];
            if particles.inv_mass[i] > 0.0 {
                particles.v[i] += gravity * h;
                particles.x[i] += particles.v[i] * h;
            }
        }
        self.model.stretch.lambda.fill(0.0);
        self.model.bending.lambda.fill(0.0);
        for volume in &mut self.model.volumes {
            volume.lambda = 0.0;
        }
        self.contact_collider.fill(NO_CONTACT);

        for _ in 0..self.model.params.iterations {
            let p = &mut self.model.particles;
            self.model
                .stretch
                .project_all(&mut p.x, &p.x_prev, &p.inv_mass, inv_h);
            self.model
                .bending
                .project_all(&mut p.x, &p.x_prev, &p.inv_mass, inv_h);
            for volume in &mut self.model.volumes {
                volume.project(&mut p.x, &p.x_prev, &p.inv_mass, inv_h);
            }
            self.project_contacts();
        }
        self.update_velocities(h);
    }

    fn project_contacts(&mut self) {
        let model = &mut self.model;
        if model.colliders.is_empty() {
            return;
        }
        let p = &mut model.particles;
        for object in model.objects.iter().filter(|o| o.collide) {
            for i in object.particles.clone() {
                if p.inv_mass[i] == 0.0 {
                    continue;
                }
                for (c, collider) in model.colliders.iter().enumerate() {
                    let radius = model.params.particle_radius + collider.thickness;
                    if let Some(normal) = resolve_contact(
                        &collider.shape,
                        radius,
                        collider.friction,
                        &mut p.x[i],
                        p.x_prev[i],
                    ) {
                        self.contact_collider[i] = c as u32;
                        self.contact_normal[i] = normal;
                    }
                }
            }
        }
    }

    fn update_velocities(&mut self, h: f64) {
        let params = &self.model.params;
        let damping = (-params.velocity_damping * h).exp();
        let rest_speed = if params.gravity.length() > 0.0 {
            2.0 * params.gravity.length() * h
        } else {
            REST_SPEED_WITHOUT_GRAVITY
        };
        let p = &mut self.model.particles;
        for i in 0..p.len() {
            if p.inv_mass[i] == 0.0 {
                p.v[i] = DVec3::ZERO;
                continue;
            }
            let mut v = (p.x[i] - p.x_prev[i]) / h * damping;
            let collider = self.contact_collider[i];
            if collider != NO_CONTACT {
                let n = self.contact_normal[i];
                // p.v still holds the predicted velocity (after the gravity kick).
                let approach = p.v[i].dot(n);
                if approach < 0.0 {
                    let e = self.model.colliders[collider as usize].restitution;
                    let target = if -approach > rest_speed {
                        -e * approach
                    } else {
                        0.0
                    };
                    v += n * (target - v.dot(n));
                }
            }
            p.v[i] = v;
        }
    }

    /// The lowest-index particle whose position is not finite or out of bounds, or whose speed
    /// exceeds `max_speed`, reported with its object and vertex.
    fn check_divergence(&self, substep: usize) -> Result<(), Divergence> {
        let p = &self.model.particles;
        let max_speed = self.model.params.max_speed;
        let outside = |i: usize| p.x[i].abs().max_element() > MAX_ABS_COORDINATE;
        let bad = (0..p.len()).find(|&i| {
            !p.x[i].is_finite() || !p.v[i].is_finite() || outside(i) || p.v[i].length() > max_speed
        });
        let Some(i) = bad else { return Ok(()) };
        let object = self
            .model
            .objects
            .iter()
            .find(|o| o.particles.contains(&i))
            .expect("every particle belongs to an object");
        let reason = if !p.x[i].is_finite() || !p.v[i].is_finite() {
            "position or velocity is not finite".to_string()
        } else if outside(i) {
            format!("position {} is beyond ±{MAX_ABS_COORDINATE:e} m", p.x[i])
        } else {
            format!(
                "speed {:.6e} m/s exceeds simulation.max_speed = {max_speed} m/s",
                p.v[i].length()
            )
        };
        Err(Divergence {
            substep,
            object: object.name.clone(),
            vertex: i - object.particles.start,
            reason,
        })
    }
}
