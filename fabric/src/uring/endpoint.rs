//! The io_uring provider's endpoint: listener, peers, posted receives, and the
//! `EndpointProvider` entry points.

use super::inbound::{self, InConn};
use super::keys::KeyTable;
use super::matching::{Posted, RxMatch, Unexpected};
use super::outbound::{self, OutConn, Pending};
use super::peers::{Peer, Peers};
use super::wire::{Header, Op, F_ACK, F_IMM, F_TAGGED};
use super::writer::{register_payload_memory, OutFrame};
use super::PROVIDER;
use crate::provider::{EndpointProvider, LocalFuture, PostRequest, ProbeRequest, RecvTarget};
use crate::{
    random_u64, CompletionSink, EndpointConfig, EpAddr, FabricError, Lease, Level, OpError, OpId,
    OpOutcome, PeerId, PostError,
};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::net::SocketAddr;
use std::rc::Rc;
use std::task::{Poll, Waker};
use zerorx::net::TcpListener;
use zerorx::JoinHandle;

/// Everything one endpoint's tasks share.
pub(super) struct EpCore {
    nonce: u64,
    local: SocketAddr,
    pub cfg: EndpointConfig,
    pub max_msg: usize,
    pub sink: CompletionSink,
    pub keys: Rc<RefCell<KeyTable>>,
    peers: RefCell<Peers>,
    pub rx: RefCell<RxMatch>,
    pub inbound: RefCell<Vec<Rc<InConn>>>,
    accepted: RefCell<VecDeque<PeerId>>,
    accept_waiters: RefCell<Vec<Waker>>,
    tasks: RefCell<Vec<JoinHandle<()>>>,
    closed: Cell<bool>,
}

/// Encodes an endpoint address: nonce, then the listen address as text. Nonce 0
/// stands for "whichever endpoint listens there" (never a real endpoint's: see
/// `random_nonce`).
fn encode_addr(nonce: u64, addr: SocketAddr) -> EpAddr {
    let mut bytes = nonce.to_le_bytes().to_vec();
    bytes.extend_from_slice(addr.to_string().as_bytes());
    EpAddr {
        provider: PROVIDER.to_string(),
        bytes,
    }
}

fn decode_addr(a: &EpAddr) -> Result<(u64, SocketAddr), FabricError> {
    let bad = |reason: &str| FabricError::BadAddress {
        reason: reason.to_string(),
    };
    if a.bytes.len() < 9 {
        return Err(bad("too short for a uring-tcp address"));
    }
    let mut n = [0u8; 8];
    n.copy_from_slice(&a.bytes[..8]);
    let addr = std::str::from_utf8(&a.bytes[8..])
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("the socket address part does not parse"))?;
    Ok((u64::from_le_bytes(n), addr))
}

/// The address of whichever endpoint listens on `addr`.
pub(crate) fn socket_ep_addr(addr: SocketAddr) -> EpAddr {
    encode_addr(0, addr)
}

/// The listen address in a `uring-tcp` endpoint address.
pub(crate) fn ep_addr_socket(a: &EpAddr) -> Option<SocketAddr> {
    if a.provider != PROVIDER {
        return None;
    }
    decode_addr(a).ok().map(|(_, s)| s)
}

/// A nonce for a new endpoint: random, never 0 (which stands for "any endpoint").
fn random_nonce() -> u64 {
    loop {
        let n = random_u64();
        if n != 0 {
            return n;
        }
    }
}

impl EpCore {
    /// Spawns a task on this worker that stops when the endpoint closes.
    pub(super) fn spawn(&self, f: impl Future<Output = ()> + 'static) {
        if self.closed.get() {
            return;
        }
        let mut tasks = self.tasks.borrow_mut();
        tasks.retain(|t| !t.is_finished());
        tasks.push(zerorx::spawn(f));
    }

