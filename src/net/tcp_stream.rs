//! [`TcpStream`]: connect, send, receive into owned buffers, shutdown.

use super::SendBuf;
use super::{new_socket, sock_addr, to_std};
use crate::driver::op::{OpCode, Single};
use crate::ops::connect::Connect;
use crate::ops::recv::RecvInto;
use crate::ops::send::{Send, SendMsg, SendZc};
use crate::ops::shutdown::Shutdown;
use crate::ops::tcp_recv::Receiver;
use crate::ops::{SharedFd, SocketFd};
use crate::runtime::op::{boxed_op, recycle_op, Op};
use bytes::{Bytes, BytesMut};
use socket2::{Protocol, SockRef, Type};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use zcrx::RxBuf;

/// A TCP connection owned by the worker that created or accepted it.
///
/// Methods take `&self`: share it with an `Rc` to receive in one task and send from
/// others. To move a connection to another worker, turn it into a
/// `std::net::TcpStream` ([`into_std`](Self::into_std)), send that, and wrap it there
/// ([`from_std`](Self::from_std)).
pub struct TcpStream {
    /// The socket with the receive state beside it ([`SocketFd`]), in one allocation:
    /// a task that owns the stream keeps it (often twice, in an `async fn`'s argument
    /// and in its body) for its whole life, so the stream itself is one word.
    fd: SharedFd,
}

impl Drop for TcpStream {
    fn drop(&mut self) {
        // The armed receive owns the socket too: its state goes now (which cancels
        // it), not with the last owner.
        drop(self.fd.rx.take());
    }
}

impl TcpStream {
    pub(crate) fn from_fd(fd: OwnedFd) -> TcpStream {
        TcpStream::from_shared(SocketFd::shared(fd))
    }

