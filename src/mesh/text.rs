//! Reading the text mesh formats (OBJ, TetGen `.node`/`.ele`) safely.
//!
//! A text format never holds a NUL byte; a file that does is binary data under a text name
//! (a renamed archive, a disk image, a file zero-filled by a crash). Reading stops at the
//! first NUL, so a 2 GB file of zeros is refused after one chunk instead of being read whole
//! and its "first statement" quoted back at a gigabyte long: memory stays the size of the
//! text before it. Bytes that are not UTF-8 (a Latin-1 comment) become U+FFFD and fail only
//! where a number or index was expected. A UTF-8 byte-order mark is dropped, as the TOML
//! reader drops it.

use anyhow::{bail, Context, Result};
use std::borrow::Cow;
use std::io::Read;
use std::path::Path;

/// How much of the file is read at a time while looking for a NUL.
const CHUNK: usize = 64 * 1024;

/// Reads a text mesh file, refusing binary data as soon as its first NUL byte is read.
pub fn read(path: &Path) -> Result<String> {
    let shown = || crate::quote::shown_path(path);
    let mut file = std::fs::File::open(path).with_context(|| format!("cannot read {}", shown()))?;
    let mut bytes = Vec::new();
    loop {
        let start = bytes.len();
        let read = file
            .by_ref()
            .take(CHUNK as u64)
            .read_to_end(&mut bytes)
            .with_context(|| format!("cannot read {}", shown()))?;
        if bytes[start..].contains(&0) {
            // The message names the line the NUL is on: everything before it is in `bytes`.
            decode(&bytes).with_context(|| format!("{} is not text", shown()))?;
        }
        if read < CHUNK {
            break;
        }
    }
    Ok(decode(&bytes)
        .with_context(|| format!("{} is not text", shown()))?
        .into_owned())
}

/// The text of a whole file held in memory, without its byte-order mark; an error naming the
/// line of the first NUL byte if there is one.
pub fn decode(bytes: &[u8]) -> Result<Cow<'_, str>> {
    if let Some(at) = bytes.iter().position(|&b| b == 0) {
        let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        bail!("line {line}: a NUL byte (binary data, not a text mesh file)");
    }
    let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
    Ok(String::from_utf8_lossy(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nul_byte_is_refused_with_its_line_and_a_bom_is_dropped() {
        let error = decode(b"v 0 0 0\nv 1 0 0\n\0\0\0").unwrap_err().to_string();
        assert!(error.starts_with("line 3: a NUL byte"), "{error}");
        assert_eq!(decode("\u{feff}v 1 2 3\n".as_bytes()).unwrap(), "v 1 2 3\n");
        assert_eq!(decode(b"# caf\xe9\n").unwrap(), "# caf\u{fffd}\n");
    }

    #[test]
    fn reading_stops_at_the_first_chunk_with_a_nul() {
        // /dev/zero never ends: only stopping at the first NUL returns at all.
        let error = format!("{:#}", read(Path::new("/dev/zero")).unwrap_err());
        assert!(error.contains("line 1: a NUL byte"), "{error}");
    }
}
