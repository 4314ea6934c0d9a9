//! [`TcpStream`]: a TCP [`Connection`] with what only TCP has (connecting by name,
//! `TCP_NODELAY`, IP addresses).

use super::connection::Connection;
use super::{new_socket, sock_addr, to_std};
use crate::ops::connect::Connect;
use crate::ops::SocketFd;
use crate::runtime::op::Op;
use socket2::{Protocol, Type};
use std::io;
use std::net::SocketAddr;
use std::ops::Deref;
use std::os::fd::OwnedFd;
use std::time::Duration;

/// A TCP connection owned by the worker that created or accepted it.
///
/// The byte-stream methods ([`send`](Connection::send), [`recv`](Connection::recv),
/// [`shutdown`](Connection::shutdown)...) are [`Connection`]'s, which this
/// dereferences to; `Connection::from(stream)` keeps only those, for code that serves
/// TCP and Unix connections alike.
///
/// Methods take `&self`: share it with an `Rc` to receive in one task and send from
/// others. To move a connection to another worker, turn it into a
/// `std::net::TcpStream` ([`into_std`](Self::into_std)), send that, and wrap it there
/// ([`from_std`](Self::from_std)).
pub struct TcpStream {
    conn: Connection,
}

impl Deref for TcpStream {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        &self.conn
    }
}

impl From<TcpStream> for Connection {
    fn from(stream: TcpStream) -> Connection {
        stream.conn
    }
}

impl super::AsConnection for TcpStream {
    fn connection(&self) -> &Connection {
        &self.conn
    }
}

impl TcpStream {
    pub(crate) fn from_fd(fd: OwnedFd) -> TcpStream {
        TcpStream {
            conn: Connection::from_fd(fd),
        }
    }

    /// Wraps a connected std stream, on the current worker. The socket is switched to
    /// blocking mode, which io_uring needs to wait for readiness itself.
    pub fn from_std(stream: std::net::TcpStream) -> io::Result<TcpStream> {
        stream.set_nonblocking(false)?;
        Ok(TcpStream::from_fd(OwnedFd::from(stream)))
    }

    /// Gives the socket back as a `std::net::TcpStream`, e.g. to hand it to another
    /// worker. An armed receive is cancelled first and this waits (about one loop
    /// turn) until the kernel has let go of the fd; bytes already received into the
    /// pool but not yet taken by [`recv`](Connection::recv) are dropped, so call it at
    /// a message boundary.
    pub async fn into_std(self) -> io::Result<std::net::TcpStream> {
        Ok(std::net::TcpStream::from(self.conn.into_fd().await?))
    }

    /// Only the byte stream: the same as `Connection::from(self)`.
    pub fn into_connection(self) -> Connection {
        self.conn
    }

    /// Connects to `peer`: an address, a list of addresses, or a `"host:port"` name,
    /// resolved on the runtime's blocking pool (see [`ToSocketAddrs`](super::ToSocketAddrs)).
    /// Several addresses are tried in order until one connects; when none does, the
    /// error (of the last one's kind) names the host and every address tried. One
    /// address given as such fails with the connect's own error. Dropping the future
    /// cancels the connect; the socket is closed once the kernel has let go of it.
    ///
    /// ```no_run
    /// # async fn f() -> std::io::Result<()> {
    /// let db = zerorx::net::TcpStream::connect("db.internal:9090").await?;
    /// let local = zerorx::net::TcpStream::connect("127.0.0.1:9090".parse::<std::net::SocketAddr>().unwrap()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect(peer: impl super::ToSocketAddrs) -> io::Result<TcpStream> {
        let super::resolve::Resolved {
            addrs,
            shown,
            named,
        } = super::resolve::resolve(peer).await?;
        let mut failures = Vec::new();
        for addr in &addrs {
            match Self::connect_addr(*addr).await {
                Ok(s) => return Ok(s),
                Err(e) => failures.push((*addr, e)),
            }
        }
        match failures.pop() {
            Some((_, e)) if !named && addrs.len() == 1 => Err(e),
            Some((last, e)) => {
                let mut tried: Vec<String> =
                    failures.iter().map(|(a, e)| format!("{a}: {e}")).collect();
                tried.push(format!("{last}: {e}"));
                Err(io::Error::new(
                    e.kind(),
                    format!("connecting to {shown}: {}", tried.join("; ")),
                ))
            }
            None => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "connect: no address given",
            )),
        }
    }

    /// Connects to one address.
    async fn connect_addr(addr: SocketAddr) -> io::Result<TcpStream> {
        let socket = new_socket(&addr, Type::STREAM, Protocol::TCP)?;
        let fd = SocketFd::shared(OwnedFd::from(socket));
        let (c, _op) = Op::submit(Connect {
            socket: fd.clone(),
            addr: sock_addr(addr),
        })?
        .await?;
        c.result()?;
        Ok(TcpStream {
            conn: Connection::from_shared(fd),
        })
    }

    /// [`connect`](Self::connect) (resolution included) bounded by `timeout`
    /// (`ErrorKind::TimedOut`).
    pub async fn connect_timeout(
        peer: impl super::ToSocketAddrs,
        timeout: Duration,
    ) -> io::Result<TcpStream> {
        crate::time::timeout(timeout, Self::connect(peer)).await?
    }

    /// Sets `TCP_NODELAY`.
    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        self.socket().set_nodelay(on)
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        to_std(self.socket().local_addr()?)
    }

    /// The peer address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        to_std(self.socket().peer_addr()?)
    }
}

