//! Waking a parked worker from another thread, by eventfd or by MSG_RING, behind one
//! `Unparker`.
//!
//! Protocol (with `WorkerShared::push_remote`):
//! the worker stores `parked = true`, fences, re-checks its remote queue and only then
//! blocks in `io_uring_enter`. A waker first enqueues, fences, then swaps `parked` to
//! `false` and makes the syscall only if it was `true`. Either the worker sees the
//! message in its re-check, or the waker sees `parked` and wakes it; while the worker
//! is awake, wakers make no syscall at all.

mod eventfd;
mod msg_ring;

use std::io;
use std::os::fd::OwnedFd;
use std::sync::{Arc, OnceLock};

pub(crate) use eventfd::{new_eventfd, new_nonblocking_eventfd};
pub(crate) use msg_ring::set_local_queue;

/// How other threads wake a parked worker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WakeMode {
    /// Each worker keeps a read of its own eventfd in flight; a waker writes the
    /// eventfd. Works from any thread. The default.
    #[default]
    EventFd,
    /// A waker posts a CQE straight into the worker's ring with `IORING_OP_MSG_RING`:
    /// from its own ring when the waker is a worker (no extra syscall, sent with that
    /// worker's next submit), else with `IORING_REGISTER_SEND_MSG_RING` (Linux 6.13).
    MsgRing,
}

/// The wake-up channel into one worker's ring.
pub(crate) enum Unparker {
    EventFd(Arc<OwnedFd>),
    /// A duplicate of the target ring's fd, set by the worker once its ring exists, so
    /// the fd number stays valid for as long as anyone can send to it.
    MsgRing(OnceLock<OwnedFd>),
}

impl Unparker {
    pub(crate) fn new(mode: WakeMode) -> io::Result<Unparker> {
        Ok(match mode {
            WakeMode::EventFd => Unparker::EventFd(Arc::new(new_eventfd()?)),
            WakeMode::MsgRing => Unparker::MsgRing(OnceLock::new()),
        })
    }

    /// The eventfd the worker's driver must keep a read armed on, if any.
    pub(crate) fn eventfd(&self) -> Option<Arc<OwnedFd>> {
        match self {
            Unparker::EventFd(fd) => Some(fd.clone()),
            Unparker::MsgRing(_) => None,
        }
    }

    /// Checks that this wake mode works on this kernel by waking the ring `ring_fd`
    /// once (a spurious wake-up is harmless).
    pub(crate) fn check(&self, ring_fd: std::os::fd::RawFd) -> io::Result<()> {
        match self {
            Unparker::EventFd(_) => Ok(()),
            Unparker::MsgRing(_) => msg_ring::send_blind(ring_fd).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!(
                        "WakeMode::MsgRing needs IORING_REGISTER_SEND_MSG_RING (Linux 6.13): {e}"
                    ),
                )
            }),
        }
    }

    /// Called on the worker thread once its ring exists.
    pub(crate) fn set_ring_fd(&self, ring_fd: std::os::fd::RawFd) -> io::Result<()> {
        if let Unparker::MsgRing(slot) = self {
            let dup = msg_ring::dup_fd(ring_fd)?;
            // Set once per worker; a second set would only happen on a rebuilt ring,
            // which the runtime never does.
            let _ = slot.set(dup);
        }
        Ok(())
    }

    /// Wakes the worker.
    pub(crate) fn unpark(&self) -> io::Result<()> {
        match self {
            Unparker::EventFd(fd) => eventfd::signal(fd),
            Unparker::MsgRing(slot) => match slot.get() {
                Some(ring) => msg_ring::send_wake(ring),
                // The worker has not built its ring yet, so it is not parked either;
                // it checks its queue before it first waits.
                None => Ok(()),
            },
        }
    }
}
