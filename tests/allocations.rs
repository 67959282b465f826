//! Issue 13: once its buffers have grown, the solver allocates nothing per substep — not in
//! the constraint stages, and not in the contact searches (the spatial hashes, the near lists
//! and their rebuilds, the candidate chunks) or the fluid neighbour search. A test binary of
//! its own, so that the counting allocator below sees this test's allocations alone.

use std::alloc::{GlobalAlloc, Layout, System};
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

/// Allocations during frames 5 to 10 at `substeps` substeps per frame, 2 threads, after four
/// frames in which the buffers grow.
fn allocations_in_later_frames(substeps: usize) -> usize {
    let scene = SCENE.replace(
        "iterations = 1",
        &format!("iterations = 1\nsubsteps = {substeps}"),
    );
    let file = parse(&scene).expect("scene");
    let scene = LoadedScene {
        path: "allocations.toml".into(),
        base_dir: ".".into(),
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

#[test]
fn issue_13_no_allocation_per_substep() {
    let (few, many) = (8, 32);
    let at_few = allocations_in_later_frames(few);
    let at_many = allocations_in_later_frames(many);
    let extra_substeps = 6 * (many - few);
    println!("allocations in frames 5-10: {at_few} at {few} substeps, {at_many} at {many}");
    // What a frame allocates (the threads' meeting) is the same at any number of substeps;
    // buffers that still grow may reallocate a few times in either run. Before this test the
    // contact search alone made about 90 allocations in every substep of a folding cloth.
    assert!(
        at_many <= at_few + extra_substeps / 20,
        "{at_few} allocations in 6 frames at {few} substeps, {at_many} at {many}: \
         more substeps allocate more"
    );
}
