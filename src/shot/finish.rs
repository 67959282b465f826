//! [`Shot::finish`]: the end of a run, after its last frame. The writer is waited for, the
//! `summary` record written and the ending (complete, gates broken, failed write, stop signal,
//! divergence) turned into the command's result.

use super::{Ending, Shot};
use crate::app::{Failure, Outcome};
use crate::cli::RunArgs;
use crate::signals::Stop;
use anyhow::anyhow;
use serde::Serialize;
use std::path::Path;
use std::time::{Duration, Instant};
use xpbd_sim::gates::GateResult;
use xpbd_sim::model::{kind_counts, Model};
use xpbd_sim::output::checkpoint;
use xpbd_sim::output::stats::{peak_memory_bytes, StatsLog};
use xpbd_sim::quote::shown_path;
use xpbd_sim::solver::step::{Divergence, Solver};

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
    /// Frames simulated on fewer than the run's threads: while the cores were busy (other
    /// programs, or this run's writer thread), or because fewer measured faster.
    frames_on_fewer_threads: u64,
    /// Of those, the frames on fewer because fewer measured faster with the cores free.
    frames_on_fewer_threads_for_speed: u64,
    /// Of those, the frames that timed fewer with the cores free (to learn whether fewer
    /// run faster).
    frames_timing_fewer_threads: u64,
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

impl Shot<'_> {
    /// Waits for the writer, writes the summary record and turns the ending into the result.
    ///
    /// The precedence: a deleted folder or a failed frame ends the run without a summary; then
    /// a failed write, a stop signal and a divergence, each with its summary; else the run is
    /// complete.
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
        let totals = Totals {
            frames_written: written,
            simulated,
            solver: &solver,
            start,
            setup,
            simulation,
            writing: report.busy,
            waiting_for_writer: waited,
            gates: gates.results(),
        };
        if let Some(error) = report.error.or(checkpoint_error) {
            let message = format!("{error:#} ({written} whole frames were written before it)");
            let _ = stats.write(&totals.record("io_error", Some(message.clone()), None));
            return Err(Failure::Run(anyhow!(message)));
        }
        if let Some((signal, frame)) = stopped {
            let message = stop_message(signal, frame, resumable, &out_dir, &args.scene);
            let _ = stats.write(&totals.record("interrupted", Some(message.clone()), None));
            return Err(Failure::Stopped(anyhow!(message), signal.exit_code()));
        }
        if let Some((frame, divergence)) = diverged {
            let record = DivergenceRecord::new(frame, divergence);
            let message = record.message(start_frame, &out_dir);
            let _ = stats.write(&totals.record("diverged", Some(message.clone()), Some(record)));
            return Err(Failure::Run(anyhow!(message)));
        }
        complete(stats, &totals, args, &out_dir, resumable, keep_checkpoints)
    }
}

/// What a finished run did, as its summary record and closing line give it.
struct Totals<'s> {
    frames_written: u64,
    /// Frames stepped (the first frame is not).
    simulated: u64,
    solver: &'s Solver,
    /// When `run` began (setup included).
    start: Instant,
    setup: Duration,
    /// Time spent stepping and measuring.
    simulation: Duration,
    /// Busy time of the writer thread; it overlaps `simulation`.
    writing: Duration,
    waiting_for_writer: Duration,
    /// Every quality gate set, with its worst value over the frames written.
    gates: Vec<GateResult>,
}

impl Totals<'_> {
    /// The `summary` record with `status`; its total time and peak memory are taken now.
    fn record(
        &self,
        status: &'static str,
        message: Option<String>,
        divergence: Option<DivergenceRecord>,
    ) -> SummaryRecord {
        let (model, simulated) = (&self.solver.model, self.simulated);
        SummaryRecord {
            kind: "summary",
            frames_written: self.frames_written,
            status,
            message,
            divergence,
            wall_seconds: WallSeconds {
                setup: self.setup.as_secs_f64(),
                simulation: self.simulation.as_secs_f64(),
                writing: self.writing.as_secs_f64(),
                waiting_for_writer: self.waiting_for_writer.as_secs_f64(),
                total: self.start.elapsed().as_secs_f64(),
            },
            particle_substeps_per_second: rate(
                model.particles.len() as f64 * model.params.substeps as f64 * simulated as f64,
                self.simulation,
            ),
            constraint_projections_per_second: rate(
                projections_per_substep(model) as f64
                    * model.params.substeps as f64
                    * simulated as f64,
                self.simulation,
            ),
            frames_on_fewer_threads: self.solver.frames_on_fewer_threads(),
            frames_on_fewer_threads_for_speed: self.solver.frames_on_fewer_threads_for_speed(),
            frames_timing_fewer_threads: self.solver.frames_timing_fewer_threads(),
            peak_memory_bytes: peak_memory_bytes(),
            gates: self.gates.clone(),
        }
    }

    /// The closing line of a complete run: what went where, and how long it took.
    fn say_written(&self, frames_in: &str) {
        let (written, objects) = (self.frames_written, self.solver.model.objects.len());
        let solver = &self.solver;
        let fewer = fewer_threads_said(
            solver.frames_on_fewer_threads(),
            solver.frames_on_fewer_threads_for_speed(),
            solver.frames_timing_fewer_threads(),
        );
        say!(
            "wrote {written} frames of {objects} object{} to {frames_in} in {:.2} s \
             (simulation {:.2} s, writing {:.2} s on its own thread, {} threads{fewer})",
            if objects == 1 { "" } else { "s" },
            self.start.elapsed().as_secs_f64(),
            self.simulation.as_secs_f64(),
            self.writing.as_secs_f64(),
            self.solver.threads()
        );
    }

    /// Success, or [`Outcome::GatesBroken`] (exit 3) after listing the gates the cache breaks.
    fn gate_outcome(&self, frames_in: &str) -> Outcome {
        let (written, gate_results) = (self.frames_written, &self.gates);
        let broken: Vec<&GateResult> = gate_results.iter().filter(|g| !g.ok).collect();
        if broken.is_empty() {
            return Outcome::Success;
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
        Outcome::GatesBroken
    }
}

