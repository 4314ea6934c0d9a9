//! [`Endpoint`]: peers, and posting operations through builders that validate
//! everything the provider contract says the generic layer checks.

use super::caps::{Cap, Discovery, Level};
use super::completion::{CompletionQueue, OpKind};
use super::error::{FabricError, OpError, PostError};
use super::ops::{CompletionSink, NewOp, OpOutcome, OpTable};
use super::provider::{
    EndpointProvider, PostRequest, ProbeAction, ProbeRequest, RecvTarget, TagMatch,
};
use super::region::{Access, MrSlice, RegionUse, RemoteKey};
use super::{EpAddr, OpId, PeerId};
use std::cell::Cell;
use std::fmt;
use std::rc::Rc;

/// A communication endpoint: it has an address, a table of peers, and posts
/// operations whose completions go to its completion queue.
///
/// Belongs to the worker that opened it. Dropping it closes it: every outstanding
/// operation completes with `Canceled`.
pub struct Endpoint {
    prov: Rc<dyn EndpointProvider>,
    table: Rc<OpTable>,
    cq: CompletionQueue,
    domain: u64,
    discovery: Rc<Discovery>,
    reserved: usize,
    max_msg: usize,
    closed: Cell<bool>,
}

impl Endpoint {
    pub(crate) fn new(
        prov: Rc<dyn EndpointProvider>,
        table: Rc<OpTable>,
        cq: CompletionQueue,
        domain: u64,
        discovery: Rc<Discovery>,
        reserved: usize,
        max_msg: usize,
    ) -> Endpoint {
        Endpoint {
            prov,
            table,
            cq,
            domain,
            discovery,
            reserved,
            max_msg,
            closed: Cell::new(false),
        }
    }

    /// The address peers insert.
    pub fn address(&self) -> EpAddr {
        self.prov.address()
    }

    /// The completion queue the endpoint reports to.
    pub fn completion_queue(&self) -> &CompletionQueue {
        &self.cq
    }

    /// The largest message or RMA this endpoint posts or accepts.
    pub fn max_msg_size(&self) -> usize {
        self.max_msg
    }

    /// Operations posted whose completions were not produced yet.
    pub fn ops_outstanding(&self) -> usize {
        self.table.outstanding()
    }

    /// Completions a provider reported twice (always 0 for a correct provider; the
    /// extra report is dropped).
    pub fn duplicate_completions(&self) -> u64 {
        self.table.duplicates()
    }

    fn check_addr(&self, addr: &EpAddr) -> Result<(), FabricError> {
        if addr.provider != self.discovery.provider {
            return Err(FabricError::BadAddress {
                reason: format!(
                    "address of provider {} given to a {} endpoint",
                    addr.provider, self.discovery.provider
                ),
            });
        }
        Ok(())
    }

    /// Adds a peer by address (idempotent: the same address gives the same id).
    pub fn insert_peer(&self, addr: &EpAddr) -> Result<PeerId, FabricError> {
        if self.closed.get() {
            return Err(FabricError::Closed);
        }
        self.check_addr(addr)?;
        self.prov.insert_peer(addr)
    }

    /// The address of `peer` (as inserted, or as announced by a peer that connected
    /// on its own): how a program that learned a peer from a completion's
    /// [`peer`](crate::Completion::peer) finds who it is.
    pub fn peer_address(&self, peer: PeerId) -> Option<EpAddr> {
        self.prov.peer_address(peer)
    }

    /// Removes a peer: its outstanding operations complete with `Canceled` and its
    /// connections close.
    pub fn remove_peer(&self, peer: PeerId) -> Result<(), FabricError> {
        if self.closed.get() {
            return Err(FabricError::Closed);
        }
        self.prov.remove_peer(peer)
    }

    /// Inserts `addr` and waits until the peer is reachable.
    pub async fn connect(&self, addr: &EpAddr) -> Result<PeerId, FabricError> {
        let peer = self.insert_peer(addr)?;
        self.prov.connect(peer).await?;
        Ok(peer)
    }

