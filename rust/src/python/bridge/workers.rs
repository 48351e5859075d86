//! The threads engine calls run on, named `contextforge-worker`.
//!
//! Like tokio's blocking pool (a thread per call in flight, idle threads kept a while), with one
//! difference that matters for latency: a worker that finishes a call spins briefly for the next before
//! it sleeps. Calls from one asyncio task follow each other closely, and waking a sleeping thread costs
//! about as much again on a virtual machine, where a sleeping CPU is handed back to the host. Only one
//! worker spins at a time, only while no other runs a call, and it yields its core to any thread that
//! wants it.
//!
//! A call wakes the worker that went to sleep last: the warmest thread takes it, and threads left over
//! from a burst of calls stay asleep and end.
//!
//! Every decision about who takes a call (the spinner, a sleeper, a new thread) is made under the
//! queue's lock, so none is lost between them.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::runtime::runtime;

type Job = Box<dyn FnOnce() + Send>;

/// How long a worker that finished a call waits, awake, for the next.
const SPIN: Duration = Duration::from_micros(200);
/// How long an idle worker sleeps before its thread ends.
const KEEP_IDLE: Duration = Duration::from_secs(10);
/// The most threads at once (tokio's default); calls beyond that wait for a
/// free one.
const MAX_THREADS: usize = 512;

struct Queue {
    jobs: VecDeque<Job>,
    /// Sleeping workers, each waiting on its own condition variable; the one
    /// that went to sleep last is last.
    sleepers: Vec<Arc<Condvar>>,
}

impl Queue {
    /// Wakes the worker that went to sleep last, if any sleeps.
    fn wake_one(&mut self) {
        if let Some(sleeper) = self.sleepers.pop() {
            sleeper.notify_one();
        }
    }
}

struct Pool {
    queue: Mutex<Queue>,
    /// Set while the queue holds a job, for the spinning worker to watch.
    pending: AtomicBool,
    /// Workers not running a call (spinning or sleeping). Changed under the
    /// queue's lock, except when a worker starts spinning.
    idle: AtomicUsize,
    threads: AtomicUsize,
    /// Workers running a call.
    running: AtomicUsize,
    /// Cleared under the queue's lock.
    spinning: AtomicBool,
    /// The process this pool belongs to.
    pid: u32,
}

/// This process's pool. A child of `fork()` gets a new one: it has none of the
/// parent's threads, and the parent's locks and condition variable still list
/// them as waiters, so they are never touched again (and never freed).
fn pool() -> &'static Pool {
    static POOL: AtomicPtr<Pool> = AtomicPtr::new(std::ptr::null_mut());
    let me = std::process::id();
    loop {
        let current = POOL.load(Ordering::Acquire);
        // SAFETY: a pool is leaked when made and never freed, so the pointer
        // stays valid for the life of the process.
        if let Some(pool) = unsafe { current.as_ref() } {
            if pool.pid == me {
                return pool;
            }
        }
        let fresh = Box::into_raw(Box::new(Pool::new(me)));
        if POOL.compare_exchange(current, fresh, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            // SAFETY: just leaked above.
            return unsafe { &*fresh };
        }
        // Another thread installed one first: free ours (never shared) and use it.
        // SAFETY: `fresh` came from `Box::into_raw` and was never published.
        drop(unsafe { Box::from_raw(fresh) });
    }
}

/// Runs `job` on a worker thread.
pub fn spawn(job: impl FnOnce() + Send + 'static) {
    let pool = pool();
    let mut queue = pool.queue.lock();
    queue.jobs.push_back(Box::new(job));
    pool.pending.store(true, Ordering::Release);
    let waiting = queue.jobs.len();
    if pool.spinning.load(Ordering::Acquire) && waiting == 1 {
        return; // the spinning worker takes it
    }
    if pool.idle.load(Ordering::Acquire) >= waiting {
        // An idle worker not asleep is on its way to the lock, and looks at
        // the queue before it sleeps.
        queue.wake_one();
        return;
    }
    if pool.threads.fetch_add(1, Ordering::AcqRel) < MAX_THREADS {
        let started =
            std::thread::Builder::new().name("contextforge-worker".into()).spawn(move || pool.work());
        if started.is_ok() {
            return;
        }
    }
    pool.threads.fetch_sub(1, Ordering::AcqRel);
    queue.wake_one();
}

impl Pool {
    fn new(pid: u32) -> Self {
        Self {
            queue: Mutex::new(Queue { jobs: VecDeque::new(), sleepers: Vec::new() }),
            pending: AtomicBool::new(false),
            idle: AtomicUsize::new(0),
            threads: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            spinning: AtomicBool::new(false),
            pid,
        }
    }

    fn work(&self) {
        // Engine calls drive storage futures with `block_on`, and may drop
        // resources that need the runtime's context.
        let _ctx = runtime().enter();
        let me = Arc::new(Condvar::new());
        while let Some(job) = self.next(&me) {
            self.running.fetch_add(1, Ordering::AcqRel);
            job();
            self.running.fetch_sub(1, Ordering::AcqRel);
        }
    }

    fn take(&self, queue: &mut Queue) -> Option<Job> {
        let job = queue.jobs.pop_front();
        self.pending.store(!queue.jobs.is_empty(), Ordering::Release);
        job
    }

    /// The next job; `None` when the thread has been idle long enough to end
    /// (its counts are taken off then, under the queue's lock).
    fn next(&self, me: &Arc<Condvar>) -> Option<Job> {
        let mut queue = self.queue.lock();
        if let Some(job) = self.take(&mut queue) {
            return Some(job);
        }
        self.idle.fetch_add(1, Ordering::AcqRel);
        drop(queue);
        let job = self.spin();
        let mut queue = self.queue.lock();
        let job = job.or_else(|| self.sleep(&mut queue, me));
        self.idle.fetch_sub(1, Ordering::AcqRel);
        if job.is_none() {
            self.threads.fetch_sub(1, Ordering::AcqRel);
        }
        job
    }

    /// Waits awake for a job, unless another worker is spinning or running a
    /// call: then the cores are busy, and spinning would take one from them.
    fn spin(&self) -> Option<Job> {
        if self.running.load(Ordering::Acquire) > 0 || self.spinning.swap(true, Ordering::AcqRel) {
            return None;
        }
        let until = Instant::now() + SPIN;
        loop {
            if self.pending.load(Ordering::Acquire) || Instant::now() >= until {
                // Taking a job and no longer spinning are one step for `spawn`.
                let mut queue = self.queue.lock();
                let job = self.take(&mut queue);
                if job.is_some() || Instant::now() >= until {
                    self.spinning.store(false, Ordering::Release);
                    return job;
                }
            }
            std::thread::yield_now();
        }
    }

    /// Sleeps on `me` until woken for a job or idle for `KEEP_IDLE`.
    fn sleep(&self, queue: &mut MutexGuard<'_, Queue>, me: &Arc<Condvar>) -> Option<Job> {
        loop {
            if let Some(job) = self.take(queue) {
                return Some(job);
            }
            queue.sleepers.push(Arc::clone(me));
            let timed_out = me.wait_for(queue, KEEP_IDLE).timed_out();
            // Whoever woke this worker took it off the list; a timeout did not.
            if let Some(at) = queue.sleepers.iter().rposition(|s| Arc::ptr_eq(s, me)) {
                queue.sleepers.remove(at);
            }
            if timed_out {
                return self.take(queue);
            }
        }
    }
}
