//! Building the [`Model`] from a validated scene: geometry, placement, lumped masses, pins,
//! constraints (coloured) and colliders. Geometry sizes are checked before anything is
//! allocated; problems name the object's key path. An object's constraints are made in
//! `object_constraints.rs`, the colliders in `colliders.rs`, and the memory checks are in
//! `memory_budget.rs`.

use super::load::LoadedScene;
use super::memory_budget::{check_memory, ensure_available, human_bytes, primitive_particles};
use super::object_constraints::{open_edges, Constraints, ObjectPart};
use super::types::{self, Object, SceneFile, SolverKind};
use super::{colliders, contact_masses, render_mesh};
use crate::animation::{Animation, Key};
use crate::collision::Collider;
use crate::constraints::density::FluidBlock;
use crate::constraints::tet_volume::tet_volume;
use crate::generate::Recipe;
use crate::mesh::fluid_surface::Reconstruction;
use crate::mesh::{obj, ply, primitives, tetgen, Mesh};
use crate::model::{Model, ObjectLayout, Particles, RenderMesh, SolverParams, Tearing};
use crate::quote::{quoted, shown_path};
use crate::solver::colouring::ConstraintBlock;
use anyhow::{anyhow, bail, Context, Result};
use glam::DVec3;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

/// Range of a particle's mass, kg: outside it `1/m` or the energies leave f64's useful range.
pub const MIN_PARTICLE_MASS: f64 = 1e-12;
pub const MAX_PARTICLE_MASS: f64 = 1e12;

/// The model and the warnings found while building it.
pub struct Built {
    pub model: Model,
    pub warnings: Vec<String>,
}

/// Builds the model of `scene`: every object in order (geometry, placement, particles,
/// constraints, layout), then the colliders, then the constraints coloured. The first
/// problem found stops the build.
pub fn build(scene: &LoadedScene) -> Result<Built> {
    let file = &scene.file;
    let mut particle_budget = primitive_particles(file)?;
    check_memory(particle_budget)?;
    let mut parts = ModelParts::new(scene);
    for (k, object) in file.objects.iter().enumerate() {
        let key = format!("object[{k}] ({})", quoted(&object.name));
        let mesh = geometry(object, &scene.base_dir).with_context(|| key.clone())?;
        if object.mesh.is_some() {
            particle_budget += mesh.positions.len() as u64;
            check_memory(particle_budget).with_context(|| key.clone())?;
        }
        parts.add_object(k, object, mesh, &key)?;
    }
    let colliders = colliders::build_all(scene)?;
    Ok(parts.into_built(colliders))
}

/// The model's parts, gathered object by object before the constraints are coloured.
struct ModelParts<'a> {
    scene: &'a LoadedScene,
    /// Each collider's index by name, for `pin_to`.
    collider_index: BTreeMap<&'a str, usize>,
    particles: Particles,
    objects: Vec<ObjectLayout>,
    constraints: Constraints,
    fluids: Vec<FluidBlock>,
    warnings: Vec<String>,
}

