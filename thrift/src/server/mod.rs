//! [`Server`]: a Thrift server on every worker of a runtime.
//!
//! Each worker accepts on its own `SO_REUSEPORT` listener and serves its connections
//! itself; on a Unix socket ([`ServerBuilder::unix`]), every worker accepts on the one
//! listening socket. Per connection: one task reads messages (detecting transport and protocol
//! from the first bytes unless configured) and runs each request's handler right
//! there; a handler that has to wait continues as a task of its own. One writer task
//! sends the replies queued since its last write in one vectored send. Requests are
//! decoded from views of the runtime's receive buffers and copied only when one
//! straddles two buffers: give the runtime buffers several times the typical request
//! (`Builder::chunk_size`). Requests are pipelined: up to `max_in_flight` per connection are read before
//! earlier ones are answered, each reply carrying its request's sequence id; past the
//! limit the connection stops reading (TCP pushes back on the client).
//!
//! Errors: an unknown method or arguments that are valid Thrift but not the method's
//! get a `TApplicationException` and the connection stays; bytes that are not valid
//! Thrift get one (when the request's sequence id is known) and the connection closes
//! after the replies in progress are sent. Every case is counted in [`ServerStats`].

mod conn;
mod future_slot;
mod method;
mod stats;

pub use stats::{ServerStats, StatsHandle};

use super::exception::ApplicationException;
use super::protocol::DecodeLimits;
use super::signal::{LocalSignal, SharedSignal};
use super::transport::DEFAULT_MAX_FRAME;
use super::{ThriftDecode, ThriftEncode};
use bytes::Bytes;
use method::{Method, OneWay, TwoWay};
use socket2::{Domain, Protocol as SockProtocol, Socket, Type};
use stats::{bump, WorkerStats};
use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::marker::PhantomData;
use std::net::SocketAddr;
use std::os::unix::net::SocketAddr as UnixAddr;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zerorx::net::{Connection, TcpListener, TcpStream, UnixListener, UnixStream};
use zerorx::Handle;
use zerorx::JoinHandle;

/// Which protocols a server accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtocolChoice {
    /// TBinaryProtocol, strict or non-strict headers (replies mirror the request).
    Binary,
    /// TCompactProtocol.
    Compact,
    /// Either, told from each connection's first bytes.
    Auto,
}

/// Which transports a server accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransportChoice {
    /// Framed only.
    Framed,
    /// Unframed only.
    Unframed,
    /// Either, told from each connection's first bytes.
    Auto,
}

/// A server's settings.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Address to listen on (port 0 picks one; every worker then binds the same).
    pub addr: SocketAddr,
    /// A Unix socket to listen on instead of `addr`: a filesystem path or a Linux
    /// abstract name (`std::os::linux::net::SocketAddrExt::from_abstract_name`).
    /// Default `None` (TCP). One server listens on one of the two; to serve both, start
    /// two servers with the same handlers on one runtime.
    ///
    /// Every worker accepts on the one socket (Unix sockets have no `SO_REUSEPORT`):
    /// the kernel gives each connection to a waiting worker, and one woken with several
    /// connections queued takes them all, so connections made in a burst may be served
    /// by one worker.
    ///
    /// A path that exists when the server starts is an error naming it (a stale socket
    /// file is never removed: remove it, or bind it with
    /// `zerorx::net::UnixListener::bind_replacing` and pass the listener's address).
    /// The server removes the socket file it made once it has stopped, if the path
    /// still names that file.
    pub unix: Option<UnixAddr>,
    /// Accepted protocols (default `Auto`).
    pub protocol: ProtocolChoice,
    /// Accepted transports (default `Auto`).
    pub transport: TransportChoice,
    /// Largest request frame or unframed message, and largest reply (default 16 MiB).
    pub max_frame: usize,
    /// Requests per connection read before earlier ones are answered (default 128).
    pub max_in_flight: usize,
    /// Connections one worker serves at once; more are closed on accept (default 10k).
    pub max_connections_per_worker: usize,
    /// A connection with nothing in progress and no complete request for this long is
    /// closed (default 60 s; `None`: never).
    pub idle_timeout: Option<Duration>,
    /// A connection whose send makes no progress for this long is closed: a client
    /// that never reads its replies (default 30 s; `None`: never).
    pub write_timeout: Option<Duration>,
    /// Decoder limits for requests.
    pub limits: DecodeLimits,
    /// Sets `TCP_NODELAY` on accepted TCP connections (default true: replies are whole
    /// messages, so waiting to coalesce them only adds latency).
    pub nodelay: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            unix: None,
            protocol: ProtocolChoice::Auto,
            transport: TransportChoice::Auto,
            max_frame: DEFAULT_MAX_FRAME,
            max_in_flight: 128,
            max_connections_per_worker: 10_000,
            idle_timeout: Some(Duration::from_secs(60)),
            write_timeout: Some(Duration::from_secs(30)),
            limits: DecodeLimits::default(),
            nodelay: true,
        }
    }
}

