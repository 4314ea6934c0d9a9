//! A libfabric RDM endpoint under the API: peers, posting with the backlog and the RMA
//! fence, cancel, peer removal and close (the provider side here; the endpoint's own
//! state machine in `state`). Completions are handled in [`super::progress`].

mod state;

use super::errors;
use super::local;
use super::ops::{OpTable, Phase, Record};
use super::order::TxOrder;
use super::peers::{check_name, PeerTable};
use super::res::{DomainRes, EpRes};
use super::wait::Kick;
use crate::provider::{EndpointProvider, LocalFuture, PostRequest, RecvTarget};
use crate::{CompletionSink, EpAddr, FabricError, OpError, OpId, OpOutcome, PeerId, PostError};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zerorx_libfabric_sys as fi;

/// Smallest buffer a lease receive is posted with.
const LEASE_MIN: usize = 4096;

/// How often shm peer processes with operations waiting are checked for life.
const LIVENESS_PERIOD: Duration = Duration::from_millis(500);

/// Bytes of detached sends an endpoint may hold (as the io_uring provider's default
/// bound on unexpected bytes at a receiver).
const DETACH_BUDGET: usize = 16 << 20;

/// Everything an endpoint and its progress task share.
pub(super) struct EpState {
    /// The API's provider name (`libfabric:<prov>`).
    pub(super) name: String,
    /// This endpoint's address.
    pub(super) address: EpAddr,
    /// The libfabric objects; `None` once closed.
    pub(super) res: RefCell<Option<EpRes>>,
    /// The domain (policy and traits).
    pub(super) domain: Arc<DomainRes>,
    /// Where completions go.
    pub(super) sink: CompletionSink,
    /// Peers.
    pub(super) peers: RefCell<PeerTable>,
    /// Operations.
    pub(super) ops: RefCell<OpTable>,
    /// How long `FI_EAGAIN` may last before the peer counts as unreachable.
    pub(super) connect_timeout: Duration,
    /// Set by close.
    pub(super) closed: Cell<bool>,
    /// Wakes the progress task.
    pub(super) kick: Kick,
    /// Operations the last CQ drain completed as cancelled (for `cancel`'s answer).
    pub(super) canceled: RefCell<Vec<OpId>>,
    /// Transmit completions held back until the earlier ones to the same peer.
    pub(super) order: RefCell<TxOrder>,
    /// Bytes of detached sends libfabric still holds.
    pub(super) detached: Cell<usize>,
    /// [`local::closings`] when the peers were last looked at.
    pub(super) seen_closings: Cell<u64>,
    /// When shm peer processes were last checked for life.
    pub(super) last_liveness: Cell<Instant>,
}

/// The endpoint handed to the generic layer.
pub(super) struct LfEndpoint(pub(super) Rc<EpState>);

impl EndpointProvider for LfEndpoint {
    fn address(&self) -> EpAddr {
        self.0.address.clone()
    }

    fn peer_address(&self, peer: PeerId) -> Option<EpAddr> {
        let s = &self.0;
        let bytes = s.peers.borrow().get(peer)?.addr.clone();
        Some(EpAddr {
            provider: s.address.provider.clone(),
            bytes,
        })
    }

    fn insert_peer(&self, addr: &EpAddr) -> Result<PeerId, FabricError> {
        let s = &self.0;
        if s.closed.get() {
            return Err(FabricError::Closed);
        }
        if let Some(id) = s.peers.borrow().find_addr(&addr.bytes) {
            return Ok(id);
        }
        let traits = &s.domain.traits;
        check_name(&addr.bytes, traits.addr_format, s.address.bytes.len())?;
        let res = s.res.borrow();
        let res = res.as_ref().ok_or(FabricError::Closed)?;
        let mut fi_addr = fi::FI_ADDR_NOTAVAIL;
        // SAFETY: the AV is open; the name was checked to be complete for the format.
        let n = unsafe {
            fi::fi_av_insert(
                res.av(),
                addr.bytes.as_ptr().cast(),
                1,
                &mut fi_addr,
                0,
                std::ptr::null_mut(),
            )
        };
        if n != 1 || fi_addr == fi::FI_ADDR_NOTAVAIL {
            return Err(FabricError::BadAddress {
                reason: format!(
                    "{}: fi_av_insert did not accept the address ({})",
                    s.name,
                    if n < 0 {
                        errors::strerror(n.into())
                    } else {
                        "0 inserted".into()
                    }
                ),
            });
        }
        let id = s.peers.borrow_mut().add(addr.bytes.clone(), fi_addr);
        if s.domain.profile.local_peers {
            if let Some(p) = s.peers.borrow_mut().get_mut(id) {
                p.local = local::attach(&addr.bytes);
                p.pid = local::pid_of(&addr.bytes);
            }
        }
        Ok(id)
    }

    fn remove_peer(&self, peer: PeerId) -> Result<(), FabricError> {
        let s = &self.0;
        if s.peers.borrow().get(peer).is_none() {
            return Err(FabricError::UnknownPeer(peer));
        }
        s.finish_peer_ops(peer, &|| OpError::Canceled);
        let removed = s.peers.borrow_mut().remove(peer)?;
        let rc = match s.res.borrow().as_ref() {
            Some(res) => {
                let mut a = removed.fi_addr;
                // SAFETY: the AV is open and holds this index.
                unsafe { fi::fi_av_remove(res.av(), &mut a, 1, 0) }
            }
            None => 0,
        };
        if removed.local.is_some() {
            local::detach(&removed.addr);
        }
        errors::check(s.domain.prov(), "fi_av_remove", rc)
    }

