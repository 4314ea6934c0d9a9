//! A TCP stream's armed multishot receive, kept in the stream's socket allocation
//! ([`SocketFd`]) rather than in a box of its own: every idle connection has one, so
//! this saves an allocation (and its header and rounding) per connection, and the op
//! needs no `Rc` of the socket, being inside it.
//!
//! While the op is in flight the driver's slab holds a [`SocketOp`]: a strong `Rc` of
//! the socket that stands for the op's memory, as a boxed op's `Box` does. So the
//! socket (its fd and this op) lives until the op's final completion even when the
//! stream is dropped first (which cancels the op), exactly as a boxed op would.

use super::recv::RecvMulti;
use super::recv_zc::RecvZcMulti;
use super::{SharedFd, SocketFd};
use crate::driver::op::{InPlace, Lifecycle, OpBox, OpData, Queued};
use crate::driver::queue::SmallQueue;
use crate::driver::slab::Key;
use crate::driver::Completion;
use crate::runtime::context;
use crate::runtime::op::not_in_runtime;
use io_uring::squeue;
use std::any::Any;
use std::io;
use std::mem::ManuallyDrop;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::task::{Context, Poll};
use zcrx::RxBuf;

/// Which pool the receive draws from. The zero-copy receive is boxed (one allocation
/// per arming, not per completion): then its pointer fits beside the copy receive's
/// flags, so the tag costs no room in every connection's socket.
enum Source {
    Copy(RecvMulti),
    Zc(Box<RecvZcMulti>),
}

/// Runs `$body` with `$op` bound to the receive, whichever pool it draws from: the two
/// receives have the same methods but no common trait (a trait object would cost a
/// second dispatch on every completion).
macro_rules! with_source {
    ($source:expr, $op:ident => $body:expr) => {
        match $source {
            Source::Copy($op) => $body,
            Source::Zc($op) => $body,
        }
    };
}

/// The armed receive of a stream, and the completions it queued that the stream has
/// not taken yet.
pub(crate) struct StreamRecv {
    pub(crate) queue: SmallQueue<Queued>,
    source: Source,
}

impl StreamRecv {
    /// A receive from the copy pool.
    pub(crate) fn copy(op: RecvMulti) -> StreamRecv {
        StreamRecv {
            queue: SmallQueue::default(),
            source: Source::Copy(op),
        }
    }

    /// A RECV_ZC receive.
    pub(crate) fn zc(op: RecvZcMulti) -> StreamRecv {
        StreamRecv {
            queue: SmallQueue::default(),
            source: Source::Zc(Box::new(op)),
        }
    }

    fn create_entry(&mut self, fd: std::os::fd::RawFd) -> squeue::Entry {
        with_source!(&mut self.source, op => op.create_entry(fd))
    }

    /// [`OpCode::on_complete`](crate::driver::OpCode::on_complete) of the receive.
    pub(crate) fn on_complete(&mut self, c: &Completion) {
        with_source!(&mut self.source, op => op.on_complete(c))
    }

    /// [`OpCode::release`](crate::driver::OpCode::release) of the receive.
    pub(crate) fn release(&mut self, c: &Completion) {
        with_source!(&mut self.source, op => op.release(c))
    }

    /// [`OpCode::release_queued`](crate::driver::OpCode::release_queued).
    pub(crate) fn release_queued(&mut self, c: &Completion) {
        with_source!(&mut self.source, op => op.release_queued(c))
    }

    /// [`OpCode::take_stop_request`](crate::driver::OpCode::take_stop_request).
    pub(crate) fn take_stop_request(&mut self) -> bool {
        with_source!(&mut self.source, op => op.take_stop_request())
    }

    /// The next buffer of the `owed` bytes of the data completion the stream took.
    pub(crate) fn take_next(&mut self, owed: &mut u32) -> io::Result<RxBuf> {
        with_source!(&mut self.source, op => op.take_next(owed))
    }

    /// A zero-copy receive: looks in a row without a completion (`RecvZcMulti::quiet_looks`;
    /// `None` for a copy receive).
    pub(crate) fn quiet_looks(&mut self) -> Option<u8> {
        match &mut self.source {
            Source::Zc(op) => Some(op.quiet_looks()),
            Source::Copy(_) => None,
        }
    }

    /// Whether this receive asked to stop because its stream held its limit.
    pub(crate) fn stopped_at_limit(&self) -> bool {
        with_source!(&self.source, op => op.decoded.stopped_at_limit())
    }
}

