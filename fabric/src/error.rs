//! Errors that say what happened and what to do: setup ([`FabricError`]), posting
//! ([`PostError`], nothing was queued) and completed operations ([`OpError`], inline in
//! a [`Completion`](super::Completion)).

use super::caps::Cap;
use super::region::Access;
use super::PeerId;
use std::fmt;

/// Setup failed: opening a fabric, domain, queue or endpoint, registering memory,
/// managing peers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FabricError {
    /// No provider of that name in this build.
    UnknownProvider {
        /// The name asked for.
        name: String,
        /// The names this build has.
        available: Vec<String>,
    },
    /// The provider lacks a required capability.
    Unsupported {
        /// The capability.
        cap: Cap,
        /// The provider asked.
        provider: String,
        /// Why it lacks it.
        reason: String,
        /// Providers in this build that have it.
        available_in: Vec<String>,
    },
    /// A configuration value is out of range or inconsistent.
    InvalidConfig {
        /// The field, e.g. `"EndpointConfig::tx_depth"`.
        field: &'static str,
        /// The value given.
        value: String,
        /// Why it is wrong and what would be accepted.
        reason: String,
    },
    /// Locking the memory would pass `RLIMIT_MEMLOCK`.
    MemlockLimit {
        /// The soft limit in bytes.
        limit: u64,
        /// Bytes this registration asked to lock.
        requested: u64,
        /// Bytes the process had locked already.
        locked: u64,
    },
    /// The object is still used by operations in flight.
    InUse {
        /// What could not be closed.
        what: &'static str,
        /// Operations holding it.
        ops: usize,
    },
    /// The peer is not (or no longer) in the endpoint's table.
    UnknownPeer(PeerId),
    /// An address from out-of-band exchange could not be parsed.
    BadAddress {
        /// Why.
        reason: String,
    },
    /// The peer could not be reached.
    Unreachable {
        /// The peer.
        peer: PeerId,
        /// Why.
        cause: String,
    },
    /// Called outside a zerorx runtime worker (fabric objects belong to one worker).
    NotInRuntime,
    /// The endpoint is closed.
    Closed,
    /// A system call failed.
    Io {
        /// What was being done.
        call: &'static str,
        /// errno.
        code: i32,
        /// `strerror`.
        text: String,
    },
    /// A provider call failed; raw code and text kept for logs.
    Provider {
        /// Provider name.
        provider: String,
        /// The call, e.g. `"fi_getinfo"`.
        call: &'static str,
        /// The provider's (absolute) error code.
        code: i32,
        /// The provider's error string.
        text: String,
    },
}

impl FabricError {
    /// Wraps an `io::Error` from `call`.
    pub fn io(call: &'static str, e: &std::io::Error) -> FabricError {
        FabricError::Io {
            call,
            code: e.raw_os_error().unwrap_or(0),
            text: e.to_string(),
        }
    }

    /// An invalid configuration error.
    pub fn invalid(
        field: &'static str,
        value: impl fmt::Display,
        reason: impl Into<String>,
    ) -> Self {
        FabricError::InvalidConfig {
            field,
            value: value.to_string(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for FabricError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FabricError::UnknownProvider { name, available } => write!(
                f,
                "no fabric provider {name:?} in this build; available: {}",
                available.join(", ")
            ),
            FabricError::Unsupported {
                cap,
                provider,
                reason,
                available_in,
            } => {
                write!(f, "provider {provider} does not support {cap}: {reason}")?;
                if available_in.is_empty() {
                    write!(f, "; no provider in this build has it")
                } else {
                    write!(f, "; providers that have it: {}", available_in.join(", "))
                }
            }
            FabricError::InvalidConfig {
                field,
                value,
                reason,
            } => write!(f, "invalid {field} = {value}: {reason}"),
            FabricError::MemlockLimit {
                limit,
                requested,
                locked,
            } => write!(
                f,
                "locking {requested} bytes would pass RLIMIT_MEMLOCK ({limit} bytes, {locked} \
                 already locked); raise it with `ulimit -l`, LimitMEMLOCK= in the systemd unit \
                 or /etc/security/limits.conf, or grant CAP_IPC_LOCK"
            ),
            FabricError::InUse { what, ops } => {
                write!(f, "{what} is used by {ops} operation(s) in flight")
            }
            FabricError::UnknownPeer(p) => write!(f, "{p} is not in the endpoint's peer table"),
            FabricError::BadAddress { reason } => write!(f, "bad endpoint address: {reason}"),
            FabricError::Unreachable { peer, cause } => {
                write!(f, "{peer} is unreachable: {cause}")
            }
            FabricError::NotInRuntime => {
                f.write_str("fabric objects must be created inside a zerorx runtime worker")
            }
            FabricError::Closed => f.write_str("the endpoint is closed"),
            FabricError::Io { call, code, text } => {
                write!(f, "{call} failed: {text} (errno {code})")
            }
            FabricError::Provider {
                provider,
                call,
                code,
                text,
            } => write!(f, "{provider}: {call} failed: {text} (code {code})"),
        }
    }
}

impl std::error::Error for FabricError {}

/// Which of an endpoint's queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueKind {
    /// Sends, writes and reads.
    Tx,
    /// Posted receives.
    Rx,
}

