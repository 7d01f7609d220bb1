//! A fixed pool of threads that runs the shares of one task at a time,
//! share `i` on the pool's thread `i` (the calling thread is thread 0),
//! and returns when every share has ended: the fork-join of one operator
//! of an inference, with **nothing allocated per call**.
//!
//! ```
//! use std::sync::Mutex;
//!
//! let pool = qneon_pool::Pool::new(4).unwrap();
//! let mut output = [0u32; 8];
//! // Each share owns a band of the output: borrowed, no `'static` bound,
//! // since the call returns only after every share has finished with it.
//! let bands: Vec<Mutex<&mut [u32]>> = output.chunks_mut(2).map(Mutex::new).collect();
//! pool.broadcast(bands.len(), |share| {
//!     let mut band = bands[share].lock().unwrap();
//!     band.fill(share as u32 * 10);
//! });
//! drop(bands);
//! assert_eq!(output, [0, 0, 10, 10, 20, 20, 30, 30]);
//! ```
//!
//! Why a pool of our own (measured for qneon's runtime, issue 29): the
//! runtime needs (1) tasks that borrow the session's buffers, (2) share `i`
//! always on thread `i`, so that the shares of a node run side by side
//! instead of one thread taking several while others sleep, (3) the caller
//! running a share, and (4) no allocation per invoke. `rayon::broadcast`
//! has (1) to (3) but allocates its job list at every call; `rayon::join`
//! allocates nothing but lets the caller run most shares itself;
//! `rayon::scope` boxes each spawned job; `std::thread::scope` spawns
//! threads. Running borrowed work on threads that outlive the call needs
//! the borrow's lifetime erased, which only `unsafe` can do: it is done
//! once, in [`Pool::broadcast`], with its argument beside it, and this
//! crate keeps it out of the runtime (which forbids `unsafe`).
//!
//! How a call runs: the caller stores the task (a pointer to the closure)
//! in the pool, sets the count of workers still to finish, and bumps the
//! epoch of each worker it needs (its [`Slot`]); each worker waits for its
//! epoch to change, runs its shares, and counts itself done; the caller
//! runs share 0 (and `threads`, `2 * threads`, ...), then waits until the
//! count is 0. Workers it does not need are not woken. Waiting spins
//! briefly, yields, then sleeps ([`park`]). A panic in a share is caught on
//! its thread, and the first one is resumed on the caller once every share
//! has ended, so a panic behaves as in a plain call and the pool stays
//! usable.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

use std::any::Any;
use std::cell::{Cell, UnsafeCell};
use std::io;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

mod park;

use park::Parker;

/// A task as the workers see it: its shares are `0..shares`, and thread `t`
/// of a pool of `threads` runs `t`, `t + threads`, ...
type Task<'a> = dyn Fn(usize) + Sync + 'a;

/// The task of the current call, its lifetime erased (see
/// [`Pool::broadcast`] for why it stays valid while a worker uses it).
#[derive(Clone, Copy)]
struct Job {
    task: *const Task<'static>,
    shares: usize,
}

/// A worker's mailbox: the epoch of the last call that needs it, and where
/// it sleeps.
#[derive(Debug, Default)]
struct Slot {
    posted: AtomicU64,
    parker: Parker,
}

/// What the caller and the workers share.
struct State {
    /// Written by the caller only while no worker reads it: before it posts
    /// a call, after every worker of the previous call counted itself done.
    job: UnsafeCell<Job>,
    /// One per worker (thread `i` has `slots[i - 1]`).
    slots: Box<[Slot]>,
    /// Workers of the current call that have not finished yet.
    remaining: AtomicUsize,
    /// Where the caller sleeps while it waits for `remaining` to reach 0.
    caller: Parker,
    /// The first panic of the current call's shares.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    /// Set when the pool drops: workers return.
    shutdown: AtomicBool,
}

// SAFETY: `job` is the only field that is not `Sync` by itself (an
// `UnsafeCell` holding a raw pointer). It is written by the thread that
// holds `Pool::busy`, only when no worker reads it (the handoff described
// at `State::job`, whose edges are `SeqCst` accesses of `Slot::posted` and
// `remaining`), and the task it points to is `Sync`.
unsafe impl Sync for State {}
// SAFETY: as above; the pointer is only dereferenced during a call, on
// the threads of the pool, while the caller keeps the task alive.
unsafe impl Send for State {}

thread_local! {
    /// The pool thread index this thread runs a share as, while it does.
    static INDEX: Cell<Option<usize>> = const { Cell::new(None) };
}

/// The index of the pool thread this share runs on, inside a task of
/// [`Pool::broadcast`] (0 on the calling thread); `None` outside one.
pub fn current_thread_index() -> Option<usize> {
    INDEX.with(Cell::get)
}

/// A fixed set of threads that runs one task's shares at a time (see the
/// [crate](crate) documentation).
pub struct Pool {
    state: Arc<State>,
    workers: Vec<JoinHandle<()>>,
    /// Held for a whole call (one call at a time); counts the calls, which
    /// are the epochs posted to the slots.
    busy: Mutex<u64>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("threads", &self.threads())
            .finish()
    }
}

