//! Writers: frame files ([`frame`]: OBJ, PLY), the stats log ([`stats`]) and output naming
//! ([`naming`]).

pub mod frame;
pub mod naming;
pub mod stats;
