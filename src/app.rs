//! `run`, `check` and `diff`: scene → model → frame loop → files, with progress reporting,
//! the `diff` report, and the mapping of every outcome and failure to its exit code. Progress
//! output lives here only.

use crate::cli::{Command, RunArgs};
use crate::signals::StopRequests;
use anyhow::{anyhow, Context};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};
use xpbd_sim::diff::{compare_caches, DiffReport, Side};
use xpbd_sim::model::{kind_counts, Model};
use xpbd_sim::output::checkpoint;
use xpbd_sim::output::durable::check_writable;
use xpbd_sim::output::frame::{FrameOptions, FrameWriter};
use xpbd_sim::output::stats::{peak_memory_bytes, rfc3339_utc, to_line, StatsLog};
use xpbd_sim::output::writer::BackgroundWriter;
use xpbd_sim::scene::build::{build, human_bytes, Built};
use xpbd_sim::scene::load::{load, LoadedScene};
use xpbd_sim::scene::types::SceneFile;
use xpbd_sim::scene::validate::validate;
use xpbd_sim::solver::diagnostics::{measure, FrameDiagnostics};
use xpbd_sim::solver::step::Solver;

/// `eprintln!` that never panics: a closed stderr (`xpbd-sim run … 2>&1 | head -1`) must not
/// stop or crash a run.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// Why a command failed; decides the exit code (SPEC §1).
pub enum Failure {
    /// Bad command line or scene/mesh input: exit 2, nothing written.
    Input(anyhow::Error),
    /// Failed after it started (divergence, I/O): exit 1.
    Run(anyhow::Error),
    /// Stopped by a signal after writing a checkpoint: exit 128 + the signal number.
    Stopped(anyhow::Error, u8),
}

impl Failure {
    pub fn exit_code(&self) -> u8 {
        match self {
            Failure::Input(_) => 2,
            Failure::Run(_) => 1,
            Failure::Stopped(_, code) => *code,
        }
    }
    pub fn error(&self) -> &anyhow::Error {
        match self {
            Failure::Input(e) | Failure::Run(e) | Failure::Stopped(e, _) => e,
        }
    }
}

/// How a command that did not fail ended; decides the exit code (SPEC §1).
pub enum Outcome {
    /// Exit 0.
    Success,
    /// `diff` found the caches different and printed its report: exit 1, but not an error.
    CachesDiffer,
}

impl Outcome {
    pub fn exit_code(&self) -> u8 {
        match self {
            Outcome::Success => 0,
            Outcome::CachesDiffer => 1,
        }
    }
}

pub fn dispatch(command: Command) -> Result<Outcome, Failure> {
    match command {
        Command::Run(args) => run(&args).map(|()| Outcome::Success),
        Command::Check { scene } => check(&scene).map(|()| Outcome::Success),
        Command::Diff {
            a,
            b,
            tolerance,
            json,
        } => diff(&a, &b, tolerance, json),
    }
}

/// Compares two caches and prints the report (text or JSON) on standard output.
fn diff(dir_a: &Path, dir_b: &Path, tolerance: f64, json: bool) -> Result<Outcome, Failure> {
    let report = compare_caches(dir_a, dir_b, tolerance).map_err(Failure::Input)?;
    let text = if json {
        let mut text = serde_json::to_string_pretty(&report)
            .context("cannot encode the diff report")
            .map_err(Failure::Run)?;
        text.push('\n');
        text
    } else {
        diff_summary(&report)
    };
    use std::io::Write as _;
    // Ignores a closed pipe (`xpbd-sim diff … | head -1`): the exit code still tells.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    Ok(if report.equal {
        Outcome::Success
    } else {
        Outcome::CachesDiffer
    })
}

