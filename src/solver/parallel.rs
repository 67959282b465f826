//! The pieces of the parallel solver: a spinning barrier, a slice that several threads may
//! write at disjoint indices, and a queue of tasks for stages of uneven pieces.
//!
//! The substep runs SPMD-style (Box2D v3's solver): every worker thread of the run's pool runs
//! the same sequence of stages, each on its own share of the work, and all meet at a
//! [`SpinBarrier`] between stages. Within a stage no two threads touch the same element:
//! per-particle stages split the particles into contiguous ranges, and a constraint colour holds
//! only constraints that share no particle, split into contiguous ranges of whole batches of
//! the colour ([`batch_share`]). So the
//! result of every stage is the same whatever the number of threads, bit for bit.
//!
//! Starting a parallel region per colour (rayon `par_chunks`) costs more than the work of a
//! small colour; meeting at a spinning barrier costs a few hundred nanoseconds.
//!
//! Reads that every thread makes of a whole array nobody writes in that stage (the substep's
//! start positions, pinned particles) go through [`SharedSlice::as_slice`].

use std::marker::PhantomData;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

/// A reusable barrier for a fixed number of threads. It spins first (meeting costs a few
/// hundred nanoseconds when every thread has a core), then sleeps on a condition variable, so
/// more threads than cores still make progress instead of burning their time slices.
/// A worker that panics poisons it, and every thread waiting then panics too, so a failure
/// ends the frame instead of leaving the others waiting forever.
pub struct SpinBarrier {
    threads: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
    poisoned: AtomicBool,
    /// Threads that stopped spinning and sleep (or are about to) on `wake`: the last
    /// arrival wakes them only when there are any, since a wake-up is a system call even
    /// with no one to wake (std's futex condition variable), and the solver meets at a
    /// barrier some 80 times per substep.
    sleepers: AtomicUsize,
    sleeping: Mutex<()>,
    wake: Condvar,
}

/// Spins before sleeping while waiting at a barrier.
const SPINS_BEFORE_SLEEP: u32 = 4_000;

impl SpinBarrier {
    pub fn new(threads: usize) -> Self {
        SpinBarrier {
            threads,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            poisoned: AtomicBool::new(false),
            sleepers: AtomicUsize::new(0),
            sleeping: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    /// Waits until all `threads` have called `wait`. Everything a thread wrote before its call
    /// is visible to every thread after it (the last arrival's `AcqRel` increment acquires the
    /// others' releases; its release of the generation publishes them; waiters acquire it).
    /// Panics if the barrier was poisoned.
    ///
    /// No sleeper is missed: a sleeper counts itself in `sleepers` and then checks the
    /// generation, the last arrival moves the generation and then reads `sleepers`, all four
    /// sequentially consistent, so either the sleeper sees the new generation or the arrival
    /// sees the sleeper; and the arrival wakes under the lock the sleeper checks under.
    pub fn wait(&self) {
        if self.threads == 1 {
            return;
        }
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.threads {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::SeqCst);
            if self.sleepers.load(Ordering::SeqCst) > 0 {
                let _guard = self.sleeping.lock().unwrap_or_else(PoisonError::into_inner);
                self.wake.notify_all();
            }
            return;
        }
        for _ in 0..SPINS_BEFORE_SLEEP {
            if self.generation.load(Ordering::Acquire) != generation {
                return;
            }
            self.check_poison();
            std::hint::spin_loop();
        }
        let mut guard = self.sleeping.lock().unwrap_or_else(PoisonError::into_inner);
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        while self.generation.load(Ordering::SeqCst) == generation {
            if self.poisoned.load(Ordering::Acquire) {
                self.sleepers.fetch_sub(1, Ordering::SeqCst);
                drop(guard);
                self.check_poison();
                return;
            }
            guard = self
                .wake
                .wait(guard)
                .unwrap_or_else(PoisonError::into_inner);
        }
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }

    /// Marks the barrier failed and wakes every waiter (they panic).
    pub fn poison(&self) {
        self.poisoned.store(true, Ordering::Release);
        let _guard = self.sleeping.lock().unwrap_or_else(PoisonError::into_inner);
        self.wake.notify_all();
    }

    fn check_poison(&self) {
        if self.poisoned.load(Ordering::Acquire) {
            panic!("another worker thread failed");
        }
    }
}

/// Tasks `0..count` handed out one at a time to whichever thread asks next: for stages whose
/// pieces cost unevenly in ways the data does not tell in advance (a tree build against a
/// hash, the near-list search of a folded part of the cloth against a flat one), so a thread
/// that finishes early takes more instead of waiting at the barrier. Every task writes its
/// result to a place of its own and that result depends on the task alone, so who ran it
/// changes no bit; the results are then read in task order after a barrier.
#[derive(Debug, Default)]
pub struct TaskQueue {
    next: AtomicUsize,
}

impl TaskQueue {
    /// Hands the tasks out again from the first. Only in a stage in which no thread takes.
    pub fn reset(&self) {
        self.next.store(0, Ordering::Relaxed);
    }

