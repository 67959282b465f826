//! `xpbd-sim wedge`: validates every task of a wedge, writes `DIR/wedge.json`, then runs the
//! tasks here (`--jobs` child processes, each an ordinary `run`) or submits them to Slurm;
//! `wedge status` tabulates them (docs/wedges.md).

use crate::app::{prepare, Failure, Outcome};
use crate::cli::{Farm, WedgeAction, WedgeArgs};
use crate::signals::{Stop, StopRequests};
use anyhow::{anyhow, Context};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use std::collections::VecDeque;
use std::io::IsTerminal;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use xpbd_sim::output::preview;
use xpbd_sim::quote::shown_path;
use xpbd_sim::scene::load::load;
use xpbd_sim::wedge::plan::{Plan, Task, Variation, PLAN_FILE};
use xpbd_sim::wedge::slurm::{self, SlurmOptions, SLURM_SCRIPT};
use xpbd_sim::wedge::status::{self, State};

pub fn dispatch(args: &WedgeArgs) -> Result<Outcome, Failure> {
    match &args.action {
        Some(WedgeAction::Status {
            dir,
            json,
            csv,
            sort,
            sheet,
        }) => {
            let outcome = show_status(dir, (*json, *csv), sort.as_deref())?;
            if *sheet {
                contact_sheet(dir, sort.as_deref())?;
            }
            Ok(outcome)
        }
        None => wedge(args),
    }
}

/// Plans, validates and runs or submits a wedge.
fn wedge(args: &WedgeArgs) -> Result<Outcome, Failure> {
    let scene = args
        .scene
        .as_deref()
        .ok_or_else(|| input("wedge needs a scene"))?;
    if args.jobs == 0 {
        return Err(input("--jobs must be at least 1"));
    }
    let variations = (args.vary.iter().map(|v| Variation::parse(v)))
        .collect::<anyhow::Result<Vec<_>>>()
        .map_err(Failure::Input)?;
    let loaded = load(scene, &args.overrides).map_err(Failure::Input)?;
    let absolute = std::fs::canonicalize(scene)
        .with_context(|| format!("cannot read scene {}", shown_path(scene)))
        .map_err(Failure::Input)?;
    let plan = Plan::new(
        (absolute, loaded.sha256.clone()),
        loaded.file.output.stats.clone(),
        args.overrides.clone(),
        variations,
    )
    .map_err(Failure::Input)?;
    // Every task's scene is checked as `run` would before anything is written.
    let mut frames = Vec::with_capacity(plan.tasks.len());
    for task in &plan.tasks {
        let prepared = prepare(scene, &plan.task_set(task), |_| {}).map_err(|f| {
            input(&format!(
                "task {} ({}): {:#}",
                task.name,
                task.set.join(" "),
                f.error()
            ))
        })?;
        frames.push(prepared.scene.file.simulation.frames);
    }
    let dir = match &args.out {
        Some(dir) => dir.clone(),
        None => {
            let output = loaded.file.output.dir.trim_end_matches('/');
            loaded.base_dir.join(format!("{output}-wedge"))
        }
    };
    refuse_writing_over_scene(&plan.scene, &dir)?;
    std::fs::create_dir_all(dir.join("logs"))
        .with_context(|| format!("cannot create the wedge directory {}", shown_path(&dir)))
        .map_err(Failure::Run)?;
    plan.write_or_match(&dir).map_err(Failure::Input)?;
    match args.submit {
        Some(Farm::Slurm) => submit_slurm(&plan, &dir, args),
        None if args.dry_run => {
            list_tasks(&plan, &dir);
            Ok(Outcome::Success)
        }
        None => run_here(&plan, &dir, &frames, args.jobs),
    }
}

/// Refuses a wedge whose directory holds its scene under the name of a file the wedge writes
/// there: a scene `DIR/wedge.sbatch` was replaced by the Slurm script.
fn refuse_writing_over_scene(scene: &Path, dir: &Path) -> Result<(), Failure> {
    let Ok(dir) = std::fs::canonicalize(dir) else {
        // Not created yet: the scene cannot be in it.
        return Ok(());
    };
    for name in [PLAN_FILE, SLURM_SCRIPT] {
        if dir.join(name) == scene {
            return Err(input(&format!(
                "the wedge writes {name} in {}, and that is the scene; choose another --out",
                shown_path(&dir)
            )));
        }
    }
    Ok(())
}

