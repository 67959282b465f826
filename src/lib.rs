//! xpbd-sim: a deterministic batch XPBD cloth and soft-body simulator.
//!
//! Data flows one way: TOML text → validated scene ([`scene`]) → model ([`model`]: particles,
//! coloured constraints, colliders) → frame loop ([`solver`]) → frame snapshot → writers
//! ([`output`]). The solver never knows about files; the writers never know about constraints.
//! [`diff`] reads two such caches back and compares them.

// Tests build their inputs with the standard library's `sin`, `cos`…, which clippy.toml
// forbids elsewhere (the files must not depend on the CPU's C library).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod animation;
pub mod collision;
pub mod constraints;
pub mod diff;
pub mod gates;
pub mod generate;
pub mod memory;
pub mod mesh;
pub mod model;
pub mod output;
pub mod preview;
pub mod quote;
pub mod scene;
pub mod solver;
pub mod wedge;
