//! Integration tests: they drive the real `xpbd-sim` binary through the SPEC's contract and
//! check the physics against answers known in advance. One test binary (faster to build).

// Expected answers may use the standard library's `sin`, `cos`…, which clippy.toml forbids in
// the simulator (its files must not depend on the CPU's C library).
#![allow(clippy::disallowed_methods)]

mod animation;
mod bad_input;
mod common;
mod constraint_kinds;
mod determinism;
mod diff;
mod fluids;
mod gates;
mod hostile_input;
mod memory;
mod mesh_colliders;
mod object_contacts;
mod output_files;
mod output_surfaces;
mod penetration;
mod physics;
mod plasticity;
mod previews;
mod projective;
mod render_meshes;
mod robustness;
mod run_files;
mod scenes;
mod self_collision;
mod tearing;
mod usd_stage;
mod wedges;
