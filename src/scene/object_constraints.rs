//! An object's constraints, made from its scene tables once its geometry is placed: the kinds
//! that follow from topology ([`crate::generate`]: stretch, shear, bending, tethers),
//! tetrahedral volumes, a closed surface's volume and shape matching, each pointing into the
//! scene's interned materials. Tables the geometry cannot carry (bending without faces or
//! lines, `tets` on a surface, `volume` on an open surface) are refused here, named by the
//! object's key path.

use super::types::{BendingModel, Object, Plastic, Resistance, SolverKind};
use crate::constraints::shape_matching::ShapeMatchingConstraint;
use crate::constraints::tet_volume::{tet_volume, TetVolumeConstraint};
use crate::constraints::volume::{enclosed_volume, VolumeConstraint};
use crate::constraints::{Material, Materials};
use crate::generate::{generate, BendingKind, Generated, Recipe, Source};
use crate::mesh::Mesh;
use anyhow::{bail, Result};
use std::collections::BTreeSet;

/// Constraints of every kind, gathered object by object before colouring.
#[derive(Default)]
pub(super) struct Constraints {
    /// The kinds that follow from topology (src/generate.rs).
    pub(super) generated: Generated,
    pub(super) tets: Vec<TetVolumeConstraint>,
    pub(super) volumes: Vec<VolumeConstraint>,
    pub(super) shape_matching: Vec<ShapeMatchingConstraint>,
    /// The distinct materials the constraints above point into.
    pub(super) materials: Materials,
}

/// The [`Material`] a constraint table asks for under the scene's solver.
fn material(table: &dyn Resistance, solver: SolverKind, iterations: usize) -> Material {
    match solver {
        SolverKind::Xpbd | SolverKind::Projective => Material::Compliant {
            compliance: table.compliance().unwrap_or(0.0),
            damping: table.damping().unwrap_or(0.0),
        },
        SolverKind::Pbd => Material::pbd(table.stiffness().unwrap_or(1.0), iterations),
    }
}

/// One object's placed geometry, masses and pins: what its constraints are made from, and
/// then what its layout keeps.
pub(super) struct ObjectPart<'a> {
    pub(super) mesh: Mesh,
    /// The mesh's faces as triangles.
    pub(super) triangles: Vec<[u32; 3]>,
    pub(super) masses: Vec<f64>,
    pub(super) pinned: Vec<bool>,
    /// Index of the object's first particle.
    pub(super) offset: usize,
    /// Bounding-box diagonal: the scale for degeneracy thresholds.
    pub(super) size: f64,
    pub(super) key: &'a str,
    pub(super) solver: SolverKind,
    pub(super) iterations: usize,
}

