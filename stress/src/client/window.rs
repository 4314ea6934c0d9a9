//! The pipeline window of one connection: how many requests may be in flight, shared
//! by its sender and receiver tasks on one worker.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::task::{Poll, Waker};

/// Credits for requests in flight; closing it releases a waiting sender.
#[derive(Debug)]
pub struct Window {
    credits: Cell<usize>,
    closed: Cell<bool>,
    waiter: RefCell<Option<Waker>>,
}

impl Window {
    /// A window of `depth` requests.
    pub fn new(depth: usize) -> Window {
        Window {
            credits: Cell::new(depth),
            closed: Cell::new(false),
            waiter: RefCell::new(None),
        }
    }

    /// Waits for a credit and takes it; `false` once the window is closed.
    pub async fn acquire(&self) -> bool {
        poll_fn(|cx| {
            if self.closed.get() {
                return Poll::Ready(false);
            }
            let c = self.credits.get();
            if c > 0 {
                self.credits.set(c - 1);
                return Poll::Ready(true);
            }
            *self.waiter.borrow_mut() = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// Gives `n` credits back.
    pub fn release(&self, n: usize) {
        self.credits.set(self.credits.get() + n);
        self.wake();
    }

    /// Closes the window: the sender stops.
    pub fn close(&self) {
        self.closed.set(true);
        self.wake();
    }

    /// Whether the window was closed.
    pub fn is_closed(&self) -> bool {
        self.closed.get()
    }

    fn wake(&self) {
        if let Some(w) = self.waiter.borrow_mut().take() {
            w.wake();
        }
    }
}