    /// The next peer that connected to this endpoint without being inserted here
    /// (needs [`Cap::Accept`]).
    pub async fn accept(&self) -> Result<PeerId, FabricError> {
        if let Some(why) = self.discovery.missing_reason(Cap::Accept) {
            return Err(FabricError::Unsupported {
                cap: Cap::Accept,
                provider: self.discovery.provider.clone(),
                reason: why.to_string(),
                available_in: Vec::new(),
            });
        }
        if self.closed.get() {
            return Err(FabricError::Closed);
        }
        self.prov.accept().await
    }

    /// A send of `src` to `peer` (untagged, no immediate data, [`Level::Sent`] unless
    /// changed on the builder).
    pub fn send<'a>(&'a self, peer: PeerId, src: &MrSlice) -> SendPost<'a> {
        SendPost {
            ep: self,
            peer,
            src: src.clone(),
            tag: None,
            imm: None,
            level: Level::Sent,
            context: 0,
        }
    }

    /// A receive into `dst` (untagged, any source unless changed on the builder).
    pub fn recv<'a>(&'a self, dst: &MrSlice) -> RecvPost<'a> {
        RecvPost {
            ep: self,
            target: RecvTarget::Buffer(dst.clone()),
            tag: None,
            from: None,
            multi: None,
            context: 0,
        }
    }

    /// A lease receive: the completion carries the provider's receive memory as a
    /// [`Lease`](super::Lease) (needs [`Cap::LeaseRecv`]); messages longer than
    /// `max_len` are truncated.
    pub fn recv_lease(&self, max_len: usize) -> RecvPost<'_> {
        RecvPost {
            ep: self,
            target: RecvTarget::Lease { max_len },
            tag: None,
            from: None,
            multi: None,
            context: 0,
        }
    }

    /// An RMA write of `src` into the peer's `key` range at `offset`
    /// ([`Level::Delivered`] unless changed).
    pub fn write<'a>(
        &'a self,
        peer: PeerId,
        src: &MrSlice,
        key: &RemoteKey,
        offset: u64,
    ) -> RmaPost<'a> {
        RmaPost {
            ep: self,
            write: true,
            peer,
            local: src.clone(),
            key: *key,
            offset,
            imm: None,
            level: Level::Delivered,
            context: 0,
        }
    }

    /// An RMA read of `dst.len()` bytes from the peer's `key` range at `offset`.
    pub fn read<'a>(
        &'a self,
        peer: PeerId,
        dst: &MrSlice,
        key: &RemoteKey,
        offset: u64,
    ) -> RmaPost<'a> {
        RmaPost {
            ep: self,
            write: false,
            peer,
            local: dst.clone(),
            key: *key,
            offset,
            imm: None,
            level: Level::Delivered,
            context: 0,
        }
    }

    /// Cancels a posted receive that has not matched a message yet: it completes with
    /// `OpError::Canceled` and this returns `true`. Otherwise (matched already, a
    /// transmit operation, or not outstanding) `false`, and the operation completes
    /// as it would have.
    pub fn cancel(&self, op: OpId) -> bool {
        self.table.is_outstanding(op) && self.prov.cancel(op)
    }

    /// A probe of the tagged messages that arrived before a matching receive (needs
    /// [`Cap::Probe`]), matching tags `t` with `(t ^ tag) & !ignore == 0`;
    /// [`post`](ProbePost::post) starts it. It completes at once: with the first
    /// match's length, tag, immediate data and peer, or with [`OpError::NoMessage`].
    pub fn probe(&self, tag: u64, ignore: u64) -> ProbePost<'_> {
        ProbePost {
            ep: self,
            req: ProbeRequest {
                tag: TagMatch { tag, ignore },
                from: None,
                action: ProbeAction::Peek,
            },
            context: 0,
        }
    }

    /// Receives the message probe `claim` claimed ([`ProbePost::claim`]) into `dst`,
    /// or drops it when `dst` is `None`. Completes like a receive (truncation
    /// included), or with [`OpError::NoMessage`] when `claim` claimed nothing.
    pub fn recv_claimed(
        &self,
        claim: OpId,
        dst: Option<&MrSlice>,
        context: u64,
    ) -> Result<OpId, PostError> {
        self.need(Cap::Probe)?;
        let region = dst
            .map(|d| self.check_local(d, Access::WRITE))
            .transpose()?;
        let op = NewOp {
            context,
            kind: OpKind::TaggedRecv,
            peer: None,
            tag: None,
            region,
        };
        let target = dst.map(|d| RecvTarget::Buffer(d.clone()));
        self.start(op, |id| self.prov.take_claimed(id, claim, target))
    }

    /// Closes the endpoint: every outstanding operation completes with `Canceled`.
    pub fn close(self) {
        drop(self);
    }

    fn need(&self, cap: Cap) -> Result<(), PostError> {
        match self.discovery.missing_reason(cap) {
            None => Ok(()),
            Some(why) => Err(PostError::Unsupported {
                cap,
                reason: format!("provider {}: {why}", self.discovery.provider),
            }),
        }
    }

    fn check_local(&self, s: &MrSlice, need: Access) -> Result<RegionUse, PostError> {
        if s.region.domain != self.domain {
            return Err(PostError::ForeignRegion);
        }
        if s.region.closed.get() {
            return Err(PostError::RegionClosed);
        }
        if !s.access().contains(need) {
            return Err(PostError::LocalAccess {
                need,
                have: s.access(),
            });
        }
        let max = self.max_msg;
        if s.len() > max {
            return Err(PostError::TooLarge { len: s.len(), max });
        }
        Ok(RegionUse::new(s))
    }

    fn submit(&self, op: NewOp, req: PostRequest) -> Result<OpId, PostError> {
        self.start(op, |id| self.prov.post(id, req))
    }

    /// Records `op` and has `begin` hand it to the provider, undoing the record when
    /// the provider refuses.
    fn start(
        &self,
        op: NewOp,
        begin: impl FnOnce(OpId) -> Result<(), PostError>,
    ) -> Result<OpId, PostError> {
        if self.closed.get() {
            return Err(PostError::Closed);
        }
        let id = self.table.insert(op)?;
        match begin(id) {
            Ok(()) => Ok(id),
            Err(e) => {
                self.table.unpost(id);
                Err(e)
            }
        }
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        if !self.closed.replace(true) {
            // The provider stops touching memory first; then every operation it did
            // not complete gets its one completion here.
            self.prov.close();
            let sink = CompletionSink::new(self.table.clone(), self.cq.inner.clone());
            for op in self.table.outstanding_ids() {
                sink.complete(op, OpOutcome::err(OpError::Canceled));
            }
            self.cq.inner.unreserve(self.reserved);
        }
    }
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("provider", &self.discovery.provider)
            .field("address", &self.address().to_string())
            .field("ops_outstanding", &self.ops_outstanding())
            .finish()
    }
}