/// Builds a [`Server`]: settings and handlers, then [`start`](Self::start).
pub struct ServerBuilder {
    config: ServerConfig,
    methods: HashMap<Box<[u8]>, Arc<dyn Method>>,
    /// A setting that could not be taken (a Unix path too long), returned by `start`.
    invalid: Option<io::Error>,
}

/// A handler's result: the method's result struct, or a `TApplicationException`.
pub type HandlerResult<R> = Result<R, ApplicationException>;

impl ServerBuilder {
    /// Replaces all settings.
    pub fn config(mut self, config: ServerConfig) -> Self {
        self.config = config;
        self
    }

    /// The listen address.
    pub fn addr(mut self, addr: SocketAddr) -> Self {
        self.config.addr = addr;
        self
    }

    /// Listens on the Unix socket at the filesystem path `path` instead of TCP (see
    /// [`ServerConfig::unix`]). A path no Unix socket address can hold (too long, or
    /// with a NUL byte) makes [`start`](Self::start) fail, naming it.
    pub fn unix(mut self, path: impl AsRef<Path>) -> Self {
        let path = path.as_ref();
        match UnixAddr::from_pathname(path) {
            Ok(addr) => self.config.unix = Some(addr),
            Err(e) => {
                self.invalid = Some(io::Error::new(
                    e.kind(),
                    format!("Unix socket path {}: {e}", path.display()),
                ))
            }
        }
        self
    }

    /// Listens on the Unix socket address `addr` (a path or a Linux abstract name)
    /// instead of TCP.
    pub fn unix_addr(mut self, addr: UnixAddr) -> Self {
        self.config.unix = Some(addr);
        self
    }

    /// Accepted protocols.
    pub fn protocol(mut self, p: ProtocolChoice) -> Self {
        self.config.protocol = p;
        self
    }

    /// Accepted transports.
    pub fn transport(mut self, t: TransportChoice) -> Self {
        self.config.transport = t;
        self
    }

    /// Largest frame, in and out.
    pub fn max_frame(mut self, bytes: usize) -> Self {
        self.config.max_frame = bytes;
        self
    }