/// A post was refused; nothing was queued and no completion will follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PostError {
    /// The queue holds its declared depth of operations whose completions have not been
    /// taken from the completion queue yet.
    QueueFull {
        /// Which queue.
        queue: QueueKind,
        /// Its declared depth.
        depth: usize,
    },
    /// A local range is outside its memory region.
    LocalRange {
        /// Start of the range.
        offset: usize,
        /// Its length.
        len: usize,
        /// The region's length.
        region_len: usize,
    },
    /// The local region was registered without the access this operation needs.
    LocalAccess {
        /// What the operation needs.
        need: Access,
        /// What the region has.
        have: Access,
    },
    /// An RMA range is outside what the remote key grants (caught before posting).
    RemoteRange {
        /// The key.
        key: u64,
        /// Offset into the granted range.
        offset: u64,
        /// Length of the operation.
        len: u64,
        /// Length of the granted range.
        limit: u64,
    },
    /// The remote key does not grant this access (caught before posting).
    RemoteAccess {
        /// The key.
        key: u64,
        /// What the operation needs.
        need: Access,
        /// What the key grants.
        have: Access,
    },
    /// The message is larger than the provider (or the requirements) allow.
    TooLarge {
        /// The posted length.
        len: usize,
        /// The maximum.
        max: usize,
    },
    /// The fabric was opened without a capability this operation needs.
    Unsupported {
        /// The capability.
        cap: Cap,
        /// Why it is unavailable: missing in the provider, or not requested.
        reason: String,
    },
    /// The peer is not in the endpoint's table.
    UnknownPeer(PeerId),
    /// The connection to the peer was lost earlier; remove and insert it again to
    /// reconnect.
    PeerDown {
        /// The peer.
        peer: PeerId,
        /// What ended the connection.
        cause: String,
    },
    /// A memory region from another domain.
    ForeignRegion,
    /// The memory region was closed (its handle dropped).
    RegionClosed,
    /// Posted outside the zerorx worker the endpoint belongs to (e.g. after
    /// `block_on` returned).
    NotInRuntime,
    /// The endpoint is closed.
    Closed,
}

