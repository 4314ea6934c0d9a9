//! [`Client`]: an async Thrift client on the current worker, with pipelining (many
//! calls in flight on one connection, matched to replies by sequence id), per-call
//! timeouts and reconnection.

use super::codec::{ThriftDecode, ThriftEncode};
use super::error::{DecodeError, EncodeError};
use super::exception::ApplicationException;
use super::message::{encode_framed, MessageReader};
use super::out::Framing;
use super::protocol::{DecodeLimits, MessageHeader, MessageType, Protocol};
use super::signal::LocalSignal;
use super::transport::{MessageStream, ReadError, Transport, DEFAULT_MAX_FRAME};
use super::writer::{write_loop, OutQueue, WriteError};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::os::unix::net::SocketAddr as UnixAddr;
use std::path::Path;
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::Duration;
use zerorx::net::{Connection, FrameReader, TcpStream, UnixStream};
use zerorx::JoinHandle;

/// A client's settings.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Protocol of requests (default strict binary).
    pub protocol: Protocol,
    /// Transport (default framed; `Header` and `FramedHeader` send THeader frames naming
    /// `protocol`, and read replies in whatever protocol their headers name).
    pub transport: Transport,
    /// Largest request and reply (default 16 MiB).
    pub max_frame: usize,
    /// Bound on each call, from sending to the reply (default 30 s; `None`: none).
    pub call_timeout: Option<Duration>,
    /// Bound on connecting (default 5 s).
    pub connect_timeout: Duration,
    /// Connect again on the next call after the connection was lost (default true).
    pub reconnect: bool,
    /// A send making no progress this long breaks the connection (default 30 s).
    pub write_timeout: Option<Duration>,
    /// Decoder limits for replies.
    pub limits: DecodeLimits,
    /// Sets `TCP_NODELAY` on TCP connections (default true).
    pub nodelay: bool,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            protocol: Protocol::Binary,
            transport: Transport::Framed,
            max_frame: DEFAULT_MAX_FRAME,
            call_timeout: Some(Duration::from_secs(30)),
            connect_timeout: Duration::from_secs(5),
            reconnect: true,
            write_timeout: Some(Duration::from_secs(30)),
            limits: DecodeLimits::default(),
            nodelay: true,
        }
    }
}

/// Why a call failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClientError {
    /// Connecting failed.
    Connect(io::Error),
    /// The connection was lost before the reply came (the reason is attached); the
    /// call may or may not have run on the server.
    Closed(String),
    /// No reply within the call timeout (a late reply is discarded).
    Timeout,
    /// The request could not be encoded.
    Encode(EncodeError),
    /// The reply could not be decoded.
    Decode(DecodeError),
    /// The server answered with a `TApplicationException`.
    Application(ApplicationException),
    /// The reply was not a reply to this call (wrong method name or message type).
    UnexpectedReply(String),
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Connect(e) => write!(f, "connect failed: {e}"),
            ClientError::Closed(why) => write!(f, "connection lost: {why}"),
            ClientError::Timeout => f.write_str("call timed out"),
            ClientError::Encode(e) => write!(f, "request not encodable: {e}"),
            ClientError::Decode(e) => write!(f, "reply not decodable: {e}"),
            ClientError::Application(e) => write!(f, "{e}"),
            ClientError::UnexpectedReply(m) => write!(f, "unexpected reply: {m}"),
        }
    }
}

impl std::error::Error for ClientError {}

/// A client's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientStats {
    /// Calls sent (including oneway).
    pub calls: u64,
    /// Calls that timed out.
    pub timeouts: u64,
    /// Connections made after the first.
    pub reconnects: u64,
    /// Replies nobody waited for any more (after a timeout) or with unknown ids.
    pub unmatched_replies: u64,
}

/// A reply waiting for its caller.
struct Slot {
    reply: RefCell<Option<Result<(MessageHeader, MessageReader), ClientError>>>,
    waker: RefCell<Option<Waker>>,
}

impl Slot {
    fn fill(&self, r: Result<(MessageHeader, MessageReader), ClientError>) {
        *self.reply.borrow_mut() = Some(r);
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
    }
}

/// One connection and its reader and writer tasks.
struct Conn {
    out: OutQueue,
    pending: RefCell<HashMap<i32, Rc<Slot>>>,
    broken: RefCell<Option<String>>,
    tasks: RefCell<Vec<JoinHandle<()>>>,
}

impl Conn {
    /// Marks the connection lost and fails every waiting call.
    fn break_with(&self, why: String) {
        if self.broken.borrow().is_some() {
            return;
        }
        *self.broken.borrow_mut() = Some(why.clone());
        let pending: Vec<Rc<Slot>> = self.pending.borrow_mut().drain().map(|(_, s)| s).collect();
        for s in pending {
            s.fill(Err(ClientError::Closed(why.clone())));
        }
        self.out.close();
    }
}

