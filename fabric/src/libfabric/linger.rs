//! Operations of a closed endpoint that libfabric has not finished.
//!
//! Like a socket's linger: an endpoint closed while sends the program was told had
//! succeeded (detached sends) are still in flight keeps its libfabric objects, and
//! progresses them, until they complete or the connect timeout passes; rxm's receiver
//! pulls a rendezvous message from the sender's endpoint, so closing at once lost it
//! (measured: the receiver's receive failed). On shm the receiver copies a message out
//! of the sender's memory whenever it matches it, even after the sender closed
//! (measured: a receiver in the same process read a freed buffer), so there every
//! operation in flight keeps its memory, which is leaked rather than freed if the
//! receiver never takes it.

use super::local;
use super::ops::{context_of, Record};
use super::res::EpRes;
use std::time::{Duration, Instant};
use zerorx_libfabric_sys as fi;

/// First and longest interval between looks at the completion queue.
const POLL_MIN: Duration = Duration::from_micros(20);
const POLL_MAX: Duration = Duration::from_millis(1);

/// How a closed endpoint is to be let go.
pub(super) struct Closing {
    /// Its own address.
    pub(super) addr: Vec<u8>,
    /// An shm endpoint: closed through [`local`], and its peers may read its memory
    /// after it closed.
    pub(super) park: bool,
    /// Its peers that are shm endpoints of this process (address-vector index,
    /// address): they stay open while it may touch their memory.
    pub(super) locals: Vec<(fi::fi_addr_t, Vec<u8>)>,
    /// When to stop waiting for its operations.
    pub(super) deadline: Instant,
}

/// A closed endpoint and the operations libfabric still has. Dropped unfinished (the
/// runtime shut down under the task, possibly before it ever ran, or no task could be
/// spawned), it keeps progressing them on the dropping thread, blocking until they
/// complete or the deadline passes, then lets the endpoint go: no memory is freed
/// under a reader.
pub(super) struct Lingering {
    res: Option<EpRes>,
    waiting: Vec<(usize, Record)>,
    how: Closing,
}

impl Lingering {
    /// The endpoint and its operations still with libfabric (slab key, record).
    pub(super) fn new(res: EpRes, waiting: Vec<(usize, Record)>, how: Closing) -> Lingering {
        Lingering {
            res: Some(res),
            waiting,
            how,
        }
    }

    /// Whether nothing is waited for.
    pub(super) fn is_done(&self) -> bool {
        self.waiting.is_empty()
    }

    /// Reads the completion queue once; returns whether anything is still waited for.
    fn step(&mut self) -> bool {
        let Some(res) = self.res.as_ref() else {
            return false;
        };
        let done = res.drain_contexts();
        // A completed operation's memory is no longer used; dropping its record frees it.
        self.waiting
            .retain(|(k, _)| !done.contains(&context_of(*k)));
        !self.waiting.is_empty() && Instant::now() < self.how.deadline
    }

    /// Lets the endpoint go now.
    pub(super) fn finish(mut self) {
        self.close();
    }

    /// Without shm, closing the endpoint ends libfabric's use of the records' memory,
    /// so both go. With shm: records still waiting are leaked (a receiver may copy out
    /// of them later); the endpoint drops its peers of this process from its address
    /// vector (it touches their memory doing so, and never again after), lets go of
    /// them, and is parked or closed through [`local`].
    fn close(&mut self) {
        let Some(res) = self.res.take() else { return };
        let waiting = std::mem::take(&mut self.waiting);
        if !self.how.park {
            drop(res);
            drop(waiting);
            return;
        }
        if !waiting.is_empty() {
            let bytes: usize = waiting.iter().map(|(_, r)| r.posted_len()).sum();
            tracing::warn!(
                operations = waiting.len(),
                bytes,
                "closing an shm endpoint whose sends were never taken by their receivers: \
                 their memory is leaked so no receiver reads it freed"
            );
            std::mem::forget(waiting);
        }
        let locals = std::mem::take(&mut self.how.locals);
        res.av_remove(locals.iter().map(|(a, _)| *a));
        for (_, addr) in &locals {
            local::detach(addr);
        }
        local::closed(&self.how.addr, res);
    }
}

impl Drop for Lingering {
    fn drop(&mut self) {
        let mut interval = POLL_MIN;
        while self.step() {
            std::thread::sleep(interval);
            interval = (interval * 2).min(POLL_MAX);
        }
        self.close();
    }
}

/// Drives the endpoint until every waiting operation has completed or the deadline
/// passes, then closes or parks it. The guard is built before this future, so dropping
/// the future unpolled still goes through its `Drop`.
pub(super) async fn run(mut l: Lingering) {
    let mut interval = POLL_MIN;
    while l.step() {
        zerorx::time::sleep(interval).await;
        interval = (interval * 2).min(POLL_MAX);
    }
    l.finish();
}
