//! Per-frame figures for the stats log (SPEC §3), computed from the state at the end of the
//! frame, in parallel over fixed chunks of 4096 particles or constraints whose partial results
//! are combined in chunk order: the figures are the same bits for any thread count.
//!
//! Kinetic energy `Σ ½ m |v|²`; gravitational potential `−Σ m g · x` (zero at the origin);
//! momentum `Σ m v` (free particles; pinned ones are held by the animation); residuals per kind
//! `max |C|` and `sqrt(mean C²)` in the constraint's units (m, rad, m³); edge strain
//! `|p1 − p2| / d − 1`, reported as the largest magnitude; penetration is how deep a
//! colliding surface went under a collider's or another object's surface, the contact margin
//! not counted (docs/physics.md, "How deep a surface goes"): its free vertices, the points of
//! its faces and edges over a mesh collider's vertices and beside its edges
//! ([`crate::collision::features`]), its faces and edges against spheres, capsules and boxes
//! ([`crate::collision::surface_depth`]), and its surface inside objects with a volume
//! ([`crate::collision::inside_objects`]); self-intersections are counted per object with
//! `self_collision` as crossing triangle pairs ([`CrossingPairs`], counted on every thread).
//!
//! The quality gates (`crate::gates`) need the object a figure comes from, so the largest
//! speed, edge strain and penetration are also kept per object ([`ObjectFigures`], each
//! global figure the largest of them), with the volume change `|V / V0 − 1|` of closed
//! surfaces and tetrahedral objects.

use super::colouring::ConstraintBlock;
use super::step::Solver;
use crate::collision::intersections::CrossingPairs;
use crate::collision::{surface_depth, Shape};
use crate::constraints::Constraint;
use crate::model::Model;
use glam::DVec3;
use rayon::prelude::*;
use rayon::ThreadPool;
use serde::Serialize;
use std::collections::BTreeMap;
use std::ops::Range;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FrameDiagnostics {
    pub kinetic_energy: f64,
    pub potential_energy: f64,
    pub max_speed: f64,
    pub momentum: [f64; 3],
    /// Per constraint kind the scene uses (`stretch`, `bending`, `volume`): `max |C|`.
    pub residual_max: BTreeMap<&'static str, f64>,
    /// Per constraint kind: `sqrt(mean C²)`.
    pub residual_rms: BTreeMap<&'static str, f64>,
    pub max_edge_strain: f64,
    pub contacts: usize,
    /// Pairs of particle spheres (different objects, or self collision) touching in the last
    /// substep.
    pub particle_contacts: usize,
    /// Particles touching a self-colliding object's triangle in the last substep.
    pub triangle_contacts: usize,
    /// Edges of self-colliding objects touching each other in the last substep.
    pub edge_contacts: usize,
    /// Cloth samples (points of faces and edges) pushed by mesh-collider vertices or edges in
    /// the last substep.
    pub feature_contacts: usize,
    /// Per object with `self_collision`: pairs of its triangles crossing each other.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub self_intersections: BTreeMap<String, usize>,
    pub max_penetration: f64,
    /// Edges torn since the start (`stretch.tear_strain`).
    pub torn_edges: usize,
    /// Per object, by name: its own figures.
    pub objects: BTreeMap<String, ObjectFigures>,
    /// With `solver = "projective"`: factorizations so far, the system's size and the
    /// factor's memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub projective: Option<crate::solver::projective::ProjectiveFigures>,
}

/// One object's figures in a frame: the same measures as the global ones, over its own
/// particles and edges.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ObjectFigures {
    pub max_speed: f64,
    pub max_edge_strain: f64,
    pub max_penetration: f64,
    /// `|V / V0 − 1|` for closed surfaces and tetrahedral objects
    /// ([`crate::model::ObjectLayout::volume_change`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_change: Option<f64>,
    /// Fluids: the mean and largest density error ([`crate::constraints::density`]) and the
    /// particle count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_density_error: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_density_error: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fluid_particles: Option<usize>,
    /// Fluids with `surface`: the reconstructed surface's triangles
    /// ([`FrameDiagnostics::count_surface_triangles`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub surface_triangles: Option<usize>,
}

impl FrameDiagnostics {
    /// Records each reconstructed fluid surface's triangle count with its object's figures.
    pub fn count_surface_triangles(
        &mut self,
        objects: &[crate::model::ObjectLayout],
        surfaces: &[crate::mesh::fluid_surface::FluidSurfaceMesh],
    ) {
        for surface in surfaces {
            if let Some(figures) = self.objects.get_mut(&objects[surface.object].name) {
                figures.surface_triangles = Some(surface.triangles.len());
            }
        }
    }
}

