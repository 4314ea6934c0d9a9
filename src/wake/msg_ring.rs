//! The MSG_RING wake-up: a CQE with the reserved wake `user_data` posted into the
//! target ring.

use crate::driver::slab::reserved;
use io_uring::{opcode, types};
use std::cell::Cell;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};

/// Queues a MSG_RING into the target ring on the calling thread's own ring; true if it
/// did.
pub(crate) type LocalQueue = fn(RawFd) -> bool;

thread_local! {
    /// How this thread queues a MSG_RING, installed by the runtime on worker threads:
    /// wake-ups know nothing of workers.
    static LOCAL_QUEUE: Cell<Option<LocalQueue>> = const { Cell::new(None) };
}

/// Installs, for the calling thread, how a wake-up is queued on its own ring.
pub(crate) fn set_local_queue(queue: LocalQueue) {
    let _ = LOCAL_QUEUE.try_with(|q| q.set(Some(queue)));
}

/// `IORING_REGISTER_SEND_MSG_RING` (Linux 6.13): run one MSG_RING SQE without a ring.
const IORING_REGISTER_SEND_MSG_RING: u32 = 31;

pub(crate) fn dup_fd(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: `fd` is the caller's open ring fd, borrowed only for the dup.
    unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned()
}

pub(crate) fn send_wake(target: &OwnedFd) -> io::Result<()> {
    // From a worker: queue the message in its own ring, submitted with its next
    // enter; where that is not possible (no worker here, or its driver is borrowed
    // because a waker fired while it dispatches), the syscall.
    let queue = LOCAL_QUEUE.try_with(Cell::get).ok().flatten();
    if queue.is_some_and(|q| q(target.as_raw_fd())) {
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
