//! [`Sleep`]: a future that completes at a deadline.

use super::{with_timers, TimerQueue, Timers};
use crate::driver::slab::Key;
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
        waker: None,
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
    /// The waker the timer holds (its data and vtable addresses), while it does: a
    /// poll with the same waker before the deadline has nothing to change, and leaves
    /// the queue alone (a connection loop polls its timeouts on every message).
    waker: Option<(usize, usize)>,
}

/// A waker's identity, as `Waker::will_wake` compares it.
fn identity(w: &std::task::Waker) -> (usize, usize) {
    (w.data() as usize, w.vtable() as *const _ as usize)
}

/// A worker's identity: the address of its timers, stable for its lifetime.
fn worker_id(timers: &Timers) -> usize {
    timers as *const Timers as usize
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
        self.waker = None;
        if let Some((id, key)) = self.timer.take() {
            // Removed only on the worker it was registered with; elsewhere (a sleep
            // moved between threads) the stale timer fires into a dead waker later.
            with_timers(|t| {
                if worker_id(t) == id {
                    if let Ok(mut queue) = t.queue.try_borrow_mut() {
                        queue.remove(key);
                    }
                }
            });
        }
    }

    fn queue(timers: &Timers) -> std::cell::RefMut<'_, TimerQueue> {
        timers.queue.borrow_mut()
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let deadline = self.deadline;
        let timer = self.timer;
        let waker = self.waker;
        let polled = with_timers(|t| {
            let id = worker_id(t);
            match timer {
                Some((tid, key)) if tid == id => {
                    // The timer fires at a tick whose clock passed the deadline, and
                    // the turn's clock is never earlier than that tick's: before the
                    // deadline it has not fired, and it holds this waker already.
                    if waker == Some(identity(cx.waker())) && t.turn_time() < deadline {
                        return Poll::Pending;
                    }
                    if Self::queue(t).poll(key, cx.waker()) {
                        Poll::Ready(None)
                    } else {
                        Poll::Pending
                    }
                }
                _ if Instant::now() >= deadline => Poll::Ready(None),
                _ => {
                    let key = Self::queue(t).insert(deadline, cx.waker().clone());
                    Poll::Ready(Some((id, key)))
                }
            }
        });
        match polled {
            None => panic!("zerorx: Sleep polled outside a zerorx runtime worker"),
            Some(Poll::Pending) => {
                self.waker = Some(identity(cx.waker()));
                Poll::Pending
            }
            Some(Poll::Ready(None)) => {
                self.cancel();
                Poll::Ready(())
            }
            Some(Poll::Ready(Some(registered))) => {
                self.timer = Some(registered);
                self.waker = Some(identity(cx.waker()));
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
