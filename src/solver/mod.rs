//! The XPBD small-steps solver: colouring ([`colouring`]), the parallel machinery
//! ([`parallel`]), the substep ([`step`]), the per-frame figures ([`diagnostics`]) and the
//! velocities written for motion blur ([`motion`]).

pub mod colouring;
pub mod contacts;
pub mod diagnostics;
pub mod motion;
pub mod parallel;
pub mod state;
pub mod step;
pub mod tearing;