impl<'a> ModelParts<'a> {
    fn new(scene: &'a LoadedScene) -> ModelParts<'a> {
        let collider_index = (scene.file.colliders.iter())
            .enumerate()
            .map(|(k, c)| (c.name.as_str(), k))
            .collect();
        ModelParts {
            scene,
            collider_index,
            particles: Particles::default(),
            objects: Vec::new(),
            constraints: Constraints::default(),
            fluids: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Adds object `k` (key path `key`) from its rest geometry `mesh`: its particles, then its
    /// constraints, then its layout with its render mesh, rest volume and fluid block.
    fn add_object(&mut self, k: usize, object: &Object, mesh: Mesh, key: &str) -> Result<()> {
        let part = self.add_particles(object, mesh, key)?;
        let recipe = part.add_constraints(object, &mut self.constraints, &mut self.warnings)?;
        let render = render_mesh::bind(object, &self.scene.base_dir, &part.mesh, &part.triangles)
            .with_context(|| key.to_owned())?;
        let mut layout = self.layout(object, part, recipe, render);
        layout.rest_volume = rest_volume(&layout, &self.particles.x);
        self.add_fluid(k, object, &mut layout);
        self.objects.push(layout);
        Ok(())
    }

    /// Places the object's geometry, refuses it when it lands beyond the world or has no
    /// vertex, and appends its particles with their lumped masses and pins.
    fn add_particles<'k>(
        &mut self,
        object: &Object,
        mut mesh: Mesh,
        key: &'k str,
    ) -> Result<ObjectPart<'k>> {
        place(&mut mesh, object);
        check_placement(&mesh, key)?;
        let warnings = &mut self.warnings;
        warnings.extend(mesh.warnings.drain(..).map(|w| format!("{key}: {w}")));
        let offset = self.particles.len();
        if mesh.positions.is_empty() {
            match &object.mesh {
                Some(file) => bail!("{key}: mesh `{}` has no vertices", quoted(file)),
                None => bail!("{key}: the geometry has no vertices"),
            }
        }
        let triangles = mesh.triangles();
        let masses = lumped_masses(&mesh, &triangles, object, key, warnings)?;
        let pinned = pinned_particles(&mesh, object, key, warnings)?;
        let velocity = DVec3::from_array(object.velocity);
        push_particles(
            &mut self.particles,
            &mesh.positions,
            &masses,
            &pinned,
            velocity,
        );
        let size = bounding_box_diagonal(&mesh.positions);
        let degenerate = (triangles.iter())
            .filter(|t| triangle_area(&mesh.positions, t) <= 1e-12 * size * size)
            .count();
        if degenerate > 0 {
            warnings.push(format!(
                "{key}: {degenerate} degenerate (zero-area) triangles"
            ));
        }
        let sim = &self.scene.file.simulation;
        Ok(ObjectPart {
            mesh,
            triangles,
            masses,
            pinned,
            offset,
            size,
            key,
            solver: sim.solver,
            iterations: sim.iterations as usize,
        })
    }

    /// The object's layout in the model, without its rest volume and fluid block.
    fn layout(
        &self,
        object: &Object,
        part: ObjectPart,
        recipe: Recipe,
        render: Option<Arc<RenderMesh>>,
    ) -> ObjectLayout {
        let file = &self.scene.file;
        let n = part.mesh.positions.len();
        ObjectLayout {
            name: object.name.clone(),
            particles: part.offset..part.offset + n,
            split_particles: Vec::new(),
            source_vertex: (0..n as u32).collect(),
            collide: object.collide,
            self_collision: object.self_collision,
            pinned: part.pinned.iter().filter(|&&p| p).count(),
            tearing: recipe.tear_strain.map(|_| Tearing {
                recipe,
                torn_sides: BTreeSet::new(),
                torn_count: 0,
                size: part.size,
            }),
            topology_version: 0,
            animation: animation(
                &object.keys,
                file.simulation.start_frame,
                file.simulation.fps,
            ),
            pinned_to: object
                .pin_to
                .as_ref()
                .and_then(|name| self.collider_index.get(name.as_str()).copied()),
            pivot: DVec3::from_array(object.translate),
            rest_volume: None,
            count_self_intersections: object.self_collision
                || (file.gates.self_intersections.is_some() && !part.triangles.is_empty()),
            render,
            triangles: part.triangles,
            topology: part.mesh,
            fluid: None,
            fluid_surface: None,
        }
    }

    /// A fluid object's density block, kept on its layout and among the model's fluids.
    fn add_fluid(&mut self, k: usize, object: &Object, layout: &mut ObjectLayout) {
        let (Some(fluid), Some(density)) = (&object.fluid, object.density) else {
            return;
        };
        let coefficients = (fluid.viscosity, fluid.vorticity, fluid.cohesion);
        let sim = &self.scene.file.simulation;
        let substep = 1.0 / (sim.fps * sim.substeps as f64);
        let block = FluidBlock::new(
            k,
            layout.particles.clone(),
            (fluid.spacing, density),
            coefficients,
            (substep, sim.iterations as usize),
        );
        layout.fluid = Some(block.clone());
        layout.fluid_surface = (fluid.surface.as_ref()).map(|s| Reconstruction {
            spacing: fluid.spacing,
            resolution: s.resolution,
        });
        self.fluids.push(block);
    }

    /// The model with its constraints coloured, and the warnings, the contact masses' last.
    fn into_built(self, colliders: Vec<Collider>) -> Built {
        let ModelParts {
            scene,
            particles,
            objects,
            constraints,
            fluids,
            mut warnings,
            ..
        } = self;
        let owner = objects
            .iter()
            .enumerate()
            .flat_map(|(k, o)| o.particles.clone().map(move |_| k as u32))
            .collect();
        let inv_mass = &particles.inv_mass;
        let model = Model {
            stretch: ConstraintBlock::new(constraints.generated.stretch, inv_mass),
            tets: ConstraintBlock::new(constraints.tets, inv_mass),
            bending: ConstraintBlock::new(constraints.generated.bending, inv_mass),
            isometric_bending: ConstraintBlock::new(
                constraints.generated.isometric_bending,
                inv_mass,
            ),
            rope_bending: ConstraintBlock::new(constraints.generated.rope_bending, inv_mass),
            long_range: ConstraintBlock::new(constraints.generated.long_range, inv_mass),
            volumes: constraints.volumes,
            shape_matching: constraints.shape_matching,
            materials: constraints.materials,
            particles,
            objects,
            owner,
            fluids,
            colliders,
            params: solver_params(&scene.file),
        };
        warnings.extend(contact_masses::warning(&model));
        Built { model, warnings }
    }
}

/// Refuses a placement (`scale`, `rotate`, `translate`) that puts a vertex beyond the world's
/// coordinate range, or at a non-finite position.
fn check_placement(mesh: &Mesh, key: &str) -> Result<()> {
    if let Some((vertex, p)) = mesh
        .positions
        .iter()
        .enumerate()
        .find(|(_, p)| !p.is_finite() || p.abs().max_element() > obj::MAX_ABS_COORDINATE)
    {
        bail!(
            "{key}: placement puts vertex {vertex} at {p}, beyond ±{:e} m (check `scale` and `translate`)",
            obj::MAX_ABS_COORDINATE
        );
    }
    Ok(())
}

/// Appends an object's particles at rest `positions`: pinned ones get `1/m = 0` (the solver
/// does not move them) and no velocity, the others `velocity`.
fn push_particles(
    particles: &mut Particles,
    positions: &[DVec3],
    masses: &[f64],
    pinned: &[bool],
    velocity: DVec3,
) {
    for i in 0..positions.len() {
        particles.x.push(positions[i]);
        particles.x_prev.push(positions[i]);
        particles.mass.push(masses[i]);
        particles
            .inv_mass
            .push(if pinned[i] { 0.0 } else { 1.0 / masses[i] });
        particles
            .v
            .push(if pinned[i] { DVec3::ZERO } else { velocity });
    }
}

/// The solver's settings from `[simulation]` and `[collision]`.
fn solver_params(file: &SceneFile) -> SolverParams {
    let sim = &file.simulation;
    SolverParams {
        fps: sim.fps,
        substeps: sim.substeps as usize,
        iterations: sim.iterations as usize,
        gravity: DVec3::from_array(sim.gravity),
        velocity_damping: sim.velocity_damping,
        max_speed: sim.max_speed,
        particle_radius: file.collision.thickness,
        particle_friction: file.collision.friction,
        max_mass_ratio: file.collision.max_mass_ratio,
        projective: (sim.solver == SolverKind::Projective).then(|| {
            crate::solver::projective::Settings {
                chebyshev_rho: sim.projective.as_ref().map_or(0.0, |t| t.chebyshev_rho),
            }
        }),
    }
}

/// What a mesh file is read for, which decides the formats it may have.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum MeshUse {
    /// A simulated object: OBJ, PLY or TetGen.
    Object,
    /// A collider or a render mesh: a surface, OBJ or PLY.
    Surface,
}