impl std::fmt::Debug for TcpStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpStream")
            .field("local", &self.local_addr().ok())
            .field("peer", &self.peer_addr().ok())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::TcpStream;
    use std::mem::size_of;

    /// The size of what `f` returns.
    fn returned<A, R>(_: &impl Fn(A) -> R) -> usize {
        size_of::<R>()
    }

    #[test]
    fn a_stream_and_its_futures_are_small() {
        // A task that owns a stream and loops over receive and send keeps room for all
        // three for its whole life, idle or not.
        assert_eq!(size_of::<TcpStream>(), 8);
        assert_eq!(returned(&|s: &'static TcpStream| s.recv()), 8);
        assert_eq!(size_of::<crate::net::Connection>(), 8);
        assert_eq!(
            returned(&|s: &'static TcpStream| s.send(bytes::Bytes::new())),
            16
        );
        assert!(size_of::<crate::ops::tcp_recv::Receiver>() <= 40);
        // With the armed receive op in it (`io::stream_recv`).
        assert!(size_of::<crate::ops::SocketFd>() <= 88);
    }

    #[test]
    fn a_dropped_stream_keeps_its_socket_until_the_cancelled_receive_ends() {
        use crate::net::TcpListener;
        use crate::ops::SharedFd;
        use crate::runtime::context;
        use crate::{ReceiveMode, Runtime};
        use std::io::Write;
        use std::time::Duration;

        let rt = Runtime::builder()
            .threads(1)
            .receive_mode(ReceiveMode::Copy)
            .pool_size(16 * 4096)
            .chunk_size(4096)
            .build()
            .expect("runtime");
        rt.block_on(async {
            let core = context::current().expect("worker");
            let pool = core.rx.copy_pool().cloned().expect("copy pool");
            let held = || pool.stats().in_use;
            assert_eq!(held(), 0);
            let l = TcpListener::bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
            let mut peer =
                std::net::TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
            let (s, _) = l.accept().await.expect("accept");
            // Arm the receive, then let data land in its buffers that nobody takes.
            let first = crate::timeout(Duration::from_millis(20), s.recv()).await;
            assert!(first.is_err(), "no data was sent yet");
            let fd = s.shared_fd().clone();
            assert!(fd.recv_in_flight(), "the receive op lives in the socket");
            // Less than the hold limit, so the receive stays armed.
            peer.write_all(&[7u8; 100]).expect("write");
            for _ in 0..500 {
                if pool.stats().bytes >= 100 {
                    break;
                }
                crate::sleep(Duration::from_millis(2)).await;
            }
            assert_eq!(pool.stats().bytes, 100, "the peer's bytes reached the pool");
            assert!(held() > 0, "the queued buffer is held");
            let ops = core.driver.borrow().ops_in_flight();
            drop(s);
            // The slab still holds the socket (and its fd) for the cancelled receive.
            assert!(SharedFd::count(&fd) > 1, "the op keeps the socket");
            assert!(fd.recv_in_flight());
            for _ in 0..500 {
                if SharedFd::count(&fd) == 1 && held() == 0 {
                    break;
                }
                crate::sleep(Duration::from_millis(2)).await;
            }
            assert_eq!(SharedFd::count(&fd), 1, "the final completion freed the op");
            assert!(!fd.recv_in_flight(), "the op left the socket");
            assert_eq!(held(), 0, "every received buffer went back");
            assert_eq!(core.driver.borrow().ops_in_flight(), ops - 1);
        });
    }
}
