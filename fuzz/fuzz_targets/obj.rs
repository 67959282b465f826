//! Bytes → the OBJ reader, as `mesh = "….obj"` reads a file: any input must give a mesh or an
//! error, never a panic, a hang or a huge allocation, and its messages quote input briefly.
#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use xpbd_sim::mesh::obj::parse_obj_bytes;

fuzz_target!(|data: &[u8]| {
    match parse_obj_bytes(data) {
        Ok(mesh) => mesh.warnings.iter().for_each(|w| common::check_message(w)),
        Err(error) => common::check_message(&format!("{error:#}")),
    }
});
