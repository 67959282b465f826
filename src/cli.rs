//! Command line (SPEC §1). Help text comes from these doc comments; no logic here.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use xpbd_sim::scene::types::Format;

/// Deterministic XPBD cloth, rope and soft-body simulator for batch caching.
///
/// Reads a TOML scene, simulates it frame by frame and writes one OBJ/PLY file per object per
/// frame plus a JSON Lines stats log. The same scene gives byte-identical files on every run.
///
/// Exit codes: 0 success, 1 the run failed after it started (diverged, disk error) or `diff`
/// found the caches different, 2 bad command line or invalid scene (nothing is written),
/// 3 every frame was written but the cache breaks a quality gate (`[gates]`, `--gate`).
#[derive(Debug, Parser)]
#[command(name = "xpbd-sim", version, about, long_about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Simulate a scene and write its cache (frame files + stats log).
    ///
    /// Example: xpbd-sim run scenes/flag.toml --frames 48 --format ply
    Run(RunArgs),
    /// Parse, validate and build a scene, then print what it holds: particles, triangles,
    /// constraints by kind, colliders, constraint colours, memory and warnings. Writes nothing.
    Check {
        /// The scene file (TOML).
        scene: PathBuf,
    },
    /// Compare two caches frame file by frame file: the worst vertex distance (frame, object,
    /// vertex), files on one side only, topology changes and unreadable files.
    ///
    /// Compares the *.obj and *.ply files with the same name in both directories (not
    /// sub-directories; the stats log and other files are ignored), vertex k against vertex k.
    ///
    /// Exit codes: 0 equal within the tolerance, 1 the caches differ, 2 bad command line.
    ///
    /// Example: xpbd-sim diff golden/ new/ --tolerance 1e-6
    Diff {
        /// The first cache directory (e.g. the golden one).
        #[arg(value_name = "DIR_A")]
        a: PathBuf,
        /// The second cache directory, compared with the first.
        #[arg(value_name = "DIR_B")]
        b: PathBuf,
        /// Largest distance between a vertex and its counterpart still counted as equal, in
        /// metres; 0 asks for identical positions.
        #[arg(
            long,
            value_name = "METRES",
            default_value_t = 0.0,
            allow_negative_numbers = true
        )]
        tolerance: f64,
        /// Print the report as JSON on standard output (schema in docs/diff.md).
        #[arg(long)]
        json: bool,
    },
    /// (Re)make the preview PNGs of a cache from its frame files: DIR/preview/<scene>.####.png,
    /// all objects and colliders shaded from one camera framing the shot. Needs the cache's
    /// OBJ or PLY frames and its scene (named in DIR/stats.jsonl, relative to where the run
    /// was started). The same cache gives the same PNG bytes.
    ///
    /// Example: xpbd-sim preview scenes/cache/skirt --every 12 --sheet
    Preview {
        /// The cache directory (holding stats.jsonl and the frame files).
        dir: PathBuf,
        /// A preview every N frames, from the first (default: the scene's output.preview,
        /// else every frame).
        #[arg(long, value_name = "N")]
        every: Option<u64>,
        /// Image size in pixels, 16 to 8192 a side (default: the scene's, else 640 360).
        #[arg(long, num_args = 2, value_names = ["W", "H"])]
        size: Option<Vec<u32>>,
        /// Also write a contact sheet of every preview made: DIR/preview/<scene>.sheet.png.
        #[arg(long)]
        sheet: bool,
    },
    /// Run one scene many times: the cartesian product of the --vary values, each task an
    /// ordinary `run` with those --set values into DIR/<task>/, described in DIR/wedge.json;
    /// here --jobs at a time, or on a Slurm farm as an array job with --submit slurm. Running
    /// the same wedge again resumes unfinished tasks and skips finished ones.
    ///
    /// Example: xpbd-sim wedge scenes/drape.toml --vary object.cloth.bending.compliance=1,50
    /// --vary collider.ball.friction=0.2,0.5 --out wedges/drape --jobs 2
    #[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
    Wedge(WedgeArgs),
}

