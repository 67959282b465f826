//! The collider-feature search of one substep: every cloth triangle and edge against each
//! mesh collider's tree of triangle boxes, in chunks of the cloth that any thread can take
//! ([`FeatureContacts::search_chunk`]), then joined in cloth order ([`FeatureContacts::join`]).

use super::{FeatureContacts, Pair};
use crate::collision::bvh::{bounds, boxes_overlap, swept_bounds};
use crate::collision::surface_depth::{self, BoxFrame};
use crate::collision::wide_bvh::WalkStack;
use crate::collision::{MeshGeometry, MeshPose, PosedCollider};
use crate::solver::parallel::share;
use glam::DVec3;
use std::ops::Range;

/// One chunk of a substep's search ([`FeatureContacts::search_chunk`]), kept from
/// substep to substep so the search allocates nothing once it is warm.
#[derive(Default)]
pub struct SearchChunk {
    /// The pairs found, by segment: collider `c`'s vertex–triangle pairs are segment `2c`,
    /// its edge–edge pairs segment `2c + 1`.
    pub(super) segments: Vec<Vec<Pair>>,
    /// The cloth particles of each pair of `segments`, in the same places: looked up here,
    /// on whichever thread searches the chunk, rather than for the joined list by thread 0
    /// while the others wait (118 M of the dancer's instructions, docs/benchmarks.md,
    /// "Issue 13: the skin measured on every thread, meshes posed on theirs").
    particles: Vec<Vec<[u32; 3]>>,
    /// Scratch for one BVH query's hits.
    found: Vec<u32>,
    /// The collider triangles the chunk's triangle queries found against one collider, query
    /// after query: the chunk's `i`-th cloth triangle's are `hits[hit_starts[i]..hit_starts[i
    /// + 1]]`. The chunk's cloth edges read them.
    hits: Vec<u32>,
    hit_starts: Vec<u32>,
    /// Which collider vertices or edges the query has listed.
    listed: Listed,
    /// The stack of the collider trees' walks.
    stack: WalkStack,
    /// The particles the chunk's triangles hold, from the first of them on, as one analytic
    /// collider sees them ([`FeatureContacts::view_particles`]).
    particle_views: ParticleViews,
}

/// The particles a chunk's triangles hold, from the least index among them on, turned once
/// each into what the face pairs' first test with one sphere, capsule or box reads
/// ([`FeatureContacts::search_shape`]): a particle is a corner of about six faces.
#[derive(Default)]
struct ParticleViews {
    /// The least particle index the chunk's triangles hold.
    first: usize,
    /// The most any of these particles, plus the collider's surface by it, moved in the
    /// substep.
    most_moved: f64,
    /// Each particle in a box's frame ([`BoxFrame::local`]).
    in_box_frame: Vec<DVec3>,
    /// Each particle's signed distance from a sphere or capsule.
    distances: Vec<f64>,
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

impl FeatureContacts {
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

    /// The cloth particles pair `pair` reads and moves (a [`super::Sample`]'s `particles`): a
    /// triangle's three, or an edge's two with the first repeated.
    fn particles_of(&self, pair: Pair) -> [u32; 3] {
        match pair {
            Pair::VertexTriangle(_, _, t) | Pair::ShapeFace(_, t) => self.triangles[t as usize],
            Pair::EdgeEdge(_, _, f) => {
                let [a, b] = self.edges[f as usize];
                [a, b, a]
            }
        }
    }

    /// Lists this substep's pairs from every chunk: segment by segment, the chunks in order.
    /// Chunks are contiguous and in cloth order, so the list is the one a single search
    /// would give, whatever the number of chunks. Then colours the list
    /// ([`crate::solver::pair_colours::PairColours`]): the order the pairs are projected in.
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
    /// triangles and edges of the given ranges into `out` (see [`SearchChunk`]), collider by
    /// collider: an element's swept box is found ([`swept_bounds`]) and grown once per mesh
    /// collider (found through [`bounds`] over a chain of iterators, these boxes took a tenth
    /// of `scenes/dancer.toml`'s instructions, docs/benchmarks.md, "Issue 13: the
    /// collider-feature search's swept boxes"; kept from one collider to the next they cost
    /// 48 bytes per element for 2.6 % of the dancer's instructions, "Issue 13: cloth edges
    /// answered from their triangles' walks").
    pub(super) fn search(
        &self,
        posed: &[PosedCollider],
        x: &[DVec3],
        x_prev: &[DVec3],
        margin: impl Fn(usize) -> f64,
        (triangles, edges): (Range<usize>, Range<usize>),
        out: &mut SearchChunk,
    ) {
        out.segments.resize_with(2 * posed.len(), Vec::new);
        out.segments.iter_mut().for_each(Vec::clear);
        // The colliders with a posed mesh, and how far beyond a swept box each one reaches.
        let meshes = (posed.iter().enumerate()).filter_map(|(c, posed)| {
            match (posed.mesh, &posed.collider.mesh) {
                (Some(pose), Some(mesh)) => Some(Reach {
                    collider: c,
                    pose,
                    mesh,
                    reach: 2.0 * margin(c) + pose.max_motion,
                }),
                _ => None,
            }
        });
        // Collider by collider: each segment holds one collider's pairs, so the lists are the
        // same as element by element, which took 2.4 % more of the dancer's instructions and
        // 10 % more of the body's (docs/benchmarks.md, "Issue 13: cloth edges answered from
        // their triangles' walks").
        for mesh in meshes {
            self.search_triangles(&mesh, (x, x_prev), triangles.clone(), out);
            self.search_edges(&mesh, (x, x_prev), (triangles.clone(), edges.clone()), out);
        }
        for (c, collider) in posed.iter().enumerate() {
            if collider.mesh.is_none() {
                self.search_shape(c, collider, (x, x_prev), margin(c), triangles.clone(), out);
            }
        }
    }