/// Reads the mesh file `name` (relative to `base_dir`) by its extension. A file larger than
/// the memory available is refused before it is read: the readers hold a file's text whole.
pub(super) fn read_mesh(base_dir: &Path, name: &str, purpose: MeshUse) -> Result<Mesh> {
    let path = base_dir.join(name);
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let read: fn(&Path) -> Result<Mesh> = match (extension.as_deref(), purpose) {
        (Some("obj"), _) => obj::read_obj,
        (Some("ply"), _) => ply::read_ply,
        (Some("node"), MeshUse::Object) => tetgen::read_tetgen,
        (_, MeshUse::Object) => bail!("`{}` is not .obj, .ply or a TetGen .node", quoted(name)),
        (_, MeshUse::Surface) => bail!("`{}` is neither .obj nor .ply", quoted(name)),
    };
    // A TetGen mesh is two files. A missing file is left to the reader, which names it.
    let files = [path.clone(), path.with_extension("ele")];
    let files = if extension.as_deref() == Some("node") {
        &files[..]
    } else {
        &files[..1]
    };
    // Only regular files (through any symlink): a device such as /dev/zero reads forever and a
    // FIFO blocks forever. Their metadata is read without opening them.
    for file in files {
        if let Ok(metadata) = std::fs::metadata(file) {
            if !metadata.is_file() {
                bail!(
                    "`{}` is not a regular file (a device, pipe or folder)",
                    shown_path(file)
                );
            }
        }
    }
    let bytes: u64 = files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    ensure_available(bytes, || {
        format!(
            "`{}` needs at least {} of memory to read",
            quoted(name),
            human_bytes(bytes)
        )
    })?;
    read(&path)
}