/// The text report: one line per finding, the verdict last.
fn diff_summary(report: &DiffReport) -> String {
    let mut lines = Vec::new();
    let files = |count: usize| format!("{count} file{}", if count == 1 { "" } else { "s" });
    let compared = format!("compared {}", files(report.files_compared));
    lines.push(match &report.worst {
        None => format!("{compared}: no vertex compared"),
        Some(worst) => {
            let place = match (&worst.object, worst.frame) {
                (Some(object), Some(frame)) => format!("frame {frame}, object {object}, "),
                _ => String::new(),
            };
            format!(
                "{compared}: worst distance {} m at {place}vertex {} ({})",
                worst.distance, worst.vertex, worst.file
            )
        }
    });
    if report.files_over_tolerance > 0 {
        lines.push(format!(
            "beyond {} m: {} of {}",
            report.tolerance,
            report.files_over_tolerance,
            files(report.files_compared)
        ));
    }
    for file in &report.only_in_a {
        lines.push(format!("only in A: {file}"));
    }
    for file in &report.only_in_b {
        lines.push(format!("only in B: {file}"));
    }
    for change in &report.topology_changes {
        lines.push(format!(
            "topology changed: {} ({})",
            change.file, change.reason
        ));
    }
    for file in &report.unreadable {
        let side = match file.side {
            Side::A => "A",
            Side::B => "B",
        };
        lines.push(format!(
            "unreadable in {side}: {} ({})",
            file.file, file.error
        ));
    }
    lines.push(if report.equal {
        format!("caches equal within {} m", report.tolerance)
    } else {
        "caches differ".to_string()
    });
    lines.join("\n") + "\n"
}

/// A scene read, validated and built into a model.
struct Prepared {
    scene: LoadedScene,
    built: Built,
    warnings: Vec<String>,
}

fn prepare(
    path: &Path,
    overrides: &[String],
    adjust: impl FnOnce(&mut SceneFile),
) -> Result<Prepared, Failure> {
    let mut scene = load(path, overrides).map_err(Failure::Input)?;
    adjust(&mut scene.file);
    let report = validate(&scene.file);
    if !report.errors.is_empty() {
        let list: Vec<String> = report.errors.iter().map(|e| format!("  {e}")).collect();
        return Err(Failure::Input(anyhow!(
            "invalid scene {}:\n{}",
            path.display(),
            list.join("\n")
        )));
    }
    let built = build(&scene)
        .with_context(|| format!("invalid scene {}", path.display()))
        .map_err(Failure::Input)?;
    let mut warnings = report.warnings;
    warnings.extend(built.warnings.iter().cloned());
    Ok(Prepared {
        scene,
        built,
        warnings,
    })
}

fn check(path: &Path) -> Result<(), Failure> {
    let Prepared {
        scene,
        built,
        warnings,
    } = prepare(path, &[], |_| {})?;
    use std::fmt::Write as _;
    // Written in one piece at the end, ignoring a closed pipe (`xpbd-sim check … | head`).
    let mut out = String::new();
    macro_rules! outln {
        ($out:expr, $($arg:tt)*) => {{
            let _ = writeln!($out, $($arg)*);
        }};
    }
    let model = &built.model;
    outln!(
        out,
        "scene {} (sha256 {})",
        scene.path.display(),
        scene.sha256
    );
    for object in &model.objects {
        let topology = &object.topology;
        let owns = |first_particle: u32| object.particles.contains(&(first_particle as usize));
        let in_block =
            |particles: &mut dyn Iterator<Item = u32>| particles.filter(|&p| owns(p)).count();
        let counts = [
            (
                "stretch",
                in_block(&mut model.stretch.items.iter().map(|c| c.particles[0])),
            ),
            (
                "tets",
                in_block(&mut model.tets.items.iter().map(|c| c.particles[0])),
            ),
            (
                "bending",
                in_block(&mut model.bending.items.iter().map(|c| c.particles[0])),
            ),
            (
                "isometric_bending",
                in_block(&mut model.isometric_bending.items.iter().map(|c| c.particles[0])),
            ),
            (
                "rope_bending",
                in_block(&mut model.rope_bending.items.iter().map(|c| c.particles[0])),
            ),
            (
                "volume",
                model
                    .volumes
                    .iter()
                    .filter(|v| v.particles == object.particles)
                    .count(),
            ),
            (
                "shape_matching",
                model
                    .shape_matching
                    .iter()
                    .filter(|c| c.particles == object.particles)
                    .count(),
            ),
            (
                "long_range",
                in_block(&mut model.long_range.items.iter().map(|c| c.particles[0])),
            ),
        ];
        let listed: Vec<String> = counts
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(kind, n)| format!("{kind} {n}"))
            .collect();
        outln!(
            out,
            "object {}: {} particles ({} pinned), {} faces ({} triangles), {} line segments{}",
            object.name,
            object.particles.len(),
            object.pinned,
            topology.face_count(),
            object.triangles.len(),
            topology.segments.len(),
            if object.collide { "" } else { ", collide off" }
        );
        outln!(
            out,
            "  constraints: {}",
            if listed.is_empty() {
                "none".to_string()
            } else {
                listed.join(", ")
            }
        );
    }
    for collider in &model.colliders {
        outln!(out, "collider {}: {collider}", collider.name);
    }
    for (kind, count) in kind_counts(model) {
        if count > 0 {
            outln!(out, "total {kind}: {count}");
        }
    }
    outln!(
        out,
        "constraint colours: stretch {}, tets {}, bending {}, isometric_bending {}, rope_bending {}, \
         long_range {} (volumes and shape matching are solved one object at a time)",
        model.stretch.colours.len(),
        model.tets.colours.len(),
        model.bending.colours.len(),
        model.isometric_bending.colours.len(),
        model.rope_bending.colours.len(),
        model.long_range.colours.len()
    );
    outln!(
        out,
        "memory estimate: {} for the solver state",
        human_bytes(model.memory_bytes() as u64)
    );
    if warnings.is_empty() {
        outln!(out, "warnings: none");
    } else {
        outln!(out, "warnings:");
        for warning in &warnings {
            outln!(out, "  {warning}");
        }
    }
    use std::io::Write as _;
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    Ok(())
}

