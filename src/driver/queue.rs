//! [`SmallQueue`]: a FIFO for the queues every connection has (completions of its
//! armed receive, the buffers they filled) that almost always hold zero or one item.

use std::collections::VecDeque;

/// A FIFO that keeps its oldest item inline and takes overflow storage only when a
/// second one queues behind it. The storage leaves the queue as soon as it drains, so
/// a connection that goes idle after a burst keeps no heap memory for its queues; it is
/// boxed so that, while empty, it costs one word instead of a `VecDeque`'s four. Drained
/// storage waits in a per-thread stock ([`Stocked`]) for the next burst of any queue:
/// a stream whose completions come several to a turn allocated and freed it every
/// time (counted: 0.55 allocations per 64 KiB chunk of W4's stream echo).
pub(crate) struct SmallQueue<T: Stocked> {
    /// The oldest item, unless it is in `rest` (which then holds every item).
    head: Option<T>,
    /// Never `Some` and empty.
    // Boxed on purpose: one word in every idle connection's op instead of four.
    #[allow(clippy::box_collection)]
    rest: Option<Box<VecDeque<T>>>,
}

/// An item type whose queues share a per-thread stock of drained storage (declared
/// with [`stocked!`]): a queue takes storage from it when it needs
/// some ([`from_stock`]) and gives it back once drained ([`to_stock`]), so a busy
/// queue allocates nothing and an idle one holds nothing.
pub(crate) trait Stocked: Sized + 'static {
    /// Runs `f` on this thread's stock; `None` while the thread's locals are torn
    /// down (or the stock is in use).
    fn with_stock<R>(f: impl FnOnce(&mut Vec<Box<VecDeque<Self>>>) -> R) -> Option<R>;
}

/// Implements [`Stocked`] for a type with a stock of its own in a thread local.
macro_rules! stocked {
    ($t:ty) => {
        impl $crate::driver::queue::Stocked for $t {
            #[inline]
            fn with_stock<R>(
                f: impl FnOnce(&mut Vec<Box<std::collections::VecDeque<$t>>>) -> R,
            ) -> Option<R> {
                thread_local! {
                    // Boxed on purpose: a queue keeps its storage as one word.
                    #[allow(clippy::vec_box)]
                    static STOCK: std::cell::RefCell<Vec<Box<std::collections::VecDeque<$t>>>> =
                        const { std::cell::RefCell::new(Vec::new()) };
                }
                STOCK
                    .try_with(|s| Some(f(&mut *s.try_borrow_mut().ok()?)))
                    .ok()
                    .flatten()
            }
        }
    };
}
pub(crate) use stocked;

/// Drained storage kept at most, per thread and item type.
pub(crate) const STOCK_LEN: usize = 64;
/// Slots a kept storage keeps at most (a burst's larger one is shrunk).
pub(crate) const STOCK_SLOTS: usize = 16;

/// Storage from the thread's stock of `T`, or new.
// Boxed on purpose: a queue keeps its storage as one word.
#[allow(clippy::box_collection)]
#[inline]
pub(crate) fn from_stock<T: Stocked>() -> Box<VecDeque<T>> {
    T::with_stock(Vec::pop).flatten().unwrap_or_default()
}

/// Drained storage `q` back to the thread's stock, shrunk to [`STOCK_SLOTS`]; freed
/// when the stock is full.
#[allow(clippy::box_collection)]
#[inline]
pub(crate) fn to_stock<T: Stocked>(mut q: Box<VecDeque<T>>) {
    debug_assert!(q.is_empty());
    if q.capacity() > STOCK_SLOTS {
        q.shrink_to(STOCK_SLOTS);
    }
    T::with_stock(|stock| {
        if stock.len() < STOCK_LEN {
            stock.push(q);
        }
    });
}

impl<T: Stocked> Default for SmallQueue<T> {
    fn default() -> Self {
        SmallQueue {
            head: None,
            rest: None,
        }
    }
}

impl<T: Stocked> SmallQueue<T> {
    /// Appends `item` after every queued item.
    pub(crate) fn push_back(&mut self, item: T) {
        if self.is_empty() {
            self.head = Some(item);
        } else {
            self.push_rest(item);
        }
    }