/// A TCP connection to `peer` as `cfg` says (connect timeout, `TCP_NODELAY`).
async fn tcp(
    peer: impl zerorx::net::ToSocketAddrs,
    cfg: &ClientConfig,
) -> Result<Connection, ClientError> {
    let stream = TcpStream::connect_timeout(peer, cfg.connect_timeout)
        .await
        .map_err(ClientError::Connect)?;
    if cfg.nodelay {
        stream.set_nodelay(true).map_err(ClientError::Connect)?;
    }
    Ok(stream.into())
}

/// Where a client connects.
#[derive(Clone, Debug)]
enum Peer {
    Tcp(SocketAddr),
    /// `host:port`, resolved at every connect (on the runtime's blocking pool), so a
    /// reconnect follows the name to wherever it points then.
    Named(String),
    Unix(UnixAddr),
}

struct Inner {
    peer: Peer,
    config: ClientConfig,
    conn: RefCell<Option<Rc<Conn>>>,
    connecting: Cell<bool>,
    connected: Rc<LocalSignal>,
    next_seqid: Cell<i32>,
    stats: Cell<ClientStats>,
    ever_connected: Cell<bool>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(c) = self.conn.borrow_mut().take() {
            c.break_with("client dropped".into());
            for t in c.tasks.borrow_mut().drain(..) {
                t.abort();
            }
        }
    }
}

/// An async Thrift client bound to the worker it was made on (clone it to share
/// between that worker's tasks).
#[derive(Clone)]
pub struct Client {
    inner: Rc<Inner>,
}

impl Client {
    /// Connects to `addr`.
    pub async fn connect(addr: SocketAddr, config: ClientConfig) -> Result<Client, ClientError> {
        let c = Client::lazy(addr, config);
        c.connection().await?;
        Ok(c)
    }

    /// A client that connects at its first call.
    pub fn lazy(addr: SocketAddr, config: ClientConfig) -> Client {
        Client::with_peer(Peer::Tcp(addr), config)
    }

    /// Connects to `name`, a `"host:port"` (`"db.internal:9090"`, `"[::1]:9090"`):
    /// resolved on the runtime's blocking pool, each address tried in order; failing
    /// (`ClientError::Connect`) names the host and every address tried. The name is
    /// resolved again at every reconnect. A generated client wraps the result:
    /// `BenchClient::new(Client::connect_to("bench:9090", config).await?)`.
    pub async fn connect_to(
        name: impl Into<String>,
        config: ClientConfig,
    ) -> Result<Client, ClientError> {
        let c = Client::lazy_to(name, config);
        c.connection().await?;
        Ok(c)
    }

    /// A client of `name` (`"host:port"`, as [`connect_to`](Self::connect_to)) that
    /// connects at its first call.
    pub fn lazy_to(name: impl Into<String>, config: ClientConfig) -> Client {
        Client::with_peer(Peer::Named(name.into()), config)
    }

    /// Connects to the server on the Unix socket at the filesystem path `path`.
    /// Failing to (`ClientError::Connect`: no such path, nobody listening on the
    /// socket file, a path too long) names the path.
    pub async fn connect_unix(
        path: impl AsRef<Path>,
        config: ClientConfig,
    ) -> Result<Client, ClientError> {
        let path = path.as_ref();
        let addr = UnixAddr::from_pathname(path).map_err(|e| {
            ClientError::Connect(io::Error::new(
                e.kind(),
                format!("Unix socket path {}: {e}", path.display()),
            ))
        })?;
        Client::connect_unix_addr(addr, config).await
    }

    /// Connects to the server on the Unix socket `addr`: a path or a Linux abstract
    /// name (`std::os::linux::net::SocketAddrExt::from_abstract_name`).
    pub async fn connect_unix_addr(
        addr: UnixAddr,
        config: ClientConfig,
    ) -> Result<Client, ClientError> {
        let c = Client::lazy_unix(addr, config);
        c.connection().await?;
        Ok(c)
    }

    /// A client of the server on the Unix socket `addr` that connects at its first
    /// call.
    pub fn lazy_unix(addr: UnixAddr, config: ClientConfig) -> Client {
        Client::with_peer(Peer::Unix(addr), config)
    }

