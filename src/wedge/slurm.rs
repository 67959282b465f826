//! `--submit slurm`: the wedge as one Slurm array job, `DIR/wedge.sbatch` (docs/wedges.md).
//!
//! Array index `k` runs task `k` as an ordinary `xpbd-sim run` of the scene with its `--set`
//! values into `DIR/<task>/`, with `--resume` once the task has a checkpoint: a task requeued
//! after preemption or `scancel` continues from it. Slurm stops a task with SIGTERM, which a
//! run answers by writing a checkpoint at the next frame boundary; `--signal` asks for it a
//! minute before the time limit. Logs go to `DIR/logs/<task index>.out`, appended across
//! requeues.

use super::plan::{Plan, Task, PLAN_FILE};
use std::path::Path;

/// The batch script's name in the wedge's directory.
pub const SLURM_SCRIPT: &str = "wedge.sbatch";

/// What the array job asks of the farm.
#[derive(Debug, Clone, PartialEq)]
pub struct SlurmOptions {
    pub partition: Option<String>,
    /// `--time`, Slurm's format (`MM`, `HH:MM:SS`, `D-HH`…).
    pub time: Option<String>,
    /// CPUs per task; the run's `--threads`.
    pub cpus: u32,
}

/// `text` quoted for a POSIX shell: `'…'` with every `'` as `'\''`.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// Task `task`'s `--set` arguments, each value quoted for a POSIX shell:
/// `--set 'KEY=VALUE' --set …`.
pub fn set_arguments(plan: &Plan, task: &Task) -> String {
    let sets: Vec<String> = (plan.task_set(task).iter())
        .map(|pair| format!("--set {}", shell_quote(pair)))
        .collect();
    sets.join(" ")
}

/// The batch script for `plan`, whose directory is `dir` (absolute), running the binary
/// `exe` (absolute).
pub fn script(plan: &Plan, dir: &Path, exe: &Path, options: &SlurmOptions) -> String {
    let q = |p: &Path| shell_quote(&p.to_string_lossy());
    let stem = (plan.scene.file_stem()).map_or("scene".into(), |s| s.to_string_lossy());
    let mut s = String::from("#!/bin/bash\n");
    s += &format!(
        "# xpbd-sim wedge of {}: {} tasks ({}).\n",
        plan.scene.display(),
        plan.tasks.len(),
        dir.join(PLAN_FILE).display()
    );
    s += &format!(
        "#SBATCH --job-name={}\n",
        sanitise_job_name(&format!("wedge-{stem}"))
    );
    s += &format!("#SBATCH --array=0-{}\n", plan.tasks.len().saturating_sub(1));
    s += &format!("#SBATCH --cpus-per-task={}\n", options.cpus.max(1));
    if let Some(time) = &options.time {
        s += &format!("#SBATCH --time={time}\n");
    }
    if let Some(partition) = &options.partition {
        s += &format!("#SBATCH --partition={partition}\n");
    }
    s += &format!(
        "#SBATCH --output={}\n",
        dir.join("logs").join("%a.out").display()
    );
    s += "#SBATCH --open-mode=append\n#SBATCH --requeue\n#SBATCH --signal=B:TERM@60\n";
    s += "set -u\n";
    s += "case \"$SLURM_ARRAY_TASK_ID\" in\n";
    for task in &plan.tasks {
        s += &format!(
            "  {}) task={}; sets=({}) ;;\n",
            task.index,
            shell_quote(&task.name),
            set_arguments(plan, task)
        );
    }
    s += "  *) echo \"no task $SLURM_ARRAY_TASK_ID in this wedge\" >&2; exit 2 ;;\nesac\n";
    s += &format!("out={}/\"$task\"\n", q(dir));
    s += "resume=()\n";
    s += "if compgen -G \"$out/checkpoints/*.ckpt\" > /dev/null; then resume=(--resume); fi\n";
    s += &format!(
        "exec {} run {} --out \"$out\" \"${{sets[@]}}\" --threads \"${{SLURM_CPUS_PER_TASK:-1}}\" --quiet \"${{resume[@]}}\"\n",
        q(exe),
        q(&plan.scene)
    );
    s
}

fn sanitise_job_name(name: &str) -> String {
    let keep = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    name.chars()
        .map(|c| if keep(c) { c } else { '_' })
        .take(64)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wedge::plan::Variation;

    #[test]
    fn every_task_is_one_array_index_running_its_own_sets() {
        let vary = vec![Variation::parse("collider.ground.friction=0.2,0.4").unwrap()];
        let scene = ("/s/it's.toml".into(), "ab".into());
        let common = vec!["simulation.frames=4".to_string()];
        let plan = Plan::new(scene, "stats.jsonl".into(), common, vary).unwrap();
        let options = SlurmOptions {
            partition: Some("debug".into()),
            time: Some("01:00:00".into()),
            cpus: 4,
        };
        let text = script(&plan, Path::new("/w"), Path::new("/bin/xpbd-sim"), &options);
        assert!(text.contains("#SBATCH --array=0-1\n"), "{text}");
        assert!(text.contains("#SBATCH --cpus-per-task=4\n"));
        assert!(text.contains("#SBATCH --partition=debug\n#SBATCH --output=/w/logs/%a.out\n"));
        assert!(text.contains("  1) task='w001-ground.friction=0.4'; sets=(--set 'simulation.frames=4' --set 'collider.ground.friction=0.4') ;;"));
        assert!(text.contains("exec '/bin/xpbd-sim' run '/s/it'\\''s.toml' --out \"$out\""));
        assert!(text.contains("--resume"));
    }
}