/// `--dry-run` without a farm: each task's `--set` values, as the wedge would run them.
fn list_tasks(plan: &Plan, dir: &Path) {
    println!(
        "wrote {} ({} tasks, none run):",
        shown_path(&dir.join(PLAN_FILE)),
        plan.tasks.len()
    );
    for task in &plan.tasks {
        println!("  {}: {}", task.name, slurm::set_arguments(plan, task));
    }
}

fn input(message: &str) -> Failure {
    Failure::Input(anyhow!("{message}"))
}

/// This binary, for the tasks' command lines.
fn this_program() -> Result<PathBuf, Failure> {
    std::env::current_exe()
        .context("cannot find the xpbd-sim program itself")
        .map_err(Failure::Run)
}

/// Writes `DIR/wedge.sbatch` and, unless `--dry-run`, submits it with `sbatch`.
fn submit_slurm(plan: &Plan, dir: &Path, args: &WedgeArgs) -> Result<Outcome, Failure> {
    let dir = std::fs::canonicalize(dir)
        .with_context(|| format!("cannot resolve {}", shown_path(dir)))
        .map_err(Failure::Run)?;
    let options = SlurmOptions {
        partition: args.partition.clone(),
        time: args.time.clone(),
        cpus: args.cpus,
    };
    let text = slurm::script(plan, &dir, &this_program()?, &options);
    let script = dir.join(SLURM_SCRIPT);
    xpbd_sim::output::durable::write_atomically(&script, text.as_bytes()).map_err(Failure::Run)?;
    if args.dry_run {
        println!(
            "wrote {} ({} tasks); submit it with: sbatch {}",
            shown_path(&script),
            plan.tasks.len(),
            shown_path(&script)
        );
        return Ok(Outcome::Success);
    }
    let output = Command::new("sbatch")
        .arg("--parsable")
        .arg(&script)
        .output()
        .with_context(|| {
            format!(
                "cannot run sbatch (is Slurm installed here?); the script is {}",
                shown_path(&script)
            )
        })
        .map_err(Failure::Run)?;
    if !output.status.success() {
        return Err(Failure::Run(anyhow!(
            "sbatch refused {}: {}",
            shown_path(&script),
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    // `--parsable` prints `<job id>` or `<job id>;<cluster>`.
    let stdout = String::from_utf8_lossy(&output.stdout);
    let job = stdout.trim().split(';').next().unwrap_or("").to_string();
    println!(
        "submitted job {job}: {} tasks of {}; `xpbd-sim wedge status {}` shows them",
        plan.tasks.len(),
        shown_path(&plan.scene),
        shown_path(&dir)
    );
    Ok(Outcome::Success)
}

/// A task running here.
struct Running<'a> {
    task: &'a Task,
    child: Child,
    resumed: bool,
    started: Instant,
    bar: Option<ProgressBar>,
}

/// Runs the unfinished tasks here, `jobs` at a time, each with its share of the cores.
fn run_here(plan: &Plan, dir: &Path, frames: &[u64], jobs: usize) -> Result<Outcome, Failure> {
    let program = this_program()?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = (cores / jobs).max(1);
    let stops = StopRequests::install().ok();
    let rows = status::rows(dir, plan);
    let mut queue: VecDeque<&Task> = VecDeque::new();
    for (task, row) in plan.tasks.iter().zip(&rows) {
        match row.state {
            State::Running => say!("{}: running elsewhere, left alone", task.name),
            state if state.finished() => say!("{}: {} already, skipped", task.name, state.name()),
            _ => queue.push_back(task),
        }
    }
    let bars = std::io::stderr().is_terminal().then(MultiProgress::new);
    let mut running: Vec<Running> = Vec::new();
    let mut stopped: Option<Stop> = None;
    loop {
        if let Some(stop) = stops
            .as_ref()
            .and_then(|s| s.requested())
            .filter(|_| stopped.is_none())
        {
            // The tasks run in their own process groups: each gets the signal once, from here.
            for r in &running {
                // SAFETY: kill(2) with the pid of a child not yet waited for (so not reused).
                unsafe { libc::kill(r.child.id() as libc::pid_t, stop_signal(stop)) };
            }
            stopped = Some(stop);
        }
        while stopped.is_none() && running.len() < jobs {
            let Some(task) = queue.pop_front() else { break };
            let mut started = start(&program, plan, dir, task, threads, true)?;
            started.bar = bars.as_ref().map(|b| task_bar(b, task, frames[task.index]));
            if started.bar.is_none() {
                say!(
                    "{}: started{}",
                    task.name,
                    if started.resumed { " (resuming)" } else { "" }
                );
            }
            running.push(started);
        }
        let mut k = 0;
        while k < running.len() {
            let status = running[k]
                .child
                .try_wait()
                .map_err(|e| Failure::Run(e.into()))?;
            let Some(status) = status else {
                update_bar(&running[k], plan, dir);
                k += 1;
                continue;
            };
            let done = running.swap_remove(k);
            // A resume that found no usable checkpoint (exit 2; the task's scene was checked
            // above) starts the task over.
            if done.resumed && status.code() == Some(2) && stopped.is_none() {
                let mut again = start(&program, plan, dir, done.task, threads, false)?;
                again.bar = done.bar;
                running.push(again);
                continue;
            }
            finish_line(&done, plan, dir);
        }
        if running.is_empty() && (queue.is_empty() || stopped.is_some()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    conclude(plan, dir, stopped)
}

fn stop_signal(stop: Stop) -> libc::c_int {
    match stop {
        Stop::Interrupt => libc::SIGINT,
        Stop::Terminate => libc::SIGTERM,
    }
}

/// Starts `task` as a child `run` (with `--resume` when `resume` and it has a checkpoint),
/// its output appended to `DIR/logs/<index>.out`.
fn start<'a>(
    program: &Path,
    plan: &Plan,
    dir: &Path,
    task: &'a Task,
    threads: usize,
    resume: bool,
) -> Result<Running<'a>, Failure> {
    let out = plan.task_dir(dir, task);
    let resumed = resume && has_checkpoint(&out);
    let log_path = dir.join("logs").join(format!("{}.out", task.index));
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("cannot open {}", shown_path(&log_path)))
        .map_err(Failure::Run)?;
    let err = log.try_clone().map_err(|e| Failure::Run(e.into()))?;
    let mut command = Command::new(program);
    command.arg("run").arg(&plan.scene).arg("--out").arg(&out);
    for pair in plan.task_set(task) {
        command.arg("--set").arg(pair);
    }
    command
        .arg("--threads")
        .arg(threads.to_string())
        .arg("--quiet");
    if resumed {
        command.arg("--resume");
    }
    let child = command
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err)
        .process_group(0)
        .spawn()
        .with_context(|| format!("cannot start task {}", task.name))
        .map_err(Failure::Run)?;
    Ok(Running {
        task,
        child,
        resumed,
        started: Instant::now(),
        bar: None,
    })
}

fn has_checkpoint(out: &Path) -> bool {
    let checkpoints = out.join("checkpoints");
    std::fs::read_dir(checkpoints).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "ckpt"))
    })
}