    fn with_peer(peer: Peer, config: ClientConfig) -> Client {
        Client {
            inner: Rc::new(Inner {
                peer,
                config,
                conn: RefCell::new(None),
                connecting: Cell::new(false),
                connected: Rc::new(LocalSignal::default()),
                next_seqid: Cell::new(1),
                stats: Cell::new(ClientStats::default()),
                ever_connected: Cell::new(false),
            }),
        }
    }

    /// The client's settings.
    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    /// Whether a connection is open and not known to be lost (the next call then uses
    /// it rather than connecting).
    pub fn is_connected(&self) -> bool {
        self.inner
            .conn
            .borrow()
            .as_ref()
            .is_some_and(|c| c.broken.borrow().is_none())
    }

    /// The counters.
    pub fn stats(&self) -> ClientStats {
        self.inner.stats.get()
    }

    fn update_stats(&self, f: impl FnOnce(&mut ClientStats)) {
        let mut s = self.inner.stats.get();
        f(&mut s);
        self.inner.stats.set(s);
    }

    /// The live connection, connecting (again) if there is none.
    async fn connection(&self) -> Result<Rc<Conn>, ClientError> {
        let mut wait = self.inner.connected.wait();
        loop {
            let current = self.inner.conn.borrow().clone();
            if let Some(c) = current {
                let broken = c.broken.borrow().clone();
                match broken {
                    None => return Ok(c),
                    Some(why) if !self.inner.config.reconnect => {
                        return Err(ClientError::Closed(why))
                    }
                    Some(_) => {}
                }
            }
            if !self.inner.connecting.get() {
                break;
            }
            // Another task is connecting: wait for it.
            poll_fn(|cx| {
                if !self.inner.connecting.get() {
                    return Poll::Ready(());
                }
                let _ = wait.poll_set(cx);
                Poll::Pending
            })
            .await;
        }
        self.inner.connecting.set(true);
        let res = self.open().await;
        self.inner.connecting.set(false);
        self.inner.connected.notify();
        let conn = res?;
        if self.inner.ever_connected.replace(true) {
            self.update_stats(|s| s.reconnects += 1);
        }
        if let Some(old) = self.inner.conn.borrow_mut().replace(conn.clone()) {
            for t in old.tasks.borrow_mut().drain(..) {
                t.abort();
            }
        }
        Ok(conn)
    }

