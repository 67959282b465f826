//! A wedge's plan: the `--vary KEY=V1,V2,...` variations, their cartesian product as tasks
//! with readable, stable names, and `DIR/wedge.json` that records them (docs/wedges.md).

use crate::output::durable::write_atomically;
use crate::quote::{quoted, shown_path};
use anyhow::{bail, ensure, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Most tasks one wedge may expand to: beyond it a typo (a value list pasted twice over) is
/// likelier than a real sweep, and each task is a folder and a process.
pub const MAX_TASKS: usize = 10_000;

/// The name of the plan file in a wedge's directory.
pub const PLAN_FILE: &str = "wedge.json";

/// Version of `wedge.json`'s layout.
const PLAN_FORMAT: u32 = 1;

/// One `--vary KEY=V1,V2,...`: a scene key and the values it takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Variation {
    pub key: String,
    pub values: Vec<String>,
}

/// One task: an ordinary `run` of the scene with these `--set` values into `DIR/<name>/`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    pub index: usize,
    pub name: String,
    /// `KEY=VALUE`, one per variation, in the order of the variations.
    pub set: Vec<String>,
}

/// `DIR/wedge.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub format: u32,
    /// The scene, as an absolute path, and the SHA-256 of its bytes.
    pub scene: PathBuf,
    pub scene_sha256: String,
    /// The scene's `output.stats`: the stats log's name in each task's folder.
    pub stats: String,
    /// `--set KEY=VALUE` given to every task, before its own.
    pub common: Vec<String>,
    pub variations: Vec<Variation>,
    pub tasks: Vec<Task>,
}

impl Variation {
    /// Parses `KEY=V1,V2,...`. Values are split at commas outside brackets and quotes, so an
    /// array value stays whole: `object.cloth.translate=[0,1,0],[0,2,0]` is two values.
    pub fn parse(argument: &str) -> Result<Variation> {
        let Some((key, list)) = argument.split_once('=') else {
            bail!("--vary {}: expected KEY=V1,V2,...", quoted(argument));
        };
        let key = key.trim();
        ensure!(
            !key.is_empty(),
            "--vary {}: the key is empty",
            quoted(argument)
        );
        let values = split_values(list);
        if let Some(k) = values.iter().position(|v| v.is_empty()) {
            bail!("--vary {}: value {} is empty", quoted(argument), k + 1);
        }
        for (k, value) in values.iter().enumerate() {
            ensure!(
                !values[..k].contains(value),
                "--vary {}: the value {} is listed twice",
                quoted(argument),
                quoted(value)
            );
        }
        Ok(Variation {
            key: key.to_string(),
            values,
        })
    }
}

/// `list` split at the commas that are not inside `[...]`, `{...}` or a quoted string.
fn split_values(list: &str) -> Vec<String> {
    let mut values = Vec::new();
    let (mut depth, mut quote, mut current) = (0i32, None, String::new());
    for c in list.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '{') => depth += 1,
            (None, ']' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                values.push(current.trim().to_string());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    values.push(current.trim().to_string());
    values
}

/// The cartesian product of `variations` as tasks, the first variation slowest (as nested
/// loops in the order given), named `w<index>-<key>=<value>-...` ([`task_name`]).
pub fn expand(variations: &[Variation]) -> Result<Vec<Task>> {
    for (k, v) in variations.iter().enumerate() {
        ensure!(
            !variations[..k].iter().any(|w| w.key == v.key),
            "--vary {} is given twice",
            quoted(&v.key)
        );
    }
    let count = variations
        .iter()
        .try_fold(1usize, |n, v| n.checked_mul(v.values.len()))
        .filter(|&n| n <= MAX_TASKS);
    let Some(count) = count else {
        bail!("the variations make more than {MAX_TASKS} tasks");
    };
    let width = (count.saturating_sub(1)).to_string().len().max(3);
    let tasks = (0..count)
        .map(|index| {
            let mut rest = index;
            let mut set = vec![String::new(); variations.len()];
            for (k, v) in variations.iter().enumerate().rev() {
                set[k] = format!("{}={}", v.key, v.values[rest % v.values.len()]);
                rest /= v.values.len();
            }
            Task {
                index,
                name: task_name(index, width, &set),
                set,
            }
        })
        .collect();
    Ok(tasks)
}

/// `w003-bending.compliance=10-friction=0.4`: the index (so names sort in task order and stay
/// unique), then each `KEY=VALUE` with the key cut to its last two parts. Characters other
/// than letters, digits, `.`, `=`, `+` and `-` become `_`, and a name is cut to 120
/// characters: a folder name on every file system and farm.
pub fn task_name(index: usize, width: usize, set: &[String]) -> String {
    let mut name = format!("w{index:0width$}");
    for pair in set {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let parts: Vec<&str> = key.split('.').collect();
        let short = parts[parts.len().saturating_sub(2)..].join(".");
        name.push('-');
        name.push_str(&sanitise(&format!("{short}={value}")));
    }
    name.chars().take(120).collect()
}

