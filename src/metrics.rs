//! Per-worker counters, written by their worker and readable from any thread through
//! [`Handle::metrics`](crate::Handle::metrics).
//!
//! Counters are plain `Relaxed` atomics: a snapshot is a set of independent numbers,
//! not a consistent cut. The owner thread is the only writer of most of them and
//! updates them with a load and a store, which costs no locked instruction; the few
//! that other threads bump (`wakeups_sent`, `remote_spawns`) use `fetch_add`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The live counters of one worker.
#[derive(Debug, Default)]
pub(crate) struct WorkerMetrics {
    pub(crate) loop_turns: AtomicU64,
    pub(crate) sqes_submitted: AtomicU64,
    pub(crate) ops_at_once: AtomicU64,
    pub(crate) cqes: AtomicU64,
    pub(crate) enter_calls: AtomicU64,
    pub(crate) ops_in_flight: AtomicU64,
    pub(crate) stale_cqes: AtomicU64,
    pub(crate) sq_full: AtomicU64,
    pub(crate) cq_overflows: AtomicU64,
    pub(crate) wakeups_sent: AtomicU64,
    pub(crate) wakeups_received: AtomicU64,
    pub(crate) timers_fired: AtomicU64,
    pub(crate) tasks_spawned: AtomicU64,
    pub(crate) tasks_polled: AtomicU64,
    pub(crate) remote_spawns: AtomicU64,
    pub(crate) leaked_ops: AtomicU64,
    pub(crate) recv_enobufs: AtomicU64,
    pub(crate) rearms: [AtomicU64; REARM_REASONS],
    pub(crate) recv_steering_fallbacks: AtomicU64,
    pub(crate) recv_handovers: AtomicU64,
    pub(crate) accept_reset: AtomicU64,
    pub(crate) recv_overflows: AtomicU64,
    pub(crate) recv_memory_refusals: AtomicU64,
    pub(crate) recv_zc_restarts: AtomicU64,
    pub(crate) send_zc: AtomicU64,
    pub(crate) send_zc_copied: AtomicU64,
    pub(crate) send_zc_off: AtomicU64,
    pub(crate) send_zc_registered: AtomicU64,
}

/// Number of [`RearmCounts`] fields.
pub(crate) const REARM_REASONS: usize = 6;

/// Index of a re-arm reason in [`WorkerMetrics::rearms`].
pub(crate) fn rearm_index(end: &zcrx::RecvEnd) -> Option<usize> {
    use zcrx::{RearmReason, RecvEnd};
    Some(match end {
        RecvEnd::Rearm(RearmReason::NoBuffers) => 0,
        RecvEnd::Rearm(RearmReason::CqFull) => 1,
        RecvEnd::Rearm(RearmReason::NoFreeChunk) => 2,
        RecvEnd::Rearm(RearmReason::Interrupted) => 3,
        RecvEnd::Rearm(RearmReason::Ended) => 4,
        RecvEnd::BudgetDone => 5,
        _ => return None,
    })
}

/// Receives armed again after a recoverable end, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct RearmCounts {
    /// `ENOBUFS`: the copy pool was empty; re-armed once buffers came back.
    pub no_buffers: u64,
    /// `ENOSPC`: the completion queue was full.
    pub cq_full: u64,
    /// `ENOMEM`: the zero-copy copy fall-back found no free chunk.
    pub no_free_chunk: u64,
    /// `EINTR`.
    pub interrupted: u64,
    /// The kernel ended the multishot after data without an error (its own limits).
    pub ended: u64,
    /// The receive ended at its byte budget ([`Builder::recv_hold_limit`](crate::Builder::recv_hold_limit)
    /// bytes since it was armed, so a stream never holds more than that untaken), or
    /// was cancelled for holding more than that untaken; re-armed once the task had
    /// taken everything before the end. A stream whose task keeps up ends here once
    /// per that many bytes.
    pub budget: u64,
}

impl RearmCounts {
    /// All re-arms.
    pub fn total(&self) -> u64 {
        self.no_buffers
            + self.cq_full
            + self.no_free_chunk
            + self.interrupted
            + self.ended
            + self.budget
    }
}

/// Adds `n` to a counter only its owner thread writes.
pub(crate) fn add_owned(counter: &AtomicU64, n: u64) {
    counter.store(counter.load(Relaxed).wrapping_add(n), Relaxed);
}

/// Adds `n` to a counter any thread may write.
pub(crate) fn add_shared(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Relaxed);
}

