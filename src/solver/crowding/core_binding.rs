//! Workers kept on cores of their own while the cores are free.
//!
//! Between frames the workers sleep, and Linux places each woken worker anew. On this
//! project's 2-core machines it put both workers of a pool of two on one core now and then:
//! in a run's first frame, and after a frame on one thread (a comparison of thread counts,
//! [`super::speed`]). The two then took turns on that core, each spinning at every barrier
//! for the other, until the kernel's load balance moved one, milliseconds later (inferred from
//! the timings: the VM offers no scheduler tracing, and binding the workers removed the waits).
//! Measured on `scenes/pile.toml` at 2 threads (docs/benchmarks.md, "Issue 13: workers bound
//! to their cores"): the workers of the first frame waited 1–38 ms for a core in 34 of 125
//! runs, and in 5 runs those waits made the first window of [`super::ThreadPolicy`] crowded,
//! so ten frames or more ran on one thread with the machine to itself (18 % more time, where
//! counted).
//!
//! So where the pool has exactly one worker for each core the process may use (its affinity
//! mask), worker `k` is bound to the `k`-th of those cores while the frames adapt to the free
//! cores. A bound worker cannot leave a core another program takes, so the binding ends for
//! good at the first crowded window or trial, and the kernel places the workers from then on,
//! as without it. Two runs side by side are bound to the same cores, find each other crowded
//! in their first window, and are released. With fewer workers than cores nothing is bound:
//! the kernel's choice then beats a fixed one (two runs on a machine of many cores would be
//! bound to the same few). Off Linux nothing is bound.

/// The pool's workers bound one to a core, until released. The workers' thread ids stay
/// with the caller ([`super::Crowding`]), which passes them to both calls.
#[derive(Debug)]
pub struct CoreBinding {
    /// The cores the process may use, restored on release.
    #[cfg(target_os = "linux")]
    allowed: libc::cpu_set_t,
}

#[cfg(target_os = "linux")]
impl CoreBinding {
    /// Binds worker `k` (thread id `tids[k]`) to the `k`-th core the process may use, where
    /// there are as many such cores as workers and more than one; `None` (nothing bound)
    /// otherwise, or where the system refuses.
    pub fn bind(tids: &[libc::pid_t]) -> Option<CoreBinding> {
        // The calling thread's cores are the process's: no thread of it is bound yet.
        let allowed = affinity(0)?;
        let cores = members(&allowed);
        if cores.len() != tids.len() || cores.len() < 2 {
            return None;
        }
        let binding = CoreBinding { allowed };
        for (&tid, &core) in tids.iter().zip(&cores) {
            // SAFETY: an all-zero `cpu_set_t` is the empty set; `core` is below its size.
            let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            unsafe { libc::CPU_SET(core, &mut one) };
            if !set_affinity(tid, &one) {
                binding.release(tids);
                return None;
            }
        }
        Some(binding)
    }

    /// Lets every worker (`tids`, as bound) run on any core the process may use again.
    pub fn release(self, tids: &[libc::pid_t]) {
        for &tid in tids {
            // A worker that has ended needs no release; nothing else can fail here.
            set_affinity(tid, &self.allowed);
        }
    }
}

#[cfg(not(target_os = "linux"))]
impl CoreBinding {
    /// Nothing is bound off Linux.
    pub fn bind(_tids: &[i32]) -> Option<CoreBinding> {
        None
    }

    pub fn release(self, _tids: &[i32]) {}
}

/// The cores thread `tid` (0: the calling thread) may use, or `None` where the system does not
/// say.
#[cfg(target_os = "linux")]
fn affinity(tid: libc::pid_t) -> Option<libc::cpu_set_t> {
    // SAFETY: an all-zero `cpu_set_t` is valid; the call writes at most its size.
    let mut cores: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    (unsafe { libc::sched_getaffinity(tid, size, &mut cores) } == 0).then_some(cores)
}

/// The cores in `set`, in order.
#[cfg(target_os = "linux")]
fn members(set: &libc::cpu_set_t) -> Vec<usize> {
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `c` is below the set's size.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, set) })
        .collect()
}

/// Sets thread `tid`'s cores; whether the system took them.
#[cfg(target_os = "linux")]
fn set_affinity(tid: libc::pid_t, cores: &libc::cpu_set_t) -> bool {
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `cores` is a valid set of `size` bytes.
    unsafe { libc::sched_setaffinity(tid, size, cores) == 0 }
}

/// The cores thread `tid` (0: the calling thread) may use, in order, for tests; one core off
/// Linux, where nothing is bound.
#[cfg(test)]
pub(super) fn cores_of(tid: i32) -> Vec<usize> {
    #[cfg(target_os = "linux")]
    {
        members(&affinity(tid).expect("the thread's cores"))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = tid;
        vec![0]
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_worker_per_core_is_bound_one_to_each_and_released_to_all() {
        let cores = cores_of(0);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(cores.len())
            .build()
            .expect("a pool");
        let tids = pool.broadcast(|_| unsafe { libc::gettid() });
        let Some(binding) = CoreBinding::bind(&tids) else {
            assert_eq!(cores.len(), 1, "more than one core, yet nothing bound");
            return;
        };
        let bound: Vec<Vec<usize>> = tids.iter().map(|&tid| cores_of(tid)).collect();
        let each: Vec<Vec<usize>> = cores.iter().map(|&c| vec![c]).collect();
        assert_eq!(bound, each);
        // The workers run on their own cores.
        let ran_on = pool.broadcast(|_| unsafe { libc::sched_getcpu() } as usize);
        assert_eq!(ran_on, cores);
        binding.release(&tids);
        assert!(tids.iter().all(|&tid| cores_of(tid) == cores));
    }

    #[test]
    fn more_or_fewer_workers_than_cores_are_not_bound() {
        let cores = cores_of(0).len();
        for workers in [cores - 1, cores + 1] {
            if workers == 0 {
                continue;
            }
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(workers)
                .build()
                .expect("a pool");
            let tids = pool.broadcast(|_| unsafe { libc::gettid() });
            assert!(CoreBinding::bind(&tids).is_none(), "{workers} workers");
            assert!(tids.iter().all(|&tid| cores_of(tid).len() == cores));
        }
    }
}
