//! Quality gates (SPEC §5): limits a finished cache must meet. A run whose frames break one
//! still writes every frame, then exits with code 3.
//!
//! Each gate reads one per-object figure of every `frame` record of the stats log
//! (docs/output-format.md): `objects.NAME.max_edge_strain`, `.max_penetration`, `.max_speed`,
//! `.volume_change`, `.max_density_error` (fluids), and `self_intersections.NAME`. The verdict is computed from the records
//! as they are written, not from the solver: a resumed run reads the records it keeps back
//! from the log and reaches the verdict an uninterrupted run reaches, to the bit, since both
//! read the same text.
//!
//! The worst value of a gate is the largest figure over all frames and objects; ties go to the
//! earlier frame, then to the object first in the scene. A gate breaks when its worst value is
//! larger than its limit (equal is fine).

use crate::scene::types::Gates;
use serde::Serialize;

/// One kind of gate; [`Gate::ALL`] in the order the docs, `check` and the summary list them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    MaxEdgeStrain,
    MaxPenetration,
    SelfIntersections,
    MaxSpeed,
    MaxVolumeChange,
    MaxDensityError,
}

impl Gate {
    pub const ALL: [Gate; 6] = [
        Gate::MaxEdgeStrain,
        Gate::MaxPenetration,
        Gate::SelfIntersections,
        Gate::MaxSpeed,
        Gate::MaxVolumeChange,
        Gate::MaxDensityError,
    ];

    /// The key in `[gates]` and `--gate`.
    pub fn name(self) -> &'static str {
        match self {
            Gate::MaxEdgeStrain => "max_edge_strain",
            Gate::MaxPenetration => "max_penetration",
            Gate::SelfIntersections => "self_intersections",
            Gate::MaxSpeed => "max_speed",
            Gate::MaxVolumeChange => "max_volume_change",
            Gate::MaxDensityError => "max_density_error",
        }
    }

    /// What the limit measures, for messages.
    pub fn unit(self) -> &'static str {
        match self {
            Gate::MaxEdgeStrain => "fraction of the rest length",
            Gate::MaxPenetration => "m",
            Gate::SelfIntersections => "crossing triangle pairs",
            Gate::MaxSpeed => "m/s",
            Gate::MaxVolumeChange => "fraction of the rest volume",
            Gate::MaxDensityError => "fraction of the rest density",
        }
    }

    /// The gate named `name`.
    pub fn named(name: &str) -> Option<Gate> {
        Gate::ALL.into_iter().find(|g| g.name() == name)
    }

    /// Whether the limit is a whole number (a count).
    pub fn is_count(self) -> bool {
        self == Gate::SelfIntersections
    }

    /// The limit `gates` sets for this gate, if any.
    pub fn limit(self, gates: &Gates) -> Option<f64> {
        match self {
            Gate::MaxEdgeStrain => gates.max_edge_strain,
            Gate::MaxPenetration => gates.max_penetration,
            Gate::SelfIntersections => gates.self_intersections.map(|n| n as f64),
            Gate::MaxSpeed => gates.max_speed,
            Gate::MaxVolumeChange => gates.max_volume_change,
            Gate::MaxDensityError => gates.max_density_error,
        }
    }

    /// The figure of object `name` in a `frame` record, when the record has one.
    fn figure(self, record: &serde_json::Value, name: &str) -> Option<f64> {
        let field = match self {
            Gate::SelfIntersections => return record["self_intersections"][name].as_f64(),
            Gate::MaxEdgeStrain => "max_edge_strain",
            Gate::MaxPenetration => "max_penetration",
            Gate::MaxSpeed => "max_speed",
            Gate::MaxVolumeChange => "volume_change",
            Gate::MaxDensityError => "max_density_error",
        };
        record["objects"][name][field].as_f64()
    }
}

/// A gate's verdict, as the stats summary's `gates` array holds it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateResult {
    pub name: &'static str,
    pub limit: f64,
    /// The largest figure seen; `None` when no object has the figure (for example
    /// `max_volume_change` in a scene without closed surfaces or tetrahedra).
    pub worst: Option<f64>,
    pub frame: Option<u64>,
    pub object: Option<String>,
    pub ok: bool,
}

/// The worst figure of every gate set, over the frame records seen so far.
#[derive(Debug, Clone)]
pub struct GateTracker {
    /// Object names in scene order (ties go to the first).
    objects: Vec<String>,
    /// The gates set, in [`Gate::ALL`] order, with their limit and worst so far.
    gates: Vec<(Gate, f64, Option<Worst>)>,
}