    fn from_shared(fd: SharedFd) -> TcpStream {
        TcpStream { fd }
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
    /// pool but not yet taken by [`recv`](Self::recv) are dropped, so call it at a
    /// message boundary.
    pub async fn into_std(self) -> io::Result<std::net::TcpStream> {
        let mut fd = self.fd.clone();
        // Drops the receive state (cancelling an armed receive).
        drop(self);
        for _ in 0..10_000 {
            match SharedFd::try_unwrap(fd) {
                Ok(owned) => return Ok(std::net::TcpStream::from(owned.into_fd())),
                Err(shared) => fd = shared,
            }
            crate::executor::yield_now().await;
        }
        Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            "an op on this socket did not finish; the fd stays with it",
        ))
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
        Ok(TcpStream::from_shared(fd))
    }

    /// [`connect`](Self::connect) (resolution included) bounded by `timeout`
    /// (`ErrorKind::TimedOut`).
    pub async fn connect_timeout(
        peer: impl super::ToSocketAddrs,
        timeout: Duration,
    ) -> io::Result<TcpStream> {
        crate::time::timeout(timeout, Self::connect(peer)).await?
    }

    /// Sends all of `buf`, looping over short sends. `buf` is [`Bytes`] or a received
    /// [`RxBuf`] (see [`SendBuf`]); an `RxBuf` is sent from the pool as it is and its
    /// chunk returns to the pool once the kernel is done with the send.
    pub fn send(&self, buf: impl Into<SendBuf>) -> impl Future<Output = io::Result<()>> {
        self.send_buf(buf.into())
    }

    /// [`send`](Self::send) once the buffer is a [`SendBuf`]: not generic, so the future
    /// does not depend on the caller's buffer type.
    fn send_buf(&self, buf: SendBuf) -> SendAll<Send> {
        SendAll::new(Send {
            socket: self.fd.clone(),
            buf,
            offset: 0,
        })
    }

    /// Sends all of `buf` with `SEND_ZC`: the kernel transmits from `buf` itself and
    /// the future resolves once it has let go of it (the notification CQE). Worth it
    /// for large buffers on a real NIC; on loopback the kernel copies anyway.
    pub fn send_zc(&self, buf: impl Into<SendBuf>) -> impl Future<Output = io::Result<()>> {
        self.send_zc_buf(buf.into())
    }

    fn send_zc_buf(&self, buf: SendBuf) -> SendAll<SendZc> {
        SendAll::new(SendZc {
            socket: self.fd.clone(),
            buf,
            offset: 0,
        })
    }

    /// Sends all of `bufs` with SENDMSG (one gather op per attempt), looping over
    /// short sends.
    pub fn send_vectored(&self, bufs: &[Bytes]) -> impl Future<Output = io::Result<()>> {
        self.send_msg(bufs.iter().cloned().map(SendBuf::from).collect())
    }

    /// [`send_vectored`](Self::send_vectored) of buffers it takes over, which may be
    /// received [`RxBuf`]s: they go back to their pool once the kernel is done with the
    /// send.
    pub fn send_vectored_owned(&self, bufs: Vec<SendBuf>) -> impl Future<Output = io::Result<()>> {
        self.send_msg(bufs)
    }

    fn send_msg(&self, bufs: Vec<SendBuf>) -> SendAll<SendMsg> {
        SendAll::new(SendMsg::new(self.fd.clone(), bufs, 0, None))
    }

    /// Receives the next chunk of bytes from the worker's receive pool: `Ok(None)` at
    /// end of stream. The first call arms a multishot receive that stays armed, so
    /// data arriving between calls queues up without further syscalls. When the pool
    /// runs dry (`ENOBUFS`, or `ENOMEM` for a zero-copy pool) the receive is re-armed
    /// as soon as buffers come back (dropping an [`RxBuf`], on any thread, returns its
    /// buffer).
    ///
    /// In zero-copy mode the bytes come from RECV_ZC into the NIC queue's pool, when
    /// the flow is steered to that queue (see [`ReceiveMode`](crate::ReceiveMode));
    /// loopback peers and flows the kernel reports on another instance's queue
    /// (`EFAULT`) use the copy pool. On a worker that shares another worker's pool by
    /// handover, the receive runs on that worker and the buffers come over.
    ///
    /// One task should receive at a time (the armed receive remembers only the last
    /// waiter); sending from other tasks concurrently is fine.
    ///
    /// Errors with `Unsupported` when the runtime was built without a pool.
    pub fn recv(&self) -> impl Future<Output = io::Result<Option<RxBuf>>> + '_ {
        // A named one-word future: a task awaiting it keeps room for it all its life.
        Recv(self)
    }

    /// Polls for the next buffer, as [`recv`](Self::recv) does: `Pending` means nothing
    /// has arrived yet (and registers `cx`'s task to be woken when something does). An
    /// echo or a proxy takes what is queued this way, without waiting, and sends it all
    /// in one [`send_vectored_owned`](Self::send_vectored_owned).
    pub fn poll_recv(&self, cx: &mut Context<'_>) -> Poll<io::Result<Option<RxBuf>>> {
        self.with_rx(|rx| rx.poll_recv(&self.fd, cx))
    }

    /// The next buffer if one has arrived already, without waiting: `None` when
    /// nothing is there yet. It registers no waker (nor replaces the one a pending
    /// [`recv`](Self::recv) left), so a task that wants to wait for data calls `recv`
    /// or [`poll_recv`](Self::poll_recv). An echo or a proxy gathers what is queued
    /// this way and sends it in one [`send_vectored_owned`](Self::send_vectored_owned):
    ///
    /// ```no_run
    /// # async fn f(s: zerorx::net::TcpStream) -> std::io::Result<()> {
    /// use zerorx::net::SendBuf;
    /// while let Some(first) = s.recv().await? {
    ///     let mut bufs = vec![SendBuf::from(first)];
    ///     while let Some(Ok(Some(next))) = s.try_recv() {
    ///         bufs.push(next.into());
    ///     }
    ///     s.send_vectored_owned(bufs).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn try_recv(&self) -> Option<io::Result<Option<RxBuf>>> {
        let waker = crate::driver::peek_waker::peek_waker();
        match self.poll_recv(&mut Context::from_waker(&waker)) {
            Poll::Ready(r) => Some(r),
            Poll::Pending => None,
        }
    }

    /// Runs `f` on the receive state, made at the first use.
    fn with_rx<R>(&self, f: impl FnOnce(&mut Receiver) -> R) -> R {
        // Out of its cell meanwhile: nothing that runs then can reach this stream.
        let mut rx = self.fd.rx.take().unwrap_or_default();
        let out = f(&mut rx);
        self.fd.rx.set(Some(rx));
        out
    }

    /// Routes this stream's receives through worker `owner` (tests of the handover).
    #[cfg(test)]
    pub(crate) fn force_handover(&self, owner: u16) {
        self.with_rx(|rx| rx.force_handover(owner));
    }

    /// The receive source in use, once the first receive chose it.
    #[cfg(test)]
    pub(crate) fn recv_path(&self) -> Option<crate::ops::tcp_recv::Path> {
        self.with_rx(|rx| rx.path())
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

/// The future of [`TcpStream::recv`].
struct Recv<'a>(&'a TcpStream);

