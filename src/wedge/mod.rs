//! Wedges (SPEC §5 "Wedges on a farm", docs/wedges.md): one scene run many times with
//! `--set` values from the cartesian product of `--vary` lists, each task an ordinary `run`
//! into its own folder, here `--jobs` at a time or on a Slurm farm as an array job, and a
//! table of how every task came out.

pub mod plan;
pub mod slurm;
pub mod status;
