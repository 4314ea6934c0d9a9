//! Which thread is the owner of a pool.
//!
//! Every thread gets a process-unique number the first time it asks; unlike
//! `std::thread::ThreadId` comparisons this costs one thread-local read, and unlike a
//! thread-local address it is never reused by a later thread.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static ID: Cell<u64> = const { Cell::new(0) };
}

/// The calling thread's number (never 0).
pub(crate) fn current() -> u64 {
    ID.with(|id| {
        let mut v = id.get();
        if v == 0 {
            v = NEXT.fetch_add(1, Ordering::Relaxed);
            id.set(v);
        }
        v
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_are_stable_per_thread_and_distinct_across_threads() {
        let here = super::current();
        assert_eq!(here, super::current());
        let there = std::thread::spawn(super::current).join().expect("thread");
        assert_ne!(here, there);
        assert_ne!(there, 0);
    }
}
