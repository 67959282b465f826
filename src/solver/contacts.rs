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
//! Candidates are found once per substep, after the prediction: one thread builds the
//! spatial hash and the trees ([`ParticleContacts::sweep`]), every thread then searches a
//! contiguous share of the particles and edges, and the shares are joined in order — the
//! same sorted lists for any thread count. The contacts are projected on one thread in that
//! order (Gauss-Seidel), so the result does not depend on the thread count.

use crate::collision::edge_edge::{resolve_edge_contact, segment_distance, EdgeContact, EdgeSweep};
use crate::collision::particles::{find_pairs, resolve_pair};
use crate::collision::point_triangle::{
    distance_to_triangle, resolve_triangle_contact, TriangleContact, TriangleSweep,
};
use crate::collision::spatial_hash::SpatialHash;
use crate::model::Model;
use glam::DVec3;

/// Pairs are kept as candidates while their centres are closer than this many radii.
const PAIR_REACH_RADII: f64 = 4.0;

/// How many contacts of each kind touched in a substep.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Touching {
    pub pairs: usize,
    pub point_triangle: usize,
    pub edge_edge: usize,
}

/// What one substep's candidate search needs: the particles hashed, the triangles' and the
/// edges' swept boxes in trees.
pub struct Sweeps {
    hash: SpatialHash,
    triangles: Option<TriangleSweep>,
    edges: Option<EdgeSweep>,
}

/// One share of a substep's candidates.
#[derive(Debug, Default)]
pub struct Candidates {
    pairs: Vec<[u32; 2]>,
    triangle_contacts: Vec<TriangleContact>,
    edge_contacts: Vec<EdgeContact>,
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
    /// Rest position of every particle of a self-colliding object (others unused).
    rest: Vec<DVec3>,
    /// Triangles of self-colliding objects, in particle indices, and their edges (sorted).
    triangles: Vec<[u32; 3]>,
    edges: Vec<[u32; 2]>,
    /// Particle radius r and the friction between particles.
    radius: f64,
    friction: f64,
    pairs: Vec<[u32; 2]>,
    triangle_contacts: Vec<TriangleContact>,
    edge_contacts: Vec<EdgeContact>,
    /// Contacts that touched in the last substep.
    touching: Touching,
}