/// The in-flight receive of a socket, as the driver's slab owns it: an owner of
/// the socket whose `recv` cell holds the op. At most one exists per
/// socket: it is made only while the cell is empty, fills it, and empties it (dropping
/// the op, which hands back the buffers it still holds) when it is dropped, which the
/// driver does only after the op's final completion (or never, when shutdown leaks
/// an op the kernel did not finish).
#[repr(transparent)]
pub(crate) struct SocketOp(SharedFd);
// The driver's slab word holding `into_raw`'s pointer is a `SocketOp` (`socket_op_at`).
const _: () = assert!(std::mem::size_of::<SocketOp>() == std::mem::size_of::<NonNull<u8>>());

impl SocketOp {
    /// Puts `recv` in `socket`'s receive cell; fails if a receive of this socket is
    /// still in flight there (a stream arms its next receive only after the previous
    /// one's final completion, so this does not happen).
    pub(crate) fn new(socket: SharedFd, recv: StreamRecv) -> io::Result<SocketOp> {
        // SAFETY: only a `SocketOp` of this socket touches the cell, and none exists
        // while it is empty; if one exists (the cell is full), this reads the tag
        // while no reference into the cell is live, since a `SocketOp` hands out its
        // reference only for the length of a `&mut self` borrow, which no caller
        // holds while making another op (ops are not made from the driver's
        // callbacks: the `OpCode` contract).
        let cell = unsafe { &mut *socket.recv.get() };
        if cell.is_some() {
            return Err(io::Error::other(
                "the socket's previous receive is still in flight",
            ));
        }
        *cell = Some(recv);
        Ok(SocketOp(socket))
    }

    /// The receive (`None` never happens while this op exists; see the type doc).
    pub(crate) fn recv(&mut self) -> Option<&mut StreamRecv> {
        // SAFETY: this `SocketOp` is the only one of its socket and the only code that
        // reaches the cell while it exists; `&mut self` makes the reference it
        // returns the only one for as long as it lives.
        unsafe { &mut *self.0.recv.get() }.as_mut()
    }

    /// The socket's pointer (8-byte aligned), carrying this op's count, for the
    /// slab's one-word op pointer ([`from_raw`](Self::from_raw) takes it back).
    pub(crate) fn into_raw(self) -> NonNull<u8> {
        let this = ManuallyDrop::new(self);
        // SAFETY: the owner is read out once, and `this` (not dropped) never uses it
        // again, so its count moves into the pointer.
        SharedFd::into_raw(unsafe { std::ptr::read(&this.0) })
    }

    /// The op [`into_raw`](Self::into_raw) gave `ptr` for.
    ///
    /// # Safety
    /// `ptr` came from `into_raw`, and its count is given back once.
    pub(crate) unsafe fn from_raw(ptr: NonNull<u8>) -> SocketOp {
        // SAFETY: the caller's contract: a `SharedFd::into_raw` pointer, taken back
        // once.
        SocketOp(unsafe { SharedFd::from_raw(ptr) })
    }
}

/// How the driver reaches a socket's receive: the pointer is [`SocketOp::into_raw`]'s.
static IN_SOCKET: InPlace = InPlace {
    as_op: socket_op_at,
    give_back: give_back_socket_op,
};

/// [`InPlace::as_op`] for a socket's receive: the word holds [`SocketOp::into_raw`]'s
/// pointer, which is a `SocketOp` (`#[repr(transparent)]` over `SharedFd`, itself over
/// the pointer).
///
/// # Safety
/// `word` is the address of such a word, which its owner (the slab) keeps, neither
/// moving out of nor dropping the op it is seen as.
unsafe fn socket_op_at(word: NonNull<NonNull<u8>>) -> NonNull<dyn OpBox> {
    word.cast::<SocketOp>()
}

/// [`InPlace::give_back`] for a socket's receive.
///
/// # Safety
/// `ptr` came from [`SocketOp::into_raw`] and is given back once.
unsafe fn give_back_socket_op(ptr: NonNull<u8>) {
    // SAFETY: the caller's contract.
    drop(unsafe { SocketOp::from_raw(ptr) })
}

// The driver tags boxed ops with the low bit; a socket's pointer must leave it clear.
const _: () = assert!(std::mem::align_of::<SocketFd>() > 1);

/// The receive as an op of the driver's; every call finds the receive in its cell
/// while the op exists (see the type doc), so the `None` arms do not run.
impl OpBox for SocketOp {
    fn create_entry(&mut self) -> Option<squeue::Entry> {
        // The socket's fd is held open by this op's count.
        let fd = self.0.as_raw_fd();
        self.recv().map(|r| r.create_entry(fd))
    }

    fn release(&mut self, completion: &Completion) {
        if let Some(r) = self.recv() {
            r.release(completion)
        }
    }

