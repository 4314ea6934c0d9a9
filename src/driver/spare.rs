//! Recycled op allocations: the box of a single-shot op whose result the future took
//! is kept (up to [`KEEP`] of them) and the next op of the same size and alignment is
//! written into it, so a connection that sends in a loop does not go through the
//! allocator for every send.

use std::alloc::Layout;
use std::ptr::NonNull;

/// Boxes kept at most. Within a loop turn, the sends that finished are often recycled
/// before the tasks with new data start theirs, so this covers the sends of a busy
/// turn (64 connections in flight measured ~20 % misses with 16 kept) while an idle
/// worker keeps a few KiB at most.
const KEEP: usize = 64;

/// Freed op boxes, each with the layout it was allocated with.
#[derive(Default)]
pub(crate) struct SpareBoxes {
    free: Vec<(Layout, NonNull<u8>)>,
}

impl SpareBoxes {
    /// Boxes `value`, in a kept allocation of exactly its layout when there is one.
    pub(crate) fn boxed<T>(&mut self, value: T) -> Box<T> {
        self.boxed_with(|| value)
    }

    /// Boxes what `make` returns, as [`boxed`](Self::boxed); made after the allocation
    /// is found, so a value built inside `make` is written straight into it (counted:
    /// a queued send's op moved into its box was a `memcpy` call per send).
    #[inline(always)]
    pub(crate) fn boxed_with<T>(&mut self, make: impl FnOnce() -> T) -> Box<T> {
        let layout = Layout::new::<T>();
        match self.free.iter().rposition(|(l, _)| *l == layout) {
            Some(i) => {
                let (_, ptr) = self.free.swap_remove(i);
                let ptr = ptr.as_ptr().cast::<T>();
                // SAFETY: `ptr` came from a `Box` of a type with this same layout
                // (`recycle`), so the global allocator allocated it with exactly
                // `Layout::new::<T>()`, which is all `Box::from_raw` needs; it holds no
                // value (its previous one was moved out) and nothing else points to it.
                unsafe {
                    ptr.write(make());
                    Box::from_raw(ptr)
                }
            }
            None => Box::new(make()),
        }
    }

    /// Moves the value out of `b` and keeps the allocation for a later
    /// [`boxed`](Self::boxed) (or frees it when enough are kept already).
    pub(crate) fn recycle<T>(&mut self, b: Box<T>) -> T {
        let ptr = Box::into_raw(b);
        // SAFETY: `ptr` is the live, exclusively owned allocation of the box; the value
        // is read out once and the memory is treated as uninitialised from here on.
        let value = unsafe { ptr.read() };
        // SAFETY: the `Box` allocated `ptr` with `T`'s layout, and its value is gone.
        unsafe { self.keep(ptr.cast(), Layout::new::<T>()) };
        value
    }

    /// Drops the op in `b` and keeps the allocation, as [`recycle`](Self::recycle)
    /// does for a box of known type (a detached op's, which the slab hands back
    /// type-erased).
    pub(crate) fn recycle_dyn(&mut self, b: Box<dyn crate::driver::op::OpBox>) {
        let layout = Layout::for_value(&*b);
        let ptr = Box::into_raw(b);
        // SAFETY: `ptr` is the live, exclusively owned allocation of the box; its value
        // is dropped once and the memory is treated as uninitialised from here on.
        unsafe { std::ptr::drop_in_place(ptr) };
        // SAFETY: the `Box` allocated `ptr` with `layout` (`for_value` of its value),
        // and its value is gone.
        unsafe { self.keep(ptr.cast(), layout) };
    }

    /// Keeps an emptied allocation for a later [`boxed`](Self::boxed), or frees it
    /// when enough are kept already.
    ///
    /// # Safety
    /// `ptr` was allocated by the global allocator (a `Box`) with `layout`, holds no
    /// value, and nothing else owns it.
    unsafe fn keep(&mut self, ptr: *mut u8, layout: Layout) {
        match NonNull::new(ptr) {
            Some(p) if layout.size() > 0 && self.free.len() < KEEP => {
                self.free.push((layout, p));
            }
            // SAFETY: the caller's contract; a box of non-zero size owns memory.
            _ if layout.size() > 0 => unsafe { std::alloc::dealloc(ptr, layout) },
            // A zero-sized box owns no memory.
            _ => {}
        }
    }
}

impl Drop for SpareBoxes {
    fn drop(&mut self) {
        for (layout, ptr) in self.free.drain(..) {
            // SAFETY: each entry is an allocation of `layout` (non-zero size) that a
            // `Box` made and `recycle` kept, holding no value.
            unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{SpareBoxes, KEEP};

    #[test]
    fn a_recycled_box_is_reused_for_the_same_layout_only() {
        let mut spare = SpareBoxes::default();
        let a = spare.boxed([1u64; 4]);
        let addr = &*a as *const [u64; 4] as usize;
        assert_eq!(spare.recycle(a), [1u64; 4]);
        // Another type of another size does not take it.
        let other = spare.boxed([7u8; 3]);
        assert_eq!(*other, [7u8; 3]);
        // A type of the same layout does, with its own value.
        let b = spare.boxed((2u64, 3u64, 4u64, 5u64));
        assert_eq!(&*b as *const _ as usize, addr);
        assert_eq!(*b, (2, 3, 4, 5));
        drop((other, b));
    }

    #[test]
    fn keeps_a_bounded_number_and_handles_zero_sized_values() {
        let mut spare = SpareBoxes::default();
        let boxes: Vec<_> = (0..KEEP + 5).map(|i| spare.boxed(vec![i])).collect();
        for (i, b) in boxes.into_iter().enumerate() {
            assert_eq!(spare.recycle(b), vec![i]);
        }
        assert_eq!(spare.free.len(), KEEP);
        let unit = spare.boxed(());
        spare.recycle(unit);
        assert_eq!(spare.free.len(), KEEP);
    }
}
