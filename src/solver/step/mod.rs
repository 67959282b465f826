//! One frame of the XPBD small-steps loop (Macklin et al. 2016, 2019; PHYSICS.md "One frame"),
//! run by the worker threads in lockstep (see [`super::parallel`]), in legs of substeps on as
//! many threads as the free cores hold (`legs.rs`, [`super::crowding`]).
//!
//! `h = 1 / (fps · substeps)`; each substep:
//! 1. predict: `v += h g`, `x_prev = x`, `x += h v` (pinned particles stay put, `w = 0`);
//!    and, with colliders and contacts between particles, which collider holds each particle
//!    in those contacts (`find_held`, [`crate::collision::stencil::Mobility`]);
//! 2. `λ = 0` for every constraint (each thread clears the λ of the constraints it projects);
//! 3. `iterations` times: a symmetric Gauss–Seidel sweep over the coloured kinds (stretch,
//!    tetrahedra, dihedral, isometric and rope bending, then the same backward; each colour
//!    split between the threads in whole batches of [`LANES`] projected in SIMD lanes,
//!    overflow groups on one thread one constraint at a time;
//!    see `Sweep` in `xpbd_stages.rs`), then the
//!    object-wide kinds on one thread (volumes, shape matching), long-range tethers, then
//!    contacts (per particle), so contacts get the last word on penetration. With shape
//!    matching, shape matching and contacts alternate once more and shape matching closes the
//!    iteration: solved only before contacts a rigid cluster dents, only after them it sinks
//!    (PHYSICS.md). Measured on a falling crate: 4.6 mm of dent at impact with contacts last,
//!    against at most 1.5e-7 m of deformation and 0.4 mm of penetration (inside the 5 mm
//!    contact margin) with shape matching last;
//! 4. `v = (x − x_prev) / h`, `v *= exp(−k h)`, then restitution for particles that touched a
//!    collider (Müller et al. 2020): `v_n' = −e v_n` with `v_n` the normal speed after the
//!    gravity kick, and `v_n' = 0` below `2 |g| h` so resting contact does not jitter.
//!
//! With `solver = "projective"` the constraint part of step 3 (the sweeps, the object-wide
//! kinds and the tethers) is one Projective Dynamics local/global iteration instead
//! ([`projective_stages`], [`crate::solver::projective`]); contacts and the rest are the same.
//!
//! After every substep a non-finite position, a position beyond ±1e9 m (the input limit, which
//! also keeps the f32 output finite) or a speed above `max_speed` stops the frame with a
//! [`Divergence`] naming the substep, object and vertex: the lowest such particle index, found
//! as a minimum over the threads' shares, so it does not depend on the thread count.

mod construction;
mod contact_stages;
mod divergence;
mod fluid_stages;
mod legs;
mod particle_stages;
mod plastic_stages;
mod projective_stages;
mod xpbd_stages;

pub(crate) use construction::weighted_len;
pub use divergence::Divergence;
use fluid_stages::FluidStage;
use projective_stages::ProjectiveStage;

use xpbd_stages::{SharedBlock, WholeObjects};

use super::contacts::{Candidates, NearSearches, ParticleContacts, SweptBox, SweptBoxes};
use super::crowding::Crowding;
use super::motion::FrameMotion;
use super::parallel::{share, SharedSlice, SpinBarrier, TaskQueue};
use crate::collision::clearance::Clearance;
use crate::collision::features::{FeatureContacts, SearchChunk};
use crate::collision::near_lists::Stray;
use crate::collision::wide_bvh::BoxTree;
use crate::collision::{Collider, MeshPose, PosedCollider, SurfaceAttachment};
use crate::constraints::curvature::{IsometricBendingConstraint, RopeBendingConstraint};
use crate::constraints::dihedral::DihedralConstraint;
use crate::constraints::distance::DistanceConstraint;
use crate::constraints::lanes::LANES;
use crate::constraints::long_range::LongRangeConstraint;
use crate::constraints::tet_volume::TetVolumeConstraint;
use crate::constraints::weighted::WeightedPosition;
use crate::constraints::Terms;
use crate::model::{Model, SolverParams};
use crate::solver::projective::ProjectiveState;
use anyhow::Result;
use glam::DVec3;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, RwLock};

const NO_CONTACT: u32 = u32::MAX;