#[derive(Debug, Args)]
pub struct WedgeArgs {
    #[command(subcommand)]
    pub action: Option<WedgeAction>,
    /// The scene file (TOML).
    #[arg(required = true)]
    pub scene: Option<PathBuf>,
    /// A scene key and the values it takes, `KEY=V1,V2,...` (keys as for --set; commas
    /// inside [..] or quotes do not split). Repeat for more keys: every combination is a task.
    #[arg(long = "vary", value_name = "KEY=V1,V2,...", required = true)]
    pub vary: Vec<String>,
    /// A --set given to every task (before the varied ones). Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// The wedge's directory (default: the scene's output.dir with `-wedge` appended).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Tasks run at once on this machine, the cores shared among them.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub jobs: usize,
    /// Submit the tasks to a farm instead of running them here.
    #[arg(long, value_enum, value_name = "FARM")]
    pub submit: Option<Farm>,
    /// The Slurm partition (default: the cluster's default).
    #[arg(long, value_name = "P", requires = "submit")]
    pub partition: Option<String>,
    /// Each task's time limit in Slurm's format (HH:MM:SS, D-HH…; default: the partition's).
    #[arg(long, value_name = "T", requires = "submit")]
    pub time: Option<String>,
    /// CPUs per task (each run's --threads).
    #[arg(long, value_name = "N", requires = "submit", default_value_t = 1)]
    pub cpus: u32,
    /// Check every task and write DIR/wedge.json (and with --submit DIR/wedge.sbatch), but
    /// run or submit nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, clap::ValueEnum)]
pub enum Farm {
    Slurm,
}

#[derive(Debug, Subcommand)]
pub enum WedgeAction {
    /// One row per task of the wedge in DIR: its values, state (pending, running, done,
    /// failed, gate broken), frames written, wall time, largest edge strain and penetration,
    /// self-intersections, last kinetic energy and gates.
    Status {
        /// The wedge's directory (holding wedge.json).
        dir: PathBuf,
        /// Print JSON (one object with every row) instead of a table.
        #[arg(long)]
        json: bool,
        /// Print CSV for spreadsheets instead of a table.
        #[arg(long, conflicts_with = "json")]
        csv: bool,
        /// Order the rows by a column (task, state, frames, wall_s, max_strain,
        /// max_penetration, self_intersections, kinetic_energy, gates, or a varied key);
        /// a leading `-` sorts descending.
        #[arg(long, value_name = "COLUMN", allow_hyphen_values = true)]
        sort: Option<String>,
        /// Also write DIR/contact_sheet.png: the last frame written of every task, in the
        /// table's order, each labelled with its task.
        #[arg(long)]
        sheet: bool,
    },
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The scene file (TOML). Relative paths inside it are relative to its folder.
    pub scene: PathBuf,
    /// Output directory (overrides `output.dir`; relative to the current directory).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Number of frames to write (overrides `simulation.frames`).
    #[arg(long, value_name = "N")]
    pub frames: Option<u64>,
    /// Worker threads; 0 = every core (overrides `simulation.threads`). Output never depends
    /// on it.
    #[arg(long, value_name = "N")]
    pub threads: Option<u64>,
    /// Output format: obj, ply (a file per object per frame), mdd, pc2 (a point cache per
    /// object for the whole run), usd, usda (one USD stage for the whole run); repeat for
    /// several (overrides `output.formats`).
    #[arg(long = "format", value_name = "FORMAT", value_enum)]
    pub formats: Vec<Format>,
    /// Override any scene key by its dotted path, e.g. `simulation.substeps=40` or
    /// `object.cloth.bending.compliance=1e-4` (objects and colliders by name). Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Set a quality gate, over the scene's `[gates]`: max_edge_strain (fraction),
    /// max_penetration (m), self_intersections (crossing triangle pairs per object),
    /// max_speed (m/s), max_volume_change (fraction) or max_density_error (fraction, fluids), e.g. `max_edge_strain=0.05`.
    /// Repeatable. A cache that breaks a gate is still written whole; the run then prints
    /// each broken gate and exits with code 3.
    #[arg(long = "gate", value_name = "KEY=VALUE")]
    pub gates: Vec<String>,
    /// Continue an interrupted run from its newest checkpoint whose frames are all on disk
    /// (same scene, same settings, same output directory; any --threads). The finished
    /// cache is byte-identical to an uninterrupted run's.
    #[arg(long)]
    pub resume: bool,
    /// Keep the `checkpoints/` folder in the output directory after a successful run
    /// (sets `output.keep_checkpoints`); by default it is removed once every frame is written.
    #[arg(long)]
    pub keep_checkpoints: bool,
    /// Print errors only (no progress, no warnings, no summary).
    #[arg(long)]
    pub quiet: bool,
    /// Simulate and write only the stats log (for benchmarking): no frame files and no
    /// checkpoints, since there is nothing to resume into. Refused together with `--format`,
    /// which it would silently override, `--resume` and `--keep-checkpoints`.
    #[arg(long, conflicts_with_all = ["formats", "resume", "keep_checkpoints"])]
    pub no_output: bool,
}
