//! `[gates]`: the quality gates a run must pass (SPEC §5).

use serde::{Deserialize, Serialize};

/// Quality gates (SPEC §5): limits the written cache must meet, else `run` exits with code 3.
/// The names are [`crate::gates::Gate::ALL`]'s; what each measures is in `crate::gates`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Gates {
    /// Largest edge strain `|l / l0 − 1|`, a fraction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_edge_strain: Option<f64>,
    /// Deepest penetration into a collider, m.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_penetration: Option<f64>,
    /// Most crossing triangle pairs of one object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_intersections: Option<u64>,
    /// Largest particle speed, m/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_speed: Option<f64>,
    /// Largest `|V / V0 − 1|` of a closed surface or tetrahedral object, a fraction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_volume_change: Option<f64>,
    /// Largest density error `ρ/ρ0 − 1` of a compressed fluid particle, a fraction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_density_error: Option<f64>,
}

impl Gates {
    pub fn is_empty(&self) -> bool {
        *self == Gates::default()
    }
}
