//! Value checks on one `[[object]]` table, concern by concern: its name, its one geometry and
//! that geometry's sizes, its scale, its one mass, its pin region, its constraint tables, and
//! the keys that only some geometries or kinds can carry (tearing, a render mesh, tethers).
//! Checks that involve other tables (a `pin_to` collider, `simulation.max_speed`) are in
//! [`super::validate`].

use super::types::*;
use super::validate::{in_range, non_negative, positive, Report, MAX_SUBDIVISIONS};
use crate::quote::quoted;

/// Checks the object at `key`; every problem is reported, in the order of the concerns below.
pub(super) fn check_object(object: &Object, key: &str, solver: SolverKind, report: &mut Report) {
    check_name(object, key, report);
    check_geometry_choice(object, key, report);
    check_primitive_sizes(object, key, report);
    if let Some(fluid) = &object.fluid {
        super::fluid::check(object, fluid, key, solver, report);
    }
    check_scale(object, key, report);
    check_mass_choice(object, key, report);
    check_pin_region(object, key, report);
    check_constraint_tables(object, key, solver, report);
    check_tearing(object, key, report);
    check_render_mesh(object, key, report);
    check_long_range(object, key, report);
}

/// The name becomes part of output file names: letters, digits, `_` or `-` only.
fn check_name(object: &Object, key: &str, report: &mut Report) {
    if object.name.is_empty()
        || !object
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        report.error(
            format!("{key}.name"),
            format!(
                "`{}` must be letters, digits, `_` or `-` only",
                quoted(&object.name)
            ),
        );
    }
}

/// Exactly one of the geometry keys.
fn check_geometry_choice(object: &Object, key: &str, report: &mut Report) {
    let geometry: Vec<&str> = [
        ("mesh", object.mesh.is_some()),
        ("grid", object.grid.is_some()),
        ("rope", object.rope.is_some()),
        ("sphere", object.sphere.is_some()),
        ("box", object.box_shape.is_some()),
        ("fluid", object.fluid.is_some()),
    ]
    .iter()
    .filter(|(_, set)| *set)
    .map(|(name, _)| *name)
    .collect();
    match geometry.len() {
        0 => report.error(
            key,
            "needs a geometry: one of `mesh`, `grid`, `rope`, `sphere`, `box`, `fluid`",
        ),
        1 => {}
        _ => report.error(
            key,
            format!(
                "has {} geometries; give exactly one",
                geometry.join(" and ")
            ),
        ),
    }
}

/// The sizes and resolutions of the generated primitives (`grid`, `rope`, `sphere`, `box`).
fn check_primitive_sizes(object: &Object, key: &str, report: &mut Report) {
    if let Some(grid) = &object.grid {
        check_lattice(&format!("{key}.grid"), &grid.size, &grid.resolution, report);
    }
    if let Some(rope) = &object.rope {
        in_range(
            report,
            &format!("{key}.rope.segments"),
            rope.segments,
            1,
            u32::MAX as u64 - 1,
        );
        if rope.start == rope.end {
            report.error(
                format!("{key}.rope"),
                "`start` and `end` are the same point",
            );
        }
    }
    if let Some(sphere) = &object.sphere {
        positive(report, &format!("{key}.sphere.radius"), sphere.radius);
        in_range(
            report,
            &format!("{key}.sphere.subdivisions"),
            sphere.subdivisions,
            0,
            MAX_SUBDIVISIONS,
        );
    }
    if let Some(shape) = &object.box_shape {
        check_lattice(
            &format!("{key}.box"),
            &shape.size,
            &shape.resolution,
            report,
        );
    }
}

/// A `grid`'s or `box`'s sizes (positive) and points per axis (at least 2), axis by axis.
fn check_lattice(table: &str, size: &[f64], resolution: &[u64], report: &mut Report) {
    for (axis, (&size, &points)) in size.iter().zip(resolution).enumerate() {
        positive(report, &format!("{table}.size[{axis}]"), size);
        in_range(
            report,
            &format!("{table}.resolution[{axis}]"),
            points,
            2,
            u32::MAX as u64,
        );
    }
}

/// `scale` must be positive on every axis (a mirror or a flattening is refused).
fn check_scale(object: &Object, key: &str, report: &mut Report) {
    for (axis, s) in object.scale.axes().iter().enumerate() {
        if *s <= 0.0 {
            report.error(
                format!("{key}.scale"),
                format!("must be > 0 on every axis, got {s} on axis {axis}"),
            );
        }
    }
}

/// Exactly one of the mass keys, and a positive one.
fn check_mass_choice(object: &Object, key: &str, report: &mut Report) {
    let masses: Vec<(&str, f64)> = [
        ("density", object.density),
        ("mass", object.mass),
        ("particle_mass", object.particle_mass),
    ]
    .iter()
    .filter_map(|(name, value)| value.map(|v| (*name, v)))
    .collect();
    match masses.as_slice() {
        [] => report.error(
            key,
            "needs a mass: one of `density`, `mass`, `particle_mass`",
        ),
        [(name, value)] => positive(report, &format!("{key}.{name}"), *value),
        _ => report.error(
            key,
            "has more than one of `density`, `mass`, `particle_mass`; give exactly one",
        ),
    }
}

