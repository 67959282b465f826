//! Fluid objects in a scene: `fluid = { box = { min, max }, spacing, ... }` (SPEC §5,
//! docs/scene-format.md "Fluids"). The checks of the table, the particle block it fills, and
//! the particles' masses; the solver's part is [`crate::constraints::density`].
//!
//! The box is in world coordinates. Along each axis it holds `n = ⌊(max − min)/s⌋` particles
//! (at least one) at `min + (i + ½) s`, so every particle stands for one cube of side `s`
//! and the block's volume is `n_x n_y n_z s³`; each particle's mass is `density · s³`.

use super::types::{Fluid, Object, SolverKind};
use super::validate::Report;
use crate::mesh::fluid_surface::RESOLUTIONS;
use crate::mesh::{Mesh, MAX_VERTICES};
use glam::DVec3;

/// Particles along each axis of `fluid`'s box (`None` when the box or spacing is invalid).
pub fn counts(fluid: &Fluid) -> Option<[u64; 3]> {
    let s = fluid.spacing;
    if !(s.is_finite() && s > 0.0) {
        return None;
    }
    let mut counts = [0; 3];
    for (axis, count) in counts.iter_mut().enumerate() {
        let n = axis_count(fluid, axis);
        if !(n.is_finite() && n >= 1.0 && n <= MAX_VERTICES as f64) {
            return None;
        }
        *count = n as u64;
    }
    Some(counts)
}

/// Particles along `axis` of `fluid`'s box, as a float (any size, or not finite).
fn axis_count(fluid: &Fluid, axis: usize) -> f64 {
    let extent = fluid.region.max[axis] - fluid.region.min[axis];
    // A box a hair under a whole number of spacings (typed as 0.3 for 3 × 0.1) still holds
    // that many particles.
    (extent / fluid.spacing * (1.0 + 1e-9)).floor()
}

/// How many particles `fluid` makes (`None` when invalid or beyond `u64`).
pub fn particle_count(fluid: &Fluid) -> Option<u64> {
    let [a, b, c] = counts(fluid)?;
    a.checked_mul(b)?.checked_mul(c)
}

/// The particles of a valid `fluid` block, x fastest, then y, then z; no faces or lines.
pub fn block(fluid: &Fluid) -> Mesh {
    let [nx, ny, nz] = counts(fluid).unwrap_or([0; 3]);
    let (min, s) = (DVec3::from_array(fluid.region.min), fluid.spacing);
    let mut positions = Vec::with_capacity((nx * ny * nz) as usize);
    for k in 0..nz {
        for j in 0..ny {
            for i in 0..nx {
                positions.push(min + (DVec3::new(i as f64, j as f64, k as f64) + 0.5) * s);
            }
        }
    }
    Mesh {
        positions,
        face_offsets: vec![0],
        ..Mesh::default()
    }
}

/// The mass of each particle of `fluid` at rest density `density`, kg.
pub fn particle_mass(fluid: &Fluid, density: f64) -> f64 {
    density * fluid.spacing.powi(3)
}

/// The checks of an object with a `fluid` table (its other geometry keys are checked by the
/// caller): the box and spacing, the coefficients' ranges, a rest `density`, and no key that
/// only means something for a mesh (constraint tables, pins, placement but `translate`).
pub fn check(object: &Object, fluid: &Fluid, key: &str, solver: SolverKind, report: &mut Report) {
    let table = format!("{key}.fluid");
    check_block(fluid, &table, report);
    check_coefficients(fluid, &table, report);
    if object.density.is_none() {
        report.error(
            key,
            "a fluid needs `density`, its rest density in kg/m³ (not `mass` or `particle_mass`)",
        );
    }
    if solver == SolverKind::Projective {
        report.error(
            &table,
            "Projective Dynamics cannot express density constraints; use solver = \"xpbd\"",
        );
    }
    refuse_mesh_keys(object, key, report);
}

/// The spacing, then the box (at least one spacing on every axis), then the particle count
/// they make: only the first of these that fails is reported.
fn check_block(fluid: &Fluid, table: &str, report: &mut Report) {
    if !(fluid.spacing.is_finite() && fluid.spacing > 0.0) {
        report.error(
            format!("{table}.spacing"),
            format!("must be > 0, got {}", fluid.spacing),
        );
    } else if let Some(axis) = (0..3).find(|&a| {
        let extent = fluid.region.max[a] - fluid.region.min[a];
        !(extent.is_finite() && extent * (1.0 + 1e-9) >= fluid.spacing)
    }) {
        report.error(
            format!("{table}.box"),
            format!(
                "must be at least one spacing ({} m) wide from `min` to `max` on every axis; axis {axis} is {} m",
                fluid.spacing,
                fluid.region.max[axis] - fluid.region.min[axis]
            ),
        );
    } else if particle_count(fluid).is_none_or(|n| n > MAX_VERTICES as u64) {
        // The figure it would need (finite for the valid spacing and box the branches above
        // checked, but for boxes near f64's limits).
        let needed: f64 = (0..3).map(|axis| axis_count(fluid, axis)).product();
        report.error(
            table,
            format!(
                "the box at this spacing holds {} particles, more than the limit of {MAX_VERTICES}",
                if needed.is_finite() {
                    format!("{needed:.3e}")
                } else {
                    "over 1e308".into()
                }
            ),
        );
    }
}

