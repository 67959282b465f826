//! Contacts between simulated particles: which particles and triangles take part, who may
//! touch whom, and the candidates of the current substep.
//!
//! - Objects with `collide = true` touch each other when at least two of them collide.
//! - An object with `self_collision = true` touches itself, except where two of its particles
//!   (or a particle and a triangle) are closer than `2r` in the rest shape: those start out in
//!   contact and are held apart by the object's own constraints (Müller, Ten Minute Physics
//!   #15; PHYSICS.md), so a contact there would only fight them.
//! - Every particle taking part is a sphere of radius r ([`crate::collision::particles`]); the
//!   triangles of objects with `self_collision = true` are also solid for every particle that
//!   may touch them ([`crate::collision::point_triangle`]): spheres alone leave gaps on cloth
//!   whose spacing exceeds 2r, triangles do not; and their edges are solid against each
//!   other ([`crate::collision::edge_edge`]), so two folds cannot interlock.
//!
//! Candidates are found once per substep, after the prediction: sphere pairs, points on
//! triangles and edges on edges among the pairs of the near lists
//! ([`crate::collision::near_lists`]), which are kept while the particles move less than a
//! skin relative to each other. Every thread measures how far its share of the particles strayed
//! from the lists' reference ([`ParticleContacts::stray`]), and thread 0 decides from the shares
//! whether the lists still hold ([`ParticleContacts::lists_stale`]);
//! then the threads take the pieces of the search from a queue as they come free: the edges',
//! the triangles' and the particles' trees for new lists ([`ParticleContacts::edge_search`],
//! [`ParticleContacts::triangle_search`], [`ParticleContacts::sphere_search`]), and chunks
//! of the triangles' and edges' swept boxes; then the chunks of the candidates, each a
//! contiguous range (of the particles, and of the edges for new lists or of the lists
//! otherwise) whose pairs it tests exactly. Every piece is a pure function of the positions
//! and the skin, so who built it changes nothing, and the chunks are joined in order: the same
//! sorted candidates for any thread count.
//!
//! The contacts are projected in that order (Gauss–Seidel), on every thread in the levels of
//! [`super::contact_levels`] when there are many (the same bits as one thread projecting the
//! sequence), otherwise by thread 0 alone; the result does not depend on the thread count.
//! Projecting them colour by colour instead was built and measured (docs/benchmarks.md, "Self
//! collision"): the colour order left crossing triangles the sorted order does not.

mod touch_rules;

use super::contact_levels::ContactLevels;
use super::parallel::share as share_of;
use crate::collision::edge_edge::{self, resolve_edge_contact, EdgeContact};
use crate::collision::edge_sides;
use crate::collision::near_lists::{
    EdgeSearch, NearListChunks, NearLists, Skin, SphereSearch, Stray, TriangleSearch,
};
use crate::collision::particles::{self, resolve_pair};
use crate::collision::point_triangle::{self, resolve_triangle_contact, TriangleContact};
use crate::collision::rest_close::RestClose;
use crate::collision::stencil::Mobility;
use crate::collision::triangle_sides;
use crate::constraints::Positions;
use crate::model::Model;
use glam::DVec3;
use std::sync::{Mutex, RwLock};
use touch_rules::rest_close_tables;

/// Pairs are kept as candidates while their centres are closer than this many radii.
const PAIR_REACH_RADII: f64 = 4.0;

/// The near lists' skin `S` in radii: how far the particles may stray from their extrapolated
/// motion relative to each other before the lists of point–triangle and edge–edge pairs are
/// rebuilt. Measured on `scenes/pile.toml` from 1 to 4 radii; 2 until the rebuilds got
/// cheaper, 1.5 since (docs/benchmarks.md, "Issue 13: the crossing count's tree refitted, and
/// a thinner skin"). The candidates do not depend on it.
const SKIN_RADII: f64 = 1.5;

