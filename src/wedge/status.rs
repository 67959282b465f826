//! `xpbd-sim wedge status DIR`: one row per task, read from the task's stats log — its state,
//! frames, wall time, the figures a TD picks a wedge by, and its gates (docs/wedges.md).

use super::plan::{Plan, Task};
use crate::output::lock::held_by_another;
use crate::output::stats::StatsLog;
use anyhow::{bail, Result};
use serde::Serialize;
use serde_json::Value;
use std::path::Path;

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Not started, or stopped at a checkpoint (it continues when the wedge is run again).
    Pending,
    /// A run holds its folder now.
    Running,
    /// Every frame written, every gate kept.
    Done,
    /// Diverged, failed to write, or ended without a summary (killed).
    Failed,
    /// Every frame written, but a gate broken.
    GateBroken,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Pending => "pending",
            State::Running => "running",
            State::Done => "done",
            State::Failed => "failed",
            State::GateBroken => "gate broken",
        }
    }

    /// Whether running the wedge again leaves the task alone.
    pub fn finished(self) -> bool {
        matches!(self, State::Done | State::GateBroken | State::Failed)
    }
}

/// One task's row.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub index: usize,
    pub name: String,
    /// `KEY=VALUE` per variation.
    pub set: Vec<String>,
    pub state: State,
    pub frames: u64,
    /// The run's total wall time (summed over its resumes is not known: the last run's).
    pub wall_seconds: Option<f64>,
    /// Largest over the frames written.
    pub max_edge_strain: Option<f64>,
    pub max_penetration: Option<f64>,
    /// Largest count of crossing triangle pairs in a frame, over all objects.
    pub self_intersections: Option<u64>,
    /// Of the last frame written.
    pub kinetic_energy: Option<f64>,
    /// Every gate with its worst value and whether it held (from the summary).
    pub gates: Vec<Value>,
    /// The summary's message (why it failed or stopped), if any.
    pub message: Option<String>,
}

/// Every task's row, in task order.
pub fn rows(dir: &Path, plan: &Plan) -> Vec<Row> {
    plan.tasks.iter().map(|task| row(dir, plan, task)).collect()
}

/// Task `task`'s row.
pub fn row(dir: &Path, plan: &Plan, task: &Task) -> Row {
    let folder = plan.task_dir(dir, task);
    let records = StatsLog::read_records(&folder.join(&plan.stats)).unwrap_or_default();
    let frames: Vec<&Value> = records.iter().filter(|r| r["type"] == "frame").collect();
    let summary = records.iter().rev().find(|r| r["type"] == "summary");
    let running = folder.is_dir() && held_by_another(&folder);
    let max = |key: &str| {
        let values = frames.iter().filter_map(|r| r[key].as_f64());
        values.fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
    };
    let gates: Vec<Value> = summary
        .and_then(|s| s["gates"].as_array())
        .cloned()
        .unwrap_or_default();
    let state = match summary {
        _ if running => State::Running,
        None if records.is_empty() => State::Pending,
        None => State::Failed,
        Some(s) => match s["status"].as_str() {
            Some("ok") if gates.iter().any(|g| g["ok"] == false) => State::GateBroken,
            Some("ok") => State::Done,
            Some("interrupted") => State::Pending,
            _ => State::Failed,
        },
    };
    Row {
        index: task.index,
        name: task.name.clone(),
        set: task.set.clone(),
        state,
        frames: frames.len() as u64,
        wall_seconds: summary.and_then(|s| s["wall_seconds"]["total"].as_f64()),
        max_edge_strain: max("max_edge_strain"),
        max_penetration: max("max_penetration"),
        self_intersections: frames
            .iter()
            .filter_map(|r| r["self_intersections"].as_object())
            .map(|per_object| per_object.values().filter_map(Value::as_u64).sum())
            .max(),
        kinetic_energy: frames.last().and_then(|r| r["kinetic_energy"].as_f64()),
        gates,
        message: match (summary, state) {
            (None, State::Failed) => Some("ended without a summary (killed?)".into()),
            (Some(s), _) => s["message"].as_str().map(String::from),
            _ => None,
        },
    }
}

/// The columns of the table, in order: what `--sort` accepts.
pub const COLUMNS: [&str; 9] = [
    "task",
    "state",
    "frames",
    "wall_s",
    "max_strain",
    "max_penetration",
    "self_intersections",
    "kinetic_energy",
    "gates",
];

