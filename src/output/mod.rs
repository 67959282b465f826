//! Writers: frame files ([`frame`]: OBJ, PLY), the stats log ([`stats`]), output naming
//! ([`naming`]) and the background thread that writes them while the solver runs ([`writer`]).

pub mod frame;
pub mod naming;
pub mod stats;
pub mod writer;