/// Restitution cut-off speed, m/s, when gravity is zero.
const REST_SPEED_WITHOUT_GRAVITY: f64 = 1e-3;

/// A pinned particle that its object's keys or its collider move: particle, object, rest
/// position.
type AnimatedPin = (usize, usize, DVec3);

/// A pinned particle attached to a mesh collider's surface: particle, collider, where.
type SurfacePin = (usize, usize, SurfaceAttachment);

/// The model, the per-substep contact state and the run's worker threads.
pub struct Solver {
    pub model: Model,
    /// Δλ coefficients of every material at this run's substep (`Model::materials`).
    material_terms: Vec<Terms<f64>>,
    /// Collider each particle touched in the current substep (`NO_CONTACT` if none).
    contact_collider: Vec<u32>,
    /// The touched collider's normal at each particle; like `contact_surface`, empty when the
    /// scene has no collider (nothing is ever touched).
    contact_normal: Vec<DVec3>,
    /// How far the touched collider's surface moved in the substep (moving colliders).
    contact_surface: Vec<DVec3>,
    /// The outward normal of the collider holding each particle in this substep, zero where
    /// none does ([`crate::collision::stencil::Mobility`]); empty without colliders or
    /// without contacts between particles (nothing reads it).
    contact_held: Vec<DVec3>,
    /// How far each particle was from each mesh collider when last measured, particle by
    /// particle, a slot per collider ([`crate::collision::clearance`]); empty without mesh
    /// colliders.
    collider_clearance: Vec<Clearance>,
    /// Whether each particle collides (its object's `collide` and not pinned).
    collides: Vec<bool>,
    /// Pinned particles of animated objects: particle, object, rest position.
    animated_pins: Vec<AnimatedPin>,
    /// Pinned particles attached to a mesh collider's surface: particle, collider, where.
    surface_pins: Vec<SurfacePin>,
    /// Simulated time at the current state, seconds.
    time: f64,
    /// Per collider, its posed mesh (mesh colliders only).
    mesh_poses: Vec<Option<MeshPose>>,
    /// Contacts between particles (objects against each other, self collision).
    particle_contacts: RwLock<ParticleContacts>,
    /// The swept boxes of its triangles and edges, kept from substep to substep.
    swept_boxes: SweptBoxes,
    /// The last searches for its near lists, refitted at the next rebuild.
    near_searches: NearSearches,
    /// The candidates found chunk by chunk: refilled in every substep, into the same
    /// buffers.
    candidate_chunks: Vec<Mutex<Candidates>>,
    /// Mesh-collider vertices and edges against cloth faces and edges.
    feature_contacts: RwLock<FeatureContacts>,
    /// The chunks of the feature-contact search (eight per thread), kept from frame to frame.
    feature_chunks: Vec<Mutex<SearchChunk>>,
    /// Per object, the tree its crossing triangle pairs were last counted with (the stats'
    /// `self_intersections`), refitted at the next count
    /// ([`crate::collision::intersections::CrossingPairs::new`]).
    crossing_trees: Mutex<Vec<Option<BoxTree>>>,
    /// The frame's mean velocities, for the caches.
    motion: FrameMotion,
    /// Whether `motion` is kept (see [`Solver::track_frame_motion`]).
    tracks_motion: bool,
    /// With `solver = "projective"`: the prefactored system and its buffers.
    projective: Option<ProjectiveState>,
    /// Fluid objects' neighbour lists and per-particle buffers.
    fluids: super::fluids::FluidState,
    /// The particles' positions with their inverse masses, 32 bytes each, as the batched
    /// constraint kinds read them: filled from `model.particles` and copied back around every
    /// XPBD sweep ([`crate::constraints::weighted`]).
    weighted: Vec<WeightedPosition>,
    pool: rayon::ThreadPool,
    /// How many of the pool's threads each frame runs on.
    crowding: Crowding,
}

impl Solver {
    /// Simulated time of the current state, seconds.
    pub fn time(&self) -> f64 {
        self.time
    }

    /// Sets the simulated time (restoring a checkpoint).
    pub(crate) fn set_time(&mut self, time: f64) {
        self.time = time;
    }