    async fn open(&self) -> Result<Rc<Conn>, ClientError> {
        let cfg = &self.inner.config;
        let stream: Connection = match &self.inner.peer {
            Peer::Tcp(addr) => tcp(*addr, cfg).await?,
            Peer::Named(name) => tcp(name.as_str(), cfg).await?,
            Peer::Unix(addr) => {
                zerorx::time::timeout(cfg.connect_timeout, UnixStream::connect_addr(addr))
                    .await
                    .map_err(|_| {
                        ClientError::Connect(io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!(
                                "connecting to Unix socket {addr:?}: no answer within {:?}",
                                cfg.connect_timeout
                            ),
                        ))
                    })?
                    .map_err(ClientError::Connect)?
                    .into()
            }
        };
        let stream = Rc::new(stream);
        let conn = Rc::new(Conn {
            out: OutQueue::default(),
            pending: RefCell::new(HashMap::new()),
            broken: RefCell::new(None),
            tasks: RefCell::new(Vec::new()),
        });
        let writer = {
            let (stream, conn, timeout) = (stream.clone(), conn.clone(), cfg.write_timeout);
            zerorx::spawn(async move {
                let res = write_loop(&stream, &conn.out, timeout, |_| {}).await;
                match res {
                    Ok(()) => {}
                    Err(WriteError::TimedOut) => conn.break_with("send timed out".into()),
                    Err(WriteError::Io(e)) => conn.break_with(format!("send failed: {e}")),
                }
            })
        };
        let reader = {
            let conn = conn.clone();
            let inner = Rc::downgrade(&self.inner);
            let messages = MessageStream::new(
                FrameReader::new(stream),
                cfg.transport,
                cfg.protocol,
                cfg.max_frame,
                cfg.limits,
            );
            let (protocol, limits) = (cfg.protocol, cfg.limits);
            zerorx::spawn(read_replies(messages, conn, inner, protocol, limits))
        };
        conn.tasks.borrow_mut().extend([writer, reader]);
        Ok(conn)
    }

    /// Calls `name` with the argument struct `args` and decodes the result struct
    /// `R` ([`Returns`](crate::Returns), [`Void`](crate::Void) or a
    /// hand-written one with declared exceptions).
    pub async fn call<A, R>(&self, name: &str, args: &A) -> Result<R, ClientError>
    where
        A: ThriftEncode,
        R: ThriftDecode,
    {
        let call = async {
            let conn = self.connection().await?;
            let seqid = self.inner.next_seqid.get();
            self.inner.next_seqid.set(seqid.wrapping_add(1));
            let cfg = &self.inner.config;
            let segs = encode_framed(
                Framing::of(cfg.transport, cfg.protocol, None),
                cfg.protocol,
                cfg.max_frame,
                name.as_bytes(),
                MessageType::Call,
                seqid,
                args,
            )
            .map_err(ClientError::Encode)?;
            let slot = Rc::new(Slot {
                reply: RefCell::new(None),
                waker: RefCell::new(None),
            });
            conn.pending.borrow_mut().insert(seqid, slot.clone());
            let _unregister = Unregister { conn: &conn, seqid };
            self.update_stats(|s| s.calls += 1);
            conn.out.push(segs);
            let (header, mut reader) = poll_fn(|cx| {
                if let Some(r) = slot.reply.borrow_mut().take() {
                    return Poll::Ready(r);
                }
                *slot.waker.borrow_mut() = Some(cx.waker().clone());
                Poll::Pending
            })
            .await?;
            // A multiplexed server answers `Service:method` as `method`.
            let unprefixed = name.rsplit(':').next().unwrap_or(name);
            if header.name[..] != *name.as_bytes() && header.name[..] != *unprefixed.as_bytes() {
                return Err(ClientError::UnexpectedReply(format!(
                    "reply names {:?}, the call was {name}",
                    String::from_utf8_lossy(&header.name)
                )));
            }
            match header.kind {
                MessageType::Reply => reader.decode::<R>().map_err(ClientError::Decode),
                MessageType::Exception => Err(ClientError::Application(
                    reader
                        .decode::<ApplicationException>()
                        .map_err(ClientError::Decode)?,
                )),
                other => Err(ClientError::UnexpectedReply(format!(
                    "message type {other:?} in reply to {name}"
                ))),
            }
        };
        match self.inner.config.call_timeout {
            None => call.await,
            Some(d) => match zerorx::time::timeout(d, call).await {
                Ok(r) => r,
                Err(_) => {
                    self.update_stats(|s| s.timeouts += 1);
                    Err(ClientError::Timeout)
                }
            },
        }
    }

    /// Sends a oneway call: returns once it is queued for sending (no reply exists).
    pub async fn call_oneway<A: ThriftEncode>(
        &self,
        name: &str,
        args: &A,
    ) -> Result<(), ClientError> {
        let conn = self.connection().await?;
        let seqid = self.inner.next_seqid.get();
        self.inner.next_seqid.set(seqid.wrapping_add(1));
        let cfg = &self.inner.config;
        let segs = encode_framed(
            Framing::of(cfg.transport, cfg.protocol, None),
            cfg.protocol,
            cfg.max_frame,
            name.as_bytes(),
            MessageType::Oneway,
            seqid,
            args,
        )
        .map_err(ClientError::Encode)?;
        self.update_stats(|s| s.calls += 1);
        conn.out.push(segs);
        Ok(())
    }
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("peer", &self.inner.peer)
            .field("config", &self.inner.config)
            .finish()
    }
}

/// Forgets a call's slot when the call ends (reply, error, timeout or cancellation),
/// so a late reply is counted as unmatched instead of kept.
struct Unregister<'a> {
    conn: &'a Conn,
    seqid: i32,
}

impl Drop for Unregister<'_> {
    fn drop(&mut self) {
        if let Ok(mut p) = self.conn.pending.try_borrow_mut() {
            p.remove(&self.seqid);
        }
    }
}

async fn read_replies(
    mut messages: MessageStream,
    conn: Rc<Conn>,
    inner: std::rc::Weak<Inner>,
    protocol: Protocol,
    limits: DecodeLimits,
) {
    let why = loop {
        match messages.next().await {
            Ok(Some(incoming)) => {
                // A THeader reply names its protocol.
                let protocol = incoming.header.map_or(protocol, |h| h.protocol);
                let mut r = MessageReader::new(protocol, incoming.bytes, limits);
                let header = match r.read_header() {
                    Ok(h) => h,
                    Err(e) => break format!("undecodable reply header: {e}"),
                };
                let slot = conn.pending.borrow_mut().remove(&header.seqid);
                match slot {
                    Some(s) => s.fill(Ok((header, r))),
                    None => {
                        if let Some(inner) = inner.upgrade() {
                            let mut st = inner.stats.get();
                            st.unmatched_replies += 1;
                            inner.stats.set(st);
                        }
                    }
                }
            }
            Ok(None) => break "closed by the server".to_owned(),
            Err(ReadError::Io(e)) => break format!("receive failed: {e}"),
            Err(e) => break e.to_string(),
        }
    };
    conn.break_with(why);
}
