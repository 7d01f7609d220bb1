//! A call allocates nothing, on any thread: a counting allocator over the
//! whole process, around calls after a first. Without the libtest harness
//! (`harness = false`): its main thread, the only other thread, could
//! allocate while the counting runs.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;

use qneon_pool::Pool;

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged; counting is an
// atomic add.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(SeqCst) {
            ALLOCATIONS.fetch_add(1, SeqCst);
        }
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(SeqCst) {
            ALLOCATIONS.fetch_add(1, SeqCst);
        }
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn main() {
    calls_allocate_nothing_on_any_thread();
    println!("no_alloc: calls allocate nothing on 2, 4 and 8 threads");
}

fn calls_allocate_nothing_on_any_thread() {
    for threads in [2, 4, 8] {
        let pool = Pool::new(threads).unwrap();
        let mut output = vec![0u8; 1000];
        let mut call = |shares: usize, value: u8| {
            let band = output.len().div_ceil(shares);
            let mut bands: [Option<Mutex<&mut [u8]>>; 8] = Default::default();
            for (slot, chunk) in bands.iter_mut().zip(output.chunks_mut(band)) {
                *slot = Some(Mutex::new(chunk));
            }
            pool.broadcast(shares, |share| {
                if let Some(band) = &bands[share] {
                    band.lock().unwrap().fill(value);
                }
            });
        };
        // The first call: thread-locals and lazily made state.
        call(threads, 1);
        ALLOCATIONS.store(0, SeqCst);
        COUNTING.store(true, SeqCst);
        for i in 0..500 {
            call(1 + i % threads, i as u8);
            // Now and then long enough for the workers to sleep.
            if i % 100 == 0 {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        COUNTING.store(false, SeqCst);
        assert_eq!(ALLOCATIONS.load(SeqCst), 0, "{threads} threads");
        assert!(output.iter().all(|&b| b == (499 % 256) as u8));
    }
}
