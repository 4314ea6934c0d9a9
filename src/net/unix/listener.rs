//! [`UnixListener`]: a Unix stream listener with one multishot accept kept armed.

use super::UnixStream;
use super::{abstract_addr, context, new_unix_socket, path_addr, show, sock_addr, to_std};
use crate::net::accepting::{count_reset, Acceptor};
use socket2::{SockAddr, SockRef, Socket, Type};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::SocketAddr;
use std::path::Path;

/// A Unix stream listening socket, on a filesystem path or a Linux abstract name.
///
/// One multishot accept is armed at the first [`accept`](Self::accept) and re-armed
/// whenever the kernel ends it, as [`TcpListener`](crate::net::TcpListener) does.
/// There is no `SO_REUSEPORT` for Unix sockets: to accept on several workers, bind
/// once, hand each worker its own fd for the same socket
/// ([`into_std`](Self::into_std) and `std::os::unix::net::UnixListener::try_clone`, then
/// [`from_std`](Self::from_std) there), and every worker's accept waits on it. The
/// kernel wakes one waiting accept per connection, and a woken accept takes every
/// connection queued by then, so a burst may land on one worker: unlike
/// `SO_REUSEPORT`'s hash, this does not spread connections evenly.
///
/// # Socket files
/// Binding a path creates a socket file, and nothing removes it when the listener
/// closes (as with `std`): a later [`bind`](Self::bind) of the same path fails with
/// `AddrInUse`, saying whether the file is stale (nobody listens on it) or in use. It
/// is never removed silently: remove it yourself, or bind with
/// [`bind_replacing`](Self::bind_replacing), which removes a stale socket file and
/// nothing else. Abstract names have no file: they are gone with the last socket bound
/// to them.
///
/// A dropped listener's socket closes as every zerorx socket does, through the ring
/// with the worker's next batch of submissions (after its cancelled accept, if one was
/// armed, has completed): a bind of the same abstract name, or a check of the same
/// path, in the same turn of the worker's loop still finds it open.
pub struct UnixListener {
    /// Unlike `TcpListener`, no shutdown on drop: other workers may accept on fds of
    /// the same socket (see above), and a shutdown would stop theirs too. The accept
    /// the drop cancels keeps the fd until its final completion; connections that
    /// arrive meanwhile go to the other fds' accepts, or are reset when the last
    /// closes.
    acceptor: Acceptor,
}

impl UnixListener {
    /// Binds and listens (backlog 1024) on the filesystem path `path`.
    ///
    /// Errors name the path. A path that exists is `AddrInUse`, and the message says
    /// what is there: a stale socket file (nobody listens: remove it, or use
    /// [`bind_replacing`](Self::bind_replacing)), a live server, or something that is
    /// not a socket. To tell the first two apart it connects to the socket file once
    /// (non-blocking): a live server sees a connection that closes at once.
    pub fn bind(path: impl AsRef<Path>) -> io::Result<UnixListener> {
        Self::bind_addr(&path_addr(path.as_ref())?)
    }

    /// Binds and listens on the Linux abstract name `name` (no file; `AddrInUse`
    /// while another socket is bound to it).
    pub fn bind_abstract(name: impl AsRef<[u8]>) -> io::Result<UnixListener> {
        Self::bind_addr(&abstract_addr(name.as_ref())?)
    }

    /// Binds and listens on `addr`: a path or an abstract name
    /// (`std::os::linux::net::SocketAddrExt::from_abstract_name`).
    pub fn bind_addr(addr: &SocketAddr) -> io::Result<UnixListener> {
        let kernel_addr = sock_addr(addr)?;
        let socket = new_unix_socket(Type::STREAM)?;
        socket.bind(&kernel_addr).map_err(|e| {
            if e.kind() != io::ErrorKind::AddrInUse {
                return context(e, "binding", addr);
            }
            let why = match addr.as_pathname() {
                Some(path) => format!("the path exists: {}", occupant(path)),
                None => "the abstract name is in use (it lives as long as a socket bound \
                         to it)"
                    .to_owned(),
            };
            io::Error::new(
                e.kind(),
                format!("binding Unix socket {}: {why}", show(addr)),
            )
        })?;
        socket
            .listen(1024)
            .map_err(|e| context(e, "listening on", addr))?;
        Ok(Self::from_socket(socket))
    }