    /// Every collider posed at the current time (mesh colliders with their mesh).
    pub fn posed_colliders(&self) -> Vec<PosedCollider<'_>> {
        self.model
            .colliders
            .iter()
            .zip(&self.mesh_poses)
            .map(|(c, mesh)| PosedCollider {
                mesh: mesh.as_ref(),
                ..c.posed(self.time, self.time)
            })
            .collect()
    }

    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// The run's thread pool, for per-frame work such as the diagnostics.
    pub fn pool(&self) -> &rayon::ThreadPool {
        &self.pool
    }

    /// Per object, the tree of its last crossing count, kept for the next
    /// ([`super::diagnostics`]).
    pub(super) fn crossing_trees(&self) -> std::sync::MutexGuard<'_, Vec<Option<BoxTree>>> {
        (self.crossing_trees.lock()).unwrap_or_else(|e| e.into_inner())
    }

    /// Contacts between particles that touched in the last substep.
    pub fn particle_contact_counts(&self) -> super::contacts::Touching {
        self.particle_contacts
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .touching()
    }

    /// How many levels the last substep's contacts between particles were projected in on
    /// every thread (0: thread 0 projected them in sequence; `solver::contact_levels`).
    pub fn particle_contact_levels(&self) -> usize {
        self.particle_contacts
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .level_count()
    }

    /// Cloth samples that mesh-collider vertices or edges pushed in the last substep.
    pub fn feature_contact_count(&self) -> usize {
        self.feature_contacts
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .touching()
    }

    /// How deep points of the cloth surfaces between their vertices (over mesh-collider
    /// vertices and beside their edges) sit inside a collider's contact margin now:
    /// `(a particle of the surface, depth)` per pair with a positive depth.
    pub fn surface_penetrations(&self) -> Vec<(usize, f64)> {
        let radius = self.model.params.particle_radius;
        let colliders = &self.model.colliders;
        self.feature_contacts
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .penetrations(&self.posed_colliders(), &self.model.particles.x, |c| {
                colliders[c].contact_margin(radius)
            })
    }

    /// Particles that touched a collider in the last substep.
    pub fn contact_count(&self) -> usize {
        self.contact_collider
            .iter()
            .filter(|&&c| c != NO_CONTACT)
            .count()
    }

    /// Advances the model by one frame, `1 / fps` seconds. With tearing, the threads meet
    /// after every substep so the topology can change between substeps.
    pub fn step_frame(&mut self) -> Result<(), Divergence> {
        if self.tracks_motion {
            self.motion.begin(&self.model);
        }
        self.crowding.begin_frame();
        self.step_substeps()?;
        self.crowding.end_frame();
        if self.tracks_motion {
            self.motion.end(&self.model);
        }
        Ok(())
    }

    /// The velocities to write for the current frame: the mean over the frame just stepped
    /// (see [`super::motion`]), or the model's own when frame motion is not tracked.
    pub fn output_velocities(&self) -> &[DVec3] {
        self.motion.velocities(&self.model)
    }

    /// Whether [`Self::step_frame`] keeps the frame's mean velocities for
    /// [`Self::output_velocities`] (on by default). A run that writes no frame files turns it
    /// off: two arrays of 24 bytes per particle it would never read (3 MiB of cloth-256's
    /// peak).
    pub fn track_frame_motion(&mut self, track: bool) {
        self.tracks_motion = track;
        if !track {
            self.motion = FrameMotion::default();
        }
    }

    fn step_substeps(&mut self) -> Result<(), Divergence> {
        let substeps = self.model.params.substeps;
        if !self.can_tear() {
            self.run_legs(1..substeps + 1, substeps + 1)?;
        } else {
            // The threads meet after every substep: the topology may change.
            for substep in 1..=substeps {
                self.run_legs(substep..substep + 1, substeps + 1)?;
                self.tear();
                self.refresh_projective()?;
            }
        }
        self.time += 1.0 / self.model.params.fps;
        Ok(())
    }

    /// Runs the substeps `range` (1-based) on the first `threads` worker threads.
    pub(super) fn run_substeps(
        &mut self,
        range: std::ops::Range<usize>,
        threads: usize,
    ) -> Result<(), Divergence> {
        let (frame, pool) = self.frame(range, threads);
        let outcomes = pool.broadcast(|context| {
            if context.index() >= threads {
                return None;
            }
            // A panicking worker poisons the barrier so the others stop waiting for it; the
            // panic then reaches the caller (and `main` reports it as an internal error).
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| frame.run(context.index())))
                .unwrap_or_else(|panic| {
                    frame.barrier.poison();
                    std::panic::resume_unwind(panic)
                })
        });
        let first_bad = frame.first_bad.load(Ordering::Acquire);
        drop(frame);
        match outcomes.into_iter().flatten().next() {
            Some(substep) => Err(self
                .projective_failure(substep)
                .unwrap_or_else(|| self.divergence(substep, first_bad))),
            None => Ok(()),
        }
    }

    /// What the first `threads` workers share while they run the substeps `range`, and the
    /// pool they run on (borrowed beside it).
    fn frame(
        &mut self,
        range: std::ops::Range<usize>,
        threads: usize,
    ) -> (Frame<'_>, &rayon::ThreadPool) {
        let plastic = self.model.is_plastic() && self.projective.is_none();
        let model = &mut self.model;
        let particles = &mut model.particles;
        let moving_meshes = (model.colliders.iter())
            .any(|c| c.mesh.is_some() && crate::collision::tessellate::moves(c));
        let frame = Frame {
            substeps: range,
            frame_time: self.time,
            has_particle_contacts: !self
                .particle_contacts
                .get_mut()
                .unwrap_or_else(|e| e.into_inner())
                .is_empty(),
            particle_contacts: &self.particle_contacts,
            triangle_boxes: SharedSlice::new(&mut self.swept_boxes.triangles),
            edge_boxes: SharedSlice::new(&mut self.swept_boxes.edges),
            has_feature_contacts: !self
                .feature_contacts
                .get_mut()
                .unwrap_or_else(|e| e.into_inner())
                .is_empty(),
            feature_contacts: &self.feature_contacts,
            feature_chunks: &self.feature_chunks,
            feature_tasks: TaskQueue::default(),
            lists_stale: AtomicBool::new(false),
            particle_contact_levels: AtomicUsize::new(0),
            feature_colours_shared: AtomicBool::new(false),
            near_searches: &self.near_searches,
            search_tasks: TaskQueue::default(),
            candidate_tasks: TaskQueue::default(),
            candidate_chunks: &self.candidate_chunks,
            stray_shares: (0..threads).map(|_| Mutex::new(Stray::NONE)).collect(),
            touching_shares: (0..threads).map(|_| Mutex::default()).collect(),
            feature_touching: (0..threads).map(|_| Mutex::default()).collect(),
            mesh_poses: SharedSlice::new(&mut self.mesh_poses),
            moving_meshes,
            objects: &model.objects,
            animated_pins: &self.animated_pins,
            surface_pins: &self.surface_pins,
            contact_surface: SharedSlice::new(&mut self.contact_surface),
            material_terms: &self.material_terms,
            params: &model.params,
            threads,
            barrier: SpinBarrier::new(threads),
            first_bad: AtomicUsize::new(usize::MAX),
            x: SharedSlice::new(&mut particles.x),
            weighted: SharedSlice::new(&mut self.weighted),
            x_prev: SharedSlice::new(&mut particles.x_prev),
            v: SharedSlice::new(&mut particles.v),
            inv_mass: &particles.inv_mass,
            mass: &particles.mass,
            owner: &model.owner,
            stretch: SharedBlock::new(&mut model.stretch),
            tets: SharedBlock::new(&mut model.tets),
            bending: SharedBlock::new(&mut model.bending),
            isometric_bending: SharedBlock::new(&mut model.isometric_bending),
            rope_bending: SharedBlock::new(&mut model.rope_bending),
            long_range: SharedBlock::new(&mut model.long_range),
            has_volumes: !model.volumes.is_empty(),
            has_shape_matching: !model.shape_matching.is_empty(),
            plastic,
            plasticity: model.materials.plasticity(),
            whole_objects: Mutex::new((&mut model.volumes, &mut model.shape_matching)),
            colliders: &model.colliders,
            collides: &self.collides,
            contact_collider: SharedSlice::new(&mut self.contact_collider),
            contact_normal: SharedSlice::new(&mut self.contact_normal),
            contact_held: SharedSlice::new(&mut self.contact_held),
            collider_clearance: SharedSlice::new(&mut self.collider_clearance),
            projective: self.projective.as_mut().map(ProjectiveStage::new),
            fluids: FluidStage::new(&mut self.fluids, &model.fluids),
        };
        (frame, &self.pool)
    }
}

