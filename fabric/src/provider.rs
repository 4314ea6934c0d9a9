//! The provider boundary: what a transport implements to sit under the fabric API.
//!
//! # Contract
//!
//! The generic layer (`zerorx_fabric`) owns everything that must behave the same on
//! every provider; a provider only moves bytes and reports how each operation ended.
//!
//! **The generic layer does, before calling the provider:**
//! - capability checks: a post needing a capability the provider's discovery does not
//!   guarantee never reaches [`EndpointProvider::post`];
//! - depth accounting (`tx_depth`, `rx_depth`, completion queue depth) and
//!   `PostError::QueueFull`;
//! - local bounds and access checks of every [`MrSlice`] (a slice is always inside its
//!   region, and the region has the local access the operation needs);
//! - initiator-side RMA validation against the [`RemoteKey`]: `offset + len <=
//!   key.len` and the access bit (so providers that do not validate at the target never
//!   see an out-of-range or wrong-access RMA from this API);
//! - message size against the endpoint's `max_msg_size` (resolved before
//!   `open_endpoint`: `EndpointConfig::max_msg_size` is always `Some` there, at most
//!   the provider's declared limit);
//! - operation ids ([`OpId`]), the user's context values, and the exactly-once rule: a
//!   second completion for the same `OpId` is dropped and counted.
//!
//! **The provider promises:**
//! 1. *Exactly one completion per accepted post.* When `post` returns `Ok`, the
//!    provider later calls [`CompletionSink::complete`] for that `OpId` exactly once —
//!    success or failure — including when the connection is lost
//!    (`OpError::ConnectionLost`, every outstanding operation to that peer) or the
//!    peer is removed (`OpError::Canceled`). When `post` returns `Err`, it never
//!    completes that `OpId`. At endpoint close the generic layer completes whatever
//!    is still outstanding (see [`EndpointProvider::close`]).
//! 2. *Memory.* The provider may read (sends, write sources) or write (receives, read
//!    destinations) the posted slice's memory from `post` until it calls `complete`,
//!    and may access a region through a granted key until `revoke`/`revoke_all`
//!    returns or the [`RegionProvider`] is dropped. Memory is accessed only through raw
//!    pointers or [`RegionMemory`] copies, never as `&mut [u8]`.
//!    Keep the [`PostRequest`] (it holds `Arc`s of the memory) until completion.
//! 3. *Errors normalised.* Truncation is `OpError::Truncated` (with `needed: None` when
//!    the provider cannot tell), a target refusing an RMA is `OpError::RemoteAccess`,
//!    a lost connection `OpError::ConnectionLost`, a cancel `OpError::Canceled`;
//!    anything else `OpError::Provider` with the raw code (absolute value), provider
//!    errno and text. Transient conditions (EAGAIN during connection setup, provider
//!    queue momentarily full) are absorbed: retried internally after progress, never
//!    surfaced as an error.
//! 4. *Progress is automatic.* Operations complete without the program calling into
//!    the provider: the provider runs whatever tasks it needs on the current zerorx
//!    worker (spawned with [`zerorx::spawn`]), including the target side of RMA.
//! 5. *Ordering.* Operations from one endpoint to one peer are delivered in post order
//!    (send after send, send after write, write after write). Completions may be
//!    reported in any order.
//! 6. *Matching.* A receive matches the oldest message it accepts; a message matches
//!    the oldest posted receive that accepts it. Untagged messages match untagged
//!    receives only, tagged messages tagged receives only: a tagged receive accepts tag
//!    `t` when `(t ^ tag) & !ignore == 0`, and, with a source filter, only messages
//!    from that peer. An RMA write with immediate data consumes an untagged receive
//!    (region or lease), places no bytes in it, and completes it with `remote_write`,
//!    `imm` and the write's length.
//! 7. *Cancel.* [`EndpointProvider::cancel`] returns `true` only if the operation will
//!    complete with `OpError::Canceled` (a receive not matched yet); `false` means it
//!    completes normally.
//!
//! **Threads.** Every call comes from the zerorx worker thread that opened the domain;
//! objects are `!Send`. Completions must be reported on that thread too (a provider
//! with its own threads hands results to a task on the worker first).
//!
//! **Who calls what.**
//! [`FabricProvider::discover`] and [`FabricProvider::open_domain`] from
//! [`Fabric`](super::Fabric); [`DomainProvider::register`] from
//! [`Domain::register`](super::Domain::register) (after `mlock` when the domain locks
//! memory); [`RegionProvider::grant`]/`revoke`/`revoke_all` from
//! [`MemoryRegion`](super::MemoryRegion) (`revoke_all` also when it is dropped);
//! [`DomainProvider::open_endpoint`] from
//! [`Domain::endpoint`](super::Domain::endpoint), inside a worker;
//! the [`EndpointProvider`] methods from [`Endpoint`](super::Endpoint) (`close` once,
//! from `Endpoint::close` or its drop).
//!
//! # Adding a provider
//!
//! Implement the four traits and list a factory in `fabric/src/registry.rs`. The
//! libfabric provider lives in `fabric/src/libfabric/` behind the `libfabric` cargo
//! feature: it adds `#[cfg(feature = "libfabric")] pub mod libfabric;` to
//! `fabric/src/lib.rs` and its factories to `registry::providers()`. The conformance
//! suite (`fabric/tests/conformance.rs`) runs every case against every provider
//! [`Fabric::providers`](super::Fabric::providers) lists.

