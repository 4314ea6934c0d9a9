//! TCP, UDP and Unix domain sockets driven by the current worker's ring.
//!
//! A connected stream, TCP or Unix, is a [`Connection`] underneath
//! ([`TcpStream`] and [`UnixStream`] dereference to it): the readers and adapters
//! ([`FrameReader`], [`RecvStream`], [`Compat`]) take any [`AsConnection`].
//!
//! Socket types are `!Send`: they belong to the worker that created them (thread per
//! core). Create them inside tasks, e.g. with
//! [`Handle::spawn_on_each`](crate::Handle::spawn_on_each).

mod accepting;
mod assembly;
mod chain;
mod compat;
mod connection;
mod forward;
mod frame;
#[cfg(test)]
mod handover_tests;
mod recv_stream;
mod resolve;
mod tcp_listener;
mod tcp_stream;
#[cfg(feature = "tokio-io")]
pub(crate) mod tokio_io;
mod udp;
mod unix;

pub use crate::ops::poll::Readable;
pub use crate::ops::send_buf::SendBuf;
pub use crate::ops::send_queue::SendProgress;
pub use chain::{BytesChain, ChainSegments};
#[cfg(any(feature = "hyper", feature = "tokio-io"))]
pub(crate) use compat::poll_copy_out;
pub use compat::{Compat, WRITE_BACKLOG};
pub use connection::{AsConnection, Connection};
pub use forward::{forward, forward_both, FORWARD_BACKLOG};
pub use frame::{CopyStats, FrameReader};
pub use recv_stream::RecvStream;
pub use resolve::ToSocketAddrs;
pub use tcp_listener::TcpListener;
pub use tcp_stream::TcpStream;
pub use udp::{Datagram, UdpSocket};
pub use unix::{UnixDatagram, UnixListener, UnixStream};

/// Waits on the current worker's ring until `fd` is readable: for a descriptor a
/// library brings (a libfabric completion queue's wait fd) and wants to sleep on beside
/// everything else the worker waits for. The op keeps `fd` open until its completion.
///
/// Fails with `ErrorKind::Other` ("not inside a zerorx runtime worker") off a worker thread, or with
/// the submission error when the ring cannot take the op.
pub fn readable(fd: std::sync::Arc<OwnedFd>) -> io::Result<Readable> {
    crate::ops::poll::readable(fd)
}

use crate::ops::SharedFd;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::net::SocketAddr;
use std::os::fd::OwnedFd;

/// A new blocking, close-on-exec socket for `addr`'s family. Blocking on purpose: with
/// io_uring, a blocking socket makes the kernel wait (poll) for readiness, where a
/// non-blocking one would complete ops with `EAGAIN`.
fn new_socket(addr: &SocketAddr, ty: Type, proto: Protocol) -> io::Result<Socket> {
    Socket::new(Domain::for_address(*addr), ty.cloexec(), Some(proto))
}

/// One plain receive into the spare capacity of `buf` (what `what` names in the error
/// for a buffer without any); the bytes received (0: end of stream) with the buffer.
async fn recv_into(
    fd: &SharedFd,
    buf: bytes::BytesMut,
    what: &str,
) -> io::Result<(usize, bytes::BytesMut)> {
    if buf.capacity() == buf.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{what} needs a buffer with spare capacity"),
        ));
    }
    let (c, op) = crate::runtime::op::Op::submit(crate::ops::recv::RecvInto {
        socket: fd.clone(),
        buf,
    })?
    .await?;
    let n = c.result()? as usize;
    Ok((n, op.into_filled(n)))
}

fn shared(socket: Socket) -> SharedFd {
    crate::ops::SocketFd::shared(OwnedFd::from(socket))
}

fn sock_addr(addr: SocketAddr) -> SockAddr {
    SockAddr::from(addr)
}

fn to_std(addr: SockAddr) -> io::Result<SocketAddr> {
    addr.as_socket()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not an IP socket address"))
}
