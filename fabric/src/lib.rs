//! An RDMA-style message API — memory regions and keys, posted receives, tagged
//! matching, one-sided RMA, completion queues — over pluggable providers: the io_uring
//! TCP transport (`"uring-tcp"`, default, nothing to install) and, behind the
//! `libfabric` feature, libfabric providers.
//!
//! The semantics are this module's, not a provider's: one completion per posted
//! operation with its status inline, RMA validated against the key at the initiator
//! before posting (and at the target where the provider can), typed errors that say
//! what to do. See [`provider`] for the boundary a transport implements.
//!
//! ```no_run
//! use zerorx_fabric::{Access, Cap, EndpointConfig, Fabric, Requirements};
//! let rt = zerorx::Runtime::new()?;
//! rt.block_on(async {
//!     let fabric = Fabric::open("uring-tcp", &Requirements::new().cap(Cap::RmaWrite))?;
//!     let domain = fabric.domain(Default::default())?;
//!     let cq = domain.completion_queue(1024)?;
//!     let a = domain.endpoint(&cq, EndpointConfig::default())?;
//!     let b = domain.endpoint(&cq, EndpointConfig::default())?;
//!     let to_b = a.insert_peer(&b.address())?;
//!     let src = domain.register(64, Access::LOCAL)?;
//!     let dst = domain.register(64, Access::LOCAL)?;
//!     src.write(0, b"hello")?;
//!     b.recv(&dst.all()).post()?;
//!     a.send(to_b, &src.slice(0..5)?).post()?;
//!     let (c1, c2) = (cq.next().await, cq.next().await);
//!     assert!(c1.is_ok() && c2.is_ok());
//!     assert_eq!(dst.to_vec(0..5)?, b"hello");
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod caps;
mod completion;
mod endpoint;
mod error;
#[cfg(feature = "libfabric")]
mod libfabric;
mod ops;
pub mod provider;
mod region;
mod registry;
mod uring;

pub use caps::{
    Cap, CapReport, Caps, Discovery, EndpointKind, Level, Limits, Requirements, Support,
};
pub use completion::{Completion, CompletionQueue, Lease, OpKind};
pub use endpoint::{Endpoint, ProbePost, RecvPost, RmaPost, SendPost};
pub use error::{AccessFault, FabricError, OpError, PostError, QueueKind};
pub use ops::{CompletionSink, OpOutcome};
pub use region::{
    memlock_check, memlock_state, random_u64, Access, KeyGrant, MemoryRegion, MrSlice,
    RegionMemory, RemoteKey,
};

use provider::{DomainProvider, FabricProvider};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A posted operation, unique within its endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OpId(pub u64);

/// A peer in an endpoint's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PeerId(pub u64);

impl fmt::Display for PeerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "peer {}", self.0 & 0xffff_ffff)
    }
}

/// An endpoint's address, to exchange out of band: the provider's name and its own
/// bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EpAddr {
    /// The provider that made it.
    pub provider: String,
    /// Provider-defined bytes.
    pub bytes: Vec<u8>,
}

impl EpAddr {
    /// One byte of name length, the name, the provider's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let name = self.provider.as_bytes();
        let mut v = Vec::with_capacity(1 + name.len() + self.bytes.len());
        v.push(name.len().min(255) as u8);
        v.extend_from_slice(&name[..name.len().min(255)]);
        v.extend_from_slice(&self.bytes);
        v
    }

    /// Decodes [`to_bytes`](Self::to_bytes).
    pub fn from_bytes(b: &[u8]) -> Result<EpAddr, FabricError> {
        let bad = |reason: &str| FabricError::BadAddress {
            reason: reason.to_string(),
        };
        let (&n, rest) = b.split_first().ok_or_else(|| bad("empty"))?;
        let n = n as usize;
        if rest.len() < n {
            return Err(bad("shorter than its provider name"));
        }
        let provider = std::str::from_utf8(&rest[..n])
            .map_err(|_| bad("provider name is not UTF-8"))?
            .to_string();
        Ok(EpAddr {
            provider,
            bytes: rest[n..].to_vec(),
        })
    }
}

impl EpAddr {
    /// The address of whichever `uring-tcp` endpoint listens on `addr`: what a program
    /// that learns peers as socket addresses (libfabric's `FI_SOCKADDR_IN`) inserts.
    /// The first connection from that endpoint ties the entry to it.
    pub fn uring_tcp(addr: SocketAddr) -> EpAddr {
        uring::socket_ep_addr(addr)
    }

    /// The socket address a `uring-tcp` endpoint listens on, read from its address;
    /// `None` for other providers' addresses.
    pub fn uring_tcp_socket(&self) -> Option<SocketAddr> {
        uring::ep_addr_socket(self)
    }
}

impl fmt::Display for EpAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.provider)?;
        for b in &self.bytes {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// Domain options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DomainConfig {
    /// `mlock` every registered region (checked against `RLIMIT_MEMLOCK` first).
    pub lock_memory: bool,
}