/// How many contacts of each kind touched in a substep.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Touching {
    pub pairs: usize,
    pub point_triangle: usize,
    pub edge_edge: usize,
}

impl std::ops::Add for Touching {
    type Output = Touching;
    fn add(self, other: Touching) -> Touching {
        Touching {
            pairs: self.pairs + other.pairs,
            point_triangle: self.point_triangle + other.point_triangle,
            edge_edge: self.edge_edge + other.edge_edge,
        }
    }
}

/// The searches a substep that rebuilds the near lists reads besides the swept boxes: for
/// new sphere, point–triangle and edge pairs. Each is a pure function of the skin's
/// reference ([`ParticleContacts::sphere_search`], [`ParticleContacts::triangle_search`],
/// [`ParticleContacts::edge_search`]), so any thread may build it.
#[derive(Clone, Copy)]
pub struct Searches<'a> {
    pub spheres: &'a SphereSearch,
    pub triangles: &'a TriangleSearch,
    pub edges: &'a EdgeSearch,
}

/// The searches for new near lists, kept from one rebuild to the next so that their trees
/// are refitted rather than built again; each built by whichever thread takes it.
#[derive(Default)]
pub struct NearSearches {
    pub spheres: RwLock<Option<SphereSearch>>,
    pub triangles: RwLock<Option<TriangleSearch>>,
    pub edges: RwLock<Option<EdgeSearch>>,
}

/// The box (lower and upper corner) a triangle or an edge sweeps over a substep.
pub type SweptBox = (DVec3, DVec3);

/// The boxes the triangles and the edges of self-colliding objects sweep over a substep,
/// grown by the contact margin, kept from substep to substep (every thread fills a share).
#[derive(Debug, Clone, Default)]
pub struct SweptBoxes {
    pub triangles: Vec<SweptBox>,
    pub edges: Vec<SweptBox>,
}

/// One share of a substep's candidates, and of the new near lists when they were rebuilt
/// (in the buffers of the old ones, [`ParticleContacts::lend_lists`]). The solver keeps
/// its shares from one substep to the next and refills them, so that once their buffers
/// have grown the contact search allocates nothing (issue 13: no allocation per substep).
#[derive(Debug, Default)]
pub struct Candidates {
    pairs: Vec<[u32; 2]>,
    triangle_contacts: Vec<TriangleContact>,
    edge_contacts: Vec<EdgeContact>,
    near: NearLists,
}

#[derive(Debug, Clone, Default)]
pub struct ParticleContacts {
    /// Particles that take part, ascending.
    particles: Vec<u32>,
    /// The object of every particle.
    owner: Vec<u32>,
    /// Per object: touches the other objects that collide.
    touches_others: Vec<bool>,
    /// Per object: touches itself.
    touches_itself: Vec<bool>,
    /// Rest position of every particle when an object collides with itself (others unused);
    /// empty when none does.
    rest: Vec<DVec3>,
    /// Triangles of self-colliding objects, in particle indices, and their edges (sorted).
    triangles: Vec<[u32; 3]>,
    edges: Vec<[u32; 2]>,
    /// Per particle, the triangles of its own object closer than 2r at rest; per edge, the
    /// later edges of its object closer than 2r at rest (never contacts).
    close_triangles: RestClose,
    close_edges: RestClose,
    /// Particle radius r and the friction between particles.
    radius: f64,
    friction: f64,
    /// The near lists and the reference they were built at.
    near: NearListChunks,
    skin: Skin,
    pairs: Vec<[u32; 2]>,
    triangle_contacts: Vec<TriangleContact>,
    edge_contacts: Vec<EdgeContact>,
    /// The levels this substep's contacts are projected in on every thread, if many.
    levels: ContactLevels,
    /// Contacts that touched in the last substep.
    touching: Touching,
}

