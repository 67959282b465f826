//! `check`'s estimate of a run's peak resident memory, from the built model and the output
//! formats (docs/benchmarks.md, "Memory", has the measurements it is calibrated on).
//!
//! The peak of a run is reached while it steps (the build's temporaries are freed before the
//! solver starts), so the estimate is what is alive then:
//!
//! - the program itself (code, libraries, thread stacks): [`PROGRAM_BYTES`], measured as the
//!   peak of a 3 × 3 cloth;
//! - the model: per-particle arrays, each object's topology, the constraint blocks with
//!   their multipliers λ, volumes, shape matching and collider meshes;
//! - the solver: per-particle contact and frame-motion arrays, the self-collision
//!   structures of colliding objects, the fluids' buffers and neighbour lists, and their
//!   surface reconstruction;
//! - with `solver = "projective"`, its factor (sized by the symbolic analysis), the matrix
//!   and the per-substep buffers;
//! - frame output, when there is any: the snapshots handed to the writer thread, its copy of
//!   the object layouts, and per written vertex the encoded constant parts and frame buffer
//!   ([`PLY_BYTES_PER_VERTEX`], [`OBJ_BYTES_PER_VERTEX`], measured), and a checkpoint while it
//!   is written.
//!
//! The peak is what the process holds resident, so the allocator must give freed memory back:
//! [`return_large_blocks_when_freed`].

use crate::collision::clearance::Clearance;
use crate::collision::wide_bvh::BoxTree;
use crate::constraints::weighted::WeightedPosition;
use crate::model::{Model, ObjectLayout};
use crate::scene::types::Format;
use glam::DVec3;
use std::mem::size_of;

/// Holds glibc's `mmap` threshold, the size from which `malloc` maps each block on its own
/// and unmaps it when freed, at glibc's own starting value of 128 KiB for the rest of the
/// process, so that the memory of large blocks goes back to the system when they are freed.
/// Called once at start, before any thread allocates; nothing to do with other C libraries.
///
/// Left alone, glibc raises the threshold to the size of every mapped block that is freed,
/// up to 32 MiB, so that large blocks freed once are served from the heap afterwards. A run
/// frees large blocks every frame (the fluid surface's dense grids in the worker threads,
/// the writer's frame buffers), so after the first frames they came from each thread's
/// heap, where freed memory stays resident and fragments: scenes/water_on_cloth.toml
/// peaked at 58.9 MiB with PLY frames and 45.3 MiB without, against 40.1 and 32.0 MiB with
/// the threshold held (docs/benchmarks.md, "Issue 13: memory freed between frames").
/// Setting the threshold also stops glibc from raising the heap's trim threshold with it.
pub fn return_large_blocks_when_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets a parameter of the allocator; when it rejects one (it
    // returns 0) the allocator keeps its default, which is still correct.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
    }
}

/// Resident memory of a run of a 3 × 3 cloth (release build, Linux): code, libraries, the
/// worker and writer threads' stacks. Measured 8.4 MiB on 2026-11-27 (the binary has grown
/// with USD, sparse algebra and surface reconstruction since the 6 MiB first measured; the
/// debug build's is 9.9 MiB), and 8.8–9.1 MiB since large blocks are unmapped when freed
/// ([`return_large_blocks_when_freed`]; 8.2–8.5 before, in the same sitting).
pub const PROGRAM_BYTES: usize = 9_000 << 10;

/// Writer memory per written vertex for PLY beyond the snapshots and layouts: the encoded
/// faces and header, the frame buffer (binary, about 70 B per vertex with normals and
/// velocities) and the vertex scratch. Measured on cloth-256 and drape-128.
pub const PLY_BYTES_PER_VERTEX: usize = 90;

/// The same for OBJ: text frames (about 180 B per vertex with normals and UVs), their
/// constant `vt` and `f` lines.
pub const OBJ_BYTES_PER_VERTEX: usize = 370;

/// A run's estimated peak, by part (bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Estimate {
    pub program: usize,
    /// Model and solver state.
    pub state: usize,
    /// Frame output (0 without frame files).
    pub output: usize,
}

