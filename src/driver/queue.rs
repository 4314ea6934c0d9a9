//! [`SmallQueue`]: a FIFO for the queues every connection has (completions of its
//! armed receive, the buffers they filled) that almost always hold zero or one item.

use std::collections::VecDeque;

/// A FIFO that keeps its oldest item inline and allocates only when a second one
/// queues behind it. The overflow storage is freed as soon as it drains, so a
/// connection that goes idle after a burst keeps no heap memory for its queues; it is
/// boxed so that, while empty, it costs one word instead of a `VecDeque`'s four.
pub(crate) struct SmallQueue<T> {
    /// The oldest item, unless it is in `rest` (which then holds every item).
    head: Option<T>,
    /// Never `Some` and empty.
    // Boxed on purpose: one word in every idle connection's op instead of four.
    #[allow(clippy::box_collection)]
    rest: Option<Box<VecDeque<T>>>,
}

impl<T> Default for SmallQueue<T> {
    fn default() -> Self {
        SmallQueue {
            head: None,
            rest: None,
        }
    }
}

impl<T> SmallQueue<T> {
    /// Appends `item` after every queued item.
    pub(crate) fn push_back(&mut self, item: T) {
        if self.is_empty() {
            self.head = Some(item);
        } else {
            self.rest.get_or_insert_with(Box::default).push_back(item);
        }
    }

    /// Removes the oldest item.
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        if let Some(item) = self.head.take() {
            return Some(item);
        }
        let rest = self.rest.as_mut()?;
        let item = rest.pop_front();
        if rest.is_empty() {
            self.rest = None;
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
}

#[cfg(test)]
mod tests {
    use super::SmallQueue;

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
}
