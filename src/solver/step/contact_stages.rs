//! The contact stages of a substep: contacts between particles (objects against each other,
//! self collision), searched and then solved by thread 0; particle–collider contacts, solved
//! per particle on every thread; and mesh-collider vertices and edges against cloth faces and
//! edges ([`crate::collision::features`]), searched by every thread in shares of the cloth and
//! solved by thread 0.

use super::Frame;
use crate::collision::clearance::Clearance;
use crate::collision::near_lists::Stray;
use crate::collision::stencil::Mobility;
use crate::collision::{resolve_contact, PosedCollider};
use crate::solver::contacts::{Searches, Touching};
use crate::solver::parallel::{interleaved, share};
use glam::DVec3;
use std::ops::Range;
use std::sync::atomic::Ordering;

/// How far beyond its contact distance from a collider, in particle radii, a particle still
/// counts as held by it at the start of a substep. The collider contacts leave a touching
/// particle exactly at the contact distance; this covers what the stages after them (shape
/// matching, the feature contacts) and a collider's own motion move it by. Holding a particle
/// that is in fact a little off the surface only stops it short of the collider, like an
/// early inelastic contact: it cannot add energy.
const HELD_SLACK_RADII: f64 = 0.1;

/// Particles per chunk in the stages with collider contacts ([`Frame::collider_chunks`]):
/// 13 chunks for the dancer's 816, small enough that the rows near the body are dealt to
/// both threads, large enough that a chunk's loop and its cache lines stay its own.
const COLLIDER_CHUNK: usize = 64;

/// How many chunks per thread the swept boxes and the candidates are cut into for the task
/// queues: enough that the last chunk to finish is short beside a thread's whole part, few
/// enough that what each chunk costs of its own (its lists, joining them) stays small. The
/// candidates do not depend on it (docs/benchmarks.md, "Issue 13: contact search in chunks").
pub(super) const CHUNKS_PER_THREAD: usize = 8;