impl ObjectPart<'_> {
    fn global(&self, i: u32) -> u32 {
        i + self.offset as u32
    }

    fn material(&self, table: &dyn Resistance) -> Material {
        material(table, self.solver, self.iterations)
    }

    /// Makes the object's constraints into `out`, refusing the tables its geometry cannot
    /// carry, and returns the recipe of the kinds that follow from its topology (what an object
    /// that tears remakes them from). Kinds are made, and problems found, in this order.
    pub(super) fn add_constraints(
        &self,
        object: &Object,
        out: &mut Constraints,
        warnings: &mut Vec<String>,
    ) -> Result<Recipe> {
        let recipe = self.recipe(object, &mut out.materials);
        self.check_recipe_fits(object)?;
        self.add_generated(&recipe, out, warnings);
        self.add_tets(object, out, warnings)?;
        self.warn_about_missing_tables(object, warnings);
        self.add_volume(object, out, warnings)?;
        self.add_shape_matching(object, out);
        self.warn_if_unconstrained(object, warnings);
        Ok(recipe)
    }

    /// The topology kinds the object asks for, with their materials interned in the order
    /// stretch, shear, bending.
    fn recipe(&self, object: &Object, materials: &mut Materials) -> Recipe {
        Recipe {
            stretch: (object.stretch.as_ref())
                .map(|t| materials.intern_plastic(self.material(t), t.plasticity())),
            shear: (object.shear.as_ref()).map(|t| materials.intern(self.material(t))),
            tear_strain: object.stretch.as_ref().and_then(|t| t.tear_strain),
            bending: object.bending.as_ref().map(|t| {
                let kind = match t.model {
                    BendingModel::Dihedral => BendingKind::Dihedral,
                    BendingModel::Isometric => BendingKind::Isometric,
                };
                (
                    materials.intern_plastic(self.material(t), t.plasticity()),
                    kind,
                )
            }),
            long_range: object.long_range.as_ref().map(|t| t.max_stretch),
        }
    }

    /// Refuses topology kinds the geometry cannot carry: bending without faces or lines,
    /// plastic bending on lines, tethers without pins.
    fn check_recipe_fits(&self, object: &Object) -> Result<()> {
        let (mesh, key) = (&self.mesh, self.key);
        if object.bending.is_some() && self.triangles.is_empty() && mesh.segments.is_empty() {
            bail!("{key}.bending: needs faces or line segments");
        }
        let plastic_bending = object
            .bending
            .as_ref()
            .is_some_and(|t| t.plasticity().is_some());
        if plastic_bending && !mesh.segments.is_empty() {
            bail!("{key}.bending.creep: plastic bending needs the rest angles of dihedral hinges; the line segments of this geometry bend toward straight and have no rest bend to move");
        }
        if object.long_range.is_some() && !self.pinned.contains(&true) {
            bail!("{key}.long_range: tethers need pinned particles (`pin` or `pin_region`)");
        }
        Ok(())
    }

    /// The kinds that follow from topology: edges, diagonals, hinges, rope bends, tethers.
    fn add_generated(&self, recipe: &Recipe, out: &mut Constraints, warnings: &mut Vec<String>) {
        let global = |i: u32| self.global(i);
        let pinned = |i: u32| self.pinned[i as usize];
        let generated = generate(
            &Source {
                mesh: &self.mesh,
                triangles: &self.triangles,
                global: &global,
                pinned: &pinned,
                size: self.size,
                torn: &BTreeSet::new(),
            },
            recipe,
        );
        if generated.non_manifold > 0 {
            warnings.push(format!(
                "{}.bending: {} non-manifold edges (shared by more than two faces) get no bending",
                self.key, generated.non_manifold
            ));
        }
        out.generated.append(generated);
    }

    /// `tets`: a volume constraint per tetrahedron of a tetrahedral geometry, leaving out the
    /// flat ones.
    fn add_tets(
        &self,
        object: &Object,
        out: &mut Constraints,
        warnings: &mut Vec<String>,
    ) -> Result<()> {
        let (mesh, key) = (&self.mesh, self.key);
        let Some(table) = &object.tets else {
            return Ok(());
        };
        if mesh.tets.is_empty() {
            bail!(
                "{key}.tets: needs a tetrahedral geometry: a TetGen `mesh = \"….node\"` or a `box`"
            );
        }
        let material = out.materials.intern(self.material(table));
        for &tet in &mesh.tets {
            let p = tet.map(|i| mesh.positions[i as usize]);
            let rest_volume = tet_volume(&p);
            if rest_volume.abs() <= 1e-12 * self.size.powi(3) {
                continue;
            }
            out.tets.push(TetVolumeConstraint {
                particles: tet.map(|i| self.global(i)),
                rest_volume,
                material,
            });
        }
        if object.stretch.is_none() {
            warnings.push(format!(
                "{key}.tets: without `stretch` nothing resists shear; add `stretch` for the edges"
            ));
        }
        Ok(())
    }

    /// Warns of a table whose absence leaves the cloth unable to do what it will be asked to:
    /// shear (polygons under a rigid `stretch`), or keep its spacing when it collides with
    /// itself.
    fn warn_about_missing_tables(&self, object: &Object, warnings: &mut Vec<String>) {
        let key = self.key;
        let rigid_stretch = object.stretch.as_ref().is_some_and(|t| {
            t.compliance.unwrap_or(0.0) == 0.0 && t.stiffness.unwrap_or(1.0) == 1.0
        });
        if rigid_stretch && object.shear.is_none() && self.mesh.faces().any(|f| f.len() > 3) {
            warnings.push(format!("{key}.shear: the diagonals inside its faces of more than three sides share the rigid `stretch`, so the cloth cannot shear and is stretched where a body forces it to (a skirt on a leaning torso: 12 % edge strain); add `shear = {{ compliance = 1.0 }}` (docs/physics.md, \"Shear\")"));
        }
        if object.self_collision && object.stretch.is_none() && object.shape_matching.is_none() {
            warnings.push(format!("{key}.self_collision: without `stretch` nothing keeps the particles at their spacing and the cloth can pass through itself; add `stretch`"));
        }
    }

    /// `volume`: one constraint on the volume a closed surface encloses, its target the rest
    /// volume times `pressure`.
    fn add_volume(
        &self,
        object: &Object,
        out: &mut Constraints,
        warnings: &mut Vec<String>,
    ) -> Result<()> {
        let (mesh, key) = (&self.mesh, self.key);
        let Some(table) = &object.volume else {
            return Ok(());
        };
        if self.triangles.is_empty() {
            bail!("{key}.volume: needs a closed surface of faces, and this geometry has none");
        }
        let open = open_edges(&self.triangles);
        if open > 0 {
            bail!(
                "{key}.volume: needs a closed surface, but {open} edges border only one face \
                 (use a closed mesh, `sphere` or `box`)"
            );
        }
        let rest = enclosed_volume(&mesh.positions, &self.triangles);
        if rest.abs() <= 1e-12 * self.size.powi(3) {
            bail!("{key}.volume: the surface encloses no volume");
        }
        if rest < 0.0 {
            warnings.push(format!(
                "{key}.volume: faces point inward (negative volume); it still works"
            ));
        }
        let n = mesh.positions.len();
        out.volumes.push(VolumeConstraint::new(
            self.offset..self.offset + n,
            self.triangles
                .iter()
                .map(|t| t.map(|i| self.global(i)))
                .collect(),
            table.pressure * rest,
            self.material(table),
        ));
        Ok(())
    }

    /// `shape_matching`: one constraint pulling the whole object toward its rest shape.
    fn add_shape_matching(&self, object: &Object, out: &mut Constraints) {
        let Some(table) = &object.shape_matching else {
            return;
        };
        let n = self.mesh.positions.len();
        let mut cluster = ShapeMatchingConstraint::new(
            self.offset..self.offset + n,
            &self.mesh.positions,
            &self.masses,
            self.material(table),
        );
        cluster.plasticity = table.plasticity();
        out.shape_matching.push(cluster);
    }

    fn warn_if_unconstrained(&self, object: &Object, warnings: &mut Vec<String>) {
        let kinds = [
            object.stretch.is_some(),
            object.bending.is_some(),
            object.volume.is_some(),
            object.tets.is_some(),
            object.shape_matching.is_some(),
            object.long_range.is_some(),
        ];
        if !kinds.contains(&true) && object.fluid.is_none() {
            warnings.push(format!(
                "{}: no constraint kind is on; its particles fall freely",
                self.key
            ));
        }
    }
}

