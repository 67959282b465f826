//! Mesh-collider vertices and edges against cloth faces and edges: no poke-through.
//!
//! A particle contact keeps every cloth *vertex* outside a collider, but a cloth face is
//! larger than the collider's features: a torso's rim corner or a sharp edge can pass between
//! the vertices and show through the face while every vertex is outside (the skirt on
//! `scenes/skirt.toml`: 6–21 crossing face pairs in 14 of 47 frames, with a vertex-only
//! `max_penetration` of 1e-17). Bridson et al. 2002 close this case for cloth with
//! point–triangle and edge–edge tests; here one side of each pair is the collider.
//!
//! Each pair gives a *sample point* on the cloth surface, a fixed combination of its
//! particles, `s = Σ b_k x_k`:
//!
//! - a collider vertex `q` near a cloth triangle: `b` the barycentric weights of the point of
//!   the triangle nearest `q`, inside it or on its border (a collider corner beside a cloth
//!   *edge* is this case too: the edge–edge pairs below need both closest points inside their
//!   edges, so a corner nearest a cloth edge fell between the two kinds, measured as a 1.5 mm
//!   dent in `scenes/body.toml`; two triangles sharing the edge then give the same sample,
//!   and the second finds it already out);
//! - a collider edge and a cloth edge: the cloth edge's closest point to the collider edge,
//!   `b = [1 − σ, σ]`, when both closest points are inside their edges.
//!
//! The sample is then a particle for the collider: the same signed distance, pseudo-normal
//! side, continuous reach and Coulomb friction ([`super::resolve_contact`]) move it to `s'`,
//! and the move `Δ = s' − s` is shared by the particles as the exact projection of the
//! constraint on the combination: with `W = Σ b_k² w_k`, `Δx_k = w_k b_k Δ / W`, which moves
//! the sample by exactly `Δ` (`Σ b_k Δx_k = Δ`). The weights are found again at every
//! projection, so the sample follows the collider feature as the cloth slides over it; the
//! pairs are searched once per substep over boxes swept from `x_prev` to the prediction and
//! grown by the contact reach: every cloth triangle and every cloth edge queries the
//! collider's four-wide tree of triangle boxes once ([`super::MeshPose::triangle_boxes`];
//! its hits are sorted, so the tree's shape and walk order change nothing), keeping the
//! collider vertices inside its box and the collider edges whose boxes meet it (measured on
//! `scenes/skirt.toml` at one thread: listing every vertex and edge of every overlapping
//! collider triangle and sorting the lot cost 1.96 s against 1.13 s this way).
//!
//! The search runs in chunks of the cloth on every thread ([`FeatureContacts::search_chunk`]);
//! the pairs are projected in colour order, every thread taking a share of each colour
//! ([`crate::solver::pair_colours`]: in the listed order each pair depends on the one before,
//! since neighbouring cloth triangles share particles).

use super::bvh::{bounds, boxes_overlap, closest_on_triangle, swept_bounds};
use super::edge_edge::closest_parameters;
use super::wide_bvh::WalkStack;
use super::{resolve_contact, PosedCollider};
use crate::constraints::Positions;
use crate::model::Model;
use crate::solver::pair_colours::PairColours;
use crate::solver::parallel::share;
use glam::DVec3;
use std::ops::Range;

/// A collider vertex over a cloth triangle, or a collider edge beside a cloth edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pair {
    /// Collider, its vertex, and a cloth triangle (index into `triangles`).
    VertexTriangle(u32, u32, u32),
    /// Collider, its edge (index into that collider's `edges`), a cloth edge.
    EdgeEdge(u32, u32, u32),
}

impl Pair {
    fn collider(self) -> usize {
        match self {
            Pair::VertexTriangle(c, ..) | Pair::EdgeEdge(c, ..) => c as usize,
        }
    }
}

/// The cloth surfaces that collide, the mesh colliders' edges, and this substep's pairs.
#[derive(Debug, Clone, Default)]
pub struct FeatureContacts {
    /// Triangles of colliding objects, in particle indices.
    triangles: Vec<[u32; 3]>,
    /// Their edges, unique and sorted, in particle indices.
    edges: Vec<[u32; 2]>,
    /// Per collider (empty for analytic shapes): its unique edges, and per collider triangle
    /// its three edges (indices into the former).
    collider_edges: Vec<EdgeTable>,
    pairs: Vec<Pair>,
    /// The cloth particles each pair reads and moves ([`Sample::particles`]).
    pair_particles: Vec<[u32; 3]>,
    /// The colours this substep's pairs are projected in (see [`PairColours`]).
    colours: PairColours,
    /// Pairs that pushed the cloth in the last substep.
    touching: usize,
}