#[derive(Serialize)]
struct RunRecord<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    version: &'static str,
    scene: String,
    scene_sha256: &'a str,
    output_dir: String,
    settings: &'a SceneFile,
    threads: usize,
    particles: usize,
    objects: Vec<ObjectCount>,
    constraints: std::collections::BTreeMap<&'static str, usize>,
    start_time: String,
}

/// The record a resumed run appends after the kept records of the interrupted one.
#[derive(Serialize)]
struct ResumeRecord {
    #[serde(rename = "type")]
    kind: &'static str,
    checkpoint: String,
    /// The last frame the checkpoint holds; the run continues with the next.
    after_frame: u64,
    threads: usize,
    start_time: String,
}

#[derive(Serialize)]
struct ObjectCount {
    name: String,
    particles: usize,
    /// Tetrahedral objects: the node each written vertex is (docs/output-format.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    written_nodes: Option<Vec<u32>>,
}

#[derive(Serialize)]
struct FrameRecord<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    frame: u64,
    time: f64,
    wall_ms: f64,
    substeps: usize,
    iterations: usize,
    #[serde(flatten)]
    diagnostics: &'a FrameDiagnostics,
}

#[derive(Serialize)]
struct WallSeconds {
    setup: f64,
    simulation: f64,
    /// Busy time of the writer thread; it overlaps `simulation`.
    writing: f64,
    /// Time the solver waited for the writer (the disk was slower than the solver).
    waiting_for_writer: f64,
    total: f64,
}

#[derive(Serialize)]
struct SummaryRecord {
    #[serde(rename = "type")]
    kind: &'static str,
    frames_written: u64,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    divergence: Option<DivergenceRecord>,
    wall_seconds: WallSeconds,
    particle_substeps_per_second: f64,
    constraint_projections_per_second: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    peak_memory_bytes: Option<u64>,
}

#[derive(Serialize)]
struct DivergenceRecord {
    frame: u64,
    substep: usize,
    object: String,
    vertex: usize,
    reason: String,
}

