//! The libfabric providers (`libfabric` cargo feature): `"libfabric:tcp;ofi_rxm"` (RDM
//! over TCP) and `"libfabric:shm"` (same host), on the system's libfabric (Debian 12:
//! 1.17) through `zerorx-libfabric-sys`.
//!
//! The API's semantics are kept where libfabric 1.17 was measured to differ
//! (`shared/design/fabric-api.md`, section 3, this module's tests, and the quirk table in
//! docs/design/fabric.md):
//! - every RMA asks for `FI_DELIVERY_COMPLETE`, so a target's refusal comes back as
//!   `RemoteAccess` rather than as a silently dropped connection; on `tcp;ofi_rxm`, which
//!   drops the connection after such a refusal, later operations to that peer wait until
//!   its RMAs completed and are retried if they meet the dying connection, so none is
//!   lost with it;
//! - `FI_EAGAIN` while rxm sets a connection up is absorbed: the operation waits in a
//!   backlog (in post order per peer) and is retried after progress, for at most
//!   `EndpointConfig::connect_timeout`, after which it and every other operation to that
//!   peer complete with `ConnectionLost`;
//! - rxm's dynamic receive buffers are turned off (they turn a truncated receive into a
//!   dropped connection), so truncation is `Truncated` with the full length;
//! - truncation codes of either sign, `olen` 0, and connection errnos in `err` or
//!   `prov_errno` are normalised ([`errors`]);
//! - transmit completions are reported in post order per peer ([`order`]), and sends the
//!   provider would complete only once the receiver took them are sent from a copy and
//!   complete at once, within a budget;
//! - a closed shm endpoint another endpoint of the process still references is parked
//!   rather than closed (libfabric 1.17 segfaults on a send to it), and dead shm peer
//!   processes are noticed by pid ([`local`]);
//! - `fi_mr_reg` failing with `ENOMEM` past `RLIMIT_MEMLOCK` is `MemlockLimit`;
//! - what cannot be made to behave (tags and RMA on `shm`, write-with-immediate,
//!   delivery-complete sends on rxm, target validation) is reported missing by
//!   discovery, with the reason.
//!
//! Progress is manual on both providers: a task per endpoint on its worker reads the CQ
//! ([`progress`]), sleeping on the CQ's wait fd through io_uring when the provider has
//! one (rxm), else polling at a bounded interval (shm).

mod discovery;
mod endpoint;
mod errors;
mod info;
mod linger;
mod local;
mod ops;
mod order;
mod peers;
mod post;
mod progress;
mod region;
mod res;
mod wait;

use super::provider::{DomainProvider, EndpointProvider, FabricProvider, RegionProvider};
use super::{
    Access, CompletionSink, Discovery, DomainConfig, EndpointConfig, FabricError, RegionMemory,
    Requirements,
};
use endpoint::{EpState, LfEndpoint};
use info::{Profile, Traits, PROFILES};
use region::LfRegion;
use res::DomainRes;
use std::rc::Rc;
use std::sync::Arc;

/// The libfabric providers of this build, for the registry.
pub(crate) fn providers() -> Vec<Rc<dyn FabricProvider>> {
    PROFILES
        .iter()
        .map(|profile| {
            Rc::new(LfFabric {
                profile,
                name: format!("libfabric:{}", profile.prov),
            }) as Rc<dyn FabricProvider>
        })
        .collect()
}

/// One libfabric provider.
struct LfFabric {
    profile: &'static Profile,
    name: String,
}

impl FabricProvider for LfFabric {
    fn name(&self) -> &str {
        &self.name
    }

    fn discover(&self, req: &Requirements) -> Result<Discovery, FabricError> {
        Ok(match info::getinfo(self.profile) {
            Ok(info) => discovery::report(&self.name, self.profile, Ok(&Traits::of(&info)), req),
            Err(e) => discovery::report(&self.name, self.profile, Err(&e), req),
        })
    }

    fn open_domain(&self, _cfg: &DomainConfig) -> Result<Rc<dyn DomainProvider>, FabricError> {
        let info = info::getinfo(self.profile)?;
        Ok(Rc::new(LfDomain {
            res: Arc::new(DomainRes::open(self.profile, info)?),
            name: self.name.clone(),
        }))
    }
}

/// A libfabric domain.
struct LfDomain {
    res: Arc<DomainRes>,
    name: String,
}

impl DomainProvider for LfDomain {
    fn register(
        &self,
        mem: &Arc<RegionMemory>,
        access: Access,
    ) -> Result<Rc<dyn RegionProvider>, FabricError> {
        Ok(Rc::new(LfRegion::register(&self.res, mem, access)?))
    }

    fn open_endpoint(
        &self,
        cfg: &EndpointConfig,
        sink: CompletionSink,
    ) -> Result<Rc<dyn EndpointProvider>, FabricError> {
        let state = EpState::open(&self.res, &self.name, cfg, sink)?;
        Ok(Rc::new(LfEndpoint(state)))
    }
}
