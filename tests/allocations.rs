//! Issue 13: once its buffers have grown, the solver allocates nothing per substep — not in
//! the constraint stages, and not in the contact searches (the spatial hashes, the near lists
//! and their rebuilds, the candidate chunks) or the fluid neighbour search, and not where
//! mesh colliders move or keys carry pins. A test binary of its own with a single test, so
//! that the counting allocator below sees that test's allocations alone.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use xpbd_sim::scene::build::build;
use xpbd_sim::scene::load::{parse, LoadedScene};
use xpbd_sim::solver::step::Solver;

/// The system allocator, counting the calls that may allocate.
struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's promises, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A cloth hanging over a ball that folds onto itself on the ground (self collision: sphere
/// pairs, point–triangle and edge–edge lists, rebuilt as it falls), and a block of water
/// poured beside it (fluid hashes and neighbour lists).
const SCENE: &str = "\
[simulation]\nfps = 24\nframes = 10\niterations = 1\n\
[collision]\nthickness = 0.01\n\
[[object]]\nname = \"cloth\"\ngrid = { size = [0.4, 0.8], resolution = [8, 16] }\n\
rotate = [90.0, 0.0, 15.0]\ntranslate = [0.0, 0.45, 0.0]\ndensity = 0.2\n\
stretch = { compliance = 0.0 }\nbending = { compliance = 20.0 }\nself_collision = true\n\
[[object]]\nname = \"water\"\n\
fluid = { box = { min = [0.3, 0.05, 0.3], max = [0.4, 0.15, 0.4] }, spacing = 0.025 }\n\
density = 1000.0\n\
[[collider]]\nname = \"ball\"\nshape = \"sphere\"\ncenter = [0.0, 0.1, 0.15]\nradius = 0.1\n\
[[collider]]\nname = \"ground\"\nshape = \"plane\"\nfriction = 0.5\n";

/// A keyed mesh collider (an octahedron turning and rising), a cloth pinned to it by
/// `pin_to` (pins on its surface) draped over it, and a second cloth carried by its own keys.
const MOVING_SCENE: &str = "\
[simulation]\nfps = 24\nframes = 10\niterations = 1\n\
[collision]\nthickness = 0.01\n\
[[object]]\nname = \"cape\"\ngrid = { size = [0.3, 0.3], resolution = [8, 8] }\n\
translate = [0.0, 0.2, 0.0]\ndensity = 0.2\npin_region = { min = [-0.2, 0.19, -0.03], max = [0.2, 0.21, 0.03] }\n\
pin_to = \"body\"\nstretch = { compliance = 0.0 }\nbending = { compliance = 20.0 }\n\
[[object]]\nname = \"flag\"\ngrid = { size = [0.3, 0.3], resolution = [8, 8] }\n\
translate = [1.0, 0.5, 0.0]\ndensity = 0.2\npin = [0, 7]\nstretch = { compliance = 0.0 }\n\
keys = [ { frame = 1, translate = [0.0, 0.0, 0.0] }, { frame = 11, translate = [0.0, 0.3, 0.2] } ]\n\
[[collider]]\nname = \"body\"\nshape = \"mesh\"\nmesh = \"octahedron.obj\"\n\
keys = [ { frame = 1, rotate = [0.0, 0.0, 0.0] }, { frame = 11, translate = [0.0, 0.1, 0.0], rotate = [0.0, 60.0, 0.0] } ]\n";

/// The collider of [`MOVING_SCENE`]: corners 0.2 m from its centre, the origin.
const OCTAHEDRON: &str = "v 0.2 0 0\nv -0.2 0 0\nv 0 0.2 0\nv 0 -0.2 0\nv 0 0 0.2\nv 0 0 -0.2\n\
f 1 3 5\nf 3 2 5\nf 2 4 5\nf 4 1 5\nf 3 1 6\nf 2 3 6\nf 4 2 6\nf 1 4 6\n";

/// Allocations during frames 5 to 10 of `scene` (its meshes in `base_dir`) at `substeps`
/// substeps per frame, 2 threads, after four frames in which the buffers grow.
fn allocations_in_later_frames(scene: &str, base_dir: &Path, substeps: usize) -> usize {
    let scene = scene.replace(
        "iterations = 1",
        &format!("iterations = 1\nsubsteps = {substeps}"),
    );
    let file = parse(&scene).expect("scene");
    let scene = LoadedScene {
        path: base_dir.join("allocations.toml"),
        base_dir: base_dir.into(),
        sha256: String::new(),
        file,
    };
    let mut solver = Solver::new(build(&scene).expect("model").model, 2).expect("threads");
    for _ in 0..4 {
        solver.step_frame().expect("no divergence");
    }
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    for _ in 4..10 {
        solver.step_frame().expect("no divergence");
    }
    ALLOCATIONS.load(Ordering::Relaxed) - before
}

/// Requires `scene` to allocate no more at 32 substeps per frame than at 8 (give or take a
/// buffer still growing: one allocation per 20 extra substeps).
fn allocates_nothing_per_substep(name: &str, scene: &str, base_dir: &Path) {
    let (few, many) = (8, 32);
    let at_few = allocations_in_later_frames(scene, base_dir, few);
    let at_many = allocations_in_later_frames(scene, base_dir, many);
    let extra_substeps = 6 * (many - few);
    println!("{name}: allocations in frames 5-10: {at_few} at {few} substeps, {at_many} at {many}");
    // What a frame allocates (the threads' meeting) is the same at any number of substeps;
    // buffers that still grow may reallocate a few times in either run. Before this test the
    // contact search alone made about 90 allocations in every substep of a folding cloth, and
    // a moving mesh collider 3 (the threads met after every substep).
    assert!(
        at_many <= at_few + extra_substeps / 20,
        "{name}: {at_few} allocations in 6 frames at {few} substeps, {at_many} at {many}: \
         more substeps allocate more"
    );
}

#[test]
fn issue_13_no_allocation_per_substep() {
    allocates_nothing_per_substep("self collision and fluid", SCENE, Path::new("."));
    let dir = std::env::temp_dir().join(format!("xpbd-allocations-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    std::fs::write(dir.join("octahedron.obj"), OCTAHEDRON).expect("collider mesh");
    allocates_nothing_per_substep("moving mesh collider and keyed pins", MOVING_SCENE, &dir);
    std::fs::remove_dir_all(&dir).ok();
}
