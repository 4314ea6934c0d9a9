//! What the harness's server counts, per worker, and the snapshot it reports to the
//! harness (one JSON line per request on its control channel).

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

macro_rules! counters {
    ($($(#[doc = $doc:literal])+ $name:ident),* $(,)?) => {
        /// The live counters of one server worker.
        #[derive(Debug, Default)]
        pub struct Counters {
            $($(#[doc = $doc])+ pub $name: AtomicU64,)*
        }

        /// A copy of one server worker's counters.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
        pub struct CounterSnapshot {
            $($(#[doc = $doc])+ #[serde(default)] pub $name: u64,)*
        }

        impl Counters {
            /// Copies every counter.
            pub fn snapshot(&self) -> CounterSnapshot {
                CounterSnapshot { $($name: self.$name.load(Relaxed),)* }
            }
        }

        impl CounterSnapshot {
            /// Sums two snapshots field by field.
            pub fn plus(&self, o: &CounterSnapshot) -> CounterSnapshot {
                CounterSnapshot { $($name: self.$name + o.$name,)* }
            }
        }
    };
}

counters! {
    /// Connections accepted.
    accepted,
    /// Connections open now.
    open,
    /// Open connections waiting for a send to finish (their peer is not reading).
    sending,
    /// Requests (frames) received.
    requests,
    /// Bytes received.
    bytes_in,
    /// Bytes sent.
    bytes_out,
    /// Requests whose frame spanned receive buffers and was copied together.
    assembled,
    /// Connections that ended cleanly (end of stream between frames).
    clean_closes,
    /// Connections that ended in the middle of a frame (reset or end of stream).
    truncated,
    /// Connections whose receive failed between frames (reset by the peer).
    resets,
    /// Frames with a bad magic, version or kind (the connection is closed).
    malformed,
    /// Frames announcing a payload over the limit (closed before any allocation).
    oversized,
    /// Requests whose CRC did not match (answered with a rejection).
    bad_checksum,
    /// Connections closed without having sent a byte.
    silent,
    /// Connections closed by the idle timeout.
    idle_timeouts,
    /// Replies that could not be sent (peer gone or stopped reading).
    send_errors,
    /// Connections reset by the peer before they were accepted (`ECONNABORTED`, or
    /// `ENOTCONN` when the accepted socket has no peer any more).
    aborted_before_accept,
    /// Accepts that failed otherwise (e.g. out of file descriptors).
    accept_errors,
}

/// How the server's runtime receives.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModeInfo {
    /// `zero-copy` or `copy`.
    pub mode: String,
    /// Why, in words.
    pub reason: String,
    /// The runtime's tunable settings, each with where it came from
    /// (`threads 2 (code)`, `wake msg-ring (environment)`).
    #[serde(default)]
    pub tuning: Vec<String>,
}

/// The runtime figures of one worker the report uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeFigures {
    /// Event loop turns.
    pub loop_turns: u64,
    /// `io_uring_enter` calls.
    pub enter_calls: u64,
    /// Completions reaped.
    pub cqes: u64,
    /// Times the submission queue was full.
    pub sq_full: u64,
    /// Times the completion queue overflowed.
    pub cq_overflows: u64,
    /// Receives that ran out of pool buffers and were re-armed.
    pub recv_enobufs: u64,
    /// Operations leaked at shutdown.
    pub leaked_ops: u64,
    /// Receives re-armed after a recoverable end, by reason.
    #[serde(default)]
    pub rearms: RearmFigures,
    /// Streams that fell back to copy receives because their flow arrived on a queue
    /// bound to another zero-copy instance (`EFAULT`).
    #[serde(default)]
    pub recv_steering_fallbacks: u64,
    /// Streams whose receives another worker serves and hands over.
    #[serde(default)]
    pub recv_handovers: u64,
    /// Receives made into ordinary memory while the pool's buffers were held.
    #[serde(default)]
    pub recv_overflows: u64,
    /// Receives that failed at the receive memory limit.
    #[serde(default)]
    pub recv_memory_refusals: u64,
    /// Zero-copy receives restarted because the kernel (Linux 7.1) may have left them
    /// parked on a dry area.
    #[serde(default)]
    pub recv_zc_restarts: u64,
    /// Queued sends that went out zero-copy (`zerorx::SendZeroCopy`).
    #[serde(default)]
    pub send_zc: u64,
    /// Of them, those whose notification said the kernel copied after all.
    #[serde(default)]
    pub send_zc_copied: u64,
    /// Sockets switched to plain sends (the kernel copied or refused, or the peer is
    /// this host).
    #[serde(default)]
    pub send_zc_off: u64,
}

/// Receive re-arms by reason (`zerorx::RearmCounts`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RearmFigures {
    /// `ENOBUFS`: the copy pool was empty.
    pub no_buffers: u64,
    /// `ENOSPC`: the completion queue was full.
    pub cq_full: u64,
    /// `ENOMEM`: the zero-copy copy fall-back found no free chunk.
    pub no_free_chunk: u64,
    /// `EINTR`.
    pub interrupted: u64,
    /// The kernel ended the multishot after data on its own.
    pub ended: u64,
    /// The byte budget was used up.
    pub budget: u64,
}

impl From<zerorx::WorkerMetricsSnapshot> for RuntimeFigures {
    fn from(m: zerorx::WorkerMetricsSnapshot) -> Self {
        RuntimeFigures {
            loop_turns: m.loop_turns,
            enter_calls: m.enter_calls,
            cqes: m.cqes,
            sq_full: m.sq_full,
            cq_overflows: m.cq_overflows,
            recv_enobufs: m.recv_enobufs,
            leaked_ops: m.leaked_ops,
            rearms: RearmFigures {
                no_buffers: m.rearms.no_buffers,
                cq_full: m.rearms.cq_full,
                no_free_chunk: m.rearms.no_free_chunk,
                interrupted: m.rearms.interrupted,
                ended: m.rearms.ended,
                budget: m.rearms.budget,
            },
            recv_steering_fallbacks: m.recv_steering_fallbacks,
            recv_handovers: m.recv_handovers,
            recv_overflows: m.recv_overflows,
            recv_memory_refusals: m.recv_memory_refusals,
            recv_zc_restarts: m.recv_zc_restarts,
            send_zc: m.send_zc,
            send_zc_copied: m.send_zc_copied,
            send_zc_off: m.send_zc_off,
        }
    }
}

/// The receive pool figures of one worker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolFigures {
    /// Buffers (chunks) the pool owns.
    pub chunks_total: u64,
    /// Buffers held by the application now.
    pub in_use: u64,
    /// Most buffers held at once.
    pub high_water: u64,
    /// Buffers dropped but not yet handed back to the kernel.
    pub returns_pending: u64,
    /// Data completions (received chunks).
    #[serde(default)]
    pub completions: u64,
    /// Bytes received through the pool.
    pub bytes: u64,
    /// Bytes placed by the NIC without a CPU copy.
    pub zero_copy_bytes: u64,
    /// Bytes the kernel copied.
    pub copied_bytes: u64,
    /// Receives ended because no buffer was free.
    pub enobufs: u64,
    /// Zero-copy receives ended because the completion queue was full.
    pub enospc: u64,
    /// Zero-copy receives ended because the copy fallback found no chunk.
    pub enomem: u64,
    /// Receives re-armed after a recoverable end.
    pub rearms: u64,
    /// Copied bytes by the kernel's own count (zero-copy instances on Linux 7.2+).
    #[serde(default)]
    pub kernel_copy_bytes: u64,
    /// `ZCRX_EVENT_COPY` events received (each re-armed).
    #[serde(default)]
    pub copy_events: u64,
    /// `ZCRX_EVENT_ALLOC_FAIL` events: the NIC found the area dry.
    #[serde(default)]
    pub alloc_fail_events: u64,
    /// Bytes of ordinary memory that receives made while the pool was held hold now.
    #[serde(default)]
    pub overflow_held: u64,
}

impl From<zcrx::PoolStatsSnapshot> for PoolFigures {
    fn from(p: zcrx::PoolStatsSnapshot) -> Self {
        PoolFigures {
            chunks_total: p.chunks_total,
            in_use: p.in_use,
            high_water: p.high_water,
            returns_pending: p.returns_pending,
            completions: p.completions,
            bytes: p.bytes,
            zero_copy_bytes: p.zero_copy_bytes,
            copied_bytes: p.copied_bytes,
            enobufs: p.enobufs,
            enospc: p.enospc,
            enomem: p.enomem,
            rearms: p.rearms,
            kernel_copy_bytes: p.kernel_copy_bytes,
            copy_events: p.copy_events,
            alloc_fail_events: p.alloc_fail_events,
            overflow_held: p.overflow_held,
        }
    }
}

/// One server worker.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerFigures {
    /// Worker index.
    pub worker: usize,
    /// What the server counted.
    pub counters: CounterSnapshot,
    /// What the runtime counted.
    pub runtime: RuntimeFigures,
    /// The worker's receive pool.
    pub pool: Option<PoolFigures>,
    /// The zero-copy instance this worker registered (owners only: an importer
    /// receives into its owner's, counted there).
    #[serde(default)]
    pub zc_pool: Option<PoolFigures>,
}

/// Generates [`RpcCounters`]: one field per counter of `zerorx_thrift::ServerStats`,
/// each read from the field of that name, so a counter renamed there is a compile
/// error here (and `every_counter_of_the_server_is_here` finds one added there).
macro_rules! rpc_counters {
    ($($(#[doc = $doc:literal])+ $name:ident),* $(,)?) => {
        /// The Thrift server's counters, by field. No field has a default: a snapshot
        /// that lacks one (a server with a counter renamed) fails to parse instead of
        /// reading as zero.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
        pub struct RpcCounters {
            $($(#[doc = $doc])+ pub $name: u64,)*
            /// Connections reset in the accept queue (the runtime's count:
            /// `TcpListener::accept` skips them, so the Thrift server never sees them).
            pub accept_reset: u64,
        }

        impl RpcCounters {
            /// The server's counters, beside the runtime's count of connections reset
            /// before they were accepted.
            pub fn new(s: &zerorx_thrift::ServerStats, accept_reset: u64) -> RpcCounters {
                RpcCounters { $($name: s.$name,)* accept_reset }
            }
        }
    };
}

rpc_counters! {
    /// Connections accepted.
    connections_accepted,
    /// Connections open now.
    connections_active,
    /// Connections closed at once: the worker had its most connections.
    connections_rejected,
    /// Requests (calls and oneway) read.
    requests,
    /// Oneway requests read.
    oneway_requests,
    /// Replies sent.
    replies,
    /// `UnknownMethod` exceptions sent (or oneway requests dropped).
    unknown_method,
    /// Requests whose arguments were not the method's.
    bad_args,
    /// Bytes that are not valid Thrift (the connection closed).
    protocol_errors,
    /// Requests with a message type other than call or oneway.
    invalid_message_type,
    /// Handlers that returned an error.
    handler_errors,
    /// Handlers that panicked.
    handler_panics,
    /// Replies over the frame limit.
    reply_too_large,
    /// Frames or unframed messages over the size limit.
    frames_too_large,
    /// Connections closed by the peer inside a message.
    truncated,
    /// Connections closed by the idle timeout.
    idle_timeouts,
    /// Connections closed by the write timeout.
    write_timeouts,
    /// Connections ended by a socket error.
    io_errors,
    /// Connections closed at the worker's receive memory limit.
    receive_memory_closes,
    /// Times a connection stopped reading at its in-flight limit.
    in_flight_waits,
    /// Requests assembled from several receive buffers.
    frames_copied,
    /// Bytes in those requests.
    bytes_copied,
    /// Partial requests copied out because the pool ran low.
    pressure_spills,
    /// Connections closed by a graceful drain.
    drained,
    /// Connections still busy at the drain deadline.
    drain_aborted,
    /// Accept errors.
    accept_errors,
}

/// The Thrift server's own counters, its settings the harness depends on, and the
/// `fire` calls it processed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RpcFigures {
    /// Its counters.
    pub counters: RpcCounters,
    /// `fire` calls processed.
    pub fired: i64,
    /// Requests a connection reads before earlier ones are answered (its
    /// `ServerConfig::max_in_flight`): what a client that never reads makes it hold.
    pub max_in_flight: usize,
}

/// Everything the server reports about itself.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerSnapshot {
    /// Process id.
    pub pid: u32,
    /// How received bytes reach the server.
    pub receive_mode: ModeInfo,
    /// The Thrift server's counters (Thrift service only).
    #[serde(default)]
    pub rpc: Option<RpcFigures>,
    /// Per worker.
    pub workers: Vec<WorkerFigures>,
}

impl ServerSnapshot {
    /// Connections the server has open: the Thrift server's count, or the frame
    /// server's summed over workers.
    pub fn open_connections(&self) -> u64 {
        match &self.rpc {
            Some(r) => r.counters.connections_active,
            None => self.totals().open,
        }
    }

    /// Whether the server has let go of everything a run gave it: no connection
    /// open, every receive buffer back in its pool.
    pub fn quiet(&self) -> bool {
        self.open_connections() == 0 && self.buffers_held() == 0
    }

    /// The counters summed over workers.
    pub fn totals(&self) -> CounterSnapshot {
        self.workers
            .iter()
            .fold(CounterSnapshot::default(), |a, w| a.plus(&w.counters))
    }

    /// Receive buffers not back in their pools: held by the application or dropped
    /// and not yet handed to the kernel, over every copy pool and zero-copy instance.
    pub fn buffers_held(&self) -> u64 {
        self.workers
            .iter()
            .flat_map(|w| [w.pool, w.zc_pool])
            .flatten()
            .map(|p| p.in_use + p.returns_pending)
            .sum()
    }

    /// Bytes of ordinary memory that receives made while the pools were held still
    /// hold (they are freed, not returned).
    pub fn overflow_held(&self) -> u64 {
        self.workers
            .iter()
            .filter_map(|w| w.pool)
            .map(|p| p.overflow_held)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A snapshot whose server calls the open-connection count something else (a
    /// counter renamed on one side) must not read as "no connection open": every
    /// quiesce check would pass at once.
    #[test]
    fn a_counter_the_server_does_not_send_is_an_error_not_a_zero() {
        let renamed = r#"{"counters":{"connections_open":3,"connections_accepted":3},"fired":0,
                          "max_in_flight":128}"#;
        let parsed = serde_json::from_str::<RpcFigures>(renamed);
        assert!(parsed.is_err(), "{parsed:?}");
    }

    /// Every counter `ServerStats` lists is a field here, by the same name.
    #[test]
    fn every_counter_of_the_server_is_here() {
        let stats = zerorx_thrift::ServerStats::default();
        let json = serde_json::to_value(RpcCounters::new(&stats, 0)).expect("json");
        let mut ours: Vec<&str> = json
            .as_object()
            .expect("an object")
            .keys()
            .map(String::as_str)
            .filter(|k| *k != "accept_reset")
            .collect();
        let mut theirs: Vec<&str> = stats.fields().into_iter().map(|(k, _)| k).collect();
        ours.sort_unstable();
        theirs.sort_unstable();
        assert_eq!(ours, theirs);
    }
}
