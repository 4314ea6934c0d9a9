//! The table of posted operations of one endpoint: depth accounting, the region uses
//! that keep memory alive, and the exactly-once rule for completions
//! ([`CompletionSink`]).

use super::completion::{Completion, CqInner, Lease, OpKind};
use super::error::{OpError, PostError, QueueKind};
use super::region::RegionUse;
use super::{OpId, PeerId};
use slab::Slab;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

struct Entry {
    id: OpId,
    context: u64,
    kind: OpKind,
    peer: Option<PeerId>,
    tag: Option<u64>,
    _region: Option<RegionUse>,
}

/// Posted operations whose completions have not been produced yet, and the depth
/// slots held until those completions are taken from the queue.
pub(crate) struct OpTable {
    entries: RefCell<Slab<Entry>>,
    seq: Cell<u32>,
    tx_used: Cell<usize>,
    rx_used: Cell<usize>,
    pub(crate) tx_depth: usize,
    pub(crate) rx_depth: usize,
    duplicates: Cell<u64>,
}

/// What [`OpTable::insert`] records about a new operation.
pub(crate) struct NewOp {
    pub(crate) context: u64,
    pub(crate) kind: OpKind,
    pub(crate) peer: Option<PeerId>,
    pub(crate) tag: Option<u64>,
    /// The local region the operation reads or writes (every operation has at
    /// most one), held until its completion.
    pub(crate) region: Option<RegionUse>,
}

impl OpTable {
    pub(crate) fn new(tx_depth: usize, rx_depth: usize) -> OpTable {
        OpTable {
            entries: RefCell::new(Slab::new()),
            seq: Cell::new(1),
            tx_used: Cell::new(0),
            rx_used: Cell::new(0),
            tx_depth,
            rx_depth,
            duplicates: Cell::new(0),
        }
    }

    fn counter(&self, q: QueueKind) -> (&Cell<usize>, usize) {
        match q {
            QueueKind::Tx => (&self.tx_used, self.tx_depth),
            QueueKind::Rx => (&self.rx_used, self.rx_depth),
        }
    }

    /// Records a new operation, taking a depth slot.
    pub(crate) fn insert(&self, op: NewOp) -> Result<OpId, PostError> {
        let queue = queue_of(op.kind);
        let (used, depth) = self.counter(queue);
        if used.get() >= depth {
            return Err(PostError::QueueFull { queue, depth });
        }
        let mut entries = self.entries.borrow_mut();
        let seq = self.seq.get();
        self.seq.set(seq.wrapping_add(1).max(1));
        let slot = entries.vacant_entry();
        let id = OpId(u64::from(seq) << 32 | slot.key() as u64);
        slot.insert(Entry {
            id,
            context: op.context,
            kind: op.kind,
            peer: op.peer,
            tag: op.tag,
            _region: op.region,
        });
        used.set(used.get() + 1);
        Ok(id)
    }

    /// Undoes [`insert`](Self::insert) for an operation the provider refused.
    pub(crate) fn unpost(&self, id: OpId) {
        if let Some(e) = self.take(id) {
            self.release_slot(queue_of(e.kind));
        }
    }

    fn take(&self, id: OpId) -> Option<Entry> {
        let mut entries = self.entries.borrow_mut();
        let idx = (id.0 & u64::from(u32::MAX)) as usize;
        match entries.get(idx) {
            Some(e) if e.id == id => Some(entries.remove(idx)),
            _ => None,
        }
    }

    pub(crate) fn release_slot(&self, q: QueueKind) {
        let (used, _) = self.counter(q);
        used.set(used.get().saturating_sub(1));
    }

    /// Whether `id` is posted and not yet completed.
    pub(crate) fn is_outstanding(&self, id: OpId) -> bool {
        let idx = (id.0 & u64::from(u32::MAX)) as usize;
        self.entries.borrow().get(idx).is_some_and(|e| e.id == id)
    }

    /// Ids of the operations posted and not yet completed.
    pub(crate) fn outstanding_ids(&self) -> Vec<OpId> {
        self.entries.borrow().iter().map(|(_, e)| e.id).collect()
    }

    /// Operations posted and not yet completed.
    pub(crate) fn outstanding(&self) -> usize {
        self.entries.borrow().len()
    }