impl Frame<'_> {
    /// Lists the candidate contacts between particles: every thread measures how far its
    /// share of the particles strayed from the near lists' reference, and thread 0 decides
    /// from the shares whether the lists still hold; the threads take the pieces of the search
    /// as they come free ([`Self::build_searches`]), then the chunks of the candidates
    /// ([`Self::test_candidates`]); thread 0 joins the chunks in order.
    pub(super) fn find_particle_contacts(&self, t: usize) {
        // SAFETY: read-only; nobody writes positions in these stages.
        let (x, x_prev) = unsafe { (self.x.as_slice(), self.x_prev.as_slice()) };
        // In shares: one pass over every particle, thread 0's alone while the others waited,
        // was a third of what thread 0 did alone on the pile (docs/benchmarks.md, "Issue 13:
        // the skin measured on every thread, meshes posed on theirs").
        let stray = (self.particle_contacts.read())
            .unwrap_or_else(|e| e.into_inner())
            .stray(t, self.threads, x, x_prev);
        *self.stray_shares[t]
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = stray;
        self.barrier.wait();
        if t == 0 {
            let stray = (self.stray_shares.iter())
                .map(|share| *share.lock().unwrap_or_else(|e| e.into_inner()))
                .fold(Stray::NONE, Stray::and);
            let mut contacts = (self.particle_contacts.write()).unwrap_or_else(|e| e.into_inner());
            let stale = contacts.lists_stale(stray, x, x_prev);
            if stale {
                contacts.lend_lists(self.candidate_chunks);
            }
            drop(contacts);
            self.lists_stale.store(stale, Ordering::Relaxed);
            self.search_tasks.reset();
            self.candidate_tasks.reset();
        }
        self.barrier.wait();
        let stale = self.lists_stale.load(Ordering::Relaxed);
        self.build_searches(stale, x, x_prev);
        self.barrier.wait();
        self.test_candidates(stale, x, x_prev);
        self.barrier.wait();
        if t == 0 {
            let mut contacts = (self.particle_contacts.write()).unwrap_or_else(|e| e.into_inner());
            contacts.set_candidates(self.candidate_chunks, stale);
            let levels = contacts.level_count();
            self.particle_contact_levels
                .store(levels, Ordering::Relaxed);
        }
    }

    /// Takes the search stage's tasks until none is left: for new near lists the edges', the
    /// triangles' and the particles' trees (the costliest first, so they do not come last),
    /// then the chunks of the triangles' and the edges' swept boxes.
    fn build_searches(&self, stale: bool, x: &[DVec3], x_prev: &[DVec3]) {
        let contacts = self
            .particle_contacts
            .read()
            .unwrap_or_else(|e| e.into_inner());
        let chunks = self.candidate_chunks.len();
        let (triangles, edges) = (self.triangle_boxes.len(), self.edge_boxes.len());
        while let Some(task) = self.search_tasks.take(3 + 2 * chunks) {
            match task {
                0 if stale => {
                    let mut kept =
                        (self.near_searches.edges.write()).unwrap_or_else(|e| e.into_inner());
                    *kept = Some(contacts.edge_search(kept.take()));
                }
                1 if stale => {
                    let mut kept =
                        (self.near_searches.triangles.write()).unwrap_or_else(|e| e.into_inner());
                    *kept = Some(contacts.triangle_search(kept.take()));
                }
                2 if stale => {
                    let mut kept =
                        (self.near_searches.spheres.write()).unwrap_or_else(|e| e.into_inner());
                    *kept = Some(contacts.sphere_search(kept.take()));
                }
                0..=2 => {}
                k if k < 3 + chunks => {
                    let range = share(0..triangles, k - 3, chunks);
                    // SAFETY: this task's chunk of the boxes, handed to one thread; nobody
                    // reads them until the barrier.
                    let out = unsafe { self.triangle_boxes.range(range.clone()) };
                    contacts.sweep_triangle_boxes(x, x_prev, range, out);
                }
                k => {
                    let range = share(0..edges, k - 3 - chunks, chunks);
                    // SAFETY: as above.
                    let out = unsafe { self.edge_boxes.range(range.clone()) };
                    contacts.sweep_edge_boxes(x, x_prev, range, out);
                }
            }
        }
    }

    /// Takes chunks of the candidates until none is left, each into its own slot.
    fn test_candidates(&self, stale: bool, x: &[DVec3], x_prev: &[DVec3]) {
        let contacts = self
            .particle_contacts
            .read()
            .unwrap_or_else(|e| e.into_inner());
        let kept = self.near_searches;
        let sphere_search = (kept.spheres.read()).unwrap_or_else(|e| e.into_inner());
        let triangle_search = (kept.triangles.read()).unwrap_or_else(|e| e.into_inner());
        let edge_search = (kept.edges.read()).unwrap_or_else(|e| e.into_inner());
        let built = "built in the search stage of a substep with stale lists";
        let searches = stale.then(|| Searches {
            spheres: sphere_search.as_ref().expect(built),
            triangles: triangle_search.as_ref().expect(built),
            edges: edge_search.as_ref().expect(built),
        });
        // SAFETY: read-only until the next substep's search stage.
        let boxes = unsafe { (self.triangle_boxes.as_slice(), self.edge_boxes.as_slice()) };
        let chunks = self.candidate_chunks.len();
        while let Some(chunk) = self.candidate_tasks.take(chunks) {
            let mut out = (self.candidate_chunks[chunk].lock()).unwrap_or_else(|e| e.into_inner());
            contacts.candidates(searches, boxes, x, x_prev, chunk, chunks, &mut out);
        }
    }

    /// Projects the contacts between particles in their fixed order: level by level on every
    /// thread when the substep has many ([`crate::solver::contact_levels`]), otherwise by
    /// thread 0 while the others wait. Either way the same bits.
    pub(super) fn solve_particle_contacts(&self, t: usize, first_iteration: bool) {
        if !self.has_particle_contacts {
            return;
        }
        let levels = self.particle_contact_levels.load(Ordering::Relaxed);
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
            let contacts = (self.particle_contacts.read()).unwrap_or_else(|e| e.into_inner());
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

    /// Each thread finds, for its chunks of the particles, the collider holding each one at
    /// the start of the substep: the nearest within [`HELD_SLACK_RADII`] radii beyond its
    /// contact distance. The collider contacts of the substep's iterations then update it
    /// (see [`Self::push_out_of_colliders`]). A function of the positions alone, so a run
    /// resumed from a checkpoint finds the same.
    pub(super) fn find_held(&self, range: Range<usize>, posed: &[PosedCollider]) {
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
        let collides = &self.collides[range.clone()];
        for (k, held) in held.iter_mut().enumerate() {
            *held = DVec3::ZERO;
            if !collides[k] {
                continue;
            }
            let mut nearest = f64::INFINITY;
            for (c, posed) in posed.iter().enumerate() {
                let margin = posed.collider.contact_margin(radius);
                let reach = margin + HELD_SLACK_RADII * radius;
                // SAFETY: particle `range.start + k` is this thread's in the predict stage.
                let clearance = unsafe { self.clearance(range.start + k, c) };
                if let Some((distance, normal, _)) =
                    posed.distance_near(x_prev[k], reach, clearance)
                {
                    if distance <= reach && distance - margin < nearest {
                        nearest = distance - margin;
                        *held = normal;
                    }
                }
            }
        }
    }

    /// The chunks of the particles thread `t` takes in the stages with collider contacts
    /// (prediction and held colliders, collider contacts).
    ///
    /// With a mesh collider, interleaved chunks of [`COLLIDER_CHUNK`], not a contiguous
    /// share, because a particle near a mesh collider walks its tree while one far from it
    /// stops at the root's box, and a garment's rows near the body came to one thread: on
    /// `scenes/dancer.toml` thread 0's share cost 1.77 G instructions in collider distances
    /// against 1.08 G for thread 1's (docs/benchmarks.md, "Issue 13: the skin measured on
    /// every thread, meshes posed on theirs").
    ///
    /// Otherwise (no collider, or planes, spheres and boxes, which cost the same for every
    /// particle) the contiguous share that the sweeps' pack and the velocity update take too,
    /// so each particle's cache lines stay on one core from stage to stage: on cloth-256 at 2
    /// threads the interleaved chunks made the prediction five times as costly as on one
    /// (docs/benchmarks.md, "Issue 13: positions padded with their inverse masses").
    pub(super) fn collider_chunks(&self, t: usize) -> impl Iterator<Item = Range<usize>> {
        let len = self.x.len();
        let (whole_share, chunks) = if self.colliders.iter().any(|c| c.mesh.is_some()) {
            (
                None,
                Some(interleaved(len, t, self.threads, COLLIDER_CHUNK)),
            )
        } else {
            (Some(share(0..len, t, self.threads)), None)
        };
        whole_share.into_iter().chain(chunks.into_iter().flatten())
    }

    /// The collider contacts of thread `t`'s chunks ([`Self::collider_chunks`]).
    pub(super) fn solve_collider_contacts(&self, t: usize, posed: &[PosedCollider]) {
        for chunk in self.collider_chunks(t) {
            self.solve_contacts(chunk, posed);
        }
    }

    /// The collider contacts of particles `range`, which the calling thread alone touches in
    /// this stage: each particle pushed out of every collider it is inside.
    fn solve_contacts(&self, range: Range<usize>, posed: &[PosedCollider]) {
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
    #[inline(always)] // once per particle and iteration: a call each was 45 M on the pile
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
            // SAFETY: the caller's (see above).
            let clearance = unsafe { self.clearance(i, c) };
            if let Some((normal, surface)) = resolve_contact(posed, margin, p, x_prev, clearance) {
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

    /// Particle `i`'s clearance from collider `c` ([`crate::collision::clearance`]), when the
    /// scene keeps them (it has a mesh collider).
    ///
    /// # Safety
    /// Particle `i`'s contact entries must be the calling thread's alone in this stage.
    #[allow(clippy::mut_from_ref)]
    unsafe fn clearance(&self, i: usize, c: usize) -> Option<&mut Clearance> {
        if self.collider_clearance.is_empty() {
            return None;
        }
        let slot = i * self.colliders.len() + c;
        // SAFETY: the caller's promise; slot `i · colliders + c` is particle `i`'s.
        Some(&mut unsafe { self.collider_clearance.range(slot..slot + 1) }[0])
    }

    /// The contact distance with collider `c`: particle radius plus its thickness.
    fn collider_margin(&self, c: usize) -> f64 {
        self.colliders[c].contact_margin(self.params.particle_radius)
    }

    /// The threads search the chunks of the cloth for the substep's collider-feature pairs
    /// as they come free (the half of the cloth nearer a body costs more than the other);
    /// thread 0 joins the chunks in order, which is the list one search gives.
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
            let margin = |c| self.collider_margin(c);
            let chunks = self.feature_chunks.len();
            while let Some(chunk) = self.feature_tasks.take(chunks) {
                let mut out =
                    (self.feature_chunks[chunk].lock()).unwrap_or_else(|e| e.into_inner());
                features.search_chunk(posed, x, x_prev, margin, (chunk, chunks), &mut out);
            }
        }
        self.barrier.wait();
        if t == 0 {
            let mut features = (self.feature_contacts.write()).unwrap_or_else(|e| e.into_inner());
            features.join(self.feature_chunks);
            let shared = features.colours().worth_sharing();
            self.feature_colours_shared.store(shared, Ordering::Relaxed);
            self.feature_tasks.reset(); // for the next substep: nobody takes until then
        }
        self.barrier.wait();
    }

    /// Projects the collider-feature pairs in colour order
    /// ([`crate::solver::pair_colours`]): each colour shared by every thread when the colours
    /// hold many, then the overflow group on thread 0; otherwise thread 0 projects them all
    /// while the others wait. Either way the same bits.
    pub(super) fn solve_feature_contacts(&self, t: usize, posed: &[PosedCollider]) {
        if !self.has_feature_contacts {
            return;
        }
        let margin = |c| self.collider_margin(c);
        if !self.feature_colours_shared.load(Ordering::Relaxed) {
            if t == 0 {
                let mut features = self
                    .feature_contacts
                    .write()
                    .unwrap_or_else(|e| e.into_inner());
                // SAFETY: thread 0 alone touches the particles in this stage; x_prev is
                // read-only.
                let (x, x_prev) =
                    unsafe { (self.x.range(0..self.x.len()), self.x_prev.as_slice()) };
                features.solve(posed, x, x_prev, self.inv_mass, margin);
            }
            self.barrier.wait();
            return;
        }
        let mut touching = 0;
        {
            let features = (self.feature_contacts.read()).unwrap_or_else(|e| e.into_inner());
            let colours = features.colours();
            // SAFETY: read-only in this stage.
            let x_prev = unsafe { self.x_prev.as_slice() };
            let overflow: &[u32] = if t == 0 { colours.overflow() } else { &[] };
            let groups = (0..colours.colour_count())
                .map(|c| (colours.colour(c), (t, self.threads)))
                .chain([(overflow, (0, 1))]);
            let last = colours.colour_count(); // the overflow group's place
            for (group, (pairs, share)) in groups.enumerate() {
                // SAFETY: this thread's share of one colour, whose pairs share no particle
                // (pinned ones included) with any other thread's in this stage; the overflow
                // group is thread 0's alone.
                let mut x = unsafe { self.x.stage_view() };
                touching += features.solve_share(
                    pairs,
                    share,
                    posed,
                    &mut x,
                    x_prev,
                    self.inv_mass,
                    margin,
                );
                if group == last {
                    *self.feature_touching[t]
                        .lock()
                        .unwrap_or_else(|e| e.into_inner()) = touching;
                }
                self.barrier.wait();
            }
        }
        if t == 0 {
            let total = (self.feature_touching.iter())
                .map(|share| *share.lock().unwrap_or_else(|e| e.into_inner()))
                .sum();
            self.feature_contacts
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .set_touching(total);
        }
    }
}
