//! The simulation model built from a scene: particles (structure of arrays), constraints
//! stored by kind in colour order, colliders, and each object's layout for the writers.

use crate::collision::Collider;
use crate::constraints::curvature::{IsometricBendingConstraint, RopeBendingConstraint};
use crate::constraints::dihedral::DihedralConstraint;
use crate::constraints::distance::DistanceConstraint;
use crate::constraints::long_range::LongRangeConstraint;
use crate::constraints::shape_matching::ShapeMatchingConstraint;
use crate::constraints::tet_volume::TetVolumeConstraint;
use crate::constraints::volume::VolumeConstraint;
use crate::constraints::Materials;
use crate::mesh::Mesh;
use crate::solver::colouring::ConstraintBlock;
use glam::DVec3;
use std::ops::Range;

/// Particle state, one entry per particle of every object, objects one after another.
#[derive(Debug, Clone, Default)]
pub struct Particles {
    /// Positions, m. During a substep: the predicted positions being corrected.
    pub x: Vec<DVec3>,
    /// Positions at the start of the current substep, m.
    pub x_prev: Vec<DVec3>,
    /// Velocities, m/s.
    pub v: Vec<DVec3>,
    /// Inverse masses 1/kg; 0 for pinned particles.
    pub inv_mass: Vec<f64>,
    /// Lumped masses, kg (pinned particles keep theirs for the energy figures).
    pub mass: Vec<f64>,
}

impl Particles {
    pub fn len(&self) -> usize {
        self.x.len()
    }

    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }
}

/// One object: where its particles are, its topology, and what the writers need.
///
/// Local vertex `k < particles.len()` is particle `particles.start + k` (input vertex k);
/// vertices a tear added follow, local `particles.len() + j` being `split_particles[j]`.
#[derive(Debug, Clone)]
pub struct ObjectLayout {
    pub name: String,
    /// The object's original vertices in the particle arrays.
    pub particles: Range<usize>,
    /// Particles added by tearing, in the order they were made (at the end of the arrays).
    pub split_particles: Vec<usize>,
    /// For every local vertex, the input vertex it is or was split from (PLY `id`).
    pub source_vertex: Vec<u32>,
    /// Rest geometry with the user's topology (local indices): faces, lines, UVs.
    pub topology: Mesh,
    /// Fan triangulation of `topology` (local indices), for normals.
    pub triangles: Vec<[u32; 3]>,
    /// Whether the object's particles collide with the colliders.
    pub collide: bool,
    /// Whether the object collides with itself (particle spheres and, where it has
    /// triangles, point–triangle contacts).
    pub self_collision: bool,
    pub pinned: usize,
    /// Present when `stretch.tear_strain` is set.
    pub tearing: Option<Tearing>,
    /// Bumped at every change of topology (writers re-encode what they cached).
    pub topology_version: u64,
    /// Keyframed motion of the pinned particles, if any.
    pub animation: Option<crate::animation::Animation>,
    /// The collider the pinned particles ride with (`pin_to`), if any.
    pub pinned_to: Option<usize>,
    /// What the animation turns about: the object's placed origin (`translate`).
    pub pivot: DVec3,
    /// The rest value of [`ObjectLayout::volume`], which the stats log's `volume_change`
    /// compares to: set for tetrahedral geometry and closed surfaces that enclose a volume,
    /// `None` for open surfaces, ropes and objects that can tear.
    pub rest_volume: Option<f64>,
    /// Whether the stats log counts this object's crossing triangle pairs: with
    /// `self_collision`, or for every object with faces when a `self_intersections` gate is set.
    pub count_self_intersections: bool,
    /// The finer mesh this object carries (`render_mesh`), written as [`render_name`].
    pub render: Option<std::sync::Arc<RenderMesh>>,
    /// A fluid object's parameters (also in [`Model::fluids`], which the solver reads): the
    /// writers compute the per-vertex density from them.
    pub fluid: Option<crate::constraints::density::FluidBlock>,
    /// A fluid object's surface reconstruction (`fluid.surface`), its mesh written as
    /// [`surface_name`].
    pub fluid_surface: Option<crate::mesh::fluid_surface::Reconstruction>,
}

