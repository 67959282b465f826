//! Bytes → the OBJ reader, as `mesh = "….obj"` reads a file: any input must give a mesh or an
//! error, never a panic, a hang or a huge allocation.
#![no_main]

use libfuzzer_sys::fuzz_target;
use xpbd_sim::mesh::obj::parse_obj_bytes;

fuzz_target!(|data: &[u8]| {
    let _ = parse_obj_bytes(data);
});
