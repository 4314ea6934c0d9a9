//! [`UnixStream`]: a Unix [`Connection`], connected through the ring.

use super::{abstract_addr, context, new_unix_socket, path_addr, sock_addr, to_std};
use crate::net::{AsConnection, Connection};
use crate::ops::connect::Connect;
use crate::ops::SocketFd;
use crate::runtime::op::Op;
use socket2::Type;
use std::io;
use std::ops::Deref;
use std::os::fd::OwnedFd;
use std::os::unix::net::SocketAddr;
use std::path::Path;

/// A Unix stream connection owned by the worker that created or accepted it.
///
/// Its bytes arrive as [`TcpStream`](crate::net::TcpStream)'s do: one multishot
/// receive kept armed, into the worker's copy pool (Unix sockets never take the
/// zero-copy path: their bytes do not come from a NIC), as the same `RxBuf`s, so
/// [`FrameReader`](crate::net::FrameReader), [`RecvStream`](crate::net::RecvStream),
/// [`Compat`](crate::net::Compat) and everything built on them work unchanged. The
/// byte-stream methods are [`Connection`]'s, which this dereferences to.
///
/// ```no_run
/// # zerorx::Runtime::new()?.block_on(async {
/// use zerorx::net::{UnixListener, UnixStream};
/// let listener = UnixListener::bind("/run/app.sock")?;
/// zerorx::spawn(async move {
///     let (conn, _peer) = listener.accept().await?;
///     while let Some(buf) = conn.recv().await? {
///         conn.send(buf).await?;
///     }
///     Ok::<_, std::io::Error>(())
/// });
/// let client = UnixStream::connect("/run/app.sock").await?;
/// client.send(bytes::Bytes::from_static(b"ping")).await?;
/// # Ok::<_, std::io::Error>(()) })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct UnixStream {
    conn: Connection,
}

impl Deref for UnixStream {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        &self.conn
    }
}

impl From<UnixStream> for Connection {
    fn from(stream: UnixStream) -> Connection {
        stream.conn
    }
}

impl AsConnection for UnixStream {
    fn connection(&self) -> &Connection {
        &self.conn
    }
}

impl UnixStream {
    pub(crate) fn from_fd(fd: OwnedFd) -> UnixStream {
        UnixStream {
            conn: Connection::from_fd(fd),
        }
    }

    /// Connects to the socket at the filesystem path `path`, through the ring.
    /// Errors keep the kind of the connect's (`NotFound` for a missing path,
    /// `ConnectionRefused` when nobody listens on the socket file) and name the path.
    /// Dropping the future cancels the connect.
    pub async fn connect(path: impl AsRef<Path>) -> io::Result<UnixStream> {
        let addr = path_addr(path.as_ref())?;
        Self::connect_addr(&addr).await
    }

    /// Connects to the Linux abstract name `name`.
    pub async fn connect_abstract(name: impl AsRef<[u8]>) -> io::Result<UnixStream> {
        let addr = abstract_addr(name.as_ref())?;
        Self::connect_addr(&addr).await
    }

    /// Connects to `addr`: a path or an abstract name.
    pub async fn connect_addr(addr: &SocketAddr) -> io::Result<UnixStream> {
        let kernel_addr = sock_addr(addr)?;
        let socket = new_unix_socket(Type::STREAM)?;
        let fd = SocketFd::shared(OwnedFd::from(socket));
        let connected = async {
            let (c, _op) = Op::submit(Connect {
                socket: fd.clone(),
                addr: kernel_addr,
            })?
            .await?;
            c.result().map(drop)
        };
        connected
            .await
            .map_err(|e| context(e, "connecting to", addr))?;
        Ok(UnixStream {
            conn: Connection::from_shared(fd),
        })
    }

    /// Two connected streams (`socketpair(2)`) on the current worker, e.g. to talk to a
    /// child process or between tasks. Their addresses are unnamed.
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let (a, b) = socket2::Socket::pair(socket2::Domain::UNIX, Type::STREAM.cloexec(), None)?;
        Ok((
            UnixStream::from_fd(OwnedFd::from(a)),
            UnixStream::from_fd(OwnedFd::from(b)),
        ))
    }

    /// Wraps a connected std stream, on the current worker (switched to blocking mode,
    /// which io_uring needs to wait for readiness itself).
    pub fn from_std(stream: std::os::unix::net::UnixStream) -> io::Result<UnixStream> {
        stream.set_nonblocking(false)?;
        Ok(UnixStream::from_fd(OwnedFd::from(stream)))
    }

    /// Gives the socket back as a `std::os::unix::net::UnixStream`, e.g. to hand it to
    /// another worker. As [`TcpStream::into_std`](crate::net::TcpStream::into_std): an
    /// armed receive is cancelled and waited for, and bytes received but not yet taken
    /// are dropped, so call it at a message boundary.
    pub async fn into_std(self) -> io::Result<std::os::unix::net::UnixStream> {
        Ok(std::os::unix::net::UnixStream::from(
            self.conn.into_fd().await?,
        ))
    }

    /// Only the byte stream: the same as `Connection::from(self)`.
    pub fn into_connection(self) -> Connection {
        self.conn
    }

    /// The local address (unnamed unless this side was bound).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        to_std(&self.socket().local_addr()?)
    }

    /// The peer's address (for a connection accepted from a client that did not bind,
    /// unnamed).
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        to_std(&self.socket().peer_addr()?)
    }
}

impl std::fmt::Debug for UnixStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnixStream")
            .field("local", &self.local_addr().ok())
            .field("peer", &self.peer_addr().ok())
            .finish()
    }
}