    fn release_queued(&mut self, completion: &Completion) {
        if let Some(r) = self.recv() {
            r.release_queued(completion)
        }
    }

    fn on_complete(&mut self, completion: &Completion) {
        if let Some(r) = self.recv() {
            r.on_complete(completion)
        }
    }

    fn take_stop_request(&mut self) -> bool {
        self.recv().is_some_and(StreamRecv::take_stop_request)
    }

    fn stream_queue(&mut self) -> Option<&mut SmallQueue<Queued>> {
        self.recv().map(|r| &mut r.queue)
    }

    fn fd(&self) -> Option<std::os::fd::RawFd> {
        Some(super::fd(&self.0).0)
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }

    fn stream_data(&mut self) -> Option<&mut dyn Any> {
        self.recv().map(|r| r as &mut dyn Any)
    }

    fn quiet_looks(&mut self) -> Option<u8> {
        self.recv().and_then(StreamRecv::quiet_looks)
    }
}

impl Drop for SocketOp {
    fn drop(&mut self) {
        // SAFETY: as in `recv`: this is the only holder, and no reference from `recv`
        // outlives the `&mut self` it came from.
        let op = unsafe { &mut *self.0.recv.get() }.take();
        drop(op);
    }
}

impl SocketFd {
    /// Whether a receive of this socket is in flight (its op is in the socket).
    #[cfg(test)]
    pub(crate) fn recv_in_flight(&self) -> bool {
        // SAFETY: a read of the tag between driver calls: no `SocketOp` reference into
        // the cell is live (they last a `&mut self` borrow inside the driver).
        unsafe { &*self.recv.get() }.is_some()
    }
}

/// The handle of a stream's receive kept in its socket ([`SocketOp`]): a
/// [`MultiOp`](crate::runtime::multishot::MultiOp)
/// that reaches the driver through the thread's current worker instead of an `Rc` of
/// it, so that it is one word in the receive state every connection keeps. A stream
/// lives and is dropped on its worker's thread, where that worker is current (also
/// while the worker shuts down); elsewhere it does nothing, and the driver's own
/// shutdown cancels and frees the op.
pub(crate) struct SocketMultiOp {
    key: Option<Key>,
}

impl SocketMultiOp {
    /// Queues the SQE of a stream's receive kept in its socket.
    pub(crate) fn submit(op: SocketOp) -> io::Result<SocketMultiOp> {
        let key = context::with_core(|core| {
            core.driver.borrow_mut().submit(
                // SAFETY: `IN_SOCKET`'s functions are this type's own, for the pointer
                // of `into_raw`, owned by the slab until it gives it back.
                unsafe { OpData::in_place(op.into_raw(), &IN_SOCKET) },
                Lifecycle::Streaming {
                    waker: None,
                    finished: false,
                },
            )
        })
        .ok_or_else(not_in_runtime)??;
        Ok(SocketMultiOp { key: Some(key) })
    }

    /// As [`MultiOp::poll_next`] (`None` also off the worker's thread), also running
    /// `f` on the completion and the receive in the same visit of the op
    /// (`Driver::poll_multi_with`).
    pub(crate) fn poll_next_with<R>(
        &mut self,
        cx: &mut Context<'_>,
        f: impl FnOnce(&Completion, &mut StreamRecv) -> Option<R>,
    ) -> Poll<Option<(Completion, Option<R>)>> {
        let Some(key) = self.key else {
            return Poll::Ready(None);
        };
        let next = context::with_core(|core| core.driver.borrow_mut().poll_multi_with(key, cx, f))
            .unwrap_or(Poll::Ready(None));
        if let Poll::Ready(None) = next {
            self.key = None;
        }
        next
    }

    /// As [`MultiOp::with_data`].
    pub(crate) fn with_data<R>(&self, f: impl FnOnce(&mut StreamRecv) -> R) -> Option<R> {
        let key = self.key?;
        context::with_core(|core| core.driver.borrow_mut().with_stream_data(key, f)).flatten()
    }
}

impl Drop for SocketMultiOp {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            context::with_core(|core| {
                if let Ok(mut driver) = core.driver.try_borrow_mut() {
                    driver.drop_op(key);
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::size_of;

    #[test]
    fn a_socket_with_its_receive_op_fits_a_96_byte_chunk() {
        // Every idle connection keeps one: the fd with its owner count, the stream's
        // receive state and the armed receive, with malloc's header (8) in 96.
        assert_eq!(size_of::<StreamRecv>(), 40);
        assert_eq!(size_of::<Option<StreamRecv>>(), 40);
        assert_eq!(size_of::<SocketFd>(), 88);
    }
}
