//! Writers: frame files ([`frame`]: OBJ, PLY, of each object's [`surface`]), animated USD stages
//! ([`usd`]), the stats log ([`stats`]), output naming
//! ([`naming`]), checkpoints for `--resume` ([`checkpoint`]), crash-safe file writes
//! ([`durable`]), the lock that keeps one run per output folder ([`lock`]) and the background thread that writes frames while the solver runs
//! ([`writer`]).

pub mod checkpoint;
pub mod clobber;
pub mod durable;
pub mod frame;
pub mod lock;
pub mod naming;
mod obj;
mod ply;
pub mod point_cache;
pub mod preview;
pub mod run_files;
pub mod spool;
pub mod stage;
pub mod stats;
pub mod surface;
pub mod usd;
pub mod writer;
