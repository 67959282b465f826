//! `[[collider]]` tables, the keys of a keyframed motion, and the `[collision]` settings.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Collider {
    pub name: String,
    pub shape: ColliderShape,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point: Option<[f64; 3]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normal: Option<[f64; 3]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub center: Option<[f64; 3]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub radius: Option<f64>,
    /// Box: full extents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<[f64; 3]>,
    /// Box: degrees about world X, then Y, then Z.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotate: Option<[f64; 3]>,
    /// Mesh: an OBJ/PLY file, or a per-frame sequence with `{frame}` / `{frame:0N}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mesh: Option<String>,
    /// Capsule: the segment's ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a: Option<[f64; 3]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b: Option<[f64; 3]>,
    #[serde(default = "default_friction")]
    pub friction: f64,
    /// Overrides `friction` for sticking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub static_friction: Option<f64>,
    /// Overrides `friction` for sliding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic_friction: Option<f64>,
    #[serde(default)]
    pub restitution: f64,
    #[serde(default)]
    pub thickness: f64,
    /// Keyframed motion.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<Key>,
}

/// One key of a keyframed motion: at `frame`, this offset and turn.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Key {
    pub frame: f64,
    #[serde(default)]
    pub translate: [f64; 3],
    #[serde(default)]
    pub rotate: [f64; 3],
}

fn default_friction() -> f64 {
    0.3
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ColliderShape {
    Plane,
    Sphere,
    Box,
    Capsule,
    Mesh,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Collision {
    pub thickness: f64,
    pub friction: f64,
    /// Largest ratio of two particles' masses a contact between objects projects with: a
    /// lighter particle under a heavier one (along gravity) is treated as this many times
    /// lighter than the heaviest one it supports, no more (a large value, e.g. 1e9, projects
    /// with true masses). See `collision::stencil::Mobility`.
    pub max_mass_ratio: f64,
}

impl Default for Collision {
    fn default() -> Self {
        Collision {
            thickness: 0.005,
            friction: default_friction(),
            max_mass_ratio: 4.0,
        }
    }
}
