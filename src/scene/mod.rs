//! The scene: TOML types ([`types`]), reading with located errors ([`load`]), value checks
//! ([`validate`]) and building the simulation model ([`build`]).

pub mod build;
mod colliders;
pub mod contact_masses;
pub mod fluid;
pub mod inputs;
pub mod load;
pub mod memory_budget;
mod object_checks;
mod object_constraints;
pub mod override_origin;
pub mod plasticity;
pub mod projective;
pub mod render_mesh;
pub mod types;
pub mod validate;
