//! [`Shot::start`]: everything before the first frame, and the `run` and `resume` records it
//! opens the stats log with. With `--resume` the checkpoint is found and restored before
//! anything is written; the output directory is created and locked only after.

use super::Shot;
use crate::app::{Failure, Prepared};
use crate::cli::RunArgs;
use crate::signals::StopRequests;
use anyhow::{anyhow, Context};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};
use xpbd_sim::constraints::batch::SimdPath;
use xpbd_sim::gates::GateTracker;
use xpbd_sim::model::{kind_counts, Model, ObjectLayout};
use xpbd_sim::output::checkpoint;
use xpbd_sim::output::clobber::refuse_writing_over_inputs;
use xpbd_sim::output::durable::check_writable;
use xpbd_sim::output::frame::{FrameOptions, FrameWriter};
use xpbd_sim::output::lock::{FolderLock, LockError};
use xpbd_sim::output::preview::PreviewShot;
use xpbd_sim::output::stage::StageOptions;
use xpbd_sim::output::stats::{rfc3339_utc, StatsLog};
use xpbd_sim::output::writer::BackgroundWriter;
use xpbd_sim::quote::shown_path;
use xpbd_sim::scene::load::LoadedScene;
use xpbd_sim::scene::types::SceneFile;
use xpbd_sim::solver::step::Solver;

#[derive(Serialize)]
struct RunRecord<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    version: &'static str,
    scene: String,
    /// The scene file's absolute path (`xpbd-sim preview DIR` rebuilds the scene from it
    /// wherever it is run).
    scene_absolute: String,
    scene_sha256: &'a str,
    output_dir: String,
    settings: &'a SceneFile,
    threads: usize,
    /// The SIMD path of the constraint batches (`SimdPath::name`); the same bits on any.
    simd: &'static str,
    particles: usize,
    objects: Vec<ObjectCount>,
    constraints: BTreeMap<&'static str, usize>,
    start_time: String,
    /// The process writing the cache (named when another run is refused the folder).
    pid: u32,
}