impl ParticleContacts {
    pub fn new(model: &Model) -> ParticleContacts {
        let (touches_others, touches_itself): (Vec<bool>, Vec<bool>) = (0..model.objects.len())
            .map(|k| model.touches_particles(k))
            .unzip();
        // Rest positions are read only for pairs within a self-colliding object.
        let mut rest = if touches_itself.contains(&true) {
            vec![DVec3::ZERO; model.particles.len()]
        } else {
            Vec::new()
        };
        let mut triangles = Vec::new();
        for object in &model.objects {
            if !object.self_collision {
                continue;
            }
            for (local, i) in object.globals().enumerate() {
                rest[i] = object.topology.positions[object.source_vertex[local] as usize];
            }
            triangles.extend(object.global_triangles());
        }
        let mut edges: Vec<[u32; 2]> = triangles
            .iter()
            .flat_map(|&[a, b, c]| [[a, b], [b, c], [c, a]])
            .map(|[a, b]| [a.min(b), a.max(b)])
            .collect();
        edges.sort_unstable();
        edges.dedup();
        let radius = model.params.particle_radius;
        let (close_triangles, close_edges) =
            rest_close_tables(&rest, &model.owner, &triangles, &edges, radius);
        let particles: Vec<u32> = (0..model.particles.len() as u32)
            .filter(|&i| {
                let k = model.owner[i as usize] as usize;
                touches_others[k] || touches_itself[k]
            })
            .collect();
        let levels = ContactLevels::new(if particles.is_empty() {
            0
        } else {
            model.particles.len()
        });
        ParticleContacts {
            particles,
            levels,
            owner: model.owner.clone(),
            touches_others,
            touches_itself,
            rest,
            triangles,
            edges,
            close_triangles,
            close_edges,
            radius,
            friction: model.params.particle_friction,
            near: NearListChunks::default(),
            skin: Skin::new(SKIN_RADII * radius),
            pairs: Vec::new(),
            triangle_contacts: Vec::new(),
            edge_contacts: Vec::new(),
            touching: Touching::default(),
        }
    }

    /// Whether any contact between particles can happen at all.
    pub fn is_empty(&self) -> bool {
        self.particles.is_empty()
    }

    /// Contacts that touched in the last substep.
    pub fn touching(&self) -> Touching {
        self.touching
    }

    /// How far the listed particles of share `share` of `shares` strayed from the skin's
    /// reference in the substep from `x_prev` to the predicted `x` (any thread; every thread
    /// takes a share, and [`Self::lists_stale`] takes the shares joined).
    pub fn stray(&self, share: usize, shares: usize, x: &[DVec3], x_prev: &[DVec3]) -> Stray {
        let particles = &self.particles[share_of(0..self.particles.len(), share, shares)];
        self.skin.stray(particles, x, x_prev)
    }

    /// Whether the near lists no longer cover the substep from the positions at its start
    /// `x_prev` to the predicted `x`, in which the listed particles strayed by `stray`
    /// ([`Self::stray`] of every share, joined); if so, the skin's reference moves to this
    /// substep and the lists are rebuilt from it (one thread; then [`Self::sphere_search`],
    /// [`Self::triangle_search`] and [`Self::edge_search`], on any).
    pub fn lists_stale(&mut self, stray: Stray, x: &[DVec3], x_prev: &[DVec3]) -> bool {
        // Without triangles and with spheres of radius 0 nothing is listed (nor searched).
        let listing = self.radius > 0.0 || !self.triangles.is_empty();
        listing && !self.particles.is_empty() && self.skin.update(stray, &self.particles, x, x_prev)
    }

    /// Buffers for the swept boxes of every triangle and edge.
    pub fn swept_boxes(&self) -> SweptBoxes {
        let empty = (DVec3::ZERO, DVec3::ZERO);
        SweptBoxes {
            triangles: vec![empty; self.triangles.len()],
            edges: vec![empty; self.edges.len()],
        }
    }

