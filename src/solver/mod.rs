//! The XPBD small-steps solver, and Projective Dynamics beside it ([`projective`]): colouring ([`colouring`]), the parallel machinery
//! ([`parallel`]), the substep ([`step`]), the per-frame figures ([`diagnostics`]) and the
//! velocities written for motion blur ([`motion`]).

pub mod colouring;
pub mod contact_levels;
pub mod contacts;
pub mod crowding;
pub mod diagnostics;
pub mod fluids;
pub mod motion;
pub mod pair_colours;
pub mod parallel;
pub mod projective;
pub mod state;
pub mod step;
pub mod tearing;
