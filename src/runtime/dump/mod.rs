//! The runtime's state dump ([`Handle::dump`](crate::Handle::dump)): per worker its
//! ring, every op in flight, its tasks and what each waits on, timers and receive
//! pools; per process the open fds and sockets. For the question "this connection has
//! not finished: what is it waiting on?".
//!
//! Each worker builds its own part between two loop turns ([`collect`]), so nothing
//! is locked while it runs and a worker never reads another's state; the kernel's view
//! of each ring and the process's fds come from `/proc` ([`kernel`]). Costs nothing
//! until asked for, besides a coarse stamp per op (see the driver's `inspect`).

mod blocking;
pub(crate) mod collect;
pub(crate) mod kernel;
mod signal;
mod text;
mod values;

pub use crate::driver::inspect::{IoUringOp, OpState};
pub use blocking::{BlockingDump, BlockingJobDump};
pub use signal::DumpSignal;
pub use values::{
    DumpStatus, FdinfoField, FdinfoValue, NicNote, PoolKind, RingFlag, SocketAddrs, TaskId,
    WorkerPart,
};

use serde::{Deserialize, Serialize};

/// A snapshot of a runtime's state. Its `Display` is the text `zerorx serve` prints
/// on `SIGUSR2`; it is also `Serialize` (JSON for tools, with a typed value wherever
/// the text has words: a worker's [`DumpStatus`], an op's [`IoUringOp`] and
/// [`OpState`], [`TaskId`]s, [`SocketAddrs`], a pool's [`PoolKind`]...).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RuntimeDump {
    /// The process as a whole.
    pub process: ProcessState,
    /// One entry per worker, in worker order.
    pub workers: Vec<WorkerDump>,
    /// The NIC queues the zero-copy pools are bound to, as the kernel's netdev
    /// netlink family shows them; empty with [`nic_note`](Self::nic_note) saying why.
    #[serde(default)]
    pub nic_queues: Vec<NicQueueDump>,
    /// Why there are no NIC queues to show (copy mode, device-less instances).
    #[serde(default)]
    pub nic_note: Option<NicNote>,
    /// The blocking pool: its threads, running and queued jobs.
    #[serde(default)]
    pub blocking: BlockingDump,
}

/// A NIC receive queue a zero-copy pool is bound to, from the kernel's side.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NicQueueDump {
    /// The interface.
    pub interface: String,
    /// The queue.
    pub queue: u32,
    /// Its NAPI instance.
    pub napi_id: Option<u32>,
    /// The kernel lists an io_uring memory provider on the queue.
    pub io_uring_bound: bool,
    /// The page pools serving the queue's NAPI instance.
    pub page_pools: Vec<PagePoolDump>,
    /// What the kernel would not say (netlink errors).
    pub error: Option<String>,
}

/// A page pool serving a NIC queue, as the kernel's netdev family lists it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PagePoolDump {
    /// The kernel's id for it.
    pub id: u64,
    /// Pages (or net_iovs) handed out and not yet back.
    pub inflight: u64,
    /// Their bytes.
    pub inflight_bytes: u64,
    /// An io_uring memory provider (a ZCRX area) feeds it.
    pub io_uring: bool,
    /// The driver has let go of it; it waits for its memory to come back.
    pub detached: bool,
}

/// Process-wide figures (from `/proc/self`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProcessState {
    /// Open file descriptors.
    pub open_fds: usize,
    /// Of them, sockets.
    pub sockets: usize,
    /// Resident memory, in bytes.
    pub rss_bytes: Option<u64>,
}

/// One worker's part of a dump.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WorkerDump {
    /// The worker's index.
    pub index: usize,
    /// Whether it answered, and what its answer lacks: with no answer the rest is
    /// empty, with a partial one the parts it names are.
    pub status: DumpStatus,
    /// The worker's ring.
    pub ring: Option<RingDump>,
    /// Unfinished tasks owned by the worker.
    pub tasks: usize,
    /// Of them, queued to run.
    pub queued: usize,
    /// The tasks not queued, each with what it waits on.
    pub waiting: Vec<TaskDump>,
    /// Every op in flight on the ring, oldest first.
    pub ops: Vec<OpDump>,
    /// The worker's timers.
    pub timers: TimersDump,
    /// The receive pools the worker receives into.
    pub pools: Vec<PoolDump>,
    /// Receives parked until a pool gives buffers back (copy, zero-copy, datagram).
    pub receives_waiting_for_buffers: usize,
    /// How long (ms) the worker's pools have been dry with the application holding
    /// their buffers, so that streams receive into ordinary memory; `None` while they
    /// are not.
    #[serde(default)]
    pub pools_held_ms: Option<u64>,
    /// The worker's zero-copy sends and registered send memory.
    #[serde(default)]
    pub sends: SendsDump,
}

