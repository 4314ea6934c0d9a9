//! A libfabric counter: completed operations (and failed ones) of the endpoints
//! bound to it, bumped by the domain's worker, read and awaited by application
//! threads. A waiter sleeps on a condition variable the worker signals only when
//! someone waits, so a counter nobody waits on costs two atomic adds per operation.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

#[derive(Default)]
pub(crate) struct Counter {
    value: AtomicU64,
    errors: AtomicU64,
    waiters: AtomicUsize,
    lock: Mutex<()>,
    changed: Condvar,
}

/// How a wait ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum WaitEnd {
    Reached,
    /// The error count moved while waiting (`-FI_EAVAIL`).
    Errors,
    TimedOut,
}

impl Counter {
    pub(crate) fn read(&self) -> u64 {
        self.value.load(Ordering::Acquire)
    }

    pub(crate) fn read_err(&self) -> u64 {
        self.errors.load(Ordering::Acquire)
    }

    pub(crate) fn add(&self, n: u64) {
        self.value.fetch_add(n, Ordering::AcqRel);
        self.wake();
    }

    pub(crate) fn set(&self, v: u64) {
        self.value.store(v, Ordering::Release);
        self.wake();
    }

    pub(crate) fn add_err(&self, n: u64) {
        self.errors.fetch_add(n, Ordering::AcqRel);
        self.wake();
    }

    pub(crate) fn set_err(&self, v: u64) {
        self.errors.store(v, Ordering::Release);
        self.wake();
    }

    fn wake(&self) {
        if self.waiters.load(Ordering::Acquire) > 0 {
            // Taking the lock orders this wake after a waiter's check-then-sleep.
            drop(self.lock.lock().unwrap_or_else(|p| p.into_inner()));
            self.changed.notify_all();
        }
    }

    /// How a wait for `threshold` that began with `errors` failures ends now, if it
    /// does.
    pub(crate) fn check(&self, threshold: u64, errors: u64) -> Option<WaitEnd> {
        if self.read() >= threshold {
            Some(WaitEnd::Reached)
        } else if self.read_err() != errors {
            Some(WaitEnd::Errors)
        } else {
            None
        }
    }

    /// Waits until the count reaches `threshold`, the error count moves, or
    /// `timeout` passes (`None`: forever).
    pub(crate) fn wait(&self, threshold: u64, timeout: Option<Duration>) -> WaitEnd {
        let deadline = timeout.map(|t| Instant::now() + t);
        let errors = self.read_err();
        self.waiters.fetch_add(1, Ordering::AcqRel);
        let mut g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let end = loop {
            if let Some(end) = self.check(threshold, errors) {
                break end;
            }
            g = match deadline {
                None => self.changed.wait(g).unwrap_or_else(|p| p.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        break WaitEnd::TimedOut;
                    }
                    self.changed
                        .wait_timeout(g, d - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
            };
        };
        drop(g);
        self.waiters.fetch_sub(1, Ordering::AcqRel);
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_waiter_wakes_at_its_threshold_on_errors_or_at_its_timeout() {
        let c = Arc::new(Counter::default());
        assert_eq!(
            c.wait(1, Some(Duration::from_millis(10))),
            WaitEnd::TimedOut
        );
        let w = c.clone();
        let t = std::thread::spawn(move || w.wait(3, None));
        for _ in 0..3 {
            std::thread::sleep(Duration::from_millis(5));
            c.add(1);
        }
        assert_eq!(t.join().unwrap(), WaitEnd::Reached);
        let w = c.clone();
        let t = std::thread::spawn(move || w.wait(100, None));
        std::thread::sleep(Duration::from_millis(10));
        c.add_err(1);
        assert_eq!(t.join().unwrap(), WaitEnd::Errors);
        c.set(7);
        c.set_err(0);
        assert_eq!((c.read(), c.read_err()), (7, 0));
    }
}