impl Future for Recv<'_> {
    type Output = io::Result<Option<RxBuf>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.0.poll_recv(cx)
    }
}

/// A send-like op that counts the bytes already sent.
trait SendProgress: OpCode {
    /// Bytes sent so far: the op sends from there on.
    fn sent(&mut self) -> &mut usize;
    /// Whether every byte is sent.
    fn done(&self) -> bool;
}

impl SendProgress for Send {
    fn sent(&mut self) -> &mut usize {
        &mut self.offset
    }

    fn done(&self) -> bool {
        self.offset >= self.buf.len()
    }
}

impl SendProgress for SendZc {
    fn sent(&mut self) -> &mut usize {
        &mut self.offset
    }

    fn done(&self) -> bool {
        self.offset >= self.buf.len()
    }
}

impl SendProgress for SendMsg {
    fn sent(&mut self) -> &mut usize {
        &mut self.skip
    }

    fn done(&self) -> bool {
        self.skip >= self.total()
    }
}

/// Resubmits a send-like op until every byte is sent: the kernel may send less than
/// asked.
///
/// Written by hand rather than as an `async fn`, and with the op's data boxed from the
/// start (the box goes to the driver as it is, and comes back between attempts), so
/// that it is two words: a task that receives and sends in a loop keeps room for this
/// future in its allocation even while it idles in a receive.
struct SendAll<T: SendProgress> {
    state: SendState<T>,
}

enum SendState<T: SendProgress> {
    /// Not in flight: submitted next (unless everything is sent). `None` once resolved.
    Ready(Option<Box<Single<T>>>),
    /// In flight; its data lives in the driver until the completion.
    Sending(Op<T>),
}

impl<T: SendProgress> SendAll<T> {
    fn new(op: T) -> SendAll<T> {
        SendAll {
            state: SendState::Ready(Some(boxed_op(op))),
        }
    }
}

impl<T: SendProgress> Future for SendAll<T> {
    type Output = io::Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            match &mut this.state {
                SendState::Ready(ready) => {
                    let Some(op) = ready.take() else {
                        return Poll::Ready(Err(io::Error::other("send polled after it resolved")));
                    };
                    if op.0.done() {
                        drop(recycle_op(op));
                        return Poll::Ready(Ok(()));
                    }
                    this.state = SendState::Sending(Op::submit_boxed(op)?);
                }
                SendState::Sending(flight) => {
                    let done = match flight.poll_boxed(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(done) => done,
                    };
                    this.state = SendState::Ready(None);
                    let (c, mut op) = done?;
                    match c.result() {
                        Ok(0) => {
                            drop(recycle_op(op));
                            return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                        }
                        Ok(n) => *op.0.sent() += n as usize,
                        Err(e) => {
                            drop(recycle_op(op));
                            return Poll::Ready(Err(e));
                        }
                    }
                    this.state = SendState::Ready(Some(op));
                }
            }
        }
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
        assert_eq!(
            returned(&|s: &'static TcpStream| s.send(bytes::Bytes::new())),
            16
        );
        assert!(size_of::<super::Receiver>() <= 40);
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
            let fd = s.fd.clone();
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
