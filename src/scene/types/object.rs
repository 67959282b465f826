//! `[[object]]` tables: the object, its geometry (`mesh`, `grid`, `rope`, `sphere`, `box`,
//! `fluid`), its placement and its pins.

use serde::{Deserialize, Serialize};

use super::collision::Key;
use super::constraint_tables::{Bending, LongRange, ShapeMatching, Shear, Stretch, Tets, Volume};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Object {
    pub name: String,
    // Geometry: exactly one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mesh: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grid: Option<Grid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rope: Option<Rope>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sphere: Option<Sphere>,
    #[serde(default, rename = "box", skip_serializing_if = "Option::is_none")]
    pub box_shape: Option<BoxShape>,
    /// A block of fluid particles (position-based fluids); `density` is its rest density.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fluid: Option<Fluid>,
    // Placement.
    #[serde(default)]
    pub scale: Scale,
    #[serde(default)]
    pub rotate: [f64; 3],
    #[serde(default)]
    pub translate: [f64; 3],
    #[serde(default)]
    pub velocity: [f64; 3],
    // Mass: exactly one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub density: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mass: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub particle_mass: Option<f64>,
    // Pins.
    #[serde(default)]
    pub pin: Vec<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin_region: Option<Region>,
    /// Keyframed motion of the pinned particles.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<Key>,
    /// The collider the pinned particles are attached to (they move with it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin_to: Option<String>,
    // Constraint kinds: a table switches a kind on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stretch: Option<Stretch>,
    /// The diagonals that triangulate faces of more than three sides (quads): in-plane shear.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shear: Option<Shear>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bending: Option<Bending>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume: Option<Volume>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tets: Option<Tets>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape_matching: Option<ShapeMatching>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_range: Option<LongRange>,
    #[serde(default = "super::default_true")]
    pub collide: bool,
    #[serde(default)]
    pub self_collision: bool,
    /// A finer mesh (OBJ or PLY) carried by this surface and written as `<name>_render`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render_mesh: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grid {
    pub size: [f64; 2],
    pub resolution: [u64; 2],
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rope {
    pub start: [f64; 3],
    pub end: [f64; 3],
    pub segments: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sphere {
    pub radius: f64,
    #[serde(default = "default_subdivisions")]
    pub subdivisions: u64,
}

fn default_subdivisions() -> u64 {
    3
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoxShape {
    pub size: [f64; 3],
    #[serde(default = "default_box_resolution")]
    pub resolution: [u64; 3],
}

fn default_box_resolution() -> [u64; 3] {
    [2, 2, 2]
}

/// `scale = 2.0` or `scale = [x, y, z]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged, expecting = "a number or an array [x, y, z] of numbers")]
pub enum Scale {
    Uniform(f64),
    Axes([f64; 3]),
}

impl Default for Scale {
    fn default() -> Self {
        Scale::Uniform(1.0)
    }
}

impl Scale {
    pub fn axes(self) -> [f64; 3] {
        match self {
            Scale::Uniform(s) => [s; 3],
            Scale::Axes(a) => a,
        }
    }
}

/// `fluid = { box = { min, max }, spacing, ... }`: particles on a grid of `spacing` filling the
/// box (world coordinates), solved with density constraints (docs/scene-format.md, "Fluids").
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fluid {
    #[serde(rename = "box")]
    pub region: Region,
    /// Distance between neighbouring particles at rest, m.
    pub spacing: f64,
    /// XSPH viscosity, 0 to 1 (the share of the neighbours' mean velocity taken per substep).
    #[serde(default)]
    pub viscosity: f64,
    /// Vorticity confinement strength (dimensionless, 0: off).
    #[serde(default)]
    pub vorticity: f64,
    /// 0 to 1: the weight with which under-dense particles are pulled together (0: a free
    /// surface is free; 1: the bilateral density constraint of the paper).
    #[serde(default)]
    pub cohesion: f64,
    /// A surface mesh reconstructed from the particles every frame, `<object>_surface`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surface: Option<FluidSurface>,
}

/// `surface = { resolution = r }`: marching-cubes cells of `spacing / r`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FluidSurface {
    pub resolution: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Region {
    pub min: [f64; 3],
    pub max: [f64; 3],
}
