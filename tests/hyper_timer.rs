//! What hyper's timers cost on zerorx: the heap allocations of each sleep hyper asks
//! for and of each reset of one (hyper resets its keep-alive and header-read timers
//! all the time), counted on this thread by a counting global allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use zerorx::hyper::HyperTimer;
use zerorx::Runtime;

/// Allocations on this thread while `COUNTING` is set.
struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call is passed to the system allocator unchanged; the counters are
// const-initialised thread locals, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCS.with(|n| n.set(n.get() + 1));
        }
        // SAFETY: the caller's contract for `alloc`, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with `layout` (every allocation here does).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCS.with(|n| n.set(n.get() + 1));
        }
        // SAFETY: the caller's contract for `realloc`, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// `f`'s value and the allocations it made on this thread.
fn counted<T>(f: impl FnOnce() -> T) -> (T, u64) {
    ALLOCS.with(|n| n.set(0));
    COUNTING.with(|c| c.set(true));
    let out = f();
    COUNTING.with(|c| c.set(false));
    (out, ALLOCS.with(Cell::get))
}

/// Polls `sleep` once with a waker that does nothing (the poll registers the timer).
fn poll_once(sleep: &mut Pin<Box<dyn hyper::rt::Sleep>>) -> Poll<()> {
    sleep.as_mut().poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn a_hyper_sleep_is_one_allocation_and_a_reset_none() {
    use hyper::rt::Timer;
    let rt = Runtime::builder().threads(1).build().expect("runtime");
    rt.block_on(async {
        let timer = HyperTimer;
        // Warm up what a first timer grows once (the worker's timer queue).
        let mut warm = timer.sleep(Duration::from_secs(60));
        assert!(poll_once(&mut warm).is_pending());
        timer.reset(&mut warm, Instant::now() + Duration::from_secs(90));
        assert!(poll_once(&mut warm).is_pending());

        let (mut sleep, per_sleep) = counted(|| timer.sleep(Duration::from_secs(60)));
        assert!(poll_once(&mut sleep).is_pending());
        let deadline = Instant::now() + Duration::from_secs(120);
        let ((), per_reset) = counted(|| timer.reset(&mut sleep, deadline));
        assert!(poll_once(&mut sleep).is_pending());
        // Before: two boxes per sleep (the `Sleep` and its thread guard's wrapper)
        // and two new ones per reset.
        assert_eq!(
            (per_sleep, per_reset),
            (1, 0),
            "allocations per hyper sleep and per reset"
        );

        // A reset sleep fires at its new deadline, not its old one.
        let deadline = Instant::now() + Duration::from_millis(30);
        timer.reset(&mut sleep, deadline);
        sleep.as_mut().await;
        assert!(Instant::now() >= deadline);
        drop(warm);
    });
}
