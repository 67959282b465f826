//! `[simulation]`: time stepping, gravity and the solver.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Simulation {
    pub fps: f64,
    pub frames: u64,
    pub start_frame: u64,
    pub substeps: u64,
    pub iterations: u64,
    pub gravity: [f64; 3],
    pub solver: SolverKind,
    pub threads: u64,
    /// Whether frames run on fewer threads while other programs hold the cores, or where
    /// fewer run the scene faster (`solver::crowding`).
    pub adapt_threads: bool,
    pub velocity_damping: f64,
    /// Speed (m/s) above which a particle counts as diverged.
    pub max_speed: f64,
    /// Settings of `solver = "projective"` (docs/scene-format.md, "Projective Dynamics").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub projective: Option<ProjectiveTable>,
}

/// `[simulation.projective]`: options of the Projective Dynamics solver.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProjectiveTable {
    /// ρ of Chebyshev semi-iterative acceleration (Wang 2015), from 0 (off) to below 1.
    pub chebyshev_rho: f64,
}

impl Default for Simulation {
    fn default() -> Self {
        Simulation {
            fps: 24.0,
            frames: 120,
            start_frame: 1,
            substeps: 20,
            iterations: 1,
            gravity: [0.0, -9.81, 0.0],
            solver: SolverKind::Xpbd,
            threads: 0,
            adapt_threads: true,
            velocity_damping: 0.0,
            max_speed: 1000.0,
            projective: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SolverKind {
    Xpbd,
    Pbd,
    /// Projective Dynamics (Bouaziz et al. 2014): local projections, a prefactored global solve.
    Projective,
}

impl SolverKind {
    /// The name the scene uses.
    pub fn name(self) -> &'static str {
        match self {
            SolverKind::Xpbd => "xpbd",
            SolverKind::Pbd => "pbd",
            SolverKind::Projective => "projective",
        }
    }
}
