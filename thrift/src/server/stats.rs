//! Server counters: one set per worker, written only by that worker, summed into a
//! [`ServerStats`] snapshot readable from any thread.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

macro_rules! counters {
    ($( $(#[$doc:meta])* $name:ident ),* $(,)?) => {
        /// The live counters of one worker's share of a server.
        #[derive(Debug, Default)]
        pub(crate) struct WorkerStats {
            $( pub(crate) $name: AtomicU64, )*
        }

        /// A snapshot of a server's counters, summed over its workers. Independent
        /// `Relaxed` counters, not a consistent cut.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        #[non_exhaustive]
        pub struct ServerStats {
            $( $(#[$doc])* pub $name: u64, )*
        }

        impl ServerStats {
            fn add(&mut self, w: &WorkerStats) {
                $( self.$name += w.$name.load(Relaxed); )*
            }

            /// `(name, value)` of every counter, for reports.
            pub fn fields(&self) -> Vec<(&'static str, u64)> {
                vec![$( (stringify!($name), self.$name), )*]
            }
        }
    };
}

counters! {
    /// Connections accepted.
    connections_accepted,
    /// Connections open now.
    connections_active,
    /// Connections closed at once because the worker had `max_connections_per_worker`.
    connections_rejected,
    /// Requests (calls and oneway) read.
    requests,
    /// Oneway requests read.
    oneway_requests,
    /// Replies (results, declared exceptions and `TApplicationException`s) queued on
    /// their connection for sending (a connection that fails drops those still
    /// queued, and counts the failure).
    replies,
    /// `UnknownMethod` exceptions sent (or, for oneway, requests dropped).
    unknown_method,
    /// Requests whose arguments were well-formed Thrift but not the method's
    /// (a missing field, a non-UTF-8 string, a container of the wrong type): answered
    /// with a `ProtocolError` exception, the connection kept.
    bad_args,
    /// Bytes that are not valid Thrift (bad header, unknown type id, negative size,
    /// nesting too deep, truncated message inside a frame, undetectable protocol):
    /// answered with a `ProtocolError` exception where a sequence id was known, then
    /// the connection closed.
    protocol_errors,
    /// Requests with a message type other than call or oneway.
    invalid_message_type,
    /// Handlers that returned an error (sent as `TApplicationException`).
    handler_errors,
    /// Handlers that panicked (sent as `InternalError`).
    handler_panics,
    /// Replies that could not be encoded within the frame limit (sent as
    /// `InternalError`).
    reply_too_large,
    /// Frames or unframed messages over the size limit (connection closed).
    frames_too_large,
    /// Connections closed by the peer inside a message.
    truncated,
    /// Connections closed after the idle timeout with nothing in progress.
    idle_timeouts,
    /// Connections closed because a send made no progress for the write timeout
    /// (a peer that does not read its replies).
    write_timeouts,
    /// Connections ended by a socket error.
    io_errors,
    /// Connections closed because the worker's receive memory limit was reached: its
    /// pools held by what handlers keep (decoded fields not detached) and the memory
    /// beside them used up (zerorx's `Builder::receive_memory_limit`). Among
    /// `io_errors`; the runtime logs what holds the memory.
    receive_memory_closes,
    /// Times a connection stopped reading because it had `max_in_flight` calls.
    in_flight_waits,
    /// Requests assembled from several receive buffers (copied once).
    frames_copied,
    /// Bytes in those requests.
    bytes_copied,
    /// Times a connection copied the part of a request it held because the worker's
    /// receive pool ran low while it waited for the rest (those requests are among
    /// `frames_copied`): a sign the pool is too small for the requests in flight.
    pressure_spills,
    /// Connections closed by a graceful drain.
    drained,
    /// Connections still busy at the drain deadline, closed with calls in flight.
    drain_aborted,
    /// Accept errors (e.g. out of file descriptors).
    accept_errors,
}

/// A cloneable, `Send + Sync` handle to a server's counters.
#[derive(Clone, Debug)]
pub struct StatsHandle {
    pub(crate) workers: Arc<Vec<Arc<WorkerStats>>>,
}

impl StatsHandle {
    pub(crate) fn new(workers: usize) -> StatsHandle {
        StatsHandle {
            workers: Arc::new((0..workers).map(|_| Arc::default()).collect()),
        }
    }

    /// The current counters, summed over workers.
    pub fn snapshot(&self) -> ServerStats {
        let mut s = ServerStats::default();
        for w in self.workers.iter() {
            s.add(w);
        }
        s
    }
}

/// Adds `n` to one of this worker's counters: a load and a store, not a locked
/// read-modify-write, since only this worker writes it (as the runtime's own worker
/// counters do).
pub(crate) fn bump(counter: &AtomicU64, n: u64) {
    counter.store(counter.load(Relaxed).wrapping_add(n), Relaxed);
}

/// Lowers a gauge this worker owns.
pub(crate) fn drop_gauge(counter: &AtomicU64) {
    counter.store(counter.load(Relaxed).saturating_sub(1), Relaxed);
}