/// `viscosity` and `cohesion` from 0 to 1, `vorticity` at least 0, and the surface's
/// marching-cubes resolution within [`RESOLUTIONS`].
fn check_coefficients(fluid: &Fluid, table: &str, report: &mut Report) {
    for (name, value) in [("viscosity", fluid.viscosity), ("cohesion", fluid.cohesion)] {
        if !(0.0..=1.0).contains(&value) {
            report.error(
                format!("{table}.{name}"),
                format!("must be from 0 to 1, got {value}"),
            );
        }
    }
    if !(fluid.vorticity.is_finite() && fluid.vorticity >= 0.0) {
        report.error(
            format!("{table}.vorticity"),
            format!("must be >= 0, got {}", fluid.vorticity),
        );
    }
    if let Some(surface) = &fluid.surface {
        if !RESOLUTIONS.contains(&surface.resolution) {
            report.error(
                format!("{table}.surface.resolution"),
                format!(
                    "must be from {} to {} marching-cubes cells per spacing, got {}",
                    RESOLUTIONS.start(),
                    RESOLUTIONS.end(),
                    surface.resolution
                ),
            );
        }
    }
}

/// An error for each key set on the object that only means something for a mesh (constraint
/// tables, pins, placement but `translate`), in the order listed here.
fn refuse_mesh_keys(object: &Object, key: &str, report: &mut Report) {
    let refused = [
        ("stretch", object.stretch.is_some()),
        ("shear", object.shear.is_some()),
        ("bending", object.bending.is_some()),
        ("volume", object.volume.is_some()),
        ("tets", object.tets.is_some()),
        ("shape_matching", object.shape_matching.is_some()),
        ("long_range", object.long_range.is_some()),
        ("pin", !object.pin.is_empty()),
        ("pin_region", object.pin_region.is_some()),
        ("pin_to", object.pin_to.is_some()),
        ("keys", !object.keys.is_empty()),
        ("self_collision", object.self_collision),
        ("render_mesh", object.render_mesh.is_some()),
        ("scale", object.scale.axes() != [1.0; 3]),
        ("rotate", object.rotate != [0.0; 3]),
    ];
    for (name, _) in refused.iter().filter(|(_, set)| *set) {
        report.error(
            format!("{key}.{name}"),
            "does not apply to a fluid (its particles keep their density; the box is in world \
             coordinates, moved by `translate` only)",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::types::{FluidSurface, Region};

    fn fluid(min: [f64; 3], max: [f64; 3], spacing: f64) -> Fluid {
        Fluid {
            region: Region { min, max },
            spacing,
            viscosity: 0.0,
            vorticity: 0.0,
            cohesion: 0.0,
            surface: None::<FluidSurface>,
        }
    }

    #[test]
    fn a_box_of_whole_spacings_is_filled_cell_by_cell() {
        let f = fluid([0.0, 0.0, 0.0], [0.3, 0.2, 0.1], 0.1);
        assert_eq!(counts(&f), Some([3, 2, 1]));
        let mesh = block(&f);
        assert_eq!(mesh.positions.len(), 6);
        assert!(mesh.positions[0].distance(DVec3::new(0.05, 0.05, 0.05)) < 1e-15);
        assert!(mesh.positions[5].distance(DVec3::new(0.25, 0.15, 0.05)) < 1e-15);
        assert_eq!(particle_mass(&f, 1000.0), 1000.0 * 0.1f64.powi(3));
    }

    #[test]
    fn boxes_thinner_than_a_spacing_or_bad_spacings_hold_nothing() {
        assert_eq!(counts(&fluid([0.0; 3], [0.05, 1.0, 1.0], 0.1)), None);
        assert_eq!(counts(&fluid([0.0; 3], [1.0; 3], 0.0)), None);
        assert_eq!(counts(&fluid([0.0; 3], [1.0; 3], f64::NAN)), None);
        assert_eq!(particle_count(&fluid([0.0; 3], [1e9; 3], 1e-9)), None);
    }
}
