//! One op per file: the data each io_uring request owns while in flight, and how its
//! SQE is built. Every op holds an `Rc` of its socket (`SocketFd`), so closing the socket
//! object early can never let the fd number be reused under an op still in the SQ or
//! the kernel: the fd is closed when its last op's final completion is handled.

pub(crate) mod accept;
mod close;
pub(crate) mod connect;
pub(crate) mod file;
mod handover;
mod overflow_recv;
pub(crate) mod poll;
pub(crate) mod recv;
pub(crate) mod recv_msg;
pub(crate) mod recv_zc;
pub(crate) mod send;
pub(crate) mod send_buf;
pub(crate) mod send_queue;
mod shared_fd;
pub(crate) mod shutdown;
pub(crate) mod stream_recv;
pub(crate) mod tcp_recv;

use std::cell::{Cell, UnsafeCell};
use std::ops::Deref;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use stream_recv::StreamRecv;
use tcp_recv::Receiver;

pub(crate) use shared_fd::SharedFd;

/// A socket's fd and, for a TCP stream, its receive state and its armed receive op
/// beside it: one allocation per connection for all three. Ops keep the fd open
/// through their [`SharedFd`]; since the armed receive is such an op, a stream takes its
/// receive state out when it is dropped (which cancels the receive) instead of leaving
/// it to the last owner.
pub(crate) struct SocketFd {
    fd: OwnedFd,
    /// Live [`SharedFd`]s of this socket (and raw pointers from
    /// [`SharedFd::into_raw`]); `0` while it is not shared. Kept here, beside the fd's
    /// four bytes, rather than in a wrapper, where it would cost every connection a
    /// word of alignment.
    owners: Cell<u32>,
    /// A TCP stream's receive state, made at its first receive (`None` for other
    /// sockets). Out of its cell while a receive is polled.
    pub(crate) rx: Cell<Option<Receiver>>,
    /// The stream's multishot receive while it is in flight: touched only by the
    /// [`SocketOp`](stream_recv::SocketOp) the driver's slab holds for it.
    recv: UnsafeCell<Option<StreamRecv>>,
}

impl SocketFd {
    /// `fd`, with no receive state.
    pub(crate) fn new(fd: OwnedFd) -> SocketFd {
        SocketFd {
            fd,
            owners: Cell::new(0),
            rx: Cell::new(None),
            recv: UnsafeCell::new(None),
        }
    }

    /// `fd`, shared.
    pub(crate) fn shared(fd: OwnedFd) -> SharedFd {
        SharedFd::new(SocketFd::new(fd))
    }

    /// The fd back (its receive state, if any, is dropped).
    pub(crate) fn into_fd(self) -> OwnedFd {
        self.fd
    }
}

impl AsFd for SocketFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Deref for SocketFd {
    type Target = OwnedFd;

    fn deref(&self) -> &OwnedFd {
        &self.fd
    }
}

pub(crate) fn fd(f: &SharedFd) -> io_uring::types::Fd {
    io_uring::types::Fd(f.as_raw_fd())
}