impl Pool {
    /// A pool of `threads` threads: the caller of each
    /// [`broadcast`](Self::broadcast) and `threads - 1` workers, started
    /// now (named `qneon-worker-1` ...). Errors: `threads` 0
    /// ([`io::ErrorKind::InvalidInput`]), or a thread that could not start.
    pub fn new(threads: usize) -> io::Result<Pool> {
        if threads == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a pool needs at least one thread",
            ));
        }
        let state = Arc::new(State {
            job: UnsafeCell::new(Job {
                task: &|_| {},
                shares: 0,
            }),
            slots: (1..threads).map(|_| Slot::default()).collect(),
            remaining: AtomicUsize::new(0),
            caller: Parker::default(),
            panic: Mutex::new(None),
            shutdown: AtomicBool::new(false),
        });
        let mut pool = Pool {
            state,
            workers: Vec::with_capacity(threads - 1),
            busy: Mutex::new(0),
        };
        for index in 1..threads {
            let state = Arc::clone(&pool.state);
            let worker = std::thread::Builder::new()
                .name(format!("qneon-worker-{index}"))
                .spawn(move || work(&state, index, threads))?;
            // On an error above, `pool` drops here with the workers started
            // so far, which stop.
            pool.workers.push(worker);
        }
        Ok(pool)
    }

    /// Threads of the pool, the caller's included.
    pub fn threads(&self) -> usize {
        self.state.slots.len() + 1
    }

    /// Runs `task(share)` for every share in `0..shares`, share `i` on the
    /// pool's thread `i % threads` (the calling thread is thread 0; a
    /// thread with several shares runs them in order), and returns when all
    /// have ended. Allocates nothing.
    ///
    /// One call runs at a time: a second thread's call waits for the first.
    /// Called from inside a task (of any pool), it runs every share on the
    /// calling thread. A panic in a share ends that thread's shares; the
    /// other threads finish theirs, then the first panic is resumed here.
    pub fn broadcast<F: Fn(usize) + Sync>(&self, shares: usize, task: F) {
        let threads = self.threads();
        if shares < 2 || threads < 2 || current_thread_index().is_some() {
            let index = current_thread_index();
            INDEX.with(|i| i.set(Some(index.unwrap_or(0))));
            let ran = catch_unwind(AssertUnwindSafe(|| (0..shares).for_each(&task)));
            INDEX.with(|i| i.set(index));
            if let Err(panic) = ran {
                resume_unwind(panic);
            }
            return;
        }
        let mut epoch = self.busy.lock().unwrap_or_else(PoisonError::into_inner);
        *epoch += 1;
        let state = &*self.state;
        let helpers = shares.min(threads) - 1;
        let task: &Task<'_> = &task;
        // SAFETY: only the lifetime changes (same type, same layout). The
        // workers use the pointer between seeing their epoch change below
        // and counting themselves done in `remaining`; `Finish` (dropped
        // before this function returns or unwinds, the caller's shares'
        // panics being caught) waits until `remaining` is 0, so no worker
        // uses `task` after this call.
        let task: &'static Task<'static> =
            unsafe { std::mem::transmute::<&Task<'_>, &'static Task<'static>>(task) };
        // SAFETY: no worker reads `job` now: the previous call returned only
        // after every worker it posted had counted itself done (after its
        // read), this call holds `busy`, and no slot is posted yet.
        unsafe {
            *state.job.get() = Job { task, shares };
        }
        state.remaining.store(helpers, SeqCst);
        let finish = Finish(state);
        for slot in &state.slots[..helpers] {
            slot.posted.store(*epoch, SeqCst);
            slot.parker.wake();
        }
        INDEX.with(|i| i.set(Some(0)));
        let ran = catch_unwind(AssertUnwindSafe(|| run_shares(task, 0, shares, threads)));
        INDEX.with(|i| i.set(None));
        drop(finish);
        let first = state
            .panic
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        drop(epoch);
        if let Some(panic) = ran.err().or(first) {
            resume_unwind(panic);
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.state.shutdown.store(true, SeqCst);
        for slot in self.state.slots.iter() {
            slot.parker.wake();
        }
        for worker in self.workers.drain(..) {
            // A worker catches its tasks' panics, so it ends normally.
            let _ = worker.join();
        }
    }
}

/// Waits, when dropped, until every worker of the current call is done.
struct Finish<'s>(&'s State);

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        let state = self.0;
        state
            .caller
            .wait_until(|| state.remaining.load(SeqCst) == 0);
    }
}

/// Shares `first`, `first + threads`, ... below `shares` of `task`.
fn run_shares(task: &Task<'_>, first: usize, shares: usize, threads: usize) {
    (first..shares).step_by(threads).for_each(task);
}

/// Worker `index`'s life: wait for a call that needs it, run its shares,
/// count itself done; until the pool drops.
fn work(state: &State, index: usize, threads: usize) {
    let slot = &state.slots[index - 1];
    let mut seen = 0;
    loop {
        slot.parker
            .wait_until(|| slot.posted.load(SeqCst) != seen || state.shutdown.load(SeqCst));
        if state.shutdown.load(SeqCst) {
            return;
        }
        seen = slot.posted.load(SeqCst);
        // SAFETY: the epoch changed, so the caller wrote `job` before it
        // posted it (`SeqCst` store and load order the accesses), and will
        // not write it again before this worker decrements `remaining`.
        let job = unsafe { *state.job.get() };
        INDEX.with(|i| i.set(Some(index)));
        let ran = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: the caller keeps the task alive until `remaining` is
            // 0, which needs this worker's decrement below.
            let task = unsafe { &*job.task };
            run_shares(task, index, job.shares, threads);
        }));
        INDEX.with(|i| i.set(None));
        if let Err(panic) = ran {
            let mut first = state.panic.lock().unwrap_or_else(PoisonError::into_inner);
            first.get_or_insert(panic);
        }
        if state.remaining.fetch_sub(1, SeqCst) == 1 {
            state.caller.wake();
        }
    }
}

#[cfg(test)]
mod tests;