    /// Pipelined requests per connection.
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.config.max_in_flight = n;
        self
    }

    /// Connections per worker.
    pub fn max_connections_per_worker(mut self, n: usize) -> Self {
        self.config.max_connections_per_worker = n;
        self
    }

    /// Idle timeout.
    pub fn idle_timeout(mut self, d: Option<Duration>) -> Self {
        self.config.idle_timeout = d;
        self
    }

    /// Write timeout.
    pub fn write_timeout(mut self, d: Option<Duration>) -> Self {
        self.config.write_timeout = d;
        self
    }

    /// Decoder limits.
    pub fn limits(mut self, limits: DecodeLimits) -> Self {
        self.config.limits = limits;
        self
    }

    /// Registers a method: `handler` gets the decoded argument struct `A` and returns
    /// the result struct `R` (e.g. [`Returns`](crate::Returns),
    /// [`Void`](crate::Void), or a hand-written one carrying declared exceptions).
    /// The handler is shared by every worker; the futures it returns run on the
    /// connection's worker and need not be `Send`.
    pub fn method<A, R, F, Fut>(mut self, name: &str, handler: F) -> Self
    where
        A: ThriftDecode + 'static,
        R: ThriftEncode + 'static,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<R>> + 'static,
    {
        let m: Arc<dyn Method> = Arc::new(TwoWay {
            f: handler,
            _args: PhantomData,
        });
        self.methods.insert(name.as_bytes().into(), m);
        self
    }

    /// Registers every method of `service` (a generated `FooServer`) under its IDL
    /// name.
    pub fn service(self, service: impl crate::Service) -> Self {
        service.register(self, "")
    }

    /// Registers every method of `service` as `name:method`, the way Apache's
    /// `TMultiplexedProcessor` expects clients of several services on one port to
    /// call them.
    pub fn multiplexed(self, name: &str, service: impl crate::Service) -> Self {
        service.register(self, &format!("{name}:"))
    }

    /// Registers a oneway method: no reply is ever sent.
    pub fn oneway<A, F, Fut>(mut self, name: &str, handler: F) -> Self
    where
        A: ThriftDecode + 'static,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let m: Arc<dyn Method> = Arc::new(OneWay {
            f: handler,
            _args: PhantomData,
        });
        self.methods.insert(name.as_bytes().into(), m);
        self
    }

    /// Binds one listener per worker of `handle` (`SO_REUSEPORT`, same port), or the
    /// one Unix socket every worker accepts on, and starts serving. Binding errors are
    /// returned here. Worker 0 serves only while its thread is inside
    /// `Runtime::block_on`.
    pub fn start(self, handle: &Handle) -> io::Result<Server> {
        if let Some(e) = self.invalid {
            return Err(e);
        }
        let cfg = &self.config;
        if cfg.max_in_flight == 0 || cfg.max_connections_per_worker == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "max_in_flight and max_connections_per_worker must be at least 1",
            ));
        }
        let workers = handle.threads();
        let mut listeners = Vec::with_capacity(workers);
        let mut addr = cfg.addr;
        let mut socket_file = None;
        match &cfg.unix {
            None => {
                for _ in 0..workers {
                    let l = bind_reuseport(addr)?;
                    addr = l.local_addr()?;
                    listeners.push(WorkerListener::Tcp(l));
                }
            }
            Some(unix) => {
                // SO_REUSEPORT does not apply to Unix sockets: one socket, and each
                // worker accepts on an fd of its own for it, serving what it accepts.
                // io_uring waits on a listener's queue exclusively, so the kernel wakes
                // one worker's accept per connection; the woken accept takes every
                // connection queued by then, so a burst can land on one worker (no
                // even spread as SO_REUSEPORT's hash gives TCP). Chosen over accepting
                // on one worker and serving there (the others would idle) and over
                // handing accepted fds round-robin to the others (a cross-thread
                // wake-up per connection, and more code) for the simplest path with
                // every worker taking part; zerorx's bind names a stale socket file as
                // one.
                let l = UnixListener::bind_addr(unix)?.into_std()?;
                socket_file = unix.as_pathname().and_then(SocketFile::made_at);
                addr = SocketAddr::from(([0, 0, 0, 0], 0));
                for _ in 1..workers {
                    listeners.push(WorkerListener::Unix(l.try_clone()?));
                }
                listeners.push(WorkerListener::Unix(l));
            }
        }
        let shared = Arc::new(ServerShared {
            config: self.config,
            methods: self.methods,
            stats: StatsHandle::new(workers),
            shutdown: Arc::new(SharedSignal::default()),
            deadline: Mutex::new(None),
            _socket_file: socket_file,
        });
        let tasks = listeners
            .into_iter()
            .enumerate()
            .map(|(i, l)| {
                let shared = shared.clone();
                handle.spawn_on_with(i, move || worker_main(l, shared, i))
            })
            .collect();
        Ok(Server {
            local_addr: addr,
            shared,
            tasks,
        })
    }
}

fn bind_reuseport(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
    let s = Socket::new(
        Domain::for_address(addr),
        Type::STREAM.cloexec(),
        Some(SockProtocol::TCP),
    )?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    s.bind(&addr.into())?;
    s.listen(1024)?;
    Ok(s.into())
}

/// A listener before it reaches its worker (std sockets are `Send`).
enum WorkerListener {
    Tcp(std::net::TcpListener),
    Unix(std::os::unix::net::UnixListener),
}

/// A worker's listener.
enum Listening {
    Tcp(TcpListener),
    Unix(UnixListener),
}

/// A connection as accepted, before it becomes a [`Connection`] (TCP has options to
/// set first).
enum Accepted {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Listening {
    /// `l` on the current worker.
    fn wrap(l: WorkerListener) -> io::Result<Listening> {
        Ok(match l {
            WorkerListener::Tcp(l) => Listening::Tcp(TcpListener::from_std(l)?),
            WorkerListener::Unix(l) => Listening::Unix(UnixListener::from_std(l)?),
        })
    }

    async fn accept(&self) -> io::Result<Accepted> {
        match self {
            Listening::Tcp(l) => l.accept().await.map(|(s, _)| Accepted::Tcp(s)),
            Listening::Unix(l) => l.accept().await.map(|(s, _)| Accepted::Unix(s)),
        }
    }
}

/// The socket file a server on a Unix path made, removed when the server has
/// stopped (its last worker gone and the `Server` dropped) if the path still names
/// that file: a file another process bound meanwhile is not ours to remove.
struct SocketFile {
    path: PathBuf,
    /// Device and inode of the file the bind made.
    id: (u64, u64),
}

impl SocketFile {
    fn made_at(path: &Path) -> Option<SocketFile> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::symlink_metadata(path).ok()?;
        Some(SocketFile {
            path: path.to_owned(),
            id: (meta.dev(), meta.ino()),
        })
    }
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        use std::os::unix::fs::MetadataExt;
        let still_ours =
            std::fs::symlink_metadata(&self.path).is_ok_and(|m| (m.dev(), m.ino()) == self.id);
        if still_ours {
            if let Err(e) = std::fs::remove_file(&self.path) {
                tracing::warn!(path = %self.path.display(), error = %e, "removing the server's Unix socket file");
            }
        }
    }
}

