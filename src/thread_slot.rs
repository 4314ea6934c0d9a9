//! A thread's current worker parts (its core, scheduler and timers), found without a
//! borrow flag or a liveness check.
//!
//! Each part is kept in two thread-locals: one that owns it (an `Rc`, with a
//! destructor) and one that points at it, with no destructor, which every look-up
//! reads. A thread-local with a destructor costs a check of its state at each access,
//! and a `RefCell` a borrow flag; the runtime looks its parts up several times a
//! request (counted: 131 of a 64 B echo request's 3,855 instructions went to the
//! core's look-ups alone).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::thread::LocalKey;

/// The thread-local that points at a part: null while none is installed.
pub(crate) type Ptr<T> = LocalKey<Cell<*const T>>;

/// The thread-local that owns a part.
pub(crate) type Slot<T> = LocalKey<RefCell<Option<Owner<T>>>>;

/// Owns an installed part and clears its pointer before the part can go: when it is
/// taken out ([`take`]) and when the thread exits without that.
pub(crate) struct Owner<T: 'static> {
    value: Rc<T>,
    ptr: &'static Ptr<T>,
}

impl<T> Drop for Owner<T> {
    fn drop(&mut self) {
        self.ptr.set(std::ptr::null());
    }
}

/// Installs `value` as this thread's part; `false` (and nothing changes) if one is
/// installed already or the thread-locals are being destroyed.
pub(crate) fn install<T>(slot: &'static Slot<T>, ptr: &'static Ptr<T>, value: Rc<T>) -> bool {
    let raw = Rc::as_ptr(&value);
    let installed = slot.try_with(|s| {
        let mut s = s.borrow_mut();
        if s.is_some() {
            return false;
        }
        *s = Some(Owner { value, ptr });
        true
    });
    if installed == Ok(true) {
        ptr.set(raw);
        return true;
    }
    false
}

/// Takes this thread's part out (its pointer is cleared first); the caller drops it
/// once nothing of its own is borrowed, since dropping a part can run destructors
/// that look parts up.
pub(crate) fn take<T>(slot: &'static Slot<T>) -> Option<Rc<T>> {
    let owner = slot.try_with(|s| s.borrow_mut().take()).ok().flatten()?;
    // The owner's drop clears the pointer; the part lives on in the clone.
    Some(owner.value.clone())
}

/// Runs `f` with this thread's part; `None` if there is none.
#[inline]
pub(crate) fn with<T, R>(ptr: &'static Ptr<T>, f: impl FnOnce(&T) -> R) -> Option<R> {
    let raw = ptr.get();
    // SAFETY: a non-null pointer was set by `install` from the `Rc` its `Owner` holds,
    // and is cleared before that `Rc` can be dropped (`take`, `Owner::drop`); nothing
    // reachable from a look-up takes the part out (only the worker's teardown does).
    (!raw.is_null()).then(|| f(unsafe { &*raw }))
}

/// This thread's part, shared; `None` if there is none.
#[inline]
pub(crate) fn get<T>(ptr: &'static Ptr<T>) -> Option<Rc<T>> {
    let raw = ptr.get();
    if raw.is_null() {
        return None;
    }
    // SAFETY: as in `with`, the installed `Rc` keeps the count at one at least while
    // ours is added; `raw` came from `Rc::as_ptr` of an `Rc<T>`.
    unsafe {
        Rc::increment_strong_count(raw);
        Some(Rc::from_raw(raw))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        static SLOT: RefCell<Option<Owner<u32>>> = const { RefCell::new(None) };
        static PTR: Cell<*const u32> = const { Cell::new(std::ptr::null()) };
    }

    #[test]
    fn a_part_is_found_while_installed_and_never_after() {
        assert_eq!(with(&PTR, |v| *v), None);
        let part = Rc::new(7);
        assert!(install(&SLOT, &PTR, part.clone()));
        assert!(!install(&SLOT, &PTR, Rc::new(8)), "one part at a time");
        assert_eq!(with(&PTR, |v| *v), Some(7));
        let shared = get(&PTR).expect("installed");
        assert_eq!(Rc::strong_count(&part), 3);
        drop(shared);
        let back = take(&SLOT).expect("installed");
        assert!(Rc::ptr_eq(&back, &part));
        assert_eq!(
            Rc::strong_count(&part),
            2,
            "taken out, not leaked or dropped"
        );
        assert_eq!(with(&PTR, |v| *v), None);
        assert!(get(&PTR).is_none());
        assert!(take(&SLOT).is_none());
    }

    #[test]
    fn dropping_the_owner_as_a_thread_exit_does_clears_the_pointer() {
        let part = Rc::new(5u32);
        assert!(install(&SLOT, &PTR, part.clone()));
        // What the thread's exit does to the owning thread-local: drop its content.
        let owner = SLOT.with(|s| s.borrow_mut().take());
        assert_eq!(
            with(&PTR, |v| *v),
            Some(5),
            "still installed until the drop"
        );
        drop(owner);
        assert_eq!(with(&PTR, |v| *v), None);
        assert_eq!(Rc::strong_count(&part), 1, "the part went with its owner");
    }
}