impl fmt::Display for PostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PostError::QueueFull { queue, depth } => write!(
                f,
                "{queue:?} queue full: {depth} operations (the declared depth) await their \
                 completions being taken; poll the completion queue or raise the depth"
            ),
            PostError::LocalRange {
                offset,
                len,
                region_len,
            } => write!(
                f,
                "local range {offset}..{} is outside the region of {region_len} bytes",
                offset + len
            ),
            PostError::LocalAccess { need, have } => write!(
                f,
                "the local region needs {need} access for this operation but was registered \
                 with {have}"
            ),
            PostError::RemoteRange {
                key,
                offset,
                len,
                limit,
            } => write!(
                f,
                "RMA of {len} bytes at offset {offset} passes the end of remote key {key:#x}, \
                 which grants {limit} bytes"
            ),
            PostError::RemoteAccess { key, need, have } => write!(
                f,
                "remote key {key:#x} grants {have}, the operation needs {need}"
            ),
            PostError::TooLarge { len, max } => {
                write!(
                    f,
                    "{len} bytes is larger than the maximum message size {max}"
                )
            }
            PostError::Unsupported { cap, reason } => write!(f, "{cap} unavailable: {reason}"),
            PostError::UnknownPeer(p) => write!(f, "{p} is not in the endpoint's peer table"),
            PostError::PeerDown { peer, cause } => write!(
                f,
                "the connection to {peer} was lost ({cause}); remove and insert the peer to \
                 reconnect"
            ),
            PostError::ForeignRegion => f.write_str("the memory region belongs to another domain"),
            PostError::RegionClosed => f.write_str("the memory region was closed"),
            PostError::NotInRuntime => {
                f.write_str("posted outside the zerorx worker that owns the endpoint")
            }
            PostError::Closed => f.write_str("the endpoint is closed"),
        }
    }
}

impl std::error::Error for PostError {}

/// Why the target refused an RMA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessFault {
    /// The key was never granted by the target.
    BadKey,
    /// The key was revoked (or its region deregistered).
    StaleKey,
    /// The range passes the end of the granted range.
    OutOfBounds {
        /// Offset asked.
        offset: u64,
        /// Length asked.
        len: u64,
        /// Granted length.
        limit: u64,
    },
    /// The key does not grant this access.
    NoAccess {
        /// What the operation needed.
        need: Access,
    },
}

impl fmt::Display for AccessFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AccessFault::BadKey => f.write_str("the target never granted this key"),
            AccessFault::StaleKey => f.write_str("the key was revoked at the target"),
            AccessFault::OutOfBounds { offset, len, limit } => write!(
                f,
                "{len} bytes at offset {offset} pass the granted {limit} bytes"
            ),
            AccessFault::NoAccess { need } => write!(f, "the key does not grant {need}"),
        }
    }
}

/// Why a posted operation failed; inline in its completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpError {
    /// The message was longer than the posted receive; the first `posted` bytes were
    /// placed.
    Truncated {
        /// The message length, when the provider reports it.
        needed: Option<usize>,
        /// The posted length.
        posted: usize,
    },
    /// Cancelled (by [`Endpoint::cancel`](super::Endpoint::cancel), peer removal or
    /// endpoint close).
    Canceled,
    /// A probe found no waiting message that matches, or a claimed receive named no
    /// message claimed by that probe.
    NoMessage,
    /// The target refused the RMA; the connection stays up.
    RemoteAccess {
        /// The key used.
        key: u64,
        /// Why.
        fault: AccessFault,
    },
    /// The connection to the peer was lost before the operation completed.
    ConnectionLost {
        /// The peer, when known.
        peer: Option<PeerId>,
        /// What ended it.
        cause: String,
    },
    /// A provider error that maps to nothing above; raw codes kept for logs.
    Provider {
        /// Provider name.
        provider: String,
        /// The (absolute) error code.
        code: i32,
        /// The provider-specific error number.
        prov_errno: i32,
        /// The provider's text.
        text: String,
    },
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpError::Truncated { needed, posted } => match needed {
                Some(n) => write!(f, "message of {n} bytes truncated to the posted {posted}"),
                None => write!(f, "message truncated to the posted {posted} bytes"),
            },
            OpError::Canceled => f.write_str("cancelled"),
            OpError::NoMessage => f.write_str("no waiting message matches"),
            OpError::RemoteAccess { key, fault } => {
                write!(f, "target refused RMA with key {key:#x}: {fault}")
            }
            OpError::ConnectionLost { peer, cause } => match peer {
                Some(p) => write!(f, "connection to {p} lost: {cause}"),
                None => write!(f, "connection lost: {cause}"),
            },
            OpError::Provider {
                provider,
                code,
                prov_errno,
                text,
            } => write!(
                f,
                "{provider}: {text} (code {code}, provider errno {prov_errno})"
            ),
        }
    }
}

impl std::error::Error for OpError {}
