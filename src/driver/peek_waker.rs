//! The peek waker: the [`Waker`] behind non-blocking `try_*` calls built on `poll_*`
//! ones. Waking it does nothing, and the driver knows it by its vtable, so a peek
//! leaves the waker an op keeps untouched: no box for a foreign waker, and the task's
//! own waker stays registered. (`std`'s `Waker::noop` cannot be told apart reliably:
//! its vtable is a promoted constant that each crate may get its own copy of.)

use std::ptr;
use std::task::{RawWaker, RawWakerVTable, Waker};

/// The vtable only the peek waker has (a `static`: one address).
static PEEK: RawWakerVTable = RawWakerVTable::new(clone, noop, noop, noop);

fn clone(_: *const ()) -> RawWaker {
    RawWaker::new(ptr::null(), &PEEK)
}

fn noop(_: *const ()) {}

/// A waker that wakes nothing, known to the driver as "do not register".
pub(crate) fn peek_waker() -> Waker {
    // SAFETY: every vtable function ignores the data pointer, so null is valid, and
    // `clone` hands out the same vtable.
    unsafe { Waker::from_raw(clone(ptr::null())) }
}

/// Whether `waker` is (a clone of) [`peek_waker`].
pub(crate) fn is_peek(waker: &Waker) -> bool {
    ptr::eq(waker.vtable(), &PEEK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_peek_waker_and_its_clones_are_peeks() {
        let w = peek_waker();
        assert!(is_peek(&w));
        assert!(is_peek(&w.clone()));
        assert!(!is_peek(Waker::noop()));
        w.wake_by_ref();
        w.wake();
    }
}