impl ParticleContacts {
    pub fn new(model: &Model) -> ParticleContacts {
        let colliding = model.objects.iter().filter(|o| o.collide).count();
        let touches_others: Vec<bool> = model
            .objects
            .iter()
            .map(|o| o.collide && colliding >= 2)
            .collect();
        let touches_itself: Vec<bool> = model.objects.iter().map(|o| o.self_collision).collect();
        let mut rest = vec![DVec3::ZERO; model.particles.len()];
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
        ParticleContacts {
            particles: (0..model.particles.len() as u32)
                .filter(|&i| {
                    let k = model.owner[i as usize] as usize;
                    touches_others[k] || touches_itself[k]
                })
                .collect(),
            owner: model.owner.clone(),
            touches_others,
            touches_itself,
            rest,
            triangles,
            edges,
            radius,
            friction: model.params.particle_friction,
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

    fn may_touch(&self, a: u32, b: u32, rest_distance: impl FnOnce() -> f64) -> bool {
        let (oa, ob) = (self.owner[a as usize], self.owner[b as usize]);
        if oa != ob {
            self.touches_others[oa as usize] && self.touches_others[ob as usize]
        } else {
            self.touches_itself[oa as usize] && rest_distance() >= 2.0 * self.radius
        }
    }

    /// Builds what this substep's search needs from the predicted positions `x` and the
    /// positions at its start `x_prev` (one thread).
    pub fn sweep(&self, x: &[DVec3], x_prev: &[DVec3]) -> Sweeps {
        let distance = 2.0 * self.radius;
        let with_triangles = !self.triangles.is_empty();
        Sweeps {
            hash: SpatialHash::build(x, &self.particles, PAIR_REACH_RADII * self.radius),
            triangles: with_triangles
                .then(|| TriangleSweep::new(x, x_prev, &self.triangles, distance)),
            edges: with_triangles.then(|| EdgeSweep::new(x, x_prev, &self.edges, distance)),
        }
    }

    /// Share `share` of `shares` of this substep's candidates: contiguous ranges of the
    /// particles and edges, so the shares joined in order are the sorted lists, whatever the
    /// number of shares (any thread, read-only).
    pub fn candidates(
        &self,
        sweeps: &Sweeps,
        x: &[DVec3],
        x_prev: &[DVec3],
        share: usize,
        shares: usize,
    ) -> Candidates {
        let rest = &self.rest;
        let particles =
            &self.particles[super::parallel::share(0..self.particles.len(), share, shares)];
        let reach = PAIR_REACH_RADII * self.radius;
        let pairs = find_pairs(x, &sweeps.hash, particles, reach, |i, j| {
            self.may_touch(i, j, || rest[i as usize].distance(rest[j as usize]))
        });
        let triangles = &self.triangles;
        let triangle_contacts = sweeps.triangles.as_ref().map_or(Vec::new(), |sweep| {
            sweep.contacts(x, x_prev, particles, triangles, |p, t| {
                let corners = triangles[t as usize];
                self.may_touch(p, corners[0], || {
                    distance_to_triangle(rest[p as usize], corners.map(|i| rest[i as usize]))
                })
            })
        });
        let edges = &self.edges;
        let edge_share = super::parallel::share(0..edges.len(), share, shares);
        let edge_contacts = sweeps.edges.as_ref().map_or(Vec::new(), |sweep| {
            sweep.contacts(x, x_prev, edges, edge_share, |i, j| {
                let ([a, b], [c, d]) = (edges[i as usize], edges[j as usize]);
                self.may_touch(a, c, || {
                    let r = |k: u32| rest[k as usize];
                    segment_distance(r(a), r(b), r(c), r(d))
                })
            })
        });
        Candidates {
            pairs,
            triangle_contacts,
            edge_contacts,
        }
    }

    /// Takes this substep's candidates: the shares, in share order.
    pub fn set_candidates(&mut self, shares: impl IntoIterator<Item = Candidates>) {
        self.pairs.clear();
        self.triangle_contacts.clear();
        self.edge_contacts.clear();
        for share in shares {
            self.pairs.extend(share.pairs);
            self.triangle_contacts.extend(share.triangle_contacts);
            self.edge_contacts.extend(share.edge_contacts);
        }
    }

    /// Projects every candidate once in their sorted order, sphere pairs, then points on
    /// triangles, then edges on edges; remembers how many touched (at the first iteration, or
    /// whenever some do).
    pub fn solve(
        &mut self,
        x: &mut [DVec3],
        x_prev: &[DVec3],
        inv_mass: &[f64],
        first_iteration: bool,
    ) {
        let (radius, friction) = (self.radius, self.friction);
        let pairs = self
            .pairs
            .iter()
            .filter(|&&pair| resolve_pair(pair, x, x_prev, inv_mass, radius, friction))
            .count();
        let triangles = self
            .triangle_contacts
            .iter()
            .filter(|&&contact| {
                resolve_triangle_contact(
                    contact,
                    &self.triangles,
                    x,
                    x_prev,
                    inv_mass,
                    2.0 * radius,
                    friction,
                )
            })
            .count();
        let edges = self
            .edge_contacts
            .iter()
            .filter(|&&contact| {
                resolve_edge_contact(
                    contact,
                    &self.edges,
                    x,
                    x_prev,
                    inv_mass,
                    2.0 * radius,
                    friction,
                )
            })
            .count();
        if first_iteration || pairs + triangles + edges > 0 {
            self.touching = Touching {
                pairs,
                point_triangle: triangles,
                edge_edge: edges,
            };
        }
    }
}
