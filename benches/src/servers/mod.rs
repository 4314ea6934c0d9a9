//! The echo servers under test, one module per runtime, each written the way that
//! runtime's users would write it: accept, one task per connection, echo every byte.
//!
//! A server runs in a child process of its own (see [`crate::child`]), so its CPU time
//! and memory can be read from `/proc/PID` without the client's.

mod monoio_echo;
mod tokio_echo;
mod zerorx_echo;

use serde::{Deserialize, Serialize};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

/// Which echo server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ServerKind {
    /// zerorx, one worker: pooled multishot `recv`, the received buffer sent back as is.
    Zerorx,
    /// zerorx, two workers, one `SO_REUSEPORT` listener each.
    ZerorxMt,
    /// tokio `current_thread`: a 64 KiB buffer per connection, `read` → `write_all`.
    TokioCt,
    /// tokio multi-thread (two workers), same code.
    TokioMt,
    /// monoio on io_uring, one thread: an owned 64 KiB buffer per connection.
    Monoio,
    /// The 1-worker zerorx server again, with the `ZERORX_*` environment `--alt-env`
    /// gives it: a lever measured against `zerorx` in the same rounds. Only run when
    /// `--servers` names it.
    ZerorxAlt,
}

impl ServerKind {
    /// Every server, in the order tables list them.
    pub const ALL: [ServerKind; 5] = [
        ServerKind::Zerorx,
        ServerKind::ZerorxMt,
        ServerKind::TokioCt,
        ServerKind::TokioMt,
        ServerKind::Monoio,
    ];

    /// The name used on the command line, in tables and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Zerorx => "zerorx",
            ServerKind::ZerorxMt => "zerorx-mt",
            ServerKind::TokioCt => "tokio-ct",
            ServerKind::TokioMt => "tokio-mt",
            ServerKind::Monoio => "monoio",
            ServerKind::ZerorxAlt => "zerorx-alt",
        }
    }

    /// Parses a [`name`](Self::name).
    pub fn parse(s: &str) -> Option<ServerKind> {
        ServerKind::ALL
            .into_iter()
            .chain([ServerKind::ZerorxAlt])
            .find(|k| k.name() == s)
    }

    /// The peer this server's ratios are taken against: the tokio runtime with the same
    /// number of server threads.
    pub fn reference(self) -> ServerKind {
        match self {
            ServerKind::ZerorxMt | ServerKind::TokioMt => ServerKind::TokioMt,
            _ => ServerKind::TokioCt,
        }
    }

    /// Whether this is a zerorx server, whose ratios are checked against the goals.
    pub fn is_zerorx(self) -> bool {
        matches!(self, ServerKind::Zerorx | ServerKind::ZerorxMt)
    }
}

/// How a server is set up (passed to the child on its command line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// zerorx receive pool per worker: number of buffers.
    pub pool_buffers: u16,
    /// zerorx receive pool per worker: bytes per buffer.
    pub pool_buffer_size: u32,
    /// The child exits by itself after this many seconds, whatever happens.
    pub life_secs: u64,
    /// The environment the `zerorx-alt` server runs with (`ZERORX_*` settings).
    pub alt_env: Vec<(String, String)>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        let pool = zcrx::CopyPoolConfig::default();
        ServerConfig {
            pool_buffers: pool.buffers,
            pool_buffer_size: pool.buffer_size,
            life_secs: 600,
            alt_env: Vec::new(),
        }
    }
}

impl ServerConfig {
    /// Bytes of receive pool per zerorx worker.
    pub fn pool_bytes(&self) -> u64 {
        u64::from(self.pool_buffers) * u64::from(self.pool_buffer_size)
    }
}