/// Everything the worker threads share while they run some of a frame's substeps: a leg, or
/// the whole frame (the name is older than the legs).
struct Frame<'a> {
    /// The substeps to run, 1-based, numbered within the frame.
    substeps: std::ops::Range<usize>,
    /// Simulated time at the start of the frame, seconds.
    frame_time: f64,
    /// Whether `particle_contacts` has anything to do.
    has_particle_contacts: bool,
    /// Written by thread 0 only; all threads read it while they search for candidates.
    particle_contacts: &'a RwLock<ParticleContacts>,
    /// Whether `feature_contacts` has anything to do (colliding cloth and a collider other
    /// than a plane).
    has_feature_contacts: bool,
    /// Searched by every thread in chunks and joined by thread 0; solved colour by colour
    /// on every thread.
    feature_contacts: &'a RwLock<FeatureContacts>,
    /// The chunks of the collider-feature search, taken from `feature_tasks` as threads come
    /// free and joined in order.
    feature_chunks: &'a [Mutex<SearchChunk>],
    feature_tasks: TaskQueue,
    /// Whether the current substep rebuilds the near lists.
    lists_stale: AtomicBool,
    /// How many levels the substep's contacts between particles are projected in (0: thread
    /// 0 projects them in sequence), and whether the collider-feature colours are shared by
    /// the threads: written by thread 0 with the candidates, before a barrier, and read by
    /// every thread without taking the contacts' locks. Read under the read lock, the
    /// question raced with thread 0 taking the write lock to solve alone, and a thread that
    /// asked a moment later slept in the kernel until thread 0 had finished: 541 times in a
    /// run of `scenes/pile.toml` at 2 threads (docs/benchmarks.md, "Issue 13: what two
    /// threads can give on this machine").
    particle_contact_levels: AtomicUsize,
    feature_colours_shared: AtomicBool,
    /// The searches for new near lists, read by the candidate tests when the lists are
    /// rebuilt; each built by whichever thread takes the task, kept by the solver from one
    /// rebuild to the next.
    near_searches: &'a NearSearches,
    /// The tasks of the search stage (the pieces above, chunks of the swept boxes) and of
    /// the candidate stage (the chunks of `candidate_chunks`).
    search_tasks: TaskQueue,
    candidate_tasks: TaskQueue,
    /// The current substep's candidates, chunk by chunk.
    candidate_chunks: &'a [Mutex<Candidates>],
    /// The swept boxes of the self-colliding triangles and edges, filled in shares.
    triangle_boxes: SharedSlice<'a, SweptBox>,
    edge_boxes: SharedSlice<'a, SweptBox>,
    /// How far each thread's share of the particles strayed from the near lists' reference.
    stray_shares: Vec<Mutex<Stray>>,
    /// How many contacts between particles each thread saw touch in its shares of the levels.
    touching_shares: Vec<Mutex<super::contacts::Touching>>,
    /// How many collider-feature pairs each thread saw push the cloth in its shares of the
    /// colours.
    feature_touching: Vec<Mutex<usize>>,
    /// Per collider, its posed mesh: written at the start of every substep when
    /// `moving_meshes` (each by one thread), read by every thread for the rest of the
    /// substep (see [`Frame::pose_meshes`]).
    mesh_poses: SharedSlice<'a, Option<MeshPose>>,
    /// Whether any mesh collider moves (a mesh sequence or keyed transforms).
    moving_meshes: bool,
    objects: &'a [crate::model::ObjectLayout],
    animated_pins: &'a [AnimatedPin],
    surface_pins: &'a [SurfacePin],
    contact_surface: SharedSlice<'a, DVec3>,
    material_terms: &'a [Terms<f64>],
    params: &'a SolverParams,
    threads: usize,
    barrier: SpinBarrier,
    /// Lowest diverged particle index of the current substep (`usize::MAX` if none).
    first_bad: AtomicUsize,
    x: SharedSlice<'a, DVec3>,
    /// The positions with their inverse masses, as the constraint kinds read them during the
    /// XPBD sweeps ([`Solver::weighted`]); empty where no object has a coloured kind or
    /// tethers, or Projective Dynamics replaces the sweeps.
    weighted: SharedSlice<'a, WeightedPosition>,
    x_prev: SharedSlice<'a, DVec3>,
    v: SharedSlice<'a, DVec3>,
    inv_mass: &'a [f64],
    mass: &'a [f64],
    /// The object of each particle.
    owner: &'a [u32],
    stretch: SharedBlock<'a, DistanceConstraint>,
    tets: SharedBlock<'a, TetVolumeConstraint>,
    bending: SharedBlock<'a, DihedralConstraint>,
    isometric_bending: SharedBlock<'a, IsometricBendingConstraint>,
    rope_bending: SharedBlock<'a, RopeBendingConstraint>,
    long_range: SharedBlock<'a, LongRangeConstraint>,
    /// Volumes and shape-matching clusters: each couples a whole object, so thread 0 solves
    /// them while the others wait; the lock is never contended.
    whole_objects: WholeObjects<'a>,
    has_volumes: bool,
    has_shape_matching: bool,
    /// Whether any constraint is plastic (the plastic stage runs).
    plastic: bool,
    /// Every material's plasticity, by id.
    plasticity: &'a [Option<crate::constraints::plasticity::Plasticity>],
    colliders: &'a [Collider],
    collides: &'a [bool],
    contact_collider: SharedSlice<'a, u32>,
    contact_normal: SharedSlice<'a, DVec3>,
    /// See [`Solver::contact_held`].
    contact_held: SharedSlice<'a, DVec3>,
    /// See [`Solver::collider_clearance`].
    collider_clearance: SharedSlice<'a, Clearance>,
    /// Present with `solver = "projective"`: its stages replace the XPBD sweeps.
    projective: Option<ProjectiveStage<'a>>,
    /// Present with fluid objects.
    fluids: Option<FluidStage<'a>>,
}

