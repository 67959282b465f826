//! Bytes → the PLY reader (ascii and binary), as `mesh = "….ply"` reads a file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use xpbd_sim::mesh::ply::parse_ply;

fuzz_target!(|data: &[u8]| {
    let _ = parse_ply(data);
});
