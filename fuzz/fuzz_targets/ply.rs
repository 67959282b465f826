//! Bytes → the PLY reader (ascii and binary), as `mesh = "….ply"` reads a file; its messages
//! quote input briefly.
#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use xpbd_sim::mesh::ply::parse_ply;

fuzz_target!(|data: &[u8]| {
    match parse_ply(data) {
        Ok(mesh) => mesh.warnings.iter().for_each(|w| common::check_message(w)),
        Err(error) => common::check_message(&format!("{error:#}")),
    }
});
