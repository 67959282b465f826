//! Collider features against cloth faces and edges: mesh colliders' vertices and edges, and
//! the deepest point of a face in a sphere, capsule or box. No poke-through.
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
//!   `b = [1 − σ, σ]`, when both closest points are inside their edges;
//! - a sphere, capsule or box and a cloth triangle: `b` the weights of the triangle's deepest
//!   point in the shape ([`surface_depth::deepest_on_triangle`]), kept at [`FACE_SHARE`] of
//!   the contact distance (vertex contacts alone let a box's edge 11 mm through the cloth of
//!   `scenes/table.toml`).
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
//! collider triangle and sorting the lot cost 1.96 s against 1.13 s this way). A cloth edge
//! whose triangle is searched in the same chunk reads that triangle's hits instead of walking
//! the tree: its box lies inside the triangle's, so they hold every collider triangle it meets
//! (docs/benchmarks.md, "Issue 13: cloth edges answered from their triangles' walks").
//!
//! The search runs in chunks of the cloth on every thread ([`FeatureContacts::search_chunk`]);
//! the pairs are projected in colour order, every thread taking a share of each colour
//! ([`crate::solver::pair_colours`]: in the listed order each pair depends on the one before,
//! since neighbouring cloth triangles share particles).

use super::bvh::closest_on_triangle;
use super::edge_edge::closest_parameters;
use super::{resolve_contact, surface_depth, PosedCollider};
use crate::constraints::Positions;
use crate::model::Model;
use crate::solver::pair_colours::PairColours;
use crate::solver::parallel::share;
use glam::DVec3;

/// A collider vertex over a cloth triangle, or a collider edge beside a cloth edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pair {
    /// Collider, its vertex, and a cloth triangle (index into `triangles`).
    VertexTriangle(u32, u32, u32),
    /// Collider, its edge (index into that collider's `edges`), a cloth edge.
    EdgeEdge(u32, u32, u32),
    /// A sphere, capsule or box collider and a cloth triangle: the triangle's deepest point
    /// in the shape ([`surface_depth::deepest_on_triangle`]).
    ShapeFace(u32, u32),
}

/// The distance a face keeps from a sphere, capsule or box, as a share of the contact
/// distance its vertices keep: a face between resting vertices sags into the margin (by
/// `ρ²/2R` on a ball), which shows nothing and is left alone up to half the margin; beyond
/// it the face's deepest point is pushed back to half the margin, never under the surface.
/// With the full margin, up to 98 faces of `scenes/drape.toml` were pushed in a frame's last
/// substep (none with half), and its run took 0.68 s against 0.56 s without face contacts
/// (one run each; docs/physics.md, "Faces against spheres, capsules and boxes").
const FACE_SHARE: f64 = 0.5;

impl Pair {
    /// The contact distance of this pair, from the contact distance `margin` of its
    /// collider's vertex contacts.
    fn margin(self, margin: f64) -> f64 {
        match self {
            Pair::ShapeFace(..) => FACE_SHARE * margin,
            Pair::VertexTriangle(..) | Pair::EdgeEdge(..) => margin,
        }
    }