    /// The peer a HELLO names; a peer not in the table is inserted and reported to
    /// `accept`.
    pub(super) fn peer_from_hello(&self, nonce: u64, addr: SocketAddr) -> PeerId {
        let mut peers = self.peers.borrow_mut();
        if let Some(id) = peers.by_nonce(nonce) {
            return id;
        }
        // Inserted by its socket address before it connected: this is that peer.
        if let Some(id) = peers.adopt(addr, nonce) {
            return id;
        }
        let id = peers.insert(Peer {
            nonce,
            addr,
            out: None,
        });
        drop(peers);
        self.accepted.borrow_mut().push_back(id);
        for w in self.accept_waiters.borrow_mut().drain(..) {
            w.wake();
        }
        id
    }

    /// A connection from `peer` ended: receives that only accept it can never match.
    pub(super) fn inbound_lost(&self, peer: PeerId, cause: &str) {
        let gone = self.rx.borrow_mut().take_directed(peer);
        for p in gone {
            let e = OpError::ConnectionLost {
                peer: Some(peer),
                cause: cause.to_string(),
            };
            self.sink.complete(p.op, OpOutcome::err(e));
        }
    }

    /// A message (or write with immediate data) arrived whole: the oldest posted
    /// receive accepting it gets it, or it waits as unexpected.
    pub(super) fn arrived(&self, u: Unexpected) {
        let posted = self.rx.borrow_mut().take_posted(u.peer, u.tag);
        match posted {
            Some((i, p)) => {
                // A multi-receive with room left keeps its place.
                if let Some(p) = self.deliver(p, u) {
                    self.rx.borrow_mut().put_back(i, p);
                }
            }
            None => self.rx.borrow_mut().push_unexpected(u),
        }
    }

    /// Posts receive `p`, giving it the waiting messages it accepts.
    fn post_recv(&self, mut p: Posted) {
        loop {
            let matched = self.rx.borrow_mut().post(p);
            let Some((posted, u, wake)) = matched else {
                return;
            };
            wake.into_iter().for_each(Waker::wake);
            match self.deliver(posted, u) {
                // A multi-receive with room left takes the next waiting message.
                Some(next) => p = next,
                None => return,
            }
        }
    }

    /// Completes receive `p` with the held message `u`; a multi-receive that has room
    /// left comes back instead (its part reported).
    fn deliver(&self, mut p: Posted, u: Unexpected) -> Option<Posted> {
        let mut out = OpOutcome::ok(0);
        out.peer = Some(u.peer);
        out.tag = u.tag;
        out.imm = u.imm;
        if let Some(n) = u.write_len {
            out.len = n;
            out.remote_write = true;
            if matches!(p.target, RecvTarget::Lease { .. }) {
                out.lease = Some(Lease::default());
            }
            if p.multi.is_some() {
                out.offset = p.used;
                self.sink.complete_part(p.op, out);
                return Some(p);
            }
            self.sink.complete(p.op, out);
            return None;
        }
        let len = u.data.len();
        let room = p.target.capacity() - p.used;
        let keep = len.min(room);
        out.len = keep;
        out.offset = p.used;
        if len > keep {
            out.status = Err(OpError::Truncated {
                needed: Some(len),
                posted: keep,
            });
        }
        match &p.target {
            RecvTarget::Buffer(dst) => {
                // In bounds: `used + keep` is at most the slice length.
                let _ = dst
                    .memory()
                    .write_at(dst.offset() + p.used, &u.data[..keep]);
            }
            RecvTarget::Lease { .. } => out.lease = Some(Lease::new(vec![u.data.slice(..keep)])),
        }
        if let Some(min_free) = p.multi {
            p.used += keep;
            if out.status.is_ok() && p.target.capacity() - p.used >= min_free {
                self.sink.complete_part(p.op, out);
                return Some(p);
            }
        }
        self.sink.complete(p.op, out);
        None
    }

    /// The connection to `peer`, started if there is none yet.
    fn out_conn(self: &Rc<Self>, peer: PeerId) -> Result<Rc<OutConn>, PostError> {
        let mut peers = self.peers.borrow_mut();
        let p = peers.get_mut(peer).ok_or(PostError::UnknownPeer(peer))?;
        if let Some(c) = &p.out {
            return Ok(c.clone());
        }
        // The connection's tasks run on this worker.
        if zerorx::Handle::try_current().is_none() {
            return Err(PostError::NotInRuntime);
        }
        let conn = OutConn::new(peer, self.nonce, self.local);
        p.out = Some(conn.clone());
        let addr = p.addr;
        drop(peers);
        self.spawn(outbound::run(self.clone(), conn.clone(), addr));
        Ok(conn)
    }

