//! Closing a socket through its worker's ring: an `IORING_OP_CLOSE` queued with the
//! worker's other SQEs instead of a `close` syscall of its own, and no completion (it
//! is skipped on success).
//!
//! The fd stays open until the kernel runs the close at the worker's next submit, so
//! its number cannot be reused before then; it is called only for the last owner of
//! a socket, when no op refers to the fd any more.

use crate::runtime::context;
use std::os::fd::OwnedFd;

/// Closes `fd`: through the current worker's ring when the calling thread runs a
/// worker whose driver is free (not shutting down, not borrowed — e.g. by the
/// dispatch of a completion whose op held the last owner), else with `close(2)` now.
pub(crate) fn close(fd: OwnedFd) {
    let mut fd = Some(fd);
    context::with_core(|core| {
        if let Ok(mut driver) = core.driver.try_borrow_mut() {
            if let Some(owned) = fd.take() {
                fd = driver.push_close(owned).err();
            }
        }
    });
    drop(fd);
}

#[cfg(test)]
mod tests {
    use super::close;
    use crate::runtime::Runtime;
    use std::io::{ErrorKind, Write};
    use std::os::fd::OwnedFd;

    /// A pipe: the read end to close, the write end to see whether it is closed.
    fn pipe() -> (OwnedFd, std::fs::File) {
        let (r, w) = std::io::pipe().expect("pipe");
        (OwnedFd::from(r), std::fs::File::from(OwnedFd::from(w)))
    }

    /// Whether the read end is closed: a write then fails with `EPIPE` (Rust ignores
    /// `SIGPIPE`). Unlike looking the fd number up, another thread reusing the number
    /// cannot fool it.
    fn reader_closed(mut w: &std::fs::File) -> bool {
        match w.write_all(b"x") {
            Ok(()) => false,
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::BrokenPipe, "{e}");
                true
            }
        }
    }

    #[test]
    fn off_a_worker_the_fd_closes_at_once() {
        let (r, w) = pipe();
        close(r);
        assert!(reader_closed(&w), "closed by the syscall");
    }

    #[test]
    fn on_a_worker_the_fd_closes_at_the_next_submit() {
        let rt = Runtime::builder().threads(1).build().expect("runtime");
        rt.block_on(async {
            let (r, w) = pipe();
            close(r);
            // Still open: the close waits in the SQ, so its number cannot be reused.
            assert!(!reader_closed(&w), "closed before the ring submitted it");
            crate::time::sleep(std::time::Duration::from_millis(5)).await;
            assert!(reader_closed(&w), "the ring's close did not close the fd");
        });
    }

    #[test]
    fn closes_queued_before_shutdown_are_submitted() {
        let (r, w) = pipe();
        {
            let rt = Runtime::builder().threads(1).build().expect("runtime");
            rt.block_on(async move { close(r) });
        }
        assert!(
            reader_closed(&w),
            "a close left in the SQ at shutdown leaked the fd"
        );
    }
}