/// Endpoint options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointConfig {
    /// Sends, writes and reads posted whose completions were not taken yet.
    pub tx_depth: usize,
    /// Receives posted whose completions were not taken yet.
    pub rx_depth: usize,
    /// Largest message or RMA this endpoint posts or accepts; `None` takes the
    /// fabric's [`Requirements::max_msg_size`]. Posts above it fail with `TooLarge`,
    /// and a peer sending more is cut off, so it also bounds what one message can
    /// make the endpoint allocate.
    pub max_msg_size: Option<usize>,
    /// Local address to listen on (io_uring provider; default 127.0.0.1, any port).
    pub bind: Option<SocketAddr>,
    /// Messages that arrived before a matching receive, held at most before the
    /// provider stops reading from the sending peers (backpressure).
    pub unexpected_msgs: usize,
    /// Bytes of such messages held at most before backpressure.
    pub unexpected_bytes: usize,
    /// Lease receives of messages up to this size hand out the receive pool's memory
    /// itself; longer ones are gathered into one heap buffer so they cannot pin the
    /// whole pool (io_uring provider).
    pub lease_zero_copy_max: usize,
    /// Giving up on connecting to a peer after this long.
    pub connect_timeout: Duration,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            tx_depth: 256,
            rx_depth: 256,
            max_msg_size: None,
            bind: None,
            unexpected_msgs: 1024,
            unexpected_bytes: 16 << 20,
            lease_zero_copy_max: 256 << 10,
            connect_timeout: Duration::from_secs(5),
        }
    }
}

/// An opened provider, checked against the program's requirements.
pub struct Fabric {
    prov: Rc<dyn FabricProvider>,
    discovery: Rc<Discovery>,
    max_msg_size: usize,
}

impl Fabric {
    /// Names of the providers in this build, default first.
    pub fn providers() -> Vec<String> {
        registry::providers()
            .iter()
            .map(|p| p.name().to_string())
            .collect()
    }

    fn find(name: &str) -> Result<Rc<dyn FabricProvider>, FabricError> {
        let all = registry::providers();
        let names = all.iter().map(|p| p.name().to_string()).collect();
        all.into_iter()
            .find(|p| p.name() == name)
            .ok_or(FabricError::UnknownProvider {
                name: name.to_string(),
                available: names,
            })
    }

    /// What `provider` guarantees for `req` (never fails for a missing capability:
    /// that is in the report).
    pub fn discover(provider: &str, req: &Requirements) -> Result<Discovery, FabricError> {
        Self::find(provider)?.discover(req)
    }

    /// Opens `provider`; fails with [`FabricError::Unsupported`] (naming the providers
    /// of this build that have it) when a required capability is missing.
    pub fn open(provider: &str, req: &Requirements) -> Result<Fabric, FabricError> {
        let prov = Self::find(provider)?;
        let discovery = prov.discover(req)?;
        if let Some((cap, why)) = discovery.missing().first() {
            let available_in = registry::providers()
                .iter()
                .filter(|p| p.name() != provider)
                .filter(|p| p.discover(req).is_ok_and(|d| d.supports(*cap)))
                .map(|p| p.name().to_string())
                .collect();
            return Err(FabricError::Unsupported {
                cap: *cap,
                provider: provider.to_string(),
                reason: why.to_string(),
                available_in,
            });
        }
        if req.max_msg_size > discovery.limits.max_msg_size {
            return Err(FabricError::invalid(
                "Requirements::max_msg_size",
                req.max_msg_size,
                format!(
                    "provider {provider} sends at most {} bytes per message",
                    discovery.limits.max_msg_size
                ),
            ));
        }
        Ok(Fabric {
            prov,
            discovery: Rc::new(discovery),
            max_msg_size: req.max_msg_size,
        })
    }

    /// The provider's report for the requirements this fabric was opened with.
    pub fn discovery(&self) -> &Discovery {
        &self.discovery
    }

    /// Opens a domain: the scope of memory registrations and endpoints.
    pub fn domain(&self, cfg: DomainConfig) -> Result<Domain, FabricError> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Ok(Domain {
            prov: self.prov.open_domain(&cfg)?,
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            cfg,
            discovery: self.discovery.clone(),
            max_msg_size: self.max_msg_size,
        })
    }
}

impl fmt::Debug for Fabric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fabric")
            .field("provider", &self.discovery.provider)
            .finish()
    }
}

/// Memory registrations and endpoints of one provider.
pub struct Domain {
    prov: Rc<dyn DomainProvider>,
    id: u64,
    cfg: DomainConfig,
    discovery: Rc<Discovery>,
    max_msg_size: usize,
}

impl Domain {
    fn check_access(access: Access) -> Result<(), FabricError> {
        if access == Access::empty() {
            return Err(FabricError::invalid(
                "access",
                access,
                "grant at least one access",
            ));
        }
        if access.contains(Access::REMOTE_WRITE) && !access.contains(Access::WRITE) {
            return Err(FabricError::invalid(
                "access",
                access,
                "remote-write needs write too (the region is a destination)",
            ));
        }
        if access.contains(Access::REMOTE_READ) && !access.contains(Access::READ) {
            return Err(FabricError::invalid(
                "access",
                access,
                "remote-read needs read too (the region is a source)",
            ));
        }
        Ok(())
    }

