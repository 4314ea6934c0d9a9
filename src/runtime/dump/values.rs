//! The typed values a dump's fields hold where words would otherwise stand for them
//! (a worker's status, a task's id, a socket's addresses, a pool's kind, the ring's
//! flags, the kernel's fdinfo figures), each with the words the text dump shows for
//! it. A tool reading the JSON matches on these; the text is their `Display`.

use serde::{Deserialize, Serialize};
use std::fmt::{self, Display, Formatter};
use std::net::SocketAddr;

/// Whether a worker answered the dump, and how much of it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum DumpStatus {
    /// Everything was collected.
    #[default]
    Answered,
    /// The worker answered, but these parts of its state were borrowed (by the task
    /// that asked, dumping its own worker) and are left out; the rest is there.
    Partial {
        /// What was left out.
        busy: Vec<WorkerPart>,
    },
    /// The worker did not answer in time: a task that does not yield, or worker 0
    /// while no thread is in `block_on`.
    NoAnswer {
        /// How long the dump waited, in milliseconds.
        waited_ms: u64,
    },
    /// The worker has shut down.
    ShutDown,
    /// The thread of the worker that asked left the runtime before it could answer.
    LeftRuntime,
}

impl DumpStatus {
    /// Whether the worker answered at all (fully or partly): its tasks, timers and
    /// pools are in the dump, save the [`Partial`](Self::Partial) parts.
    pub fn answered(&self) -> bool {
        matches!(self, DumpStatus::Answered | DumpStatus::Partial { .. })
    }

    /// Whether `part` is in the dump.
    pub fn has(&self, part: WorkerPart) -> bool {
        match self {
            DumpStatus::Answered => true,
            DumpStatus::Partial { busy } => !busy.contains(&part),
            _ => false,
        }
    }
}

impl Display for DumpStatus {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            DumpStatus::Answered => f.write_str("answered"),
            DumpStatus::Partial { busy } => {
                let parts: Vec<String> = busy.iter().map(ToString::to_string).collect();
                write!(f, "partial: {}", parts.join(", "))
            }
            DumpStatus::NoAnswer { waited_ms } => write!(
                f,
                "no answer within {:.1} s: a task that does not yield, or worker 0 while no \
                 thread is in block_on",
                *waited_ms as f64 / 1000.0
            ),
            DumpStatus::ShutDown => f.write_str("the worker has shut down"),
            DumpStatus::LeftRuntime => f.write_str("its thread left the runtime"),
        }
    }
}

/// A part of a worker's state a dump can miss.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum WorkerPart {
    /// The driver: the ring and the ops in flight.
    Driver,
    /// The timers.
    Timers,
    /// The task registry: the tasks and what they wait on.
    Tasks,
}

impl Display for WorkerPart {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WorkerPart::Driver => "the driver was busy",
            WorkerPart::Timers => "the timers were busy",
            WorkerPart::Tasks => "the task registry was busy",
        })
    }
}

/// A task: its worker and its key in that worker's registry. Shown as `w1#17`
/// (`w1#-` for a task that has left its registry).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskId {
    /// The worker that owns it.
    pub worker: usize,
    /// Its key in the worker's registry; `None` once it has left it.
    pub key: Option<u32>,
}

impl TaskId {
    /// Worker `worker`'s task with registry key `key`.
    pub fn new(worker: usize, key: Option<u32>) -> TaskId {
        TaskId { worker, key }
    }
}

impl Display for TaskId {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self.key {
            Some(k) => write!(f, "w{}#{k}", self.worker),
            None => write!(f, "w{}#-", self.worker),
        }
    }
}

/// A socket's addresses. Shown as `local -> peer`, or `local` alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SocketAddrs {
    /// The local address.
    pub local: SocketAddr,
    /// The peer's: `None` for a listener, an unconnected socket, or one whose peer
    /// has reset.
    pub peer: Option<SocketAddr>,
}

impl SocketAddrs {
    /// `local`, connected to `peer` if it is.
    pub fn new(local: SocketAddr, peer: Option<SocketAddr>) -> SocketAddrs {
        SocketAddrs { local, peer }
    }
}

impl Display for SocketAddrs {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self.peer {
            Some(peer) => write!(f, "{} -> {peer}", self.local),
            None => write!(f, "{}", self.local),
        }
    }
}

/// What kind of receive pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum PoolKind {
    /// The copy pool TCP streams receive into (a provided-buffer ring).
    #[default]
    Copy,
    /// The pool UDP sockets receive into.
    Datagram,
    /// A zero-copy (ZCRX) instance the worker registered.
    ZeroCopy,
    /// A zero-copy instance another worker registered, which this one imported.
    ZeroCopyImported,
}

impl Display for PoolKind {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PoolKind::Copy => "copy",
            PoolKind::Datagram => "datagram",
            PoolKind::ZeroCopy => "zero-copy",
            PoolKind::ZeroCopyImported => "zero-copy (imported)",
        })
    }
}