    /// The swept boxes of triangles `range` into `out` (its length; any thread).
    pub fn sweep_triangle_boxes(
        &self,
        x: &[DVec3],
        x_prev: &[DVec3],
        range: std::ops::Range<usize>,
        out: &mut [SweptBox],
    ) {
        let distance = 2.0 * self.radius;
        for (&t, out) in self.triangles[range].iter().zip(out) {
            *out = point_triangle::swept_box(t, x, x_prev, distance);
        }
    }

    /// The swept boxes of edges `range` into `out`, as [`Self::sweep_triangle_boxes`].
    pub fn sweep_edge_boxes(
        &self,
        x: &[DVec3],
        x_prev: &[DVec3],
        range: std::ops::Range<usize>,
        out: &mut [SweptBox],
    ) {
        let distance = 2.0 * self.radius;
        for (&e, out) in self.edges[range].iter().zip(out) {
            *out = edge_edge::swept_box(e, x, x_prev, distance);
        }
    }

    /// The search for new sphere-pair lists around the skin's reference, from the last one
    /// (`kept`) if any.
    pub fn sphere_search(&self, kept: Option<SphereSearch>) -> SphereSearch {
        let reach = PAIR_REACH_RADII * self.radius;
        // Spheres of radius 0 never touch: a search over no particles.
        let particles = if self.radius > 0.0 {
            &self.particles[..]
        } else {
            &[]
        };
        SphereSearch::new(&self.skin, particles, reach, kept)
    }

    /// The search for new point–triangle lists around the skin's reference, from the last
    /// one (`kept`) if any.
    pub fn triangle_search(&self, kept: Option<TriangleSearch>) -> TriangleSearch {
        TriangleSearch::new(&self.skin, &self.triangles, 2.0 * self.radius, kept)
    }

    /// The search for new edge–edge lists around the skin's reference, from the last one
    /// (`kept`) if any.
    pub fn edge_search(&self, kept: Option<EdgeSearch>) -> EdgeSearch {
        EdgeSearch::new(&self.skin, &self.edges, 2.0 * self.radius, kept)
    }

    /// Chunk `share` of `shares` of this substep's candidates, into `out`: the listed
    /// sphere, point–triangle and edge pairs that pass the exact tests, taken from contiguous
    /// ranges (of the particles and edges when the lists are rebuilt by `searches`, of the
    /// lists otherwise), so the shares joined in order are the sorted candidates whatever the
    /// number of shares (any thread, read-only).
    #[allow(clippy::too_many_arguments)] // the stage's inputs, then the share and its slot
    pub fn candidates(
        &self,
        searches: Option<Searches<'_>>,
        boxes: (&[SweptBox], &[SweptBox]),
        x: &[DVec3],
        x_prev: &[DVec3],
        share: usize,
        shares: usize,
        out: &mut Candidates,
    ) {
        let Candidates {
            pairs,
            triangle_contacts,
            edge_contacts,
            near,
        } = out;
        let contacts = (pairs, triangle_contacts, edge_contacts);
        match searches {
            Some(searches) => {
                near.clear();
                let particle_share = share_of(0..self.particles.len(), share, shares);
                let particles = &self.particles[particle_share.clone()];
                if self.radius > 0.0 {
                    // Spheres of radius 0 never touch.
                    let spheres = &mut near.spheres;
                    searches
                        .spheres
                        .pairs(particle_share, &self.particles, self, spheres);
                }
                let point_triangle = &mut near.point_triangle;
                searches
                    .triangles
                    .pairs(particles, &self.triangles, self, point_triangle);
                let edge_share = share_of(0..self.edges.len(), share, shares);
                searches
                    .edges
                    .pairs(edge_share, &self.edges, self, &mut near.edges);
                let listed = (
                    [&near.spheres[..]],
                    [&near.point_triangle[..]],
                    [&near.edges[..]],
                );
                self.test_listed(listed, boxes, x, x_prev, contacts);
            }
            None => {
                let listed = (
                    self.near.spheres(share, shares),
                    self.near.point_triangle(share, shares),
                    self.near.edges(share, shares),
                );
                self.test_listed(listed, boxes, x, x_prev, contacts);
            }
        }
    }

