//! Shutdown of a driver: cancel everything in flight, drain until the slab is empty,
//! and only then let the ring close.

use super::op::{Landed, Lifecycle};
use super::Driver;
use crate::metrics::add_owned;
use std::time::{Duration, Instant};

/// Upper bound of one wait while draining, so the deadline is checked regularly.
const DRAIN_SLICE: Duration = Duration::from_millis(10);

impl Driver {
    /// Cancels every op (and the wake-up read) and reaps until none is left or
    /// `deadline` passes. Returns the number of ops whose memory had to be leaked
    /// because their final completion never came: freeing it could let the kernel
    /// write into freed memory after the ring is gone.
    pub(crate) fn shutdown(&mut self, deadline: Instant) -> usize {
        self.shutting_down = true;
        // What a layer above still holds for this turn fails now (it sees the flag).
        self.run_before_submit();
        // Never submitted: dropped (each op's drop tells its maker).
        self.deferred_batch += 1;
        drop(std::mem::take(&mut self.deferred));
        // Closes queued through the ring own their fds: submit them even if nothing
        // else is left to drain.
        let _ = self.ring.enter(false, None);

        // Futures still holding op keys get `ECANCELED` when polled; what the ops
        // deliver from now on is released.
        let mut finished_ops = Vec::new();
        for (key, slot) in self.ops.iter_mut() {
            let finished = match &mut slot.lifecycle {
                Lifecycle::Completed(landed) => {
                    let c = landed.completion(key);
                    slot.data.release(&c);
                    true
                }
                Lifecycle::Streaming { finished, .. } => {
                    slot.data.release_all_queued(key);
                    *finished
                }
                Lifecycle::Partial { res, flags, .. } => {
                    let c = Landed::partial(*res, u32::from(*flags)).completion(key);
                    slot.data.release(&c);
                    false
                }
                Lifecycle::Pending(_) | Lifecycle::Detached { .. } | Lifecycle::Abandoned => false,
            };
            if finished {
                // The final CQE already came: nothing of this op is left in the kernel.
                finished_ops.push(key);
            } else {
                slot.lifecycle = Lifecycle::Abandoned;
            }
        }
        for key in finished_ops {
            self.ops.remove(key);
        }

        let mut cancelled_at = None;
        // Halfway to the deadline, ops still in flight get to end what holds them.
        let mut stuck_at =
            Some(Instant::now() + deadline.saturating_duration_since(Instant::now()) / 2);
        while self.ops_in_flight() > 0 || self.wake.as_ref().is_some_and(|w| w.armed) {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            if stuck_at.is_some_and(|t| now >= t) {
                stuck_at = None;
                for (_, slot) in self.ops.iter_mut() {
                    slot.data.on_shutdown_stuck();
                }
            }
            if cancelled_at.is_none_or(|t: Instant| now.duration_since(t) > 5 * DRAIN_SLICE) {
                // Submit queued SQEs first: a sync cancel only sees submitted requests.
                let _ = self.ring.enter(false, None);
                let _ = self.ring.sync_cancel_all(DRAIN_SLICE);
                cancelled_at = Some(now);
            }
            let mut wait = (deadline - now).min(DRAIN_SLICE);
            if let Some(t) = stuck_at {
                wait = wait.min(
                    t.saturating_duration_since(now)
                        .max(Duration::from_millis(1)),
                );
            }
            if self.turn(true, Some(wait)).is_err() {
                break;
            }
            self.wakers.clear();
        }
        let mut leaked = self.ops.len();
        if leaked > 0 {
            let ops: Vec<String> = self
                .describe_ops()
                .iter()
                .map(|o| format!("{} {} fd {:?}", o.opcode, o.state, o.fd))
                .collect();
            tracing::warn!(?ops, "ops still in flight at the shutdown deadline");
            add_owned(&self.metrics.leaked_ops, leaked as u64);
            for slot in self.ops.drain() {
                std::mem::forget(slot);
            }
        }
        let flights = self.abandon_flights();
        if flights > 0 {
            tracing::warn!(
                flights,
                "queued sends still in flight at the shutdown deadline"
            );
            add_owned(&self.metrics.leaked_ops, flights as u64);
            leaked += flights;
        }
        if let Some(w) = self.wake.take() {
            if w.armed {
                // The read may still complete into the buffer after the ring closes.
                Box::leak(w.buf);
            }
        }
        leaked
    }
}

impl Drop for Driver {
    /// Reached with ops still in flight only when the worker did not shut down
    /// (its thread is unwinding from a panic): cancel and drain briefly, then leak what
    /// is left rather than free memory the kernel may still write.
    fn drop(&mut self) {
        if self.ops_in_flight() > 0 || self.wake.as_ref().is_some_and(|w| w.armed) {
            let leaked = self.shutdown(Instant::now() + Duration::from_millis(200));
            if leaked > 0 {
                tracing::warn!(
                    leaked,
                    "ring dropped with ops in flight; their memory is leaked"
                );
            }
        } else if !self.shutting_down {
            // Queued closes own their fds.
            let _ = self.ring.enter(false, None);
        }
    }
}
