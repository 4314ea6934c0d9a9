//! What a program asks of a fabric ([`Requirements`]) and what a provider answers
//! ([`Discovery`]): each capability guaranteed, or missing with a reason in words.

use serde::{Deserialize, Serialize};
use std::fmt;

/// One capability a program can require.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Cap {
    /// Untagged send/recv with posted buffers.
    Msg,
    /// Tagged send/recv with an ignore mask.
    Tagged,
    /// Immediate data (64 bits) carried by a send and reported by the matching recv.
    SendImm,
    /// One-sided RMA write.
    RmaWrite,
    /// RMA write with immediate data: consumes a posted recv at the target.
    RmaWriteImm,
    /// One-sided RMA read.
    RmaRead,
    /// A receive that only matches messages from one peer.
    SourceFilter,
    /// Cancelling a posted receive.
    Cancel,
    /// Lease receive: the provider's receive memory handed to the application.
    LeaseRecv,
    /// [`Level::Delivered`] completions for sends (RMA is always delivered).
    DeliveryComplete,
    /// [`Endpoint::accept`](super::Endpoint::accept): learn of peers that connected.
    Accept,
    /// The target checks every RMA's key, generation, bounds and access itself and
    /// answers a violation without dropping the connection.
    TargetValidation,
    /// Removing a peer completes its outstanding operations.
    PeerRemove,
    /// Probing the messages that arrived before a matching receive: report one
    /// without taking it, claim it for a later receive, or discard it
    /// ([`Endpoint::probe`](super::Endpoint::probe); MPI's `MPI_Improbe`).
    Probe,
    /// One untagged receive buffer that several messages fill back to back, each
    /// reported as it lands ([`RecvPost::multi`](super::RecvPost::multi)).
    MultiRecv,
}

impl Cap {
    /// Every capability, in declaration order.
    pub const ALL: [Cap; 15] = [
        Cap::Msg,
        Cap::Tagged,
        Cap::SendImm,
        Cap::RmaWrite,
        Cap::RmaWriteImm,
        Cap::RmaRead,
        Cap::SourceFilter,
        Cap::Cancel,
        Cap::LeaseRecv,
        Cap::DeliveryComplete,
        Cap::Accept,
        Cap::TargetValidation,
        Cap::PeerRemove,
        Cap::Probe,
        Cap::MultiRecv,
    ];

    fn bit(self) -> u32 {
        1 << (self as u32)
    }

    /// The capability's name as written in errors and reports.
    pub fn name(self) -> &'static str {
        match self {
            Cap::Msg => "msg",
            Cap::Tagged => "tagged",
            Cap::SendImm => "send-imm",
            Cap::RmaWrite => "rma-write",
            Cap::RmaWriteImm => "rma-write-imm",
            Cap::RmaRead => "rma-read",
            Cap::SourceFilter => "source-filter",
            Cap::Cancel => "cancel",
            Cap::LeaseRecv => "lease-recv",
            Cap::DeliveryComplete => "delivery-complete",
            Cap::Accept => "accept",
            Cap::TargetValidation => "target-validation",
            Cap::PeerRemove => "peer-remove",
            Cap::Probe => "probe",
            Cap::MultiRecv => "multi-recv",
        }
    }
}

impl fmt::Display for Cap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of [`Cap`]s.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Caps(u32);

impl Caps {
    /// No capability.
    pub const fn empty() -> Caps {
        Caps(0)
    }

    /// Every capability.
    pub fn all() -> Caps {
        Cap::ALL.iter().fold(Caps::empty(), |s, &c| s.with(c))
    }

    /// This set plus `cap`.
    pub fn with(self, cap: Cap) -> Caps {
        Caps(self.0 | cap.bit())
    }

    /// Whether `cap` is in the set.
    pub fn contains(self, cap: Cap) -> bool {
        self.0 & cap.bit() != 0
    }

    /// The capabilities in the set, in declaration order.
    pub fn iter(self) -> impl Iterator<Item = Cap> {
        Cap::ALL.into_iter().filter(move |c| self.contains(*c))
    }
}

impl FromIterator<Cap> for Caps {
    fn from_iter<I: IntoIterator<Item = Cap>>(iter: I) -> Caps {
        iter.into_iter().fold(Caps::empty(), Caps::with)
    }
}

/// When an operation's completion is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Level {
    /// The local buffer may be reused; the peer may not have the data yet, and a
    /// target-side rejection of an RMA is not reported. Default for sends.
    Sent,
    /// The target has placed the data (or accepted the message) and, for RMA,
    /// validated the access. Default for RMA.
    Delivered,
}