/// A render mesh (SPEC §5): a finer mesh carried by a simulated surface, written in every
/// format beside it. Only the writers use it; the simulation never sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderMesh {
    /// Its topology, UVs and smoothing, as read (positions: placed, at bind time).
    pub mesh: crate::mesh::Mesh,
    /// Every vertex bound to the object's triangles at frame 1.
    pub binding: crate::mesh::binding::Binding,
}

/// The name an object's render mesh is written under: `<object>_render`.
pub fn render_name(object: &str) -> String {
    format!("{object}_render")
}

/// The name a fluid object's reconstructed surface is written under: `<object>_surface`.
pub fn surface_name(object: &str) -> String {
    format!("{object}_surface")
}

/// Every name a scene's frame files carry: each object's, then `<object>_render` for each
/// render mesh and `<object>_surface` for each fluid surface.
pub fn written_names(objects: &[crate::scene::types::Object]) -> Vec<String> {
    let names = objects.iter().map(|o| o.name.clone());
    names
        .chain(derived_names(objects).map(|(name, _, _)| name))
        .collect()
}

/// The names written for meshes an object carries besides its own, in [`written_names`]'
/// order: `(name, what it is, the object's name)`, `<object>_render` for each render mesh,
/// then `<object>_surface` for each fluid surface.
pub fn derived_names(
    objects: &[crate::scene::types::Object],
) -> impl Iterator<Item = (String, &'static str, &str)> {
    let render = (objects.iter())
        .filter(|o| o.render_mesh.is_some())
        .map(|o| (render_name(&o.name), "render mesh", o.name.as_str()));
    let surface = (objects.iter())
        .filter(|o| o.fluid.as_ref().is_some_and(|f| f.surface.is_some()))
        .map(|o| (surface_name(&o.name), "fluid surface", o.name.as_str()));
    render.chain(surface)
}

/// What an object that can tear keeps to remake its constraints.
#[derive(Debug, Clone)]
pub struct Tearing {
    pub recipe: crate::generate::Recipe,
    /// Polygon sides torn but still shared by two faces (sorted local pairs).
    pub torn_sides: std::collections::BTreeSet<[u32; 2]>,
    /// Edges torn so far.
    pub torn_count: usize,
    /// Bounding-box diagonal of the rest shape.
    pub size: f64,
}

impl ObjectLayout {
    pub fn vertex_count(&self) -> usize {
        self.particles.len() + self.split_particles.len()
    }

    /// The particle of local vertex `local`.
    pub fn global(&self, local: u32) -> usize {
        let local = local as usize;
        if local < self.particles.len() {
            self.particles.start + local
        } else {
            self.split_particles[local - self.particles.len()]
        }
    }

    /// The local vertex of particle `global`, if it is this object's.
    pub fn local(&self, global: usize) -> Option<u32> {
        if self.particles.contains(&global) {
            return Some((global - self.particles.start) as u32);
        }
        self.split_particles
            .iter()
            .position(|&g| g == global)
            .map(|j| (self.particles.len() + j) as u32)
    }

    /// Signed volume at positions `x`, m³: the sum of the tetrahedra's volumes for a
    /// tetrahedral geometry, else the volume the triangles enclose (positive for outward
    /// faces; meaningful for a closed surface only).
    pub fn volume(&self, x: &[DVec3]) -> f64 {
        use crate::constraints::tet_volume::tet_volume;
        if self.topology.tets.is_empty() {
            let triangles: Vec<[u32; 3]> = self.global_triangles().collect();
            crate::constraints::volume::enclosed_volume(x, &triangles)
        } else {
            self.topology
                .tets
                .iter()
                .map(|tet| tet_volume(&tet.map(|k| x[self.global(k)])))
                .sum()
        }
    }

    /// `|V / V0 − 1|`: how far the volume is from the rest volume, when the object has one.
    pub fn volume_change(&self, x: &[DVec3]) -> Option<f64> {
        self.rest_volume
            .map(|rest| (self.volume(x) / rest - 1.0).abs())
    }

    /// The object's triangles in particle indices.
    pub fn global_triangles(&self) -> impl Iterator<Item = [u32; 3]> + '_ {
        self.triangles
            .iter()
            .map(|t| t.map(|local| self.global(local) as u32))
    }

    /// Every particle of the object, in local vertex order.
    pub fn globals(&self) -> impl Iterator<Item = usize> + '_ {
        self.particles
            .clone()
            .chain(self.split_particles.iter().copied())
    }
}