fn run(args: &RunArgs) -> Result<(), Failure> {
    let start = Instant::now();
    let prepared = prepare(&args.scene, &args.overrides, |file| {
        if let Some(frames) = args.frames {
            file.simulation.frames = frames;
        }
        if let Some(threads) = args.threads {
            file.simulation.threads = threads;
        }
        if !args.formats.is_empty() {
            file.output.formats = args.formats.clone();
        }
        if args.no_output {
            file.output.formats.clear();
        }
    })?;
    let Prepared {
        scene,
        built,
        warnings,
    } = prepared;
    if !args.quiet {
        for warning in &warnings {
            say!("warning: {warning}");
        }
    }
    let file = &scene.file;
    let out_dir = match &args.out {
        Some(dir) => dir.clone(),
        None => scene.base_dir.join(&file.output.dir),
    };
    // The solver's threads meet between every colour: more threads than cores only wait for
    // each other, so use at most one per core. The output is the same for any count.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = match file.simulation.threads as usize {
        0 => cores,
        n if n > cores => {
            if !args.quiet {
                say!("warning: {n} threads asked for, {cores} cores here: using {cores} (the output is the same)");
            }
            cores
        }
        n => n,
    };

    let files = FrameWriter::new(FrameOptions {
        dir: out_dir.clone(),
        formats: file.output.formats.clone(),
        name_template: file.output.name.clone(),
        normals: file.output.normals,
        velocities: file.output.velocities,
        up_axis: file.output.up_axis,
        rope_tube: file.output.rope_tube.clone(),
    });
    let settings_json = serde_json::to_value(file)
        .context("cannot encode the settings")
        .map_err(Failure::Run)?;
    let fingerprint = checkpoint::fingerprint(&settings_json, &scene.sha256);
    let frames = file.simulation.frames;
    let start_frame = file.simulation.start_frame;
    let stats_path = out_dir.join(&file.output.stats);
    let model = built.model;
    let constraint_counts = kind_counts(&model).into_iter().collect();
    let object_counts: Vec<ObjectCount> = model
        .objects
        .iter()
        .map(|o| ObjectCount {
            name: o.name.clone(),
            particles: o.particles.len(),
            written_nodes: (!o.topology.tets.is_empty())
                .then(|| xpbd_sim::output::surface::Surface::new(o, None).source),
        })
        .collect();
    let particle_count = model.particles.len();
    let mut solver = Solver::new(model, threads).map_err(Failure::Run)?;
    // With --resume: the checkpoint to continue from, checked before anything is written.
    // A frame counts as done when its files are there and the stats log has its record
    // (written after the files): a kill between the two leaves the frame to be redone.
    let resumed = if args.resume {
        let recorded = StatsLog::recorded_frames(&stats_path).map_err(Failure::Input)?;
        let found = checkpoint::newest_usable(&out_dir, &fingerprint, |frame| {
            (start_frame..=frame)
                .all(|f| recorded.contains(&f) && files.frame_on_disk(&solver.model.objects, f))
        })
        .map_err(Failure::Input)?;
        let Some((path, frame, state)) = found else {
            return Err(Failure::Input(anyhow!(
                "nothing to resume in {}: no checkpoint whose frames are all done (checkpoints \
                 are written every output.checkpoint_every = {} frames into {})",
                out_dir.display(),
                file.output.checkpoint_every,
                checkpoint::directory(&out_dir).display()
            )));
        };
        solver
            .restore_state(&state)
            .with_context(|| format!("checkpoint {} does not fit this scene", path.display()))
            .map_err(Failure::Input)?;
        Some((path, frame))
    } else {
        None
    };

    std::fs::create_dir_all(&out_dir)
        .with_context(|| format!("cannot create output directory {}", out_dir.display()))
        .map_err(Failure::Run)?;
    check_writable(&out_dir).map_err(Failure::Run)?;
    let start_time = rfc3339_utc(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    );
    let stats = match &resumed {
        Some((path, frame)) => {
            let mut stats = StatsLog::resume(&stats_path, *frame).map_err(Failure::Run)?;
            let record = ResumeRecord {
                kind: "resume",
                checkpoint: path.display().to_string(),
                after_frame: *frame,
                threads,
                start_time,
            };
            stats.write(&record).map_err(Failure::Run)?;
            stats
        }
        None => {
            let mut stats = StatsLog::create(&stats_path).map_err(Failure::Run)?;
            let run_record = RunRecord {
                kind: "run",
                version: env!("CARGO_PKG_VERSION"),
                scene: scene.path.display().to_string(),
                scene_sha256: &scene.sha256,
                output_dir: out_dir.display().to_string(),
                settings: file,
                threads,
                particles: particle_count,
                objects: object_counts,
                constraints: constraint_counts,
                start_time,
            };
            stats.write(&run_record).map_err(Failure::Run)?;
            stats
        }
    };
    let stop_requests = StopRequests::install()
        .context("cannot install the signal handlers")
        .map_err(Failure::Run)?;

    let objects = solver.model.objects.clone();
    let mut writer = BackgroundWriter::start(files, stats, objects).map_err(Failure::Run)?;
    let setup = start.elapsed();
    let mut simulation = Duration::ZERO;
    let first_index = resumed
        .as_ref()
        .map_or(0, |(_, frame)| frame + 1 - start_frame);
    let mut progress = Progress::new(frames, args.quiet);
    let mut simulated = 0u64;
    let mut diverged = None;
    let mut stopped = None;
    let mut checkpoint_error = None;
    let mut sent_version: u64 = solver
        .model
        .objects
        .iter()
        .map(|o| o.topology_version)
        .sum();
    let every = file.output.checkpoint_every;
    for index in first_index..frames {
        let frame = start_frame + index;
        if index > first_index {
            if let Some(signal) = stop_requests.requested() {
                // The state is the end of the frame before: checkpoint it and stop.
                if let Err(e) =
                    checkpoint::write(&out_dir, &fingerprint, frame - 1, &solver.state_bytes())
                {
                    checkpoint_error = Some(e);
                }
                stopped = Some((signal, frame - 1));
                break;
            }
        }
        let frame_start = Instant::now();
        if index > 0 {
            if let Err(d) = solver.step_frame() {
                diverged = Some((frame, d));
                break;
            }
            simulated += 1;
        }
        let diagnostics = measure(&solver);
        simulation += frame_start.elapsed();
        let record = FrameRecord {
            kind: "frame",
            frame,
            time: index as f64 / file.simulation.fps,
            wall_ms: frame_start.elapsed().as_secs_f64() * 1e3,
            substeps: solver.model.params.substeps,
            iterations: solver.model.params.iterations,
            diagnostics: &diagnostics,
        };
        let line = to_line(&record).map_err(Failure::Run)?;
        let model = &solver.model;
        // Tearing changes topology: hand the writer the new layouts when it has.
        let version: u64 = model.objects.iter().map(|o| o.topology_version).sum();
        let changed = (version != sent_version).then(|| model.objects.clone());
        sent_version = version;
        let particles = &model.particles;
        if writer
            .submit(frame, &particles.x, &particles.v, line, changed)
            .is_err()
        {
            break; // the writer stopped on an I/O error; `finish` tells which
        }
        progress.frame_done(index + 1);
        if every > 0 && (index + 1) % every == 0 && index + 1 < frames {
            if let Err(e) = checkpoint::write(&out_dir, &fingerprint, frame, &solver.state_bytes())
            {
                checkpoint_error = Some(e);
                break;
            }
        }
    }
    progress.finish();
    let waited = writer.waited;
    let report = writer.finish();
    let mut stats = report.stats;
    let written = report.frames_written;

    let model = &solver.model;
    let summary = |status, message, divergence| SummaryRecord {
        kind: "summary",
        frames_written: written,
        status,
        message,
        divergence,
        wall_seconds: WallSeconds {
            setup: setup.as_secs_f64(),
            simulation: simulation.as_secs_f64(),
            writing: report.busy.as_secs_f64(),
            waiting_for_writer: waited.as_secs_f64(),
            total: start.elapsed().as_secs_f64(),
        },
        particle_substeps_per_second: rate(
            model.particles.len() as f64 * model.params.substeps as f64 * simulated as f64,
            simulation,
        ),
        constraint_projections_per_second: rate(
            projections_per_substep(model) as f64 * model.params.substeps as f64 * simulated as f64,
            simulation,
        ),
        peak_memory_bytes: peak_memory_bytes(),
    };
    if let Some(error) = report.error.or(checkpoint_error) {
        let message = format!("{error:#} ({written} whole frames were written before it)");
        let _ = stats.write(&summary("io_error", Some(message.clone()), None));
        return Err(Failure::Run(anyhow!(message)));
    }
    if let Some((signal, frame)) = stopped {
        let message = format!(
            "stopped by {} after frame {frame}; a checkpoint is in {}: continue with \
             `xpbd-sim run {} --resume` and the same output directory",
            signal.name(),
            checkpoint::directory(&out_dir).display(),
            args.scene.display()
        );
        let _ = stats.write(&summary("interrupted", Some(message.clone()), None));
        return Err(Failure::Stopped(anyhow!(message), signal.exit_code()));
    }
    if let Some((frame, d)) = diverged {
        let message = format!(
            "the simulation diverged at frame {frame}, substep {}: object `{}` vertex {}: {}; \
             frames {start_frame} to {} are complete in {}. Try more substeps, higher \
             compliance or a smaller time step",
            d.substep,
            d.object,
            d.vertex,
            d.reason,
            frame - 1,
            out_dir.display()
        );
        let record = DivergenceRecord {
            frame,
            substep: d.substep,
            object: d.object,
            vertex: d.vertex,
            reason: d.reason,
        };
        let _ = stats.write(&summary("diverged", Some(message.clone()), Some(record)));
        return Err(Failure::Run(anyhow!(message)));
    }
    stats
        .write(&summary("ok", None, None))
        .map_err(Failure::Run)?;
    if !args.quiet {
        let objects = model.objects.len();
        say!(
            "wrote {written} frames of {objects} object{} to {} in {:.2} s (simulation {:.2} s, \
             writing {:.2} s on its own thread, {} threads)",
            if objects == 1 { "" } else { "s" },
            out_dir.display(),
            start.elapsed().as_secs_f64(),
            simulation.as_secs_f64(),
            report.busy.as_secs_f64(),
            solver.threads()
        );
    }
    Ok(())
}