fn task_bar(bars: &MultiProgress, task: &Task, frames: u64) -> ProgressBar {
    let bar = bars.add(ProgressBar::new(frames));
    let style = ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} frames {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style.progress_chars("=> "));
    bar.set_prefix(task.name.clone());
    bar
}

/// Frames the task's stats log has a record of.
fn frames_written(plan: &Plan, dir: &Path, task: &Task) -> u64 {
    let path = plan.task_dir(dir, task).join(&plan.stats);
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.matches("\"type\":\"frame\"").count() as u64
}

fn update_bar(running: &Running, plan: &Plan, dir: &Path) {
    if let Some(bar) = &running.bar {
        bar.set_position(frames_written(plan, dir, running.task));
    }
}

/// Says how a task ended (on its bar, or as a line).
fn finish_line(done: &Running, plan: &Plan, dir: &Path) {
    let row = status::row(dir, plan, done.task);
    let line = format!(
        "{} ({} frames, {:.1} s)",
        row.state.name(),
        row.frames,
        done.started.elapsed().as_secs_f64()
    );
    match &done.bar {
        Some(bar) => {
            bar.set_position(row.frames);
            bar.finish_with_message(line);
        }
        None => say!("{}: {line}", done.task.name),
    }
}

/// The wedge's outcome from its tasks' states: a stop signal, then any failed task (exit 1),
/// then any broken gate (exit 3).
fn conclude(plan: &Plan, dir: &Path, stopped: Option<Stop>) -> Result<Outcome, Failure> {
    let rows = status::rows(dir, plan);
    let count = |state: State| rows.iter().filter(|r| r.state == state).count();
    let tally = format!(
        "wedge {}: {} done, {} gate broken, {} failed, {} pending of {} tasks",
        shown_path(dir),
        count(State::Done),
        count(State::GateBroken),
        count(State::Failed),
        count(State::Pending) + count(State::Running),
        rows.len()
    );
    if let Some(stop) = stopped {
        let message = format!(
            "{tally}; stopped by {}: run the same wedge again to resume",
            stop.name()
        );
        return Err(Failure::Stopped(anyhow!(message), stop.exit_code()));
    }
    say!("{tally}");
    if count(State::Failed) > 0 || count(State::Pending) > 0 {
        return Err(Failure::Run(anyhow!(
            "{tally}: see `xpbd-sim wedge status {}` and {}",
            shown_path(dir),
            shown_path(&dir.join("logs"))
        )));
    }
    if count(State::GateBroken) > 0 {
        return Ok(Outcome::GatesBroken);
    }
    Ok(Outcome::Success)
}

