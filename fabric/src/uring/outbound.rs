//! The initiator side: the connection this endpoint opens to a peer, the requests
//! queued on it, and the answers (ACK, NAK, READ_RESP) that complete them.

use super::endpoint::EpCore;
use super::reader::FrameReader;
use super::wire::{Header, Op, HELLO_MAGIC, VERSION};
use super::writer::{run_writer, OutFrame, TxQueue};
use crate::{CompletionSink, MrSlice, OpError, OpId, OpOutcome, PeerId};
use bytes::Bytes;
use std::cell::RefCell;
use std::collections::HashMap;
use std::future::poll_fn;
use std::net::SocketAddr;
use std::rc::Rc;
use std::task::{Poll, Waker};
use zerorx::net::TcpStream;

/// What an operation waits for once its request is queued.
pub(super) enum Pending {
    /// An ACK (delivery-complete sends and writes); completes with `len`.
    Ack { len: usize },
    /// A READ_RESP whose payload lands in `dst`.
    Read { dst: MrSlice },
}

enum ConnState {
    Connecting(Vec<Waker>),
    Up(Rc<TcpStream>),
    Down(String),
}

/// The connection to one peer.
pub(super) struct OutConn {
    pub peer: PeerId,
    pub tx: Rc<TxQueue>,
    pending: RefCell<HashMap<u64, Pending>>,
    state: RefCell<ConnState>,
}

impl OutConn {
    /// A connection whose first frame will be HELLO naming `me`.
    pub(super) fn new(peer: PeerId, nonce: u64, me: SocketAddr) -> Rc<OutConn> {
        let tx = TxQueue::new();
        let addr = Bytes::from(me.to_string());
        let mut h = Header::new(Op::Hello, nonce);
        h.key = HELLO_MAGIC;
        h.generation = VERSION;
        h.len = addr.len() as u64;
        // A fresh queue is open, so this cannot fail.
        let _ = tx.push(OutFrame {
            hdr: h.encode(),
            payload: addr,
            sent_op: None,
        });
        Rc::new(OutConn {
            peer,
            tx,
            pending: RefCell::new(HashMap::new()),
            state: RefCell::new(ConnState::Connecting(Vec::new())),
        })
    }

    /// Why the connection is down, if it is.
    pub(super) fn down_cause(&self) -> Option<String> {
        match &*self.state.borrow() {
            ConnState::Down(c) => Some(c.clone()),
            _ => None,
        }
    }

    /// Queues a request; `wait` is what its completion waits for (none: it completes
    /// when sent, through `frame.sent_op`).
    pub(super) fn request(
        &self,
        op: OpId,
        frame: OutFrame,
        wait: Option<Pending>,
    ) -> Result<(), String> {
        if let Some(w) = wait {
            self.pending.borrow_mut().insert(op.0, w);
        }
        if let Err(cause) = self.tx.push(frame) {
            self.pending.borrow_mut().remove(&op.0);
            return Err(cause);
        }
        Ok(())
    }

    fn take(&self, id: u64) -> Option<Pending> {
        self.pending.borrow_mut().remove(&id)
    }

    /// Resolves once the connection is up (`Ok`) or down (`Err(cause)`).
    pub(super) async fn ready(&self) -> Result<(), String> {
        poll_fn(|cx| match &mut *self.state.borrow_mut() {
            ConnState::Up(_) => Poll::Ready(Ok(())),
            ConnState::Down(c) => Poll::Ready(Err(c.clone())),
            ConnState::Connecting(w) => {
                w.push(cx.waker().clone());
                Poll::Pending
            }
        })
        .await
    }

    /// Ends the connection: every operation queued or waiting on it completes with
    /// `err()`, later posts are refused with the cause. Idempotent.
    pub(super) fn fail(&self, sink: &CompletionSink, cause: &str, err: &dyn Fn() -> OpError) {
        let old = std::mem::replace(
            &mut *self.state.borrow_mut(),
            ConnState::Down(cause.to_string()),
        );
        match old {
            ConnState::Down(c) => {
                *self.state.borrow_mut() = ConnState::Down(c);
                return;
            }
            ConnState::Connecting(waiters) => waiters.into_iter().for_each(Waker::wake),
            ConnState::Up(stream) => {
                let _ = stream.socket().shutdown(std::net::Shutdown::Both);
            }
        }
        for f in self.tx.fail(cause) {
            if let Some((op, _)) = f.sent_op {
                sink.complete(op, OpOutcome::err(err()));
            }
        }
        let pending: Vec<u64> = self
            .pending
            .borrow_mut()
            .drain()
            .map(|(id, _)| id)
            .collect();
        for id in pending {
            sink.complete(OpId(id), OpOutcome::err(err()));
        }
    }

