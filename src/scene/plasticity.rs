//! What the plasticity keys accept (`yield` and `creep` in `stretch`, `bending` and
//! `shape_matching`; docs/scene-format.md, "Plasticity"): finite values ≥ 0, and plasticity
//! only where the rest state it moves exists and stays. Each refusal names the key.

use super::types::{BendingModel, Object, Plastic, SceneFile, SolverKind};
use super::validate::Report;

/// Checks every object's plasticity keys.
pub fn check(scene: &SceneFile, report: &mut Report) {
    for (k, object) in scene.objects.iter().enumerate() {
        check_object(
            object,
            &format!("object[{k}]"),
            scene.simulation.solver,
            report,
        );
    }
}

fn check_object(object: &Object, key: &str, solver: SolverKind, report: &mut Report) {
    let tables: [(&str, Option<&dyn Plastic>); 3] = [
        (
            "stretch",
            object.stretch.as_ref().map(|t| t as &dyn Plastic),
        ),
        (
            "bending",
            object.bending.as_ref().map(|t| t as &dyn Plastic),
        ),
        (
            "shape_matching",
            object.shape_matching.as_ref().map(|t| t as &dyn Plastic),
        ),
    ];
    for (name, table) in tables {
        let Some(table) = table else { continue };
        let table_key = format!("{key}.{name}");
        for (value, unit) in [(table.yield_point(), "yield"), (table.creep(), "creep")] {
            if let Some(value) = value {
                if !(value.is_finite() && value >= 0.0) {
                    report.error(
                        format!("{table_key}.{unit}"),
                        format!("must be a finite number >= 0, got {value}"),
                    );
                }
            }
        }
        if table.plasticity().is_none() {
            if table.yield_point().is_some() {
                report.warn(
                    format!("{table_key}.yield"),
                    "has no effect without `creep` > 0 (the rate, 1/s, at which the rest state \
                     follows past the yield)",
                );
            }
            continue;
        }
        for problem in refusals(object, name, solver) {
            report.error(format!("{table_key}.creep"), problem);
        }
    }
}

/// Why plasticity in table `name` of `object` cannot run, if it cannot.
fn refusals(object: &Object, name: &str, solver: SolverKind) -> Vec<String> {
    let mut problems = Vec::new();
    if solver == SolverKind::Projective {
        problems.push(
            "plasticity is built for solver = \"xpbd\" and \"pbd\": solver = \"projective\" \
             prefactors its system from the rest state, which plasticity moves"
                .to_string(),
        );
    }
    if object
        .stretch
        .as_ref()
        .is_some_and(|s| s.tear_strain.is_some())
    {
        problems.push(
            "plasticity cannot be combined with stretch.tear_strain: a tear remakes the \
             constraints from the original rest shape, forgetting the plastic flow"
                .to_string(),
        );
    }
    if name == "bending" {
        if object.rope.is_some() {
            problems.push(
                "plastic bending needs the rest angles of dihedral hinges; a rope's bending \
                 pulls toward straight and has no rest bend to move"
                    .to_string(),
            );
        }
        if object.bending.as_ref().map(|b| b.model) == Some(BendingModel::Isometric) {
            problems.push(
                "plastic bending needs model = \"dihedral\": isometric bending pulls toward \
                 flat and has no rest angle to move"
                    .to_string(),
            );
        }
    }
    problems
}