fn rate(count: f64, elapsed: Duration) -> f64 {
    let seconds = elapsed.as_secs_f64();
    if seconds > 0.0 {
        count / seconds
    } else {
        0.0
    }
}

/// Constraint projections in one substep: every constraint once per iteration.
fn projections_per_substep(model: &Model) -> usize {
    let constraints: usize = kind_counts(model).iter().map(|(_, n)| n).sum();
    constraints * model.params.iterations
}

/// A progress bar on a terminal; on a pipe (CI, render farm) one plain line at most every few
/// seconds and at the end; nothing with `--quiet`.
struct Progress {
    bar: Option<ProgressBar>,
    plain: bool,
    total: u64,
    start: Instant,
    last_line: Option<Instant>,
}

const PLAIN_INTERVAL: Duration = Duration::from_secs(2);

impl Progress {
    fn new(total: u64, quiet: bool) -> Self {
        let terminal = std::io::stderr().is_terminal();
        let bar = (!quiet && terminal).then(|| {
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template("{bar:40} {pos}/{len} frames  {per_sec}  ETA {eta}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar
        });
        Progress {
            bar,
            plain: !quiet && !terminal,
            total,
            start: Instant::now(),
            last_line: None,
        }
    }

    fn frame_done(&mut self, done: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(done);
        }
        if !self.plain {
            return;
        }
        let now = Instant::now();
        let due = self.last_line.is_none_or(|t| now - t >= PLAIN_INTERVAL) || done == self.total;
        if due {
            let elapsed = self.start.elapsed().as_secs_f64();
            let per_second = if elapsed > 0.0 {
                done as f64 / elapsed
            } else {
                0.0
            };
            let eta = if per_second > 0.0 {
                (self.total - done) as f64 / per_second
            } else {
                0.0
            };
            say!(
                "frame {done}/{} ({:.0}%), {per_second:.2} frames/s, ETA {eta:.0} s",
                self.total,
                100.0 * done as f64 / self.total as f64
            );
            self.last_line = Some(now);
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