    /// The next task of `0..count` nobody has taken, if any. Each is handed out once
    /// between resets; what a task wrote is seen by the other threads after the next
    /// barrier, like any write of a stage.
    pub fn take(&self, count: usize) -> Option<usize> {
        let task = self.next.fetch_add(1, Ordering::Relaxed);
        (task < count).then_some(task)
    }
}

/// The chunks of `0..len` that thread `index` of `threads` takes when a per-particle stage is
/// dealt out in interleaved chunks of `chunk`: chunk k goes to thread k mod `threads`. For the
/// stages whose cost per particle follows the particle order: a particle near a mesh collider
/// walks its tree, one far from it stops at the root's box, and a mesh's particles lie in
/// rows, so contiguous shares gave one thread most of the walks. Each particle is computed
/// alone in such a stage, so how they are dealt out changes no bit.
pub fn interleaved(
    len: usize,
    index: usize,
    threads: usize,
    chunk: usize,
) -> impl Iterator<Item = Range<usize>> {
    assert!(
        index < threads && chunk > 0,
        "a thread of the run, chunks of some particles"
    );
    (index * chunk..len)
        .step_by(threads * chunk)
        .map(move |start| start..(start + chunk).min(len))
}

/// Thread `index` of `threads`'s contiguous share of `range`.
pub fn share(range: Range<usize>, index: usize, threads: usize) -> Range<usize> {
    let len = range.len();
    range.start + len * index / threads..range.start + len * (index + 1) / threads
}

/// Stable counting sort of the indices `0..keys.len()` by their keys (each below `buckets`)
/// into `order`, ascending within a bucket; leaves `buckets + 1` entries in `starts`, bucket
/// `b` being `order[starts[b]..starts[b + 1]]`. Into the callers' buffers, so a schedule made
/// every substep allocates nothing once they have grown: the contacts' wavefront levels
/// ([`super::contact_levels`]) and the feature pairs' colours ([`super::pair_colours`]).
pub fn sort_into_buckets(
    keys: impl ExactSizeIterator<Item = usize> + Clone,
    buckets: usize,
    starts: &mut Vec<usize>,
    order: &mut Vec<u32>,
) {
    starts.clear();
    starts.resize(buckets + 2, 0);
    for key in keys.clone() {
        starts[key + 2] += 1;
    }
    // Now `starts[b + 1]` is where bucket `b` starts; the scatter moves it to where it ends,
    // which is where bucket `b + 1` starts.
    for b in 0..buckets {
        starts[b + 2] += starts[b + 1];
    }
    order.resize(keys.len(), 0);
    for (k, key) in keys.enumerate() {
        let slot = &mut starts[key + 1];
        order[*slot] = k as u32;
        *slot += 1;
    }
    starts.pop();
}

/// Thread `index` of `threads`'s share of one colour `range` of constraints, in whole batches
/// of `batch` constraints counted from the colour's start: which constraints share a batch
/// does not depend on the thread count, only which thread projects it.
pub fn batch_share(
    range: Range<usize>,
    batch: usize,
    index: usize,
    threads: usize,
) -> Range<usize> {
    let batches = share(0..range.len().div_ceil(batch), index, threads);
    let start = (range.start + batches.start * batch).min(range.end);
    start..(range.start + batches.end * batch).min(range.end)
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

    /// The whole slice, read-only.
    ///
    /// # Safety
    /// No thread may write any element while the returned reference lives: usually, until
    /// the caller's next barrier wait, which the reference must not outlive; or for longer,
    /// where the caller shows that no thread writes meanwhile.
    pub unsafe fn as_slice(&self) -> &[T] {
        // SAFETY: pointer and len come from a live `&'a mut [T]`; nobody writes meanwhile
        // (the caller's promise), so shared references from several threads are fine.
        unsafe { std::slice::from_raw_parts(self.pointer, self.len) }
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

impl<'a, T> SharedSlice<'a, T> {
    /// This thread's view of the particles for one constraint stage.
    ///
    /// # Safety
    /// Until the caller's next barrier wait, this thread may write only particles that no
    /// other thread reads or writes in the same stage (one colour's share, or a stage run by
    /// one thread while the others wait); particles nobody writes (pinned ones) may be read by
    /// several threads. The view must not outlive that wait.
    pub unsafe fn stage_view(&self) -> StageView<'_, T> {
        StageView {
            pointer: self.pointer,
            len: self.len,
            _borrow: PhantomData,
        }
    }
}

/// Particles as one thread sees them during one stage: positions ([`glam::DVec3`]), or
/// positions with their inverse masses for the constraint sweeps
/// ([`crate::constraints::weighted::WeightedPosition`]). Elements are read and written one at
/// a time through the raw pointer, never as overlapping `&mut` slices. It holds its own copy of
/// the pointer, not a reference to the [`SharedSlice`]: the compiler cannot tell a write
/// through the pointer from a write to the slice's fields, and would reload the pointer after
/// every particle written.
pub struct StageView<'s, T> {
    pointer: *mut T,
    len: usize,
    _borrow: PhantomData<&'s ()>,
}

impl crate::constraints::Positions for StageView<'_, glam::DVec3> {
    #[inline(always)]
    fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    unsafe fn get_unchecked(&self, i: usize) -> glam::DVec3 {
        // SAFETY: in bounds (the caller's promise); no other thread writes particle i during
        // this stage (`stage_view`'s contract).
        unsafe { self.pointer.add(i).read() }
    }

