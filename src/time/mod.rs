//! Timers: a binary heap of deadlines per worker, checked once per loop turn; the
//! nearest deadline bounds the loop's wait in `io_uring_enter` (`SubmitArgs::timespec`),
//! so no timer op is ever submitted to the kernel.
//!
//! Cancelled timers are removed from the slab at once and skipped lazily in the heap;
//! the heap is rebuilt when stale entries outnumber live ones.

mod interval;
mod sleep;
mod timeout;

pub use interval::{interval, interval_at, Interval, MissedTickBehavior};
pub use sleep::{sleep, sleep_until, Sleep};
pub use timeout::{timeout, Elapsed, Timeout};

use crate::driver::slab::{GenSlab, Key};
use crate::thread_slot::{self, Owner};
use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::rc::Rc;
use std::task::Waker;
use std::time::Instant;

/// One worker's timers and its clock for the turn. The worker owns it and installs it
/// on its thread ([`enter`]); timer futures find it there, so they need nothing of the
/// runtime.
#[derive(Default)]
pub(crate) struct Timers {
    pub(crate) queue: RefCell<TimerQueue>,
    /// [`turn_time`] after a kernel wait, cleared by the next one.
    pub(crate) turn_time: Cell<Option<Instant>>,
}

thread_local! {
    static OWNED: RefCell<Option<Owner<Timers>>> = const { RefCell::new(None) };
    static CURRENT: Cell<*const Timers> = const { Cell::new(std::ptr::null()) };
}

/// Makes `timers` this thread's until [`exit`] (the worker's loop runs between).
pub(crate) fn enter(timers: Rc<Timers>) {
    thread_slot::install(&OWNED, &CURRENT, timers);
}

/// Takes this thread's timers away again.
pub(crate) fn exit() {
    drop(thread_slot::take(&OWNED));
}

/// Runs `f` with this thread's timers; `None` off a worker thread.
pub(crate) fn with_timers<R>(f: impl FnOnce(&Timers) -> R) -> Option<R> {
    thread_slot::with(&CURRENT, f)
}

/// "Now" to within one loop turn: the clock read by the first call after the
/// worker's last kernel wait, then kept until the next wait (a clock read per request
/// showed in RPC profiles, and one per turn in echo profiles). Off a worker thread, the
/// clock. For bookkeeping such as idle timeouts, never for measuring.
pub fn turn_time() -> Instant {
    with_timers(Timers::turn_time).unwrap_or_else(Instant::now)
}

impl Timers {
    /// [`turn_time`] of these timers: the worker's timer check shares the clock read
    /// of its tasks' turn.
    pub(crate) fn turn_time(&self) -> Instant {
        match self.turn_time.get() {
            Some(now) => now,
            None => {
                let now = Instant::now();
                self.turn_time.set(Some(now));
                now
            }
        }
    }
}

struct TimerEntry {
    deadline: Instant,
    waker: Option<Waker>,
    fired: bool,
}

/// The timers of one worker.
#[derive(Default)]
pub(crate) struct TimerQueue {
    entries: GenSlab<TimerEntry>,
    heap: BinaryHeap<Reverse<(Instant, Key)>>,
    /// No timer is due before this (`None`: none pending): the earliest deadline
    /// [`fire`](Self::fire) saw or a later insert set. A removal leaves it early, which
    /// costs one look at the heap when it passes. Most loop turns need only this
    /// compare (an RPC connection's idle timer sits at the heap's top for seconds).
    next: Option<Instant>,
}

impl TimerQueue {
    pub(crate) fn insert(&mut self, deadline: Instant, waker: Waker) -> Key {
        let key = self.entries.insert(TimerEntry {
            deadline,
            waker: Some(waker),
            fired: false,
        });
        self.heap.push(Reverse((deadline, key)));
        if self.next.is_none_or(|n| deadline < n) {
            self.next = Some(deadline);
        }
        key
    }

    /// [`fire`](Self::fire) at `now`, unless no timer can be due yet: then only the
    /// next deadline (a lower bound of it) is returned.
    pub(crate) fn fire_due(
        &mut self,
        now: Instant,
        wakers: &mut Vec<Waker>,
    ) -> (usize, Option<Instant>) {
        match self.next {
            Some(next) if now < next => (0, Some(next)),
            _ => self.fire(now, wakers),
        }
    }