/// What every worker of a server shares.
pub(crate) struct ServerShared {
    pub(crate) config: ServerConfig,
    pub(crate) methods: HashMap<Box<[u8]>, Arc<dyn Method>>,
    pub(crate) stats: StatsHandle,
    shutdown: Arc<SharedSignal>,
    deadline: Mutex<Option<Instant>>,
    /// Removed with the last owner of this.
    _socket_file: Option<SocketFile>,
}

impl ServerShared {
    fn begin_shutdown(&self, grace: Duration) {
        {
            let mut d = self.deadline.lock().unwrap_or_else(|e| e.into_inner());
            let new = Instant::now() + grace;
            *d = Some(d.map_or(new, |old| old.min(new)));
        }
        self.shutdown.set();
    }

    fn deadline(&self) -> Instant {
        let d = self.deadline.lock().unwrap_or_else(|e| e.into_inner());
        d.unwrap_or_else(Instant::now)
    }
}

/// A running server.
pub struct Server {
    local_addr: SocketAddr,
    shared: Arc<ServerShared>,
    tasks: Vec<JoinHandle<()>>,
}

/// Starts a graceful shutdown of a [`Server`] from any thread.
#[derive(Clone)]
pub struct ShutdownHandle {
    shared: Arc<ServerShared>,
}

impl ShutdownHandle {
    /// Stops accepting and reading new requests; calls in flight finish and their
    /// replies are sent, then connections close. Connections still busy after
    /// `grace` are closed anyway (counted in `drain_aborted`).
    pub fn shutdown(&self, grace: Duration) {
        self.shared.begin_shutdown(grace);
    }
}

impl Server {
    /// A builder with the default [`ServerConfig`] and no methods.
    pub fn builder() -> ServerBuilder {
        ServerBuilder {
            config: ServerConfig::default(),
            methods: HashMap::new(),
            invalid: None,
        }
    }

    /// The TCP address every worker listens on. A server on a Unix socket has none:
    /// this is then the unspecified address `0.0.0.0:0`, and
    /// [`local_unix_addr`](Self::local_unix_addr) says where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The Unix socket address the server listens on, if it is on one.
    pub fn local_unix_addr(&self) -> Option<&UnixAddr> {
        self.shared.config.unix.as_ref()
    }

    /// The settings it runs with.
    pub fn config(&self) -> &ServerConfig {
        &self.shared.config
    }

    /// The counters now, summed over workers.
    pub fn stats(&self) -> ServerStats {
        self.shared.stats.snapshot()
    }

    /// A `Send + Sync` handle to the counters.
    pub fn stats_handle(&self) -> StatsHandle {
        self.shared.stats.clone()
    }

    /// A handle to shut the server down from anywhere (e.g. a signal thread).
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle {
            shared: self.shared.clone(),
        }
    }

    /// Begins a graceful shutdown (see [`ShutdownHandle::shutdown`]).
    pub fn begin_shutdown(&self, grace: Duration) {
        self.shared.begin_shutdown(grace);
    }

    /// Waits until every worker has stopped serving (after a shutdown). Awaitable on
    /// any thread inside a runtime worker or any executor.
    pub async fn stopped(self) -> io::Result<()> {
        let mut failed = Vec::new();
        for (i, t) in self.tasks.into_iter().enumerate() {
            if let Err(e) = t.await {
                failed.push(format!("worker {i}: {e}"));
            }
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "server stopped abnormally: {}",
                failed.join("; ")
            )))
        }
    }

    /// [`begin_shutdown`](Self::begin_shutdown), then [`stopped`](Self::stopped).
    pub async fn shutdown(self, grace: Duration) -> io::Result<()> {
        self.begin_shutdown(grace);
        self.stopped().await
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Server");
        match self.local_unix_addr() {
            Some(unix) => d.field("local_unix_addr", unix),
            None => d.field("local_addr", &self.local_addr),
        };
        d.field("workers", &self.tasks.len()).finish()
    }
}