    fn register_memory(
        &self,
        mut mem: RegionMemory,
        access: Access,
    ) -> Result<MemoryRegion, FabricError> {
        Self::check_access(access)?;
        // Foreign memory is its owner's to lock.
        if self.cfg.lock_memory && !mem.is_foreign() {
            mem.lock()?;
        }
        let mem = Arc::new(mem);
        let prov = self.prov.register(&mem, access)?;
        Ok(MemoryRegion {
            inner: Rc::new(region::RegionInner {
                mem,
                access,
                prov,
                domain: self.id,
                in_flight: Default::default(),
                closed: Default::default(),
            }),
        })
    }

    /// Registers `len` zeroed, page-aligned bytes.
    pub fn register(&self, len: usize, access: Access) -> Result<MemoryRegion, FabricError> {
        self.register_memory(RegionMemory::zeroed(len)?, access)
    }

    /// Registers `buf`'s memory without copying it.
    pub fn register_vec(&self, buf: Vec<u8>, access: Access) -> Result<MemoryRegion, FabricError> {
        self.register_memory(RegionMemory::from_vec(buf)?, access)
    }

    /// Registers memory the program owns, without copying or taking it over: how a
    /// C API whose callers pass raw buffers (the libfabric provider library) posts
    /// them. Such memory is never registered with the ring for sends.
    ///
    /// # Safety
    /// `[ptr, ptr+len)` must stay valid for reads and writes while the region lives
    /// and until every operation posted on it has completed, and nothing else may
    /// write it while a receive or a remote write into it is outstanding.
    pub unsafe fn register_foreign(
        &self,
        ptr: *mut u8,
        len: usize,
        access: Access,
    ) -> Result<MemoryRegion, FabricError> {
        // SAFETY: the caller's contract is `foreign`'s.
        let mem = unsafe { RegionMemory::foreign(ptr, len)? };
        self.register_memory(mem, access)
    }

    /// A completion queue for `depth` completions; endpoints bound to it together may
    /// declare at most that many `tx_depth + rx_depth`.
    pub fn completion_queue(&self, depth: usize) -> Result<CompletionQueue, FabricError> {
        if depth == 0 {
            return Err(FabricError::invalid(
                "completion queue depth",
                depth,
                "must be at least 1",
            ));
        }
        Ok(CompletionQueue::new(depth))
    }

    /// Opens an endpoint reporting to `cq`. Must run inside a zerorx worker: the
    /// endpoint and its progress belong to it.
    pub fn endpoint(
        &self,
        cq: &CompletionQueue,
        mut cfg: EndpointConfig,
    ) -> Result<Endpoint, FabricError> {
        if zerorx::Handle::try_current().is_none() {
            return Err(FabricError::NotInRuntime);
        }
        let max_msg = cfg.max_msg_size.unwrap_or(self.max_msg_size);
        if max_msg > self.discovery.limits.max_msg_size {
            return Err(FabricError::invalid(
                "EndpointConfig::max_msg_size",
                max_msg,
                format!(
                    "provider {} sends at most {} bytes per message",
                    self.discovery.provider, self.discovery.limits.max_msg_size
                ),
            ));
        }
        cfg.max_msg_size = Some(max_msg);
        let max = self.discovery.limits.max_depth;
        for (field, v) in [
            ("EndpointConfig::tx_depth", cfg.tx_depth),
            ("EndpointConfig::rx_depth", cfg.rx_depth),
        ] {
            if v == 0 || v > max {
                return Err(FabricError::invalid(
                    field,
                    v,
                    format!("must be from 1 to {max} (provider limit)"),
                ));
            }
        }
        let need = cfg.tx_depth + cfg.rx_depth;
        if let Err(used) = cq.inner.reserve(need) {
            return Err(FabricError::invalid(
                "EndpointConfig::tx_depth + rx_depth",
                need,
                format!(
                    "the completion queue has depth {} and {used} is taken by endpoints \
                     bound already; a deeper queue (or smaller depths) makes overflow \
                     impossible",
                    cq.depth()
                ),
            ));
        }
        let table = Rc::new(ops::OpTable::new(cfg.tx_depth, cfg.rx_depth));
        let sink = CompletionSink::new(table.clone(), cq.inner.clone());
        match self.prov.open_endpoint(&cfg, sink) {
            Ok(prov) => Ok(Endpoint::new(
                prov,
                table,
                cq.clone(),
                self.id,
                self.discovery.clone(),
                need,
                max_msg,
            )),
            Err(e) => {
                cq.inner.unreserve(need);
                Err(e)
            }
        }
    }

    /// The provider's report this domain was opened under.
    pub fn discovery(&self) -> &Discovery {
        &self.discovery
    }
}

impl fmt::Debug for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Domain")
            .field("provider", &self.discovery.provider)
            .field("id", &self.id)
            .finish()
    }
}
