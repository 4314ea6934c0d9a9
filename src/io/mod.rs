//! One op per file: the data each io_uring request owns while in flight, and how its
//! SQE is built. Every op holds an `Rc<OwnedFd>` of its socket, so closing the socket
//! object early can never let the fd number be reused under an op still in the SQ or
//! the kernel: the fd is closed when its last op's final completion is handled.

pub(crate) mod accept;
pub(crate) mod connect;
pub(crate) mod recv;
pub(crate) mod recv_msg;
pub(crate) mod recv_zc;
pub(crate) mod send;
pub(crate) mod shutdown;

use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;

/// A socket fd shared between its owner and its in-flight ops.
pub(crate) type SharedFd = Rc<OwnedFd>;

pub(crate) fn fd(f: &SharedFd) -> io_uring::types::Fd {
    io_uring::types::Fd(f.as_raw_fd())
}
