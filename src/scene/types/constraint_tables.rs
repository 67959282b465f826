//! The constraint tables of an object (`stretch`, `shear`, `bending`, `volume`, `tets`,
//! `shape_matching`, `long_range`) and the keys they share.

use serde::{Deserialize, Serialize};

/// The keys every constraint table shares: XPBD `compliance` and `damping`, or, with
/// `solver = "pbd"`, `stiffness` in [0, 1].
pub trait Resistance {
    fn compliance(&self) -> Option<f64>;
    fn damping(&self) -> Option<f64>;
    fn stiffness(&self) -> Option<f64>;
}

macro_rules! resistance {
    ($($table:ty),*) => {$(
        impl Resistance for $table {
            fn compliance(&self) -> Option<f64> {
                self.compliance
            }
            fn damping(&self) -> Option<f64> {
                self.damping
            }
            fn stiffness(&self) -> Option<f64> {
                self.stiffness
            }
        }
    )*};
}

resistance!(Stretch, Shear, Bending, Volume, Tets, ShapeMatching);

/// A constraint table that accepts `yield` and `creep` (plasticity).
pub trait Plastic {
    fn yield_point(&self) -> Option<f64>;
    fn creep(&self) -> Option<f64>;
    /// The table's plasticity, `None` unless `creep > 0`.
    fn plasticity(&self) -> Option<crate::constraints::plasticity::Plasticity> {
        crate::constraints::plasticity::Plasticity::from_keys(self.yield_point(), self.creep())
    }
}

macro_rules! plastic {
    ($($table:ty),*) => {$(
        impl Plastic for $table {
            fn yield_point(&self) -> Option<f64> {
                self.yield_point
            }
            fn creep(&self) -> Option<f64> {
                self.creep
            }
        }
    )*};
}

plastic!(Stretch, Bending, ShapeMatching);

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Stretch {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compliance: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub damping: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stiffness: Option<f64>,
    /// Strain (length / rest − 1) beyond which a polygon side or segment tears.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tear_strain: Option<f64>,
    /// Plasticity: the yield point (see docs/scene-format.md, "Plasticity").
    #[serde(rename = "yield", skip_serializing_if = "Option::is_none")]
    pub yield_point: Option<f64>,
    /// Plasticity: creep rate, 1/s; plasticity is on only when > 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creep: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Bending {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compliance: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub damping: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stiffness: Option<f64>,
    pub model: BendingModel,
    /// Plasticity: the yield point (see docs/scene-format.md, "Plasticity").
    #[serde(rename = "yield", skip_serializing_if = "Option::is_none")]
    pub yield_point: Option<f64>,
    /// Plasticity: creep rate, 1/s; plasticity is on only when > 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creep: Option<f64>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BendingModel {
    #[default]
    Dihedral,
    Isometric,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Volume {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compliance: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub damping: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stiffness: Option<f64>,
    pub pressure: f64,
}

impl Default for Volume {
    fn default() -> Self {
        Volume {
            compliance: None,
            damping: None,
            stiffness: None,
            pressure: 1.0,
        }
    }
}

/// The diagonals inside faces of more than three sides, apart from `stretch`: a woven cloth
/// resists stretch along its threads (a quad mesh's sides) far more than shear (its
/// diagonals); with both rigid, a quad mesh cannot shear at all (docs/physics.md).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Shear {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compliance: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub damping: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stiffness: Option<f64>,
}

/// Per-tetrahedron volume (soft bodies from TetGen meshes or a filled `box`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Tets {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compliance: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub damping: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stiffness: Option<f64>,
}

/// The whole object as one shape-matching cluster.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ShapeMatching {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compliance: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub damping: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stiffness: Option<f64>,
    /// Plasticity: the yield point (see docs/scene-format.md, "Plasticity").
    #[serde(rename = "yield", skip_serializing_if = "Option::is_none")]
    pub yield_point: Option<f64>,
    /// Plasticity: creep rate, 1/s; plasticity is on only when > 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creep: Option<f64>,
}

/// Tethers from every free particle to its nearest pinned particle.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LongRange {
    pub max_stretch: f64,
}

impl Default for LongRange {
    fn default() -> Self {
        LongRange { max_stretch: 1.0 }
    }
}
