//! [`Connection`]: a connected stream socket, TCP or Unix, with the byte-stream
//! methods both share (send, receive into the worker's pools, shutdown), and
//! [`AsConnection`], how the readers and adapters built on it hold one.

use super::SendBuf;
use crate::driver::op::{OpCode, Single};
use crate::driver::Completion;
use crate::ops::send::{Send, SendMsg};
use crate::ops::send_way::AwaitedWay;
use crate::ops::shutdown::Shutdown;
use crate::ops::{SharedFd, SocketFd};
use crate::runtime::op::{boxed_op, recycle_op, Op};
use bytes::{Bytes, BytesMut};
use socket2::SockRef;
use std::future::Future;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use zcrx::RxBuf;

/// A connected stream socket (TCP or Unix) owned by the worker that created or
/// accepted it: sends, receives into the worker's receive pools (zero-copy where the
/// flow allows it; Unix sockets always through the copy pool) and shutdown.
///
/// [`TcpStream`](super::TcpStream) and [`UnixStream`](super::UnixStream) each wrap one
/// and dereference to it, so `stream.recv()` and `stream.send(..)` are these methods;
/// code that serves either kind of connection takes a `Connection` (`stream.into()`)
/// or an [`AsConnection`].
///
/// Methods take `&self`: share it with an `Rc` to receive in one task and send from
/// others.
pub struct Connection {
    /// The socket with the receive state beside it ([`SocketFd`]), in one allocation:
    /// a task that owns the stream keeps it (often twice, in an `async fn`'s argument
    /// and in its body) for its whole life, so the stream itself is one word.
    fd: SharedFd,
}

impl Drop for Connection {
    fn drop(&mut self) {
        // The armed receive owns the socket too: its state goes now (which cancels
        // it), not with the last owner.
        drop(self.fd.take_rx());
        if SharedFd::count(&self.fd) > 1 {
            crate::ops::send_way::reset_if_lingering(&self.fd);
        }
    }
}

impl Connection {
    pub(crate) fn from_fd(fd: OwnedFd) -> Connection {
        Connection::from_shared(SocketFd::shared(fd))
    }

    pub(crate) fn from_shared(fd: SharedFd) -> Connection {
        Connection { fd }
    }

    /// The socket and its receive state (tests reach the op through it).
    #[cfg(test)]
    pub(crate) fn shared_fd(&self) -> &SharedFd {
        &self.fd
    }

