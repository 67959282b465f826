//! xpbd-sim: a deterministic batch XPBD cloth and soft-body simulator.
//!
//! Data flows one way: TOML text → validated scene ([`scene`]) → model (particles, coloured
//! constraints, colliders; [`solver`]) → frame loop → frame snapshot → writers ([`output`]).
//! The solver never knows about files; the writers never know about constraints.

pub mod constraints;
pub mod mesh;