/// A worst figure: its value, frame and object (index in scene order).
type Worst = (f64, u64, usize);

impl GateTracker {
    pub fn new(gates: &Gates, objects: Vec<String>) -> Self {
        GateTracker {
            objects,
            gates: Gate::ALL
                .into_iter()
                .filter_map(|g| g.limit(gates).map(|limit| (g, limit, None)))
                .collect(),
        }
    }

    /// Whether no gate is set.
    pub fn is_empty(&self) -> bool {
        self.gates.is_empty()
    }

    /// Takes a record of the stats log into account (records other than `frame` are
    /// ignored).
    pub fn observe(&mut self, record: &serde_json::Value) {
        if record["type"] != "frame" {
            return;
        }
        let Some(frame) = record["frame"].as_u64() else {
            return;
        };
        for (gate, _, worst) in &mut self.gates {
            for (k, name) in self.objects.iter().enumerate() {
                let Some(value) = gate.figure(record, name) else {
                    continue;
                };
                if worst.is_none_or(|(w, _, _)| value > w) {
                    *worst = Some((value, frame, k));
                }
            }
        }
    }

    /// Takes one line of the stats log into account; a line that is not JSON is ignored.
    pub fn observe_line(&mut self, line: &str) {
        if let Ok(record) = serde_json::from_str::<serde_json::Value>(line) {
            self.observe(&record);
        }
    }

    /// Every gate set, in [`Gate::ALL`] order.
    pub fn results(&self) -> Vec<GateResult> {
        self.gates
            .iter()
            .map(|&(gate, limit, worst)| GateResult {
                name: gate.name(),
                limit,
                worst: worst.map(|w| w.0),
                frame: worst.map(|w| w.1),
                object: worst.map(|w| self.objects[w.2].clone()),
                ok: worst.is_none_or(|w| w.0 <= limit),
            })
            .collect()
    }
}

/// The gates set in `gates`, each with its limit, in [`Gate::ALL`] order.
pub fn limits(gates: &Gates) -> Vec<(Gate, f64)> {
    Gate::ALL
        .into_iter()
        .filter_map(|g| g.limit(gates).map(|limit| (g, limit)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn frame(frame: u64, cloth_strain: f64, flag_strain: f64) -> serde_json::Value {
        json!({"type": "frame", "frame": frame,
               "objects": {"cloth": {"max_edge_strain": cloth_strain, "max_speed": 1.0},
                           "flag": {"max_edge_strain": flag_strain, "max_speed": 2.0}},
               "self_intersections": {"flag": 3}})
    }

    #[test]
    fn worst_value_frame_and_object_with_ties_to_the_first() {
        let gates = Gates {
            max_edge_strain: Some(0.1),
            max_speed: Some(5.0),
            self_intersections: Some(0),
            max_volume_change: Some(0.01),
            ..Gates::default()
        };
        let mut tracker = GateTracker::new(&gates, vec!["flag".into(), "cloth".into()]);
        tracker.observe(&json!({"type": "run"}));
        tracker.observe(&frame(1, 0.05, 0.02));
        tracker.observe(&frame(2, 0.2, 0.2));
        tracker.observe(&frame(3, 0.2, 0.1));
        let results = tracker.results();
        let names: Vec<&str> = results.iter().map(|r| r.name).collect();
        assert_eq!(
            names,
            [
                "max_edge_strain",
                "self_intersections",
                "max_speed",
                "max_volume_change"
            ]
        );
        let strain = &results[0];
        assert_eq!(
            (
                strain.worst,
                strain.frame,
                strain.object.as_deref(),
                strain.ok
            ),
            (Some(0.2), Some(2), Some("flag"), false)
        );
        let crossings = &results[1];
        assert_eq!((crossings.worst, crossings.ok), (Some(3.0), false));
        let speed = &results[2];
        assert_eq!(
            (speed.worst, speed.frame, speed.object.as_deref(), speed.ok),
            (Some(2.0), Some(1), Some("flag"), true)
        );
        let volume = &results[3];
        assert_eq!((volume.worst, volume.frame, volume.ok), (None, None, true));
    }

    #[test]
    fn a_limit_equal_to_the_worst_value_holds() {
        let gates = Gates {
            max_edge_strain: Some(0.2),
            ..Gates::default()
        };
        let mut tracker = GateTracker::new(&gates, vec!["cloth".into()]);
        tracker.observe_line(&frame(1, 0.2, 0.0).to_string());
        assert!(tracker.results()[0].ok);
        assert!(GateTracker::new(&Gates::default(), vec![]).is_empty());
    }
}
