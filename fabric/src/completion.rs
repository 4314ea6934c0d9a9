//! What a finished operation reports ([`Completion`]), the queue that collects them
//! ([`CompletionQueue`]), and the receive memory a lease hands over ([`Lease`]).

use super::error::OpError;
use super::error::QueueKind;
use super::ops::OpTable;
use super::{OpId, PeerId};
use bytes::Bytes;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::future::poll_fn;
use std::rc::Rc;
use std::task::{Poll, Waker};

/// Which kind of operation completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// An untagged send.
    Send,
    /// A tagged send.
    TaggedSend,
    /// An untagged receive into a region.
    Recv,
    /// A tagged receive into a region.
    TaggedRecv,
    /// A lease receive (untagged or tagged).
    LeaseRecv,
    /// An RMA write.
    Write,
    /// An RMA read.
    Read,
    /// A probe of the messages waiting for a receive ([`Endpoint::probe`](crate::Endpoint::probe)).
    Probe,
}

impl OpKind {
    /// Whether this kind is counted against the transmit queue.
    pub fn is_tx(self) -> bool {
        matches!(
            self,
            OpKind::Send | OpKind::TaggedSend | OpKind::Write | OpKind::Read
        )
    }
}

/// Received bytes handed to the program without copying them out of the provider's
/// receive memory (for the io_uring provider: slices of the worker pool's `RxBuf`s).
/// Dropping the lease gives the memory back.
#[derive(Clone, Default)]
pub struct Lease {
    segments: Vec<Bytes>,
    len: usize,
}

impl Lease {
    /// A lease over `segments`, in order.
    pub fn new(segments: Vec<Bytes>) -> Lease {
        let len = segments.iter().map(Bytes::len).sum();
        Lease { segments, len }
    }

    /// Total length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The pieces, in order.
    pub fn segments(&self) -> &[Bytes] {
        &self.segments
    }

    /// The pieces, by value.
    pub fn into_segments(self) -> Vec<Bytes> {
        self.segments
    }

    /// The bytes when they are in one piece.
    pub fn contiguous(&self) -> Option<&[u8]> {
        match self.segments.as_slice() {
            [] => Some(&[]),
            [one] => Some(one),
            _ => None,
        }
    }

    /// A copy of all bytes.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len);
        for s in &self.segments {
            v.extend_from_slice(s);
        }
        v
    }
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lease")
            .field("len", &self.len)
            .field("segments", &self.segments.len())
            .finish()
    }
}

/// One finished operation. Every posted operation produces exactly one, success or
/// failure; every field is meaningful or `None`.
#[derive(Debug)]
pub struct Completion {
    /// The operation, as returned by its post.
    pub op: OpId,
    /// The context value given at post time (0 when none was given).
    pub context: u64,
    /// What kind of operation it was.
    pub kind: OpKind,
    /// The peer: target of a send/RMA, source of a received message (`None` when the
    /// provider cannot name the source, or the operation failed before one was known).
    pub peer: Option<PeerId>,
    /// Bytes transferred: sent, placed in the receive buffer (the posted length when
    /// truncated), written or read. For a receive consumed by an RMA write with
    /// immediate data: the length of that write.
    pub len: usize,
    /// The message tag (tagged sends and receives).
    pub tag: Option<u64>,
    /// Immediate data carried by the message or RMA write (receives only).
    pub imm: Option<u64>,
    /// A receive consumed by an RMA write with immediate data (no bytes were placed in
    /// the receive buffer; the data is in the written region).
    pub remote_write: bool,
    /// The received bytes of a lease receive.
    pub lease: Option<Lease>,
    /// Where in the posted buffer the bytes were placed: 0 but for the later
    /// messages of a multi-receive ([`RecvPost::multi`](crate::RecvPost::multi)).
    pub offset: usize,
    /// More completions of this operation follow: a message of a multi-receive whose
    /// buffer has room left. The last one has `false`.
    pub more: bool,
    /// Success, or why it failed.
    pub status: Result<(), OpError>,
}

