//! Bytes → a scene: TOML parsing with located errors, `--set` overrides, validation, and for
//! scenes that pass and are small, building the model.
//!
//! The input up to the first NUL byte is the scene file; each NUL-separated part after it is
//! one `--set KEY=VALUE` override. Scenes that name mesh files are not built (that would read
//! whatever files the fuzzer names; the mesh readers have targets of their own), nor are those
//! whose primitives exceed [`MAX_BUILT_PARTICLES`] (building them is legitimately slow).
#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use xpbd_sim::scene::build::build;
use xpbd_sim::scene::memory_budget::primitive_particles;
use xpbd_sim::scene::load::load_bytes;
use xpbd_sim::scene::validate::validate;

/// Largest scene the target builds, in particles.
const MAX_BUILT_PARTICLES: u64 = 5_000;

fuzz_target!(|data: &[u8]| {
    let mut parts = data.split(|&b| b == 0);
    let text = parts.next().unwrap_or_default();
    let overrides: Vec<String> = parts
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    let scene = match load_bytes(Path::new("fuzz/scene.toml"), text, &overrides) {
        Ok(scene) => scene,
        Err(error) => {
            // Formatting runs the message code (located spans, suggestions) to the end.
            common::check_message(&format!("{error:#}"));
            return;
        }
    };
    let report = validate(&scene.file);
    for message in report.errors.iter().chain(&report.warnings) {
        common::check_message(&message.to_string());
    }
    if !report.errors.is_empty() {
        return;
    }
    let reads_files = scene.file.objects.iter().any(|o| o.mesh.is_some())
        || scene.file.colliders.iter().any(|c| c.mesh.is_some());
    let small = primitive_particles(&scene.file).is_ok_and(|n| n <= MAX_BUILT_PARTICLES);
    if !reads_files && small {
        match build(&scene) {
            Ok(built) => built.warnings.iter().for_each(|w| common::check_message(w)),
            Err(error) => common::check_message(&format!("{error:#}")),
        }
    }
});
