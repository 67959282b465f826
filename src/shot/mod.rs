//! One `run`: a shot driven from start to finish. [`Shot::start`] prepares the output
//! directory, the solver (restored from a checkpoint with `--resume`), the stats log and the
//! writer thread ([`start`]); [`Shot::step_frames`] runs the frame loop (checkpoints, signals,
//! progress); [`Shot::finish`] writes the summary record and maps the ending to its exit code
//! ([`finish`]). Progress output lives in this module and in `app.rs` only.

mod finish;
mod start;

use crate::app::{Failure, Outcome, Prepared};
use crate::cli::RunArgs;
use crate::signals::{Stop, StopRequests};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use xpbd_sim::gates::GateTracker;
use xpbd_sim::mesh::fluid_surface::{reconstruct_all, FluidSurfaceMesh};
use xpbd_sim::model::ObjectLayout;
use xpbd_sim::output::checkpoint;
use xpbd_sim::output::lock::FolderLock;
use xpbd_sim::output::stats::to_line;
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
    /// Worker threads that simulated the frame (0 for the first frame, which is not
    /// simulated), and how long they waited for a core (Linux only).
    threads: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    core_wait_ms: Option<f64>,
    #[serde(flatten)]
    diagnostics: &'a FrameDiagnostics,
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
        let ran_on = solver.frame_threads();
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
            threads: ran_on.threads,
            core_wait_ms: ran_on.core_wait_ms,
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
}

/// The sum of the objects' topology versions: it changes whenever tearing changes a layout.
fn topology_version(objects: &[ObjectLayout]) -> u64 {
    objects.iter().map(|o| o.topology_version).sum()
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
