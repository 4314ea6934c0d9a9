//! [`UdpSocket`].

use super::{new_socket, shared, sock_addr, to_std};
use crate::driver::op::Op;
use crate::io::recv::RecvFrom;
use crate::io::send::SendMsg;
use crate::io::SharedFd;
use bytes::{Bytes, BytesMut};
use socket2::{Protocol, SockRef, Type};
use std::io;
use std::net::SocketAddr;

/// A UDP socket owned by the worker that created it.
pub struct UdpSocket {
    fd: SharedFd,
}

impl UdpSocket {
    /// Binds to `addr`.
    pub fn bind(addr: SocketAddr) -> io::Result<UdpSocket> {
        let socket = new_socket(&addr, Type::DGRAM, Protocol::UDP)?;
        socket.bind(&sock_addr(addr))?;
        Ok(UdpSocket { fd: shared(socket) })
    }

    /// Wraps a bound std socket on the current worker (switched to blocking mode).
    pub fn from_std(socket: std::net::UdpSocket) -> io::Result<UdpSocket> {
        socket.set_nonblocking(false)?;
        Ok(UdpSocket {
            fd: std::rc::Rc::new(std::os::fd::OwnedFd::from(socket)),
        })
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        to_std(SockRef::from(&*self.fd).local_addr()?)
    }

    /// Sends one datagram to `to`; returns the bytes sent.
    pub async fn send_to(&self, buf: Bytes, to: SocketAddr) -> io::Result<usize> {
        let (c, _) = Op::submit(SendMsg::new(
            self.fd.clone(),
            vec![buf],
            0,
            Some(sock_addr(to)),
        ))?
        .await?;
        Ok(c.result()? as usize)
    }

    /// Receives one datagram into `buf`'s spare capacity; returns its length, the
    /// buffer and the sender.
    pub async fn recv_from(&self, buf: BytesMut) -> io::Result<(usize, BytesMut, SocketAddr)> {
        let (c, op) = Op::submit(RecvFrom::new(self.fd.clone(), buf))?.await?;
        let n = c.result()? as usize;
        let (buf, addr) = op.into_parts(n);
        Ok((n, buf, to_std(addr)?))
    }
}