/// A ring setup flag in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum RingFlag {
    /// `IORING_SETUP_DEFER_TASKRUN`.
    DeferTaskrun,
    /// `IORING_SETUP_COOP_TASKRUN`.
    CoopTaskrun,
    /// `IORING_SETUP_CQE32`.
    Cqe32,
    /// NAPI busy polling registered on the ring.
    Napi,
}

impl Display for RingFlag {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RingFlag::DeferTaskrun => "DEFER_TASKRUN",
            RingFlag::CoopTaskrun => "COOP_TASKRUN",
            RingFlag::Cqe32 => "CQE32",
            RingFlag::Napi => "NAPI",
        })
    }
}

/// One line of the kernel's `/proc/self/fdinfo` account of a ring.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FdinfoField {
    /// The kernel's name for it (`SqHead`, `CqTail`, `UserBufs`, `PollList`, ...).
    pub key: String,
    /// Its value.
    pub value: FdinfoValue,
}

impl Display for FdinfoField {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.key, self.value)
    }
}

/// The value of an fdinfo line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FdinfoValue {
    /// A number the kernel writes in decimal (a head, a tail, a count, `-1`).
    Number(i64),
    /// A number the kernel writes in hex (the masks).
    Hex(u64),
    /// A list (the poll list, the overflow list, the registered files and buffers):
    /// how many entries it holds.
    Entries(u64),
    /// Anything else, as the kernel wrote it (`NAPI disabled`).
    Text(String),
}

impl FdinfoValue {
    /// The value of a line whose text after the colon is `text` (not empty: an
    /// empty one starts a list).
    pub(crate) fn parse(text: &str) -> FdinfoValue {
        if let Ok(n) = text.parse::<i64>() {
            return FdinfoValue::Number(n);
        }
        if let Some(n) = text
            .strip_prefix("0x")
            .and_then(|h| u64::from_str_radix(h, 16).ok())
        {
            return FdinfoValue::Hex(n);
        }
        FdinfoValue::Text(text.to_owned())
    }
}

impl Display for FdinfoValue {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            FdinfoValue::Number(n) => write!(f, "{n}"),
            FdinfoValue::Hex(n) => write!(f, "{n:#x}"),
            FdinfoValue::Entries(n) => write!(f, "entries {n}"),
            FdinfoValue::Text(t) => f.write_str(t),
        }
    }
}

/// Why a dump shows no NIC queues.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum NicNote {
    /// The runtime receives in copy mode: no ZCRX queue is bound.
    CopyMode,
    /// Device-less ZCRX instances, on no NIC.
    DeviceLess {
        /// How many.
        instances: usize,
    },
}

impl Display for NicNote {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            NicNote::CopyMode => f.write_str("no ZCRX queue bound (copy mode)"),
            NicNote::DeviceLess { instances } => write!(
                f,
                "no ZCRX queue bound: {instances} device-less instances, on no NIC"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_value_reads_as_the_text_dump_always_did() {
        assert_eq!(TaskId::new(1, Some(17)).to_string(), "w1#17");
        assert_eq!(TaskId::new(0, None).to_string(), "w0#-");
        let local: SocketAddr = "127.0.0.1:9000".parse().unwrap();
        let peer: SocketAddr = "127.0.0.1:5555".parse().unwrap();
        assert_eq!(
            SocketAddrs::new(local, Some(peer)).to_string(),
            "127.0.0.1:9000 -> 127.0.0.1:5555"
        );
        assert_eq!(SocketAddrs::new(local, None).to_string(), "127.0.0.1:9000");
        assert_eq!(
            PoolKind::ZeroCopyImported.to_string(),
            "zero-copy (imported)"
        );
        let fields = [
            ("SqMask", FdinfoValue::parse("0xff"), "SqMask 0xff"),
            ("SqThread", FdinfoValue::parse("-1"), "SqThread -1"),
            ("PollList", FdinfoValue::Entries(2), "PollList entries 2"),
            ("NAPI", FdinfoValue::parse("disabled"), "NAPI disabled"),
        ];
        for (key, value, text) in fields {
            let field = FdinfoField {
                key: key.into(),
                value,
            };
            assert_eq!(field.to_string(), text);
        }
        assert_eq!(
            DumpStatus::NoAnswer { waited_ms: 300 }.to_string(),
            "no answer within 0.3 s: a task that does not yield, or worker 0 while no \
             thread is in block_on"
        );
        assert_eq!(
            DumpStatus::Partial {
                busy: vec![WorkerPart::Driver, WorkerPart::Timers]
            }
            .to_string(),
            "partial: the driver was busy, the timers were busy"
        );
    }

    #[test]
    fn a_partial_status_says_which_parts_are_there() {
        let s = DumpStatus::Partial {
            busy: vec![WorkerPart::Driver],
        };
        assert!(s.answered());
        assert!(!s.has(WorkerPart::Driver));
        assert!(s.has(WorkerPart::Tasks) && s.has(WorkerPart::Timers));
        assert!(!DumpStatus::ShutDown.answered());
        assert!(!DumpStatus::ShutDown.has(WorkerPart::Tasks));
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            serde_json::json!({"kind": "partial", "busy": ["driver"]})
        );
    }
}