impl WorkerMetrics {
    pub(crate) fn snapshot(&self, worker: usize) -> WorkerMetricsSnapshot {
        WorkerMetricsSnapshot {
            worker,
            loop_turns: self.loop_turns.load(Relaxed),
            sqes_submitted: self.sqes_submitted.load(Relaxed),
            ops_at_once: self.ops_at_once.load(Relaxed),
            cqes: self.cqes.load(Relaxed),
            enter_calls: self.enter_calls.load(Relaxed),
            ops_in_flight: self.ops_in_flight.load(Relaxed),
            stale_cqes: self.stale_cqes.load(Relaxed),
            sq_full: self.sq_full.load(Relaxed),
            cq_overflows: self.cq_overflows.load(Relaxed),
            wakeups_sent: self.wakeups_sent.load(Relaxed),
            wakeups_received: self.wakeups_received.load(Relaxed),
            timers_fired: self.timers_fired.load(Relaxed),
            tasks_spawned: self.tasks_spawned.load(Relaxed),
            tasks_polled: self.tasks_polled.load(Relaxed),
            remote_spawns: self.remote_spawns.load(Relaxed),
            leaked_ops: self.leaked_ops.load(Relaxed),
            recv_enobufs: self.recv_enobufs.load(Relaxed),
            rearms: RearmCounts {
                no_buffers: self.rearms[0].load(Relaxed),
                cq_full: self.rearms[1].load(Relaxed),
                no_free_chunk: self.rearms[2].load(Relaxed),
                interrupted: self.rearms[3].load(Relaxed),
                ended: self.rearms[4].load(Relaxed),
                budget: self.rearms[5].load(Relaxed),
            },
            recv_steering_fallbacks: self.recv_steering_fallbacks.load(Relaxed),
            recv_handovers: self.recv_handovers.load(Relaxed),
            accept_reset: self.accept_reset.load(Relaxed),
            recv_overflows: self.recv_overflows.load(Relaxed),
            recv_memory_refusals: self.recv_memory_refusals.load(Relaxed),
            recv_zc_restarts: self.recv_zc_restarts.load(Relaxed),
            send_zc: self.send_zc.load(Relaxed),
            send_zc_copied: self.send_zc_copied.load(Relaxed),
            send_zc_off: self.send_zc_off.load(Relaxed),
            send_zc_registered: self.send_zc_registered.load(Relaxed),
        }
    }
}

/// A copy of one worker's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerMetricsSnapshot {
    /// Worker index.
    pub worker: usize,
    /// Turns of the event loop.
    pub loop_turns: u64,
    /// SQEs the kernel accepted.
    pub sqes_submitted: u64,
    /// Operations done at once with a non-blocking syscall instead of through the
    /// ring: queued sends that fit the socket's buffer when their loop turn ended.
    pub ops_at_once: u64,
    /// CQEs reaped, including the runtime's own (wake-ups, cancels).
    pub cqes: u64,
    /// `io_uring_enter` calls made by the loop.
    pub enter_calls: u64,
    /// Operations in the slab at the end of the last turn.
    pub ops_in_flight: u64,
    /// CQEs whose `user_data` named no live operation (generation mismatch).
    pub stale_cqes: u64,
    /// Times the SQ was full and had to be submitted before pushing.
    pub sq_full: u64,
    /// Times the CQ overflowed and held-back CQEs had to be flushed.
    pub cq_overflows: u64,
    /// Wake-up syscalls or messages sent to this worker by other threads.
    pub wakeups_sent: u64,
    /// Wake-up completions this worker received.
    pub wakeups_received: u64,
    /// Timers that expired and woke their task.
    pub timers_fired: u64,
    /// Tasks spawned on this worker (local and remote).
    pub tasks_spawned: u64,
    /// Task polls.
    pub tasks_polled: u64,
    /// Tasks that arrived through the remote queue.
    pub remote_spawns: u64,
    /// Operations whose memory was leaked because shutdown timed out before their
    /// final completion (freeing it could let the kernel write into freed memory).
    pub leaked_ops: u64,
    /// Multishot receives that ended with `ENOBUFS` (the worker's receive pool was
    /// empty) and were re-armed once buffers came back (= `rearms.no_buffers`).
    pub recv_enobufs: u64,
    /// Receives re-armed after a recoverable end, by reason.
    pub rearms: RearmCounts,
    /// Streams whose RECV_ZC failed with `EFAULT` (their flow arrives on a queue bound
    /// to another zero-copy instance) and that fell back to copy receives.
    pub recv_steering_fallbacks: u64,
    /// Streams whose receives are served by another worker and handed over.
    pub recv_handovers: u64,
    /// Connections reset by their peer while they waited in the accept queue: closed
    /// by [`TcpListener::accept`](crate::net::TcpListener::accept) instead of returned.
    pub accept_reset: u64,
    /// Stream receives made into ordinary memory because the pool was dry while the
    /// application held its buffers (see [`Builder::receive_memory_limit`](crate::Builder::receive_memory_limit)).
    pub recv_overflows: u64,
    /// Stream receives that failed with `OutOfMemory` after waiting at the receive
    /// memory limit (the pools held and the overflow allowance used up).
    pub recv_memory_refusals: u64,
    /// Zero-copy receives the runtime cancelled and armed again because the kernel
    /// (one without zcrx events: Linux 7.1) can leave a receive parked on a dry area
    /// with no completion when chunks come back. Zero on Linux 7.2+.
    pub recv_zc_restarts: u64,
    /// Sends that went out zero-copy (`SEND_ZC`/`SENDMSG_ZC`; see
    /// [`SendZeroCopy`](crate::SendZeroCopy)), queued or awaited.
    pub send_zc: u64,
    /// Zero-copy sends whose notification said the kernel copied the bytes after all
    /// (loopback, a device without scatter-gather or checksum offload).
    pub send_zc_copied: u64,
    /// Sockets whose sends went plain after the kernel copied (or refused) a
    /// zero-copy send of theirs.
    pub send_zc_off: u64,
    /// Zero-copy submissions that named registered memory
    /// ([`RegisteredBuf`](crate::runtime::RegisteredBuf) chunks, or
    /// [`register_send_memory`](crate::runtime::register_send_memory)'s): the kernel
    /// pinned none of their pages.
    pub send_zc_registered: u64,
}
