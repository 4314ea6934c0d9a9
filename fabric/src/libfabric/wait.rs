//! How the progress task sleeps: on the completion queue's wait fd (polled through the
//! worker's io_uring) where the provider has one, else for a bounded interval; either way
//! a post or a close wakes it at once ([`Kick`]).

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::Duration;

/// Wakes the progress task when there is new work (a post, a cancel, a close).
#[derive(Default)]
pub(super) struct Kick {
    pending: Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

impl Kick {
    /// Marks work pending and wakes the task if it sleeps.
    pub(super) fn kick(&self) {
        self.pending.set(true);
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
    }

    /// Clears the pending mark; returns whether it was set.
    pub(super) fn take(&self) -> bool {
        self.pending.replace(false)
    }
}

/// Sleeps until `fd` is readable (when given), `kick` fires, or `max` has passed.
pub(super) async fn sleep(kick: &Kick, fd: Option<&Arc<OwnedFd>>, max: Duration) {
    if kick.take() {
        return;
    }
    // A failed submit (the ring is full) degrades to the bounded sleep.
    let mut poll = fd.and_then(|fd| zerorx::net::readable(fd.clone()).ok());
    let mut timer = zerorx::time::sleep(max);
    poll_fn(|cx| {
        if kick.take() {
            return Poll::Ready(());
        }
        *kick.waker.borrow_mut() = Some(cx.waker().clone());
        if let Some(op) = poll.as_mut() {
            if Pin::new(op).poll(cx).is_ready() {
                return Poll::Ready(());
            }
        }
        Pin::new(&mut timer).poll(cx)
    })
    .await;
    kick.waker.borrow_mut().take();
}
