//! Value checks on a parsed scene: ranges, exclusive choices, names, output templates.
//! Every problem is reported (not only the first), each with its key path, so a scene can be
//! fixed in one pass. Checks that need the geometry (pin indices, closed surfaces) run while
//! building the model.

use super::types::*;
use crate::mesh::obj::MAX_ABS_COORDINATE;
use crate::output::naming;
use crate::quote::quoted;
use std::collections::{BTreeMap, BTreeSet};

/// Problems that stop the run, and warnings that do not.
#[derive(Debug, Default)]
pub struct Report {
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
}

impl Report {
    pub(super) fn error(&mut self, key: impl AsRef<str>, message: impl AsRef<str>) {
        self.errors
            .push(format!("{}: {}", key.as_ref(), message.as_ref()));
    }
    pub(super) fn warn(&mut self, key: impl AsRef<str>, message: impl AsRef<str>) {
        self.warnings
            .push(format!("{}: {}", key.as_ref(), message.as_ref()));
    }
}

/// Largest `sphere.subdivisions` (10·4^8 + 2 ≈ 655k particles).
pub const MAX_SUBDIVISIONS: u64 = 8;
/// Largest frame count and substep/iteration counts: beyond these a typo is far likelier
/// than a real shot.
pub const MAX_FRAMES: u64 = 1_000_000;
pub const MAX_SUBSTEPS: u64 = 10_000;
/// Frame rate range: below it a frame lasts over 15 minutes, above it the substep is so short
/// that `1/h²` loses precision.
pub const MIN_FPS: f64 = 1e-3;
pub const MAX_FPS: f64 = 1e6;
/// Largest `max_speed`, m/s: beyond it velocities could overflow the f32 output.
pub const MAX_SPEED_LIMIT: f64 = 1e9;
/// Largest gravity on each axis, m/s² (about 100 000 g): with particle masses of at most
/// 1e12 kg the potential energy the stats log reports stays finite. Gravity of 1e300 on
/// masses of 1e12 kg at a height of 1e8 m gave an energy of −1e321, written as `null`.
pub const MAX_GRAVITY: f64 = 1e6;

pub fn validate(scene: &SceneFile) -> Report {
    let mut report = Report::default();
    simulation(&scene.simulation, &mut report);
    super::projective::check(scene, &mut report);
    super::plasticity::check(scene, &mut report);
    output(scene, &mut report);
    if scene.objects.is_empty() {
        report.error("object", "the scene has no [[object]] to simulate");
    }
    for (k, object) in scene.objects.iter().enumerate() {
        let key = format!("object[{k}]");
        super::object_checks::check_object(object, &key, scene.simulation.solver, &mut report);
        check_keys(&object.keys, &key, &mut report);
        check_speed(object, &key, scene.simulation.max_speed, &mut report);
        check_pin_drivers(object, &key, &scene.colliders, &mut report);
    }
    unique_names("object", scene.objects.iter().map(|o| &o.name), &mut report);
    names_not_derived(&scene.objects, &mut report);
    for (k, collider) in scene.colliders.iter().enumerate() {
        check_collider(collider, &format!("collider[{k}]"), &mut report);
        check_keys(&collider.keys, &format!("collider[{k}]"), &mut report);
    }
    unique_names(
        "collider",
        scene.colliders.iter().map(|c| &c.name),
        &mut report,
    );
    non_negative(
        &mut report,
        "collision.thickness",
        scene.collision.thickness,
    );
    non_negative(&mut report, "collision.friction", scene.collision.friction);
    if scene.collision.max_mass_ratio < 1.0 {
        report.error(
            "collision.max_mass_ratio",
            format!("must be >= 1, got {}", scene.collision.max_mass_ratio),
        );
    }
    for (gate, limit) in crate::gates::limits(&scene.gates) {
        non_negative(&mut report, &format!("gates.{}", gate.name()), limit);
    }
    report
}

/// An object's initial speed may not exceed `simulation.max_speed`.
fn check_speed(object: &Object, key: &str, max_speed: f64, report: &mut Report) {
    let speed = glam::DVec3::from(object.velocity).length();
    if speed > max_speed {
        // Frame 1 writes the initial velocity: 1e300 m/s became `inf` in f32.
        report.error(
            format!("{key}.velocity"),
            format!("a speed of {speed:e} m/s exceeds simulation.max_speed = {max_speed} m/s"),
        );
    }
}

