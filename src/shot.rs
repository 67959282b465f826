//! One `run`: a shot driven from start to finish. [`Shot::start`] prepares the output
//! directory, the solver (restored from a checkpoint with `--resume`), the stats log and the
//! writer thread ([`start`]); [`Shot::step_frames`] runs the frame loop (checkpoints, signals,
//! progress); [`Shot::finish`] writes the summary record and maps the ending to its exit code.
//! Progress output lives in this module and in `app.rs` only.

mod start;

use crate::app::{Failure, Outcome, Prepared};
use crate::cli::RunArgs;
use crate::signals::{Stop, StopRequests};
use anyhow::anyhow;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use xpbd_sim::gates::{GateResult, GateTracker};
use xpbd_sim::mesh::fluid_surface::{reconstruct_all, FluidSurfaceMesh};
use xpbd_sim::model::{kind_counts, Model, ObjectLayout};
use xpbd_sim::output::checkpoint;
use xpbd_sim::output::lock::FolderLock;
use xpbd_sim::output::stats::{peak_memory_bytes, to_line};
use xpbd_sim::output::writer::BackgroundWriter;
use xpbd_sim::quote::shown_path;
use xpbd_sim::solver::diagnostics::{measure, FrameDiagnostics};
use xpbd_sim::solver::step::{Divergence, Solver};

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
    /// Every quality gate set, with its worst value over the frames written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    gates: Vec<GateResult>,
}

#[derive(Serialize)]
struct DivergenceRecord {
    frame: u64,
    substep: usize,
    object: String,
    vertex: usize,
    reason: String,
}

/// Simulates the prepared scene and writes its cache.
pub fn run(args: &RunArgs, prepared: Prepared) -> Result<Outcome, Failure> {
    let start = Instant::now();
    let mut shot = Shot::start(args, prepared, start)?;
    let ending = shot.step_frames();
    shot.finish(ending)
}

/// A run between its start and its summary.
pub struct Shot<'a> {
    args: &'a RunArgs,
    /// When `run` began (setup included).
    start: Instant,
    setup: Duration,
    out_dir: PathBuf,
    /// Held until the run ends: no other run writes into `out_dir` meanwhile.
    folder_lock: FolderLock,
    fingerprint: [u8; 32],
    frames: u64,
    start_frame: u64,
    fps: f64,
    checkpoint_every: u64,
    /// Whether the run writes frame files, so that a checkpoint has something to resume
    /// into. Without (`--no-output`, `formats = []`) it writes no checkpoints at all.
    resumable: bool,
    keep_checkpoints: bool,
    /// The first frame index (from 0) this run computes: after the checkpoint it resumed from.
    first_index: u64,
    solver: Solver,
    writer: BackgroundWriter,
    stop_requests: StopRequests,
    /// The quality gates' worst values over the frame records written (with `--resume`, also
    /// those the log keeps from before).
    gates: GateTracker,
}

/// How the frame loop ended.
#[derive(Default)]
pub struct Ending {
    /// Frames stepped (the first frame is not).
    simulated: u64,
    /// Time spent stepping and measuring.
    simulation: Duration,
    diverged: Option<(u64, Divergence)>,
    /// A stop signal and the last whole frame.
    stopped: Option<(Stop, u64)>,
    checkpoint_error: Option<anyhow::Error>,
    /// A frame whose record could not be encoded or whose fluid surface could not be
    /// reconstructed: the run stops without a summary, keeping the frames before it.
    frame_failed: Option<anyhow::Error>,
}

