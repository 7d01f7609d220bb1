//! Waiting for a condition another thread makes true: spin a little, then
//! yield the core a few times, then sleep until woken ([`Parker`]).
//!
//! Why this order: the nodes of an inference come back to back, a few
//! microseconds to a few milliseconds apart, so a worker that has just
//! finished a share is usually needed again soon; spinning catches that
//! without a system call on either side. Yielding next lets the threads
//! that still work have the core when there are more threads than cores
//! (an emulator, or a busy board). Sleeping last keeps an idle session
//! from burning a core.

use std::sync::atomic::{fence, AtomicBool, Ordering::SeqCst};
use std::sync::{Condvar, Mutex, PoisonError};

/// Checks of the condition with a spin hint between them before yielding.
const SPINS: u32 = 64;
/// `yield_now` rounds before sleeping (rayon's workers yield 32 times).
const YIELDS: u32 = 32;

/// Where one thread sleeps while it waits, and how another wakes it.
///
/// The protocol (no lost wake-up): the waiter sets `sleeping`, then checks
/// its condition, then sleeps on the condition variable, all while holding
/// `lock`; the waker makes the condition true, then reads `sleeping`, and
/// if set notifies while holding `lock`. Every one of these accesses is
/// `SeqCst`, so either the waiter's check sees the condition true, or the
/// waker's read sees `sleeping` set, and then its `lock` waits until the
/// waiter sleeps (the condition variable releases `lock`) before it
/// notifies.
#[derive(Debug, Default)]
pub(crate) struct Parker {
    sleeping: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
}

impl Parker {
    /// Returns once `ready()` is true (read with `SeqCst` by the caller's
    /// closure), waiting as the module says.
    pub(crate) fn wait_until(&self, ready: impl Fn() -> bool) {
        for _ in 0..SPINS {
            if ready() {
                return;
            }
            std::hint::spin_loop();
        }
        for _ in 0..YIELDS {
            if ready() {
                return;
            }
            std::thread::yield_now();
        }
        let mut guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            self.sleeping.store(true, SeqCst);
            // A full barrier between the store and the condition's load (and
            // in `wake` between the condition's store and this flag's load):
            // `SeqCst` accesses alone order them in Rust's model, but an
            // emulator (qemu's aarch64 on an x86 host) was measured to let
            // `stlr` then `ldar` pass each other and lose a wake-up (a hang
            // of the 4-thread allocation test, every thread in a futex wait);
            // a fence is a `dmb`, which it honours.
            fence(SeqCst);
            if ready() {
                self.sleeping.store(false, SeqCst);
                return;
            }
            guard = self
                .wake
                .wait(guard)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Wakes the waiter if it sleeps; call after making its condition true.
    pub(crate) fn wake(&self) {
        fence(SeqCst);
        if self.sleeping.load(SeqCst) {
            let _guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
            self.sleeping.store(false, SeqCst);
            self.wake.notify_all();
        }
    }
}
