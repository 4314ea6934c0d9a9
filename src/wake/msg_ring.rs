//! The MSG_RING wake-up: a CQE with the reserved wake `user_data` posted into the
//! target ring.

use crate::driver::slab::reserved;
use crate::runtime::context;
use io_uring::{opcode, types};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};

/// `IORING_REGISTER_SEND_MSG_RING` (Linux 6.13): run one MSG_RING SQE without a ring.
const IORING_REGISTER_SEND_MSG_RING: u32 = 31;

pub(crate) fn dup_fd(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: `fd` is the caller's open ring fd, borrowed only for the dup.
    unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned()
}

pub(crate) fn send_wake(target: &OwnedFd) -> io::Result<()> {
    // From a worker: queue the message in its own ring, submitted with its next
    // enter. The driver may be borrowed (a waker fired while it dispatches): then
    // fall back to the syscall.
    let queued = context::with_core(|core| match core.driver.try_borrow_mut() {
        Ok(mut d) => d.push_msg_ring(target.as_raw_fd()).is_ok(),
        Err(_) => false,
    });
    if queued == Some(true) {
        return Ok(());
    }
    send_blind(target.as_raw_fd())
}

/// Sends the wake message with no source ring.
pub(crate) fn send_blind(target: RawFd) -> io::Result<()> {
    // The kernel requires `flags == 0` and `opcode == MSG_RING`; the SQE's own
    // `user_data` is unused (no source CQE), `data` becomes the target CQE's user_data.
    let mut sqe = opcode::MsgRingData::new(types::Fd(target), 0, reserved::WAKE, None).build();
    // SAFETY: `squeue::Entry` is `repr(C)` over `struct io_uring_sqe`, the one-element
    // array the register opcode reads; it lives across the call.
    unsafe {
        zcrx::sys::io_uring_register(
            -1,
            IORING_REGISTER_SEND_MSG_RING,
            (&mut sqe as *mut io_uring::squeue::Entry).cast(),
            1,
        )
    }
    .map(drop)
}