/// Elements per chunk of a reduction. Fixed (not derived from the thread count) so every sum
/// is formed in the same order on any machine.
const CHUNK: usize = 4096;

/// `f` over fixed chunks of `0..n` on the run's threads; the results in chunk order.
fn chunked<T: Send>(pool: &ThreadPool, n: usize, f: impl Fn(Range<usize>) -> T + Sync) -> Vec<T> {
    chunked_by(pool, n, CHUNK, f)
}

/// [`chunked`] with chunks of `size`.
fn chunked_by<T: Send>(
    pool: &ThreadPool,
    n: usize,
    size: usize,
    f: impl Fn(Range<usize>) -> T + Sync,
) -> Vec<T> {
    let chunks = n.div_ceil(size);
    let chunk = |c: usize| f(c * size..((c + 1) * size).min(n));
    if chunks <= 1 || pool.current_num_threads() == 1 {
        // On the calling thread when the pool could not share the work: the same chunks,
        // so the same sums. Handing them to the pool woke a worker and put this thread to
        // sleep until it was done, four system calls each time, and a frame made a dozen
        // such calls (one per kind of constraint): half the diagnostics' time on small
        // scenes (docs/benchmarks.md, "Issue 13: what two threads can give on this
        // machine").
        return (0..chunks).map(chunk).collect();
    }
    pool.install(|| (0..chunks).into_par_iter().map(chunk).collect())
}

/// Triangles per chunk of the crossing-pair count: a tree query each, so far fewer than
/// [`CHUNK`] particles make a chunk worth a thread (the counts are integers: their sum does
/// not depend on the chunks).
const TRIANGLE_CHUNK: usize = 256;

/// Per-particle sums of one chunk.
#[derive(Default)]
struct ParticleSums {
    kinetic_energy: f64,
    potential_energy: f64,
    max_speed: f64,
    momentum: DVec3,
    max_penetration: f64,
    /// Per object: its largest speed and penetration in the chunk.
    objects: ObjectMaxima<2>,
}

/// Per-object maxima over a run of elements, as `(object, maxima)` entries: consecutive
/// elements of one object share an entry, so particles (numbered object after object) give
/// one entry per object a chunk touches.
#[derive(Default)]
struct ObjectMaxima<const N: usize>(Vec<(u32, [f64; N])>);

impl<const N: usize> ObjectMaxima<N> {
    fn add(&mut self, object: u32, values: [f64; N]) {
        match self.0.last_mut() {
            Some((last, maxima)) if *last == object => {
                for (m, v) in maxima.iter_mut().zip(values) {
                    *m = m.max(v);
                }
            }
            _ => self.0.push((object, values)),
        }
    }

    /// The maxima of every object (0 for one without elements), from chunk parts.
    fn combine(parts: impl Iterator<Item = Self>, objects: usize) -> Vec<[f64; N]> {
        let mut maxima = vec![[0.0f64; N]; objects];
        for (object, values) in parts.flat_map(|p| p.0) {
            for (m, v) in maxima[object as usize].iter_mut().zip(values) {
                *m = m.max(v);
            }
        }
        maxima
    }
}

/// `max |C|` and `Σ C²` of a block, reduced in chunk order; `(max, rms)`.
fn block_residuals<const N: usize, K: Constraint<N> + Clone>(
    pool: &ThreadPool,
    block: &ConstraintBlock<K>,
    x: &[DVec3],
) -> (f64, f64) {
    let parts = chunked(pool, block.len(), |range| block.residual_sums(range, x));
    let (max, sum_sq) = parts
        .iter()
        .fold((0.0f64, 0.0), |(m, s), &(pm, ps)| (m.max(pm), s + ps));
    let rms = if block.is_empty() {
        0.0
    } else {
        (sum_sq / block.len() as f64).sqrt()
    };
    (max, rms)
}

/// Crossing triangle pairs of every object that counts them, by name: on every thread, in
/// the tree of the last count refitted ([`CrossingPairs`]).
fn crossing_counts(solver: &Solver) -> BTreeMap<String, usize> {
    let (model, pool) = (&solver.model, solver.pool());
    let mut trees = solver.crossing_trees();
    let mut counts = BTreeMap::new();
    for (o, kept) in model.objects.iter().zip(trees.iter_mut()) {
        if !o.count_self_intersections {
            continue;
        }
        let triangles: Vec<[u32; 3]> = o.global_triangles().collect();
        let search = CrossingPairs::new(&model.particles.x, &triangles, kept.take());
        let parts = chunked_by(pool, triangles.len(), TRIANGLE_CHUNK, |range| {
            search.count(range)
        });
        counts.insert(o.name.clone(), parts.iter().sum());
        *kept = Some(search.into_tree());
    }
    counts
}

