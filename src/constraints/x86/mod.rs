//! Lanes in the vector registers of x86-64, written with `std::arch` intrinsics: the paths
//! [`super::batch::project_batches`] and the edge side test
//! ([`crate::collision::edge_sides`]) take where the CPU has the extension (checked at run
//! time, so one release binary runs on any x86-64).
//!
//! LLVM vectorised the portable lane loops of [`super::lanes`] into 128-bit operations and
//! stack spills more often than into full registers (docs/benchmarks.md, "Issue 13: lanes by
//! hand"); here every [`super::lanes::Real`] operation is the one instruction that does it.
//!
//! **Contract of this module:** its types execute the extension's instructions from safe
//! methods, so they may only be created and used where the CPU has it: inside the
//! `#[target_feature]` functions of [`super::batch`] and [`crate::collision::edge_sides`],
//! entered after the run-time check, and in tests after the same check. They are not
//! exported beyond the crate.

pub(crate) mod avx2;
pub(crate) mod avx512;
