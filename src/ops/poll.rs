//! Waiting for a descriptor zerorx does not own to become readable: a one-shot
//! `IORING_OP_POLL_ADD` on the worker's ring, for libraries that bring their own fd
//! (a libfabric completion queue's wait fd) and want to sleep on it beside everything
//! else the worker waits for, without an epoll of their own.

use crate::driver::OpCode;
use crate::runtime::op::Op;
use io_uring::{opcode, squeue, types};
use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The op: a one-shot poll for `POLLIN`.
struct PollIn {
    fd: Arc<OwnedFd>,
}

// SAFETY: the entry names only `fd`, which the op holds open (its `Arc`) until the
// driver drops the op after its final CQE; it carries no pointer and sets no user_data.
unsafe impl OpCode for PollIn {
    fn fd(&self) -> Option<RawFd> {
        Some(self.fd.as_raw_fd())
    }

    fn create_entry(&mut self) -> squeue::Entry {
        opcode::PollAdd::new(types::Fd(self.fd.as_raw_fd()), libc::POLLIN as u32).build()
    }
}

/// Resolves when the descriptor is readable (or in error or hung up: whatever makes
/// a read not block). Dropping it cancels the poll.
#[must_use = "futures do nothing unless polled"]
pub struct Readable(Op<PollIn>);

impl std::fmt::Debug for Readable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Readable")
    }
}

impl Future for Readable {
    type Output = io::Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll(cx).map(|r| {
            let (done, _) = r?;
            done.result().map(drop)
        })
    }
}

/// Submits the poll on the current worker's ring.
pub(crate) fn readable(fd: Arc<OwnedFd>) -> io::Result<Readable> {
    Op::submit(PollIn { fd }).map(Readable)
}