    /// The face pairs of analytic collider `c` (a sphere, capsule or box; nothing for a
    /// plane, where a face's least distance is at a corner) and the cloth triangles
    /// `triangles`: those whose deepest point is within reach of it
    /// ([`FeatureContacts::shape_sample`]). A cheap test from the particles' views comes
    /// first ([`surface_depth::box_face_may_sample`], [`surface_depth::face_may_reach`]): its
    /// cutoff, twice the face's contact distance and the most any of the chunk's particles
    /// and the surface by them moved, is never less than the one `shape_sample` asks with,
    /// so a face it drops would have given no pair. On `scenes/table.toml` it leaves 172
    /// faces a substep of 3 200 for the box and 189 for the rolling pin
    /// (docs/benchmarks.md, "Face contacts: only the box's pieces and features within
    /// reach").
    fn search_shape(
        &self,
        c: usize,
        collider: &PosedCollider,
        (x, x_prev): (&[DVec3], &[DVec3]),
        margin: f64,
        triangles: Range<usize>,
        out: &mut SearchChunk,
    ) {
        if !surface_depth::measures_faces(&collider.shape) {
            return;
        }
        let margin = Pair::ShapeFace(c as u32, 0).margin(margin);
        let frame = BoxFrame::of(&collider.shape);
        self.view_particles(
            collider,
            frame,
            (x, x_prev),
            &triangles,
            &mut out.particle_views,
        );
        let views = &out.particle_views;
        let cutoff = 2.0 * margin + views.most_moved;
        for (t, &triangle) in triangles.clone().zip(&self.triangles[triangles]) {
            let at = triangle.map(|k| k as usize - views.first);
            let may_sample = match frame {
                Some(frame) => {
                    let local = at.map(|i| views.in_box_frame[i]);
                    surface_depth::box_face_may_sample(frame.half, &local, cutoff)
                }
                None => {
                    let corners = triangle.map(|k| x[k as usize]);
                    surface_depth::face_may_reach(at.map(|i| views.distances[i]), corners, cutoff)
                }
            };
            if may_sample
                && (self.shape_sample(c as u32, t as u32, collider, x, x_prev, margin)).is_some()
            {
                out.segments[2 * c].push(Pair::ShapeFace(c as u32, t as u32));
            }
        }
    }

    /// Fills `views` for the particles of cloth triangles `triangles` (from the least index
    /// among them to the largest) and analytic collider `collider`: in the frame of the box
    /// `frame`, or their signed distances from a sphere or capsule; and the most any of them
    /// and the collider's surface by it moved in the substep.
    fn view_particles(
        &self,
        collider: &PosedCollider,
        frame: Option<BoxFrame>,
        (x, x_prev): (&[DVec3], &[DVec3]),
        triangles: &Range<usize>,
        views: &mut ParticleViews,
    ) {
        let held = self.triangles[triangles.clone()].iter().flatten();
        let (first, last) = held.fold((u32::MAX, 0), |(lo, hi), &k| (lo.min(k), hi.max(k)));
        let held = if first <= last {
            first as usize..last as usize + 1
        } else {
            0..0
        };
        views.first = held.start;
        views.in_box_frame.clear();
        views.distances.clear();
        match frame {
            Some(frame) => {
                (views.in_box_frame).extend(x[held.clone()].iter().map(|&p| frame.local(p)))
            }
            None => (views.distances).extend(
                x[held.clone()]
                    .iter()
                    .map(|&p| collider.shape.signed_distance(p).0),
            ),
        }
        // The most a particle moved and the most the surface by one moved: their sum is at
        // least any particle's own sum, found with one square root.
        let moved = (held.clone())
            .map(|k| x[k].distance_squared(x_prev[k]))
            .fold(0.0f64, f64::max);
        let surface_moved = match collider.moves() {
            true => (held.map(|k| collider.surface_motion(x[k]).length())).fold(0.0f64, f64::max),
            false => 0.0,
        };
        views.most_moved = moved.sqrt() + surface_moved;
    }

