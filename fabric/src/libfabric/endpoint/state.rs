//! The endpoint's state: opening, the backlog, peer liveness, cancel and detach.

use super::super::errors;
use super::super::info::Info;
use super::super::linger;
use super::super::local;
use super::super::ops::{context_of, OpTable, Phase, Record};
use super::super::order::TxOrder;
use super::super::peers::PeerTable;
use super::super::post;
use super::super::res::{DomainRes, EpRes};
use super::super::wait::Kick;
use super::{EpState, DETACH_BUDGET, LIVENESS_PERIOD};
use crate::provider::PostRequest;
use crate::{
    CompletionSink, EndpointConfig, EpAddr, FabricError, Level, OpError, OpId, OpOutcome, PeerId,
};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;
use zerorx_libfabric_sys as fi;

impl EpState {
    /// Opens the libfabric endpoint for `cfg` and starts its progress task.
    pub(in crate::libfabric) fn open(
        domain: &Arc<DomainRes>,
        name: &str,
        cfg: &EndpointConfig,
        sink: CompletionSink,
    ) -> Result<Rc<EpState>, FabricError> {
        let prov = domain.prov();
        let mut info: Info = domain.info.dup_first(prov)?;
        info.set_queue_sizes(cfg.tx_depth, cfg.rx_depth);
        if let Some(bind) = cfg.bind {
            let s = socket2::SockAddr::from(bind);
            // SAFETY: SockAddr holds `len()` initialised bytes of a sockaddr.
            let bytes =
                unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), s.len() as usize) };
            let format = if bind.is_ipv4() {
                fi::FI_SOCKADDR_IN
            } else {
                fi::FI_SOCKADDR_IN6
            };
            if domain.traits.addr_format == fi::FI_SOCKADDR_IN
                || domain.traits.addr_format == fi::FI_SOCKADDR_IN6
            {
                info.set_src_addr(bytes, format)?;
            }
        }
        let cq_size = cfg.tx_depth + cfg.rx_depth + 64;
        let res = EpRes::open(domain, &info, cq_size)?;
        let address = EpAddr {
            provider: name.to_string(),
            bytes: res.name()?,
        };
        let state = Rc::new(EpState {
            name: name.to_string(),
            address,
            res: RefCell::new(Some(res)),
            domain: domain.clone(),
            sink,
            peers: RefCell::new(PeerTable::default()),
            ops: RefCell::new(OpTable::default()),
            connect_timeout: cfg.connect_timeout,
            closed: Cell::new(false),
            kick: Kick::default(),
            canceled: RefCell::new(Vec::new()),
            order: RefCell::new(TxOrder::default()),
            detached: Cell::new(0),
            seen_closings: Cell::new(local::closings()),
            last_liveness: Cell::new(Instant::now()),
        });
        if domain.profile.local_peers {
            local::opened(&state.address.bytes);
        }
        zerorx::spawn(super::super::progress::run(state.clone()));
        Ok(state)
    }

    /// Whether an operation of `lane` must wait in the backlog rather than go now.
    pub(in crate::libfabric) fn must_queue(&self, rec: &Record) -> bool {
        let lane = rec.lane();
        if self.ops.borrow().lane_queued(lane) {
            return true;
        }
        self.fenced(lane)
    }

    /// Lets go of the libfabric objects at close: receives are cancelled; operations
    /// libfabric still has are waited for by a lingering task that keeps their memory
    /// when a peer may still read it (shm receivers copy out of the sender's memory
    /// even after it closed) or when the program was already told they succeeded
    /// (detached sends); otherwise closing the endpoint ends them and the memory goes.
    /// shm endpoints are then parked or closed through [`local`].
    pub(in crate::libfabric) fn release_res(&self, res: EpRes) {
        let park = self.domain.profile.local_peers;
        let mut ops = self.ops.borrow_mut();
        let posted: Vec<usize> = ops
            .keys()
            .into_iter()
            .filter(|&k| ops.get(k).is_some_and(|r| r.phase == Phase::Posted))
            .collect();
        let receives = posted
            .iter()
            .copied()
            .filter(|&k| ops.get(k).is_some_and(|r| r.dir() == errors::Dir::Recv));
        res.cancel(receives.map(context_of));
        let done = res.drain_contexts();
        let waiting: Vec<(usize, Record)> = posted
            .into_iter()
            .filter(|&k| !done.contains(&context_of(k)))
            .filter_map(|k| ops.remove(k).map(|r| (k, r)))
            .collect();
        drop(ops);
        let must_wait = park || waiting.iter().any(|(_, r)| r.reported);
        let deadline = Instant::now() + self.connect_timeout;
        // shm peers of this process stay referenced until the endpoint stops touching
        // their memory (see linger::Lingering::close).
        let locals = self
            .peers
            .borrow()
            .iter()
            .filter(|(_, p)| p.local.is_some())
            .map(|(_, p)| (p.fi_addr, p.addr.clone()))
            .collect();
        let guard = linger::Lingering::new(
            res,
            waiting,
            linger::Closing {
                addr: self.address.bytes.clone(),
                park,
                locals,
                deadline,
            },
        );
        if !must_wait || guard.is_done() {
            guard.finish();
        } else if zerorx::Handle::try_current().is_some() {
            zerorx::spawn(linger::run(guard));
        }
        // Else (outside a worker) the guard's drop waits for them here.
    }

    /// Marks `peer` down if it is an shm endpoint of this process that was closed.
    pub(in crate::libfabric) fn check_local_peer(&self, peer: PeerId) {
        let gone = self.peers.borrow().get(peer).is_some_and(|p| {
            p.down.is_none()
                && p.local
                    .as_ref()
                    .is_some_and(|f| f.load(std::sync::atomic::Ordering::Acquire))
        });
        if gone {
            // What the peer answered before it closed is already in the queue.
            self.drain_cq();
            self.peer_down(
                peer,
                &format!(
                    "{}: the peer endpoint (in this process) was closed",
                    self.name
                ),
            );
        }
    }

    /// Marks down the shm peers that are gone: endpoints of this process that closed
    /// (when any closed since the last look), and, every half second, peer processes that
    /// exited while operations to them wait. Returns whether any was marked.
    pub(in crate::libfabric) fn check_peers(&self) -> bool {
        if !self.domain.profile.local_peers {
            return false;
        }
        let mut gone = Vec::new();
        let closings = local::closings();
        if closings != self.seen_closings.replace(closings) {
            gone.extend(self.peers.borrow().iter().filter_map(|(id, p)| {
                let closed = p.local.as_ref()?.load(std::sync::atomic::Ordering::Acquire);
                (closed && p.down.is_none()).then(|| {
                    (
                        id,
                        format!(
                            "{}: the peer endpoint (in this process) was closed",
                            self.name
                        ),
                    )
                })
            }));
        }
        if self.last_liveness.get().elapsed() >= LIVENESS_PERIOD {
            self.last_liveness.set(Instant::now());
            let waiting: Vec<PeerId> = {
                let ops = self.ops.borrow();
                ops.keys()
                    .into_iter()
                    .filter_map(|k| ops.get(k).filter(|r| !r.reported).and_then(|r| r.peer))
                    .collect()
            };
            let me = std::process::id() as i32;
            gone.extend(self.peers.borrow().iter().filter_map(|(id, p)| {
                let pid = p.pid.filter(|&pid| pid != me)?;
                (p.down.is_none() && waiting.contains(&id) && !local::alive(pid))
                    .then(|| (id, format!("{}: the peer process {pid} exited", self.name)))
            }));
        }
        let any = !gone.is_empty();
        if any {
            // Completions the peers produced before they went are in the queue already
            // (a closing endpoint stops touching ours before it is flagged): take them
            // first, so only what was really cut off is reported lost.
            self.drain_cq();
        }
        for (peer, cause) in gone {
            self.peer_down(peer, &cause);
        }
        any
    }

    /// Whether `lane` waits for RMAs in flight to its peer (the rxm fence).
    pub(in crate::libfabric) fn fenced(&self, lane: Option<PeerId>) -> bool {
        if !self.domain.profile.rma_fence {
            return false;
        }
        lane.and_then(|p| self.peers.borrow().get(p).map(|p| p.rma_in_flight > 0))
            .unwrap_or(false)
    }

    /// Hands record `key` to libfabric. Returns libfabric's result.
    pub(in crate::libfabric) fn start(&self, key: usize) -> isize {
        let res = self.res.borrow();
        let Some(res) = res.as_ref() else {
            return -(fi::FI_ECANCELED as isize);
        };
        let mut ops = self.ops.borrow_mut();
        let Some(rec) = ops.get_mut(key) else {
            return -(fi::FI_EINVAL as isize);
        };
        let peers = self.peers.borrow();
        let dest = match rec.peer {
            Some(p) => match peers.get(p) {
                Some(peer) => peer.fi_addr,
                None => return -(fi::FI_EINVAL as isize),
            },
            None => fi::FI_ADDR_UNSPEC,
        };
        // SAFETY: the record stays in the table (its memory with it) until libfabric
        // completes it or the endpoint is closed: records are removed only by the CQ
        // handler, by close after fi_close, or here below before libfabric accepted them.
        let rc = unsafe { post::start(res, rec, context_of(key), dest) };
        if rc == 0 {
            rec.phase = Phase::Posted;
            let rma_peer = rec.rma_key().and(rec.peer);
            // A detached send is reported complete once libfabric has it (not before:
            // one still queued when the endpoint closes is cancelled, never sent).
            let early = (rec.bounce.is_some() && !rec.reported).then(|| {
                rec.reported = true;
                (rec.lane(), rec.op, OpOutcome::ok(rec.posted_len()))
            });
            if let Some(done) = early {
                ops.ready.push_back(done);
            }
            drop(peers);
            if let Some(p) = rma_peer {
                if let Some(peer) = self.peers.borrow_mut().get_mut(p) {
                    peer.rma_in_flight += 1;
                }
            }
        }
        rc
    }

    /// Reports `op`'s outcome: at once for receives (`lane` `None`), in post order per
    /// peer for transmits.
    pub(in crate::libfabric) fn report(&self, lane: Option<PeerId>, op: OpId, outcome: OpOutcome) {
        let ready = match lane {
            Some(peer) => self.order.borrow_mut().finish(peer, op, outcome),
            None => vec![(op, outcome)],
        };
        for (op, outcome) in ready {
            self.sink.complete(op, outcome);
        }
    }

    /// Marks `peer` unreachable: every operation to it still outstanding completes with
    /// `ConnectionLost`, and posts to it are refused with `PeerDown`.
    pub(in crate::libfabric) fn peer_down(&self, peer: PeerId, cause: &str) {
        {
            let mut peers = self.peers.borrow_mut();
            let Some(p) = peers.get_mut(peer) else {
                return;
            };
            if p.down.is_some() {
                return;
            }
            p.down = Some(cause.to_string());
        }
        self.finish_peer_ops(peer, &|| OpError::ConnectionLost {
            peer: Some(peer),
            cause: cause.to_string(),
        });
    }

    /// Completes every outstanding operation to (or directed from) `peer` with `err()`.
    /// Queued ones are dropped; posted ones are marked reported (directed receives are
    /// also cancelled in libfabric) until libfabric releases them.
    pub(in crate::libfabric) fn finish_peer_ops(&self, peer: PeerId, err: &dyn Fn() -> OpError) {
        let mut done = Vec::new();
        {
            let mut ops = self.ops.borrow_mut();
            for key in ops.keys() {
                let Some(rec) = ops.get(key) else { continue };
                if rec.peer != Some(peer) {
                    continue;
                }
                let (lane, op, reported) = (rec.lane(), rec.op, rec.reported);
                match rec.phase {
                    Phase::Queued { .. } => {
                        ops.unqueue(key);
                        if let Some(rec) = ops.remove(key) {
                            self.release(&rec);
                        }
                    }
                    Phase::Posted => {
                        let is_recv = rec.dir() == errors::Dir::Recv;
                        if let Some(rec) = ops.get_mut(key) {
                            rec.reported = true;
                        }
                        if is_recv && !reported {
                            self.fi_cancel(key);
                        }
                    }
                }
                if !reported {
                    done.push((lane, op));
                }
            }
        }
        done.sort_by_key(|(_, op)| *op);
        for (lane, op) in done {
            self.report(lane, op, OpOutcome::err(err()));
        }
    }

    /// `fi_cancel` of record `key` (its completion comes through the CQ).
    pub(in crate::libfabric) fn fi_cancel(&self, key: usize) {
        if let Some(res) = self.res.borrow().as_ref() {
            // SAFETY: the endpoint is open; the context identifies one of its posted ops.
            unsafe { fi::fi_cancel(&mut (*res.ep()).fid, context_of(key)) };
        }
    }

    /// Forgets what a record held in counters (the detached bytes).
    pub(in crate::libfabric) fn release(&self, rec: &Record) {
        if let Some(n) = rec.bounce.as_ref().map(Vec::len) {
            self.detached.set(self.detached.get().saturating_sub(n));
        }
    }

    /// Detaches a send from the program's memory when the provider would otherwise
    /// complete it only after the receiver took it (shm has the receiver copy messages
    /// above its inject size out of the sender; rxm has it pull messages above the SAR
    /// limit): the data is copied aside, posted from there, and the send reported
    /// complete as soon as libfabric has it, within a budget of bytes held, as the
    /// io_uring provider completes sends the receiver has not asked for yet.
    pub(in crate::libfabric) fn detach(&self, rec: &mut Record) {
        let PostRequest::Send { src, level, .. } = &rec.req else {
            return;
        };
        let len = src.len();
        let t = &self.domain.traits;
        let Some(above) = self.domain.profile.detach_above else {
            return;
        };
        if *level != Level::Sent
            || t.mr_local
            || len <= above.bytes(t.inject_size)
            || self.detached.get() + len > DETACH_BUDGET
        {
            return;
        }
        let mut copy = vec![0u8; len];
        if src.memory().read_at(src.offset(), &mut copy).is_err() {
            return;
        }
        self.detached.set(self.detached.get() + len);
        rec.bounce = Some(copy);
    }
}

impl EpState {
    /// libfabric refused a post outright: the operation completes with the classified
    /// error from the progress task.
    pub(in crate::libfabric) fn refused(&self, key: usize, rc: isize) {
        let mut ops = self.ops.borrow_mut();
        ops.unqueue(key);
        let Some(rec) = ops.remove(key) else { return };
        self.release(&rec);
        if rec.reported {
            return;
        }
        let e = errors::ErrCompletion {
            err: rc as i32,
            prov_errno: 0,
            olen: 0,
            text: String::new(),
        };
        let err = errors::op_error(
            &self.name,
            rec.dir(),
            rec.peer,
            rec.rma_key(),
            rec.posted_len(),
            &e,
        );
        ops.ready
            .push_back((rec.lane(), rec.op, OpOutcome::err(err)));
    }
}
