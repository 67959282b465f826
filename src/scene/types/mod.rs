//! The scene file's TOML schema (SPEC §2). Every key here is documented in
//! `docs/scene-format.md`; unknown keys are refused (`deny_unknown_fields`). Defaults are the
//! values a key takes when absent. Value checks (ranges, exclusive choices) live in
//! [`super::validate`]; these types only describe shape.

mod collision;
mod constraint_tables;
mod gates;
mod object;
mod output;
mod simulation;

pub use collision::{Collider, ColliderShape, Collision, Key};
pub use constraint_tables::{
    Bending, BendingModel, LongRange, Plastic, Resistance, ShapeMatching, Shear, Stretch, Tets,
    Volume,
};
pub use gates::Gates;
pub use object::{BoxShape, Fluid, FluidSurface, Grid, Object, Region, Rope, Scale, Sphere};
pub use output::{Format, Output, Preview, RopeTube, UpAxis, MAX_TUBE_SIDES};
pub use simulation::{ProjectiveTable, Simulation, SolverKind};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SceneFile {
    #[serde(default)]
    pub simulation: Simulation,
    #[serde(default)]
    pub output: Output,
    #[serde(default, rename = "object")]
    pub objects: Vec<Object>,
    #[serde(default, rename = "collider")]
    pub colliders: Vec<Collider>,
    #[serde(default)]
    pub collision: Collision,
    #[serde(default, skip_serializing_if = "Gates::is_empty")]
    pub gates: Gates,
}

/// The default of a key that is on unless switched off (`rope_tube.caps`, `collide`).
fn default_true() -> bool {
    true
}