/// The end of a run that wrote every frame: its `ok` summary record, its checkpoints removed
/// (unless kept), the closing line, and the quality gates' verdict.
fn complete(
    mut stats: StatsLog,
    totals: &Totals,
    args: &RunArgs,
    out_dir: &Path,
    resumable: bool,
    keep_checkpoints: bool,
) -> Result<Outcome, Failure> {
    stats
        .write(&totals.record("ok", None, None))
        .map_err(Failure::Run)?;
    // Every frame is written: nothing is left to resume (a failed or stopped run ended in
    // `Shot::finish` and keeps them).
    if !keep_checkpoints {
        if let Err(e) = checkpoint::remove_all(out_dir) {
            if !args.quiet {
                say!("warning: the run is complete, but its checkpoints stay: {e:#}");
            }
        }
    }
    // Where the frames went: frame files, or only their records in the stats log.
    let frames_in = if resumable {
        shown_path(out_dir)
    } else {
        format!("{} only", shown_path(&out_dir.join("stats.jsonl")))
    };
    if !args.quiet {
        totals.say_written(&frames_in);
    }
    Ok(totals.gate_outcome(&frames_in))
}

/// The error of a run stopped by `signal` after `frame`: how to continue it, when its
/// checkpoint can be resumed (`resumable`).
fn stop_message(signal: Stop, frame: u64, resumable: bool, out_dir: &Path, scene: &Path) -> String {
    if resumable {
        format!(
            "stopped by {} after frame {frame}; a checkpoint is in {}: continue with \
             `xpbd-sim run {} --resume` and the same output directory",
            signal.name(),
            shown_path(&checkpoint::directory(out_dir)),
            scene.display()
        )
    } else {
        format!(
            "stopped by {} after frame {frame} (no checkpoint: the run writes no frame \
             files, so there is nothing to resume)",
            signal.name()
        )
    }
}

impl DivergenceRecord {
    fn new(frame: u64, divergence: Divergence) -> Self {
        DivergenceRecord {
            frame,
            substep: divergence.substep,
            object: divergence.object,
            vertex: divergence.vertex,
            reason: divergence.reason,
        }
    }

    /// The error of a run that diverged: where, which frames are complete, and what to try.
    fn message(&self, start_frame: u64, out_dir: &Path) -> String {
        format!(
            "the simulation diverged at frame {}, substep {}: object `{}` vertex {}: {}; \
             frames {start_frame} to {} are complete in {}. Try more substeps, higher \
             compliance or a smaller time step",
            self.frame,
            self.substep,
            self.object,
            self.vertex,
            self.reason,
            self.frame - 1,
            shown_path(out_dir)
        )
    }
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

/// The closing line's account of the `fewer` frames run on fewer threads, if any: while the
/// cores were busy, because fewer ran faster (`faster` of them), or to time fewer (`timing`).
fn fewer_threads_said(fewer: u64, faster: u64, timing: u64) -> String {
    let busy = fewer.saturating_sub(faster + timing);
    let parts: Vec<String> = [
        (busy, "while the cores were busy"),
        (faster, "because fewer ran faster"),
        (timing, "timing fewer"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, why)| format!("{n} {why}"))
    .collect();
    match parts.is_empty() {
        true => String::new(),
        false => format!(", frames on fewer: {}", parts.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::fewer_threads_said;

    #[test]
    fn the_closing_line_names_only_the_reasons_that_held_frames_on_fewer_threads() {
        assert_eq!(fewer_threads_said(0, 0, 0), "");
        assert_eq!(
            fewer_threads_said(7, 0, 0),
            ", frames on fewer: 7 while the cores were busy"
        );
        assert_eq!(
            fewer_threads_said(40, 34, 2),
            ", frames on fewer: 4 while the cores were busy, 34 because fewer ran faster, \
             2 timing fewer"
        );
        assert_eq!(
            fewer_threads_said(2, 0, 2),
            ", frames on fewer: 2 timing fewer"
        );
    }
}