/// The record a resumed run appends after the kept records of the interrupted one.
#[derive(Serialize)]
struct ResumeRecord {
    #[serde(rename = "type")]
    kind: &'static str,
    checkpoint: String,
    /// The last frame the checkpoint holds; the run continues with the next.
    after_frame: u64,
    /// Newer checkpoints passed over as damaged, each with why.
    damaged_checkpoints: Vec<String>,
    threads: usize,
    /// As in [`RunRecord`].
    simd: &'static str,
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

/// What the `run` record says of the model, counted before the solver takes the model over.
struct ModelCounts {
    particles: usize,
    objects: Vec<ObjectCount>,
    constraints: BTreeMap<&'static str, usize>,
}

impl ModelCounts {
    fn of(model: &Model) -> Self {
        let constraints = kind_counts(model).into_iter().collect();
        let objects = (model.objects.iter())
            .map(|o| ObjectCount {
                name: o.name.clone(),
                particles: o.particles.len(),
                written_nodes: (!o.topology.tets.is_empty())
                    .then(|| xpbd_sim::output::surface::Surface::new(o, None).source),
            })
            .collect();
        ModelCounts {
            particles: model.particles.len(),
            objects,
            constraints,
        }
    }
}

/// The checkpoint a `--resume` run continues from, restored into the solver.
struct Resumed {
    path: PathBuf,
    /// The last frame the checkpoint holds; the run continues with the next.
    frame: u64,
    /// Newer checkpoints passed over as damaged, each with why.
    damaged: Vec<String>,
}

impl<'a> Shot<'a> {
    /// Everything before the first frame: output directory, solver (restored with `--resume`),
    /// stats log with its `run` or `resume` record, signal handlers, writer thread.
    pub fn start(args: &'a RunArgs, prepared: Prepared, start: Instant) -> Result<Self, Failure> {
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
        let threads = solver_threads(file.simulation.threads as usize, args.quiet);

        let stage = StageOptions::for_shot(&scene, &built.model);
        let files = FrameWriter::new(FrameOptions::for_scene(file, out_dir.clone(), stage));
        let settings_json = serde_json::to_value(file)
            .context("cannot encode the settings")
            .map_err(Failure::Run)?;
        let fingerprint = checkpoint::fingerprint(&settings_json, &scene.sha256);
        let start_frame = file.simulation.start_frame;
        let stats_path = out_dir.join(&file.output.stats);
        let model = built.model;
        refuse_writing_over_inputs(&scene, &out_dir).map_err(Failure::Input)?;
        let counts = ModelCounts::of(&model);
        let object_names = model.objects.iter().map(|o| o.name.clone()).collect();
        let mut gates = GateTracker::new(&file.gates, object_names);
        let mut solver = Solver::new(model, threads).map_err(Failure::Run)?;
        solver.adapt_threads(file.simulation.adapt_threads);
        let resumed = if args.resume {
            let objects = &solver.model.objects;
            let found =
                newest_resumable(&out_dir, file, &fingerprint, &files, objects, &stats_path)?;
            Some(restore_checkpoint(&mut solver, found, args.quiet)?)
        } else {
            None
        };

        let folder_lock = claim_output_dir(&out_dir, &file.output.stats)?;
        let start_time = now_rfc3339();
        let stats = match &resumed {
            Some(resumed) => {
                reopen_stats_log(&stats_path, resumed, &mut gates, threads, start_time)?
            }
            None => create_stats_log(&stats_path, &scene, &out_dir, threads, counts, start_time)?,
        };
        let stop_requests = StopRequests::install()
            .context("cannot install the signal handlers")
            .map_err(Failure::Run)?;

        let first_index = resumed.map_or(0, |resumed| resumed.frame + 1 - start_frame);
        let (writer, writes_files) =
            start_writer(files, stats, &mut solver, &scene, &out_dir, first_index)?;
        Ok(Shot {
            args,
            start,
            setup: start.elapsed(),
            out_dir,
            folder_lock,
            fingerprint,
            frames: file.simulation.frames,
            start_frame,
            fps: file.simulation.fps,
            checkpoint_every: file.output.checkpoint_every,
            resumable: writes_files,
            keep_checkpoints: file.output.keep_checkpoints,
            first_index,
            solver,
            writer,
            stop_requests,
            gates,
        })
    }
}

/// Now, as the `start_time` of the `run` and `resume` records (RFC 3339, UTC, to the second).
fn now_rfc3339() -> String {
    rfc3339_utc(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    )
}

/// The solver's thread count: `simulation.threads` (`requested`), or one per core for 0.
///
/// The solver's threads meet between every colour: more threads than cores only wait for
/// each other, so use at most one per core. The output is the same for any count.
fn solver_threads(requested: usize, quiet: bool) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    match requested {
        0 => cores,
        n if n > cores => {
            if !quiet {
                say!("warning: {n} threads asked for, {cores} cores here: using {cores} (the output is the same)");
            }
            cores
        }
        n => n,
    }
}

/// With `--resume`: the newest checkpoint to continue from whose frames are all done, checked
/// before anything is written; no such checkpoint is bad input.
///
/// A frame counts as done when its files are there and the stats log has its record
/// (written after the files): a kill between the two leaves the frame to be redone.
fn newest_resumable(
    out_dir: &Path,
    file: &SceneFile,
    fingerprint: &[u8; 32],
    files: &FrameWriter,
    objects: &[ObjectLayout],
    stats_path: &Path,
) -> Result<checkpoint::Usable, Failure> {
    let start_frame = file.simulation.start_frame;
    let recorded = StatsLog::recorded_frames(stats_path).map_err(Failure::Input)?;
    let spooled = files.spooled_frames(objects);
    let found = checkpoint::newest_usable(out_dir, fingerprint, |frame| {
        frame - start_frame < spooled
            && (start_frame..=frame)
                .all(|f| recorded.contains(&f) && files.frame_on_disk(objects, f))
    })
    .map_err(Failure::Input)?;
    found.ok_or_else(|| {
        Failure::Input(anyhow!(
            "nothing to resume in {}: no checkpoint whose frames are all done (checkpoints \
             are written every output.checkpoint_every = {} frames into {})",
            shown_path(out_dir),
            file.output.checkpoint_every,
            shown_path(&checkpoint::directory(out_dir))
        ))
    })
}

/// Puts the checkpoint's state back into the solver, after a warning for each newer
/// checkpoint passed over as damaged. A state that does not fit the scene is bad input.
fn restore_checkpoint(
    solver: &mut Solver,
    found: checkpoint::Usable,
    quiet: bool,
) -> Result<Resumed, Failure> {
    let checkpoint::Usable {
        path,
        frame,
        state,
        damaged,
    } = found;
    if !quiet {
        for why in &damaged {
            say!(
                "warning: {why}; resuming from the older {}",
                shown_path(&path)
            );
        }
    }
    solver
        .restore_state(&state)
        .with_context(|| format!("checkpoint {} does not fit this scene", shown_path(&path)))
        .map_err(Failure::Input)?;
    Ok(Resumed {
        path,
        frame,
        damaged,
    })
}

