//! Returning chunks to the kernel through the refill ring.
//!
//! Exactly one refill entry per data completion (the kernel counts user references per
//! chunk). The ring is never over-filled: returns that find it full wait, in order, in
//! a pending queue; when the kernel has `ZCRX_CTRL_FLUSH_RQ` the owner asks it to
//! consume the ring at once (device-less instances consume *only* on flush).

use crate::abi::ZcrxRqe;
use crate::core::{Recycler, Return};
use crate::shm::RefillRing;
use crate::stats::PoolStats;
use std::collections::VecDeque;
use std::io;
use std::sync::atomic::Ordering::Relaxed;

/// Asks the kernel to consume the refill ring now (`ZCRX_CTRL_FLUSH_RQ`).
pub(crate) type Flusher = Box<dyn FnMut() -> io::Result<()> + Send>;

/// Flush rounds per publish: each round frees up to a ring's worth of entries.
const MAX_FLUSH_ROUNDS: usize = 4;

pub(crate) struct RefillRecycler {
    pub(crate) rq: RefillRing,
    pub(crate) entries: u32,
    pub(crate) tail: u32,
    pub(crate) published: u32,
    pub(crate) pending: VecDeque<ZcrxRqe>,
    pub(crate) flusher: Option<Flusher>,
    /// Device-less: the kernel consumes only when flushed.
    pub(crate) flush_every_publish: bool,
    pub(crate) unflushed: bool,
    pub(crate) flush_warned: bool,
}

impl RefillRecycler {
    fn free(&self) -> u32 {
        self.entries - self.tail.wrapping_sub(self.rq.head())
    }

    fn push(&mut self, rqe: ZcrxRqe) {
        self.rq.write(self.tail, rqe);
        self.tail = self.tail.wrapping_add(1);
    }

    fn drain_pending(&mut self, stats: &PoolStats) {
        let mut free = self.free();
        while free > 0 {
            let Some(rqe) = self.pending.pop_front() else {
                break;
            };
            self.push(rqe);
            stats.returns_pending.fetch_sub(1, Relaxed);
            free -= 1;
        }
    }

    fn publish_tail(&mut self, stats: &PoolStats) {
        if self.tail != self.published {
            stats.returned(self.tail.wrapping_sub(self.published) as u64);
            self.rq.publish(self.tail);
            self.published = self.tail;
            self.unflushed = true;
        }
    }

    fn needs_flush(&self) -> bool {
        !self.pending.is_empty() || (self.flush_every_publish && self.unflushed)
    }
}

impl Recycler for RefillRecycler {
    fn recycle(&mut self, ret: Return, stats: &PoolStats) {
        // The token is the completion's offset as the kernel wrote it: its high bits
        // name the area, which the kernel needs back (7.3 has several per instance).
        let rqe = ZcrxRqe {
            off: ret.token,
            len: ret.len,
            pad: 0,
        };
        if self.pending.is_empty() && self.free() > 0 {
            self.push(rqe);
        } else {
            self.pending.push_back(rqe);
            stats.refill_full.fetch_add(1, Relaxed);
            stats.returns_pending.fetch_add(1, Relaxed);
        }
    }

    fn publish(&mut self, stats: &PoolStats) {
        self.drain_pending(stats);
        self.publish_tail(stats);
        for _ in 0..MAX_FLUSH_ROUNDS {
            if !self.needs_flush() {
                break;
            }
            let Some(flush) = self.flusher.as_mut() else {
                break;
            };
            stats.flushes.fetch_add(1, Relaxed);
            if let Err(e) = flush() {
                stats.flush_errors.fetch_add(1, Relaxed);
                if !self.flush_warned {
                    self.flush_warned = true;
                    tracing::warn!(error = %e, "ZCRX_CTRL_FLUSH_RQ failed; returns wait for the NIC to consume the refill ring");
                }
                break;
            }
            self.unflushed = false;
            self.drain_pending(stats);
            self.publish_tail(stats);
        }
    }
}
