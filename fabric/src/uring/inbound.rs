//! The target side: connections peers opened to this endpoint. Each starts with
//! HELLO (naming the peer), then carries requests this side serves without the
//! program's involvement: messages matched or queued, RMA validated and applied,
//! answers queued on the same connection.

use super::endpoint::EpCore;
use super::matching::{Posted, Unexpected};
use super::reader::FrameReader;
use super::wire::{Header, Op, F_ACK, HELLO_MAGIC, MAX_HELLO_ADDR, VERSION};
use super::writer::{run_writer, OutFrame, TxQueue};
use crate::provider::RecvTarget;
use crate::{Access, Lease, OpError, OpOutcome, PeerId};
use bytes::{Bytes, BytesMut};
use std::cell::Cell;
use std::future::poll_fn;
use std::net::SocketAddr;
use std::rc::Rc;
use std::task::Poll;
use zerorx::net::TcpStream;

/// A connection a peer opened to this endpoint.
pub(super) struct InConn {
    pub stream: Rc<TcpStream>,
    pub tx: Rc<TxQueue>,
    pub peer: Cell<Option<PeerId>>,
}

impl InConn {
    pub(super) fn shutdown(&self) {
        let _ = self.stream.socket().shutdown(std::net::Shutdown::Both);
        self.tx.fail("connection closed");
    }

    fn answer(&self, h: Header, payload: Bytes) {
        // A failed queue means the connection is going down; the reader sees it next.
        let _ = self.tx.push(OutFrame {
            hdr: h.encode(),
            payload,
            sent_op: None,
        });
    }
}

/// Serves one accepted connection until it ends.
pub(super) async fn run(ep: Rc<EpCore>, stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let stream = Rc::new(stream);
    let conn = Rc::new(InConn {
        stream: stream.clone(),
        tx: TxQueue::new(),
        peer: Cell::new(None),
    });
    ep.inbound.borrow_mut().push(conn.clone());
    let c = conn.clone();
    ep.spawn(run_writer(
        stream.clone(),
        conn.tx.clone(),
        ep.sink.clone(),
        move |_cause, _done| c.shutdown(),
    ));
    let mut r = FrameReader::new(stream);
    let cause = match serve(&ep, &conn, &mut r).await {
        Ok(()) => "the peer closed the connection".to_string(),
        Err(e) => e,
    };
    conn.shutdown();
    ep.inbound.borrow_mut().retain(|c| !Rc::ptr_eq(c, &conn));
    if let Some(peer) = conn.peer.get() {
        ep.inbound_lost(peer, &cause);
    }
}

async fn serve(ep: &Rc<EpCore>, conn: &InConn, r: &mut FrameReader) -> Result<(), String> {
    let Some(peer) = hello(ep, r).await? else {
        return Ok(());
    };
    conn.peer.set(Some(peer));
    loop {
        let Some(h) = r.header().await? else {
            return Ok(());
        };
        if h.has_payload() && h.len > ep.max_msg as u64 {
            return Err(format!(
                "protocol error: frame of {} bytes, over the maximum message size {}",
                h.len, ep.max_msg
            ));
        }
        match h.op {
            Op::Send => on_send(ep, conn, r, h, peer).await?,
            Op::Write => on_write(ep, conn, r, h, peer).await?,
            Op::ReadReq => on_read(ep, conn, h),
            other => {
                return Err(format!(
                    "protocol error: {other:?} frame on a request connection"
                ))
            }
        }
        room(ep).await;
    }
}

/// Reads HELLO and resolves the peer (inserting it if new).
async fn hello(ep: &Rc<EpCore>, r: &mut FrameReader) -> Result<Option<PeerId>, String> {
    let Some(h) = r.header().await? else {
        return Ok(None);
    };
    if h.op != Op::Hello || h.key != HELLO_MAGIC {
        return Err("protocol error: the connection did not start with HELLO".into());
    }
    if h.generation != VERSION {
        return Err(format!(
            "protocol version {} from the peer, this endpoint speaks {VERSION}",
            h.generation
        ));
    }
    if h.len > MAX_HELLO_ADDR {
        return Err(format!("protocol error: HELLO address of {} bytes", h.len));
    }
    let raw = read_all(r, h.len as usize).await?;
    let addr: SocketAddr = std::str::from_utf8(&raw)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or("protocol error: HELLO address is not a socket address")?;
    Ok(Some(ep.peer_from_hello(h.id, addr)))
}