impl Estimate {
    pub fn total(&self) -> usize {
        self.program + self.state + self.output
    }
}

/// The estimate for running `model` for `frames` frames writing `formats`, with a checkpoint
/// every `checkpoint_every` frames (0: none).
pub fn estimate(model: &Model, formats: &[Format], frames: u64, checkpoint_every: u64) -> Estimate {
    let layouts: usize = model.objects.iter().map(layout_bytes).sum();
    let checkpoints = !formats.is_empty() && checkpoint_every > 0 && frames > checkpoint_every;
    Estimate {
        program: PROGRAM_BYTES,
        state: particle_bytes(model, !formats.is_empty())
            + layouts
            + constraint_bytes(model)
            + collider_bytes(model)
            + projective_bytes(model),
        output: output_bytes(model, formats, layouts, frames)
            + if checkpoints {
                checkpoint_bytes(model)
            } else {
                0
            },
    }
}

/// A checkpoint while it is written ([`crate::output::checkpoint`]): the solver state
/// encoded in memory ([`crate::solver::state`]: per particle its position, start-of-substep
/// position and velocity, mass, inverse mass and owner; the topology of objects that tear;
/// the rest lengths and angles of a plastic model) and the file's write buffer. Only a run
/// that writes frame files writes checkpoints. Measured: 6.2 MiB on cloth-256, whose state
/// is 6.0 MB (docs/benchmarks.md, "Issue 13: memory freed between frames").
fn checkpoint_bytes(model: &Model) -> usize {
    const WRITE_BUFFER: usize = 1 << 20;
    // The owner is encoded as a u64, as every index of the state is.
    let per_particle = 3 * size_of::<DVec3>() + 2 * size_of::<f64>() + size_of::<u64>();
    let torn_topology: usize = (model.objects.iter())
        .filter(|o| o.tearing.is_some())
        .map(layout_bytes)
        .sum();
    let rest_states = if model.is_plastic() {
        let clustered: usize = model.shape_matching.iter().map(|c| c.rest().len()).sum();
        (model.stretch.len() + model.bending.len()) * size_of::<f64>()
            + clustered * size_of::<DVec3>()
    } else {
        0
    };
    WRITE_BUFFER + model.particles.len() * per_particle + torn_topology + rest_states
}

/// With `solver = "projective"`: the factor, its matrix, the terms and their buffers.
fn projective_bytes(model: &Model) -> usize {
    match model.params.projective {
        Some(_) => crate::solver::projective::System::estimate_bytes(model),
        None => 0,
    }
}