/// A send being built; [`post`](Self::post) starts it.
#[must_use = "nothing is sent until post() is called"]
pub struct SendPost<'a> {
    ep: &'a Endpoint,
    peer: PeerId,
    src: MrSlice,
    tag: Option<u64>,
    imm: Option<u64>,
    level: Level,
    context: u64,
}

impl SendPost<'_> {
    /// Makes it a tagged send (needs [`Cap::Tagged`]).
    pub fn tag(mut self, tag: u64) -> Self {
        self.tag = Some(tag);
        self
    }

    /// Carries immediate data (needs [`Cap::SendImm`]).
    pub fn imm(mut self, imm: u64) -> Self {
        self.imm = Some(imm);
        self
    }

    /// When to complete ([`Level::Delivered`] needs [`Cap::DeliveryComplete`]).
    pub fn level(mut self, level: Level) -> Self {
        self.level = level;
        self
    }

    /// A value echoed in the completion.
    pub fn context(mut self, context: u64) -> Self {
        self.context = context;
        self
    }

    /// Posts the send.
    pub fn post(self) -> Result<OpId, PostError> {
        let ep = self.ep;
        ep.need(Cap::Msg)?;
        if self.tag.is_some() {
            ep.need(Cap::Tagged)?;
        }
        if self.imm.is_some() {
            ep.need(Cap::SendImm)?;
        }
        if self.level == Level::Delivered {
            ep.need(Cap::DeliveryComplete)?;
        }
        let used = ep.check_local(&self.src, Access::READ)?;
        let op = NewOp {
            context: self.context,
            kind: if self.tag.is_some() {
                OpKind::TaggedSend
            } else {
                OpKind::Send
            },
            peer: Some(self.peer),
            tag: self.tag,
            region: Some(used),
        };
        ep.submit(
            op,
            PostRequest::Send {
                peer: self.peer,
                src: self.src,
                tag: self.tag,
                imm: self.imm,
                level: self.level,
            },
        )
    }
}