impl Frame<'_> {
    /// Thread `t`'s part of the substeps. Returns the substep at which the frame diverged.
    fn run(&self, t: usize) -> Option<usize> {
        let h = 1.0 / (self.params.fps * self.params.substeps as f64);
        let particles = share(0..self.x.len(), t, self.threads);
        // The colliders posed over the substep: one buffer for the frame, refilled in every
        // substep (no allocation per substep).
        let mut posed: Vec<PosedCollider> = Vec::with_capacity(self.colliders.len());
        for substep in self.substeps.clone() {
            let (start, end) = (
                self.frame_time + (substep - 1) as f64 * h,
                self.frame_time + substep as f64 * h,
            );
            if self.moving_meshes {
                self.pose_meshes(t, start, h);
                self.barrier.wait();
            }
            // SAFETY: the poses are written only in `pose_meshes`, after every thread has
            // cleared `posed` below and passed the barrier that ends the substep.
            let mesh_poses = unsafe { self.mesh_poses.as_slice() };
            posed.extend(
                (self.colliders.iter().zip(mesh_poses)).map(|(c, mesh)| PosedCollider {
                    mesh: mesh.as_ref(),
                    ..c.posed(start, end)
                }),
            );
            for chunk in self.collider_chunks(t) {
                self.predict(chunk.clone(), h);
                self.find_held(chunk, &posed);
            }
            self.barrier.wait();
            if !self.animated_pins.is_empty() || !self.surface_pins.is_empty() {
                if t == 0 {
                    self.move_pins(end);
                }
                self.barrier.wait();
            }
            if self.has_particle_contacts {
                self.find_particle_contacts(t);
                self.barrier.wait();
            }
            self.find_feature_contacts(t, &posed);
            self.find_fluid_neighbours(t);
            for iteration in 0..self.params.iterations {
                let first = iteration == 0;
                match &self.projective {
                    Some(pd) => self.projective_iteration(pd, t, iteration, &posed),
                    None => self.solve_constraints(t, first, h),
                }
                self.solve_fluids(t, &posed);
                self.solve_particle_contacts(t, first);
                self.solve_collider_contacts(t, &posed);
                self.barrier.wait();
                self.solve_feature_contacts(t, &posed);
                if self.has_shape_matching && self.projective.is_none() {
                    self.solve_whole_objects(t, false, false, h);
                    self.solve_collider_contacts(t, &posed);
                    self.barrier.wait();
                    self.solve_whole_objects(t, false, false, h);
                }
            }
            // No reference to a mesh pose outlives the substep (see `pose_meshes`).
            posed.clear();
            self.update_velocities(particles.clone(), h);
            self.barrier.wait();
            if self.first_bad.load(Ordering::Acquire) != usize::MAX {
                return Some(substep);
            }
            self.flow_plastically(t, h);
            self.smooth_fluid_velocities(t, h);
        }
        None
    }
}