/// One chunk of a substep's search ([`FeatureContacts::search_chunk`]), kept from
/// substep to substep so the search allocates nothing once it is warm.
#[derive(Default)]
pub struct SearchChunk {
    /// The pairs found, by segment: collider `c`'s vertex–triangle pairs are segment `2c`,
    /// its edge–edge pairs segment `2c + 1`.
    segments: Vec<Vec<Pair>>,
    /// The cloth particles of each pair of `segments`, in the same places: looked up here,
    /// on whichever thread searches the chunk, rather than for the joined list by thread 0
    /// while the others wait (118 M of the dancer's instructions, docs/benchmarks.md,
    /// "Issue 13: the skin measured on every thread, meshes posed on theirs").
    particles: Vec<Vec<[u32; 3]>>,
    /// Scratch for one BVH query's hits.
    found: Vec<u32>,
    /// Which collider vertices or edges the query has listed.
    listed: Listed,
    /// The stack of the collider trees' walks.
    stack: WalkStack,
}

/// Which collider vertices (or edges) one query has met, so that each is tested and listed
/// once however many of the triangles it finds hold it: a vertex is in about six. Listing
/// each as often as found, then sorting and removing repeats, was 2 % of
/// `scenes/dancer.toml`'s instructions (docs/benchmarks.md, "Issue 13: where the walks'
/// time is").
#[derive(Debug, Default)]
struct Listed {
    /// The number of the last query that met each item.
    met: Vec<u32>,
    /// This query's number (never 0, which `met` starts at).
    query: u32,
}

impl Listed {
    /// Starts a query over items `0..items`.
    fn start(&mut self, items: usize) {
        if self.met.len() < items {
            self.met.resize(items, 0);
        }
        self.query = self.query.wrapping_add(1);
        if self.query == 0 {
            self.met.fill(0); // after 2³² queries, so no stale number matches
            self.query = 1;
        }
    }

    /// Whether this query meets `item` for the first time.
    fn first(&mut self, item: u32) -> bool {
        let met = &mut self.met[item as usize];
        let first = *met != self.query;
        *met = self.query;
        first
    }
}

/// Sorted unique edges of some triangles and, for each triangle, the index of each of its
/// edges in the former.
type EdgeTable = (Vec<[u32; 2]>, Vec<[u32; 3]>);

/// The [`EdgeTable`] of `triangles`.
fn edges_of(triangles: &[[u32; 3]]) -> EdgeTable {
    let key = |a: u32, b: u32| [a.min(b), a.max(b)];
    let mut edges: Vec<[u32; 2]> = triangles
        .iter()
        .flat_map(|&[a, b, c]| [key(a, b), key(b, c), key(c, a)])
        .collect();
    edges.sort_unstable();
    edges.dedup();
    let index = |e: [u32; 2]| edges.binary_search(&e).expect("listed above") as u32;
    let of_triangle = triangles
        .iter()
        .map(|&[a, b, c]| [index(key(a, b)), index(key(b, c)), index(key(c, a))])
        .collect();
    (edges, of_triangle)
}

impl FeatureContacts {
    /// The surfaces of the model's colliding objects against its mesh colliders.
    pub fn new(model: &Model) -> FeatureContacts {
        let has_meshes = model.colliders.iter().any(|c| c.mesh.is_some());
        let triangles: Vec<[u32; 3]> = if has_meshes {
            model
                .objects
                .iter()
                .filter(|o| o.collide)
                .flat_map(|o| o.global_triangles())
                .collect()
        } else {
            Vec::new()
        };
        let (edges, _) = edges_of(&triangles);
        let collider_edges = model
            .colliders
            .iter()
            .map(|c| match (&c.mesh, triangles.is_empty()) {
                (Some(mesh), false) => edges_of(&mesh.triangles),
                _ => (Vec::new(), Vec::new()),
            })
            .collect();
        let colours = PairColours::new(if triangles.is_empty() {
            0
        } else {
            model.particles.len()
        });
        FeatureContacts {
            triangles,
            edges,
            collider_edges,
            pairs: Vec::new(),
            pair_particles: Vec::new(),
            colours,
            touching: 0,
        }
    }

    /// Whether there is anything to do: colliding cloth and a mesh collider.
    pub fn is_empty(&self) -> bool {
        self.triangles.is_empty()
    }