    fn collider(self) -> usize {
        match self {
            Pair::VertexTriangle(c, ..) | Pair::EdgeEdge(c, ..) | Pair::ShapeFace(c, _) => {
                c as usize
            }
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
    /// The first two triangles holding each edge (indices into `triangles`; `u32::MAX` for
    /// none), for the search to answer an edge from a triangle's query
    /// ([`FeatureContacts::search_chunk`]).
    edge_triangles: Vec<[u32; 2]>,
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
    /// The surfaces of the model's colliding objects against its mesh colliders, spheres,
    /// capsules and boxes.
    pub fn new(model: &Model) -> FeatureContacts {
        // Mesh colliders, and spheres, capsules and boxes (a plane is flat: the vertices
        // hold every face).
        let has_features = (model.colliders.iter())
            .any(|c| c.mesh.is_some() || surface_depth::measures_faces(&c.shape));
        let triangles: Vec<[u32; 3]> = if has_features {
            model
                .objects
                .iter()
                .filter(|o| o.collide)
                .flat_map(|o| o.global_triangles())
                .collect()
        } else {
            Vec::new()
        };
        let (edges, triangle_edges) = edges_of(&triangles);
        let mut edge_triangles = vec![[u32::MAX; 2]; edges.len()];
        for (t, triangle_edges) in triangle_edges.iter().enumerate() {
            for &f in triangle_edges {
                let holding = &mut edge_triangles[f as usize];
                if let Some(free) = holding.iter_mut().find(|t| **t == u32::MAX) {
                    *free = t as u32;
                }
            }
        }
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
            edge_triangles,
            collider_edges,
            pairs: Vec::new(),
            pair_particles: Vec::new(),
            colours,
            touching: 0,
        }
    }

    /// Whether there is anything to do: colliding cloth and a mesh, sphere, capsule or box.
    pub fn is_empty(&self) -> bool {
        self.triangles.is_empty()
    }

    /// Pairs that pushed the cloth in the last substep.
    pub fn touching(&self) -> usize {
        self.touching
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
        if let Pair::ShapeFace(c, t) = pair {
            return self.shape_sample(c, t, &posed[c as usize], x, x_prev, margin);
        }
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
            Pair::ShapeFace(..) => unreachable!("answered above"),
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

    /// The deepest point of cloth triangle `t` in an analytic shape, when within reach of it
    /// and not at a corner of the triangle (there the corner's own vertex contact holds it).
    /// The reach is twice the face's contact distance `margin` plus how far the point and
    /// the shape's surface there moved in the substep, as for a mesh's features. With once
    /// the distance, resting faces a little farther off were not listed, but a face the
    /// water of `scenes/water_on_cloth.toml` pressed down during the substep's iterations
    /// went up to 1.5 mm under the box before the next substep listed it.
    fn shape_sample<P: Positions + ?Sized>(
        &self,
        c: u32,
        t: u32,
        collider: &PosedCollider,
        x: &P,
        x_prev: &[DVec3],
        margin: f64,
    ) -> Option<Sample> {
        let triangle = self.triangles[t as usize];
        let corners = triangle.map(|k| x.position(k as usize));
        // No point of the triangle moved farther than its farthest corner, nor did the
        // shape's surface (a rigid motion is affine): beyond this bound it cannot reach.
        let most_moved = (0..3)
            .map(|k| {
                let (now, before) = (corners[k], x_prev[triangle[k] as usize]);
                now.distance(before) + collider.surface_motion(now).length()
            })
            .fold(0.0f64, f64::max);
        let (least, weights) = surface_depth::deepest_on_triangle(
            &collider.shape,
            corners,
            2.0 * margin + most_moved,
        )?;
        if weights.contains(&1.0) {
            return None; // at a vertex, which its own contact holds
        }
        let sample = Sample {
            collider: c as usize,
            particles: triangle,
            weights,
        };
        let at = sample.at(x);
        let moved = at.distance(sample.at(x_prev)) + collider.surface_motion(at).length();
        (least <= 2.0 * margin + moved).then_some(sample)
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
        let margin = pair.margin(margin(pair.collider()));
        let Some(sample) = self.sample(pair, posed, &*x, x_prev, margin) else {
            return false;
        };
        let collider = &posed[sample.collider];
        let mut moved = sample.at(&*x);
        resolve_contact(collider, margin, &mut moved, sample.at(x_prev), None).is_some()
            && sample.spread(moved - sample.at(&*x), x, inv_mass)
    }

    /// How deep each sample point of the cloth sits inside a collider ([`PosedCollider::depth`])
    /// at the state `x` (the end of a frame), from a fresh search: `(a particle of the sample,
    /// depth)` for every pair with a positive depth. The search finds the collider's vertices
    /// and edges within the contact margin of a cloth element's box.
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
                let sample =
                    self.sample(pair, posed, x, x, pair.margin(margin(pair.collider())))?;
                let reach = 2.0 * margin(sample.collider);
                let depth = posed[sample.collider].depth(sample.at(x), reach);
                (depth > 0.0).then(|| (sample.particles[0] as usize, depth))
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

mod search;
pub use search::SearchChunk;

#[cfg(test)]
mod tests;
