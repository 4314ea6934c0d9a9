//! [`TcpStream`]: connect, send, receive into owned buffers, shutdown.

use super::{new_socket, sock_addr, to_std};
use crate::driver::op::Op;
use crate::io::connect::Connect;
use crate::io::recv::RecvInto;
use crate::io::send::{Send, SendMsg};
use crate::io::shutdown::Shutdown;
use crate::io::SharedFd;
use bytes::{Bytes, BytesMut};
use socket2::{Protocol, SockRef, Type};
use std::io;
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::rc::Rc;
use std::time::Duration;

/// A TCP connection owned by the worker that created or accepted it.
pub struct TcpStream {
    fd: SharedFd,
}

impl TcpStream {
    pub(crate) fn from_fd(fd: OwnedFd) -> TcpStream {
        TcpStream { fd: Rc::new(fd) }
    }

    /// Connects to `addr`. Dropping the future cancels the connect; the socket is
    /// closed once the kernel has let go of it.
    pub async fn connect(addr: SocketAddr) -> io::Result<TcpStream> {
        let socket = new_socket(&addr, Type::STREAM, Protocol::TCP)?;
        let fd: SharedFd = Rc::new(OwnedFd::from(socket));
        let (c, _op) = Op::submit(Connect {
            socket: fd.clone(),
            addr: sock_addr(addr),
        })?
        .await?;
        c.result()?;
        Ok(TcpStream { fd })
    }

    /// [`connect`](Self::connect) bounded by `timeout` (`ErrorKind::TimedOut`).
    pub async fn connect_timeout(addr: SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
        crate::time::timeout(timeout, Self::connect(addr)).await?
    }

    /// Sends all of `buf`, looping over short sends.
    pub async fn send(&self, buf: Bytes) -> io::Result<()> {
        let mut op = Send {
            socket: self.fd.clone(),
            buf,
            offset: 0,
        };
        while op.offset < op.buf.len() {
            let (c, back) = Op::submit(op)?.await?;
            op = back;
            match c.result()? {
                0 => return Err(io::ErrorKind::WriteZero.into()),
                n => op.offset += n as usize,
            }
        }
        Ok(())
    }

    /// Sends all of `bufs` with SENDMSG (one gather op per attempt), looping over
    /// short sends.
    pub async fn send_vectored(&self, bufs: &[Bytes]) -> io::Result<()> {
        let total: usize = bufs.iter().map(Bytes::len).sum();
        let mut op = SendMsg::new(self.fd.clone(), bufs.to_vec(), 0, None);
        while op.skip < total {
            let (c, back) = Op::submit(op)?.await?;
            op = back;
            match c.result()? {
                0 => return Err(io::ErrorKind::WriteZero.into()),
                n => op.skip += n as usize,
            }
        }
        Ok(())
    }

    /// Receives into the spare capacity of `buf` (reserve capacity first) and returns
    /// the number of bytes received (0 = end of stream) with the buffer. Dropping the
    /// future cancels the receive.
    pub async fn recv_into(&self, buf: BytesMut) -> io::Result<(usize, BytesMut)> {
        if buf.capacity() == buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "recv_into needs a buffer with spare capacity",
            ));
        }
        let (c, op) = Op::submit(RecvInto {
            socket: self.fd.clone(),
            buf,
        })?
        .await?;
        let n = c.result()? as usize;
        Ok((n, op.into_filled(n)))
    }

    /// Shuts down the read, write or both halves.
    pub async fn shutdown(&self, how: std::net::Shutdown) -> io::Result<()> {
        let how = match how {
            std::net::Shutdown::Read => libc::SHUT_RD,
            std::net::Shutdown::Write => libc::SHUT_WR,
            std::net::Shutdown::Both => libc::SHUT_RDWR,
        };
        let (c, _) = Op::submit(Shutdown {
            socket: self.fd.clone(),
            how,
        })?
        .await?;
        c.result().map(drop)
    }

    /// Sets `TCP_NODELAY`.
    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        self.socket().set_nodelay(on)
    }

    /// The socket, for any other option (`socket2`).
    pub fn socket(&self) -> SockRef<'_> {
        SockRef::from(&*self.fd)
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
