//! The multishot accept a listener keeps armed, shared by [`TcpListener`] and
//! [`UnixListener`]: one op for every connection, re-armed whenever the kernel ends
//! it.
//!
//! [`TcpListener`]: super::TcpListener
//! [`UnixListener`]: super::UnixListener

use crate::metrics::add_owned;
use crate::ops::accept::{accepted_fd, AcceptMulti};
use crate::ops::SharedFd;
use crate::runtime::multishot::MultiOp;
use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::io;
use std::os::fd::OwnedFd;
use std::task::Poll;

/// A listening socket and its armed accept. Connections accepted while nobody awaits
/// [`next`](Self::next) queue up in the op; dropping it cancels the accept and closes
/// those queued fds.
pub(crate) struct Acceptor {
    pub(crate) fd: SharedFd,
    accept: RefCell<Option<MultiOp<AcceptMulti>>>,
    rearms: Cell<u64>,
}

impl Acceptor {
    pub(crate) fn new(fd: SharedFd) -> Acceptor {
        Acceptor {
            fd,
            accept: RefCell::new(None),
            rearms: Cell::new(0),
        }
    }

    /// Times the multishot accept was armed again after the kernel ended it.
    pub(crate) fn rearms(&self) -> u64 {
        self.rearms.get()
    }

    /// The next accepted socket, skipping (and counting) one the kernel reports
    /// aborted (`ECONNABORTED`): its peer reset it while it waited in the queue.
    pub(crate) async fn next(&self) -> io::Result<OwnedFd> {
        loop {
            match self.next_accepted().await {
                Err(e) if e.raw_os_error() == Some(libc::ECONNABORTED) => count_reset(),
                accepted => return accepted,
            }
        }
    }

    /// The next socket the multishot accept produced, re-arming it when the kernel
    /// ended it.
    async fn next_accepted(&self) -> io::Result<OwnedFd> {
        poll_fn(|cx| loop {
            let mut slot = self.accept.borrow_mut();
            if slot.is_none() {
                *slot = Some(MultiOp::submit(AcceptMulti {
                    listener: self.fd.clone(),
                })?);
            }
            let Some(op) = slot.as_mut() else {
                continue;
            };
            match op.poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(c)) => {
                    return Poll::Ready(match accepted_fd(&c) {
                        Some(fd) => Ok(fd),
                        None => Err(io::Error::from_raw_os_error(-c.res)),
                    })
                }
                Poll::Ready(None) => {
                    *slot = None;
                    self.rearms.set(self.rearms.get() + 1);
                }
            }
        })
        .await
    }
}

/// Counts a connection reset before it was accepted, on the current worker.
pub(crate) fn count_reset() {
    if let Some(core) = crate::runtime::context::current() {
        add_owned(&core.shared.metrics.accept_reset, 1);
    }
}
