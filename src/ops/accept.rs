//! Multishot accept.

use super::{fd, SharedFd};
use crate::driver::{Completion, OpCode};
use io_uring::{opcode, squeue};
use std::os::fd::{FromRawFd, OwnedFd};

pub(crate) struct AcceptMulti {
    pub(crate) listener: SharedFd,
}

/// Takes ownership of the fd a successful accept completion carries.
pub(crate) fn accepted_fd(c: &Completion) -> Option<OwnedFd> {
    // SAFETY: a non-negative accept result is a new fd the kernel gave to us alone.
    (c.res >= 0).then(|| unsafe { OwnedFd::from_raw_fd(c.res) })
}

// SAFETY: the entry references only the listener fd, kept open by `listener`; the
// accepted fds nobody takes are closed in `release` (no leak after cancellation).
unsafe impl OpCode for AcceptMulti {
    fn fd(&self) -> Option<std::os::fd::RawFd> {
        Some(fd(&self.listener).0)
    }

    fn create_entry(&mut self) -> squeue::Entry {
        opcode::AcceptMulti::new(fd(&self.listener))
            .flags(libc::SOCK_CLOEXEC)
            .build()
    }

    fn release(&mut self, completion: &Completion) {
        drop(accepted_fd(completion));
    }
}