impl Shot<'_> {
    /// The frame loop: step, measure, hand the frame to the writer, checkpoint; stops at the
    /// last frame, a divergence, a stop signal or a failed write.
    pub fn step_frames(&mut self) -> Ending {
        let mut ending = Ending::default();
        let mut progress = Progress::new(self.frames, self.args.quiet);
        let mut sent_version = topology_version(&self.solver.model.objects);
        let every = if self.resumable {
            self.checkpoint_every
        } else {
            0
        };
        for index in self.first_index..self.frames {
            let frame = self.start_frame + index;
            if index > self.first_index {
                if let Some(signal) = self.stop_requests.requested() {
                    // The state is the end of the frame before: checkpoint it (when there
                    // are frame files to resume into) and stop.
                    if self.resumable {
                        if let Err(e) = self.write_checkpoint(frame - 1) {
                            ending.checkpoint_error = Some(e);
                        }
                    }
                    ending.stopped = Some((signal, frame - 1));
                    break;
                }
            }
            if self.folder_lock.still_in_place().is_err() {
                break; // the output folder was deleted: `finish` says so
            }
            let Some((line, surfaces)) = self.simulate_frame(index, &mut ending) else {
                break;
            };
            if self
                .submit_frame(frame, line, surfaces, &mut sent_version)
                .is_err()
            {
                break; // the writer stopped on an I/O error; `finish` tells which
            }
            progress.frame_done(index + 1);
            if every > 0 && (index + 1) % every == 0 && index + 1 < self.frames {
                if let Err(e) = self.write_checkpoint(frame) {
                    ending.checkpoint_error = Some(e);
                    break;
                }
            }
        }
        progress.finish();
        ending
    }

    /// The frame at `index` (from 0): stepped from the one before (index 0, the initial state,
    /// is not stepped), measured, its fluid surfaces reconstructed, its `frame` record encoded
    /// and shown to the gates. Returns the record's line and the surfaces; `None` when the loop
    /// must stop, with why in `ending`.
    fn simulate_frame(
        &mut self,
        index: u64,
        ending: &mut Ending,
    ) -> Option<(String, Vec<FluidSurfaceMesh>)> {
        let frame = self.start_frame + index;
        let solver = &mut self.solver;
        let frame_start = Instant::now();
        if index > 0 {
            if let Err(d) = solver.step_frame() {
                ending.diverged = Some((frame, d));
                return None;
            }
            ending.simulated += 1;
        }
        let mut diagnostics = measure(solver);
        let model = &solver.model;
        let (x, v) = (&model.particles.x, solver.output_velocities());
        let surfaces = (solver.pool()).install(|| reconstruct_all(&model.objects, x, v));
        let surfaces = match surfaces {
            Ok(surfaces) => surfaces,
            Err(e) => {
                let kept = format!(
                    "frames before it are complete in {}",
                    shown_path(&self.out_dir)
                );
                ending.frame_failed = Some(e.context(format!("frame {frame} ({kept})")));
                return None;
            }
        };
        diagnostics.count_surface_triangles(&model.objects, &surfaces);
        ending.simulation += frame_start.elapsed();
        let record = FrameRecord {
            kind: "frame",
            frame,
            time: index as f64 / self.fps,
            wall_ms: frame_start.elapsed().as_secs_f64() * 1e3,
            substeps: model.params.substeps,
            iterations: model.params.iterations,
            diagnostics: &diagnostics,
        };
        let line = match to_line(&record) {
            Ok(line) => line,
            Err(e) => {
                ending.frame_failed = Some(e);
                return None;
            }
        };
        self.gates.observe_line(&line);
        Some((line, surfaces))
    }

    /// Hands `frame` (its positions and velocities, record line and surfaces) to the writer
    /// thread. Fails when the writer has stopped on an I/O error.
    ///
    /// `sent_version` is the [`topology_version`] of the layouts the writer holds.
    fn submit_frame(
        &mut self,
        frame: u64,
        line: String,
        surfaces: Vec<FluidSurfaceMesh>,
        sent_version: &mut u64,
    ) -> anyhow::Result<()> {
        let model = &self.solver.model;
        // Tearing changes topology: hand the writer the new layouts when it has.
        let version = topology_version(&model.objects);
        let changed =
            (version != *sent_version && self.writer.writes_files()).then(|| model.objects.clone());
        *sent_version = version;
        self.writer.submit(
            frame,
            &model.particles.x,
            self.solver.output_velocities(),
            line,
            changed,
            surfaces,
        )
    }

    /// Writes a checkpoint of the solver's state: the end of `frame`.
    fn write_checkpoint(&self, frame: u64) -> anyhow::Result<()> {
        checkpoint::write(
            &self.out_dir,
            &self.fingerprint,
            frame,
            &self.solver.state_bytes(),
        )
    }

    /// Waits for the writer, writes the summary record and turns the ending into the result.
    pub fn finish(self, ending: Ending) -> Result<Outcome, Failure> {
        let Shot {
            args,
            start,
            setup,
            out_dir,
            start_frame,
            solver,
            writer,
            gates,
            keep_checkpoints,
            folder_lock,
            resumable,
            ..
        } = self;
        let Ending {
            simulated,
            simulation,
            diverged,
            stopped,
            checkpoint_error,
            frame_failed,
        } = ending;
        let waited = writer.waited;
        let report = writer.finish();
        // Checked after the writer is done: frames and stats in a deleted folder are lost,
        // whatever the writer managed (never exit 0 without them).
        folder_lock.still_in_place().map_err(Failure::Run)?;
        let write_error = report.error.as_ref().or(checkpoint_error.as_ref());
        if let Some(lost) = write_error.and_then(|e| folder_lock.lost_during_run(e)) {
            return Err(Failure::Run(lost));
        }
        if let Some(error) = frame_failed {
            return Err(Failure::Run(error));
        }
        let mut stats = report.stats;
        let written = report.frames_written;

        let model = &solver.model;
        let gate_results = gates.results();
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
                projections_per_substep(model) as f64
                    * model.params.substeps as f64
                    * simulated as f64,
                simulation,
            ),
            peak_memory_bytes: peak_memory_bytes(),
            gates: gate_results.clone(),
        };
        if let Some(error) = report.error.or(checkpoint_error) {
            let message = format!("{error:#} ({written} whole frames were written before it)");
            let _ = stats.write(&summary("io_error", Some(message.clone()), None));
            return Err(Failure::Run(anyhow!(message)));
        }
        if let Some((signal, frame)) = stopped {
            let message = if resumable {
                format!(
                    "stopped by {} after frame {frame}; a checkpoint is in {}: continue with \
                     `xpbd-sim run {} --resume` and the same output directory",
                    signal.name(),
                    shown_path(&checkpoint::directory(&out_dir)),
                    args.scene.display()
                )
            } else {
                format!(
                    "stopped by {} after frame {frame} (no checkpoint: the run writes no frame \
                     files, so there is nothing to resume)",
                    signal.name()
                )
            };
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
                shown_path(&out_dir)
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
        // Every frame is written: nothing is left to resume (a failed or stopped run returned
        // above and keeps them).
        if !keep_checkpoints {
            if let Err(e) = checkpoint::remove_all(&out_dir) {
                if !args.quiet {
                    say!("warning: the run is complete, but its checkpoints stay: {e:#}");
                }
            }
        }
        // Where the frames went: frame files, or only their records in the stats log.
        let frames_in = if resumable {
            shown_path(&out_dir)
        } else {
            format!("{} only", shown_path(&out_dir.join("stats.jsonl")))
        };
        if !args.quiet {
            let objects = model.objects.len();
            say!(
                "wrote {written} frames of {objects} object{} to {frames_in} in {:.2} s \
                 (simulation {:.2} s, writing {:.2} s on its own thread, {} threads)",
                if objects == 1 { "" } else { "s" },
                start.elapsed().as_secs_f64(),
                simulation.as_secs_f64(),
                report.busy.as_secs_f64(),
                solver.threads()
            );
        }
        let broken: Vec<&GateResult> = gate_results.iter().filter(|g| !g.ok).collect();
        if broken.is_empty() {
            return Ok(Outcome::Success);
        }
        // Printed even with --quiet: it is why the exit code is 3.
        say!(
            "error: the cache breaks {} of {} quality gate{}; all {written} frames were written to {frames_in}",
            broken.len(),
            gate_results.len(),
            if gate_results.len() == 1 { "" } else { "s" },
        );
        for gate in broken {
            say!(
                "  {}: worst {} at frame {}, object `{}`; limit {} ({})",
                gate.name,
                gate.worst.unwrap_or(0.0),
                gate.frame.unwrap_or(0),
                gate.object.as_deref().unwrap_or(""),
                gate.limit,
                xpbd_sim::gates::Gate::named(gate.name).map_or("", |g| g.unit())
            );
        }
        Ok(Outcome::GatesBroken)
    }
}

/// The sum of the objects' topology versions: it changes whenever tearing changes a layout.
fn topology_version(objects: &[ObjectLayout]) -> u64 {
    objects.iter().map(|o| o.topology_version).sum()
}

fn rate(count: f64, elapsed: Duration) -> f64 {
    let seconds = elapsed.as_secs_f64();
    if seconds > 0.0 {
        count / seconds
    } else {
        0.0
    }
}

/// Constraint projections in one substep, as the solver makes them: per iteration the coloured
/// kinds twice (the symmetric sweep, forward and back), shape-matching clusters three times
/// (before and after contacts, and last), the other kinds once.
fn projections_per_substep(model: &Model) -> usize {
    let per_iteration: usize = kind_counts(model)
        .iter()
        .map(|&(kind, n)| match kind {
            "stretch" | "tets" | "bending" | "isometric_bending" | "rope_bending" => 2 * n,
            "shape_matching" => 3 * n,
            _ => n,
        })
        .sum();
    per_iteration * model.params.iterations
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