/// Per particle: the model's arrays (x, x_prev, v, inverse mass, mass, owner) and the
/// solver's (collider contact, collides flag; frame motion only with frame files; normals and
/// surface motion only with colliders, and the held normals with colliders and contacts
/// between particles; with a mesh collider a clearance per particle and collider,
/// [`crate::collision::clearance`]; the padded copy the XPBD sweeps work on,
/// [`crate::constraints::weighted`]), plus self collision's rest positions and candidate
/// lists.
fn particle_bytes(model: &Model, frame_files: bool) -> usize {
    let n = model.particles.len();
    let model_arrays = 3 * size_of::<DVec3>() + 2 * size_of::<f64>() + size_of::<u32>();
    let mut solver = size_of::<u32>() + size_of::<bool>();
    if frame_files {
        solver += 2 * size_of::<DVec3>();
    }
    // Objects whose particles touch others' or their own.
    let taking_part =
        || (0..model.objects.len()).filter(|&k| model.touches_particles(k) != (false, false));
    if !model.colliders.is_empty() {
        solver += 2 * size_of::<DVec3>();
        if taking_part().next().is_some() {
            solver += size_of::<DVec3>();
        }
        if model.colliders.iter().any(|c| c.mesh.is_some()) {
            solver += model.colliders.len() * size_of::<Clearance>();
        }
    }
    let mut bytes = n * (model_arrays + solver);
    bytes += crate::solver::step::weighted_len(model, n) * size_of::<WeightedPosition>();
    // The self-collision owner copy and list of colliding particles.
    bytes += n * size_of::<u32>();
    let particles_taking_part: usize = taking_part()
        .map(|k| model.objects[k].particles.len())
        .sum();
    if particles_taking_part > 0 {
        // The near lists' reference boxes (by particle), and for each particle that takes
        // part its box in the sphere-pair search, its share of that search's tree and its
        // sphere pairs in the lists (two sets of buffers, lent back and forth): 300 bytes
        // per particle, calibrated on two 81 × 81 cloths lying on each other (measured 4.4
        // MB more than the hash the sphere pairs were searched with before).
        bytes += n * size_of::<(DVec3, DVec3)>() + particles_taking_part * 300;
    }
    if model.objects.iter().any(|o| o.self_collision) {
        bytes += n * size_of::<DVec3>();
        let triangles: usize = (model.objects.iter())
            .filter(|o| o.self_collision)
            .map(|o| o.triangles.len())
            .sum();
        // Triangles and edges, their swept boxes, two trees, the rest-close tables and the
        // near lists: 1.5 KiB per triangle, calibrated on the whole run of scenes/pile.toml
        // (the lists are longest once the cloth lies folded).
        bytes += triangles * 1536;
    }
    if !model.fluids.is_empty() {
        // The fluid buffers are per particle of the scene (src/solver/fluids.rs).
        bytes += n * FLUID_BUFFER_BYTES;
        let fluid: usize = model.fluids.iter().map(|b| b.particles.len()).sum();
        bytes += fluid * FLUID_SEARCH_BYTES;
    }
    if model.objects.iter().any(|o| o.fluid_surface.is_some()) {
        let with_surface = model.objects.iter().filter(|o| o.fluid_surface.is_some());
        let particles: usize = with_surface.map(|o| o.particles.len()).sum();
        bytes += FLUID_SURFACE_WORKSPACE + particles * FLUID_SURFACE_BYTES;
    }
    bytes
}

/// Fluid surfaces (`fluid.surface`): splashsurf's dense subdomain grids and the surface mesh
/// in the solver and the writer. What they take depends on how far the fluid spreads (the
/// mesh of scenes/water_on_cloth.toml grows from 8 496 triangles to 88 240 as the water runs
/// over the cloth, scenes/dam_break.toml's from 15 528 to 40 812), which the scene does not
/// say. With [`FLUID_SURFACE_BYTES`] this is the value, 8 MiB, that puts both shipped fluid
/// scenes within 20 % of their peaks at 1 and 2 threads, with frames and without, but for the
/// dam break without frames at 1 thread, whose peak it overestimates by a third (its grids are
/// per worker thread): measured 4.3–10.1 MiB for the dam break's surface and 8.4–15.9 MiB for
/// the water on cloth's (docs/benchmarks.md, "Issue 13: memory freed between frames" and
/// "Issue 13: fluid surfaces in subdomains of 32 cubes, measured and not taken").
const FLUID_SURFACE_WORKSPACE: usize = 8 << 20;

/// Per particle of a fluid with a surface: its density, neighbours and subdomain lists in
/// splashsurf, the velocity interpolation's tree, and the mesh (about two triangles per
/// particle at the surface) in the solver and in the writer's snapshot.
const FLUID_SURFACE_BYTES: usize = 400;

/// Per particle of a scene with fluids: density, λ, and the wall gradient, correction,
/// vorticity and smoothed velocity (`FluidState`).
const FLUID_BUFFER_BYTES: usize = 2 * 8 + 4 * 24;

/// Per fluid particle: the threads' neighbour lists and hashes, and the search the frame's
/// figures and the PLY densities make again (about 33 neighbours each at `h = 2 s`).
/// Calibrated on scenes/bench/dam-100k.toml without output: 66 MiB measured, then 48 B
/// more when the two hashes took each entry's position beside it (73–77 MiB measured).
const FLUID_SEARCH_BYTES: usize = 338;