pub fn measure(solver: &Solver) -> FrameDiagnostics {
    let model = &solver.model;
    let x = &model.particles.x;
    let (total, particle_maxima) = particle_sums(solver);
    let (residual_max, residual_rms) = residuals(solver.pool(), model);
    let strain_maxima = edge_strain_maxima(solver.pool(), model);
    let max_edge_strain = strain_maxima.iter().fold(0.0f64, |m, s| m.max(s[0]));
    let touching = solver.particle_contact_counts();
    let fluid_figures = crate::solver::fluids::figures(&model.fluids, x);
    FrameDiagnostics {
        kinetic_energy: total.kinetic_energy,
        potential_energy: total.potential_energy,
        max_speed: total.max_speed,
        momentum: total.momentum.to_array(),
        residual_max,
        residual_rms,
        max_edge_strain,
        contacts: solver.contact_count(),
        particle_contacts: touching.pairs,
        triangle_contacts: touching.point_triangle,
        edge_contacts: touching.edge_edge,
        feature_contacts: solver.feature_contact_count(),
        self_intersections: crossing_counts(solver),
        max_penetration: total.max_penetration,
        torn_edges: model
            .objects
            .iter()
            .filter_map(|o| o.tearing.as_ref())
            .map(|t| t.torn_count)
            .sum(),
        objects: model
            .objects
            .iter()
            .enumerate()
            .map(|(k, o)| {
                let fluid = (model.fluids.iter().zip(&fluid_figures)).find(|(b, _)| b.object == k);
                let figures = ObjectFigures {
                    max_speed: particle_maxima[k][0],
                    max_edge_strain: strain_maxima[k][0],
                    max_penetration: particle_maxima[k][1],
                    volume_change: o.volume_change(x),
                    mean_density_error: fluid.map(|(_, f)| f.mean_density_error),
                    max_density_error: fluid.map(|(_, f)| f.max_density_error),
                    fluid_particles: fluid.map(|(_, f)| f.particles),
                    surface_triangles: None,
                };
                (o.name.clone(), figures)
            })
            .collect(),
        projective: solver.projective_figures(),
    }
}

/// The particles' energies, momentum, fastest speed and deepest penetration, summed in fixed
/// chunks joined in order, and per object the fastest speed and the deepest penetration (of a
/// vertex, face or edge; see the module notes).
fn particle_sums(solver: &Solver) -> (ParticleSums, Vec<[f64; 2]>) {
    let model = &solver.model;
    let p = &model.particles;
    let g = model.params.gravity;
    let collides: Vec<bool> = model
        .owner
        .iter()
        .map(|&k| model.objects[k as usize].collide)
        .collect();
    // Colliders where their keys (and mesh sequences) have them now.
    let posed = solver.posed_colliders();
    let particle_parts = chunked(solver.pool(), p.len(), |range| {
        let mut sums = ParticleSums::default();
        for i in range {
            let speed_sq = p.v[i].length_squared();
            sums.kinetic_energy += 0.5 * p.mass[i] * speed_sq;
            sums.potential_energy -= p.mass[i] * g.dot(p.x[i]);
            sums.max_speed = sums.max_speed.max(speed_sq.sqrt());
            let mut penetration = 0.0f64;
            if p.inv_mass[i] > 0.0 {
                sums.momentum += p.v[i] * p.mass[i];
                if collides[i] {
                    for posed in &posed {
                        let margin = posed.collider.contact_margin(model.params.particle_radius);
                        penetration = penetration.max(posed.depth(p.x[i], 2.0 * margin));
                    }
                }
            }
            sums.max_penetration = sums.max_penetration.max(penetration);
            sums.objects
                .add(model.owner[i], [speed_sq.sqrt(), penetration]);
        }
        sums
    });
    let mut total = ParticleSums::default();
    for part in &particle_parts {
        total.kinetic_energy += part.kinetic_energy;
        total.potential_energy += part.potential_energy;
        total.max_speed = total.max_speed.max(part.max_speed);
        total.momentum += part.momentum;
        total.max_penetration = total.max_penetration.max(part.max_penetration);
    }
    let mut particle_maxima = ObjectMaxima::combine(
        particle_parts.into_iter().map(|part| part.objects),
        model.objects.len(),
    );
    // Surfaces, not only vertices: a collider's corner or edge through a cloth face, a face
    // or an edge through a sphere, capsule or box, and a surface inside another object.
    for (particle, depth) in solver.surface_penetrations() {
        total.max_penetration = total.max_penetration.max(depth);
        let object = &mut particle_maxima[model.owner[particle] as usize][1];
        *object = object.max(depth);
    }
    let inside_objects = crate::collision::inside_objects::depths(model);
    for (maxima, depth) in (particle_maxima.iter_mut())
        .zip(element_penetrations(solver).into_iter().zip(inside_objects))
        .map(|(maxima, (element, inside))| (maxima, element.max(inside)))
    {
        total.max_penetration = total.max_penetration.max(depth);
        maxima[1] = maxima[1].max(depth);
    }
    (total, particle_maxima)
}