use super::caps::{Discovery, Requirements};
use super::error::{FabricError, PostError};
use super::ops::CompletionSink;
use super::region::{Access, KeyGrant, MrSlice, RegionMemory, RemoteKey};
use super::{DomainConfig, EndpointConfig, EpAddr, Level, OpId, PeerId};
use std::any::Any;
use std::future::Future;
use std::ops::Range;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;

/// A boxed future borrowing the provider.
pub type LocalFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// A transport's entry point.
pub trait FabricProvider {
    /// The name programs pass to [`Fabric::open`](super::Fabric::open), e.g.
    /// `"uring-tcp"` or `"libfabric:tcp;ofi_rxm"`.
    fn name(&self) -> &str;

    /// Every capability in [`Cap::ALL`](super::Cap::ALL) order, guaranteed or missing
    /// with a reason, plus limits, ordering and progress. `requested` is filled in
    /// from `req`. Must not fail because a requested capability is missing (that is
    /// reported, not an error); fails only if the transport cannot be queried at all.
    fn discover(&self, req: &Requirements) -> Result<Discovery, FabricError>;

    /// Opens a domain (memory registration and endpoint scope).
    fn open_domain(&self, cfg: &DomainConfig) -> Result<Rc<dyn DomainProvider>, FabricError>;
}

/// A provider's domain.
pub trait DomainProvider {
    /// Registers `mem` (already allocated, and locked when the domain asked for it)
    /// with `access`, which the generic layer has checked to be consistent.
    fn register(
        &self,
        mem: &Arc<RegionMemory>,
        access: Access,
    ) -> Result<Rc<dyn RegionProvider>, FabricError>;

    /// Opens an endpoint that reports completions to `sink`. Called on a worker.
    fn open_endpoint(
        &self,
        cfg: &EndpointConfig,
        sink: CompletionSink,
    ) -> Result<Rc<dyn EndpointProvider>, FabricError>;
}

/// A provider's registration of one region.
pub trait RegionProvider {
    /// Grants remote `access` to `range` (inside the region, remote flags only, a
    /// subset of the region's access — all checked by the caller).
    fn grant(&self, range: Range<usize>, access: Access) -> Result<KeyGrant, FabricError>;

    /// Grants `access` to `range` under a key the program chose (see
    /// [`MemoryRegion::remote_keyed`](super::MemoryRegion::remote_keyed)); fails when
    /// the key is taken in the domain. Providers that pick their own keys refuse.
    fn grant_key(
        &self,
        range: Range<usize>,
        access: Access,
        key: u64,
    ) -> Result<KeyGrant, FabricError> {
        let _ = (range, access);
        Err(FabricError::invalid(
            "key",
            key,
            "this provider picks its own keys",
        ))
    }

    /// Revokes one key; returns whether it was live.
    fn revoke(&self, key: u64) -> bool;

    /// Revokes every key of the region.
    fn revoke_all(&self);

    /// For the provider's own downcasts (e.g. to reach a descriptor when posting).
    fn as_any(&self) -> &dyn Any;
}

/// Where a receive places the message.
#[derive(Debug, Clone)]
pub enum RecvTarget {
    /// Into a region slice (one copy out of the provider's receive memory at most).
    Buffer(MrSlice),
    /// Hand the provider's receive memory to the program ([`Lease`](super::Lease));
    /// longer messages are truncated to `max_len`.
    Lease {
        /// Longest message accepted whole.
        max_len: usize,
    },
}

impl RecvTarget {
    /// Bytes the receive accepts.
    pub fn capacity(&self) -> usize {
        match self {
            RecvTarget::Buffer(s) => s.len(),
            RecvTarget::Lease { max_len } => *max_len,
        }
    }
}

/// Tag matching of a tagged receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TagMatch {
    /// The tag.
    pub tag: u64,
    /// Bits that need not match.
    pub ignore: u64,
}

impl TagMatch {
    /// Whether a message tagged `t` matches.
    pub fn accepts(&self, t: u64) -> bool {
        (t ^ self.tag) & !self.ignore == 0
    }
}

