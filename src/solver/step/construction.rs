//! Building the [`Solver`] from a model, and growing its per-particle state when tearing adds
//! particles: the length of every per-particle buffer is decided here.

use super::{contact_stages, AnimatedPin, Solver, SurfacePin, NO_CONTACT};
use crate::collision::clearance::Clearance;
use crate::collision::features::FeatureContacts;
use crate::collision::MeshPose;
use crate::constraints::weighted::WeightedPosition;
use crate::model::Model;
use crate::solver::contacts::{NearSearches, ParticleContacts};
use crate::solver::crowding::Crowding;
use crate::solver::fluids::FluidState;
use crate::solver::motion::FrameMotion;
use crate::solver::projective::ProjectiveState;
use anyhow::{Context, Result};
use glam::DVec3;
use std::sync::{Mutex, RwLock};

/// Length of the per-particle collider-contact arrays: none without colliders.
fn collider_contact_len(model: &Model, particles: usize) -> usize {
    if model.colliders.is_empty() {
        0
    } else {
        particles
    }
}

/// Length of the particles' clearances from the mesh colliders: a slot per particle and
/// collider when any collider is a mesh, none otherwise.
fn clearance_len(model: &Model, particles: usize) -> usize {
    if model.colliders.iter().any(|c| c.mesh.is_some()) {
        particles * model.colliders.len()
    } else {
        0
    }
}

/// Whether any object has a coloured constraint kind or tethers: the XPBD sweeps then work on
/// [`Solver::weighted`].
fn has_batched_kinds(model: &Model) -> bool {
    [
        model.stretch.items.len(),
        model.tets.items.len(),
        model.bending.items.len(),
        model.isometric_bending.items.len(),
        model.rope_bending.items.len(),
        model.long_range.items.len(),
    ] != [0; 6]
}

/// Length of the padded particles the XPBD sweeps work on: none without a batched kind, or
/// where Projective Dynamics replaces the sweeps.
pub(crate) fn weighted_len(model: &Model, particles: usize) -> usize {
    if has_batched_kinds(model) && model.params.projective.is_none() {
        particles
    } else {
        0
    }
}

/// Length of the per-particle held normals: none without colliders or without contacts
/// between particles.
fn held_len(model: &Model, contacts: &ParticleContacts, particles: usize) -> usize {
    if contacts.is_empty() {
        0
    } else {
        collider_contact_len(model, particles)
    }
}

impl Solver {
    /// A solver running on `threads` worker threads (at least 1).
    pub fn new(model: Model, threads: usize) -> Result<Self> {
        let n = model.particles.len();
        let collides = colliding_particles(&model);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .thread_name(|k| format!("xpbd-worker-{k}"))
            .build()
            .context("cannot start the worker threads")?;
        let mesh_poses: Vec<Option<MeshPose>> = model
            .colliders
            .iter()
            .map(|c| MeshPose::new(c, 0.0))
            .collect();
        let (animated_pins, surface_pins) = moved_pins(&model, &mesh_poses);
        let contact_len = collider_contact_len(&model, n);
        let clearance_len = clearance_len(&model, n);
        let particle_contacts = ParticleContacts::new(&model);
        let held_len = held_len(&model, &particle_contacts, n);
        let projective = match model.params.projective {
            Some(settings) => Some(ProjectiveState::new(&model, settings, 0)?),
            None => None,
        };
        let weighted = vec![WeightedPosition::default(); weighted_len(&model, n)];
        Ok(Solver {
            projective,
            material_terms: model.materials.terms(1.0 / model.params.substep()),
            fluids: FluidState::new(&model, threads.max(1)),
            swept_boxes: particle_contacts.swept_boxes(),
            near_searches: NearSearches::default(),
            candidate_chunks: (0..threads.max(1) * contact_stages::CHUNKS_PER_THREAD)
                .map(|_| Mutex::default())
                .collect(),
            particle_contacts: RwLock::new(particle_contacts),
            feature_contacts: RwLock::new(FeatureContacts::new(&model)),
            feature_chunks: (0..threads.max(1) * contact_stages::CHUNKS_PER_THREAD)
                .map(|_| Mutex::default())
                .collect(),
            crossing_trees: Mutex::new((model.objects.iter()).map(|_| None).collect()),
            motion: FrameMotion::default(),
            tracks_motion: true,
            mesh_poses,
            model,
            contact_collider: vec![NO_CONTACT; n],
            contact_normal: vec![DVec3::ZERO; contact_len],
            contact_surface: vec![DVec3::ZERO; contact_len],
            contact_held: vec![DVec3::ZERO; held_len],
            collider_clearance: vec![Clearance::UNKNOWN; clearance_len],
            collides,
            animated_pins,
            surface_pins,
            time: 0.0,
            weighted,
            crowding: Crowding::new(&pool),
            pool,
        })
    }

    /// Extends the per-particle solver state after tearing added particles.
    pub(crate) fn grow_to(&mut self, n: usize) {
        let weighted_len = weighted_len(&self.model, n);
        self.weighted
            .resize(weighted_len, WeightedPosition::default());
        self.contact_collider.resize(n, NO_CONTACT);
        let len = collider_contact_len(&self.model, n);
        self.contact_normal.resize(len, DVec3::ZERO);
        self.contact_surface.resize(len, DVec3::ZERO);
        let particle_contacts = ParticleContacts::new(&self.model);
        let held_len = held_len(&self.model, &particle_contacts, n);
        self.contact_held.resize(held_len, DVec3::ZERO);
        let clearance_len = clearance_len(&self.model, n);
        self.collider_clearance
            .resize(clearance_len, Clearance::UNKNOWN);
        self.swept_boxes = particle_contacts.swept_boxes();
        self.near_searches = NearSearches::default(); // trees over the old edges
        self.particle_contacts = RwLock::new(particle_contacts);
        self.feature_contacts = RwLock::new(FeatureContacts::new(&self.model));
        self.fluids = FluidState::new(&self.model, self.pool.current_num_threads());
        self.collides = colliding_particles(&self.model);
    }
}

/// Whether each particle takes collider contacts: its object collides and it is not pinned.
fn colliding_particles(model: &Model) -> Vec<bool> {
    (0..model.particles.len())
        .map(|i| {
            model.objects[model.owner[i] as usize].collide && model.particles.inv_mass[i] > 0.0
        })
        .collect()
}

/// The pinned particles that move, in two lists: those of objects pinned to a mesh collider
/// follow its surface (a rest position the surface cannot hold is left out); those of other
/// animated or collider-pinned objects follow the object's keys or the collider's pose.
fn moved_pins(
    model: &Model,
    mesh_poses: &[Option<MeshPose>],
) -> (Vec<AnimatedPin>, Vec<SurfacePin>) {
    let mut animated_pins = Vec::new();
    let mut surface_pins = Vec::new();
    for (k, object) in model.objects.iter().enumerate() {
        if object.animation.is_none() && object.pinned_to.is_none() {
            continue;
        }
        let mesh = object.pinned_to.and_then(|c| {
            Some((
                c,
                mesh_poses[c].as_ref()?,
                model.colliders[c].mesh.as_ref()?,
            ))
        });
        for local in 0..object.vertex_count() as u32 {
            let i = object.global(local);
            if model.particles.inv_mass[i] != 0.0 {
                continue;
            }
            let rest = object.topology.positions[local as usize];
            match mesh {
                Some((c, pose, geometry)) => {
                    if let Some(attachment) = pose.attach(geometry, rest) {
                        surface_pins.push((i, c, attachment));
                    }
                }
                None => animated_pins.push((i, k, rest)),
            }
        }
    }
    (animated_pins, surface_pins)
}
