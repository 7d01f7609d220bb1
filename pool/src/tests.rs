use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

use super::*;

/// Calls per stress test (fewer under Miri, which is slow).
const CALLS: usize = if cfg!(miri) { 20 } else { 2_000 };

#[test]
fn every_share_runs_once_on_its_thread() {
    for threads in [1, 2, 3, 4, 8] {
        let pool = Pool::new(threads).unwrap();
        assert_eq!(pool.threads(), threads);
        for shares in 0..20 {
            let ran: Vec<Mutex<Vec<usize>>> = (0..shares).map(|_| Mutex::new(Vec::new())).collect();
            pool.broadcast(shares, |share| {
                ran[share]
                    .lock()
                    .unwrap()
                    .push(current_thread_index().unwrap());
            });
            for (share, threads_that_ran) in ran.iter().enumerate() {
                let expected = if threads == 1 { 0 } else { share % threads };
                assert_eq!(
                    *threads_that_ran.lock().unwrap(),
                    [expected],
                    "{threads} threads, {shares} shares, share {share}"
                );
            }
        }
        assert_eq!(current_thread_index(), None);
    }
}

#[test]
fn shares_write_borrowed_bands_call_after_call() {
    let pool = Pool::new(4).unwrap();
    let mut output = vec![0usize; 40];
    for call in 0..CALLS {
        let shares = 1 + call % 6;
        let band = output.len().div_ceil(shares);
        {
            let bands: Vec<Mutex<&mut [usize]>> = output.chunks_mut(band).map(Mutex::new).collect();
            pool.broadcast(bands.len(), |share| {
                bands[share].lock().unwrap().fill(call * 100 + share);
            });
        }
        for (i, &v) in output.iter().enumerate() {
            assert_eq!(v, call * 100 + i / band, "call {call}, element {i}");
        }
    }
}

#[test]
fn a_panic_in_a_share_reaches_the_caller_after_the_others_end_and_the_pool_goes_on() {
    let pool = Pool::new(4).unwrap();
    for panicking in [0, 2] {
        let done = AtomicUsize::new(0);
        let result = catch_unwind(AssertUnwindSafe(|| {
            pool.broadcast(4, |share| {
                assert_ne!(share, panicking, "share {share} fails");
                done.fetch_add(1, Relaxed);
            })
        }));
        let panic = result.unwrap_err();
        let message = panic.downcast_ref::<String>().unwrap();
        assert!(
            message.contains(&format!("share {panicking} fails")),
            "{message}"
        );
        assert_eq!(done.load(Relaxed), 3);
        assert_eq!(current_thread_index(), None);
        let after = AtomicUsize::new(0);
        pool.broadcast(4, |_| {
            after.fetch_add(1, Relaxed);
        });
        assert_eq!(after.load(Relaxed), 4);
    }
}

#[test]
fn a_call_inside_a_task_runs_its_shares_on_that_thread() {
    let pool = Pool::new(3).unwrap();
    let inner: Vec<Mutex<Vec<usize>>> = (0..3).map(|_| Mutex::new(Vec::new())).collect();
    pool.broadcast(3, |outer| {
        pool.broadcast(4, |_| {
            inner[outer]
                .lock()
                .unwrap()
                .push(current_thread_index().unwrap());
        });
        assert_eq!(current_thread_index(), Some(outer));
    });
    for (outer, ran) in inner.iter().enumerate() {
        assert_eq!(*ran.lock().unwrap(), [outer; 4]);
    }
}

#[test]
fn calls_from_several_threads_take_turns() {
    let pool = Pool::new(3).unwrap();
    let total = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                for _ in 0..CALLS / 10 {
                    let seen: Vec<AtomicUsize> = (0..5).map(|_| AtomicUsize::new(0)).collect();
                    pool.broadcast(5, |share| {
                        seen[share].fetch_add(1, Relaxed);
                        total.fetch_add(1, Relaxed);
                    });
                    assert!(seen.iter().all(|s| s.load(Relaxed) == 1));
                }
            });
        }
    });
    assert_eq!(total.load(Relaxed), 3 * (CALLS / 10) * 5);
}

#[test]
fn no_threads_is_an_error_and_a_pool_drops_with_sleeping_workers() {
    assert_eq!(
        Pool::new(0).unwrap_err().kind(),
        io::ErrorKind::InvalidInput
    );
    let pool = Pool::new(8).unwrap();
    pool.broadcast(8, |_| {});
    // Long enough for the workers to go from spinning to sleeping.
    std::thread::sleep(std::time::Duration::from_millis(if cfg!(miri) {
        1
    } else {
        50
    }));
    drop(pool);
}
