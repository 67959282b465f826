//! Command dispatch: `run` (the scene read and checked here, then driven by [`crate::shot`]),
//! `check` and `diff` with their reports, and the mapping of every outcome and failure to its
//! exit code.

use crate::cli::{Command, RunArgs};
use crate::shot;
use anyhow::{anyhow, Context};
use std::path::Path;
use xpbd_sim::diff::{compare_caches, DiffReport, Side};
use xpbd_sim::gates::limits;
use xpbd_sim::model::{kind_counts, Model, ObjectLayout};
use xpbd_sim::output::clobber::refuse_writing_over_inputs;
use xpbd_sim::quote::shown_path;
use xpbd_sim::scene::build::{build, Built};
use xpbd_sim::scene::load::{gate_override, load, LoadedScene};
use xpbd_sim::scene::memory_budget::human_bytes;
use xpbd_sim::scene::override_origin::name_overrides;
use xpbd_sim::scene::types::SceneFile;
use xpbd_sim::scene::validate::validate;

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
    /// `run` wrote every frame, but the cache breaks a quality gate (printed): exit 3.
    GatesBroken,
}

impl Outcome {
    pub fn exit_code(&self) -> u8 {
        match self {
            Outcome::Success => 0,
            Outcome::CachesDiffer => 1,
            Outcome::GatesBroken => 3,
        }
    }
}

pub fn dispatch(command: Command) -> Result<Outcome, Failure> {
    match command {
        Command::Run(args) => run(&args),
        Command::Check { scene } => check(&scene).map(|()| Outcome::Success),
        Command::Diff {
            a,
            b,
            tolerance,
            json,
        } => diff(&a, &b, tolerance, json),
        Command::Preview {
            dir,
            every,
            size,
            sheet,
        } => preview(&dir, every, size, sheet),
        Command::Wedge(args) => crate::wedge_cmd::dispatch(&args),
    }
}