impl Row {
    /// The row's cells: the task, each variation's value, then [`COLUMNS`] after `task`.
    pub fn cells(&self) -> Vec<String> {
        let number = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.4e}"));
        let mut cells = vec![self.name.clone()];
        cells.extend(
            (self.set.iter()).map(|pair| pair.split_once('=').map_or("", |(_, v)| v).to_string()),
        );
        cells.extend([
            self.state.name().to_string(),
            self.frames.to_string(),
            self.wall_seconds
                .map_or(String::new(), |s| format!("{s:.2}")),
            number(self.max_edge_strain),
            number(self.max_penetration),
            self.self_intersections
                .map_or(String::new(), |n| n.to_string()),
            number(self.kinetic_energy),
            gates_cell(&self.gates),
        ]);
        cells
    }

    /// The value `--sort column` orders by: a number where the column is one.
    fn sort_key(&self, column: &str, plan: &Plan) -> (Option<f64>, String) {
        let number = match column {
            "frames" => Some(self.frames as f64),
            "wall_s" => self.wall_seconds,
            "max_strain" => self.max_edge_strain,
            "max_penetration" => self.max_penetration,
            "self_intersections" => self.self_intersections.map(|n| n as f64),
            "kinetic_energy" => self.kinetic_energy,
            _ => None,
        };
        let text = match column {
            "state" => self.state.name().to_string(),
            "gates" => gates_cell(&self.gates),
            _ => match plan.variations.iter().position(|v| v.key == column) {
                Some(k) => self.set[k]
                    .split_once('=')
                    .map_or("", |(_, v)| v)
                    .to_string(),
                None => self.name.clone(),
            },
        };
        let number = number.or_else(|| text.parse::<f64>().ok().filter(|_| column != "task"));
        (number, text)
    }
}

/// `ok`, `broken: max_edge_strain` or empty (no gates).
fn gates_cell(gates: &[Value]) -> String {
    let broken: Vec<&str> = (gates.iter())
        .filter(|g| g["ok"] == false)
        .filter_map(|g| g["name"].as_str())
        .collect();
    match (gates.is_empty(), broken.is_empty()) {
        (true, _) => String::new(),
        (false, true) => "ok".into(),
        (false, false) => format!("broken: {}", broken.join(" ")),
    }
}

/// The header: `task`, each variation's key, then the other [`COLUMNS`].
pub fn header(plan: &Plan) -> Vec<String> {
    let mut header = vec!["task".to_string()];
    header.extend(plan.variations.iter().map(|v| v.key.clone()));
    header.extend(COLUMNS[1..].iter().map(|c| c.to_string()));
    header
}

/// Sorts `rows` by `column` (a [`COLUMNS`] name or a varied key), ascending; a leading `-`
/// sorts descending. Rows without a value go last; ties keep task order.
pub fn sort(rows: &mut [Row], column: &str, plan: &Plan) -> Result<()> {
    let (descending, column) = match column.strip_prefix('-') {
        Some(c) => (true, c),
        None => (false, column),
    };
    let known = COLUMNS.contains(&column) || plan.variations.iter().any(|v| v.key == column);
    if !known {
        bail!(
            "--sort {}: not a column (one of {}, or a varied key: {})",
            crate::quote::quoted(column),
            COLUMNS.join(", "),
            (plan.variations.iter().map(|v| v.key.as_str()))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    rows.sort_by(|a, b| {
        let (a, b) = (a.sort_key(column, plan), b.sort_key(column, plan));
        let order = match (a.0, b.0) {
            (Some(x), Some(y)) => x.total_cmp(&y),
            (Some(_), None) => return std::cmp::Ordering::Less,
            (None, Some(_)) => return std::cmp::Ordering::Greater,
            (None, None) => a.1.cmp(&b.1),
        };
        if descending {
            order.reverse()
        } else {
            order
        }
    });
    Ok(())
}

/// The table as aligned text (one line per task).
pub fn text(header: &[String], rows: &[Row]) -> String {
    let cells: Vec<Vec<String>> = rows.iter().map(Row::cells).collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|k| {
            let column = cells.iter().map(|r| r[k].chars().count());
            column.chain([header[k].chars().count()]).max().unwrap_or(0)
        })
        .collect();
    let line = |row: &[String]| {
        let padded: Vec<String> = (row.iter().zip(&widths))
            .map(|(c, &w)| format!("{c:<w$}"))
            .collect();
        padded.join("  ").trim_end().to_string() + "\n"
    };
    let mut out = line(header);
    for row in &cells {
        out += &line(row);
    }
    out
}

/// The table as CSV (RFC 4180: fields with a comma, quote or newline are quoted).
pub fn csv(header: &[String], rows: &[Row]) -> String {
    let field = |c: &String| {
        if c.contains([',', '"', '\n']) {
            format!("\"{}\"", c.replace('"', "\"\""))
        } else {
            c.clone()
        }
    };
    let line = |row: &[String]| row.iter().map(field).collect::<Vec<_>>().join(",") + "\n";
    let mut out = line(header);
    for row in rows {
        out += &line(&row.cells());
    }
    out
}