    fn request(
        self: &Rc<Self>,
        peer: PeerId,
        op: OpId,
        frame: OutFrame,
        wait: Option<Pending>,
    ) -> Result<(), PostError> {
        let conn = self.out_conn(peer)?;
        if let Some(cause) = conn.down_cause() {
            return Err(PostError::PeerDown { peer, cause });
        }
        conn.request(op, frame, wait)
            .map_err(|cause| PostError::PeerDown { peer, cause })
    }
}

/// The `EndpointProvider` of the io_uring TCP transport.
pub(super) struct UringEndpoint(Rc<EpCore>);

impl UringEndpoint {
    pub(super) fn open(
        cfg: &EndpointConfig,
        sink: CompletionSink,
        keys: Rc<RefCell<KeyTable>>,
        max_msg: usize,
    ) -> Result<UringEndpoint, FabricError> {
        // Every connection receives through the worker's pool (TcpStream::recv).
        if !zerorx::Handle::try_current()
            .and_then(|h| Some(h.pool_stats().get(h.current_worker()?)?.is_some()))
            .unwrap_or(false)
        {
            return Err(FabricError::invalid(
                "Builder::copy_pool",
                "None",
                "the uring-tcp provider receives into the worker's receive pool; build the \
                 runtime with one (the default)",
            ));
        }
        let bind = cfg
            .bind
            .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
        if bind.ip().is_unspecified() {
            return Err(FabricError::invalid(
                "EndpointConfig::bind",
                bind,
                "bind a concrete address peers can reach: the endpoint's address is \
                 exchanged as is, and an unspecified IP names no host",
            ));
        }
        // Without SO_REUSEPORT (zerorx's TcpListener::bind sets it): two endpoints
        // sharing a port would split each other's connections, so a taken port must
        // fail here, as a libfabric program reusing a fixed port expects.
        let listener = std::net::TcpListener::bind(bind)
            .and_then(TcpListener::from_std)
            .map_err(|e| FabricError::io("bind", &e))?;
        let local = listener
            .local_addr()
            .map_err(|e| FabricError::io("getsockname", &e))?;
        let core = Rc::new(EpCore {
            nonce: random_nonce(),
            local,
            cfg: cfg.clone(),
            max_msg,
            sink,
            keys,
            peers: RefCell::new(Peers::default()),
            rx: RefCell::new(RxMatch::new(cfg.unexpected_msgs, cfg.unexpected_bytes)),
            inbound: RefCell::new(Vec::new()),
            accepted: RefCell::new(VecDeque::new()),
            accept_waiters: RefCell::new(Vec::new()),
            tasks: RefCell::new(Vec::new()),
            closed: Cell::new(false),
        });
        core.spawn(accept_loop(core.clone(), listener));
        Ok(UringEndpoint(core))
    }
}

async fn accept_loop(ep: Rc<EpCore>, listener: TcpListener) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => ep.spawn(inbound::run(ep.clone(), stream)),
            Err(e) => {
                if ep.closed.get() {
                    return;
                }
                // Out of fds or similar: do not spin, try again shortly.
                tracing::warn!(error = %e, "fabric endpoint accept failed");
                zerorx::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        }
    }
}

/// Posts a message that carries `payload` (a send or an RMA write): immediate data,
/// the ack request for [`Level::Delivered`], and the wait for that ack.
fn post_payload(
    ep: &Rc<EpCore>,
    peer: PeerId,
    op: OpId,
    mut h: Header,
    imm: Option<u64>,
    payload: bytes::Bytes,
    level: Level,
) -> Result<(), PostError> {
    if let Some(i) = imm {
        h.flags |= F_IMM;
        h.imm = i;
    }
    let len = payload.len();
    h.len = len as u64;
    if level == Level::Delivered {
        h.flags |= F_ACK;
    }
    let frame = OutFrame {
        hdr: h.encode(),
        payload,
        sent_op: (level == Level::Sent).then_some((op, len)),
    };
    let wait = (level == Level::Delivered).then_some(Pending::Ack { len });
    ep.request(peer, op, frame, wait)
}