/// Per object, the deepest any of its faces or edges sits inside a sphere, capsule or box
/// collider: `−min φ` over the element ([`surface_depth`]). A plane is exact at the
/// vertices, which [`particle_sums`] measures; an element with a pinned corner is left out,
/// as pinned vertices are (the animation holds it where the user put it).
fn element_penetrations(solver: &Solver) -> Vec<f64> {
    let model = &solver.model;
    let (x, inv_mass) = (&model.particles.x, &model.particles.inv_mass);
    let posed = solver.posed_colliders();
    // Spheres, capsules and boxes: the shapes faces are measured against here.
    let shapes: Vec<&Shape> = (posed.iter())
        .map(|p| &p.shape)
        .filter(|&shape| surface_depth::measures_faces(shape))
        .collect();
    // The depth of an element with `corners`, its depth in each shape given by `depth`;
    // shapes it cannot enter by their lower bound are skipped.
    let deepest = |corners: &[DVec3], depth: &dyn Fn(&Shape) -> f64| {
        (shapes.iter())
            .filter(|&&shape| surface_depth::lower_bound(shape, corners) < 0.0)
            .fold(0.0f64, |m, &shape| m.max(depth(shape)))
    };
    let free = |corners: &[u32]| corners.iter().all(|&i| inv_mass[i as usize] > 0.0);
    let pool = solver.pool();
    (model.objects.iter())
        .map(|o| {
            if !o.collide || shapes.is_empty() {
                return 0.0;
            }
            let faces: Vec<[u32; 3]> = o.global_triangles().filter(|t| free(t)).collect();
            let edges: Vec<[u32; 2]> = (o.topology.segments.iter())
                .map(|s| s.map(|k| o.global(k) as u32))
                .filter(|s| free(s))
                .collect();
            let face_parts = chunked(pool, faces.len(), |range| {
                faces[range].iter().fold(0.0f64, |m, t| {
                    let corners = t.map(|i| x[i as usize]);
                    m.max(deepest(&corners, &|shape| {
                        surface_depth::triangle_depth(shape, corners)
                    }))
                })
            });
            let edge_parts = chunked(pool, edges.len(), |range| {
                edges[range].iter().fold(0.0f64, |m, s| {
                    let corners = s.map(|i| x[i as usize]);
                    m.max(deepest(&corners, &|shape| {
                        surface_depth::segment_depth(shape, corners)
                    }))
                })
            });
            (face_parts.into_iter().chain(edge_parts)).fold(0.0, f64::max)
        })
        .collect()
}