    /// Pairs that pushed the cloth in the last substep.
    pub fn touching(&self) -> usize {
        self.touching
    }

    /// Searches chunk `chunk` of `chunks` (a contiguous share of the cloth triangles and
    /// edges) for this substep's pairs (see [`Self::search`]) into `out`. The chunks can be
    /// searched on any thread, in any order; [`Self::join`] then lists their pairs.
    pub fn search_chunk(
        &self,
        posed: &[PosedCollider],
        x: &[DVec3],
        x_prev: &[DVec3],
        margin: impl Fn(usize) -> f64,
        (chunk, chunks): (usize, usize),
        out: &mut SearchChunk,
    ) {
        let triangles = share(0..self.triangles.len(), chunk, chunks);
        let edges = share(0..self.edges.len(), chunk, chunks);
        self.search(posed, x, x_prev, margin, (triangles, edges), out);
        let SearchChunk {
            segments,
            particles,
            ..
        } = out;
        particles.resize_with(segments.len(), Vec::new);
        for (pairs, particles) in segments.iter().zip(particles) {
            particles.clear();
            particles.extend(pairs.iter().map(|&pair| self.particles_of(pair)));
        }
    }

    /// The cloth particles pair `pair` reads and moves ([`Sample::particles`]): a triangle's
    /// three, or an edge's two with the first repeated.
    fn particles_of(&self, pair: Pair) -> [u32; 3] {
        match pair {
            Pair::VertexTriangle(_, _, t) => self.triangles[t as usize],
            Pair::EdgeEdge(_, _, f) => {
                let [a, b] = self.edges[f as usize];
                [a, b, a]
            }
        }
    }

    /// Lists this substep's pairs from every chunk: segment by segment, the chunks in order.
    /// Chunks are contiguous and in cloth order, so the list is the one a single search
    /// would give, whatever the number of chunks. Then colours the list
    /// ([`PairColours`]): the order the pairs are projected in.
    pub fn join(&mut self, chunks: &[std::sync::Mutex<SearchChunk>]) {
        self.pairs.clear();
        self.pair_particles.clear();
        let segments = 2 * self.collider_edges.len();
        for segment in 0..segments {
            for chunk in chunks {
                let chunk = chunk.lock().unwrap_or_else(|e| e.into_inner());
                self.pairs.extend_from_slice(&chunk.segments[segment]);
                (self.pair_particles).extend_from_slice(&chunk.particles[segment]);
            }
        }
        self.colours.schedule(&self.pair_particles);
    }

    /// Every collider vertex inside the box a cloth triangle sweeps from `x_prev` to `x`, and
    /// every collider edge whose box meets the box a cloth edge sweeps, both grown by twice
    /// `margin(c)` (the contact distance with collider `c`) and by how far the collider moves;
    /// found through the collider's tree, in cloth order, each pair once. Searches the cloth
    /// triangles and edges of the given ranges into `out` (see [`SearchChunk`]). Each
    /// element's swept box is found once ([`swept_bounds`]) and grown for each collider:
    /// found per collider through [`bounds`] over a chain of iterators, these boxes took a
    /// tenth of `scenes/dancer.toml`'s instructions (docs/benchmarks.md, "Issue 13: the
    /// collider-feature search's swept boxes").
    fn search(
        &self,
        posed: &[PosedCollider],
        x: &[DVec3],
        x_prev: &[DVec3],
        margin: impl Fn(usize) -> f64,
        (triangles, edges): (Range<usize>, Range<usize>),
        out: &mut SearchChunk,
    ) {
        let SearchChunk {
            segments,
            found,
            listed,
            stack,
            ..
        } = out;
        segments.resize_with(2 * posed.len(), Vec::new);
        segments.iter_mut().for_each(Vec::clear);
        // The colliders with a posed mesh, and how far beyond a swept box each one reaches.
        let meshes = || {
            (posed.iter().enumerate()).filter_map(|(c, posed)| {
                match (posed.mesh, &posed.collider.mesh) {
                    (Some(pose), Some(mesh)) => {
                        Some((c, pose, mesh, 2.0 * margin(c) + pose.max_motion))
                    }
                    _ => None,
                }
            })
        };
        for (t, &triangle) in triangles.clone().zip(&self.triangles[triangles]) {
            let swept = swept_bounds(triangle, x, x_prev, 0.0);
            for (c, pose, mesh, reach) in meshes() {
                let (min, max) = (swept.0 - reach, swept.1 + reach);
                let inside = |v: u32| {
                    let p = pose.end[v as usize];
                    p.cmpge(min).all() && p.cmple(max).all()
                };
                found.clear();
                listed.start(pose.end.len());
                pose.triangle_boxes
                    .for_each_overlapping(stack, (min, max), |ct| {
                        for v in mesh.triangles[ct as usize] {
                            if listed.first(v) && inside(v) {
                                found.push(v);
                            }
                        }
                    });
                found.sort_unstable();
                let pairs = found
                    .iter()
                    .map(|&v| Pair::VertexTriangle(c as u32, v, t as u32));
                segments[2 * c].extend(pairs);
            }
        }
        for (f, &edge) in edges.clone().zip(&self.edges[edges]) {
            let swept = swept_bounds(edge, x, x_prev, 0.0);
            for (c, pose, _, reach) in meshes() {
                let cloth_box = (swept.0 - reach, swept.1 + reach);
                let (collider_edges, collider_triangle_edges) = &self.collider_edges[c];
                found.clear();
                listed.start(collider_edges.len());
                pose.triangle_boxes
                    .for_each_overlapping(stack, cloth_box, |ct| {
                        for e in collider_triangle_edges[ct as usize] {
                            let ends = || collider_edges[e as usize].map(|v| pose.end[v as usize]);
                            if listed.first(e) && boxes_overlap(bounds(ends(), 0.0), cloth_box) {
                                found.push(e);
                            }
                        }
                    });
                found.sort_unstable();
                let pairs = found.iter().map(|&e| Pair::EdgeEdge(c as u32, e, f as u32));
                segments[2 * c + 1].extend(pairs);
            }
        }
    }

