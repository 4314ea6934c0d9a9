//! Provider 1: RDMA-style semantics over the runtime's TCP streams (io_uring).
//!
//! Each endpoint listens on a TCP port. Requests to a peer go out on a connection
//! this endpoint opens ([`outbound`]); the peer serves them in its reactor tasks and
//! answers on the same connection ([`inbound`]). Frames are defined in [`wire`].
//! Messages land in posted receives straight from the worker's receive buffers (one
//! copy) or are handed over as leases (none); RMA writes are validated against the
//! domain's [`keys`] and copied into the region; RMA reads are answered from the
//! region's memory without a user-space copy.

mod endpoint;
pub(crate) use endpoint::{ep_addr_socket, socket_ep_addr};
mod inbound;
mod keys;
mod matching;
mod outbound;
mod peers;
mod reader;
mod wire;
mod writer;

use super::caps::{Cap, CapReport, Discovery, EndpointKind, Limits, Requirements, Support};
use super::provider::{DomainProvider, EndpointProvider, FabricProvider, RegionProvider};
use super::{Access, CompletionSink, DomainConfig, EndpointConfig, FabricError, RegionMemory};
use keys::{KeyTable, UringRegion};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

/// The provider's name.
pub(crate) const PROVIDER: &str = "uring-tcp";
/// Largest message or RMA.
const MAX_MSG: usize = 1 << 30;
/// Largest queue depth of one endpoint.
const MAX_DEPTH: usize = 1 << 16;

/// The io_uring TCP provider.
pub(crate) struct UringFabric;

fn guaranteed(cap: Cap) -> String {
    match cap {
        Cap::Msg => "reliable messages up to 1 GiB over TCP",
        Cap::Tagged => "64-bit tags with an ignore mask, matched at the target",
        Cap::SendImm => "64-bit immediate data with any send",
        Cap::RmaWrite => "emulated: the target copies from its receive buffers into the region",
        Cap::RmaWriteImm => "consumes the oldest untagged receive at the target",
        Cap::RmaRead => "the target answers from the region without a user-space copy",
        Cap::SourceFilter => "receives that only accept one peer",
        Cap::Cancel => "posted receives not matched yet",
        Cap::LeaseRecv => "the worker's receive-pool buffers handed over without copying",
        Cap::DeliveryComplete => "the target acknowledges once the data is placed",
        Cap::Accept => "peers that connect are inserted and reported",
        Cap::TargetValidation => {
            "key, generation, bounds and access checked at the target; a refusal keeps the connection"
        }
        Cap::PeerRemove => "outstanding operations to the peer complete with Canceled",
        Cap::Probe => "peek, claim or discard messages waiting for a receive, matched like one",
        Cap::MultiRecv => "messages placed back to back, the buffer keeping its place among receives",
    }
    .to_string()
}

impl FabricProvider for UringFabric {
    fn name(&self) -> &str {
        PROVIDER
    }

    fn discover(&self, req: &Requirements) -> Result<Discovery, FabricError> {
        Ok(Discovery {
            provider: PROVIDER.to_string(),
            kind: EndpointKind::ReliableDatagram,
            requested: req.caps,
            caps: Cap::ALL
                .iter()
                .map(|&cap| CapReport {
                    cap,
                    support: Support::Guaranteed(guaranteed(cap)),
                })
                .collect(),
            limits: Limits {
                max_msg_size: MAX_MSG,
                max_depth: MAX_DEPTH,
            },
            ordering: "per peer, every operation is delivered in post order (one TCP stream \
                       per direction)"
                .into(),
            progress: "automatic: reader and writer tasks on the zerorx worker, including \
                       the target side of RMA"
                .into(),
        })
    }

    fn open_domain(&self, _cfg: &DomainConfig) -> Result<Rc<dyn DomainProvider>, FabricError> {
        Ok(Rc::new(UringDomain {
            keys: Rc::new(RefCell::new(KeyTable::default())),
        }))
    }
}

/// A domain: the key table its endpoints check RMA against.
struct UringDomain {
    keys: Rc<RefCell<KeyTable>>,
}

impl DomainProvider for UringDomain {
    fn register(
        &self,
        mem: &Arc<RegionMemory>,
        _access: Access,
    ) -> Result<Rc<dyn RegionProvider>, FabricError> {
        Ok(Rc::new(UringRegion {
            mem: mem.clone(),
            table: self.keys.clone(),
            keys: RefCell::new(Vec::new()),
        }))
    }

    fn open_endpoint(
        &self,
        cfg: &EndpointConfig,
        sink: CompletionSink,
    ) -> Result<Rc<dyn EndpointProvider>, FabricError> {
        let max_msg = cfg.max_msg_size.unwrap_or(MAX_MSG).min(MAX_MSG);
        Ok(Rc::new(endpoint::UringEndpoint::open(
            cfg,
            sink,
            self.keys.clone(),
            max_msg,
        )?))
    }
}