impl Completion {
    /// Whether the operation succeeded.
    pub fn is_ok(&self) -> bool {
        self.status.is_ok()
    }
}

/// A completion waiting in the queue, with the depth slot it frees when taken.
struct Queued {
    c: Completion,
    table: Rc<OpTable>,
    /// The depth slot taking it frees (`None` for a completion with `more`).
    queue: Option<QueueKind>,
}

pub(crate) struct CqInner {
    depth: usize,
    reserved: Cell<usize>,
    queue: RefCell<VecDeque<Queued>>,
    waiters: RefCell<Vec<Waker>>,
}

impl CqInner {
    /// Reserves room for an endpoint's `tx + rx` operations.
    pub(crate) fn reserve(&self, n: usize) -> Result<(), usize> {
        let used = self.reserved.get();
        if used + n > self.depth {
            return Err(used);
        }
        self.reserved.set(used + n);
        Ok(())
    }

    pub(crate) fn unreserve(&self, n: usize) {
        self.reserved.set(self.reserved.get().saturating_sub(n));
    }

    pub(crate) fn push(&self, c: Completion, table: Rc<OpTable>, queue: Option<QueueKind>) {
        self.queue
            .borrow_mut()
            .push_back(Queued { c, table, queue });
        let waiters = std::mem::take(&mut *self.waiters.borrow_mut());
        for w in waiters {
            w.wake();
        }
    }

    fn pop(&self) -> Option<Completion> {
        let q = self.queue.borrow_mut().pop_front()?;
        if let Some(queue) = q.queue {
            q.table.release_slot(queue);
        }
        Some(q.c)
    }
}

/// Collects the completions of every endpoint bound to it. Depth is checked when an
/// endpoint is bound (it must cover the `tx_depth + rx_depth` of all of them), and an
/// operation's queue slot is freed only when its completion is taken here, so the
/// queue can never overflow.
#[derive(Clone)]
pub struct CompletionQueue {
    pub(crate) inner: Rc<CqInner>,
}

impl CompletionQueue {
    pub(crate) fn new(depth: usize) -> CompletionQueue {
        CompletionQueue {
            inner: Rc::new(CqInner {
                depth,
                reserved: Cell::new(0),
                queue: RefCell::new(VecDeque::new()),
                waiters: RefCell::new(Vec::new()),
            }),
        }
    }

    /// The declared depth.
    pub fn depth(&self) -> usize {
        self.inner.depth
    }

    /// Completions waiting.
    pub fn len(&self) -> usize {
        self.inner.queue.borrow().len()
    }

    /// Whether none is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes the next completion, if any; never blocks.
    pub fn try_next(&self) -> Option<Completion> {
        self.inner.pop()
    }

    /// Moves up to `max` completions into `out`; returns how many. Never blocks.
    pub fn poll(&self, out: &mut Vec<Completion>, max: usize) -> usize {
        let mut n = 0;
        while n < max {
            match self.inner.pop() {
                Some(c) => {
                    out.push(c);
                    n += 1;
                }
                None => break,
            }
        }
        n
    }

    /// Waits for the next completion. Progress is automatic, so nothing else needs
    /// polling meanwhile; bound the wait with [`zerorx::time::timeout`] if the peer may
    /// never answer.
    pub async fn next(&self) -> Completion {
        poll_fn(|cx| match self.inner.pop() {
            Some(c) => Poll::Ready(c),
            None => {
                let mut w = self.inner.waiters.borrow_mut();
                if !w.iter().any(|x| x.will_wake(cx.waker())) {
                    w.push(cx.waker().clone());
                }
                Poll::Pending
            }
        })
        .await
    }
}

impl fmt::Debug for CompletionQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompletionQueue")
            .field("depth", &self.inner.depth)
            .field("waiting", &self.len())
            .finish()
    }
}