/// What moves an object's pins: a collider named by `pin_to` (which must exist), or its
/// `keys`, not both; either one with no pinned particle is warned about.
fn check_pin_drivers(object: &Object, key: &str, colliders: &[Collider], report: &mut Report) {
    if let Some(target) = &object.pin_to {
        let pin_to_key = format!("{key}.pin_to");
        if !colliders.iter().any(|c| c.name == *target) {
            report.error(
                &pin_to_key,
                format!(
                    "no collider named `{}` (have: {})",
                    quoted(target),
                    name_list(colliders.iter().map(|c| c.name.as_str()))
                ),
            );
        } else if !object.keys.is_empty() {
            report.error(
                &pin_to_key,
                "an object's pins follow either its `keys` or a collider, not both",
            );
        }
        if object.pin.is_empty() && object.pin_region.is_none() {
            report.warn(
                pin_to_key,
                "attaches the pinned particles, and the object has none",
            );
        }
    }
    if !object.keys.is_empty() && object.pin.is_empty() && object.pin_region.is_none() {
        report.warn(
            format!("{key}.keys"),
            "keys move the pinned particles, and the object has none",
        );
    }
}

/// Refuses a name used by an earlier element of the same `[[table]]` array.
fn unique_names<'a>(table: &str, names: impl Iterator<Item = &'a String>, report: &mut Report) {
    let mut seen: BTreeSet<&String> = BTreeSet::new();
    for (k, name) in names.enumerate() {
        if !seen.insert(name) {
            report.error(
                format!("{table}[{k}].name"),
                format!("`{}` is used by an earlier {table}", quoted(name)),
            );
        }
    }
}

/// Refuses an object named as another object's render mesh (`<object>_render`) or fluid
/// surface (`<object>_surface`) is written: object `cloth_render` beside `cloth`'s render mesh
/// had its frame and point-cache files replaced by the render mesh's.
fn names_not_derived(objects: &[Object], report: &mut Report) {
    let derived: BTreeMap<String, (&str, &str)> = crate::model::derived_names(objects)
        .map(|(name, what, owner)| (name, (what, owner)))
        .collect();
    for (k, object) in objects.iter().enumerate() {
        if let Some((what, owner)) = derived.get(&object.name) {
            report.error(
                format!("object[{k}].name"),
                format!(
                    "`{}` is the name object `{}`'s {what} is written under; choose another",
                    quoted(&object.name),
                    quoted(owner)
                ),
            );
        }
    }
}