    /// [`bind`](Self::bind), removing a stale socket file at `path` first: one that is
    /// a socket (not a symlink to one) and that nobody listens on (a connect to it is
    /// refused, which is how it is told from a live server: one that is live sees a
    /// connection that closes at once). Anything else at `path`
    /// (a live server's socket, a regular file, a directory) is left alone and the
    /// bind fails, saying so.
    ///
    /// Between the check and the bind another process could bind the path; the bind
    /// then fails with `AddrInUse` rather than take it over.
    pub fn bind_replacing(path: impl AsRef<Path>) -> io::Result<UnixListener> {
        let path = path.as_ref();
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_socket() => match listening(path) {
                Ok(false) => match std::fs::remove_file(path) {
                    Ok(()) => {}
                    // Someone else removed it meanwhile: as good.
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => {
                        return Err(io::Error::new(
                            e.kind(),
                            format!(
                                "removing the stale Unix socket file {}: {e}",
                                path.display()
                            ),
                        ))
                    }
                },
                Ok(true) => {
                    return Err(io::Error::new(
                        io::ErrorKind::AddrInUse,
                        format!(
                            "binding Unix socket {}: a server is listening on it; not replaced",
                            path.display()
                        ),
                    ))
                }
                Err(e) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!(
                            "binding Unix socket {}: cannot tell whether the socket file there \
                             is stale ({e}); not replaced",
                            path.display()
                        ),
                    ))
                }
            },
            // Not a socket: `bind` says what it is and refuses.
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("binding Unix socket {}: {e}", path.display()),
                ))
            }
        }
        Self::bind(path)
    }

    fn from_socket(socket: Socket) -> UnixListener {
        UnixListener {
            acceptor: Acceptor::new(crate::ops::SocketFd::shared(OwnedFd::from(socket))),
        }
    }

    /// Wraps a listening std socket on the current worker (switched to blocking mode,
    /// which io_uring needs to wait for connections itself).
    pub fn from_std(listener: std::os::unix::net::UnixListener) -> io::Result<UnixListener> {
        listener.set_nonblocking(false)?;
        Ok(UnixListener {
            acceptor: Acceptor::new(crate::ops::SocketFd::shared(OwnedFd::from(listener))),
        })
    }

    /// The listening socket as a `std::os::unix::net::UnixListener` (a new fd for the
    /// same socket), e.g. to hand it to other workers. Connections the armed accept
    /// already took from the queue but nobody [`accept`](Self::accept)ed are closed
    /// with this listener: call it before the first accept to lose none.
    pub fn into_std(self) -> io::Result<std::os::unix::net::UnixListener> {
        let std = SockRef::from(&*self.acceptor.fd).try_clone()?;
        Ok(std::os::unix::net::UnixListener::from(OwnedFd::from(std)))
    }

    /// The bound address: a path or an abstract name.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        to_std(&SockRef::from(&*self.acceptor.fd).local_addr()?)
    }

    /// Times the multishot accept was armed again after the kernel ended it.
    pub fn rearms(&self) -> u64 {
        self.acceptor.rearms()
    }

    /// Waits for the next connection and its peer's address (unnamed unless the peer
    /// bound its socket). One task should accept at a time: the armed accept
    /// remembers only the last waiter.
    ///
    /// A connection its peer closed before it was accepted is still returned (a Unix
    /// socket keeps its peer's address), and reads its end of stream; one the kernel
    /// reports aborted is skipped and counted in
    /// [`WorkerMetricsSnapshot::accept_reset`](crate::WorkerMetricsSnapshot::accept_reset).
    pub async fn accept(&self) -> io::Result<(UnixStream, SocketAddr)> {
        loop {
            let stream = UnixStream::from_fd(self.acceptor.next().await?);
            match stream.peer_addr() {
                Ok(peer) => return Ok((stream, peer)),
                Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => {
                    drop(stream);
                    count_reset();
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// Whether a server listens on the socket file at `path`: a non-blocking connect is
/// refused by a stale file, and accepted, or queued (`EAGAIN`: the backlog is full),
/// by a live one.
fn listening(path: &Path) -> io::Result<bool> {
    let probe = Socket::new(socket2::Domain::UNIX, Type::STREAM.cloexec(), None)?;
    probe.set_nonblocking(true)?;
    match probe.connect(&SockAddr::unix(path)?) {
        Ok(()) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => Ok(false),
        Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => Ok(true),
        Err(e) => Err(e),
    }
}

/// What is at `path`, for the error of a bind that found it taken.
fn occupant(path: &Path) -> String {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => match listening(path) {
            Ok(false) => "a stale socket file nobody listens on (left by a process that \
                          ended without removing it); remove it, or bind with \
                          UnixListener::bind_replacing"
                .to_owned(),
            Ok(true) => "a server is listening on it".to_owned(),
            Err(e) => format!("a socket file whose server could not be reached ({e})"),
        },
        Ok(meta) if meta.file_type().is_symlink() => {
            "a symbolic link (not removed by bind_replacing)".to_owned()
        }
        Ok(meta) if meta.is_dir() => "a directory".to_owned(),
        Ok(_) => "a file that is not a socket".to_owned(),
        Err(e) => format!("it could not be examined ({e})"),
    }
}

impl std::fmt::Debug for UnixListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnixListener")
            .field("local", &self.local_addr().ok())
            .finish()
    }
}
