//! Writers: frame files (OBJ, PLY), the stats log and output naming.

pub mod naming;
