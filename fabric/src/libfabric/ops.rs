//! Operations handed to (or waiting for) libfabric, each with what it must keep alive
//! until libfabric is done with it.
//!
//! A record lives from the post until libfabric completes the operation — even when the
//! program was already told the outcome (`reported`: the peer was removed or its
//! connection lost, or a detached send), because libfabric may still touch the memory
//! until then. The op
//! context handed to libfabric is the record's slab index plus one (hints ask for
//! `mode` 0, so the provider never writes into it).

use super::errors::Dir;
use crate::provider::PostRequest;
use crate::{OpId, OpOutcome, PeerId};
use slab::Slab;
use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;
use std::time::Instant;

/// Where an operation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// Waiting in the backlog: behind an RMA fence, behind earlier queued operations to
    /// the same peer, or retried after `FI_EAGAIN` (since when).
    Queued {
        /// First `FI_EAGAIN` for it, if any.
        eagain_since: Option<Instant>,
    },
    /// With libfabric; its completion will come from the CQ.
    Posted,
}

/// One operation.
pub(super) struct Record {
    /// The API's id.
    pub(super) op: OpId,
    /// Target of a send or RMA; source filter of a receive.
    pub(super) peer: Option<PeerId>,
    /// The request, which holds the memory (`Arc`s) the operation uses.
    pub(super) req: PostRequest,
    /// A lease receive's buffer.
    pub(super) lease: Option<Vec<u8>>,
    /// A detached send's copy of the data (posted instead of the program's memory).
    pub(super) bounce: Option<Vec<u8>>,
    /// Where it is.
    pub(super) phase: Phase,
    /// The outcome was already reported; libfabric's completion only releases the record.
    pub(super) reported: bool,
}

impl Record {
    /// Send, receive or RMA.
    pub(super) fn dir(&self) -> Dir {
        match self.req {
            PostRequest::Send { .. } => Dir::Send,
            PostRequest::Recv { .. } => Dir::Recv,
            PostRequest::Write { .. } | PostRequest::Read { .. } => Dir::Rma,
        }
    }

    /// Bytes posted (sent, receivable, written or read).
    pub(super) fn posted_len(&self) -> usize {
        match &self.req {
            PostRequest::Send { src, .. } | PostRequest::Write { src, .. } => src.len(),
            PostRequest::Read { dst, .. } => dst.len(),
            PostRequest::Recv { target, .. } => target.capacity(),
        }
    }

    /// The remote key of an RMA.
    pub(super) fn rma_key(&self) -> Option<u64> {
        match &self.req {
            PostRequest::Write { key, .. } | PostRequest::Read { key, .. } => Some(key.key),
            _ => None,
        }
    }

    /// Whether it is a tagged receive.
    pub(super) fn tagged_recv(&self) -> bool {
        matches!(&self.req, PostRequest::Recv { tag: Some(_), .. })
    }

    /// The ordering lane: operations of one lane are handed to libfabric in post order.
    /// Transmit operations are per peer; receives share one lane.
    pub(super) fn lane(&self) -> Option<PeerId> {
        match self.dir() {
            Dir::Recv => None,
            Dir::Send | Dir::Rma => self.peer,
        }
    }
}

/// The records of one endpoint.
#[derive(Default)]
pub(super) struct OpTable {
    slab: Slab<Record>,
    by_op: HashMap<OpId, usize>,
    /// Slab keys of `Queued` records, in post order.
    pub(super) backlog: VecDeque<usize>,
    /// Outcomes decided without libfabric (a post it refused outright), delivered by the
    /// progress task so that no completion is reported from inside `post`.
    pub(super) ready: VecDeque<(Option<PeerId>, OpId, OpOutcome)>,
}

impl OpTable {
    /// Stores a record; returns its key.
    pub(super) fn insert(&mut self, rec: Record) -> usize {
        let op = rec.op;
        let key = self.slab.insert(rec);
        self.by_op.insert(op, key);
        key
    }

    /// Removes a record.
    pub(super) fn remove(&mut self, key: usize) -> Option<Record> {
        let rec = self.slab.try_remove(key)?;
        self.by_op.remove(&rec.op);
        Some(rec)
    }

    /// The record.
    pub(super) fn get(&self, key: usize) -> Option<&Record> {
        self.slab.get(key)
    }

    /// The record, mutably.
    pub(super) fn get_mut(&mut self, key: usize) -> Option<&mut Record> {
        self.slab.get_mut(key)
    }

    /// The key of an operation.
    pub(super) fn key_of(&self, op: OpId) -> Option<usize> {
        self.by_op.get(&op).copied()
    }

    /// Keys of every record, in slab order.
    pub(super) fn keys(&self) -> Vec<usize> {
        self.slab.iter().map(|(k, _)| k).collect()
    }

    /// Whether a queued operation of `lane` waits in the backlog.
    pub(super) fn lane_queued(&self, lane: Option<PeerId>) -> bool {
        self.backlog
            .iter()
            .any(|&k| self.slab.get(k).is_some_and(|r| r.lane() == lane))
    }

    /// Takes a key out of the backlog.
    pub(super) fn unqueue(&mut self, key: usize) {
        self.backlog.retain(|&k| k != key);
    }

    /// Drops every record (after the endpoint is closed: libfabric no longer touches
    /// their memory).
    pub(super) fn clear(&mut self) {
        self.slab.clear();
        self.by_op.clear();
        self.backlog.clear();
        self.ready.clear();
    }
}

/// The op context libfabric echoes in completions for the record at `key`.
pub(super) fn context_of(key: usize) -> *mut c_void {
    (key + 1) as *mut c_void
}

/// The record key of an op context (`None` for a context zerorx never gave).
pub(super) fn key_of_context(ctx: *mut c_void) -> Option<usize> {
    (ctx as usize).checked_sub(1)
}