/// Waits while unexpected messages hold more than the bound (backpressure: the peer's
/// requests stay in the socket and TCP flow control slows it down).
async fn room(ep: &EpCore) {
    poll_fn(|cx| {
        let mut rx = ep.rx.borrow_mut();
        if rx.over_limit() {
            rx.wait_room(cx.waker());
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await
}

async fn read_all(r: &mut FrameReader, len: usize) -> Result<Bytes, String> {
    // Grown as bytes arrive: a header alone cannot make this side allocate.
    let mut buf = BytesMut::with_capacity(len.min(1 << 20));
    while buf.len() < len {
        let c = r.chunk(len - buf.len()).await?;
        buf.extend_from_slice(&c);
    }
    Ok(buf.freeze())
}

async fn on_send(
    ep: &Rc<EpCore>,
    conn: &InConn,
    r: &mut FrameReader,
    h: Header,
    peer: PeerId,
) -> Result<(), String> {
    let len = h.len as usize;
    let mut matched = ep.rx.borrow_mut().take_posted(peer, h.tag());
    if let Some((i, p)) = matched.take() {
        if p.multi.is_some() {
            // A multi-receive keeps its place (and may take messages of other
            // connections meanwhile): this one is read whole, then placed.
            ep.rx.borrow_mut().put_back(i, p);
        } else {
            matched = Some((i, p));
        }
    }
    match matched.map(|(_, p)| p) {
        Some(p) => {
            let op = p.op;
            if let Err(cause) = stream_into(ep, r, p, len, peer, h).await {
                let e = OpError::ConnectionLost {
                    peer: Some(peer),
                    cause: cause.clone(),
                };
                ep.sink.complete(op, OpOutcome::err(e));
                return Err(cause);
            }
        }
        None => {
            let data = read_all(r, len).await?;
            ep.arrived(Unexpected {
                peer,
                tag: h.tag(),
                imm: h.imm(),
                data,
                write_len: None,
            });
        }
    }
    if h.flags & F_ACK != 0 {
        let mut ack = Header::new(Op::Ack, h.id);
        ack.len = h.len;
        conn.answer(ack, Bytes::new());
    }
    Ok(())
}

/// Places a message matched at its header straight from the receive buffers.
async fn stream_into(
    ep: &EpCore,
    r: &mut FrameReader,
    p: Posted,
    len: usize,
    peer: PeerId,
    h: Header,
) -> Result<(), String> {
    let keep = len.min(p.target.capacity());
    let mut out = OpOutcome::ok(keep);
    out.peer = Some(peer);
    out.tag = h.tag();
    out.imm = h.imm();
    if len > keep {
        out.status = Err(OpError::Truncated {
            needed: Some(len),
            posted: keep,
        });
    }
    match &p.target {
        RecvTarget::Buffer(dst) => {
            let mut at = 0;
            while at < keep {
                let c = r.chunk(keep - at).await?;
                // In bounds: `keep` is at most the slice length.
                let _ = dst.memory().write_at(dst.offset() + at, &c);
                at += c.len();
            }
        }
        RecvTarget::Lease { .. } => {
            let lease = if keep <= ep.cfg.lease_zero_copy_max {
                let mut segs = Vec::new();
                let mut at = 0;
                while at < keep {
                    let c = r.chunk(keep - at).await?;
                    at += c.len();
                    segs.push(c);
                }
                Lease::new(segs)
            } else {
                Lease::new(vec![read_all(r, keep).await?])
            };
            out.lease = Some(lease);
        }
    }
    r.skip((len - keep) as u64).await?;
    ep.sink.complete(p.op, out);
    Ok(())
}

async fn on_write(
    ep: &Rc<EpCore>,
    conn: &InConn,
    r: &mut FrameReader,
    h: Header,
    peer: PeerId,
) -> Result<(), String> {
    let checked =
        ep.keys
            .borrow()
            .check(h.key, h.generation, h.offset, h.len, Access::REMOTE_WRITE);
    match checked {
        Ok(t) => {
            let len = h.len as usize;
            let mut at = 0;
            while at < len {
                let c = r.chunk(len - at).await?;
                // In bounds: checked against the grant, which lies inside the region.
                let _ = t.mem.write_at(t.at + at, &c);
                at += c.len();
            }
            if let Some(imm) = h.imm() {
                ep.arrived(Unexpected {
                    peer,
                    tag: None,
                    imm: Some(imm),
                    data: Bytes::new(),
                    write_len: Some(len),
                });
            }
            if h.flags & F_ACK != 0 {
                let mut ack = Header::new(Op::Ack, h.id);
                ack.len = h.len;
                conn.answer(ack, Bytes::new());
            }
        }
        Err(fault) => {
            // Refused: drop the payload, answer, keep the connection.
            r.skip(h.len).await?;
            conn.answer(Header::nak(h.id, h.key, fault), Bytes::new());
        }
    }
    Ok(())
}

fn on_read(ep: &EpCore, conn: &InConn, h: Header) {
    let checked = ep
        .keys
        .borrow()
        .check(h.key, h.generation, h.offset, h.len, Access::REMOTE_READ);
    let payload = checked.map(|t| {
        super::writer::register_payload_memory(&t.mem, h.len as usize);
        t.mem.bytes(t.at..t.at + h.len as usize)
    });
    match payload {
        Ok(Ok(payload)) => {
            let mut resp = Header::new(Op::ReadResp, h.id);
            resp.len = h.len;
            conn.answer(resp, payload);
        }
        Ok(Err(_)) => {
            // Unreachable in practice: the grant lies inside the region.
            let fault = crate::AccessFault::OutOfBounds {
                offset: h.offset,
                len: h.len,
                limit: 0,
            };
            conn.answer(Header::nak(h.id, h.key, fault), Bytes::new());
        }
        Err(fault) => conn.answer(Header::nak(h.id, h.key, fault), Bytes::new()),
    }
}