/// A probe being built ([`Endpoint::probe`]); [`post`](Self::post) starts it.
#[must_use = "nothing is probed until post() is called"]
pub struct ProbePost<'a> {
    ep: &'a Endpoint,
    req: ProbeRequest,
    context: u64,
}

impl ProbePost<'_> {
    /// Only messages from `peer` (needs [`Cap::SourceFilter`]).
    pub fn from(mut self, peer: PeerId) -> Self {
        self.req.from = Some(peer);
        self
    }

    /// Sets the message found aside for [`Endpoint::recv_claimed`] with this probe's
    /// id; no receive can match it meanwhile.
    pub fn claim(mut self) -> Self {
        self.req.action = ProbeAction::Claim;
        self
    }

    /// Drops the message found.
    pub fn discard(mut self) -> Self {
        self.req.action = ProbeAction::Discard;
        self
    }

    /// A value echoed in the completion.
    pub fn context(mut self, context: u64) -> Self {
        self.context = context;
        self
    }

    /// Starts the probe.
    pub fn post(self) -> Result<OpId, PostError> {
        let ep = self.ep;
        ep.need(Cap::Probe)?;
        if self.req.from.is_some() {
            ep.need(Cap::SourceFilter)?;
        }
        let op = NewOp {
            context: self.context,
            kind: OpKind::Probe,
            peer: self.req.from,
            tag: None,
            region: None,
        };
        let req = self.req;
        ep.start(op, |id| ep.prov.probe(id, req))
    }
}

/// A receive being built; [`post`](Self::post) posts it.
#[must_use = "nothing is posted until post() is called"]
pub struct RecvPost<'a> {
    ep: &'a Endpoint,
    target: RecvTarget,
    tag: Option<TagMatch>,
    from: Option<PeerId>,
    multi: Option<usize>,
    context: u64,
}

