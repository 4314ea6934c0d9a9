//! [`Sleep`]: a future that completes at a deadline.

use super::TimerQueue;
use crate::driver::slab::Key;
use crate::runtime::context;
use crate::runtime::worker::Core;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Completes once `duration` has passed.
pub fn sleep(duration: Duration) -> Sleep {
    sleep_until(Instant::now() + duration)
}

/// Completes at `deadline`.
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep {
        deadline,
        timer: None,
    }
}

/// The future of [`sleep`] / [`sleep_until`]. It registers with the worker that
/// first polls it; dropping it removes the timer.
///
/// # Panics
/// When polled outside a zerorx worker thread.
#[must_use = "futures do nothing unless awaited"]
pub struct Sleep {
    deadline: Instant,
    timer: Option<(Rc<Core>, Key)>,
}

impl Sleep {
    /// The deadline.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether the deadline has passed.
    pub fn is_elapsed(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// Moves the deadline, re-arming a sleep that already completed.
    pub fn reset(&mut self, deadline: Instant) {
        self.cancel();
        self.deadline = deadline;
    }

    fn cancel(&mut self) {
        if let Some((core, key)) = self.timer.take() {
            if let Ok(mut timers) = core.timers.try_borrow_mut() {
                timers.remove(key);
            }
        }
    }

    fn queue(core: &Core) -> std::cell::RefMut<'_, TimerQueue> {
        core.timers.borrow_mut()
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if let Some((core, key)) = &self.timer {
            if Self::queue(core).poll(*key, cx.waker()) {
                self.cancel();
                return Poll::Ready(());
            }
            return Poll::Pending;
        }
        if Instant::now() >= self.deadline {
            return Poll::Ready(());
        }
        let Some(core) = context::current() else {
            panic!("zerorx: Sleep polled outside a zerorx runtime worker");
        };
        let key = Self::queue(&core).insert(self.deadline, cx.waker().clone());
        self.timer = Some((core, key));
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        self.cancel();
    }
}

impl std::fmt::Debug for Sleep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline)
            .finish()
    }
}