/// Remakes a cache's preview images and says where they went.
fn preview(
    dir: &Path,
    every: Option<u64>,
    size: Option<Vec<u32>>,
    sheet: bool,
) -> Result<Outcome, Failure> {
    let size = size.map(|s| [s[0], s[1]]);
    let remade =
        xpbd_sim::output::preview::remake(dir, every, size, sheet).map_err(Failure::Input)?;
    let mut text = format!(
        "wrote {} preview{} to {}\n",
        remade.files.len(),
        if remade.files.len() == 1 { "" } else { "s" },
        shown_path(&dir.join(xpbd_sim::output::preview::PREVIEW_DIRECTORY))
    );
    if let Some(sheet) = &remade.sheet {
        text.push_str(&format!("contact sheet {}\n", shown_path(sheet)));
    }
    use std::io::Write as _;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    Ok(Outcome::Success)
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
pub struct Prepared {
    pub scene: LoadedScene,
    pub built: Built,
    pub warnings: Vec<String>,
}

pub fn prepare(
    path: &Path,
    overrides: &[String],
    adjust: impl FnOnce(&mut SceneFile),
) -> Result<Prepared, Failure> {
    let mut scene = load(path, overrides).map_err(Failure::Input)?;
    adjust(&mut scene.file);
    let mut report = validate(&scene.file);
    if !report.errors.is_empty() {
        let file = &scene.file;
        name_overrides(&mut report.errors, overrides, |table, name| match table {
            "object" => file.objects.iter().position(|o| o.name == name),
            _ => file.colliders.iter().position(|c| c.name == name),
        });
        let list: Vec<String> = report.errors.iter().map(|e| format!("  {e}")).collect();
        return Err(Failure::Input(anyhow!(
            "invalid scene {}:\n{}",
            shown_path(path),
            list.join("\n")
        )));
    }
    let built = build(&scene)
        .with_context(|| format!("invalid scene {}", shown_path(path)))
        .map_err(Failure::Input)?;
    let mut warnings = report.warnings;
    warnings.extend(built.warnings.iter().cloned());
    let objects = &built.model.objects;
    let gates = &scene.file.gates;
    if gates.max_volume_change.is_some() && objects.iter().all(|o| o.rest_volume.is_none()) {
        warnings.push(
            "gates.max_volume_change: no object has a volume (a closed surface or tetrahedra); \
             the gate checks nothing"
                .into(),
        );
    }
    if gates.max_density_error.is_some() && built.model.fluids.is_empty() {
        warnings
            .push("gates.max_density_error: no object is a fluid; the gate checks nothing".into());
    }
    if gates.self_intersections.is_some() && objects.iter().all(|o| o.triangles.is_empty()) {
        warnings
            .push("gates.self_intersections: no object has faces; the gate checks nothing".into());
    }
    Ok(Prepared {
        scene,
        built,
        warnings,
    })
}

/// `writeln!` into the `check` report (a `String`), ignoring its result.
macro_rules! outln {
    ($out:expr, $($arg:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($out, $($arg)*);
    }};
}

/// `check`: the scene read, validated and built as `run` would, then described on standard
/// output: its objects, colliders and constraints, the quality gates, a memory estimate for
/// `run`, and the warnings.
fn check(path: &Path) -> Result<(), Failure> {
    let Prepared {
        scene,
        built,
        warnings,
    } = prepare(path, &[], |_| {})?;
    let out_dir = scene.base_dir.join(&scene.file.output.dir);
    refuse_writing_over_inputs(&scene, &out_dir).map_err(Failure::Input)?;
    // Written in one piece at the end, ignoring a closed pipe (`xpbd-sim check … | head`).
    let mut out = String::new();
    let model = &built.model;
    outln!(
        out,
        "scene {} (sha256 {})",
        scene.path.display(),
        scene.sha256
    );
    for object in &model.objects {
        describe_object(&mut out, model, object);
    }
    describe_totals(&mut out, model);
    describe_run_limits(&mut out, &scene.file, model);
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

/// The `check` lines of one object: its particles, faces and segments, its constraints by
/// kind, and its render mesh and fluid surface when it has them.
fn describe_object(out: &mut String, model: &Model, object: &ObjectLayout) {
    let topology = &object.topology;
    let listed: Vec<String> = object_constraint_counts(model, object)
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
    if let Some(render) = &object.render {
        let mesh = &render.mesh;
        outln!(
            out,
            "  render mesh {}: {} vertices, {} faces, bound to the object's triangles",
            xpbd_sim::model::render_name(&object.name),
            mesh.positions.len(),
            mesh.face_count()
        );
    }
    if let Some(surface) = &object.fluid_surface {
        outln!(
            out,
            "  surface {}: reconstructed every frame, marching cubes of {} m",
            xpbd_sim::model::surface_name(&object.name),
            surface.spacing / surface.resolution
        );
    }
}

/// The constraints of each kind that belong to `object`: a coloured kind's by their first
/// particle, volumes and shape-matching clusters by spanning exactly the object's particles.
fn object_constraint_counts(model: &Model, object: &ObjectLayout) -> [(&'static str, usize); 8] {
    let owns = |first_particle: u32| object.particles.contains(&(first_particle as usize));
    let in_block =
        |particles: &mut dyn Iterator<Item = u32>| particles.filter(|&p| owns(p)).count();
    [
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
    ]
}

/// The `check` lines of the whole model: its colliders, its constraints by kind and how many
/// colours each coloured kind is solved in.
fn describe_totals(out: &mut String, model: &Model) {
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
}

/// The `check` lines of what `run` is held to and needs: the quality gates and the memory
/// estimate of its peak.
fn describe_run_limits(out: &mut String, file: &SceneFile, model: &Model) {
    let gates = limits(&file.gates);
    if gates.is_empty() {
        outln!(out, "gates: none");
    }
    for (gate, limit) in gates {
        outln!(out, "gate {} <= {limit} ({})", gate.name(), gate.unit());
    }
    let output = &file.output;
    let frames = file.simulation.frames;
    let memory =
        xpbd_sim::memory::estimate(model, &output.formats, frames, output.checkpoint_every);
    outln!(
        out,
        "memory estimate: {} peak for `run` (model and solver {}, frame output {}, program {})",
        human_bytes(memory.total() as u64),
        human_bytes(memory.state as u64),
        human_bytes(memory.output as u64),
        human_bytes(memory.program as u64)
    );
}

fn run(args: &RunArgs) -> Result<Outcome, Failure> {
    // `--gate KEY=VALUE` is `--set gates.KEY=VALUE` once its key and value are checked; it
    // comes after the `--set` ones, so it wins.
    // Checked here, not left to the scene's check of the formats it was given, so that the
    // message names the option the user typed.
    let formats = &args.formats;
    if let Some(k) = (1..formats.len()).find(|&k| formats[..k].contains(&formats[k])) {
        let twice = anyhow!("--format {} is given twice", formats[k].name());
        return Err(Failure::Input(twice));
    }
    let mut overrides = args.overrides.clone();
    for gate in &args.gates {
        overrides.push(gate_override(gate).map_err(Failure::Input)?);
    }
    let prepared = prepare(&args.scene, &overrides, |file| {
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
            file.output.preview = None;
        }
        if args.keep_checkpoints {
            file.output.keep_checkpoints = true;
        }
    })?;
    shot::run(args, prepared)
}
