//! [`SlimWaker`]: a [`Waker`] in one word, for the op slab (every op in flight, one per
//! idle connection, keeps its future's waker). A task waker of the runtime's executor
//! is kept as its data pointer alone: the executor registers its one waker vtable
//! ([`recognise_task_wakers`]), and a waker with that vtable is re-formed from the
//! pointer. Any other waker is boxed, which only futures polled by foreign executors
//! (`block_on` of another runtime, a test's hand-made context) pay for. The driver
//! thereby knows the executor's wakers without knowing the executor.

use std::ptr::NonNull;
use std::sync::OnceLock;
use std::task::{RawWaker, RawWakerVTable, Waker};

/// The low bit of a boxed foreign waker's pointer (both kinds of pointer are 8-byte
/// aligned, so it is clear in each).
const FOREIGN: usize = 1;
const _: () = assert!(std::mem::align_of::<Waker>() > FOREIGN);

/// The vtable of the wakers kept as their data pointer.
static TASK_WAKERS: OnceLock<&'static RawWakerVTable> = OnceLock::new();

/// Makes wakers with `vtable` (whose data pointers are 8-byte aligned and non-null)
/// be kept as their data pointer. The first registration wins; later ones with
/// another vtable are ignored (their wakers are boxed, which is correct, only slower).
pub(crate) fn recognise_task_wakers(vtable: &'static RawWakerVTable) {
    let _ = TASK_WAKERS.set(vtable);
}

/// The registered vtable, if `waker` has it.
fn task_vtable(waker: &Waker) -> Option<&'static RawWakerVTable> {
    TASK_WAKERS
        .get()
        .copied()
        .filter(|vt| std::ptr::eq(waker.vtable(), *vt))
}

/// A waker in one word: a task waker's data pointer, or (`FOREIGN` set) a
/// `Box<Waker>`.
pub(crate) struct SlimWaker(NonNull<()>);

impl SlimWaker {
    /// `waker`, kept in one word.
    pub(crate) fn new(waker: Waker) -> SlimWaker {
        if task_vtable(&waker).is_some() {
            let data = waker.data().cast_mut();
            if let Some(ptr) = NonNull::new(data).filter(|p| p.addr().get() & FOREIGN == 0) {
                // The waker's reference moves into the pointer.
                std::mem::forget(waker);
                return SlimWaker(ptr);
            }
        }
        let ptr = NonNull::from(Box::leak(Box::new(waker))).cast::<()>();
        SlimWaker(ptr.map_addr(|a| a | FOREIGN))
    }

    /// The boxed waker's pointer, for a foreign waker.
    fn foreign(&self) -> Option<NonNull<Waker>> {
        if self.0.addr().get() & FOREIGN == 0 {
            return None;
        }
        // SAFETY: the tag was set on a box pointer (aligned, so the bit was clear and
        // the address stays non-zero); clearing it keeps the provenance.
        Some(unsafe { NonNull::new_unchecked(self.0.as_ptr().wrapping_byte_sub(FOREIGN)) }.cast())
    }

    /// The task waker `new` kept as its pointer, re-formed (owning the reference).
    ///
    /// # Safety
    /// `self` is not foreign, and the reference is given back once.
    unsafe fn task_waker(&self) -> Waker {
        // `new` kept a pointer only for a waker with the registered vtable, which is
        // set once and never changes.
        let Some(vtable) = TASK_WAKERS.get() else {
            unreachable!("a task waker kept before any vtable was registered")
        };
        // SAFETY: the data pointer and vtable of a waker `new` took apart, whose
        // reference `self` owns (the caller's contract).
        unsafe { Waker::from_raw(RawWaker::new(self.0.as_ptr(), vtable)) }
    }

    fn with<R>(&self, f: impl FnOnce(&Waker) -> R) -> R {
        match self.foreign() {
            // SAFETY: the box is owned by `self` and lives as long as it.
            Some(boxed) => f(unsafe { boxed.as_ref() }),
            None => {
                // SAFETY: not foreign; the copy is never dropped, so the reference
                // stays the one `self` gives back.
                let waker = std::mem::ManuallyDrop::new(unsafe { self.task_waker() });
                f(&waker)
            }
        }
    }

    /// Whether the waker is kept as a task waker's pointer (no box).
    #[cfg(test)]
    pub(crate) fn is_task_pointer(&self) -> bool {
        self.foreign().is_none()
    }

    /// Whether `waker` wakes the same task as this one ([`Waker::will_wake`]).
    pub(crate) fn will_wake(&self, waker: &Waker) -> bool {
        self.with(|w| w.will_wake(waker))
    }

    /// A clone of the waker (for the state dump, which names its task).
    pub(crate) fn to_waker(&self) -> Waker {
        self.with(Waker::clone)
    }

    /// The waker back, to be woken outside the driver's borrow.
    pub(crate) fn into_waker(self) -> Waker {
        let this = std::mem::ManuallyDrop::new(self);
        match this.foreign() {
            // SAFETY: the box `new` leaked, owned by the forgotten `self`, taken once.
            Some(boxed) => *unsafe { Box::from_raw(boxed.as_ptr()) },
            // SAFETY: not foreign; the reference of the forgotten `self`, taken once.
            None => unsafe { this.task_waker() },
        }
    }
}

impl Drop for SlimWaker {
    fn drop(&mut self) {
        match self.foreign() {
            // SAFETY: the box `new` leaked, owned by `self`, freed once.
            Some(boxed) => drop(unsafe { Box::from_raw(boxed.as_ptr()) }),
            // SAFETY: not foreign; the reference `self` owns, given back once.
            None => drop(unsafe { self.task_waker() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Arc;
    use std::task::Wake;

    #[derive(Default)]
    struct Counting(AtomicUsize);

    impl Wake for Counting {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, SeqCst);
        }
    }

    #[test]
    fn a_foreign_waker_is_boxed_and_given_back_whole() {
        assert_eq!(std::mem::size_of::<Option<SlimWaker>>(), 8);
        let c = Arc::new(Counting::default());
        let w = Waker::from(c.clone());
        let slim = SlimWaker::new(w.clone());
        assert!(slim.will_wake(&w));
        assert!(!slim.will_wake(Waker::noop()));
        assert_eq!(Arc::strong_count(&c), 3);
        slim.into_waker().wake();
        assert_eq!(c.0.load(SeqCst), 1);
        assert_eq!(Arc::strong_count(&c), 2, "the woken waker is gone");
        drop(SlimWaker::new(w));
        assert_eq!(
            Arc::strong_count(&c),
            1,
            "a dropped slim waker drops its waker"
        );
    }
}