    /// The fd back, once no op holds it: an armed receive is cancelled first and
    /// this waits (about one loop turn) until the kernel has let go of the fd. Bytes
    /// already received into the pool but not yet taken are dropped.
    pub(crate) async fn into_fd(self) -> io::Result<OwnedFd> {
        let mut fd = self.fd.clone();
        // Drops the receive state (cancelling an armed receive).
        drop(self);
        for _ in 0..10_000 {
            match SharedFd::try_unwrap(fd) {
                Ok(owned) => return Ok(owned.into_fd()),
                Err(shared) => fd = shared,
            }
            crate::executor::yield_now().await;
        }
        Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            "an op on this socket did not finish; the fd stays with it",
        ))
    }

    /// Sends all of `buf`, looping over short sends. `buf` is [`Bytes`], a received
    /// [`RxBuf`] or a [`RegisteredBuf`](crate::runtime::RegisteredBuf) (see
    /// [`SendBuf`]); an `RxBuf` is sent from the pool as it is and its chunk returns to
    /// the pool once the kernel is done with the send.
    ///
    /// Under the runtime's [`SendZeroCopy`](crate::SendZeroCopy) policy, as queued
    /// sends: a send of its size goes out zero-copy on a socket whose zero-copy sends
    /// the kernel has not copied, and resolves once the kernel let go of the buffer
    /// (its notification). Dropped before then, the buffer stays with the runtime until
    /// the notification.
    pub fn send(&self, buf: impl Into<SendBuf>) -> impl Future<Output = io::Result<()>> {
        self.send_buf(buf.into())
    }

    /// [`send`](Self::send) once the buffer is a [`SendBuf`]: not generic, so the future
    /// does not depend on the caller's buffer type.
    fn send_buf(&self, buf: SendBuf) -> SendAll<Send> {
        SendAll::new(Send {
            socket: self.fd.clone(),
            way: AwaitedWay::policy(),
            buf,
            offset: 0,
        })
    }

    /// Sends all of `buf` with `SEND_ZC` whatever the policy says: the kernel transmits
    /// from `buf` itself and the future resolves once it has let go of it (the
    /// notification CQE), which also says whether the kernel copied after all (counted
    /// in [`send_zc_copied`](crate::WorkerMetricsSnapshot::send_zc_copied)). Worth it for
    /// large buffers on a real NIC; on loopback the kernel copies anyway. Fails with
    /// the kernel's error where it refuses (a Unix socket).
    pub fn send_zc(&self, buf: impl Into<SendBuf>) -> impl Future<Output = io::Result<()>> {
        SendAll::new(Send {
            socket: self.fd.clone(),
            buf: buf.into(),
            offset: 0,
            way: AwaitedWay::forced(),
        })
    }

    /// Queues `buf` to be sent after everything queued before it, and returns at once:
    /// no task waits for the send. The runtime takes the send's completion itself,
    /// sends the rest of a short send, then everything queued meanwhile in one
    /// gathered send, and drops each buffer once it is sent (a received [`RxBuf`]
    /// returns to its pool then). A reply that nobody needs to wait for costs no
    /// wake-up and no op of the task's: the cheapest way to answer.
    ///
    /// On a lightly loaded worker (its last loop turn reaped at most one completion) the
    /// first such send of the turn, one buffer on a connection with nothing queued,
    /// goes out inside this call, in one non-blocking `send`; later ones wait for the
    /// turn's end and go out together, one kernel entry for all. A buffer that more
    /// sends will follow this turn is better queued with
    /// [`queue_send_more`](Self::queue_send_more).
    ///
    /// The first failure of a queued send (the peer gone, a reset) is kept: this and
    /// every later call return it, and so does [`flush_sends`](Self::flush_sends);
    /// what was still queued is dropped. Queued sends go out in order among
    /// themselves; do not mix them with awaited [`send`](Self::send)s whose order
    /// matters (await [`flush_sends`](Self::flush_sends) first).
    ///
    /// Sends of the runtime's [`SendZeroCopy`](crate::SendZeroCopy) size go out
    /// zero-copy where the kernel does not copy them anyway (by default above 16 KiB,
    /// and not to this host); their buffers are kept until the kernel's notification.
    ///
    /// Nothing bounds the queue but the caller: a peer that reads slowly leaves the
    /// bytes here ([`send_backlog`](Self::send_backlog) says how many), and received
    /// buffers queued stay out of their pool, so a forwarder should await
    /// `flush_sends` past a limit of its choosing. A connection dropped with sends
    /// queued keeps its socket open until they are sent (or fail).
    ///
    /// Errors also outside a runtime worker.
    ///
    /// ```no_run
    /// # async fn f(s: zerorx::net::TcpStream) -> std::io::Result<()> {
    /// // An echo: each buffer received goes back as it is, nobody waits for the send.
    /// while let Some(buf) = s.recv().await? {
    ///     s.queue_send(buf)?;
    ///     if s.send_backlog() > 1 << 20 {
    ///         s.flush_sends().await?;
    ///     }
    /// }
    /// s.flush_sends().await
    /// # }
    /// ```
    pub fn queue_send(&self, buf: impl Into<SendBuf>) -> io::Result<()> {
        crate::ops::send_queue::queue_one(&self.fd, buf.into(), true)
    }

    /// [`queue_send`](Self::queue_send) of a buffer that more sends on this connection
    /// will follow in this loop turn (the replies to pipelined requests read from one
    /// receive, say): it never goes at once, so those that follow join it in one
    /// gathered send at the turn's end instead of going in a second syscall and
    /// reaching the peer in two pieces. `MSG_MORE`'s idea, for one turn.
    ///
    /// ```no_run
    /// # async fn f(s: zerorx::net::TcpStream, replies: Vec<bytes::Bytes>) -> std::io::Result<()> {
    /// let last = replies.len().saturating_sub(1);
    /// for (i, reply) in replies.into_iter().enumerate() {
    ///     if i < last {
    ///         s.queue_send_more(reply)?;
    ///     } else {
    ///         s.queue_send(reply)?;
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn queue_send_more(&self, buf: impl Into<SendBuf>) -> io::Result<()> {
        crate::ops::send_queue::queue_one(&self.fd, buf.into(), false)
    }

    /// [`queue_send`](Self::queue_send) of several buffers, which go out in one
    /// gathered send when nothing is in flight (a frame's header and body, say).
    ///
    /// ```no_run
    /// # async fn f(s: zerorx::net::TcpStream, body: bytes::Bytes) -> std::io::Result<()> {
    /// use zerorx::net::SendBuf;
    /// let header = bytes::Bytes::copy_from_slice(&(body.len() as u32).to_be_bytes());
    /// s.queue_send_vectored([SendBuf::from(header), body.into()])?;
    /// s.flush_sends().await
    /// # }
    /// ```
    pub fn queue_send_vectored(&self, bufs: impl IntoIterator<Item = SendBuf>) -> io::Result<()> {
        crate::ops::send_queue::queue_send(&self.fd, bufs)
    }

    /// Resolves once every send queued with [`queue_send`](Self::queue_send) is sent
    /// and the kernel is done with its memory (a zero-copy send's notification came:
    /// see [`SendZeroCopy`](crate::SendZeroCopy)), or with the failure of one that
    /// failed.
    pub fn flush_sends(&self) -> impl Future<Output = io::Result<()>> + '_ {
        std::future::poll_fn(|cx| crate::ops::send_queue::poll_flush(&self.fd, cx))
    }

    /// Gives up the sends queued with [`queue_send`](Self::queue_send): the one in
    /// flight is cancelled, the rest are dropped, and later calls fail with
    /// `ECANCELED`. For a connection abandoned with sends stuck behind a peer that
    /// does not read: a dropped connection otherwise stays open until its queued
    /// sends are done.
    pub fn cancel_sends(&self) {
        crate::ops::send_queue::cancel(&self.fd)
    }

    /// Whether `len` bytes queued now would go out zero-copy (see
    /// `send_queue::would_send_zero_copy`).
    pub(crate) fn would_send_zero_copy(&self, len: usize) -> bool {
        crate::ops::send_queue::would_send_zero_copy(&self.fd, len)
    }

    /// Bytes queued with [`queue_send`](Self::queue_send) and not yet sent.
    pub fn send_backlog(&self) -> usize {
        crate::ops::send_queue::backlog(&self.fd)
    }

    /// Polls for every queued send to be done, as [`flush_sends`](Self::flush_sends)
    /// does (one task at a time: the last one to poll is woken).
    pub fn poll_flush_sends(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        crate::ops::send_queue::poll_flush(&self.fd, cx)
    }

    /// Whether every queued send is done (`Some(Ok)`), one failed (`Some(Err)`, as
    /// [`flush_sends`](Self::flush_sends) would say), or some are still on their way
    /// (`None`), without waiting or registering a waker.
    pub fn sends_done(&self) -> Option<io::Result<()>> {
        crate::ops::send_queue::done(&self.fd)
    }

    /// How far the queued sends have got, `None` when none is on its way. Two values
    /// compare equal only if no byte was sent in between: a write timeout compares the
    /// progress it saw with the progress a while later (a peer that does not read).
    pub fn send_progress(&self) -> Option<super::SendProgress> {
        crate::ops::send_queue::progress(&self.fd)
    }

    /// Sends all of `bufs` with SENDMSG (one gather op per attempt), looping over
    /// short sends; zero-copy (`SENDMSG_ZC`) under the policy as [`send`](Self::send),
    /// naming the registration when every buffer lies in the same registered memory.
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
        SendAll::new(SendMsg::new(
            self.fd.clone(),
            bufs,
            0,
            None,
            AwaitedWay::policy(),
        ))
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
    /// (`EFAULT`) use the copy pool, and so do Unix sockets always (their bytes never
    /// cross a NIC queue, and RECV_ZC takes TCP sockets only). On a worker that shares
    /// another worker's pool by handover, the receive runs on that worker and the
    /// buffers come over.
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
        self.fd.with_rx(|rx| rx.poll_recv(&self.fd, cx))
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

    /// Routes this stream's receives through worker `owner` (tests of the handover).
    #[cfg(test)]
    pub(crate) fn force_handover(&self, owner: u16) {
        self.fd.with_rx(|rx| rx.force_handover(owner));
    }

    /// The receive source in use, once the first receive chose it.
    #[cfg(test)]
    pub(crate) fn recv_path(&self) -> Option<crate::ops::tcp_recv::Path> {
        self.fd.with_rx(|rx| rx.path())
    }

    /// Receives into the spare capacity of `buf` (reserve capacity first) and returns
    /// the number of bytes received (0 = end of stream) with the buffer. Dropping the
    /// future cancels the receive.
    pub async fn recv_into(&self, buf: BytesMut) -> io::Result<(usize, BytesMut)> {
        super::recv_into(&self.fd, buf, "recv_into").await
    }

    /// Shuts down the read, write or both halves.
    pub async fn shutdown(&self, how: std::net::Shutdown) -> io::Result<()> {
        self.shutdown_op(how).await
    }

    /// [`shutdown`](Self::shutdown) as a future that does not borrow the connection
    /// (for adapters that keep it in a box).
    pub(crate) fn shutdown_op(
        &self,
        how: std::net::Shutdown,
    ) -> impl Future<Output = io::Result<()>> + 'static {
        let how = match how {
            std::net::Shutdown::Read => libc::SHUT_RD,
            std::net::Shutdown::Write => libc::SHUT_WR,
            std::net::Shutdown::Both => libc::SHUT_RDWR,
        };
        let socket = self.fd.clone();
        async move {
            let (c, _) = Op::submit(Shutdown { socket, how })?.await?;
            c.result().map(drop)
        }
    }

    /// The socket, for any option (`socket2`).
    pub fn socket(&self) -> SockRef<'_> {
        SockRef::from(&*self.fd)
    }
}