    #[inline(always)]
    unsafe fn add_unchecked(&mut self, i: usize, delta: glam::DVec3) {
        // SAFETY: in bounds (the caller's promise); no other thread reads or writes particle
        // i during this stage (`stage_view`'s contract).
        unsafe {
            let p = self.pointer.add(i);
            p.write(p.read() + delta);
        }
    }

    #[inline(always)]
    fn as_ptr(&self) -> *const glam::DVec3 {
        self.pointer
    }
}

impl crate::constraints::weighted::WeightedPositions
    for StageView<'_, crate::constraints::weighted::WeightedPosition>
{
    #[inline(always)]
    fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    fn as_ptr(&self) -> *const crate::constraints::weighted::WeightedPosition {
        self.pointer
    }

    #[inline(always)]
    fn as_mut_ptr(&mut self) -> *mut crate::constraints::weighted::WeightedPosition {
        self.pointer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_sorted_stably_and_empty_ones_kept() {
        let keys = [2usize, 0, 2, 3, 0, 2];
        let (mut starts, mut order) = (vec![9; 2], vec![7; 9]);
        sort_into_buckets(keys.iter().copied(), 5, &mut starts, &mut order);
        assert_eq!(order, [1, 4, 0, 2, 5, 3]);
        assert_eq!(starts, [0, 2, 2, 5, 6, 6]);
        sort_into_buckets([].into_iter(), 2, &mut starts, &mut order);
        assert!(order.is_empty() && starts == [0, 0, 0]);
    }

    #[test]
    fn interleaved_chunks_cover_the_range_exactly_once() {
        for (len, threads, chunk) in [(0, 1, 4), (5, 2, 4), (16, 2, 4), (17, 3, 4), (100, 8, 7)] {
            let mut seen = vec![0; len];
            for index in 0..threads {
                for range in interleaved(len, index, threads, chunk) {
                    assert!(!range.is_empty() && range.len() <= chunk);
                    assert_eq!(
                        range.start / chunk % threads,
                        index,
                        "chunk k on thread k mod n"
                    );
                    range.for_each(|i| seen[i] += 1);
                }
            }
            assert!(
                seen.iter().all(|&n| n == 1),
                "{len} {threads} {chunk}: {seen:?}"
            );
        }
    }

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
    fn a_task_queue_hands_every_task_to_exactly_one_thread() {
        let (queue, threads, count) = (TaskQueue::default(), 4, 1000);
        for _round in 0..2 {
            let taken: Vec<Vec<usize>> = std::thread::scope(|scope| {
                let workers: Vec<_> = (0..threads)
                    .map(|_| scope.spawn(|| std::iter::from_fn(|| queue.take(count)).collect()))
                    .collect();
                workers.into_iter().map(|w| w.join().unwrap()).collect()
            });
            let mut all: Vec<usize> = taken.concat();
            all.sort_unstable();
            assert_eq!(all, (0..count).collect::<Vec<_>>());
            assert_eq!(queue.take(count), None, "nothing left until a reset");
            queue.reset();
        }
    }

    #[test]
    fn batch_shares_cover_the_colour_in_whole_batches() {
        for threads in 1..=5 {
            let mut next = 5;
            for index in 0..threads {
                let part = batch_share(5..42, 8, index, threads);
                assert_eq!(part.start, next);
                assert!((part.start - 5).is_multiple_of(8) || part.is_empty());
                next = part.end;
            }
            assert_eq!(next, 42);
        }
    }

    #[test]
    fn a_failing_worker_releases_the_others() {
        let barrier = SpinBarrier::new(3);
        let finished = std::thread::scope(|scope| {
            let waiters: Vec<_> = (0..2)
                .map(|_| {
                    scope.spawn(|| {
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| barrier.wait()))
                            .is_err()
                    })
                })
                .collect();
            std::thread::sleep(std::time::Duration::from_millis(50));
            barrier.poison();
            waiters
                .into_iter()
                .map(|w| w.join().unwrap())
                .collect::<Vec<bool>>()
        });
        assert_eq!(
            finished,
            vec![true, true],
            "both waiters must stop with a panic"
        );
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

    #[test]
    fn sleepers_are_woken_whenever_the_last_thread_arrives_late() {
        // Threads arrive in turn a little late, so the others spin out and sleep; a lost
        // wake-up would leave them asleep, which the watchdog reports instead of hanging.
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let threads = 3;
            let barrier = SpinBarrier::new(threads);
            std::thread::scope(|scope| {
                for t in 0..threads {
                    let barrier = &barrier;
                    scope.spawn(move || {
                        for stage in 0..150 {
                            if stage % threads == t && stage % 2 == 0 {
                                std::thread::sleep(std::time::Duration::from_millis(2));
                            }
                            barrier.wait();
                        }
                    });
                }
            });
            done.send(()).unwrap();
        });
        let waited = finished.recv_timeout(std::time::Duration::from_secs(60));
        assert!(
            waited.is_ok(),
            "the threads did not all get past the barriers"
        );
    }
}
