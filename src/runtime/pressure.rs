//! Receive-pool pressure on the current worker, and the readers that hold receive
//! buffers of an unfinished message while they wait for the rest.
//!
//! A held buffer keeps its pool chunk busy for every connection of the worker. If
//! readers sitting on partial messages held every chunk, no connection could receive
//! the bytes that would complete them, and the worker would wedge. So a waiting
//! holder registers here, and once per loop turn, when the pool runs low, the worker
//! wakes the holders: they copy what they hold to the heap and give the chunks back.
//! Level-triggered on purpose: a zero-copy area can run dry without any receive
//! failing (the NIC just has nowhere to put packets), so "a receive got `ENOBUFS`"
//! would not be a complete signal.

use super::context;
use super::rx_state::RxState;
use slab::Slab;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::task::Waker;

/// Free and total buffers of one receive pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pressure {
    /// Buffers the kernel can fill now.
    pub(crate) available: usize,
    /// Buffers the pool has.
    pub(crate) total: usize,
}

impl Pressure {
    /// A quarter of the buffers or fewer are free: holders should let go of theirs
    /// before the pool is dry, so receives rarely end with `ENOBUFS`.
    pub(crate) fn is_low(self) -> bool {
        self.available.saturating_mul(4) <= self.total
    }

    /// Whichever of `self` and `other` has the smaller free share.
    fn tighter(self, other: Pressure) -> Pressure {
        // a/A < b/B  <=>  a·B < b·A (u128: no overflow for any pool size).
        let mine = self.available as u128 * other.total as u128;
        let theirs = other.available as u128 * self.total as u128;
        if mine <= theirs {
            self
        } else {
            other
        }
    }
}

/// The tightest receive pool a worker (its receive state `rx`) receives into: its copy pool and the zero-copy
/// pool it owns or imports. `None` without either.
///
/// A worker served by handover receives into another worker's zero-copy pool, whose
/// pressure it cannot see here; only its copy pool counts.
pub(crate) fn of(rx: &RxState) -> Option<Pressure> {
    let copy = rx.copy_pool().map(|pool| Pressure {
        available: pool.available(),
        total: pool.stats().chunks_total as usize,
    });
    let zc = rx.zc_stats().map(|stats| {
        let s = stats.snapshot();
        Pressure {
            available: s.chunks_total.saturating_sub(s.in_use + s.returns_pending) as usize,
            total: s.chunks_total as usize,
        }
    });
    match (copy, zc) {
        (Some(a), Some(b)) => Some(a.tighter(b)),
        (a, b) => a.or(b),
    }
}

/// The current worker's pool pressure; `None` outside a runtime or without a pool.
pub(crate) fn current() -> Option<Pressure> {
    context::with_core(|core| of(&core.rx)).flatten()
}

/// The worker's waiting holders.
#[derive(Default)]
pub(crate) struct Holders {
    /// One entry per registered reader: its waker while it waits, `None` once woken
    /// (it is woken once per wait, so a reader that stopped polling is not woken on
    /// every turn).
    slots: RefCell<Slab<Option<Waker>>>,
    /// Entries holding a waker.
    waiting: Cell<usize>,
}

impl Holders {
    /// Moves the wakers of all waiting holders into `wakers` when the worker's pool
    /// (`rx`) is low.
    /// Cheap when nobody waits (no pool is looked at).
    pub(crate) fn take_if_low(&self, rx: &RxState, wakers: &mut Vec<Waker>) {
        if self.waiting.get() == 0 || !of(rx).is_some_and(Pressure::is_low) {
            return;
        }
        self.take_all(wakers);
    }

    /// Moves the wakers of all waiting holders into `wakers` whatever the pools say:
    /// for when the kernel itself reports a pool dry (`ZCRX_EVENT_ALLOC_FAIL`).
    pub(crate) fn take_all(&self, wakers: &mut Vec<Waker>) {
        if self.waiting.get() == 0 {
            return;
        }
        for (_, slot) in self.slots.borrow_mut().iter_mut() {
            wakers.extend(slot.take());
        }
        self.waiting.set(0);
    }
}

/// A reader's entry among the current worker's holders; removed on drop.
pub(crate) struct HolderSlot {
    holders: Rc<Holders>,
    key: usize,
}

impl HolderSlot {
    /// An entry on the current worker (`None` outside a runtime).
    pub(crate) fn new() -> Option<HolderSlot> {
        context::with_core(|core| {
            let key = core.rx.holders().slots.borrow_mut().insert(None);
            HolderSlot {
                holders: core.rx.holders().clone(),
                key,
            }
        })
    }

    /// Waits for the pool to run low: `waker` is woken (once) when it does.
    pub(crate) fn wait(&self, waker: &Waker) {
        let mut slots = self.holders.slots.borrow_mut();
        let Some(slot) = slots.get_mut(self.key) else {
            return;
        };
        match slot {
            Some(w) if w.will_wake(waker) => {}
            Some(w) => *w = waker.clone(),
            None => {
                *slot = Some(waker.clone());
                self.holders.waiting.set(self.holders.waiting.get() + 1);
            }
        }
    }
}

impl Drop for HolderSlot {
    fn drop(&mut self) {
        let removed = self.holders.slots.borrow_mut().try_remove(self.key);
        if let Some(Some(_)) = removed {
            self.holders.waiting.set(self.holders.waiting.get() - 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(available: usize, total: usize) -> Pressure {
        Pressure { available, total }
    }

    #[test]
    fn low_at_a_quarter_free_or_less() {
        assert!(p(0, 8).is_low());
        assert!(p(2, 8).is_low());
        assert!(!p(3, 8).is_low());
        assert!(p(0, 1).is_low());
        assert!(!p(1, 1).is_low());
        assert!(!p(1, 2).is_low(), "one of two free is half the pool");
        assert!(p(16, 64).is_low() && !p(17, 64).is_low());
    }

    #[test]
    fn tighter_compares_shares_not_counts() {
        assert_eq!(p(10, 64).tighter(p(2, 8)), p(10, 64));
        assert_eq!(p(40, 64).tighter(p(2, 8)), p(2, 8));
        assert_eq!(p(usize::MAX, usize::MAX).tighter(p(1, 2)), p(1, 2));
    }
}