/// Creates the output directory, checks that files can be written in it and locks it for
/// this run: another run holding the lock is bad input, any other failure a failed run.
fn claim_output_dir(out_dir: &Path, stats_name: &str) -> Result<FolderLock, Failure> {
    std::fs::create_dir_all(out_dir)
        .with_context(|| format!("cannot create output directory {}", shown_path(out_dir)))
        .map_err(Failure::Run)?;
    check_writable(out_dir).map_err(Failure::Run)?;
    FolderLock::acquire(out_dir, stats_name).map_err(|e| match e {
        LockError::InUse(e) => Failure::Input(e),
        LockError::Io(e) => Failure::Run(e),
    })
}

/// With `--resume`: the interrupted run's stats log, keeping its `run` and `resume` records and
/// the `frame` records up to the checkpoint's frame, with a new `resume` record appended. The
/// gates are shown the records kept.
fn reopen_stats_log(
    stats_path: &Path,
    resumed: &Resumed,
    gates: &mut GateTracker,
    threads: usize,
    start_time: String,
) -> Result<StatsLog, Failure> {
    let mut stats = StatsLog::resume(stats_path, resumed.frame).map_err(Failure::Run)?;
    // The gates judge the frames kept from before by their records, as an
    // uninterrupted run judges them by the same lines.
    for record in StatsLog::read_records(stats_path).map_err(Failure::Run)? {
        gates.observe(&record);
    }
    let record = ResumeRecord {
        kind: "resume",
        checkpoint: resumed.path.display().to_string(),
        after_frame: resumed.frame,
        damaged_checkpoints: resumed.damaged.clone(),
        threads,
        simd: SimdPath::chosen().name(),
        start_time,
    };
    stats.write(&record).map_err(Failure::Run)?;
    Ok(stats)
}

/// A fresh stats log starting with the `run` record: the scene, its settings and the model.
fn create_stats_log(
    stats_path: &Path,
    scene: &LoadedScene,
    out_dir: &Path,
    threads: usize,
    counts: ModelCounts,
    start_time: String,
) -> Result<StatsLog, Failure> {
    let mut stats = StatsLog::create(stats_path).map_err(Failure::Run)?;
    let run_record = RunRecord {
        kind: "run",
        version: env!("CARGO_PKG_VERSION"),
        scene: scene.path.display().to_string(),
        scene_absolute: std::path::absolute(&scene.path)
            .unwrap_or_else(|_| scene.path.clone())
            .display()
            .to_string(),
        scene_sha256: &scene.sha256,
        output_dir: out_dir.display().to_string(),
        settings: &scene.file,
        threads,
        simd: SimdPath::chosen().name(),
        particles: counts.particles,
        objects: counts.objects,
        constraints: counts.constraints,
        start_time,
        pid: std::process::id(),
    };
    stats.write(&run_record).map_err(Failure::Run)?;
    Ok(stats)
}

/// Opens the whole-run frame files (keeping the `first_index` frames before a resumed run's
/// checkpoint) and the preview, then starts the writer thread with the stats log. Returns
/// the writer and whether the run writes frame files.
fn start_writer(
    mut files: FrameWriter,
    stats: StatsLog,
    solver: &mut Solver,
    scene: &LoadedScene,
    out_dir: &Path,
    first_index: u64,
) -> Result<(BackgroundWriter, bool), Failure> {
    files
        .open_run_files(&solver.model.objects, first_index)
        .map_err(Failure::Run)?;
    if let Some(preview) = &scene.file.output.preview {
        let shot = PreviewShot::new(scene, out_dir, preview, &files.options().stage);
        files.open_preview(&shot, &solver.model);
    }
    // The writer thread keeps its own copy of the layouts, needed only for frame files, and
    // only frame files read the frame's mean velocities.
    let writes_files = files.options().writes_files();
    solver.track_frame_motion(writes_files);
    let objects = if writes_files {
        solver.model.objects.clone()
    } else {
        Vec::new()
    };
    let writer = BackgroundWriter::start(files, stats, objects).map_err(Failure::Run)?;
    Ok((writer, writes_files))
}
