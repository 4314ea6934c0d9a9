//! [`SlimWaker`]: a [`Waker`] in one word, for the op slab (every op in flight, one per
//! idle connection, keeps its future's waker). A zerorx task's waker is kept as the
//! task reference it carries (the vtable is the one every task waker shares); any
//! other waker is boxed, which only futures polled by foreign executors (`block_on`
//! of another runtime, a test's hand-made context) pay for.

use super::task::TaskRef;
use std::ptr::NonNull;
use std::task::Waker;

/// The low bit of a boxed foreign waker's pointer (both kinds of pointer are 8-byte
/// aligned, so it is clear in each).
const FOREIGN: usize = 1;
const _: () = assert!(std::mem::align_of::<Waker>() > FOREIGN);

/// A waker in one word: a task reference, or (`FOREIGN` set) a `Box<Waker>`.
pub(crate) struct SlimWaker(NonNull<()>);

/// A [`SlimWaker`] opened up.
enum View<'a> {
    Task(&'a TaskRef),
    Foreign(&'a Waker),
}

impl SlimWaker {
    /// `waker`, kept in one word.
    pub(crate) fn new(waker: Waker) -> SlimWaker {
        match TaskRef::from_waker(waker) {
            Ok(task) => SlimWaker(task.into_raw()),
            Err(waker) => {
                let ptr = NonNull::from(Box::leak(Box::new(waker))).cast::<()>();
                SlimWaker(ptr.map_addr(|a| a | FOREIGN))
            }
        }
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

    fn with<R>(&self, f: impl FnOnce(View<'_>) -> R) -> R {
        match self.foreign() {
            // SAFETY: the box is owned by `self` and lives as long as it.
            Some(boxed) => f(View::Foreign(unsafe { boxed.as_ref() })),
            None => {
                // SAFETY: not foreign, so `new` made it from a `TaskRef` whose
                // reference `self` owns; the copy is never dropped, so the count stays
                // the one `self` gives back.
                let task = std::mem::ManuallyDrop::new(unsafe { TaskRef::from_raw(self.0) });
                f(View::Task(&task))
            }
        }
    }

    /// Whether `waker` wakes the same task as this one ([`Waker::will_wake`]).
    pub(crate) fn will_wake(&self, waker: &Waker) -> bool {
        self.with(|v| match v {
            View::Task(t) => t.wakes(waker),
            View::Foreign(w) => w.will_wake(waker),
        })
    }

    /// The task this waker wakes, if it is a zerorx task's (for the state dump).
    pub(crate) fn task(&self) -> Option<super::task::TaskName> {
        self.with(|v| match v {
            View::Task(t) => Some(t.name()),
            View::Foreign(w) => super::task::task_of(w),
        })
    }

    /// The waker back, to be woken outside the driver's borrow.
    pub(crate) fn into_waker(self) -> Waker {
        let this = std::mem::ManuallyDrop::new(self);
        match this.foreign() {
            // SAFETY: the box `new` leaked, owned by the forgotten `self`, taken once.
            Some(boxed) => *unsafe { Box::from_raw(boxed.as_ptr()) },
            // SAFETY: a task reference owned by the forgotten `self`, taken once.
            None => unsafe { TaskRef::from_raw(this.0) }.into_waker(),
        }
    }
}

impl Drop for SlimWaker {
    fn drop(&mut self) {
        match self.foreign() {
            // SAFETY: the box `new` leaked, owned by `self`, freed once.
            Some(boxed) => drop(unsafe { Box::from_raw(boxed.as_ptr()) }),
            // SAFETY: a task reference owned by `self`, given back once.
            None => drop(unsafe { TaskRef::from_raw(self.0) }),
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