impl EndpointProvider for UringEndpoint {
    fn address(&self) -> EpAddr {
        encode_addr(self.0.nonce, self.0.local)
    }

    fn insert_peer(&self, addr: &EpAddr) -> Result<PeerId, FabricError> {
        let (nonce, sock) = decode_addr(addr)?;
        let ep = &self.0;
        let existing = if nonce == 0 {
            ep.peers.borrow().by_addr(sock)
        } else {
            ep.peers.borrow().by_nonce(nonce)
        };
        let id = match existing {
            Some(id) => id,
            None => ep.peers.borrow_mut().insert(Peer {
                nonce,
                addr: sock,
                out: None,
            }),
        };
        // Connect now: a program that inserts a peer means to talk to it.
        ep.out_conn(id).map_err(|e| match e {
            PostError::NotInRuntime => FabricError::NotInRuntime,
            _ => FabricError::UnknownPeer(id),
        })?;
        Ok(id)
    }

    fn peer_address(&self, peer: PeerId) -> Option<EpAddr> {
        let peers = self.0.peers.borrow();
        let p = peers.get(peer)?;
        Some(encode_addr(p.nonce, p.addr))
    }

    fn remove_peer(&self, peer: PeerId) -> Result<(), FabricError> {
        let ep = &self.0;
        let p = ep
            .peers
            .borrow_mut()
            .remove(peer)
            .ok_or(FabricError::UnknownPeer(peer))?;
        if let Some(out) = p.out {
            out.fail(&ep.sink, "peer removed", &|| OpError::Canceled);
        }
        for p in ep.rx.borrow_mut().take_directed(peer) {
            ep.sink.complete(p.op, OpOutcome::err(OpError::Canceled));
        }
        let inbound: Vec<_> = ep
            .inbound
            .borrow()
            .iter()
            .filter(|c| c.peer.get() == Some(peer))
            .cloned()
            .collect();
        for c in inbound {
            c.shutdown();
        }
        Ok(())
    }

