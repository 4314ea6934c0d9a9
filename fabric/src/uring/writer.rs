//! Frames into a TCP stream: one queue and one writer task per connection, batching
//! every queued frame into one gather send (headers and small payloads coalesced,
//! large payloads sent from their own memory without a user-space copy). The batch
//! goes out as the connection's queued sends, so the runtime's
//! [`SendZeroCopy`](zerorx::SendZeroCopy) policy sends it zero-copy where that pays;
//! its operations complete once the flush says the kernel is done with the bytes (a
//! zero-copy send's notification included), so a completed send's memory may be
//! reused at once.

use super::wire::HDR;
use crate::region::RegionMemory;
use crate::{CompletionSink, OpId, OpOutcome};
use bytes::{Bytes, BytesMut};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::poll_fn;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Poll, Waker};
use zerorx::net::{SendBuf, TcpStream};

/// Payloads up to this size are copied next to their header (one iovec for many
/// small frames); larger ones go out from their own memory.
const COALESCE_MAX: usize = 8 << 10;

/// Registers the region a payload of `len` bytes is sent from with the worker's ring
/// (once per region and worker), so a zero-copy send of it names the registration and
/// the kernel does not pin its pages per send. A payload copied next to its header
/// needs none. Best effort: where the runtime registers nothing more (a full table,
/// `RLIMIT_MEMLOCK`) the payload goes out unregistered, as it would anyway.
pub(super) fn register_payload_memory(memory: &Arc<RegionMemory>, len: usize) {
    if len > COALESCE_MAX && !memory.is_foreign() {
        let _ = zerorx::runtime::register_send_memory(memory);
    }
}
/// Frames per gather send at most.
const BATCH_FRAMES: usize = 256;

/// One frame to send.
pub(super) struct OutFrame {
    pub hdr: [u8; HDR],
    pub payload: Bytes,
    /// An operation that completes (with `sent_len`) once this frame is sent.
    pub sent_op: Option<(OpId, usize)>,
}

enum State {
    Open,
    Failed(String),
}

/// The frames waiting for one connection's writer.
pub(super) struct TxQueue {
    frames: RefCell<VecDeque<OutFrame>>,
    waker: RefCell<Option<Waker>>,
    state: RefCell<State>,
}

impl TxQueue {
    pub(super) fn new() -> Rc<TxQueue> {
        Rc::new(TxQueue {
            frames: RefCell::new(VecDeque::new()),
            waker: RefCell::new(None),
            state: RefCell::new(State::Open),
        })
    }

    /// Queues a frame; fails with the cause (dropping the frame) if the connection
    /// failed.
    pub(super) fn push(&self, f: OutFrame) -> Result<(), String> {
        if let State::Failed(cause) = &*self.state.borrow() {
            return Err(cause.clone());
        }
        self.frames.borrow_mut().push_back(f);
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
        Ok(())
    }

    /// Marks the queue failed and returns the frames never sent.
    pub(super) fn fail(&self, cause: &str) -> Vec<OutFrame> {
        *self.state.borrow_mut() = State::Failed(cause.to_string());
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
        self.frames.borrow_mut().drain(..).collect()
    }

    /// Waits for frames and moves up to a batch of them into `out`; false once the
    /// queue failed.
    async fn next_batch(&self, out: &mut Vec<OutFrame>) -> bool {
        poll_fn(|cx| {
            if matches!(*self.state.borrow(), State::Failed(_)) {
                return Poll::Ready(false);
            }
            let mut q = self.frames.borrow_mut();
            if q.is_empty() {
                *self.waker.borrow_mut() = Some(cx.waker().clone());
                return Poll::Pending;
            }
            let n = q.len().min(BATCH_FRAMES);
            out.extend(q.drain(..n));
            Poll::Ready(true)
        })
        .await
    }
}

/// Sends queued frames until the queue fails or a send fails. On a send failure,
/// the batch's `sent_op`s are handed to `on_fail` with the cause (which also fails
/// the queue); frames never sent are the caller's to complete.
pub(super) async fn run_writer(
    stream: Rc<TcpStream>,
    q: Rc<TxQueue>,
    sink: CompletionSink,
    on_fail: impl Fn(String, Vec<(OpId, usize)>),
) {
    // Kept across batches, so a steady stream of frames allocates nothing per batch:
    // the vectors keep their capacity, and the staging buffer's memory comes back
    // once the sends holding it finish (`BytesMut` reclaims a buffer nobody shares).
    let mut bufs: Vec<Bytes> = Vec::new();
    let mut batch: Vec<OutFrame> = Vec::new();
    let mut done: Vec<(OpId, usize)> = Vec::new();
    let mut stage = BytesMut::new();
    while q.next_batch(&mut batch).await {
        for f in batch.drain(..) {
            stage.extend_from_slice(&f.hdr);
            if f.payload.len() <= COALESCE_MAX {
                stage.extend_from_slice(&f.payload);
            } else {
                bufs.push(stage.split().freeze());
                bufs.push(f.payload);
            }
            done.extend(f.sent_op);
        }
        bufs.push(stage.split().freeze());
        let result = match stream.queue_send_vectored(bufs.drain(..).map(SendBuf::from)) {
            Ok(()) => stream.flush_sends().await,
            Err(e) => Err(e),
        };
        match result {
            Ok(()) => {
                for (op, len) in done.drain(..) {
                    sink.complete(op, OpOutcome::ok(len));
                }
            }
            Err(e) => {
                on_fail(format!("send failed: {e}"), std::mem::take(&mut done));
                return;
            }
        }
    }
}