    /// Stops without completing anything (endpoint close: the generic layer completes).
    pub(super) fn shutdown(&self) {
        let old = std::mem::replace(
            &mut *self.state.borrow_mut(),
            ConnState::Down("endpoint closed".into()),
        );
        if let ConnState::Up(stream) = old {
            let _ = stream.socket().shutdown(std::net::Shutdown::Both);
        }
        self.tx.fail("endpoint closed");
        self.pending.borrow_mut().clear();
    }
}

fn lost(peer: PeerId, cause: &str) -> impl Fn() -> OpError + '_ {
    move || OpError::ConnectionLost {
        peer: Some(peer),
        cause: cause.to_string(),
    }
}

/// Connects, starts the writer, then reads answers until the connection ends.
pub(super) async fn run(ep: Rc<EpCore>, conn: Rc<OutConn>, addr: SocketAddr) {
    let stream = match TcpStream::connect_timeout(addr, ep.cfg.connect_timeout).await {
        Ok(s) => Rc::new(s),
        Err(e) => {
            let cause = format!("connecting to {addr}: {e}");
            conn.fail(&ep.sink, &cause, &lost(conn.peer, &cause));
            return;
        }
    };
    let _ = stream.set_nodelay(true);
    {
        let mut st = conn.state.borrow_mut();
        match &mut *st {
            ConnState::Connecting(waiters) => {
                let waiters = std::mem::take(waiters);
                *st = ConnState::Up(stream.clone());
                drop(st);
                waiters.into_iter().for_each(Waker::wake);
            }
            // Removed or closed while connecting.
            ConnState::Up(_) | ConnState::Down(_) => return,
        }
    }
    let (sink, c) = (ep.sink.clone(), conn.clone());
    let on_fail = move |cause: String, done: Vec<(OpId, usize)>| {
        for (op, _) in done {
            sink.complete(op, OpOutcome::err(lost(c.peer, &cause)()));
        }
        c.fail(&sink, &cause, &lost(c.peer, &cause));
    };
    ep.spawn(run_writer(
        stream.clone(),
        conn.tx.clone(),
        ep.sink.clone(),
        on_fail,
    ));
    let cause = read_answers(&ep.sink, &conn, FrameReader::new(stream)).await;
    conn.fail(&ep.sink, &cause, &lost(conn.peer, &cause));
}

/// Completes operations from the peer's answers; returns why the connection ended.
async fn read_answers(sink: &CompletionSink, conn: &OutConn, mut r: FrameReader) -> String {
    loop {
        let h = match r.header().await {
            Ok(Some(h)) => h,
            Ok(None) => return "the peer closed the connection".into(),
            Err(e) => return e,
        };
        match h.op {
            Op::Ack => match conn.take(h.id) {
                Some(Pending::Ack { len }) => {
                    sink.complete(OpId(h.id), OpOutcome::ok(len));
                }
                Some(Pending::Read { .. }) => {
                    let cause = format!("protocol error: ACK for read {:#x}", h.id);
                    sink.complete(OpId(h.id), OpOutcome::err(lost(conn.peer, &cause)()));
                    return cause;
                }
                None => {}
            },
            Op::Nak => {
                let fault = match h.fault() {
                    Ok(f) => f,
                    Err(e) => return e,
                };
                // A NAK for an operation completed at `Sent` level has nobody to tell.
                if conn.take(h.id).is_some() {
                    let e = OpError::RemoteAccess { key: h.key, fault };
                    sink.complete(OpId(h.id), OpOutcome::err(e));
                }
            }
            Op::ReadResp => match conn.take(h.id) {
                Some(Pending::Read { dst }) => {
                    if h.len != dst.len() as u64 {
                        let cause = format!(
                            "protocol error: read response of {} bytes for a read of {}",
                            h.len,
                            dst.len()
                        );
                        sink.complete(OpId(h.id), OpOutcome::err(lost(conn.peer, &cause)()));
                        return cause;
                    }
                    let mut at = 0;
                    while at < dst.len() {
                        match r.chunk(dst.len() - at).await {
                            Ok(c) => {
                                // In bounds: the slice was checked at post time.
                                let _ = dst.memory().write_at(dst.offset() + at, &c);
                                at += c.len();
                            }
                            Err(cause) => {
                                sink.complete(
                                    OpId(h.id),
                                    OpOutcome::err(lost(conn.peer, &cause)()),
                                );
                                return cause;
                            }
                        }
                    }
                    sink.complete(OpId(h.id), OpOutcome::ok(dst.len()));
                }
                Some(Pending::Ack { .. }) => {
                    let cause = format!("protocol error: read response for a write {:#x}", h.id);
                    sink.complete(OpId(h.id), OpOutcome::err(lost(conn.peer, &cause)()));
                    return cause;
                }
                None => {
                    if let Err(e) = r.skip(h.len).await {
                        return e;
                    }
                }
            },
            other => return format!("protocol error: {other:?} frame on a request connection"),
        }
    }
}
