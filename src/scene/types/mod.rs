//! The scene file's TOML schema (SPEC §2). Every key here is documented in
//! `docs/scene-format.md`; unknown keys are refused (`deny_unknown_fields`). Defaults are the
//! values a key takes when absent. Value checks (ranges, exclusive choices) live in
//! [`super::validate`]; these types only describe shape.

mod collision;
mod constraint_tables;
mod gates;
mod object;

pub use collision::{Collider, ColliderShape, Collision, Key};
pub use constraint_tables::{
    Bending, BendingModel, LongRange, Plastic, Resistance, ShapeMatching, Shear, Stretch, Tets,
    Volume,
};
pub use gates::Gates;
pub use object::{BoxShape, Fluid, FluidSurface, Grid, Object, Region, Rope, Scale, Sphere};

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

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Output {
    pub dir: String,
    pub formats: Vec<Format>,
    pub name: String,
    pub stats: String,
    pub normals: bool,
    pub up_axis: UpAxis,
    pub velocities: bool,
    pub checkpoint_every: u64,
    /// Keep `DIR/checkpoints/` after a successful run (it is removed otherwise).
    pub keep_checkpoints: bool,
    /// Write every rope (an object of line segments only) as a tube mesh.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rope_tube: Option<RopeTube>,
    /// Preview PNGs every few frames.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<Preview>,
}

/// `output.preview`: a PNG of the shot every `every` frames (`src/output/preview.rs`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preview {
    /// Frames between previews (the first frame always has one).
    #[serde(default = "default_preview_every")]
    pub every: u64,
    /// Width and height in pixels.
    #[serde(default = "default_preview_size")]
    pub size: [u64; 2],
}

fn default_preview_every() -> u64 {
    1
}

fn default_preview_size() -> [u64; 2] {
    [640, 360]
}

/// `output.rope_tube`: the tube a rope is written as (`src/mesh/tube.rs`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RopeTube {
    /// Tube radius, m.
    pub radius: f64,
    /// Vertices around every ring, 3 to [`MAX_TUBE_SIDES`].
    #[serde(default = "default_tube_sides")]
    pub sides: u64,
    /// Close the open ends with triangle fans.
    #[serde(default = "default_true")]
    pub caps: bool,
}

/// Most vertices around one tube ring.
pub const MAX_TUBE_SIDES: u64 = 256;

fn default_tube_sides() -> u64 {
    8
}

fn default_true() -> bool {
    true
}

impl Default for Output {
    fn default() -> Self {
        Output {
            dir: "cache".into(),
            formats: vec![Format::Obj],
            name: "{object}.{frame:04}".into(),
            stats: "stats.jsonl".into(),
            normals: true,
            up_axis: UpAxis::Y,
            velocities: true,
            checkpoint_every: 10,
            keep_checkpoints: false,
            rope_tube: None,
            preview: None,
        }
    }
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Obj,
    Ply,
    /// One binary USD stage for the whole run, `DIR/<scene stem>.usdc`.
    Usd,
    /// The same stage as text, `DIR/<scene stem>.usda`.
    Usda,
    /// One big-endian MDD point cache per object, `DIR/<object>.mdd`.
    Mdd,
    /// One little-endian PC2 point cache per object, `DIR/<object>.pc2`.
    Pc2,
}

impl Format {
    /// The file name extension (`usd` writes `.usdc`).
    pub fn extension(self) -> &'static str {
        match self {
            Format::Obj => "obj",
            Format::Ply => "ply",
            Format::Usd => "usdc",
            Format::Usda => "usda",
            Format::Mdd => "mdd",
            Format::Pc2 => "pc2",
        }
    }

    /// The name in `output.formats` and `--format`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Usd => "usd",
            other => other.extension(),
        }
    }

    /// One file per object per frame (OBJ, PLY); the others hold every frame in one file.
    pub fn per_frame(self) -> bool {
        matches!(self, Format::Obj | Format::Ply)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UpAxis {
    Y,
    Z,
}