fn sanitise(text: &str) -> String {
    let keep = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '=' | '+' | '-');
    text.chars()
        .map(|c| if keep(c) { c } else { '_' })
        .collect()
}

impl Plan {
    /// The plan of `scene` (absolute) with `common` `--set` values and `variations`.
    pub fn new(
        (scene, scene_sha256): (PathBuf, String),
        stats: String,
        common: Vec<String>,
        variations: Vec<Variation>,
    ) -> Result<Plan> {
        let tasks = expand(&variations)?;
        Ok(Plan {
            format: PLAN_FORMAT,
            scene,
            scene_sha256,
            stats,
            common,
            variations,
            tasks,
        })
    }

    /// Every `--set KEY=VALUE` of `task`: the common ones, then its own.
    pub fn task_set(&self, task: &Task) -> Vec<String> {
        self.common.iter().chain(&task.set).cloned().collect()
    }

    /// Reads `DIR/wedge.json`.
    pub fn read(dir: &Path) -> Result<Plan> {
        let path = dir.join(PLAN_FILE);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}: not a wedge directory", shown_path(&path)))?;
        let plan: Plan = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a wedge plan", shown_path(&path)))?;
        ensure!(
            plan.format == PLAN_FORMAT,
            "{} has layout {}, this xpbd-sim reads {PLAN_FORMAT}",
            shown_path(&path),
            plan.format
        );
        Ok(plan)
    }

    /// Writes `DIR/wedge.json` (crash-safely), or checks that the one there is this plan: a
    /// wedge re-run into its directory resumes it; another wedge there is refused.
    pub fn write_or_match(&self, dir: &Path) -> Result<()> {
        let path = dir.join(PLAN_FILE);
        if path.exists() {
            let existing = Plan::read(dir)?;
            ensure!(
                existing.scene_sha256 == self.scene_sha256
                    && existing.variations == self.variations
                    && existing.common == self.common,
                "{} holds another wedge ({}): re-running a wedge needs the same scene bytes and \
                 the same --vary and --set values; choose another --out",
                shown_path(dir),
                if existing.scene_sha256 != self.scene_sha256 {
                    "its scene's bytes differ"
                } else {
                    "its --vary or --set values differ"
                }
            );
            return Ok(());
        }
        let mut text = serde_json::to_string_pretty(self)?;
        text.push('\n');
        write_atomically(&path, text.as_bytes())
    }

    /// The folder task `task` writes into.
    pub fn task_dir(&self, dir: &Path, task: &Task) -> PathBuf {
        dir.join(&task.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_split_at_top_level_commas_only() {
        let v = Variation::parse("object.cloth.translate=[0, 1,0],[0,2,0]").unwrap();
        assert_eq!(v.key, "object.cloth.translate");
        assert_eq!(v.values, ["[0, 1,0]", "[0,2,0]"]);
        let v = Variation::parse("output.name=\"a,b\",c").unwrap();
        assert_eq!(v.values, ["\"a,b\"", "c"]);
        assert!(Variation::parse("novalues").is_err());
        assert!(Variation::parse("=1,2").is_err());
        assert!(Variation::parse("k=1,,2").is_err());
        assert!(Variation::parse("k=1,1").is_err());
    }

    #[test]
    fn the_product_runs_the_first_variation_slowest_with_stable_names() {
        let vary = [
            Variation::parse("object.cloth.bending.compliance=1e-4,10").unwrap(),
            Variation::parse("collider.ground.friction=0.2,0.4,0.6").unwrap(),
        ];
        let tasks = expand(&vary).unwrap();
        assert_eq!(tasks.len(), 6);
        assert_eq!(
            tasks[4].set,
            [
                "object.cloth.bending.compliance=10",
                "collider.ground.friction=0.4"
            ]
        );
        assert_eq!(
            tasks[4].name,
            "w004-bending.compliance=10-ground.friction=0.4"
        );
        assert_eq!(
            tasks[0].name,
            "w000-bending.compliance=1e-4-ground.friction=0.2"
        );
        let odd = task_name(7, 3, &["output.name=\"a b/c\"".into()]);
        assert_eq!(odd, "w007-output.name=_a_b_c_");
    }

    #[test]
    fn twice_the_same_key_or_too_many_tasks_is_refused() {
        let k = Variation::parse("k=1,2").unwrap();
        assert!(expand(&[k.clone(), k]).is_err());
        let values: Vec<String> = (0..101).map(|v| v.to_string()).collect();
        let many = |key: &str| Variation {
            key: key.into(),
            values: values.clone(),
        };
        assert!(expand(&[many("a"), many("b")]).is_err());
        assert_eq!(expand(&[many("a")]).unwrap().len(), 101);
        assert_eq!(expand(&[many("a")]).unwrap()[100].name, "w100-a=100");
    }
}