    /// The vertex–triangle pairs of `mesh` and the cloth triangles `triangles` (see
    /// [`Self::search`]), keeping each query's collider triangles for [`Self::search_edges`].
    fn search_triangles(
        &self,
        mesh: &Reach,
        (x, x_prev): (&[DVec3], &[DVec3]),
        triangles: Range<usize>,
        out: &mut SearchChunk,
    ) {
        let SearchChunk {
            segments,
            found,
            hits,
            hit_starts,
            listed,
            stack,
            ..
        } = out;
        let &Reach {
            collider: c,
            pose,
            mesh,
            reach,
        } = mesh;
        hits.clear();
        hit_starts.clear();
        hit_starts.push(0);
        for (t, &triangle) in triangles.clone().zip(&self.triangles[triangles]) {
            let swept = swept_bounds(triangle, x, x_prev, 0.0);
            let (min, max) = (swept.0 - reach, swept.1 + reach);
            let inside = |v: u32| {
                let p = pose.end[v as usize];
                p.cmpge(min).all() && p.cmple(max).all()
            };
            found.clear();
            listed.start(pose.end.len());
            pose.triangle_boxes
                .for_each_overlapping(stack, (min, max), |ct| {
                    hits.push(ct);
                    for v in mesh.triangles[ct as usize] {
                        if listed.first(v) && inside(v) {
                            found.push(v);
                        }
                    }
                });
            hit_starts.push(hits.len() as u32);
            found.sort_unstable();
            let pairs = found
                .iter()
                .map(|&v| Pair::VertexTriangle(c as u32, v, t as u32));
            segments[2 * c].extend(pairs);
        }
    }

    /// The edge–edge pairs of `mesh` and the chunk's cloth edges `edges` (see
    /// [`Self::search`]). A cloth edge's grown swept box lies inside that of each triangle
    /// holding it (the least and greatest of some of the triangle's corners, grown by the
    /// same reach: rounding is monotone, so this holds in `f64`), and each collider edge's
    /// box inside its triangles' boxes; so the collider triangles whose boxes meet the edge's
    /// are among those a holding triangle's query found. An edge with such a triangle in
    /// `triangles` (searched just before, by [`Self::search_triangles`]) tests those instead
    /// of walking the tree, and finds the same edges; the others walk.
    fn search_edges(
        &self,
        mesh: &Reach,
        (x, x_prev): (&[DVec3], &[DVec3]),
        (triangles, edges): (Range<usize>, Range<usize>),
        out: &mut SearchChunk,
    ) {
        let SearchChunk {
            segments,
            found,
            hits,
            hit_starts,
            listed,
            stack,
            ..
        } = out;
        let &Reach {
            collider: c,
            pose,
            reach,
            ..
        } = mesh;
        let (collider_edges, collider_triangle_edges) = &self.collider_edges[c];
        for (f, &edge) in edges.clone().zip(&self.edges[edges]) {
            // The holding triangle's hits, if one is in the chunk: when they are none (most
            // edges, away from the body) the edge has no pair and nothing more is done.
            let holding =
                (self.edge_triangles[f].into_iter()).find(|&t| triangles.contains(&(t as usize)));
            let near = holding.map(|t| {
                let query = t as usize - triangles.start;
                &hits[hit_starts[query] as usize..hit_starts[query + 1] as usize]
            });
            if near.is_some_and(|near| near.is_empty()) {
                continue;
            }
            let swept = swept_bounds(edge, x, x_prev, 0.0);
            let cloth_box = (swept.0 - reach, swept.1 + reach);
            found.clear();
            listed.start(collider_edges.len());
            let mut list = |ct: u32| {
                for e in collider_triangle_edges[ct as usize] {
                    let ends = || collider_edges[e as usize].map(|v| pose.end[v as usize]);
                    if listed.first(e) && boxes_overlap(bounds(ends(), 0.0), cloth_box) {
                        found.push(e);
                    }
                }
            };
            match near {
                Some(near) => {
                    for &ct in near {
                        let collider_box = pose.triangle_boxes.boxes[ct as usize];
                        if boxes_overlap(collider_box, cloth_box) {
                            list(ct);
                        }
                    }
                }
                None => pose
                    .triangle_boxes
                    .for_each_overlapping(stack, cloth_box, list),
            }
            found.sort_unstable();
            let pairs = found.iter().map(|&e| Pair::EdgeEdge(c as u32, e, f as u32));
            segments[2 * c + 1].extend(pairs);
        }
    }
}

/// A posed mesh collider and how far beyond a cloth element's swept box it can reach in the
/// substep: twice the contact distance and the farthest any of its vertices moved.
struct Reach<'a> {
    collider: usize,
    pose: &'a MeshPose,
    mesh: &'a MeshGeometry,
    reach: f64,
}
