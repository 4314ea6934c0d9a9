//! The eventfd wake-up: created blocking, so the io_uring read on it waits (via poll)
//! instead of completing with `EAGAIN`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub(crate) fn new_eventfd() -> io::Result<OwnedFd> {
    create(libc::EFD_CLOEXEC)
}

/// An eventfd whose reads return `EAGAIN` at zero rather than wait (one a program
/// polls and drains itself: `Runtime::readiness_fd`).
pub(crate) fn new_nonblocking_eventfd() -> io::Result<OwnedFd> {
    create(libc::EFD_CLOEXEC | libc::EFD_NONBLOCK)
}

fn create(flags: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall with constant arguments.
    let fd = unsafe { libc::eventfd(0, flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Adds 1 to the counter, completing the worker's armed read.
pub(crate) fn signal(fd: &OwnedFd) -> io::Result<()> {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a live local to an open eventfd.
    let n = unsafe { libc::write(fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    if n == 8 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
