//! What `solver = "projective"` accepts (docs/scene-format.md, "Projective Dynamics"): every
//! kind whose energy has the local/global form (solver/projective), and not the kinds or keys
//! it cannot express. Each refusal names the key and says what to use instead.

use super::types::{SceneFile, SolverKind};
use super::validate::Report;

/// Checks `[simulation.projective]` and the kinds the projective solver cannot express.
pub fn check(scene: &SceneFile, report: &mut Report) {
    let projective = scene.simulation.solver == SolverKind::Projective;
    if let Some(table) = &scene.simulation.projective {
        if !projective {
            report.error(
                "simulation.projective",
                format!(
                    "belongs to solver = \"projective\", but the scene's solver is \"{}\"",
                    scene.simulation.solver.name()
                ),
            );
        }
        let rho = table.chebyshev_rho;
        if !(0.0..1.0).contains(&rho) {
            report.error(
                "simulation.projective.chebyshev_rho",
                format!("must be from 0 (off) to below 1, got {rho}"),
            );
        }
    }
    if !projective {
        return;
    }
    for (k, object) in scene.objects.iter().enumerate() {
        if object.long_range.is_some() {
            warn_hard(&format!("object[{k}].long_range"), report);
        }
        if object.volume.is_some() {
            report.error(
                format!("object[{k}].volume"),
                "the kind `volume` (one constraint on a whole closed surface) cannot be \
                 expressed by solver = \"projective\": it couples every vertex of the surface \
                 at once, which has no sparse local/global form; use solver = \"xpbd\", or \
                 `tets` on a tetrahedral mesh",
            );
        }
    }
}

/// A constraint table's `damping` under the projective solver.
pub fn refuse_damping(key: &str, report: &mut Report) {
    report.error(
        format!("{key}.damping"),
        "solver = \"projective\" has no per-constraint damping (XPBD's β); use \
         simulation.velocity_damping",
    );
}

/// A constraint table of compliance 0 under the projective solver.
pub fn warn_hard(key: &str, report: &mut Report) {
    report.warn(
        format!("{key}.compliance"),
        "is 0 (hard): solver = \"projective\" gives it its maximum weight, 10 × the inertia \
         m/h² of its particles, so its stiffness depends on the substep; give a compliance to \
         set it (docs/scene-format.md, \"Projective Dynamics\")",
    );
}
