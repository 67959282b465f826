//! Point caches (SPEC §5): one file per written mesh holding every frame's positions in
//! output vertex order, in the written axes, for DCC tools to play on the frame's OBJ
//! (Blender's Mesh Cache modifier, Houdini, Maya, 3ds Max, LightWave).
//!
//! - **MDD** (LightWave Motion Designer), big-endian: `i32` frame count, `i32` point count,
//!   `f32` time of every frame in seconds (frame `start_frame + k` at `k / fps`), then per
//!   frame `x y z` of every point as `f32`.
//! - **PC2** (3ds Max Point Cache 2), little-endian: the 12 bytes `POINTCACHE2\0`, `i32` file
//!   version 1, `i32` point count, `f32` first frame number, `f32` sample rate (1: one sample
//!   per frame), `i32` sample count, then per sample `x y z` of every point as `f32`.
//!
//! Both are made from the spool ([`super::spool`]), whose records start with the positions as
//! little-endian `f32` triples.

use super::spool::Spool;
use std::io::Write;

/// The two point cache layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointCache {
    Mdd,
    Pc2,
}

/// What a point cache file describes besides the positions.
pub struct Timing {
    pub start_frame: u64,
    pub fps: f64,
}

impl PointCache {
    /// Writes the cache of spooled mesh `k` (`points` vertices, the spool's `frames`) to `out`.
    pub fn write(
        self,
        out: &mut dyn Write,
        spool: &mut Spool,
        k: usize,
        points: usize,
        timing: &Timing,
    ) -> std::io::Result<()> {
        let frames = spool.frames();
        let count = |n: u64| i32::try_from(n).map_err(|_| std::io::ErrorKind::InvalidInput);
        match self {
            PointCache::Mdd => {
                out.write_all(&count(frames)?.to_be_bytes())?;
                out.write_all(&count(points as u64)?.to_be_bytes())?;
                for index in 0..frames {
                    out.write_all(&((index as f64 / timing.fps) as f32).to_be_bytes())?;
                }
            }
            PointCache::Pc2 => {
                out.write_all(b"POINTCACHE2\0")?;
                out.write_all(&1i32.to_le_bytes())?;
                out.write_all(&count(points as u64)?.to_le_bytes())?;
                out.write_all(&(timing.start_frame as f32).to_le_bytes())?;
                out.write_all(&1f32.to_le_bytes())?;
                out.write_all(&count(frames)?.to_le_bytes())?;
            }
        }
        let mut record = Vec::new();
        let mut converted = Vec::with_capacity(points * 12);
        for index in 0..frames {
            spool
                .read(k, index, &mut record)
                .map_err(|e| std::io::Error::other(format!("{e:#}")))?;
            let positions = &record[..points * 12];
            match self {
                PointCache::Pc2 => out.write_all(positions)?,
                PointCache::Mdd => {
                    converted.clear();
                    for value in positions.chunks_exact(4) {
                        converted.extend(value.iter().rev());
                    }
                    out.write_all(&converted)?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spool_of(dir: &std::path::Path, frames: &[[[f32; 3]; 2]]) -> Spool {
        let mut spool = Spool::open(dir, vec![24], 0).unwrap();
        for frame in frames {
            let record: Vec<u8> = frame
                .iter()
                .flatten()
                .flat_map(|c| c.to_le_bytes())
                .collect();
            spool.append(&[record]).unwrap();
        }
        spool
    }

    #[test]
    fn mdd_and_pc2_hold_every_frame_in_their_byte_orders() {
        let dir = tempfile::tempdir().unwrap();
        let frames = [
            [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]],
            [[1.5, 2.5, 3.5], [-4.0, 0.25, 6.0]],
        ];
        let mut spool = spool_of(dir.path(), &frames);
        let timing = Timing {
            start_frame: 7,
            fps: 24.0,
        };

        let mut mdd = Vec::new();
        PointCache::Mdd
            .write(&mut mdd, &mut spool, 0, 2, &timing)
            .unwrap();
        assert_eq!(mdd.len(), 8 + 2 * 4 + 2 * 24);
        assert_eq!(i32::from_be_bytes(mdd[0..4].try_into().unwrap()), 2);
        assert_eq!(i32::from_be_bytes(mdd[4..8].try_into().unwrap()), 2);
        assert_eq!(
            f32::from_be_bytes(mdd[12..16].try_into().unwrap()),
            1.0 / 24.0
        );
        let last_x = f32::from_be_bytes(mdd[16 + 36..16 + 40].try_into().unwrap());
        assert_eq!(last_x, -4.0);

        let mut pc2 = Vec::new();
        PointCache::Pc2
            .write(&mut pc2, &mut spool, 0, 2, &timing)
            .unwrap();
        assert_eq!(&pc2[..12], b"POINTCACHE2\0");
        assert_eq!(pc2.len(), 32 + 2 * 24);
        assert_eq!(f32::from_le_bytes(pc2[20..24].try_into().unwrap()), 7.0);
        assert_eq!(i32::from_le_bytes(pc2[28..32].try_into().unwrap()), 2);
        let y = f32::from_le_bytes(pc2[32 + 40..32 + 44].try_into().unwrap());
        assert_eq!(y, 0.25);
    }
}