    /// [`push_back`](Self::push_back) behind a queued item: out of line, so the
    /// common case (none queued) stays a few instructions wherever it is inlined.
    #[inline(never)]
    fn push_rest(&mut self, item: T) {
        self.rest.get_or_insert_with(from_stock).push_back(item);
    }

    /// Removes the oldest item.
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        if let Some(item) = self.head.take() {
            return Some(item);
        }
        self.rest.as_ref()?;
        self.pop_rest()
    }

    /// [`pop_front`](Self::pop_front) from the overflow storage, out of line as
    /// [`push_rest`](Self::push_rest) is.
    #[inline(never)]
    fn pop_rest(&mut self) -> Option<T> {
        let rest = self.rest.as_mut()?;
        let item = rest.pop_front();
        if rest.is_empty() {
            if let Some(drained) = self.rest.take() {
                to_stock(drained);
            }
        }
        item
    }

    /// Whether nothing is queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_none() && self.rest.is_none()
    }

    /// Number of queued items.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        usize::from(self.head.is_some()) + self.rest.as_ref().map_or(0, |r| r.len())
    }

    /// Heap slots held (`0` while at most one item is queued, and once drained).
    #[cfg(test)]
    pub(crate) fn heap_capacity(&self) -> usize {
        self.rest.as_ref().map_or(0, |r| r.capacity())
    }

    /// Where the overflow storage is, if the queue holds any.
    #[cfg(test)]
    pub(crate) fn heap_address(&self) -> Option<usize> {
        self.rest
            .as_ref()
            .map(|r| &**r as *const VecDeque<T> as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::{SmallQueue, STOCK_SLOTS};

    super::stocked!(u32);

    #[test]
    fn keeps_fifo_order_across_the_inline_slot() {
        let mut q = SmallQueue::default();
        let mut expect = std::collections::VecDeque::new();
        let mut next = 0u32;
        // Interleaved pushes and pops of every pattern up to depth 5.
        for round in 0..200u32 {
            for _ in 0..(round * 7 % 5) {
                q.push_back(next);
                expect.push_back(next);
                next += 1;
            }
            for _ in 0..(round * 3 % 4) {
                assert_eq!(q.pop_front(), expect.pop_front());
            }
            assert_eq!(q.len(), expect.len());
            assert_eq!(q.is_empty(), expect.is_empty());
        }
        while let Some(v) = expect.pop_front() {
            assert_eq!(q.pop_front(), Some(v));
        }
        assert_eq!(q.pop_front(), None);
    }

    #[test]
    fn one_item_needs_no_heap_and_a_drained_burst_frees_it() {
        let mut q = SmallQueue::default();
        q.push_back(1);
        assert_eq!(q.heap_capacity(), 0);
        q.push_back(2);
        q.push_back(3);
        assert!(q.heap_capacity() > 0);
        assert_eq!(q.pop_front(), Some(1));
        assert_eq!(q.pop_front(), Some(2));
        assert!(q.heap_capacity() > 0);
        assert_eq!(q.pop_front(), Some(3));
        assert_eq!(q.heap_capacity(), 0);
        assert!(q.is_empty());
    }

    #[test]
    fn the_next_burst_reuses_the_storage_a_drained_one_left() {
        let (mut a, mut b) = (SmallQueue::default(), SmallQueue::default());
        a.push_back(1);
        a.push_back(2);
        let first = a.heap_address().expect("a burst takes storage");
        while a.pop_front().is_some() {}
        assert_eq!(a.heap_address(), None, "a drained queue keeps none");
        // Another queue of the thread takes it: no allocation.
        b.push_back(3);
        b.push_back(4);
        assert_eq!(b.heap_address(), Some(first));
        assert_eq!((b.pop_front(), b.pop_front()), (Some(3), Some(4)));
        // Storage a large burst grew is kept shrunk.
        for i in 0..1000 {
            a.push_back(i);
        }
        while a.pop_front().is_some() {}
        b.push_back(5);
        b.push_back(6);
        assert!(b.heap_capacity() <= STOCK_SLOTS, "{}", b.heap_capacity());
    }
}
