//! The memory budget: a scene is refused before its model is built, and a mesh file before it
//! is read, when either would need more memory than is available (or than
//! `XPBD_SIM_MEMORY_LIMIT` allows), rather than after the machine runs out part way through.

use super::types::SceneFile;
use crate::mesh::{primitives, MAX_VERTICES};
use anyhow::{anyhow, bail, Result};

/// Memory a particle costs with its share of constraints, topology and output buffers
/// (an upper estimate for a cloth: ~3 edges and ~3 hinges per particle), bytes.
pub const BYTES_PER_PARTICLE: u64 = 1024;

/// Particles of the scene's primitives (`grid`, `rope`, `sphere`, `box`), computed from their
/// parameters with checked arithmetic before anything is allocated; an object above
/// [`MAX_VERTICES`] is refused. Mesh files are counted as each is read.
pub fn primitive_particles(file: &SceneFile) -> Result<u64> {
    let mut total: u64 = 0;
    for (k, object) in file.objects.iter().enumerate() {
        let (count, what) = if let Some(g) = &object.grid {
            (
                primitives::grid_vertex_count(g.resolution[0], g.resolution[1]),
                "grid.resolution",
            )
        } else if let Some(r) = &object.rope {
            (r.segments.checked_add(1), "rope.segments")
        } else if let Some(s) = &object.sphere {
            (
                u32::try_from(s.subdivisions)
                    .ok()
                    .and_then(primitives::sphere_vertex_count),
                "sphere.subdivisions",
            )
        } else if let Some(b) = &object.box_shape {
            let count = if object.tets.is_some() {
                primitives::box_lattice_count(b.resolution)
            } else {
                primitives::box_vertex_count(b.resolution)
            };
            (count, "box.resolution")
        } else if let Some(f) = &object.fluid {
            (super::fluid::particle_count(f), "fluid")
        } else {
            continue;
        };
        let count = count.unwrap_or(u64::MAX);
        if count > MAX_VERTICES as u64 {
            bail!("object[{k}].{what}: {count} particles is more than the limit of {MAX_VERTICES}");
        }
        total += count;
    }
    Ok(total)
}

/// Refuses `particles` in all when their model would need more memory than is available
/// (estimated at [`BYTES_PER_PARTICLE`] each), before it is built.
pub(super) fn check_memory(particles: u64) -> Result<()> {
    let needed = particles.saturating_mul(BYTES_PER_PARTICLE);
    ensure_available(needed, || {
        format!(
            "the scene needs about {} of memory for {particles} particles",
            human_bytes(needed)
        )
    })
}

/// Refuses to go on when `bytes` is more than the memory available; `what` says what needs
/// them ("… needs about 3.0 GiB of memory"), the message adds how much there is.
pub(super) fn ensure_available(bytes: u64, what: impl FnOnce() -> String) -> Result<()> {
    match available_memory()? {
        Some(available) if bytes > available => {
            bail!("{}, but {} is available", what(), human_bytes(available))
        }
        _ => Ok(()),
    }
}

/// The environment variable that caps the memory a scene may use, in bytes.
const MEMORY_LIMIT_VARIABLE: &str = "XPBD_SIM_MEMORY_LIMIT";

/// The memory a scene may use: `MemAvailable` from /proc/meminfo where there is one, or less
/// when [`MEMORY_LIMIT_VARIABLE`] says so (a farm job's limit, which a container's
/// /proc/meminfo does not show).
fn available_memory() -> Result<Option<u64>> {
    let limit = match std::env::var(MEMORY_LIMIT_VARIABLE) {
        Ok(text) => Some(text.trim().parse::<u64>().map_err(|_| {
            anyhow!(
                "{MEMORY_LIMIT_VARIABLE} must be a whole number of bytes, not `{}`",
                text.chars().take(100).collect::<String>()
            )
        })?),
        Err(_) => None,
    };
    let system = (|| {
        let text = std::fs::read_to_string("/proc/meminfo").ok()?;
        let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib.saturating_mul(1024))
    })();
    Ok(match (system, limit) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    })
}

/// `bytes` in binary units with one decimal, for messages: "3.0 GiB".
pub fn human_bytes(bytes: u64) -> String {
    let mut value = bytes as f64;
    for unit in ["B", "KiB", "MiB", "GiB", "TiB"] {
        if value < 1024.0 {
            return format!("{value:.1} {unit}");
        }
        value /= 1024.0;
    }
    format!("{value:.1} PiB")
}