    fn connect(&self, peer: PeerId) -> LocalFuture<'_, Result<(), FabricError>> {
        // RDM endpoints connect lazily on the first operation; a post that cannot reach
        // the peer within `connect_timeout` completes with ConnectionLost.
        let known = self.0.peers.borrow().get(peer).map(|p| p.down.clone());
        Box::pin(async move {
            match known {
                None => Err(FabricError::UnknownPeer(peer)),
                Some(Some(cause)) => Err(FabricError::Provider {
                    provider: self.0.name.clone(),
                    call: "connect",
                    code: libc::ENOTCONN,
                    text: cause,
                }),
                Some(None) => Ok(()),
            }
        })
    }

    fn accept(&self) -> LocalFuture<'_, Result<PeerId, FabricError>> {
        let name = self.0.name.clone();
        Box::pin(async move {
            Err(FabricError::Unsupported {
                cap: crate::Cap::Accept,
                provider: name,
                reason: super::discovery::ACCEPT_MISSING.to_string(),
                available_in: Vec::new(),
            })
        })
    }

    fn post(&self, op: OpId, req: PostRequest) -> Result<(), PostError> {
        let s = &self.0;
        if s.closed.get() {
            return Err(PostError::Closed);
        }
        let peer = match &req {
            PostRequest::Send { peer, .. }
            | PostRequest::Write { peer, .. }
            | PostRequest::Read { peer, .. } => Some(*peer),
            PostRequest::Recv { from, .. } => *from,
        };
        if let Some(p) = peer {
            s.check_local_peer(p);
            match s.peers.borrow().get(p) {
                None => return Err(PostError::UnknownPeer(p)),
                Some(info) => {
                    if let Some(cause) = &info.down {
                        return Err(PostError::PeerDown {
                            peer: p,
                            cause: cause.clone(),
                        });
                    }
                }
            }
        }
        // A lease buffer of at least LEASE_MIN bytes: a short message that does not fit
        // the asked length still arrives whole, so its length can be reported (shm
        // reports no length for a truncated receive).
        let lease = match &req {
            PostRequest::Recv {
                target: RecvTarget::Lease { max_len },
                ..
            } => Some(vec![0u8; (*max_len).max(LEASE_MIN)]),
            _ => None,
        };
        let rec = Record {
            op,
            peer,
            req,
            lease,
            bounce: None,
            phase: Phase::Queued { eagain_since: None },
            reported: false,
        };
        let mut rec = rec;
        let queue = s.must_queue(&rec);
        if let Some(p) = rec.lane() {
            s.order.borrow_mut().push(p, op);
        }
        s.detach(&mut rec);
        let key = s.ops.borrow_mut().insert(rec);
        if queue {
            s.ops.borrow_mut().backlog.push_back(key);
        } else {
            let rc = s.start(key);
            if rc == -(fi::FI_EAGAIN as isize) {
                let mut ops = s.ops.borrow_mut();
                if let Some(r) = ops.get_mut(key) {
                    r.phase = Phase::Queued {
                        eagain_since: Some(Instant::now()),
                    };
                }
                ops.backlog.push_back(key);
            } else if rc != 0 {
                s.refused(key, rc);
            }
        }
        s.kick.kick();
        Ok(())
    }

    fn cancel(&self, op: OpId) -> bool {
        let s = &self.0;
        let Some(key) = s.ops.borrow().key_of(op) else {
            return false;
        };
        let (phase, dir, reported) = match s.ops.borrow().get(key) {
            Some(r) => (r.phase, r.dir(), r.reported),
            None => return false,
        };
        if dir != errors::Dir::Recv || reported {
            return false;
        }
        match phase {
            Phase::Queued { .. } => {
                let mut ops = s.ops.borrow_mut();
                ops.unqueue(key);
                ops.remove(key);
                drop(ops);
                s.report(None, op, OpOutcome::err(OpError::Canceled));
                true
            }
            Phase::Posted => {
                s.canceled.borrow_mut().clear();
                s.fi_cancel(key);
                // rxm and shm write the cancellation into the CQ within fi_cancel; drain
                // it now so the answer is known before returning.
                s.drain_cq();
                let canceled = s.canceled.borrow().contains(&op);
                s.kick.kick();
                canceled
            }
        }
    }

    fn close(&self) {
        let s = &self.0;
        if s.closed.replace(true) {
            return;
        }
        let mut pending = Vec::new();
        {
            let ops = s.ops.borrow();
            for key in ops.keys() {
                if let Some(r) = ops.get(key) {
                    if !r.reported {
                        pending.push(r.op);
                    }
                }
            }
            pending.extend(ops.ready.iter().map(|(_, op, _)| *op));
        }
        pending.sort();
        s.order.borrow_mut().clear();
        for op in pending {
            s.report(None, op, OpOutcome::err(OpError::Canceled));
        }
        // The records (and the memory they hold) go only once libfabric is done with
        // them: see release_res.
        let res = s.res.borrow_mut().take();
        if let Some(res) = res {
            s.release_res(res);
        }
        s.ops.borrow_mut().clear();
        s.detached.set(0);
        s.kick.kick();
    }
}
