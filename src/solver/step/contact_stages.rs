//! The contact stages of a substep: contacts between particles (objects against each other,
//! self collision), searched and then solved by thread 0; particle–collider contacts, solved
//! per particle on every thread; and mesh-collider vertices and edges against cloth faces and
//! edges ([`crate::collision::features`]), searched by every thread in shares of the cloth and
//! solved by thread 0.

use super::Frame;
use crate::collision::stencil::Mobility;
use crate::collision::{resolve_contact, PosedCollider};
use crate::solver::contacts::Touching;
use crate::solver::parallel::share;
use glam::DVec3;
use std::sync::atomic::Ordering;

/// How far beyond its contact distance from a collider, in particle radii, a particle still
/// counts as held by it at the start of a substep. The collider contacts leave a touching
/// particle exactly at the contact distance; this covers what the stages after them (shape
/// matching, the feature contacts) and a collider's own motion move it by. Holding a particle
/// that is in fact a little off the surface only stops it short of the collider, like an
/// early inelastic contact: it cannot add energy.
const HELD_SLACK_RADII: f64 = 0.1;

impl Frame<'_> {
    /// Lists the candidate contacts between particles: thread 0 checks the near lists; every
    /// thread sweeps its share of the triangles and edges; thread 0 hashes the particles
    /// (and builds the search for new point–triangle lists when needed) while the last thread
    /// builds the edges' search; every thread tests its share of the candidates; thread 0
    /// joins the shares in order.
    pub(super) fn find_particle_contacts(&self, t: usize) {
        // SAFETY: read-only; nobody writes positions in these stages.
        let (x, x_prev) = unsafe { (self.x.as_slice(), self.x_prev.as_slice()) };
        let contacts = || {
            self.particle_contacts
                .read()
                .unwrap_or_else(|e| e.into_inner())
        };
        if t == 0 {
            let stale = self
                .particle_contacts
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .lists_stale(x, x_prev);
            self.lists_stale.store(stale, Ordering::Relaxed);
        }
        self.barrier.wait();
        let stale = self.lists_stale.load(Ordering::Relaxed);
        {
            let contacts = contacts();
            let triangles = share(0..self.triangle_boxes.len(), t, self.threads);
            let edges = share(0..self.edge_boxes.len(), t, self.threads);
            // SAFETY: this thread's shares of the boxes; nobody reads them until the barrier.
            let (triangle_out, edge_out) = unsafe {
                (
                    self.triangle_boxes.range(triangles.clone()),
                    self.edge_boxes.range(edges.clone()),
                )
            };
            contacts.sweep_triangle_boxes(x, x_prev, triangles, triangle_out);
            contacts.sweep_edge_boxes(x, x_prev, edges, edge_out);
        }
        self.barrier.wait();
        if t == 0 {
            let sweep = contacts().sweep_triangles(x, stale);
            *self
                .triangle_sweep
                .write()
                .unwrap_or_else(|e| e.into_inner()) = Some(sweep);
        }
        if t == self.threads - 1 {
            let sweep = contacts().sweep_edges(stale);
            *self.edge_sweep.write().unwrap_or_else(|e| e.into_inner()) = Some(sweep);
        }
        self.barrier.wait();
        {
            let triangle_sweep = self
                .triangle_sweep
                .read()
                .unwrap_or_else(|e| e.into_inner());
            let edge_sweep = self.edge_sweep.read().unwrap_or_else(|e| e.into_inner());
            let built = "built by threads 0 and the last before the barrier";
            let sweeps = (
                triangle_sweep.as_ref().expect(built),
                edge_sweep.as_ref().expect(built),
            );
            // SAFETY: read-only until the next substep's sweep.
            let boxes = unsafe { (self.triangle_boxes.as_slice(), self.edge_boxes.as_slice()) };
            let mine = contacts().candidates(sweeps, boxes, x, x_prev, t, self.threads);
            *self.candidate_shares[t]
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = mine;
        }
        self.barrier.wait();
        if t == 0 {
            let shares = self
                .candidate_shares
                .iter()
                .map(|share| std::mem::take(&mut *share.lock().unwrap_or_else(|e| e.into_inner())));
            self.particle_contacts
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .set_candidates(shares);
            // The search (hash, trees) is not needed until the next substep builds its own.
            *self
                .triangle_sweep
                .write()
                .unwrap_or_else(|e| e.into_inner()) = None;
            *self.edge_sweep.write().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }

    /// Projects the contacts between particles in their fixed order: level by level on every
    /// thread when the substep has many ([`crate::solver::contact_levels`]), otherwise by
    /// thread 0 while the others wait. Either way the same bits.
    pub(super) fn solve_particle_contacts(&self, t: usize, first_iteration: bool) {
        if !self.has_particle_contacts {
            return;
        }
        let contacts = || {
            self.particle_contacts
                .read()
                .unwrap_or_else(|e| e.into_inner())
        };
        let levels = contacts().level_count();
        if levels == 0 {
            if t == 0 {
                let mut contacts = self
                    .particle_contacts
                    .write()
                    .unwrap_or_else(|e| e.into_inner());
                // SAFETY: thread 0 alone touches the particles in this stage; x_prev is
                // read-only.
                let (x, x_prev) =
                    unsafe { (self.x.range(0..self.x.len()), self.x_prev.as_slice()) };
                contacts.solve(x, x_prev, &self.mobility(), first_iteration);
            }
            self.barrier.wait();
            return;
        }
        let mut touched = Touching::default();
        {
            let contacts = contacts();
            let mobility = self.mobility();
            // SAFETY: read-only in this stage.
            let x_prev = unsafe { self.x_prev.as_slice() };
            for level in 0..levels {
                // SAFETY: this thread's share of one level: its contacts share no particle
                // (pinned ones included) with any other thread's in this stage.
                let mut x = unsafe { self.x.stage_view() };
                let share = (t, self.threads);
                touched = touched + contacts.solve_level(level, share, &mut x, x_prev, &mobility);
                if level + 1 == levels {
                    *self.touching_shares[t]
                        .lock()
                        .unwrap_or_else(|e| e.into_inner()) = touched;
                }
                self.barrier.wait();
            }
        }
        if t == 0 {
            let total = (self.touching_shares.iter())
                .map(|share| *share.lock().unwrap_or_else(|e| e.into_inner()))
                .fold(Touching::default(), |sum, share| sum + share);
            self.particle_contacts
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .record_touching(first_iteration, total);
        }
    }

    /// The particles' inverse masses and the colliders holding them, for the contacts
    /// between particles.
    fn mobility(&self) -> Mobility<'_> {
        Mobility {
            inv_mass: self.inv_mass,
            // SAFETY: written only in the predict stage and by the collider contacts, each
            // thread for its own particles, both separated from the particle contacts by
            // barriers.
            held: unsafe { self.contact_held.as_slice() },
            max_mass_ratio: self.params.max_mass_ratio,
            owner: self.owner,
            gravity: self.params.gravity,
        }
    }

    /// Each thread finds, for its share of the particles, the collider holding each one at
    /// the start of the substep: the nearest within [`HELD_SLACK_RADII`] radii beyond its
    /// contact distance. The collider contacts of the substep's iterations then update it
    /// (see [`Self::push_out_of_colliders`]). A function of the positions alone, so a run
    /// resumed from a checkpoint finds the same.
    pub(super) fn find_held(&self, range: std::ops::Range<usize>, posed: &[PosedCollider]) {
        if self.contact_held.is_empty() {
            return;
        }
        let radius = self.params.particle_radius;
        // SAFETY: this thread's share of the particles, in the predict stage.
        let (held, x_prev) = unsafe {
            (
                self.contact_held.range(range.clone()),
                &*self.x_prev.range(range.clone()),
            )
        };
        let collides = &self.collides[range];
        for (k, held) in held.iter_mut().enumerate() {
            *held = DVec3::ZERO;
            if !collides[k] {
                continue;
            }
            let mut nearest = f64::INFINITY;
            for posed in posed {
                let margin = posed.collider.contact_margin(radius);
                let reach = margin + HELD_SLACK_RADII * radius;
                if let Some((distance, normal, _)) = posed.distance(x_prev[k], reach) {
                    if distance <= reach && distance - margin < nearest {
                        nearest = distance - margin;
                        *held = normal;
                    }
                }
            }
        }
    }

    pub(super) fn solve_contacts(&self, range: std::ops::Range<usize>, posed: &[PosedCollider]) {
        if self.colliders.is_empty() {
            return;
        }
        // SAFETY: this thread's share of the particles; contacts touch one particle each.
        let (x, x_prev) = unsafe {
            (
                self.x.range(range.clone()),
                &*self.x_prev.range(range.clone()),
            )
        };
        let collides = &self.collides[range.clone()];
        for k in (0..x.len()).filter(|&k| collides[k]) {
            // SAFETY: particle range.start + k is this thread's.
            unsafe { self.push_out_of_colliders(range.start + k, &mut x[k], x_prev[k], posed) };
        }
    }

    /// Pushes `p` (particle `i`'s position, or a target for it) out of every collider it is
    /// inside, with friction against `x_prev`, and records the last collider it touched, that
    /// collider's normal and surface motion for the velocity update. Whether any touched it.
    ///
    /// # Safety
    /// Particle `i`'s contact entries must be the calling thread's alone in this stage.
    pub(super) unsafe fn push_out_of_colliders(
        &self,
        i: usize,
        p: &mut DVec3,
        x_prev: DVec3,
        posed: &[PosedCollider],
    ) -> bool {
        let radius = self.params.particle_radius;
        let mut touched = false;
        for (c, posed) in posed.iter().enumerate() {
            let margin = posed.collider.contact_margin(radius);
            if let Some((normal, surface)) = resolve_contact(posed, margin, p, x_prev) {
                touched = true;
                // SAFETY: the caller's (see above).
                unsafe {
                    self.contact_collider.range(i..i + 1)[0] = c as u32;
                    self.contact_normal.range(i..i + 1)[0] = normal;
                    self.contact_surface.range(i..i + 1)[0] = surface;
                    if !self.contact_held.is_empty() {
                        self.contact_held.range(i..i + 1)[0] = normal;
                    }
                }
            }
        }
        touched
    }

    /// The contact distance with collider `c`: particle radius plus its thickness.
    fn collider_margin(&self, c: usize) -> f64 {
        self.colliders[c].contact_margin(self.params.particle_radius)
    }

    /// Every thread searches its share of the cloth for the substep's collider-feature pairs;
    /// thread 0 joins the shares in order.
    pub(super) fn find_feature_contacts(&self, t: usize, posed: &[PosedCollider]) {
        if !self.has_feature_contacts {
            return;
        }
        {
            // SAFETY: read-only; nobody writes positions in this stage.
            let (x, x_prev) = unsafe { (self.x.as_slice(), self.x_prev.as_slice()) };
            let features = self
                .feature_contacts
                .read()
                .unwrap_or_else(|e| e.into_inner());
            let mut share = self.feature_shares[t]
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let margin = |c| self.collider_margin(c);
            features.search_share(posed, x, x_prev, margin, t, self.threads, &mut share);
        }
        self.barrier.wait();
        if t == 0 {
            self.feature_contacts
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .join(self.feature_shares);
        }
        self.barrier.wait();
    }

    /// Thread 0 projects the collider-feature pairs, in the order listed, while the others
    /// wait.
    pub(super) fn solve_feature_contacts(&self, t: usize, posed: &[PosedCollider]) {
        if !self.has_feature_contacts {
            return;
        }
        if t == 0 {
            let mut features = self
                .feature_contacts
                .write()
                .unwrap_or_else(|e| e.into_inner());
            // SAFETY: thread 0 alone touches the particles in this stage; x_prev is read-only.
            let (x, x_prev) = unsafe { (self.x.range(0..self.x.len()), self.x_prev.as_slice()) };
            features.solve(posed, x, x_prev, self.inv_mass, |c| self.collider_margin(c));
        }
        self.barrier.wait();
    }
}