fn check_pin_region(object: &Object, key: &str, report: &mut Report) {
    if let Some(region) = &object.pin_region {
        if (0..3).any(|a| region.min[a] > region.max[a]) {
            report.error(
                format!("{key}.pin_region"),
                "`min` must be <= `max` on every axis",
            );
        }
    }
}

/// Every constraint table's resistance under the solver, then `volume.pressure`.
fn check_constraint_tables(object: &Object, key: &str, solver: SolverKind, report: &mut Report) {
    let tables: [(&str, Option<&dyn Resistance>); 6] = [
        (
            "stretch",
            object.stretch.as_ref().map(|t| t as &dyn Resistance),
        ),
        ("shear", object.shear.as_ref().map(|t| t as &dyn Resistance)),
        (
            "bending",
            object.bending.as_ref().map(|t| t as &dyn Resistance),
        ),
        (
            "volume",
            object.volume.as_ref().map(|t| t as &dyn Resistance),
        ),
        ("tets", object.tets.as_ref().map(|t| t as &dyn Resistance)),
        (
            "shape_matching",
            object.shape_matching.as_ref().map(|t| t as &dyn Resistance),
        ),
    ];
    for (name, table) in tables {
        if let Some(table) = table {
            check_resistance(table, &format!("{key}.{name}"), solver, report);
        }
    }
    if let Some(volume) = &object.volume {
        positive(report, &format!("{key}.volume.pressure"), volume.pressure);
    }
}

/// Checks one constraint table's `compliance`/`damping` (XPBD) or `stiffness` (PBD).
fn check_resistance(table: &dyn Resistance, key: &str, solver: SolverKind, report: &mut Report) {
    match solver {
        SolverKind::Xpbd | SolverKind::Projective => {
            if table.stiffness().is_some() {
                report.error(
                    format!("{key}.stiffness"),
                    format!(
                        "`stiffness` belongs to solver = \"pbd\"; with \"{}\" use `compliance` (inverse stiffness)",
                        solver.name()
                    ),
                );
            }
            let compliance = table.compliance().unwrap_or(0.0);
            let damping = table.damping().unwrap_or(0.0);
            non_negative(report, &format!("{key}.compliance"), compliance);
            non_negative(report, &format!("{key}.damping"), damping);
            if solver == SolverKind::Projective && compliance == 0.0 {
                super::projective::warn_hard(key, report);
            }
            if solver == SolverKind::Projective && damping > 0.0 {
                super::projective::refuse_damping(key, report);
            } else if compliance == 0.0 && damping > 0.0 {
                report.warn(
                    format!("{key}.damping"),
                    "has no effect: damping acts only on a constraint with compliance > 0",
                );
            }
        }
        SolverKind::Pbd => {
            for (name, value) in [
                ("compliance", table.compliance()),
                ("damping", table.damping()),
            ] {
                if value.is_some() {
                    report.error(
                        format!("{key}.{name}"),
                        format!("`{name}` belongs to solver = \"xpbd\"; with \"pbd\" use `stiffness` from 0 to 1"),
                    );
                }
            }
            if let Some(k) = table.stiffness() {
                if !(0.0..=1.0).contains(&k) {
                    report.error(
                        format!("{key}.stiffness"),
                        format!("must be from 0 to 1, got {k}"),
                    );
                }
            }
        }
    }
}

/// `stretch.tear_strain`: positive, and only on surfaces and ropes.
fn check_tearing(object: &Object, key: &str, report: &mut Report) {
    if let Some(strain) = object.stretch.as_ref().and_then(|s| s.tear_strain) {
        positive(report, &format!("{key}.stretch.tear_strain"), strain);
        for (kind, on) in [
            ("tets", object.tets.is_some()),
            ("shape_matching", object.shape_matching.is_some()),
        ] {
            if on {
                report.error(
                    format!("{key}.stretch.tear_strain"),
                    format!("tearing works on surfaces and ropes, not with `{kind}`"),
                );
            }
        }
    }
}

/// A render mesh needs the object's triangles kept as they are.
fn check_render_mesh(object: &Object, key: &str, report: &mut Report) {
    if object.render_mesh.is_some() {
        let kinds = [
            ("rope", object.rope.is_some()),
            ("tets", object.tets.is_some()),
            (
                "stretch.tear_strain",
                object
                    .stretch
                    .as_ref()
                    .is_some_and(|s| s.tear_strain.is_some()),
            ),
        ];
        for (kind, on) in kinds {
            if on {
                report.error(
                    format!("{key}.render_mesh"),
                    format!("a render mesh rides on a surface's triangles, which `{kind}` does not keep"),
                );
            }
        }
    }
}

fn check_long_range(object: &Object, key: &str, report: &mut Report) {
    if let Some(long_range) = &object.long_range {
        if long_range.max_stretch < 1.0 {
            report.error(
                format!("{key}.long_range.max_stretch"),
                format!("must be >= 1 (a tether shorter than the rest distance would pull the cloth in), got {}", long_range.max_stretch),
            );
        }
    }
}
