//! The crate's one tokio runtime.
//!
//! libSQL's local calls block the thread they run on, so the engine's API is
//! synchronous: the bindings run it on their worker threads (`python/bridge/workers.rs`,
//! named `contextforge-worker`), which drive libSQL's futures on this runtime, whose
//! own threads are named `contextforge-runtime`. The runtime is created lazily on
//! first use. CPU work split across cores (preparing a batch's entries, the
//! embedder) runs on [`pool`]. After `fork()` the child has no runtime threads:
//! open stores after forking, not before (the pool starts again in the child).

use std::future::Future;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::OnceLock;

use tokio::runtime::Runtime;

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

pub fn runtime() -> &'static Runtime {
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .max_blocking_threads(64)
            .thread_name("contextforge-runtime")
            .enable_all()
            .build()
            .unwrap_or_else(|err| panic!("cannot start the tokio runtime: {err}"))
    })
}

/// The threads that share out CPU work (preparing a batch's entries, the
/// embedder's parts), one per core, started on first use and kept. A thread
/// started for each call cost its start-up every time, and left what it had
/// allocated that outlived it (cached token counts, regex caches) on memory
/// pages no live thread would fill again (a call of 1,000 entries started one
/// per core). A job here must never wait on another thread's progress (a
/// channel, a lock held across a write): the pool is small.
///
/// A child process after `fork()` has none of the parent's threads, so it
/// starts a pool of its own (an embedder may be used without a store). No lock
/// is taken, so a fork at any moment leaves the child nothing held.
pub fn pool() -> &'static rayon_core::ThreadPool {
    /// The pool, with the process that started it; never freed once installed.
    static POOL: AtomicPtr<(u32, rayon_core::ThreadPool)> = AtomicPtr::new(std::ptr::null_mut());
    let pid = std::process::id();
    loop {
        let current = POOL.load(Ordering::Acquire);
        // SAFETY: a pointer in POOL came from `Box::into_raw` below and is never freed
        // (a parent's pool, replaced in a child, is left as it is: its threads are the parent's).
        if let Some((owner, threads)) = unsafe { current.as_ref() } {
            if *owner == pid {
                return threads;
            }
        }
        let threads = rayon_core::ThreadPoolBuilder::new()
            .num_threads(cores())
            .thread_name(|_| "contextforge-pool".to_owned())
            .build()
            .unwrap_or_else(|err| panic!("cannot start the worker pool: {err}"));
        let mine = Box::into_raw(Box::new((pid, threads)));
        if POOL.compare_exchange(current, mine, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            // SAFETY: just installed, and never freed.
            return unsafe { &(*mine).1 };
        }
        // Another thread installed one first: ours was never shared.
        // SAFETY: `mine` came from `Box::into_raw` above and was never published.
        drop(unsafe { Box::from_raw(mine) });
    }
}

/// The cores this process may use, read once: `available_parallelism` reads
/// the cgroup files on every call, which a single save paid for each time.
pub fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
}

/// Drives a storage future to completion from a thread that may block.
pub fn block_on<F: Future>(fut: F) -> F::Output {
    runtime().handle().block_on(fut)
}

/// `scope.spawn(f)` on a thread named `name` (the crate's threads are named `contextforge-*`, so that
/// tools tell them apart); panics, as `scope.spawn` does, when no thread can be started.
pub fn scoped<'scope, T: Send + 'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    name: &str,
    f: impl FnOnce() -> T + Send + 'scope,
) -> std::thread::ScopedJoinHandle<'scope, T> {
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn_scoped(scope, f)
        .unwrap_or_else(|err| panic!("cannot start a thread: {err}"))
}
