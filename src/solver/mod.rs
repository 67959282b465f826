//! The XPBD small-steps solver: colouring ([`colouring`]), the parallel machinery
//! ([`parallel`]), the substep ([`step`]) and the per-frame figures ([`diagnostics`]).

pub mod colouring;
pub mod contacts;
pub mod diagnostics;
pub mod parallel;
pub mod state;
pub mod step;
pub mod tearing;