fn geometry(object: &Object, base_dir: &Path) -> Result<Mesh> {
    if let Some(path) = &object.mesh {
        return read_mesh(base_dir, path, MeshUse::Object).context("mesh");
    }
    if let Some(g) = &object.grid {
        return Ok(primitives::grid(
            g.size,
            g.resolution[0] as usize,
            g.resolution[1] as usize,
        ));
    }
    if let Some(r) = &object.rope {
        let (start, end) = (DVec3::from_array(r.start), DVec3::from_array(r.end));
        return Ok(primitives::rope(start, end, r.segments as usize));
    }
    if let Some(s) = &object.sphere {
        return Ok(primitives::sphere(s.radius, s.subdivisions as u32));
    }
    if let Some(b) = &object.box_shape {
        let n = b.resolution.map(|n| n as usize);
        return Ok(if object.tets.is_some() {
            primitives::box_tets(b.size, n)
        } else {
            primitives::box_surface(b.size, n)
        });
    }
    if let Some(f) = &object.fluid {
        return Ok(super::fluid::block(f));
    }
    bail!("no geometry")
}

pub use crate::animation::rotation;

/// Scale, then rotate, then translate the rest geometry.
pub(super) fn place(mesh: &mut Mesh, object: &Object) {
    let scale = DVec3::from_array(object.scale.axes());
    let rotate = rotation(object.rotate);
    let translate = DVec3::from_array(object.translate);
    mesh.transform(|p| rotate * (p * scale) + translate);
}

/// Length of the diagonal of the axis-aligned box around `positions` (0 for one point).
fn bounding_box_diagonal(positions: &[DVec3]) -> f64 {
    let min = positions.iter().fold(DVec3::INFINITY, |m, &p| m.min(p));
    let max = positions.iter().fold(DVec3::NEG_INFINITY, |m, &p| m.max(p));
    (max - min).length()
}

fn triangle_area(positions: &[DVec3], &[a, b, c]: &[u32; 3]) -> f64 {
    let p = |k: u32| positions[k as usize];
    0.5 * (p(b) - p(a)).cross(p(c) - p(a)).length()
}