/// How a provider's endpoints reach peers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EndpointKind {
    /// Reliable, unconnected from the program's view: insert a peer's address and
    /// post to it (libfabric `FI_EP_RDM`).
    ReliableDatagram,
    /// One connection per peer, set up with connect/accept (libfabric `FI_EP_MSG`).
    Connected,
}

/// What a program needs from a fabric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirements {
    /// Capabilities that must be guaranteed.
    pub caps: Caps,
    /// Largest message or RMA the program will post.
    pub max_msg_size: usize,
}

impl Default for Requirements {
    /// Untagged messages up to 8 MiB.
    fn default() -> Self {
        Requirements {
            caps: Caps::empty().with(Cap::Msg),
            max_msg_size: 8 << 20,
        }
    }
}

impl Requirements {
    /// Untagged messages only (the default).
    pub fn new() -> Requirements {
        Requirements::default()
    }

    /// Adds a required capability.
    pub fn cap(mut self, cap: Cap) -> Requirements {
        self.caps = self.caps.with(cap);
        self
    }

    /// Adds several required capabilities.
    pub fn caps(mut self, caps: impl IntoIterator<Item = Cap>) -> Requirements {
        for c in caps {
            self.caps = self.caps.with(c);
        }
        self
    }

    /// Sets the largest message the program will post.
    pub fn max_msg_size(mut self, bytes: usize) -> Requirements {
        self.max_msg_size = bytes;
        self
    }
}

/// Whether a provider offers one capability.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Support {
    /// Offered; the text says what exactly is guaranteed.
    Guaranteed(String),
    /// Not offered; the text says why.
    Missing(String),
}

/// One line of a [`Discovery`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CapReport {
    /// The capability.
    pub cap: Cap,
    /// Whether and how the provider offers it.
    pub support: Support,
}

/// Limits a provider declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Largest message or RMA.
    pub max_msg_size: usize,
    /// Largest `tx_depth` / `rx_depth` of one endpoint.
    pub max_depth: usize,
}

/// A provider's answer to [`Requirements`]: every capability, guaranteed or missing
/// with a reason, plus limits, ordering and progress model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Discovery {
    /// Provider name, as given to [`Fabric::open`](super::Fabric::open).
    pub provider: String,
    /// How endpoints reach peers.
    pub kind: EndpointKind,
    /// What was asked.
    pub requested: Caps,
    /// Every capability the API knows, in [`Cap::ALL`] order.
    pub caps: Vec<CapReport>,
    /// Declared limits.
    pub limits: Limits,
    /// Message ordering guaranteed between two endpoints.
    pub ordering: String,
    /// Who drives progress.
    pub progress: String,
}

impl Discovery {
    /// Whether the provider guarantees `cap`.
    pub fn supports(&self, cap: Cap) -> bool {
        self.caps
            .iter()
            .any(|r| r.cap == cap && matches!(r.support, Support::Guaranteed(_)))
    }

    /// Why `cap` is missing (`None` when supported).
    pub fn missing_reason(&self, cap: Cap) -> Option<&str> {
        self.caps.iter().find_map(|r| match &r.support {
            Support::Missing(why) if r.cap == cap => Some(why.as_str()),
            _ => None,
        })
    }

    /// The requested capabilities the provider lacks, with reasons.
    pub fn missing(&self) -> Vec<(Cap, &str)> {
        self.requested
            .iter()
            .filter_map(|c| self.missing_reason(c).map(|why| (c, why)))
            .collect()
    }

    /// Every guaranteed capability.
    pub fn supported(&self) -> Caps {
        Cap::ALL.into_iter().filter(|c| self.supports(*c)).collect()
    }
}

impl fmt::Display for Discovery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "provider {} ({:?})", self.provider, self.kind)?;
        for r in &self.caps {
            let asked = if self.requested.contains(r.cap) {
                "*"
            } else {
                " "
            };
            match &r.support {
                Support::Guaranteed(what) => writeln!(f, " {asked} {:<18} yes  {what}", r.cap)?,
                Support::Missing(why) => writeln!(f, " {asked} {:<18} no   {why}", r.cap)?,
            }
        }
        writeln!(
            f,
            "   max message {} B, max depth {}",
            self.limits.max_msg_size, self.limits.max_depth
        )?;
        writeln!(f, "   ordering: {}", self.ordering)?;
        write!(f, "   progress: {}", self.progress)
    }
}
