//! The files a scene reads: the scene itself and every mesh its objects and colliders name
//! (a TetGen `.node` with its `.ele`, a collider sequence frame by frame). The run checks
//! its outputs against them ([`crate::output::clobber`]) before it writes anything.

use super::load::LoadedScene;
use crate::output::naming;
use std::path::PathBuf;

/// Every file the scene reads, as written (relative paths resolved against the scene's
/// folder), in scene order. Sequence frames are listed while they exist, as the builder reads
/// them.
pub fn input_files(scene: &LoadedScene) -> Vec<PathBuf> {
    let file = &scene.file;
    let mut inputs = vec![scene.path.clone()];
    let meshes = (file.objects.iter()).flat_map(|o| [o.mesh.as_deref(), o.render_mesh.as_deref()]);
    for mesh in meshes.flatten() {
        let path = scene.base_dir.join(mesh);
        if path.extension().is_some_and(|e| e == "node") {
            inputs.push(path.with_extension("ele"));
        }
        inputs.push(path);
    }
    let simulation = &file.simulation;
    let last = simulation
        .start_frame
        .saturating_add(simulation.frames.max(1) - 1);
    for template in file.colliders.iter().filter_map(|c| c.mesh.as_deref()) {
        if !template.contains("{frame") {
            inputs.push(scene.base_dir.join(template));
            continue;
        }
        for frame in simulation.start_frame..=last {
            let path = scene.base_dir.join(naming::render(template, "", frame));
            if frame > simulation.start_frame && !path.exists() {
                break;
            }
            inputs.push(path);
        }
    }
    inputs
}