    /// Completions reported for operations that had completed already (a provider
    /// bug the table absorbs).
    pub(crate) fn duplicates(&self) -> u64 {
        self.duplicates.get()
    }
}

fn queue_of(kind: OpKind) -> QueueKind {
    if kind.is_tx() {
        QueueKind::Tx
    } else {
        QueueKind::Rx
    }
}

/// How an operation ended, as a provider reports it.
#[derive(Debug)]
pub struct OpOutcome {
    /// Bytes transferred (see [`Completion::len`]).
    pub len: usize,
    /// Source of a received message; for sends and RMA leave `None` (the target peer
    /// is filled in from the post).
    pub peer: Option<PeerId>,
    /// Tag of a received tagged message.
    pub tag: Option<u64>,
    /// Immediate data of a received message or RMA write.
    pub imm: Option<u64>,
    /// The receive was consumed by an RMA write with immediate data.
    pub remote_write: bool,
    /// The bytes of a lease receive.
    pub lease: Option<Lease>,
    /// Where in the posted buffer the bytes went (see [`Completion::offset`]).
    pub offset: usize,
    /// Success or the error.
    pub status: Result<(), OpError>,
}

impl OpOutcome {
    /// Success with `len` bytes.
    pub fn ok(len: usize) -> OpOutcome {
        OpOutcome {
            len,
            peer: None,
            tag: None,
            imm: None,
            remote_write: false,
            lease: None,
            offset: 0,
            status: Ok(()),
        }
    }

    /// Failure.
    pub fn err(e: OpError) -> OpOutcome {
        OpOutcome {
            status: Err(e),
            ..OpOutcome::ok(0)
        }
    }
}

/// Where a provider reports completions. Cloneable; belongs to the endpoint's worker.
#[derive(Clone)]
pub struct CompletionSink {
    table: Rc<OpTable>,
    cq: Rc<CqInner>,
}

impl CompletionSink {
    pub(crate) fn new(table: Rc<OpTable>, cq: Rc<CqInner>) -> CompletionSink {
        CompletionSink { table, cq }
    }

    /// Reports that `op` finished. Exactly once per posted operation: returns `false`
    /// (and drops the report) for an operation that is not outstanding — unknown, or
    /// completed already.
    pub fn complete(&self, op: OpId, outcome: OpOutcome) -> bool {
        let Some(e) = self.table.take(op) else {
            self.table.duplicates.set(self.table.duplicates.get() + 1);
            return false;
        };
        let c = completion(op, &e, outcome, false);
        let queue = queue_of_tx(e.kind.is_tx());
        // The region uses end here: the provider is done with the memory.
        drop(e);
        self.cq.push(c, self.table.clone(), Some(queue));
        true
    }

    /// Reports one part of `op` with more to follow (a message of a multi-receive):
    /// the operation stays outstanding, and this completion holds no depth slot.
    pub fn complete_part(&self, op: OpId, outcome: OpOutcome) -> bool {
        let c = {
            let entries = self.table.entries.borrow();
            let idx = (op.0 & u64::from(u32::MAX)) as usize;
            match entries.get(idx) {
                Some(e) if e.id == op => completion(op, e, outcome, true),
                _ => return false,
            }
        };
        self.cq.push(c, self.table.clone(), None);
        true
    }

    /// Whether `op` is posted and not yet completed.
    pub fn is_outstanding(&self, op: OpId) -> bool {
        self.table.is_outstanding(op)
    }
}

/// The completion of `op` (recorded as `e`) with `outcome`.
fn completion(op: OpId, e: &Entry, outcome: OpOutcome, more: bool) -> Completion {
    let tx = e.kind.is_tx();
    Completion {
        op,
        context: e.context,
        kind: e.kind,
        peer: if tx { e.peer } else { outcome.peer.or(e.peer) },
        len: outcome.len,
        tag: if tx { e.tag } else { outcome.tag },
        imm: if tx { None } else { outcome.imm },
        remote_write: outcome.remote_write,
        lease: outcome.lease,
        offset: outcome.offset,
        more,
        status: outcome.status,
    }
}

fn queue_of_tx(tx: bool) -> QueueKind {
    if tx {
        QueueKind::Tx
    } else {
        QueueKind::Rx
    }
}
