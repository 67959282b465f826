//! The XPBD small-steps solver: colouring ([`colouring`]), the substep ([`step`]) and the
//! per-frame figures ([`diagnostics`]).

pub mod colouring;
pub mod diagnostics;
pub mod step;