    fn connect(&self, peer: PeerId) -> LocalFuture<'_, Result<(), FabricError>> {
        Box::pin(async move {
            let conn = self.0.out_conn(peer).map_err(|e| match e {
                PostError::NotInRuntime => FabricError::NotInRuntime,
                _ => FabricError::UnknownPeer(peer),
            })?;
            conn.ready()
                .await
                .map_err(|cause| FabricError::Unreachable { peer, cause })
        })
    }

    fn accept(&self) -> LocalFuture<'_, Result<PeerId, FabricError>> {
        Box::pin(poll_fn(|cx| {
            if self.0.closed.get() {
                return Poll::Ready(Err(FabricError::Closed));
            }
            if let Some(p) = self.0.accepted.borrow_mut().pop_front() {
                return Poll::Ready(Ok(p));
            }
            let mut w = self.0.accept_waiters.borrow_mut();
            if !w.iter().any(|x| x.will_wake(cx.waker())) {
                w.push(cx.waker().clone());
            }
            Poll::Pending
        }))
    }

    fn post(&self, op: OpId, req: PostRequest) -> Result<(), PostError> {
        let ep = &self.0;
        if ep.closed.get() {
            return Err(PostError::Closed);
        }
        match req {
            PostRequest::Send {
                peer,
                src,
                tag,
                imm,
                level,
            } => {
                let mut h = Header::new(Op::Send, op.0);
                if let Some(t) = tag {
                    h.flags |= F_TAGGED;
                    h.tag = t;
                }
                register_payload_memory(src.memory(), src.len());
                post_payload(ep, peer, op, h, imm, src.bytes(), level)
            }
            PostRequest::Write {
                peer,
                src,
                key,
                offset,
                imm,
                level,
            } => {
                let mut h = Header::new(Op::Write, op.0);
                h.key = key.key;
                h.generation = key.generation;
                h.offset = key.base.wrapping_add(offset);
                register_payload_memory(src.memory(), src.len());
                post_payload(ep, peer, op, h, imm, src.bytes(), level)
            }
            PostRequest::Read {
                peer,
                dst,
                key,
                offset,
            } => {
                let mut h = Header::new(Op::ReadReq, op.0);
                h.key = key.key;
                h.generation = key.generation;
                h.offset = key.base.wrapping_add(offset);
                h.len = dst.len() as u64;
                let frame = OutFrame {
                    hdr: h.encode(),
                    payload: bytes::Bytes::new(),
                    sent_op: None,
                };
                ep.request(peer, op, frame, Some(Pending::Read { dst }))
            }
            PostRequest::Recv {
                target,
                tag,
                from,
                multi,
            } => {
                if let Some(f) = from {
                    if ep.peers.borrow_mut().get_mut(f).is_none() {
                        return Err(PostError::UnknownPeer(f));
                    }
                }
                ep.post_recv(Posted {
                    op,
                    target,
                    tag,
                    from,
                    multi,
                    used: 0,
                });
                Ok(())
            }
        }
    }

    fn probe(&self, op: OpId, req: ProbeRequest) -> Result<(), PostError> {
        let ep = &self.0;
        if ep.closed.get() {
            return Err(PostError::Closed);
        }
        if let Some(f) = req.from {
            if ep.peers.borrow_mut().get_mut(f).is_none() {
                return Err(PostError::UnknownPeer(f));
            }
        }
        let found = ep.rx.borrow_mut().probe(op, &req);
        let out = match found {
            Some((found, wake)) => {
                wake.into_iter().for_each(Waker::wake);
                let mut out = OpOutcome::ok(found.len);
                out.peer = Some(found.peer);
                out.tag = found.tag;
                out.imm = found.imm;
                out
            }
            None => OpOutcome::err(OpError::NoMessage),
        };
        ep.sink.complete(op, out);
        Ok(())
    }

    fn take_claimed(
        &self,
        op: OpId,
        claim: OpId,
        target: Option<RecvTarget>,
    ) -> Result<(), PostError> {
        let ep = &self.0;
        if ep.closed.get() {
            return Err(PostError::Closed);
        }
        let claimed = ep.rx.borrow_mut().take_claimed(claim);
        match (claimed, target) {
            (Some(u), Some(target)) => {
                ep.deliver(
                    Posted {
                        op,
                        target,
                        tag: None,
                        from: None,
                        multi: None,
                        used: 0,
                    },
                    u,
                );
            }
            (Some(u), None) => {
                let mut out = OpOutcome::ok(u.write_len.unwrap_or(u.data.len()));
                out.peer = Some(u.peer);
                out.tag = u.tag;
                out.imm = u.imm;
                ep.sink.complete(op, out);
            }
            (None, _) => {
                ep.sink.complete(op, OpOutcome::err(OpError::NoMessage));
            }
        }
        Ok(())
    }

    fn cancel(&self, op: OpId) -> bool {
        let ep = &self.0;
        let found = ep.rx.borrow_mut().cancel(op);
        match found {
            Some(p) => ep.sink.complete(p.op, OpOutcome::err(OpError::Canceled)),
            None => false,
        }
    }

    fn close(&self) {
        let ep = &self.0;
        if ep.closed.replace(true) {
            return;
        }
        for t in ep.tasks.borrow_mut().drain(..) {
            t.abort();
        }
        for p in ep.peers.borrow_mut().drain() {
            if let Some(out) = p.out {
                out.shutdown();
            }
        }
        for c in ep.inbound.borrow_mut().drain(..) {
            c.shutdown();
        }
        drop(ep.rx.borrow_mut().take_all());
        ep.accepted.borrow_mut().clear();
        for w in ep.accept_waiters.borrow_mut().drain(..) {
            w.wake();
        }
    }
}