/// A worker's zero-copy sends (`zerorx::SendZeroCopy`) and its registered send arena.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SendsDump {
    /// Sends that went out zero-copy.
    pub zero_copy: u64,
    /// Zero-copy submissions that named registered memory.
    #[serde(default)]
    pub registered: u64,
    /// Of them, those the kernel copied after all.
    pub copied: u64,
    /// Sockets whose sends went plain (copied, refused, or a peer on this host).
    pub sockets_plain: u64,
    /// Memory registered for sends (`register_send_memory`) whose owner lives.
    #[serde(default)]
    pub registered_memory: usize,
    /// The registered send arena's chunks: `(free, in all)`; `None` before the
    /// worker's first `RegisteredBuf`.
    pub arena_chunks: Option<(usize, usize)>,
}

/// A ring: the user side's view and the kernel's (`/proc/self/fdinfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RingDump {
    /// The ring's fd.
    pub fd: i32,
    /// Setup flags in force.
    pub flags: Vec<RingFlag>,
    /// SQ size.
    pub sq_entries: usize,
    /// SQEs queued, not yet submitted.
    pub sq_pending: usize,
    /// CQ size.
    pub cq_entries: usize,
    /// CQEs posted, not yet reaped.
    pub cq_ready: usize,
    /// Completions the kernel could not post (the CQ ring's overflow count).
    pub cq_overflow: u32,
    /// Loop turns that found the CQ overflowed and flushed it.
    pub cq_overflow_flushes: u64,
    /// SQEs the kernel dropped as invalid.
    pub sq_dropped: u32,
    /// Loop turns so far.
    pub loop_turns: u64,
    /// The kernel's own account of the ring (`/proc/self/fdinfo/FD`: `SqHead`,
    /// `CqTail`, `UserBufs`, ... and the lengths of its lists), in its order; empty
    /// when it could not be read.
    pub kernel: Vec<FdinfoField>,
}

/// An op in flight.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OpDump {
    /// Which `IORING_OP_*` it is.
    pub opcode: IoUringOp,
    /// Where it is in its life.
    pub state: OpState,
    /// Whether it posts several completions.
    pub multishot: bool,
    /// The fd it works on.
    pub fd: Option<i32>,
    /// For a socket fd: its addresses.
    pub socket: Option<SocketAddrs>,
    /// Time since submission, in milliseconds (10 ms resolution).
    pub age_ms: u64,
    /// The task waiting on it, if one is.
    pub task: Option<TaskId>,
}

/// A task that is not queued to run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskDump {
    /// The task.
    pub id: TaskId,
    /// What it waits on: its ops (by index into [`WorkerDump::ops`]) and timers; a
    /// task with neither waits on another task, a channel or a wake-up from
    /// elsewhere.
    pub ops: Vec<usize>,
    /// Its pending timers, each as milliseconds until due (negative: overdue).
    pub timers_ms: Vec<i64>,
}

/// A worker's timers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TimersDump {
    /// Timers not yet fired.
    pub pending: usize,
    /// Milliseconds until the nearest one (negative: overdue).
    pub next_ms: Option<i64>,
}

/// A receive pool and who holds its chunks.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PoolDump {
    /// Which pool.
    pub kind: PoolKind,
    /// Chunks (buffers) the pool has.
    pub chunks: u64,
    /// Held by the kernel: free for it to receive into.
    pub kernel: u64,
    /// Held by the application (live `RxBuf`s).
    pub user: u64,
    /// Dropped, not yet given back to the kernel.
    pub returns_pending: u64,
    /// The most the application held at once.
    pub high_water: u64,
    /// Bytes of ordinary memory that receives made while the pool was held hold now
    /// (see [`Builder::receive_memory_limit`](crate::Builder::receive_memory_limit)).
    #[serde(default)]
    pub overflow_held: u64,
    /// Receives made into ordinary memory so far.
    #[serde(default)]
    pub overflow_receives: u64,
}