impl RecvPost<'_> {
    /// Makes it a tagged receive accepting tags `t` with `(t ^ tag) & !ignore == 0`
    /// (needs [`Cap::Tagged`]).
    pub fn tagged(mut self, tag: u64, ignore: u64) -> Self {
        self.tag = Some(TagMatch { tag, ignore });
        self
    }

    /// Accepts messages from `peer` only (needs [`Cap::SourceFilter`]).
    pub fn from(mut self, peer: PeerId) -> Self {
        self.from = Some(peer);
        self
    }

    /// Makes it a multi-receive (needs [`Cap::MultiRecv`]; untagged, into a region
    /// slice): messages land back to back, each reported as it arrives with its
    /// [`offset`](crate::Completion::offset) and [`more`](crate::Completion::more)
    /// set, until fewer than `min_free` bytes (at least 1) are left; that message's
    /// completion has `more` unset and ends the receive. It keeps its place among
    /// posted receives meanwhile.
    pub fn multi(mut self, min_free: usize) -> Self {
        self.multi = Some(min_free.max(1));
        self
    }

    /// A value echoed in the completion.
    pub fn context(mut self, context: u64) -> Self {
        self.context = context;
        self
    }

    /// Posts the receive.
    pub fn post(self) -> Result<OpId, PostError> {
        let ep = self.ep;
        ep.need(if self.tag.is_some() {
            Cap::Tagged
        } else {
            Cap::Msg
        })?;
        if self.from.is_some() {
            ep.need(Cap::SourceFilter)?;
        }
        if self.multi.is_some() {
            ep.need(Cap::MultiRecv)?;
            if self.tag.is_some() || !matches!(self.target, RecvTarget::Buffer(_)) {
                return Err(PostError::Unsupported {
                    cap: Cap::MultiRecv,
                    reason: "a multi-receive is untagged and into a region slice".into(),
                });
            }
        }
        let (kind, region) = match &self.target {
            RecvTarget::Buffer(dst) => {
                let used = ep.check_local(dst, Access::WRITE)?;
                let kind = if self.tag.is_some() {
                    OpKind::TaggedRecv
                } else {
                    OpKind::Recv
                };
                (kind, Some(used))
            }
            RecvTarget::Lease { max_len } => {
                ep.need(Cap::LeaseRecv)?;
                let max = ep.max_msg;
                if *max_len > max {
                    return Err(PostError::TooLarge { len: *max_len, max });
                }
                (OpKind::LeaseRecv, None)
            }
        };
        let op = NewOp {
            context: self.context,
            kind,
            peer: self.from,
            tag: None,
            region,
        };
        ep.submit(
            op,
            PostRequest::Recv {
                target: self.target,
                tag: self.tag,
                from: self.from,
                multi: self.multi,
            },
        )
    }
}

/// An RMA write or read being built; [`post`](Self::post) starts it.
#[must_use = "nothing is posted until post() is called"]
pub struct RmaPost<'a> {
    ep: &'a Endpoint,
    write: bool,
    peer: PeerId,
    local: MrSlice,
    key: RemoteKey,
    offset: u64,
    imm: Option<u64>,
    level: Level,
    context: u64,
}

impl RmaPost<'_> {
    /// Write with immediate data: consumes a receive at the target, which completes
    /// with `imm` (needs [`Cap::RmaWriteImm`]; writes only).
    pub fn imm(mut self, imm: u64) -> Self {
        self.imm = Some(imm);
        self
    }

    /// When a write completes: [`Level::Sent`] reports once the data left, and a
    /// target-side rejection is then not reported. Reads always complete once the data
    /// has landed.
    pub fn level(mut self, level: Level) -> Self {
        self.level = level;
        self
    }

    /// A value echoed in the completion.
    pub fn context(mut self, context: u64) -> Self {
        self.context = context;
        self
    }

    /// Validates against the key and posts.
    pub fn post(self) -> Result<OpId, PostError> {
        let ep = self.ep;
        let len = self.local.len() as u64;
        let (kind, req) = if self.write {
            ep.need(Cap::RmaWrite)?;
            if self.imm.is_some() {
                ep.need(Cap::RmaWriteImm)?;
            }
            self.key.check(self.offset, len, Access::REMOTE_WRITE)?;
            (
                OpKind::Write,
                PostRequest::Write {
                    peer: self.peer,
                    src: self.local.clone(),
                    key: self.key,
                    offset: self.offset,
                    imm: self.imm,
                    level: self.level,
                },
            )
        } else {
            ep.need(Cap::RmaRead)?;
            if self.imm.is_some() {
                return Err(PostError::Unsupported {
                    cap: Cap::RmaWriteImm,
                    reason: "immediate data is carried by writes, not reads".into(),
                });
            }
            self.key.check(self.offset, len, Access::REMOTE_READ)?;
            (
                OpKind::Read,
                PostRequest::Read {
                    peer: self.peer,
                    dst: self.local.clone(),
                    key: self.key,
                    offset: self.offset,
                },
            )
        };
        let need = if self.write {
            Access::READ
        } else {
            Access::WRITE
        };
        let used = ep.check_local(&self.local, need)?;
        let op = NewOp {
            context: self.context,
            kind,
            peer: Some(self.peer),
            tag: None,
            region: Some(used),
        };
        ep.submit(op, req)
    }
}
