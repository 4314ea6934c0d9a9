//! [`UnixDatagram`]: Unix datagram sockets, sending from and receiving into owned
//! buffers through the ring.

use super::{abstract_addr, context, new_unix_socket, path_addr, show, sock_addr, to_std};
use crate::ops::recv::RecvFrom;
use crate::ops::send::SendMsg;
use crate::ops::send_way::AwaitedWay;
use crate::ops::{SharedFd, SocketFd};
use crate::runtime::op::Op;
use bytes::{Bytes, BytesMut};
use socket2::{SockRef, Type};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::net::SocketAddr;
use std::path::Path;

/// A Unix datagram socket owned by the worker that created it: bound to a path, an
/// abstract name, or unbound; connected to one peer or sending to any.
///
/// Datagrams are received into the spare capacity of a buffer the caller owns (one
/// RECVMSG per call; bytes past the buffer's room are dropped, as `recv(2)` does) and
/// sent as one SENDMSG each. A bound path leaves a socket file, as
/// [`UnixListener`](super::UnixListener)'s does.
pub struct UnixDatagram {
    fd: SharedFd,
}

impl UnixDatagram {
    fn from_fd(fd: OwnedFd) -> UnixDatagram {
        UnixDatagram {
            fd: SocketFd::shared(fd),
        }
    }

    /// Binds to the filesystem path `path` (`AddrInUse`, naming it, when the path
    /// exists).
    pub fn bind(path: impl AsRef<Path>) -> io::Result<UnixDatagram> {
        Self::bind_addr(&path_addr(path.as_ref())?)
    }

    /// Binds to the Linux abstract name `name`.
    pub fn bind_abstract(name: impl AsRef<[u8]>) -> io::Result<UnixDatagram> {
        Self::bind_addr(&abstract_addr(name.as_ref())?)
    }

    /// Binds to `addr`: a path or an abstract name.
    pub fn bind_addr(addr: &SocketAddr) -> io::Result<UnixDatagram> {
        let kernel_addr = sock_addr(addr)?;
        let socket = new_unix_socket(Type::DGRAM)?;
        socket
            .bind(&kernel_addr)
            .map_err(|e| context(e, "binding", addr))?;
        Ok(UnixDatagram::from_fd(OwnedFd::from(socket)))
    }

    /// A socket bound to no address: it can send, and receive replies only once
    /// connected (a peer cannot address it).
    pub fn unbound() -> io::Result<UnixDatagram> {
        Ok(UnixDatagram::from_fd(OwnedFd::from(new_unix_socket(
            Type::DGRAM,
        )?)))
    }

    /// Two connected datagram sockets (`socketpair(2)`).
    pub fn pair() -> io::Result<(UnixDatagram, UnixDatagram)> {
        let (a, b) = socket2::Socket::pair(socket2::Domain::UNIX, Type::DGRAM.cloexec(), None)?;
        Ok((
            UnixDatagram::from_fd(OwnedFd::from(a)),
            UnixDatagram::from_fd(OwnedFd::from(b)),
        ))
    }

    /// Wraps a std socket on the current worker (switched to blocking mode).
    pub fn from_std(socket: std::os::unix::net::UnixDatagram) -> io::Result<UnixDatagram> {
        socket.set_nonblocking(false)?;
        Ok(UnixDatagram::from_fd(OwnedFd::from(socket)))
    }

    /// The socket as a `std::os::unix::net::UnixDatagram` (a new fd for the same
    /// socket). A receive whose future was dropped may still take one datagram until
    /// its cancellation completes.
    pub fn into_std(self) -> io::Result<std::os::unix::net::UnixDatagram> {
        let std = SockRef::from(&*self.fd).try_clone()?;
        Ok(std::os::unix::net::UnixDatagram::from(OwnedFd::from(std)))
    }

    /// Sends to and receives from the socket at `path` only. Immediate (a datagram
    /// connect only records the peer); errors name the path.
    pub fn connect(&self, path: impl AsRef<Path>) -> io::Result<()> {
        self.connect_addr(&path_addr(path.as_ref())?)
    }

    /// [`connect`](Self::connect) to the Linux abstract name `name`.
    pub fn connect_abstract(&self, name: impl AsRef<[u8]>) -> io::Result<()> {
        self.connect_addr(&abstract_addr(name.as_ref())?)
    }

    /// [`connect`](Self::connect) to `addr`: a path or an abstract name.
    pub fn connect_addr(&self, addr: &SocketAddr) -> io::Result<()> {
        SockRef::from(&*self.fd)
            .connect(&sock_addr(addr)?)
            .map_err(|e| context(e, "connecting to", addr))
    }

    /// Sends one datagram to the socket at `path`; returns the bytes sent.
    pub async fn send_to(&self, buf: Bytes, path: impl AsRef<Path>) -> io::Result<usize> {
        let addr = path_addr(path.as_ref())?;
        self.send_to_addr(buf, &addr).await
    }

    /// Sends one datagram to `addr` (a path or an abstract name); returns the bytes
    /// sent. Errors name the address (`NotFound`: nothing at that path;
    /// `ConnectionRefused`: nobody bound to it).
    pub async fn send_to_addr(&self, buf: Bytes, addr: &SocketAddr) -> io::Result<usize> {
        let to = sock_addr(addr)?;
        self.send_msg(buf, Some(to))
            .await
            .map_err(|e| context(e, "sending to", addr))
    }

    /// Sends one datagram to the connected peer; returns the bytes sent.
    pub async fn send(&self, buf: Bytes) -> io::Result<usize> {
        self.send_msg(buf, None).await
    }

    async fn send_msg(&self, buf: Bytes, to: Option<socket2::SockAddr>) -> io::Result<usize> {
        let send = SendMsg::new(
            self.fd.clone(),
            vec![buf.into()],
            0,
            to,
            AwaitedWay::plain(),
        );
        let (c, _) = Op::submit(send)?.await?;
        Ok(c.result()? as usize)
    }

    /// Receives one datagram into `buf`'s spare capacity; returns its length, the
    /// buffer and the sender (unnamed for an unbound sender).
    pub async fn recv_from(&self, buf: BytesMut) -> io::Result<(usize, BytesMut, SocketAddr)> {
        let (c, op) = Op::submit(RecvFrom::new(self.fd.clone(), buf))?.await?;
        let n = c.result()? as usize;
        let (buf, addr) = op.into_parts(n);
        Ok((n, buf, to_std(&addr)?))
    }

    /// Receives one datagram into `buf`'s spare capacity; returns its length and the
    /// buffer.
    pub async fn recv(&self, buf: BytesMut) -> io::Result<(usize, BytesMut)> {
        crate::net::recv_into(&self.fd, buf, "recv").await
    }

    /// The bound address (unnamed when unbound).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        to_std(&SockRef::from(&*self.fd).local_addr()?)
    }

    /// The connected peer's address (`NotConnected` when not connected).
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        to_std(&SockRef::from(&*self.fd).peer_addr()?)
    }

    /// The socket, for any option (`socket2`).
    pub fn socket(&self) -> SockRef<'_> {
        SockRef::from(&*self.fd)
    }
}

impl std::fmt::Debug for UnixDatagram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let local = self.local_addr().ok();
        f.debug_struct("UnixDatagram")
            .field("local", &local.as_ref().map(show))
            .finish()
    }
}
