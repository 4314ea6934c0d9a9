//! Pool counters: written by the owner thread and by threads returning buffers,
//! readable from anywhere.

use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Live counters of one pool. All updates are `Relaxed`: they are statistics, never
/// used to order memory.
#[derive(Debug, Default)]
pub struct PoolStats {
    pub(crate) chunks_total: AtomicU64,
    pub(crate) in_use: AtomicU64,
    pub(crate) high_water: AtomicU64,
    pub(crate) returns_pending: AtomicU64,
    pub(crate) completions: AtomicU64,
    pub(crate) bytes: AtomicU64,
    pub(crate) zero_copy_bytes: AtomicU64,
    pub(crate) copied_bytes: AtomicU64,
    pub(crate) enobufs: AtomicU64,
    pub(crate) enospc: AtomicU64,
    pub(crate) enomem: AtomicU64,
    pub(crate) efault: AtomicU64,
    pub(crate) rearms: AtomicU64,
    pub(crate) refill_full: AtomicU64,
    pub(crate) flushes: AtomicU64,
    pub(crate) flush_errors: AtomicU64,
    pub(crate) remote_returns: AtomicU64,
    pub(crate) returned_to_kernel: AtomicU64,
    pub(crate) alloc_fail_events: AtomicU64,
    pub(crate) low_passes: AtomicU64,
    pub(crate) copy_events: AtomicU64,
    pub(crate) event_arm_errors: AtomicU64,
    pub(crate) areas_added: AtomicU64,
    pub(crate) overflow_receives: AtomicU64,
    pub(crate) overflow_bytes: AtomicU64,
    pub(crate) overflow_held: AtomicU64,
}

/// A point-in-time copy of [`PoolStats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PoolStatsSnapshot {
    /// Chunks (buffers) the pool owns.
    pub chunks_total: u64,
    /// Buffer handles currently held by the application.
    pub in_use: u64,
    /// Highest `in_use` seen.
    pub high_water: u64,
    /// Buffers dropped but not yet back in the kernel's ring.
    pub returns_pending: u64,
    /// Data completions turned into buffers.
    pub completions: u64,
    /// Bytes received.
    pub bytes: u64,
    /// Bytes the NIC placed in the area without a CPU copy.
    pub zero_copy_bytes: u64,
    /// Bytes the kernel copied (copy pool, or ZCRX copy fallback in device-less mode).
    pub copied_bytes: u64,
    /// Multishot receives ended because no buffer was free (copy pool).
    pub enobufs: u64,
    /// RECV_ZC ended because the completion queue was full.
    pub enospc: u64,
    /// RECV_ZC ended because the copy fallback found no free chunk.
    pub enomem: u64,
    /// RECV_ZC ended because data landed on a queue of another instance.
    pub efault: u64,
    /// Receives re-armed after a recoverable end.
    pub rearms: u64,
    /// Returns that found the refill ring full and waited in the pending queue.
    pub refill_full: u64,
    /// `ZCRX_CTRL_FLUSH_RQ` calls made.
    pub flushes: u64,
    /// `ZCRX_CTRL_FLUSH_RQ` calls that failed.
    pub flush_errors: u64,
    /// Buffers dropped on a thread other than the pool's owner.
    pub remote_returns: u64,
    /// Ring entries made visible to the kernel again (buffer-ring or refill entries,
    /// after the initial fill). Grows whenever the kernel has buffers back: a receive
    /// that ended for lack of buffers can be re-armed once this moved.
    pub returned_to_kernel: u64,
    /// `ZCRX_EVENT_ALLOC_FAIL` events: the NIC found no free chunk to receive into
    /// (Linux 7.2+, zero-copy instances registered with events).
    pub alloc_fail_events: u64,
    /// Publishes of returns that found the pool low (a quarter of its chunks or fewer
    /// with the kernel) before giving buffers back: the moments a receive can have
    /// met it dry.
    pub low_passes: u64,
    /// `ZCRX_EVENT_COPY` events: the kernel copied a fragment instead of placing it
    /// (Linux 7.2+). Each event is re-armed, so this counts bursts of copies, not bytes.
    pub copy_events: u64,
    /// Re-arms (`ZCRX_CTRL_ARM_EVENT`) the kernel refused.
    pub event_arm_errors: u64,
    /// Areas added after registration (`ZCRX_CTRL_ADD_AREA`, Linux 7.3); their chunks
    /// are in `chunks_total`.
    pub areas_added: u64,
    /// The kernel's own count of copy-fallback fragments, from the `zcrx_stats` block
    /// it keeps in the pool's memory (Linux 7.2+; 0 without it). Approximate: the
    /// kernel updates it without atomics.
    pub kernel_copy_count: u64,
    /// The kernel's own count of copied bytes (as `kernel_copy_count`). It leaves out
    /// bytes copied from a packet's linear head, so it can be below `copied_bytes`.
    pub kernel_copy_bytes: u64,
    /// Receives made into ordinary memory because the pool was dry while the
    /// application held its chunks ([`RxBuf::is_overflow`](crate::RxBuf::is_overflow)).
    pub overflow_receives: u64,
    /// Bytes those receives got.
    pub overflow_bytes: u64,
    /// Bytes of ordinary memory such receives hold now (freed as their handles drop).
    pub overflow_held: u64,
}