    /// The sample point of a pair on the cloth (particles, weights and the collider), when
    /// the collider's feature is within reach of it: twice the contact distance `margin`
    /// plus how far the feature and the point moved in the substep (`x_prev` → `x`). A point
    /// farther from the feature than that cannot touch it in the substep; where it nears the
    /// collider's faces instead, the cloth's own vertices hold it.
    fn sample<P: Positions + ?Sized>(
        &self,
        pair: Pair,
        posed: &[PosedCollider],
        x: &P,
        x_prev: &[DVec3],
        margin: f64,
    ) -> Option<Sample> {
        let interior = |u: f64| u > 0.0 && u < 1.0;
        let pose = posed[pair.collider()].mesh?;
        // The sample and the point of the collider's feature nearest it.
        let (sample, feature) = match pair {
            Pair::VertexTriangle(c, v, t) => {
                let q = pose.end[v as usize];
                let triangle = self.triangles[t as usize];
                let [a, b, d] = triangle.map(|k| x.position(k as usize));
                let (_, weights) = closest_on_triangle(q, a, b, d);
                let sample = Sample {
                    collider: c as usize,
                    particles: triangle,
                    weights,
                };
                (sample, q)
            }
            Pair::EdgeEdge(c, e, f) => {
                let [q0, q1] =
                    self.collider_edges[c as usize].0[e as usize].map(|v| pose.end[v as usize]);
                let cloth = self.edges[f as usize];
                let [p0, p1] = cloth.map(|k| x.position(k as usize));
                let (s, t) = closest_parameters(p0, p1, q0, q1);
                if !(interior(s) && interior(t)) {
                    return None;
                }
                let sample = Sample {
                    collider: c as usize,
                    particles: [cloth[0], cloth[1], cloth[0]],
                    weights: [1.0 - s, s, 0.0],
                };
                (sample, q0.lerp(q1, t))
            }
        };
        let at = sample.at(x);
        let reach = 2.0 * margin + pose.max_motion + at.distance(sample.at(x_prev));
        (at.distance(feature) <= reach).then_some(sample)
    }

    /// The colours the substep's pairs are projected in.
    pub fn colours(&self) -> &PairColours {
        &self.colours
    }

    /// Projects every pair once, in colour order (one thread; see [`PairColours`]).
    /// `margin(c)` is the contact distance with collider `c`.
    pub fn solve(
        &mut self,
        posed: &[PosedCollider],
        x: &mut [DVec3],
        x_prev: &[DVec3],
        inv_mass: &[f64],
        margin: impl Fn(usize) -> f64,
    ) {
        self.touching =
            self.project_all(self.colours.in_order(), posed, x, x_prev, inv_mass, &margin);
    }