/// The future of [`Connection::recv`].
struct Recv<'a>(&'a Connection);

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
    /// What the landed completion `c` of a submission teaches the socket; `true` when
    /// the kernel refused it zero-copy and the same bytes go again.
    fn landed(&mut self, c: &Completion) -> bool;
}

impl SendProgress for Send {
    fn sent(&mut self) -> &mut usize {
        &mut self.offset
    }

    fn done(&self) -> bool {
        self.offset >= self.buf.len()
    }

    fn landed(&mut self, c: &Completion) -> bool {
        self.way.landed(&self.socket, c)
    }
}

impl SendProgress for SendMsg {
    fn sent(&mut self) -> &mut usize {
        &mut self.skip
    }

    fn done(&self) -> bool {
        self.skip >= self.total()
    }

    fn landed(&mut self, c: &Completion) -> bool {
        self.way.landed(&self.socket, c)
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
                    // A zero-copy send that sent everything is done at its result, as
                    // a plain one is (`done_at_result`): dropping the op leaves its
                    // buffers with the driver until the notification, which the op's
                    // `release` reads.
                    if flight.partial_result().is_some() {
                        crate::ops::send_way::count(|m| &m.send_zc);
                        this.state = SendState::Ready(None);
                        return Poll::Ready(Ok(()));
                    }
                    let done = match flight.poll_boxed(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(done) => done,
                    };
                    this.state = SendState::Ready(None);
                    let (c, mut op) = done?;
                    if op.0.landed(&c) {
                        this.state = SendState::Ready(Some(op));
                        continue;
                    }
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

/// How [`FrameReader`](super::FrameReader), [`RecvStream`](super::RecvStream) and
/// [`Compat`](super::Compat) hold the connection they read: a [`Connection`], a
/// [`TcpStream`](super::TcpStream) or [`UnixStream`](super::UnixStream), or any of
/// these behind `&`, `Rc` or `Box` (an `Rc` to send from other tasks while one
/// reads).
pub trait AsConnection {
    /// The connection.
    fn connection(&self) -> &Connection;
}

impl AsConnection for Connection {
    fn connection(&self) -> &Connection {
        self
    }
}

impl<T: AsConnection + ?Sized> AsConnection for &T {
    fn connection(&self) -> &Connection {
        (**self).connection()
    }
}

impl<T: AsConnection + ?Sized> AsConnection for Rc<T> {
    fn connection(&self) -> &Connection {
        (**self).connection()
    }
}

impl<T: AsConnection + ?Sized> AsConnection for Box<T> {
    fn connection(&self) -> &Connection {
        (**self).connection()
    }
}

/// The socket's fd, for socket options the connection does not wrap. Reading or
/// writing it directly bypasses the connection's receive and queued sends, whose bytes
/// it would mix with.
impl AsFd for Connection {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for Connection {
    fn as_raw_fd(&self) -> RawFd {
        self.as_fd().as_raw_fd()
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.socket();
        let show = |a: io::Result<socket2::SockAddr>| match a {
            Ok(a) => match (a.as_socket(), a.as_pathname(), a.as_abstract_namespace()) {
                (Some(ip), _, _) => ip.to_string(),
                (_, Some(p), _) => p.display().to_string(),
                (_, _, Some(name)) => format!("@{}", String::from_utf8_lossy(name)),
                _ => "(unnamed)".to_owned(),
            },
            Err(e) => format!("({e})"),
        };
        f.debug_struct("Connection")
            .field("local", &show(s.local_addr()))
            .field("peer", &show(s.peer_addr()))
            .finish()
    }
}
