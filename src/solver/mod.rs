//! The XPBD small-steps solver: colouring, the substep and per-frame diagnostics.

pub mod colouring;