/// `wedge status DIR`: the table, JSON or CSV on standard output.
fn show_status(
    dir: &Path,
    (json, csv): (bool, bool),
    sort: Option<&str>,
) -> Result<Outcome, Failure> {
    let plan = Plan::read(dir).map_err(Failure::Input)?;
    let mut rows = status::rows(dir, &plan);
    if let Some(column) = sort {
        status::sort(&mut rows, column, &plan).map_err(Failure::Input)?;
    }
    let header = status::header(&plan);
    let text = if json {
        let value = serde_json::json!({
            "dir": dir,
            "scene": plan.scene,
            "variations": plan.variations,
            "tasks": rows,
        });
        serde_json::to_string_pretty(&value).map_err(|e| Failure::Run(e.into()))? + "\n"
    } else if csv {
        status::csv(&header, &rows)
    } else {
        status::text(&header, &rows)
    };
    use std::io::Write as _;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    Ok(Outcome::Success)
}

/// Size of one task's picture on the contact sheet.
const SHEET_TILE: [u32; 2] = [320, 180];

/// `wedge status DIR --sheet`: the last frame of every task that has one, in the table's
/// order, tiled into `DIR/contact_sheet.png`.
fn contact_sheet(dir: &Path, sort: Option<&str>) -> Result<(), Failure> {
    let plan = Plan::read(dir).map_err(Failure::Input)?;
    let mut rows = status::rows(dir, &plan);
    if let Some(column) = sort {
        status::sort(&mut rows, column, &plan).map_err(Failure::Input)?;
    }
    let mut images = Vec::new();
    for row in rows.iter().filter(|r| r.frames > 0) {
        let task = &plan.tasks[row.index];
        let label: String = task.name.chars().take(48).collect();
        let image = preview::last_frame(&plan.task_dir(dir, task), SHEET_TILE, &label)
            .with_context(|| format!("task {}", task.name))
            .map_err(Failure::Run)?;
        images.extend(image);
    }
    if images.is_empty() {
        return Err(input("no task has written a frame yet: no contact sheet"));
    }
    let columns = (images.len() as f64).sqrt().ceil() as u32;
    let sheet = xpbd_sim::preview::contact_sheet(&images, columns);
    let path = dir.join("contact_sheet.png");
    let png = xpbd_sim::preview::encode_png(&sheet);
    xpbd_sim::output::durable::write_atomically(&path, &png).map_err(Failure::Run)?;
    say!("contact sheet {}", shown_path(&path));
    Ok(())
}