impl PoolStats {
    /// Copies every counter.
    pub fn snapshot(&self) -> PoolStatsSnapshot {
        PoolStatsSnapshot {
            chunks_total: self.chunks_total.load(Relaxed),
            in_use: self.in_use.load(Relaxed),
            high_water: self.high_water.load(Relaxed),
            returns_pending: self.returns_pending.load(Relaxed),
            completions: self.completions.load(Relaxed),
            bytes: self.bytes.load(Relaxed),
            zero_copy_bytes: self.zero_copy_bytes.load(Relaxed),
            copied_bytes: self.copied_bytes.load(Relaxed),
            enobufs: self.enobufs.load(Relaxed),
            enospc: self.enospc.load(Relaxed),
            enomem: self.enomem.load(Relaxed),
            efault: self.efault.load(Relaxed),
            rearms: self.rearms.load(Relaxed),
            refill_full: self.refill_full.load(Relaxed),
            flushes: self.flushes.load(Relaxed),
            flush_errors: self.flush_errors.load(Relaxed),
            remote_returns: self.remote_returns.load(Relaxed),
            returned_to_kernel: self.returned_to_kernel.load(Relaxed),
            alloc_fail_events: self.alloc_fail_events.load(Relaxed),
            low_passes: self.low_passes.load(Relaxed),
            copy_events: self.copy_events.load(Relaxed),
            event_arm_errors: self.event_arm_errors.load(Relaxed),
            areas_added: self.areas_added.load(Relaxed),
            kernel_copy_count: 0,
            kernel_copy_bytes: 0,
            overflow_receives: self.overflow_receives.load(Relaxed),
            overflow_bytes: self.overflow_bytes.load(Relaxed),
            overflow_held: self.overflow_held.load(Relaxed),
        }
    }

    /// Counts a buffer handed to the application.
    pub(crate) fn handed_out(&self, len: u64, zero_copy: bool) {
        self.completions.fetch_add(1, Relaxed);
        self.bytes.fetch_add(len, Relaxed);
        if zero_copy {
            self.zero_copy_bytes.fetch_add(len, Relaxed);
        } else {
            self.copied_bytes.fetch_add(len, Relaxed);
        }
        let now = self.in_use.fetch_add(1, Relaxed) + 1;
        self.high_water.fetch_max(now, Relaxed);
    }

    /// [`handed_out`](Self::handed_out) for a pool with one decoding thread (a copy
    /// pool decodes only on its owner thread): the counters only that thread writes
    /// are bumped with a load and a store instead of a locked read-modify-write.
    /// `in_use` is also decremented by returns from any thread, so it stays atomic.
    pub(crate) fn handed_out_by_owner(&self, len: u64) {
        let bump = |c: &AtomicU64, n: u64| c.store(c.load(Relaxed).wrapping_add(n), Relaxed);
        bump(&self.completions, 1);
        bump(&self.bytes, len);
        bump(&self.copied_bytes, len);
        let now = self.in_use.fetch_add(1, Relaxed) + 1;
        if now > self.high_water.load(Relaxed) {
            self.high_water.store(now, Relaxed);
        }
    }

    /// Counts a terminal receive result (a negative errno) the pool cares about.
    pub fn record_errno(&self, errno: i32) {
        let counter = match errno {
            libc::ENOBUFS => &self.enobufs,
            libc::ENOSPC => &self.enospc,
            libc::ENOMEM => &self.enomem,
            libc::EFAULT => &self.efault,
            _ => return,
        };
        counter.fetch_add(1, Relaxed);
    }

    /// Counts entries published to the kernel.
    /// `n` ring entries are about to be published: counted, and, when the kernel's
    /// share before them was a quarter of the chunks or less, a low pass (the `n`
    /// are written to the ring but not yet visible, and no longer `in_use`).
    pub(crate) fn returned(&self, n: u64) {
        let total = self.chunks_total.load(Relaxed);
        let out = self.in_use.load(Relaxed) + self.returns_pending.load(Relaxed) + n;
        if total.saturating_sub(out).saturating_mul(4) <= total {
            self.low_passes.fetch_add(1, Relaxed);
        }
        self.returned_to_kernel.fetch_add(n, Relaxed);
    }

    /// Counts a receive re-armed after a recoverable end.
    pub fn record_rearm(&self) {
        self.rearms.fetch_add(1, Relaxed);
    }
}
