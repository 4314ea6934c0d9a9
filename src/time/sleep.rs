//! [`Sleep`]: a future that completes at a deadline.

use super::TimerQueue;
use crate::driver::slab::Key;
use crate::runtime::context;
use crate::runtime::worker::Core;
use std::future::Future;
use std::pin::Pin;
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
/// first polls it; dropping it removes the timer. It is `Send`, so futures passed to
/// [`Handle::spawn_on`](crate::Handle::spawn_on) may sleep.
///
/// # Panics
/// When polled outside a zerorx worker thread.
#[must_use = "futures do nothing unless awaited"]
pub struct Sleep {
    deadline: Instant,
    /// The worker the timer is registered with (its identity) and the timer's key.
    timer: Option<(usize, Key)>,
}

/// A worker's identity: the address of its shared state, stable for its lifetime.
fn worker_id(core: &Core) -> usize {
    std::sync::Arc::as_ptr(&core.shared) as usize
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
        if let Some((id, key)) = self.timer.take() {
            // Removed only on the worker it was registered with; elsewhere (a sleep
            // moved between threads) the stale timer fires into a dead waker later.
            context::with_core(|core| {
                if worker_id(core) == id {
                    if let Ok(mut timers) = core.timers.try_borrow_mut() {
                        timers.remove(key);
                    }
                }
            });
        }
    }

    fn queue(core: &Core) -> std::cell::RefMut<'_, TimerQueue> {
        core.timers.borrow_mut()
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let deadline = self.deadline;
        let timer = self.timer;
        let polled = context::with_core(|core| {
            let id = worker_id(core);
            match timer {
                Some((tid, key)) if tid == id => {
                    if Self::queue(core).poll(key, cx.waker()) {
                        Poll::Ready(None)
                    } else {
                        Poll::Pending
                    }
                }
                _ if Instant::now() >= deadline => Poll::Ready(None),
                _ => {
                    let key = Self::queue(core).insert(deadline, cx.waker().clone());
                    Poll::Ready(Some((id, key)))
                }
            }
        });
        match polled {
            None => panic!("zerorx: Sleep polled outside a zerorx runtime worker"),
            Some(Poll::Pending) => Poll::Pending,
            Some(Poll::Ready(None)) => {
                self.cancel();
                Poll::Ready(())
            }
            Some(Poll::Ready(Some(registered))) => {
                self.timer = Some(registered);
                Poll::Pending
            }
        }
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