/// One worker's share of a server.
pub(crate) struct WorkerCtx {
    pub(crate) shared: Arc<ServerShared>,
    pub(crate) stats: Arc<WorkerStats>,
    /// This worker's connection tasks.
    pub(crate) conns: RefCell<slab::Slab<JoinHandle<()>>>,
    /// Set when the server drains: connections stop reading.
    pub(crate) drain: Rc<LocalSignal>,
    /// Notified whenever a connection ends.
    pub(crate) conn_closed: Rc<LocalSignal>,
    /// The methods, keyed by names this worker owns, each with the name its replies
    /// carry, a view of the key (no copy, and no reference count shared with other
    /// workers): the registered name, or for a multiplexed `Service:method` just
    /// `method` (as Apache's TMultiplexedProcessor answers and its clients expect),
    /// sliced out once here.
    /// Fx-hashed: SipHash cost 2 % of a small request's CPU, and the table is fixed
    /// after start (a peer's names only probe it, so there is nothing to flood).
    pub(crate) methods: rustc_hash::FxHashMap<Bytes, (Bytes, Arc<dyn Method>)>,
    /// Memory for the next handler future (`future_slot`).
    pub(crate) future_slot: future_slot::FutureSlot,
}

enum AcceptEvent {
    Accepted(io::Result<Accepted>),
    Shutdown,
}

async fn worker_main(listener: WorkerListener, shared: Arc<ServerShared>, index: usize) {
    let stats = shared.stats.workers[index].clone();
    let w = Rc::new(WorkerCtx {
        shared: shared.clone(),
        stats,
        conns: RefCell::new(slab::Slab::new()),
        drain: Rc::new(LocalSignal::default()),
        conn_closed: Rc::new(LocalSignal::default()),
        methods: shared
            .methods
            .iter()
            .map(|(name, m)| {
                let name = Bytes::copy_from_slice(name);
                let reply = match name.iter().rposition(|&b| b == b':') {
                    Some(colon) => name.slice(colon + 1..),
                    None => name.clone(),
                };
                (name, (reply, m.clone()))
            })
            .collect(),
        future_slot: future_slot::FutureSlot::default(),
    });
    let listener = match Listening::wrap(listener) {
        Ok(l) => Some(l),
        Err(e) => {
            tracing::error!(worker = index, error = %e, "rpc listener");
            bump(&w.stats.accept_errors, 1);
            None
        }
    };
    let mut shutdown = shared.shutdown.wait();
    while let Some(l) = &listener {
        let ev = {
            let accept = l.accept();
            let mut accept = std::pin::pin!(accept);
            std::future::poll_fn(|cx| {
                if let std::task::Poll::Ready(()) = std::pin::Pin::new(&mut shutdown).poll(cx) {
                    return std::task::Poll::Ready(AcceptEvent::Shutdown);
                }
                accept.as_mut().poll(cx).map(AcceptEvent::Accepted)
            })
            .await
        };
        match ev {
            AcceptEvent::Shutdown => break,
            AcceptEvent::Accepted(Ok(accepted)) => {
                if w.conns.borrow().len() >= shared.config.max_connections_per_worker {
                    bump(&w.stats.connections_rejected, 1);
                    drop(accepted);
                    continue;
                }
                let stream: Connection = match accepted {
                    Accepted::Tcp(s) => {
                        if shared.config.nodelay {
                            if let Err(e) = s.set_nodelay(true) {
                                tracing::debug!(worker = index, error = %e, "TCP_NODELAY");
                            }
                        }
                        s.into()
                    }
                    Accepted::Unix(s) => s.into(),
                };
                bump(&w.stats.connections_accepted, 1);
                bump(&w.stats.connections_active, 1);
                let key = w.conns.borrow().vacant_key();
                let task = zerorx::spawn(conn::serve(stream, w.clone(), key));
                w.conns.borrow_mut().insert(task);
            }
            AcceptEvent::Accepted(Err(e)) => {
                bump(&w.stats.accept_errors, 1);
                tracing::warn!(worker = index, error = %e, "rpc accept");
                // Out of fds or similar: back off instead of spinning.
                zerorx::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    drop(listener);
    w.drain.set();
    let deadline = shared.deadline();
    let mut closed = w.conn_closed.wait();
    let mut timer = zerorx::time::sleep_until(deadline);
    std::future::poll_fn(|cx| {
        if w.conns.borrow().is_empty() {
            return std::task::Poll::Ready(());
        }
        let _ = closed.poll_set(cx);
        std::pin::Pin::new(&mut timer).poll(cx)
    })
    .await;
    let left: Vec<JoinHandle<()>> = w.conns.borrow_mut().drain().collect();
    bump(&w.stats.drain_aborted, left.len() as u64);
    for t in &left {
        t.abort();
    }
    for t in left {
        let _ = t.await;
    }
}