/// The largest and the root-mean-square residual of each constraint kind the model has.
fn residuals(
    pool: &ThreadPool,
    model: &Model,
) -> (BTreeMap<&'static str, f64>, BTreeMap<&'static str, f64>) {
    let x = &model.particles.x;
    let volume_values: Vec<f64> = model.volumes.iter().map(|v| v.value(x)).collect();
    let volume_max = volume_values.iter().fold(0.0f64, |m, c| m.max(c.abs()));
    let volume_rms = if volume_values.is_empty() {
        0.0
    } else {
        (volume_values.iter().map(|c| c * c).sum::<f64>() / volume_values.len() as f64).sqrt()
    };
    let (mut cluster_max, mut cluster_sum_sq, mut cluster_count) = (0.0f64, 0.0, 0usize);
    for cluster in &model.shape_matching {
        let (max, sum_sq, count) = cluster.residual_sums(x, &model.particles.mass);
        cluster_max = cluster_max.max(max);
        cluster_sum_sq += sum_sq;
        cluster_count += count;
    }
    let cluster_rms = if cluster_count > 0 {
        (cluster_sum_sq / cluster_count as f64).sqrt()
    } else {
        0.0
    };
    let mut residual_max = BTreeMap::new();
    let mut residual_rms = BTreeMap::new();
    for (kind, count, (max, rms)) in [
        (
            "stretch",
            model.stretch.len(),
            block_residuals(pool, &model.stretch, x),
        ),
        (
            "tets",
            model.tets.len(),
            block_residuals(pool, &model.tets, x),
        ),
        (
            "bending",
            model.bending.len(),
            block_residuals(pool, &model.bending, x),
        ),
        (
            "isometric_bending",
            model.isometric_bending.len(),
            block_residuals(pool, &model.isometric_bending, x),
        ),
        (
            "rope_bending",
            model.rope_bending.len(),
            block_residuals(pool, &model.rope_bending, x),
        ),
        ("volume", model.volumes.len(), (volume_max, volume_rms)),
        (
            "shape_matching",
            model.shape_matching.len(),
            (cluster_max, cluster_rms),
        ),
        (
            "long_range",
            model.long_range.len(),
            block_residuals(pool, &model.long_range, x),
        ),
    ] {
        if count > 0 {
            residual_max.insert(kind, max);
            residual_rms.insert(kind, rms);
        }
    }
    (residual_max, residual_rms)
}

/// Per object, the largest strain of an edge of the user's mesh (a quad's diagonal
/// stretching is shear, not edge strain).
fn edge_strain_maxima(pool: &ThreadPool, model: &Model) -> Vec<[f64; 1]> {
    let (stretch, x) = (&model.stretch.items, &model.particles.x);
    let strain_parts = chunked(pool, stretch.len(), |range| {
        let mut maxima = ObjectMaxima::default();
        for c in stretch[range].iter().filter(|c| !c.diagonal) {
            maxima.add(model.owner[c.particles[0] as usize], [c.strain(x).abs()]);
        }
        maxima
    });
    ObjectMaxima::combine(strain_parts.into_iter(), model.objects.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::build::build;
    use crate::scene::load::{parse, LoadedScene};

    fn solver(text: &str) -> Solver {
        let file = parse(text).unwrap();
        let built = build(&LoadedScene {
            path: "test.toml".into(),
            base_dir: ".".into(),
            sha256: String::new(),
            file,
        })
        .unwrap();
        Solver::new(built.model, 2).unwrap()
    }

    /// Each global figure is the largest of the per-object ones (a new way of measuring one
    /// must keep the per-object figure in step: the quality gates read those).
    #[test]
    fn per_object_figures_make_up_the_global_ones() {
        let mut solver = solver(
            "[simulation]\nsubsteps = 4\n\
             [[object]]\nname = \"cloth\"\ngrid = { size = [1.0, 1.0], resolution = [6, 6] }\n\
             translate = [0.0, -0.003, 0.0]\nvelocity = [0.0, -3.0, 0.0]\ndensity = 0.2\npin = [0]\n\
             stretch = { compliance = 1e-2 }\n\
             [[object]]\nname = \"ball\"\nsphere = { radius = 0.2, subdivisions = 1 }\n\
             translate = [3.0, 1.0, 0.0]\nvelocity = [1.0, 0.0, 0.0]\ndensity = 0.2\n\
             stretch = {}\nvolume = { pressure = 1.5 }\n\
             [[collider]]\nname = \"ground\"\nshape = \"plane\"\n",
        );
        // At the start the cloth sits 3 mm under the ground.
        let first = measure(&solver);
        assert!((first.objects["cloth"].max_penetration - 0.003).abs() < 1e-12);
        assert_eq!(
            first.max_penetration,
            first.objects["cloth"].max_penetration
        );
        solver.step_frame().unwrap();
        let d = measure(&solver);
        let (cloth, ball) = (&d.objects["cloth"], &d.objects["ball"]);
        let largest = |f: fn(&ObjectFigures) -> f64| f(cloth).max(f(ball));
        assert_eq!(d.max_speed, largest(|o| o.max_speed));
        assert_eq!(d.max_edge_strain, largest(|o| o.max_edge_strain));
        assert_eq!(d.max_penetration, largest(|o| o.max_penetration));
        assert_eq!(ball.max_penetration, 0.0);
        assert!(cloth.max_edge_strain > 0.0);
        assert!(ball.max_speed > 1.0);
        // An open grid has no volume; the ball inflates towards 1.5 times its rest volume.
        assert_eq!(cloth.volume_change, None);
        assert!(ball.volume_change.unwrap() > 0.0);
    }
}