    /// `true` if the timer fired; otherwise records `waker`.
    pub(crate) fn poll(&mut self, key: Key, waker: &Waker) -> bool {
        match self.entries.get_mut(key) {
            Some(e) if e.fired => true,
            Some(e) => {
                match &e.waker {
                    Some(w) if w.will_wake(waker) => {}
                    _ => e.waker = Some(waker.clone()),
                }
                false
            }
            None => true,
        }
    }

    /// Every timer not yet fired: its deadline and the waker it will wake (for the
    /// state dump).
    pub(crate) fn for_each_pending(&mut self, mut f: impl FnMut(Instant, Option<&Waker>)) {
        for (_, e) in self.entries.with_meta() {
            if !e.fired {
                f(e.deadline, e.waker.as_ref());
            }
        }
    }

    /// No timer pending (fired or removed ones may still sit in the heap until the
    /// next [`fire`](Self::fire)).
    pub(crate) fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    pub(crate) fn remove(&mut self, key: Key) {
        self.entries.remove(key);
        if self.heap.len() > 1024 && self.heap.len() > 2 * self.entries.len() {
            let live = &mut self.entries;
            self.heap
                .retain(|Reverse((_, k))| live.get_mut(*k).is_some());
        }
    }

    /// Fires every timer due at `now`, pushing their wakers; returns how many fired
    /// and the next deadline.
    pub(crate) fn fire(
        &mut self,
        now: Instant,
        wakers: &mut Vec<Waker>,
    ) -> (usize, Option<Instant>) {
        let mut fired = 0;
        while let Some(Reverse((deadline, key))) = self.heap.peek().copied() {
            let Some(entry) = self.entries.get_mut(key) else {
                self.heap.pop();
                continue;
            };
            if entry.deadline != deadline {
                // A stale heap entry for a slot reused at another deadline.
                self.heap.pop();
                continue;
            }
            if deadline > now {
                self.next = Some(deadline);
                return (fired, Some(deadline));
            }
            self.heap.pop();
            entry.fired = true;
            fired += 1;
            if let Some(w) = entry.waker.take() {
                wakers.push(w);
            }
        }
        self.next = None;
        (fired, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::task::Wake;
    use std::time::Duration;

    struct Noop;
    impl Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }

    #[test]
    fn fire_due_looks_at_the_heap_only_once_the_earliest_deadline_may_have_passed() {
        let w = Waker::from(Arc::new(Noop));
        let mut q = TimerQueue::default();
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut wakers = Vec::new();
        let late = q.insert(t0 + ms(10), w.clone());
        let early = q.insert(t0 + ms(5), w.clone());
        assert_eq!(q.fire_due(t0 + ms(1), &mut wakers), (0, Some(t0 + ms(5))));
        // The earliest removed: its heap entry stays until a look passes it, and until
        // then the wait is bounded by its deadline, never longer.
        q.remove(early);
        assert_eq!(q.fire_due(t0 + ms(2), &mut wakers), (0, Some(t0 + ms(5))));
        assert_eq!(q.heap.len(), 2, "no look at the heap before the bound");
        assert_eq!(q.fire_due(t0 + ms(6), &mut wakers), (0, Some(t0 + ms(10))));
        assert_eq!(q.heap.len(), 1, "the stale entry went at the look");
        // An earlier insert moves the bound.
        q.insert(t0 + ms(8), w.clone());
        assert_eq!(q.fire_due(t0 + ms(7), &mut wakers), (0, Some(t0 + ms(8))));
        assert_eq!(q.fire_due(t0 + ms(10), &mut wakers), (2, None));
        assert_eq!(wakers.len(), 2);
        assert!(q.poll(late, &w), "the late timer fired");
        assert_eq!(q.fire_due(t0 + ms(20), &mut wakers), (0, None));
    }

    #[test]
    fn removed_timers_never_fire_and_heap_compacts() {
        let w = Waker::from(Arc::new(Noop));
        let mut q = TimerQueue::default();
        let t0 = Instant::now();
        let keys: Vec<_> = (0..5000)
            .map(|i| q.insert(t0 + Duration::from_micros(i), w.clone()))
            .collect();
        for k in &keys[..4000] {
            q.remove(*k);
        }
        assert!(q.heap.len() < 3000, "heap compacted: {}", q.heap.len());
        let mut wakers = Vec::new();
        let (fired, next) = q.fire(t0 + Duration::from_secs(1), &mut wakers);
        assert_eq!(fired, 1000);
        assert_eq!(wakers.len(), 1000);
        assert!(next.is_none());
    }
}