/// An object's topology as the model keeps it.
fn layout_bytes(object: &ObjectLayout) -> usize {
    let mesh = &object.topology;
    let uvs = mesh.uvs.as_ref().map_or(0, Vec::len) * size_of::<[f64; 2]>()
        + (mesh.corner_uvs.as_ref()).map_or(0, |c| {
            c.texcoords.len() * size_of::<[f64; 2]>() + mesh.face_indices.len() * 4
        });
    mesh.positions.len() * size_of::<DVec3>()
        + uvs
        + (mesh.face_indices.len() + mesh.face_offsets.len()) * size_of::<u32>()
        + mesh.corner_smoothing.as_ref().map_or(0, Vec::len) * size_of::<u32>()
        + mesh.segments.len() * size_of::<[u32; 2]>()
        + mesh.tets.len() * size_of::<[u32; 4]>()
        + object.triangles.len() * size_of::<[u32; 3]>()
        + (object.source_vertex.len() + object.split_particles.len()) * size_of::<u32>()
}

/// Every constraint with its λ (f64), volumes and shape-matching clusters.
fn constraint_bytes(model: &Model) -> usize {
    fn block<K>(block: &crate::solver::colouring::ConstraintBlock<K>) -> usize {
        block.len() * (size_of::<K>() + size_of::<f64>())
    }
    let volumes: usize = (model.volumes.iter())
        .map(|v| v.triangles.len() * 12 + v.particles.len() * size_of::<DVec3>())
        .sum();
    let clusters: usize = (model.shape_matching.iter())
        .map(|c| c.particles.len() * 32)
        .sum();
    block(&model.stretch)
        + block(&model.tets)
        + block(&model.bending)
        + block(&model.isometric_bending)
        + block(&model.rope_bending)
        + block(&model.long_range)
        + volumes
        + clusters
}

/// Mesh colliders: every frame's positions, the triangles and the tree over their boxes.
fn collider_bytes(model: &Model) -> usize {
    (model.colliders.iter())
        .filter_map(|c| c.mesh.as_ref())
        .map(|m| {
            let positions: usize = m.frames.iter().map(|f| f.len() * size_of::<DVec3>()).sum();
            let per_triangle = size_of::<[u32; 3]>() + BoxTree::BYTES_PER_LEAF;
            positions + m.triangles.len() * per_triangle
        })
        .sum()
}

/// The writer: up to three snapshots of positions and velocities (one being written, one
/// waiting, one recycled), its copy of the layouts, and per written vertex what each format
/// encodes.
/// The USD stage per written vertex and frame: the whole stage is built in memory when it is
/// rewritten (points, velocities, normals as `f32` in the openusd layer, its copy while
/// encoding, and the encoded bytes). Measured: cloth-256 for 40 frames as `usd` peaks at 291 MiB,
/// 94 bytes per vertex and frame above the same run's model (docs/benchmarks.md "Writers").
const USD_BYTES_PER_VERTEX_FRAME: usize = 90;

/// A point cache (MDD, PC2) per written vertex: the frame's spool record and the surface
/// kept for it (measured, docs/benchmarks.md "Memory").
const POINT_CACHE_BYTES_PER_VERTEX: usize = 40;

fn output_bytes(model: &Model, formats: &[Format], layouts: usize, frames: u64) -> usize {
    if formats.is_empty() {
        return 0;
    }
    let snapshots = 3 * model.particles.len() * 2 * size_of::<DVec3>();
    let vertices: usize = model
        .objects
        .iter()
        .map(|o| o.topology.positions.len())
        .sum();
    let per_vertex: usize = (formats.iter())
        .map(|format| match format {
            Format::Ply => PLY_BYTES_PER_VERTEX,
            Format::Obj => OBJ_BYTES_PER_VERTEX,
            Format::Mdd | Format::Pc2 => POINT_CACHE_BYTES_PER_VERTEX,
            Format::Usd | Format::Usda => {
                POINT_CACHE_BYTES_PER_VERTEX + USD_BYTES_PER_VERTEX_FRAME * frames as usize
            }
        })
        .sum();
    snapshots + layouts + vertices * per_vertex
}
