//! xpbd-sim: a deterministic batch XPBD cloth and soft-body simulator.
//!
//! Data flows one way: TOML text → validated scene ([`scene`]) → model ([`model`]: particles,
//! coloured constraints, colliders) → frame loop ([`solver`]) → frame snapshot → writers
//! ([`output`]). The solver never knows about files; the writers never know about constraints.
//! [`diff`] reads two such caches back and compares them.

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