/// Lumped masses: a tetrahedral geometry gives volume/4 of each tetrahedron to each corner
/// (density in kg/m³); otherwise a triangle gives area/3 to each corner and a line segment
/// length/2 to each end; times the density, or scaled to the total `mass`; or `particle_mass`
/// each.
/// Vertices no face or line uses get the mean mass of the others (with a warning).
fn lumped_masses(
    mesh: &Mesh,
    triangles: &[[u32; 3]],
    object: &Object,
    key: &str,
    warnings: &mut Vec<String>,
) -> Result<Vec<f64>> {
    let n = mesh.positions.len();
    if let (Some(fluid), Some(density)) = (&object.fluid, object.density) {
        let m = super::fluid::particle_mass(fluid, density);
        check_masses(&[m], key)?;
        return Ok(vec![m; n]);
    }
    if let Some(m) = object.particle_mass {
        check_masses(&[m], key)?;
        return Ok(vec![m; n]);
    }
    let mut measure = vec![0.0; n];
    for tet in &mesh.tets {
        let share = tet_volume(&tet.map(|i| mesh.positions[i as usize])).abs() / 4.0;
        for &i in tet {
            measure[i as usize] += share;
        }
    }
    let surface = if mesh.tets.is_empty() { triangles } else { &[] };
    for t in surface {
        let share = triangle_area(&mesh.positions, t) / 3.0;
        for &i in t {
            measure[i as usize] += share;
        }
    }
    for &[a, b] in &mesh.segments {
        let share = mesh.positions[a as usize].distance(mesh.positions[b as usize]) / 2.0;
        measure[a as usize] += share;
        measure[b as usize] += share;
    }
    let total: f64 = measure.iter().sum();
    if total <= 0.0 {
        bail!("{key}: has no volume, face area or line length to spread a mass over; use `particle_mass`");
    }
    let scale = match (object.density, object.mass) {
        (Some(density), _) => density,
        (_, Some(mass)) => mass / total,
        _ => bail!("{key}: no mass given"),
    };
    let unused = measure.iter().filter(|&&m| m <= 0.0).count();
    let mean = total / (n - unused) as f64;
    if unused > 0 {
        warnings.push(format!(
            "{key}: {unused} vertices belong to no tetrahedron, face or line; they get the mean particle mass"
        ));
    }
    let masses: Vec<f64> = measure
        .iter()
        .map(|&m| scale * if m > 0.0 { m } else { mean })
        .collect();
    check_masses(&masses, key)?;
    Ok(masses)
}

/// Refuses particle masses outside `MIN_PARTICLE_MASS..=MAX_PARTICLE_MASS`.
fn check_masses(masses: &[f64], key: &str) -> Result<()> {
    let range = MIN_PARTICLE_MASS..=MAX_PARTICLE_MASS;
    if let Some((i, m)) = masses.iter().enumerate().find(|(_, m)| !range.contains(*m)) {
        bail!(
            "{key}: particle {i} would weigh {m:e} kg; particle masses must be from {MIN_PARTICLE_MASS:e} to {MAX_PARTICLE_MASS:e} kg (check `density`, `mass`, `particle_mass` and `scale`)"
        );
    }
    Ok(())
}

fn pinned_particles(
    mesh: &Mesh,
    object: &Object,
    key: &str,
    warnings: &mut Vec<String>,
) -> Result<Vec<bool>> {
    let n = mesh.positions.len();
    let mut pinned = vec![false; n];
    for (j, &index) in object.pin.iter().enumerate() {
        let slot = pinned.get_mut(index as usize).ok_or_else(|| {
            anyhow!("{key}.pin[{j}]: index {index} is out of range (the object has {n} particles, 0 to {})", n - 1)
        })?;
        *slot = true;
    }
    if let Some(region) = &object.pin_region {
        let (min, max) = (DVec3::from_array(region.min), DVec3::from_array(region.max));
        let mut selected = 0;
        for (i, p) in mesh.positions.iter().enumerate() {
            if p.cmpge(min).all() && p.cmple(max).all() {
                pinned[i] = true;
                selected += 1;
            }
        }
        if selected == 0 {
            warnings.push(format!(
                "{key}.pin_region: selects no particle (it is in world space, after placement)"
            ));
        }
    }
    Ok(pinned)
}

/// The rest volume `volume_change` is measured against: tetrahedra, or a closed surface
/// (no open edge) that encloses a volume; not for objects that can tear (a torn surface is
/// open).
fn rest_volume(layout: &ObjectLayout, x: &[DVec3]) -> Option<f64> {
    let has_volume = !layout.topology.tets.is_empty()
        || (!layout.triangles.is_empty() && open_edges(&layout.triangles) == 0);
    if !has_volume || layout.tearing.is_some() {
        return None;
    }
    let size = bounding_box_diagonal(&layout.topology.positions);
    let volume = layout.volume(x);
    (volume.abs() > 1e-12 * size.powi(3)).then_some(volume)
}

/// Scene keys as an animation in seconds, `None` without keys.
pub(super) fn animation(keys: &[types::Key], start_frame: u64, fps: f64) -> Option<Animation> {
    (!keys.is_empty()).then(|| Animation {
        keys: keys
            .iter()
            .map(|k| Key {
                time: (k.frame - start_frame as f64) / fps,
                translate: DVec3::from_array(k.translate),
                rotate: DVec3::from_array(k.rotate),
            })
            .collect(),
    })
}

#[cfg(test)]
pub(super) mod tests;