/// One operation, validated by the generic layer.
#[derive(Debug, Clone)]
pub enum PostRequest {
    /// Send `src` to `peer`; tagged when `tag` is set.
    Send {
        /// Target.
        peer: PeerId,
        /// Bytes to send.
        src: MrSlice,
        /// The tag of a tagged send.
        tag: Option<u64>,
        /// Immediate data.
        imm: Option<u64>,
        /// When to report completion.
        level: Level,
    },
    /// Post a receive.
    Recv {
        /// Where the message goes.
        target: RecvTarget,
        /// Tagged receive when set.
        tag: Option<TagMatch>,
        /// Only messages from this peer.
        from: Option<PeerId>,
        /// A multi-receive: messages fill the buffer back to back until less than
        /// this many bytes are left (untagged, into a region slice only).
        multi: Option<usize>,
    },
    /// RMA write of `src` to `key` at `offset`.
    Write {
        /// Target.
        peer: PeerId,
        /// Bytes to write.
        src: MrSlice,
        /// The target's key.
        key: RemoteKey,
        /// Offset into the key's range.
        offset: u64,
        /// Immediate data (consumes a receive at the target).
        imm: Option<u64>,
        /// When to report completion.
        level: Level,
    },
    /// RMA read of `dst.len()` bytes from `key` at `offset` into `dst`.
    Read {
        /// Target.
        peer: PeerId,
        /// Where the bytes go.
        dst: MrSlice,
        /// The target's key.
        key: RemoteKey,
        /// Offset into the key's range.
        offset: u64,
    },
}

/// What a probe does with the message it finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeAction {
    /// Report it and leave it waiting.
    Peek,
    /// Report it and set it aside for a receive naming the probe
    /// ([`Endpoint::recv_claimed`](super::Endpoint::recv_claimed)).
    Claim,
    /// Report it and drop it.
    Discard,
}

/// A probe, validated by the generic layer.
#[derive(Debug, Clone)]
pub struct ProbeRequest {
    /// Tagged messages matching this.
    pub tag: TagMatch,
    /// Only messages from this peer.
    pub from: Option<PeerId>,
    /// What to do with the message found.
    pub action: ProbeAction,
}

/// Why a provider does not probe, for the default methods below.
fn no_probe() -> PostError {
    PostError::Unsupported {
        cap: super::Cap::Probe,
        reason: "this provider does not probe waiting messages".into(),
    }
}

/// A provider's endpoint.
pub trait EndpointProvider {
    /// The address peers insert (exchanged out of band).
    fn address(&self) -> EpAddr;

    /// Adds a peer; inserting an address already present returns its id.
    fn insert_peer(&self, addr: &EpAddr) -> Result<PeerId, FabricError>;

    /// The address of `peer` as this endpoint knows it (for a peer that connected
    /// on its own, the address it announced); `None` for an unknown id.
    fn peer_address(&self, peer: PeerId) -> Option<EpAddr>;

    /// Removes a peer: its outstanding operations complete with `Canceled`, its
    /// connections close.
    fn remove_peer(&self, peer: PeerId) -> Result<(), FabricError>;

    /// Resolves once `peer` is reachable (connection set up), or fails with why not.
    fn connect(&self, peer: PeerId) -> LocalFuture<'_, Result<(), FabricError>>;

    /// Resolves with the next peer that connected on its own (only where discovery
    /// guarantees `Cap::Accept`).
    fn accept(&self) -> LocalFuture<'_, Result<PeerId, FabricError>>;

    /// Starts an operation (see the module contract).
    fn post(&self, op: OpId, req: PostRequest) -> Result<(), PostError>;

    /// Cancels a posted receive not yet matched; see the module contract.
    fn cancel(&self, op: OpId) -> bool;

    /// Starts probe `op` (where discovery guarantees `Cap::Probe`): completes it with
    /// the first waiting message that matches (length, tag, immediate data, peer), or
    /// with `OpError::NoMessage`.
    fn probe(&self, op: OpId, req: ProbeRequest) -> Result<(), PostError> {
        let _ = (op, req);
        Err(no_probe())
    }

    /// Receive `op` of the message probe `claim` set aside, into `target` (or drops it
    /// when `None`); `OpError::NoMessage` when `claim` set nothing aside.
    fn take_claimed(
        &self,
        op: OpId,
        claim: OpId,
        target: Option<RecvTarget>,
    ) -> Result<(), PostError> {
        let _ = (op, claim, target);
        Err(no_probe())
    }

    /// Closes the endpoint: tasks stop, connections close, and when it returns the
    /// provider no longer touches any posted memory. It need not complete anything:
    /// the generic layer then completes every operation still outstanding with
    /// `Canceled`.
    fn close(&self);
}