/// Per-run solver settings, resolved from `[simulation]` and `[collision]`.
#[derive(Debug, Clone)]
pub struct SolverParams {
    pub fps: f64,
    pub substeps: usize,
    pub iterations: usize,
    pub gravity: DVec3,
    /// Linear drag k, 1/s: velocities scale by exp(−k h) every substep.
    pub velocity_damping: f64,
    /// Speed, m/s, above which the run stops as diverged.
    pub max_speed: f64,
    /// `collision.thickness`: the particle radius for contacts, m.
    pub particle_radius: f64,
    /// `collision.friction`: Coulomb coefficient between particles of different objects.
    pub particle_friction: f64,
    /// `collision.max_mass_ratio`: the largest mass ratio a contact between objects is
    /// projected with where the light side supports the heavy one.
    pub max_mass_ratio: f64,
    /// Present with `solver = "projective"`: the substep's constraints are solved by
    /// Projective Dynamics instead of XPBD's Gauss–Seidel sweeps.
    pub projective: Option<crate::solver::projective::Settings>,
}

impl SolverParams {
    /// Substep length h = 1 / (fps · substeps), s.
    pub fn substep(&self) -> f64 {
        1.0 / (self.fps * self.substeps as f64)
    }
}

/// The model: particles, constraints stored by kind (coloured blocks for the local kinds,
/// lists for the ones that couple a whole object), colliders and the objects' layouts.
#[derive(Debug, Clone)]
pub struct Model {
    pub particles: Particles,
    pub objects: Vec<ObjectLayout>,
    /// Edges of polygons, tetrahedra and lines.
    pub stretch: ConstraintBlock<DistanceConstraint>,
    /// Per-tetrahedron volumes.
    pub tets: ConstraintBlock<TetVolumeConstraint>,
    /// Dihedral hinges.
    pub bending: ConstraintBlock<DihedralConstraint>,
    /// Isometric (quadratic) hinges.
    pub isometric_bending: ConstraintBlock<IsometricBendingConstraint>,
    /// Curvature at every inner vertex of a polyline.
    pub rope_bending: ConstraintBlock<RopeBendingConstraint>,
    /// Tethers to pinned particles.
    pub long_range: ConstraintBlock<LongRangeConstraint>,
    /// Global volume of closed surfaces, one per object.
    pub volumes: Vec<VolumeConstraint>,
    /// Shape-matching clusters, one per object.
    pub shape_matching: Vec<ShapeMatchingConstraint>,
    /// The materials the constraint blocks point into (volumes and shape matching keep
    /// their own: one each per object).
    pub materials: Materials,
    pub colliders: Vec<Collider>,
    pub params: SolverParams,
    /// The object each particle belongs to.
    pub owner: Vec<u32>,
    /// Fluid objects (density constraints), in object order.
    pub fluids: Vec<crate::constraints::density::FluidBlock>,
}

impl Model {
    /// Whether object `k` touches other objects (it collides, and so does another), and
    /// whether it touches itself: who takes part in particle contacts.
    pub fn touches_particles(&self, k: usize) -> (bool, bool) {
        let colliding = self.objects.iter().filter(|o| o.collide).count();
        let object = &self.objects[k];
        (object.collide && colliding >= 2, object.self_collision)
    }

    /// Whether any constraint is plastic: its rest state moves (the solver's plastic stage
    /// runs, and checkpoints keep the rest states).
    pub fn is_plastic(&self) -> bool {
        self.materials.any_plastic() || self.shape_matching.iter().any(|c| c.plasticity.is_some())
    }

    /// The object and local vertex of a particle.
    pub fn vertex_of(&self, particle: usize) -> (&ObjectLayout, u32) {
        let object = &self.objects[self.owner[particle] as usize];
        let local = object.local(particle).expect("owner maps to the object");
        (object, local)
    }
}

/// Constraint counts by kind, in the order the solver visits them (and the stats log uses
/// these names).
pub fn kind_counts(model: &Model) -> Vec<(&'static str, usize)> {
    vec![
        ("stretch", model.stretch.len()),
        ("tets", model.tets.len()),
        ("bending", model.bending.len()),
        ("isometric_bending", model.isometric_bending.len()),
        ("rope_bending", model.rope_bending.len()),
        ("volume", model.volumes.len()),
        ("shape_matching", model.shape_matching.len()),
        ("long_range", model.long_range.len()),
    ]
}
