//! [`UdpSocket`].

use super::{new_socket, shared, sock_addr, to_std};
use crate::metrics::add_owned;
use crate::ops::recv::RecvFrom;
pub use crate::ops::recv_msg::Datagram;
use crate::ops::recv_msg::RecvMsgMulti;
use crate::ops::send::SendMsg;
use crate::ops::send_way::AwaitedWay;
use crate::ops::SharedFd;
use crate::runtime::context;
use crate::runtime::multishot::MultiOp;
use crate::runtime::op::{not_in_runtime, Op};
use bytes::{Bytes, BytesMut};
use socket2::{Protocol, SockRef, Type};
use std::cell::RefCell;
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::task::{Context, Poll};

/// A UDP socket owned by the worker that created it.
pub struct UdpSocket {
    fd: SharedFd,
    rx: RefCell<PooledRx>,
}

/// The multishot RECVMSG kept armed by [`UdpSocket::recv_pooled`].
#[derive(Default)]
struct PooledRx {
    op: Option<MultiOp<RecvMsgMulti>>,
    /// The last receive ended with `ENOBUFS`: re-arm once the pool has a buffer.
    wait_buffers: bool,
}

impl UdpSocket {
    /// Binds to `addr`.
    pub fn bind(addr: SocketAddr) -> io::Result<UdpSocket> {
        let socket = new_socket(&addr, Type::DGRAM, Protocol::UDP)?;
        socket.bind(&sock_addr(addr))?;
        Ok(UdpSocket {
            fd: shared(socket),
            rx: RefCell::default(),
        })
    }

    /// Wraps a bound std socket on the current worker (switched to blocking mode).
    pub fn from_std(socket: std::net::UdpSocket) -> io::Result<UdpSocket> {
        socket.set_nonblocking(false)?;
        Ok(UdpSocket {
            fd: crate::ops::SocketFd::shared(std::os::fd::OwnedFd::from(socket)),
            rx: RefCell::default(),
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
            vec![buf.into()],
            0,
            Some(sock_addr(to)),
            AwaitedWay::plain(),
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

    /// Receives the next datagram into the worker's datagram pool (no copy in user
    /// space: [`Datagram::data`] is a slice of the pool buffer). The first call arms a
    /// multishot RECVMSG that stays armed, so datagrams arriving between calls queue up
    /// without further syscalls; when the pool runs dry (`ENOBUFS`) the receive is
    /// re-armed once buffers come back, and datagrams wait in the socket's buffer
    /// meanwhile (or are dropped by the kernel when it is full, as UDP does).
    ///
    /// One task should receive at a time. Errors with `Unsupported` when the runtime
    /// was built with `Builder::udp_pool(None)`; a socket error (e.g.
    /// `ConnectionRefused` on a connected socket) is returned once, and the next call
    /// receives again.
    pub async fn recv_pooled(&self) -> io::Result<Datagram> {
        poll_fn(|cx| self.poll_recv_pooled(cx)).await
    }

    fn poll_recv_pooled(&self, cx: &mut Context<'_>) -> Poll<io::Result<Datagram>> {
        let Some(core) = context::current() else {
            return Poll::Ready(Err(not_in_runtime()));
        };
        let pool = core.udp_pool()?;
        let mut st = self.rx.borrow_mut();
        let metrics = &core.shared.metrics;
        loop {
            if st.op.is_none() {
                if st.wait_buffers {
                    if pool.available() == 0 {
                        core.rx.wait_for_datagrams(cx.waker());
                        return Poll::Pending;
                    }
                    st.wait_buffers = false;
                }
                st.op = Some(MultiOp::submit(RecvMsgMulti::new(
                    self.fd.clone(),
                    pool.clone(),
                ))?);
            }
            let Some(op) = st.op.as_mut() else {
                continue;
            };
            let c = match op.poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    st.op = None;
                    continue;
                }
                Poll::Ready(Some(c)) => c,
            };
            if c.res > 0 {
                if !c.more() {
                    add_owned(&metrics.rearms[4], 1);
                }
                let d = op
                    .with_data(|d| d.decoded.pop_front())
                    .flatten()
                    .unwrap_or_else(|| {
                        Err(io::Error::other(
                            "the datagram receive lost a decoded completion",
                        ))
                    });
                return Poll::Ready(d);
            }
            if c.res < 0 {
                pool.stats_handle().record_errno(-c.res);
            }
            match -c.res {
                libc::ENOBUFS => {
                    add_owned(&metrics.recv_enobufs, 1);
                    add_owned(&metrics.rearms[0], 1);
                    pool.stats_handle().record_rearm();
                    st.wait_buffers = true;
                }
                libc::ENOSPC => add_owned(&metrics.rearms[1], 1),
                libc::EINTR => add_owned(&metrics.rearms[3], 1),
                // A datagram socket has no end of stream; the kernel stopped: re-arm.
                0 => add_owned(&metrics.rearms[4], 1),
                errno => return Poll::Ready(Err(io::Error::from_raw_os_error(errno))),
            }
        }
    }
}