/// Runtime counters a server reports on request; only zerorx has them.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ServerStats {
    /// Multishot receives ended by an empty pool, summed over workers.
    pub enobufs: Option<u64>,
    /// Receives re-armed after a recoverable end.
    pub rearms: Option<u64>,
    /// Highest number of pool buffers held at once (max over workers).
    pub pool_high_water: Option<u64>,
    /// Buffers per worker pool.
    pub pool_chunks: Option<u64>,
    /// `io_uring_enter` calls.
    pub enter_calls: Option<u64>,
    /// Completions reaped.
    pub cqes: Option<u64>,
    /// Event-loop turns.
    pub loop_turns: Option<u64>,
    /// Bytes the process has allocated with `malloc` and not freed (all arenas),
    /// filled in for every server by the child process itself.
    pub heap_bytes: Option<u64>,
}

/// Bytes currently allocated through glibc's `malloc`, over all arenas.
pub fn heap_in_use() -> u64 {
    // SAFETY: mallinfo2 only reads the allocator's statistics.
    let info = unsafe { libc::mallinfo2() };
    (info.uordblks + info.hblkhd) as u64
}

/// Reads a server's counters from any thread.
pub type StatsFn = Arc<dyn Fn() -> ServerStats + Send + Sync>;

/// Called once the server listens: its address and how to read its counters.
pub type Ready = Box<dyn FnOnce(SocketAddr, StatsFn)>;

/// Runs `kind` on this thread until the process exits. Returns only on failure.
pub fn run(kind: ServerKind, cfg: &ServerConfig, ready: Ready) -> io::Result<()> {
    match kind {
        ServerKind::Zerorx | ServerKind::ZerorxAlt => zerorx_echo::serve(1, cfg, ready),
        ServerKind::ZerorxMt => zerorx_echo::serve(2, cfg, ready),
        ServerKind::TokioCt => tokio_echo::serve(false, ready),
        ServerKind::TokioMt => tokio_echo::serve(true, ready),
        ServerKind::Monoio => monoio_echo::serve(ready),
    }
}

/// Where every server listens: loopback, a fresh port per server instance.
fn loopback_any_port() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// The listener every server accepts on (with `SO_REUSEPORT`, so a multi-worker
/// server binds one per worker on the same address). Its accepted connections start
/// with `TCP_NODELAY` on, which Linux copies from the listening socket: no server
/// pays a `setsockopt` per connection, so churn (W6) compares the servers, not who
/// knows that trick.
fn nodelay_listener(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    s.set_nodelay(true)?;
    s.bind(&addr.into())?;
    s.listen(1024)?;
    Ok(s.into())
}

/// A server with no runtime counters.
fn no_stats() -> StatsFn {
    Arc::new(ServerStats::default)
}

/// Size of the per-connection buffer of the tokio and monoio servers.
const PEER_BUFFER: usize = 64 * 1024;

#[cfg(test)]
mod tests {
    #[test]
    fn accepted_connections_inherit_nodelay_from_the_listener() {
        // No server sets it per connection: it must come with the accepted socket.
        let l = super::nodelay_listener(super::loopback_any_port()).expect("listener");
        let addr = l.local_addr().expect("addr");
        let client = std::net::TcpStream::connect(addr).expect("connect");
        assert!(
            !client.nodelay().expect("client nodelay"),
            "a fresh socket has it off"
        );
        let (accepted, _) = l.accept().expect("accept");
        assert!(
            accepted.nodelay().expect("nodelay"),
            "TCP_NODELAY was not inherited"
        );
    }

    use super::*;

    #[test]
    fn names_round_trip() {
        for k in ServerKind::ALL {
            assert_eq!(ServerKind::parse(k.name()), Some(k));
        }
        assert_eq!(ServerKind::parse("nginx"), None);
        assert_eq!(
            ServerKind::parse("zerorx-alt"),
            Some(ServerKind::ZerorxAlt),
            "accepted, though not in ALL (not run by default)"
        );
        assert!(!ServerKind::ALL.contains(&ServerKind::ZerorxAlt));
    }

    #[test]
    fn references_are_tokio_with_the_same_threads() {
        assert_eq!(ServerKind::Zerorx.reference(), ServerKind::TokioCt);
        assert_eq!(ServerKind::ZerorxMt.reference(), ServerKind::TokioMt);
        assert_eq!(ServerKind::Monoio.reference(), ServerKind::TokioCt);
    }
}