/// Names for a message: all of them when few, else the first ones and how many there are,
/// so that each of many errors stays short.
fn name_list<'a>(names: impl ExactSizeIterator<Item = &'a str>) -> String {
    const SHOWN: usize = 10;
    let count = names.len();
    let shown: Vec<String> = names.take(SHOWN).map(quoted).collect();
    if count > SHOWN {
        format!("{}, … ({count} in all)", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// Keys must come in increasing frame order, and move no farther than mesh coordinates may
/// lie (±1e9 m): keys at 1e300 m wrote `inf` into the frame files.
fn check_keys(keys: &[Key], key: &str, report: &mut Report) {
    for (k, frame_key) in keys.iter().enumerate() {
        if frame_key
            .translate
            .iter()
            .any(|t| t.abs() > MAX_ABS_COORDINATE)
        {
            report.error(
                format!("{key}.keys[{k}].translate"),
                format!("must be within ±{MAX_ABS_COORDINATE:e} m on every axis"),
            );
        }
    }
    for (k, pair) in keys.windows(2).enumerate() {
        if pair[1].frame <= pair[0].frame {
            report.error(
                format!("{key}.keys[{}].frame", k + 1),
                format!(
                    "keys must be in increasing frame order ({} after {})",
                    pair[1].frame, pair[0].frame
                ),
            );
        }
    }
}

pub(super) fn positive(report: &mut Report, key: &str, value: f64) {
    if value <= 0.0 {
        report.error(key, format!("must be > 0, got {value}"));
    }
}

pub(super) fn non_negative(report: &mut Report, key: &str, value: f64) {
    if value < 0.0 {
        report.error(key, format!("must be >= 0, got {value}"));
    }
}

pub(super) fn in_range(report: &mut Report, key: &str, value: u64, min: u64, max: u64) {
    if value < min || value > max {
        report.error(key, format!("must be from {min} to {max}, got {value}"));
    }
}

fn simulation(sim: &Simulation, report: &mut Report) {
    if !(MIN_FPS..=MAX_FPS).contains(&sim.fps) {
        report.error(
            "simulation.fps",
            format!("must be from {MIN_FPS} to {MAX_FPS:e}, got {}", sim.fps),
        );
    }
    in_range(report, "simulation.frames", sim.frames, 1, MAX_FRAMES);
    in_range(report, "simulation.substeps", sim.substeps, 1, MAX_SUBSTEPS);
    in_range(
        report,
        "simulation.iterations",
        sim.iterations,
        1,
        MAX_SUBSTEPS,
    );
    in_range(report, "simulation.threads", sim.threads, 0, 1024);
    in_range(
        report,
        "simulation.start_frame",
        sim.start_frame,
        0,
        1_000_000_000,
    );
    non_negative(report, "simulation.velocity_damping", sim.velocity_damping);
    for (axis, g) in sim.gravity.iter().enumerate() {
        if g.abs() > MAX_GRAVITY {
            report.error(
                format!("simulation.gravity[{axis}]"),
                format!("must be within ±{MAX_GRAVITY:e} m/s², got {g:e}"),
            );
        }
    }
    positive(report, "simulation.max_speed", sim.max_speed);
    if sim.max_speed > MAX_SPEED_LIMIT {
        report.error(
            "simulation.max_speed",
            format!(
                "must be at most {MAX_SPEED_LIMIT:e} m/s, got {}",
                sim.max_speed
            ),
        );
    }
}

fn output(scene: &SceneFile, report: &mut Report) {
    let out = &scene.output;
    for (k, format) in out.formats.iter().enumerate() {
        if out.formats[..k].contains(format) {
            report.error(
                format!("output.formats[{k}]"),
                format!("\"{}\" is listed twice", format.name()),
            );
        }
    }
    let written = crate::model::written_names(&scene.objects);
    let names: Vec<&str> = written.iter().map(String::as_str).collect();
    let first = scene.simulation.start_frame;
    let last = first.saturating_add(scene.simulation.frames.max(1) - 1);
    if let Err(message) = naming::check_names(&out.name, &names, first, last) {
        report.error("output.name", message);
    }
    if let Err(message) = naming::check_stats_name(&out.stats) {
        report.error("output.stats", message);
    }
    if let Err(message) = naming::check_directory(&out.dir) {
        report.error("output.dir", message);
    }
    if let Some(tube) = &out.rope_tube {
        rope_tube(tube, scene, report);
    }
    run_files(scene, report);
    if let Some(preview) = &out.preview {
        let max = crate::output::preview::MAX_SIZE as u64;
        in_range(report, "output.preview.every", preview.every, 1, 1_000_000);
        in_range(report, "output.preview.size[0]", preview.size[0], 16, max);
        in_range(report, "output.preview.size[1]", preview.size[1], 16, max);
    }
}

/// Whole-run formats (MDD, PC2): one file per object named after it, and a constant vertex
/// count, which an object that tears does not have.
fn run_files(scene: &SceneFile, report: &mut Report) {
    let out = &scene.output;
    for (k, format) in out.formats.iter().enumerate() {
        if format.per_frame() {
            continue;
        }
        for (i, object) in scene.objects.iter().enumerate() {
            let file = crate::output::run_files::file_name(&object.name, *format);
            if let Err(message) = naming::check_file_name(&file) {
                report.error(format!("object[{i}].name"), message);
            }
            if object
                .stretch
                .as_ref()
                .is_some_and(|s| s.tear_strain.is_some())
            {
                report.error(
                    format!("output.formats[{k}]"),
                    format!(
                        "\"{}\" holds one vertex count for the whole run, and object \"{}\" \
                         tears (stretch.tear_strain): write it as \"obj\" or \"ply\"",
                        format.name(),
                        crate::quote::quoted(&object.name)
                    ),
                );
            }
        }
    }
}

/// `output.rope_tube`: a finite positive radius, 3 or more sides, and some rope to apply to.
fn rope_tube(tube: &RopeTube, scene: &SceneFile, report: &mut Report) {
    let key = "output.rope_tube";
    if !(tube.radius > 0.0 && tube.radius <= crate::mesh::obj::MAX_ABS_COORDINATE) {
        report.error(
            format!("{key}.radius"),
            format!(
                "must be > 0 m and at most {:e} m, got {}",
                crate::mesh::obj::MAX_ABS_COORDINATE,
                tube.radius
            ),
        );
    }
    in_range(
        report,
        &format!("{key}.sides"),
        tube.sides,
        3,
        MAX_TUBE_SIDES,
    );
    let may_have_segments = scene
        .objects
        .iter()
        .any(|o| o.rope.is_some() || o.mesh.as_ref().is_some_and(|m| !m.ends_with(".node")));
    if !may_have_segments {
        report.warn(
            key,
            "no object is a rope (`rope` or a mesh file of `l` lines); it changes nothing",
        );
    }
}

/// One collider: its name, keys that do not apply to its shape, what its shape needs, then
/// friction, thickness and restitution.
fn check_collider(collider: &Collider, key: &str, report: &mut Report) {
    if collider.name.is_empty() {
        report.error(format!("{key}.name"), "must not be empty");
    }
    let given = [
        ("point", collider.point.is_some()),
        ("normal", collider.normal.is_some()),
        ("center", collider.center.is_some()),
        ("radius", collider.radius.is_some()),
        ("size", collider.size.is_some()),
        ("rotate", collider.rotate.is_some()),
        ("a", collider.a.is_some()),
        ("b", collider.b.is_some()),
        ("mesh", collider.mesh.is_some()),
    ];
    let applies: &[&str] = match collider.shape {
        ColliderShape::Plane => &["point", "normal"],
        ColliderShape::Sphere => &["center", "radius"],
        ColliderShape::Box => &["center", "size", "rotate"],
        ColliderShape::Capsule => &["a", "b", "radius"],
        ColliderShape::Mesh => &["mesh"],
    };
    let shape_name = format!("{:?}", collider.shape).to_lowercase();
    for (name, is_set) in given {
        if is_set && !applies.contains(&name) {
            report.error(
                format!("{key}.{name}"),
                format!("does not apply to a {shape_name} collider"),
            );
        }
    }
    check_collider_shape(collider, key, report);
    for (name, value) in [
        ("static_friction", collider.static_friction),
        ("dynamic_friction", collider.dynamic_friction),
    ] {
        if let Some(value) = value {
            non_negative(report, &format!("{key}.{name}"), value);
        }
    }
    non_negative(report, &format!("{key}.friction"), collider.friction);
    non_negative(report, &format!("{key}.thickness"), collider.thickness);
    if !(0.0..=1.0).contains(&collider.restitution) {
        report.error(
            format!("{key}.restitution"),
            format!("must be from 0 to 1, got {}", collider.restitution),
        );
    }
}

/// What each shape needs: a plane a non-zero normal, a sphere or capsule a positive radius,
/// a capsule both ends, a box positive extents, a mesh collider its file.
fn check_collider_shape(collider: &Collider, key: &str, report: &mut Report) {
    match collider.shape {
        ColliderShape::Plane => {
            let normal = glam::DVec3::from_array(collider.normal.unwrap_or([0.0, 1.0, 0.0]));
            if normal.try_normalize().is_none() || normal.length() < 1e-12 {
                report.error(
                    format!("{key}.normal"),
                    "must not be the zero vector (and must have a finite length)",
                );
            }
        }
        ColliderShape::Sphere => match collider.radius {
            Some(r) => positive(report, &format!("{key}.radius"), r),
            None => report.error(key, "a sphere collider needs `radius`"),
        },
        ColliderShape::Box => match collider.size {
            Some(size) => {
                for (axis, extent) in size.iter().enumerate() {
                    positive(report, &format!("{key}.size[{axis}]"), *extent);
                }
            }
            None => report.error(key, "a box collider needs `size` (full extents)"),
        },
        ColliderShape::Capsule => {
            match collider.radius {
                Some(r) => positive(report, &format!("{key}.radius"), r),
                None => report.error(key, "a capsule collider needs `radius`"),
            }
            if collider.a.is_none() || collider.b.is_none() {
                report.error(key, "a capsule collider needs both ends `a` and `b`");
            }
        }
        ColliderShape::Mesh => {
            if collider.mesh.is_none() {
                report.error(
                    key,
                    "a mesh collider needs `mesh` (an .obj/.ply file or a `{frame}` sequence)",
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_name_lists_are_cut() {
        assert_eq!(name_list(["a", "b"].into_iter()), "a, b");
        let many: Vec<String> = (0..50_000).map(|k| format!("c{k}")).collect();
        let list = name_list(many.iter().map(String::as_str));
        assert!(list.ends_with("c9, … (50000 in all)"), "{list}");
    }
}
