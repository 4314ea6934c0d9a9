//! One spare allocation per worker for handler futures, so a call whose handler
//! finishes in place (most do) allocates nothing: the finished future is dropped where
//! it lies and the next call's future of the same size is written into that memory.
//!
//! Why by hand: a handler's future is a different type per method, boxed as
//! `dyn Future` so the connection can hold any of them, and a boxed future cannot be
//! polled first and boxed after (a polled future must not move). `Box` has no stable
//! way to reuse an allocation for another type; its contract does allow rebuilding a
//! `Box<T>` from memory the global allocator gave out for the same layout, which is all
//! this does. Counted: one `malloc` and one `free` per RPC request (`--count`).

use super::method::{HandlerFuture, Outcome};
use std::alloc::{dealloc, Layout};
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::ptr::NonNull;

/// A worker's spare handler-future allocation.
#[derive(Default)]
pub(crate) struct FutureSlot {
    /// Memory from the global allocator with this layout, holding no value.
    spare: Cell<Option<(NonNull<u8>, Layout)>>,
}

impl FutureSlot {
    /// Boxes `fut`, into the spare allocation when its layout is `F`'s.
    pub(crate) fn boxed<F: Future<Output = Outcome> + 'static>(&self, fut: F) -> HandlerFuture {
        let layout = Layout::new::<F>();
        if let Some((ptr, spare)) = self.spare.take() {
            if spare == layout {
                let p = ptr.as_ptr().cast::<F>();
                // SAFETY: `ptr` came from the global allocator with `layout`, which is
                // `F`'s (size and alignment), and holds no value (`recycle` dropped it):
                // writing an `F` there and owning it as a `Box<F>` is what `Box::new`
                // would have made, and its drop frees it with the same layout.
                return unsafe {
                    p.write(fut);
                    Box::into_pin(Box::from_raw(p))
                };
            }
            self.spare.set(Some((ptr, spare)));
        }
        Box::pin(fut)
    }

    /// Drops a finished future and keeps its memory for the next call (unless one is
    /// kept already, or it has none).
    pub(crate) fn recycle(&self, fut: HandlerFuture) {
        // SAFETY: the future is dropped in place below and its memory is never read
        // as the future again: unpinning it to take the pointer does not move it.
        let fut = unsafe { Pin::into_inner_unchecked(fut) };
        let layout = Layout::for_value(&*fut);
        let kept = self.spare.take();
        if kept.is_some() || layout.size() == 0 {
            self.spare.set(kept);
            drop(fut);
            return;
        }
        let raw = Box::into_raw(fut);
        // SAFETY: `raw` is the live, owned future just taken out of its box; it is
        // dropped once here and its memory kept as raw bytes. A panicking drop leaks
        // the memory (nothing is stored), which is safe.
        unsafe { std::ptr::drop_in_place(raw) };
        // SAFETY: a box of non-zero size is never null.
        let ptr = unsafe { NonNull::new_unchecked(raw.cast::<u8>()) };
        self.spare.set(Some((ptr, layout)));
    }
}

impl Drop for FutureSlot {
    fn drop(&mut self) {
        if let Some((ptr, layout)) = self.spare.take() {
            // SAFETY: `ptr` was allocated by the global allocator with `layout` and
            // holds no value.
            unsafe { dealloc(ptr.as_ptr(), layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;
    use std::task::{Context, Poll, Waker};

    fn run(mut f: HandlerFuture) -> (Outcome, HandlerFuture) {
        let mut cx = Context::from_waker(Waker::noop());
        match f.as_mut().poll(&mut cx) {
            Poll::Ready(o) => (o, f),
            Poll::Pending => panic!("a ready future"),
        }
    }

    #[test]
    fn a_finished_future_s_memory_holds_the_next_one_of_its_layout() {
        let slot = FutureSlot::default();
        let dropped = Rc::new(Cell::new(0));
        let guard = |d: &Rc<Cell<u32>>| {
            struct Count(Rc<Cell<u32>>);
            impl Drop for Count {
                fn drop(&mut self) {
                    self.0.set(self.0.get() + 1);
                }
            }
            Count(d.clone())
        };
        let g = guard(&dropped);
        let (o, f) = run(slot.boxed(async move {
            let _g = g;
            Outcome::Done
        }));
        assert!(matches!(o, Outcome::Done));
        let first = &*f as *const dyn Future<Output = Outcome> as *const u8;
        slot.recycle(f);
        assert_eq!(dropped.get(), 1, "the finished future was dropped");
        // Same layout: the same memory.
        let g = guard(&dropped);
        let (_, f) = run(slot.boxed(async move {
            let _g = g;
            Outcome::Done
        }));
        let second = &*f as *const dyn Future<Output = Outcome> as *const u8;
        assert_eq!(first, second, "the spare allocation was reused");
        // Another layout while the spare is in use: a fresh box, and the spare stays
        // with the first.
        let big = [7u8; 512];
        let (_, g2) = run(slot.boxed(async move {
            std::hint::black_box(big);
            Outcome::Done
        }));
        slot.recycle(f);
        slot.recycle(g2);
        assert_eq!(dropped.get(), 2);
        // The 512-byte future did not replace the kept spare.
        let (_, f) = run(slot.boxed(async { Outcome::Done }));
        drop(f);
        drop(slot);
    }
}