    /// Fills `pairs`, `triangle_contacts` and `edge_contacts` with the listed sphere,
    /// point–triangle and edge pairs (given as consecutive pieces of the lists) that pass
    /// the exact tests, in order.
    fn test_listed<'a>(
        &self,
        (spheres, point_triangle, edges): (
            impl IntoIterator<Item = &'a [[u32; 2]]>,
            impl IntoIterator<Item = &'a [[u32; 2]]>,
            impl IntoIterator<Item = &'a [[u32; 2]]>,
        ),
        (triangle_boxes, edge_boxes): (&[SweptBox], &[SweptBox]),
        x: &[DVec3],
        x_prev: &[DVec3],
        (pairs, triangle_contacts, edge_contacts): (
            &mut Vec<[u32; 2]>,
            &mut Vec<TriangleContact>,
            &mut Vec<EdgeContact>,
        ),
    ) {
        let distance = 2.0 * self.radius;
        let reach = PAIR_REACH_RADII * self.radius;
        pairs.clear();
        for listed in spheres {
            pairs.extend((listed.iter()).filter(|&&[i, j]| particles::close([i, j], x, reach)));
        }
        // Local vectors while the loops extend them: extending through the references, LLVM
        // left the tests of each pair out of line (a call per listed pair, the cost the
        // inlined box test is there to save).
        let mut on_triangles = std::mem::take(triangle_contacts);
        let mut on_edges = std::mem::take(edge_contacts);
        on_triangles.clear();
        on_edges.clear();
        for listed in point_triangle {
            let (triangles, boxes) = (&self.triangles, triangle_boxes);
            triangle_sides::contacts(
                listed,
                triangles,
                boxes,
                x,
                x_prev,
                distance,
                &mut on_triangles,
            );
        }
        for listed in edges {
            edge_sides::contacts(listed, &self.edges, edge_boxes, x, x_prev, &mut on_edges);
        }
        (*triangle_contacts, *edge_contacts) = (on_triangles, on_edges);
    }

    /// Before a substep that rebuilds the near lists: hands the lists' buffers to `chunks`,
    /// which refill them (a rebuilding substep reads only the lists it finds), so that one
    /// set of list buffers serves every rebuild ([`Self::set_candidates`] takes them back).
    pub fn lend_lists(&mut self, chunks: &[Mutex<Candidates>]) {
        for (k, chunk) in chunks.iter().enumerate() {
            let mut chunk = chunk.lock().unwrap_or_else(|e| e.into_inner());
            self.near.swap_chunk(k, &mut chunk.near);
        }
    }

    /// Takes this substep's candidates from its chunks, in order; when the lists were
    /// `rebuilt`, the chunks' new lists become the near lists (the chunks keep the empty
    /// buffers [`Self::lend_lists`] gave them).
    pub fn set_candidates(&mut self, chunks: &[Mutex<Candidates>], rebuilt: bool) {
        self.pairs.clear();
        self.triangle_contacts.clear();
        self.edge_contacts.clear();
        for (k, chunk) in chunks.iter().enumerate() {
            let mut chunk = chunk.lock().unwrap_or_else(|e| e.into_inner());
            self.pairs.extend_from_slice(&chunk.pairs);
            self.triangle_contacts
                .extend_from_slice(&chunk.triangle_contacts);
            self.edge_contacts.extend_from_slice(&chunk.edge_contacts);
            if rebuilt {
                self.near.swap_chunk(k, &mut chunk.near);
            }
        }
        let count = self.contact_count();
        let mut levels = std::mem::take(&mut self.levels);
        levels.schedule(count, |k| self.contact_particles(k));
        self.levels = levels;
    }

    /// The substep's contacts: sphere pairs, then points on triangles, then edges on edges.
    fn contact_count(&self) -> usize {
        self.pairs.len() + self.triangle_contacts.len() + self.edge_contacts.len()
    }

    /// The particles contact `k` of the sequence acts on, and how many.
    fn contact_particles(&self, k: usize) -> ([u32; 4], usize) {
        let (pairs, triangles) = (self.pairs.len(), self.triangle_contacts.len());
        if k < pairs {
            let [i, j] = self.pairs[k];
            ([i, j, 0, 0], 2)
        } else if k < pairs + triangles {
            let contact = self.triangle_contacts[k - pairs];
            let [a, b, c] = self.triangles[contact.triangle as usize];
            ([contact.particle, a, b, c], 4)
        } else {
            let contact = self.edge_contacts[k - pairs - triangles];
            let [[a, b], [c, d]] = contact.edges.map(|e| self.edges[e as usize]);
            ([a, b, c, d], 4)
        }
    }

    /// Projects contact `k` of the sequence, counting it in `touched` if it touched.
    fn project<P: Positions + ?Sized>(
        &self,
        k: usize,
        x: &mut P,
        x_prev: &[DVec3],
        mobility: &Mobility,
        touched: &mut Touching,
    ) {
        let (radius, friction) = (self.radius, self.friction);
        let (pairs, triangles) = (self.pairs.len(), self.triangle_contacts.len());
        if k < pairs {
            let pair = self.pairs[k];
            touched.pairs += resolve_pair(pair, x, x_prev, mobility, radius, friction) as usize;
        } else if k < pairs + triangles {
            let contact = self.triangle_contacts[k - pairs];
            touched.point_triangle += resolve_triangle_contact(
                contact,
                &self.triangles,
                x,
                x_prev,
                mobility,
                2.0 * radius,
                friction,
            ) as usize;
        } else {
            let contact = self.edge_contacts[k - pairs - triangles];
            touched.edge_edge += resolve_edge_contact(
                contact,
                &self.edges,
                x,
                x_prev,
                mobility,
                2.0 * radius,
                friction,
            ) as usize;
        }
    }

    /// How many levels the substep's contacts are projected in on every thread
    /// ([`Self::solve_level`]); 0 when thread 0 projects them in sequence ([`Self::solve`]).
    pub fn level_count(&self) -> usize {
        self.levels.len()
    }

    /// Projects every candidate once in their sorted order, sphere pairs, then points on
    /// triangles, then edges on edges; remembers how many touched (see
    /// [`Self::record_touching`]).
    pub fn solve(
        &mut self,
        x: &mut [DVec3],
        x_prev: &[DVec3],
        mobility: &Mobility,
        first_iteration: bool,
    ) {
        let mut touched = Touching::default();
        for k in 0..self.contact_count() {
            self.project(k, x, x_prev, mobility, &mut touched);
        }
        self.record_touching(first_iteration, touched);
    }

    /// Share `share` of `shares` of level `level`'s contacts (any thread; the shares of a
    /// level touch disjoint particles), and how many of them touched.
    pub fn solve_level<P: Positions + ?Sized>(
        &self,
        level: usize,
        (share, shares): (usize, usize),
        x: &mut P,
        x_prev: &[DVec3],
        mobility: &Mobility,
    ) -> Touching {
        let contacts = self.levels.level(level);
        let mut touched = Touching::default();
        for &k in &contacts[share_of(0..contacts.len(), share, shares)] {
            self.project(k as usize, x, x_prev, mobility, &mut touched);
        }
        touched
    }

    /// Remembers how many contacts of each kind touched in an iteration: at the first, or
    /// whenever some did.
    pub fn record_touching(&mut self, first_iteration: bool, touched: Touching) {
        if first_iteration || touched != Touching::default() {
            self.touching = touched;
        }
    }
}