/// Edges used by exactly one triangle (a closed surface has none).
pub(super) fn open_edges(triangles: &[[u32; 3]]) -> usize {
    let mut edges: Vec<[u32; 2]> = triangles
        .iter()
        .flat_map(|&[a, b, c]| [[a, b], [b, c], [c, a]])
        .map(|[p, q]| [p.min(q), p.max(q)])
        .collect();
    edges.sort_unstable();
    edges
        .chunk_by(|x, y| x == y)
        .filter(|g| g.len() == 1)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::build::tests::build_text;

    #[test]
    fn a_quads_diagonal_takes_the_shear_material_and_is_left_out_of_strain() {
        let dir = tempfile::tempdir().unwrap();
        let mesh = dir.path().join("quad.obj");
        std::fs::write(&mesh, "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3 4\n").unwrap();
        let scene = |shear: &str| {
            format!(
                "[[object]]\nname = \"q\"\nmesh = {:?}\ndensity = 1.0\n\
                 stretch = {{ compliance = 0.0 }}\n{shear}",
                mesh.display().to_string()
            )
        };
        let built = build_text(&scene("shear = { compliance = 0.5 }\n")).unwrap();
        let edges = &built.model.stretch.items;
        assert_eq!(edges.len(), 5);
        for edge in edges {
            let compliance = match built.model.materials.get(edge.material) {
                Material::Compliant { compliance, .. } => compliance,
                Material::Stiff { .. } => unreachable!("XPBD scene"),
            };
            let [a, b] = edge.particles;
            let diagonal = (a, b) == (0, 2) || (a, b) == (2, 0);
            assert_eq!(edge.diagonal, diagonal, "{a}-{b}");
            assert_eq!(compliance, if diagonal { 0.5 } else { 0.0 }, "{a}-{b}");
        }
        assert!(!built.warnings.iter().any(|w| w.contains("shear")));
        // Without the table the diagonal keeps stretch's material, and check says why.
        let built = build_text(&scene("")).unwrap();
        assert!(built
            .model
            .stretch
            .items
            .iter()
            .all(|e| built.model.materials.get(e.material) == Material::RIGID));
        assert!(built
            .warnings
            .iter()
            .any(|w| w.contains(".shear: the diagonals")));
    }

    #[test]
    fn hinges_and_volume_on_a_closed_sphere() {
        let built = build_text(
            "[[object]]\nname = \"b\"\nsphere = { radius = 1.0, subdivisions = 1 }\ndensity = 1.0\n\
             bending = {}\nvolume = { pressure = 2.0 }\n",
        )
        .unwrap();
        // A closed triangle surface has 3F/2 edges, each a hinge.
        assert_eq!(built.model.bending.len(), 80 * 3 / 2);
        let v = &built.model.volumes[0];
        let rest = enclosed_volume(&built.model.particles.x, &v.triangles);
        assert!((v.target_volume - 2.0 * rest).abs() < 1e-12);
        for hinge in &built.model.bending.items {
            assert!(hinge.rest_angle.abs() < 0.5);
        }
    }

    #[test]
    fn ropes_bend_through_their_second_neighbours_and_tethers_reach_the_nearest_pin() {
        let built = build_text(
            "[[object]]\nname = \"r\"\nrope = { start = [0.0, 0.0, 0.0], end = [4.0, 0.0, 0.0], segments = 4 }\n\
             density = 1.0\npin = [0, 4]\nbending = { compliance = 1e-3 }\nlong_range = { max_stretch = 1.1 }\n",
        )
        .unwrap();
        let model = &built.model;
        let bends: Vec<[u32; 3]> = model
            .rope_bending
            .items
            .iter()
            .map(|c| c.particles)
            .collect();
        assert_eq!(bends, vec![[0, 1, 2], [1, 2, 3], [2, 3, 4]]);
        let tethers: Vec<([u32; 2], f64)> = model
            .long_range
            .items
            .iter()
            .map(|c| (c.particles, c.max_length))
            .collect();
        // Particle 2 is as far from both pins: the lower index wins.
        assert_eq!(tethers, vec![([1, 0], 1.1), ([2, 0], 2.2), ([3, 4], 1.1)]);
        // Tethers share pins, yet one colour holds them all.
        assert_eq!(model.long_range.colours.len(), 1);
    }

    #[test]
    fn tiny_closed_surfaces_still_get_a_volume() {
        let built = build_text(
            "[[object]]\nname = \"b\"\nsphere = { radius = 5e-6, subdivisions = 1 }\nparticle_mass = 1e-9\nvolume = {}\nstretch = {}\n",
        )
        .unwrap();
        assert_eq!(built.model.volumes.len(), 1);
        assert_eq!(built.model.stretch.len(), 120);
    }
}
