//! The threads engine calls run on.
//!
//! Like tokio's blocking pool (a thread per call in flight, idle threads kept a
//! while), with one difference that matters for latency: a worker that finishes
//! a call spins briefly for the next before it sleeps. Calls from one asyncio
//! task follow each other a few tens of microseconds apart, and waking a
//! sleeping thread costs about that much again on a virtual machine, where a
//! sleeping CPU is handed back to the host. Only one worker spins at a time,
//! only while no other runs a call, and it yields its core to any thread that
//! wants it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::runtime::runtime;

type Job = Box<dyn FnOnce() + Send>;

/// How long a worker that finished a call waits, awake, for the next.
const SPIN: Duration = Duration::from_micros(200);
/// How long an idle worker sleeps before its thread ends.
const KEEP_IDLE: Duration = Duration::from_secs(10);
/// The most threads at once; calls beyond that wait for a free one.
const MAX_THREADS: usize = 64;

struct Pool {
    queue: Mutex<VecDeque<Job>>,
    /// Set while `queue` is not empty, for the spinning worker to watch.
    pending: AtomicBool,
    ready: Condvar,
    /// Workers not running a call (spinning or sleeping).
    idle: AtomicUsize,
    threads: AtomicUsize,
    /// Workers running a call.
    running: AtomicUsize,
    spinning: AtomicBool,
    /// The process the counts above belong to: a child of `fork()` starts
    /// without the parent's threads.
    pid: AtomicU32,
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| Pool {
        queue: Mutex::new(VecDeque::new()),
        pending: AtomicBool::new(false),
        ready: Condvar::new(),
        idle: AtomicUsize::new(0),
        threads: AtomicUsize::new(0),
        running: AtomicUsize::new(0),
        spinning: AtomicBool::new(false),
        pid: AtomicU32::new(std::process::id()),
    })
}

/// Runs `job` on a worker thread.
pub fn spawn(job: impl FnOnce() + Send + 'static) {
    let pool = pool();
    pool.after_fork();
    let waiting = {
        let mut queue = pool.queue.lock();
        queue.push_back(Box::new(job));
        pool.pending.store(true, Ordering::Release);
        queue.len()
    };
    if pool.spinning.load(Ordering::Acquire) && waiting == 1 {
        return; // the spinning worker takes it
    }
    if pool.idle.load(Ordering::Acquire) >= waiting {
        pool.ready.notify_one();
        return;
    }
    if pool.threads.fetch_add(1, Ordering::AcqRel) < MAX_THREADS {
        let started = std::thread::Builder::new()
            .name("contextforge".into())
            .spawn(move || pool.work());
        if started.is_ok() {
            return;
        }
    }
    pool.threads.fetch_sub(1, Ordering::AcqRel);
    pool.ready.notify_one();
}

impl Pool {
    /// In a forked child, forgets the parent's workers (only the forking
    /// thread was copied) and the calls they had queued.
    fn after_fork(&self) {
        let me = std::process::id();
        if self.pid.swap(me, Ordering::AcqRel) != me {
            self.queue.lock().clear();
            self.pending.store(false, Ordering::Release);
            self.idle.store(0, Ordering::Release);
            self.threads.store(0, Ordering::Release);
            self.running.store(0, Ordering::Release);
            self.spinning.store(false, Ordering::Release);
        }
    }

    fn work(&self) {
        // Engine calls drive storage futures with `block_on`, and may drop
        // resources that need the runtime's context.
        let _ctx = runtime().enter();
        loop {
            let Some(job) = self.next() else { break };
            self.running.fetch_add(1, Ordering::AcqRel);
            job();
            self.running.fetch_sub(1, Ordering::AcqRel);
        }
        self.threads.fetch_sub(1, Ordering::AcqRel);
    }

    fn take(&self, queue: &mut VecDeque<Job>) -> Option<Job> {
        let job = queue.pop_front();
        self.pending.store(!queue.is_empty(), Ordering::Release);
        job
    }

    /// The next job; `None` when the thread has been idle long enough to end.
    fn next(&self) -> Option<Job> {
        if let Some(job) = self.take(&mut self.queue.lock()) {
            return Some(job);
        }
        self.idle.fetch_add(1, Ordering::AcqRel);
        let job = self.spin().or_else(|| self.sleep());
        self.idle.fetch_sub(1, Ordering::AcqRel);
        job
    }

    /// Waits awake for a job, unless another worker is spinning or running a
    /// call: then the cores are busy, and spinning would take one from them.
    fn spin(&self) -> Option<Job> {
        if self.running.load(Ordering::Acquire) > 0 || self.spinning.swap(true, Ordering::AcqRel) {
            return None;
        }
        let until = Instant::now() + SPIN;
        let mut job = None;
        while Instant::now() < until {
            if self.pending.load(Ordering::Acquire) {
                job = self.take(&mut self.queue.lock());
                if job.is_some() {
                    break;
                }
            }
            std::thread::yield_now();
        }
        self.spinning.store(false, Ordering::Release);
        job
    }

    fn sleep(&self) -> Option<Job> {
        let mut queue = self.queue.lock();
        loop {
            if let Some(job) = self.take(&mut queue) {
                return Some(job);
            }
            if self.ready.wait_for(&mut queue, KEEP_IDLE).timed_out() {
                return self.take(&mut queue);
            }
        }
    }
}