    /// Projects share `share_index` of `shares` of `pairs` (from [`Self::colours`]: one
    /// colour, any thread, the shares moving disjoint particles; or the overflow group, one
    /// thread, one share), and returns how many pushed the cloth. The colours in turn, each
    /// shared by every thread, then the overflow group give the bits of [`Self::solve`]; the
    /// threads' counts summed go to [`Self::set_touching`].
    #[allow(clippy::too_many_arguments)]
    pub fn solve_share<P: Positions + ?Sized>(
        &self,
        pairs: &[u32],
        (share_index, shares): (usize, usize),
        posed: &[PosedCollider],
        x: &mut P,
        x_prev: &[DVec3],
        inv_mass: &[f64],
        margin: impl Fn(usize) -> f64,
    ) -> usize {
        let share = &pairs[share(0..pairs.len(), share_index, shares)];
        self.project_all(share, posed, x, x_prev, inv_mass, &margin)
    }

    /// Projects `pairs` in turn; returns how many pushed the cloth.
    fn project_all<P: Positions + ?Sized>(
        &self,
        pairs: &[u32],
        posed: &[PosedCollider],
        x: &mut P,
        x_prev: &[DVec3],
        inv_mass: &[f64],
        margin: &impl Fn(usize) -> f64,
    ) -> usize {
        (pairs.iter())
            .filter(|&&k| self.project(k as usize, posed, x, x_prev, inv_mass, margin))
            .count()
    }

    /// Pairs that pushed the cloth in this substep, counted by the threads of
    /// [`Self::solve_share`].
    pub fn set_touching(&mut self, touching: usize) {
        self.touching = touching;
    }

    /// Projects pair `k`: moves its sample point out of the collider's margin, when it is
    /// within reach of the collider's feature; returns whether it pushed the cloth.
    fn project<P: Positions + ?Sized>(
        &self,
        k: usize,
        posed: &[PosedCollider],
        x: &mut P,
        x_prev: &[DVec3],
        inv_mass: &[f64],
        margin: &impl Fn(usize) -> f64,
    ) -> bool {
        let pair = self.pairs[k];
        let Some(sample) = self.sample(pair, posed, &*x, x_prev, margin(pair.collider())) else {
            return false;
        };
        let collider = &posed[sample.collider];
        let mut moved = sample.at(&*x);
        resolve_contact(
            collider,
            margin(sample.collider),
            &mut moved,
            sample.at(x_prev),
            None,
        )
        .is_some()
            && sample.spread(moved - sample.at(&*x), x, inv_mass)
    }

    /// How deep each sample point of the cloth sits inside a collider's margin at the state
    /// `x` (the end of a frame), from a fresh search: `(a particle of the sample, depth)` for
    /// every pair with a positive depth.
    pub fn penetrations(
        &self,
        posed: &[PosedCollider],
        x: &[DVec3],
        margin: impl Fn(usize) -> f64 + Copy,
    ) -> Vec<(usize, f64)> {
        let mut search = SearchChunk::default();
        let everything = (0..self.triangles.len(), 0..self.edges.len());
        self.search(posed, x, x, margin, everything, &mut search);
        (search.segments.into_iter().flatten())
            .filter_map(|pair| {
                let sample = self.sample(pair, posed, x, x, margin(pair.collider()))?;
                let margin = margin(sample.collider);
                let (distance, _, _) =
                    posed[sample.collider].distance(sample.at(x), 2.0 * margin)?;
                (distance < margin).then(|| (sample.particles[0] as usize, margin - distance))
            })
            .collect()
    }
}

/// A point of the cloth surface: `Σ b_k x_k` (an edge's has a third weight of 0).
struct Sample {
    collider: usize,
    particles: [u32; 3],
    weights: [f64; 3],
}

impl Sample {
    fn at<P: Positions + ?Sized>(&self, x: &P) -> DVec3 {
        self.particles
            .iter()
            .zip(&self.weights)
            .map(|(&i, &b)| x.position(i as usize) * b)
            .sum()
    }

    /// Moves the sample by `delta`, sharing it by inverse mass: `Δx_k = w_k b_k Δ / W`,
    /// `W = Σ b_k² w_k`. Returns false when every particle is pinned.
    fn spread<P: Positions + ?Sized>(&self, delta: DVec3, x: &mut P, inv_mass: &[f64]) -> bool {
        let w_sum: f64 = self
            .particles
            .iter()
            .zip(&self.weights)
            .map(|(&i, &b)| b * b * inv_mass[i as usize])
            .sum();
        if w_sum <= 0.0 {
            return false;
        }
        for (&i, &b) in self.particles.iter().zip(&self.weights) {
            x.move_by(i as usize, delta * (inv_mass[i as usize] * b / w_sum));
        }
        true
    }
}

#[cfg(test)]
mod tests;
