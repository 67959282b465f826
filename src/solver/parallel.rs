//! The pieces of the parallel solver: a spinning barrier and a slice that several threads may
//! write at disjoint indices.
//!
//! The substep runs SPMD-style (Box2D v3's solver): every worker thread of the run's pool runs
//! the same sequence of stages, each on its own share of the work, and all meet at a
//! [`SpinBarrier`] between stages. Within a stage no two threads touch the same element:
//! per-particle stages split the particles into contiguous ranges, and a constraint colour holds
//! only constraints that share no particle, split into contiguous ranges of the colour. So the
//! result of every stage is the same whatever the number of threads, bit for bit.
//!
//! Starting a parallel region per colour (rayon `par_chunks`) costs more than the work of a
//! small colour; meeting at a spinning barrier costs a few hundred nanoseconds.

use std::marker::PhantomData;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A reusable barrier for a fixed number of threads that spins (then yields, so more threads
/// than cores still make progress) instead of sleeping in the kernel.
pub struct SpinBarrier {
    threads: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
}

/// Spins before yielding the core while waiting at a barrier.
const SPINS_BEFORE_YIELD: u32 = 2_000;

impl SpinBarrier {
    pub fn new(threads: usize) -> Self {
        SpinBarrier {
            threads,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
        }
    }

    /// Waits until all `threads` have called `wait`. Everything a thread wrote before its call
    /// is visible to every thread after it (the last arrival's `AcqRel` increment acquires the
    /// others' releases; its `Release` of the generation publishes them; waiters acquire it).
    pub fn wait(&self) {
        if self.threads == 1 {
            return;
        }
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.threads {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::AcqRel);
            return;
        }
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == generation {
            if spins < SPINS_BEFORE_YIELD {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// Thread `index` of `threads`'s contiguous share of `range`.
pub fn share(range: Range<usize>, index: usize, threads: usize) -> Range<usize> {
    let len = range.len();
    range.start + len * index / threads..range.start + len * (index + 1) / threads
}

/// A mutable slice shared by the threads of one SPMD stage.
///
/// Rust cannot see that the threads of a stage touch disjoint elements (a constraint names its
/// particles by index), so access is `unsafe`, with one rule for callers: **between two
/// barrier waits, an element written by one thread is neither read nor written by another.**
/// The colouring guarantees it for constraint stages (`colours_share_no_particle` test) and
/// [`share`] for per-particle stages. Under that rule every access is to memory no other
/// thread is using, which is exactly what `&mut` would promise.
pub struct SharedSlice<'a, T> {
    pointer: *mut T,
    len: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

// SAFETY: a SharedSlice is a `&mut [T]` handed to several threads under the disjointness rule
// above; sending or sharing it is sound when sending `T` is.
unsafe impl<T: Send> Send for SharedSlice<'_, T> {}
unsafe impl<T: Send> Sync for SharedSlice<'_, T> {}

impl<'a, T> SharedSlice<'a, T> {
    pub fn new(slice: &'a mut [T]) -> Self {
        SharedSlice {
            pointer: slice.as_mut_ptr(),
            len: slice.len(),
            _borrow: PhantomData,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The whole slice, mutable.
    ///
    /// # Safety
    /// No other thread may access any element until the caller's next barrier wait, and the
    /// returned reference must not outlive that wait.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn all(&self) -> &mut [T] {
        // SAFETY: pointer and len come from a live `&'a mut [T]`; exclusivity is the caller's
        // promise above.
        unsafe { std::slice::from_raw_parts_mut(self.pointer, self.len) }
    }

    /// Elements `range`, mutable (bounds-checked).
    ///
    /// # Safety
    /// No other thread may access these elements until the caller's next barrier wait, and
    /// the returned reference must not outlive that wait.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn range(&self, range: Range<usize>) -> &mut [T] {
        assert!(
            range.start <= range.end && range.end <= self.len,
            "range out of bounds"
        );
        // SAFETY: in bounds (checked above) of a live `&'a mut [T]`; exclusivity is the
        // caller's promise above.
        unsafe { std::slice::from_raw_parts_mut(self.pointer.add(range.start), range.len()) }
    }
}

impl<'a> SharedSlice<'a, glam::DVec3> {
    /// This thread's view of the positions for one constraint stage.
    ///
    /// # Safety
    /// Until the caller's next barrier wait, this thread may touch only particles that no
    /// other thread touches in the same stage (one colour's share, or a stage run by one
    /// thread while the others wait), and the view must not outlive that wait.
    pub unsafe fn stage_view(&self) -> StageView<'_, 'a> {
        StageView { positions: self }
    }
}

/// Positions as one thread sees them during one stage; elements are read and written one at a
/// time through the raw pointer, never as overlapping `&mut` slices.
pub struct StageView<'s, 'a> {
    positions: &'s SharedSlice<'a, glam::DVec3>,
}

impl crate::constraints::Positions for StageView<'_, '_> {
    #[inline]
    fn get(&self, i: usize) -> glam::DVec3 {
        assert!(i < self.positions.len, "particle index out of bounds");
        // SAFETY: in bounds; no other thread writes particle i during this stage
        // (`stage_view`'s contract).
        unsafe { self.positions.pointer.add(i).read() }
    }

    #[inline]
    fn add(&mut self, i: usize, delta: glam::DVec3) {
        assert!(i < self.positions.len, "particle index out of bounds");
        // SAFETY: in bounds; no other thread reads or writes particle i during this stage
        // (`stage_view`'s contract).
        unsafe {
            let p = self.positions.pointer.add(i);
            p.write(p.read() + delta);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_cover_the_range_exactly_once() {
        for threads in 1..=7 {
            let mut next = 3;
            for index in 0..threads {
                let part = share(3..20, index, threads);
                assert_eq!(part.start, next);
                next = part.end;
            }
            assert_eq!(next, 20);
        }
    }

    #[test]
    fn barrier_orders_writes_between_stages() {
        // Each stage: thread t writes cell t, then after the barrier reads its neighbour's.
        let threads = 4;
        let barrier = SpinBarrier::new(threads);
        let mut cells = vec![0usize; threads];
        let shared = SharedSlice::new(&mut cells);
        std::thread::scope(|scope| {
            for t in 0..threads {
                let (barrier, shared) = (&barrier, &shared);
                scope.spawn(move || {
                    for stage in 1..=200 {
                        // SAFETY: cell t is only this thread's during the write stage.
                        unsafe { shared.range(t..t + 1)[0] = stage * 10 + t };
                        barrier.wait();
                        let neighbour = (t + 1) % threads;
                        // SAFETY: nobody writes during the read stage.
                        let seen = unsafe { shared.range(neighbour..neighbour + 1)[0] };
                        assert_eq!(seen, stage * 10 + neighbour);
                        barrier.wait();
                    }
                });
            }
        });
    }
}
