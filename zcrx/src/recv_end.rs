//! What the end of a multishot receive means, and what to do next.
//!
//! A multishot `recv` (copy pool) or `RECV_ZC` (zero-copy pool) ends with a completion
//! without `F_MORE`. Its result alone is ambiguous: `0` is end-of-stream *or* a used-up
//! byte budget, and several errors are recoverable by re-arming. [`RecvTracker`]
//! keeps the byte count needed to tell them apart.

use std::fmt;

/// Why a receive should be armed again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum RearmReason {
    /// `-ENOBUFS`: the provided-buffer ring was empty; re-arm once buffers return.
    NoBuffers,
    /// `-ENOSPC`: the completion queue was full; drain it and re-arm.
    CqFull,
    /// `-ENOMEM`: the ZCRX copy fall-back found no free chunk; return/flush, re-arm.
    NoFreeChunk,
    /// `-EINTR`: interrupted by a signal.
    Interrupted,
    /// The kernel stopped after data without saying why (multishot limits).
    Ended,
}

/// How a receive ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvEnd {
    /// The peer shut down its side: no more bytes will come.
    Eof,
    /// The byte budget given at arm time was used up; arm again for more.
    BudgetDone,
    /// Recoverable: arm again (after the action the reason names).
    Rearm(RearmReason),
    /// Cancelled (`-ECANCELED`), by the application or at ring teardown.
    Cancelled,
    /// Not recoverable on this socket.
    Failed(RecvFailure),
}

/// A receive failure that re-arming will not fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvFailure {
    /// `-EFAULT` on RECV_ZC: the socket's data arrives on a queue bound to another ZCRX
    /// instance (or a dmabuf area needed the copy fall-back).
    Steering,
    /// `-EPROTONOSUPPORT`: RECV_ZC works on TCP sockets only.
    NotTcp,
    /// Any other errno (connection reset, bad fd, bad SQE...).
    Errno(i32),
}

impl fmt::Display for RecvFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecvFailure::Steering => f.write_str(
                "EFAULT: this socket's data lands on a receive queue bound to another ZCRX \
                 instance; steer the flow (ntuple rule / RSS) to this ring's queue",
            ),
            RecvFailure::NotTcp => {
                f.write_str("EPROTONOSUPPORT: zero-copy receive works on TCP sockets only")
            }
            RecvFailure::Errno(e) => write!(f, "{}", std::io::Error::from_raw_os_error(*e)),
        }
    }
}

impl RecvFailure {
    /// The failure as an `io::Error`.
    pub fn to_io_error(self) -> std::io::Error {
        match self {
            RecvFailure::Errno(e) => std::io::Error::from_raw_os_error(e),
            RecvFailure::Steering => std::io::Error::other(self.to_string()),
            RecvFailure::NotTcp => {
                std::io::Error::new(std::io::ErrorKind::Unsupported, self.to_string())
            }
        }
    }
}

/// Byte accounting for one armed receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecvTracker {
    budget: u64,
    received: u64,
}

impl RecvTracker {
    /// A receive armed with `budget` bytes (`0` = unlimited).
    pub fn new(budget: u32) -> RecvTracker {
        RecvTracker {
            budget: budget as u64,
            received: 0,
        }
    }

    /// Counts a data completion.
    pub fn on_data(&mut self, len: u32) {
        self.received += len as u64;
    }

    /// Bytes received since arming.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// The budget to re-arm with so the total stays what was asked (`0` = unlimited).
    pub fn remaining_budget(&self) -> u32 {
        if self.budget == 0 {
            0
        } else {
            self.budget.saturating_sub(self.received).max(1) as u32
        }
    }

    fn budget_done(&self) -> bool {
        self.budget != 0 && self.received >= self.budget
    }

    /// Classifies the final completion (no `F_MORE`). For a final completion that
    /// carried data, count it with [`on_data`](Self::on_data) first and pass its
    /// positive `res` here.
    pub fn on_end(&self, res: i32) -> RecvEnd {
        if self.budget_done() {
            return RecvEnd::BudgetDone;
        }
        match res {
            0 => RecvEnd::Eof,
            r if r > 0 => RecvEnd::Rearm(RearmReason::Ended),
            r => match -r {
                libc::ENOBUFS => RecvEnd::Rearm(RearmReason::NoBuffers),
                libc::ENOSPC => RecvEnd::Rearm(RearmReason::CqFull),
                libc::ENOMEM => RecvEnd::Rearm(RearmReason::NoFreeChunk),
                libc::EINTR => RecvEnd::Rearm(RearmReason::Interrupted),
                libc::ECANCELED => RecvEnd::Cancelled,
                libc::EFAULT => RecvEnd::Failed(RecvFailure::Steering),
                libc::EPROTONOSUPPORT => RecvEnd::Failed(RecvFailure::NotTcp),
                e => RecvEnd::Failed(RecvFailure::Errno(e)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_is_eof_without_budget_and_budget_done_with_it() {
        assert_eq!(RecvTracker::new(0).on_end(0), RecvEnd::Eof);
        let mut t = RecvTracker::new(100);
        t.on_data(60);
        assert_eq!(
            t.on_end(0),
            RecvEnd::Eof,
            "budget not reached: the peer closed"
        );
        t.on_data(40);
        assert_eq!(t.on_end(0), RecvEnd::BudgetDone);
    }

    #[test]
    fn recoverable_errors_rearm_with_the_remaining_budget() {
        let mut t = RecvTracker::new(1000);
        t.on_data(300);
        assert_eq!(t.on_end(-libc::ENOSPC), RecvEnd::Rearm(RearmReason::CqFull));
        assert_eq!(
            t.on_end(-libc::ENOMEM),
            RecvEnd::Rearm(RearmReason::NoFreeChunk)
        );
        assert_eq!(
            t.on_end(-libc::ENOBUFS),
            RecvEnd::Rearm(RearmReason::NoBuffers)
        );
        assert_eq!(
            t.on_end(-libc::EINTR),
            RecvEnd::Rearm(RearmReason::Interrupted)
        );
        assert_eq!(t.remaining_budget(), 700);
        assert_eq!(
            RecvTracker::new(0).remaining_budget(),
            0,
            "unlimited stays unlimited"
        );
    }

    #[test]
    fn data_then_end_rearms_unless_budget_done() {
        let mut t = RecvTracker::new(0);
        t.on_data(10);
        assert_eq!(t.on_end(10), RecvEnd::Rearm(RearmReason::Ended));
        let mut b = RecvTracker::new(10);
        b.on_data(10);
        assert_eq!(b.on_end(10), RecvEnd::BudgetDone);
    }

    #[test]
    fn fatal_errors_are_named() {
        let t = RecvTracker::new(0);
        assert_eq!(
            t.on_end(-libc::EFAULT),
            RecvEnd::Failed(RecvFailure::Steering)
        );
        assert_eq!(
            t.on_end(-libc::EPROTONOSUPPORT),
            RecvEnd::Failed(RecvFailure::NotTcp)
        );
        assert_eq!(
            t.on_end(-libc::ECONNRESET),
            RecvEnd::Failed(RecvFailure::Errno(libc::ECONNRESET))
        );
        assert_eq!(t.on_end(-libc::ECANCELED), RecvEnd::Cancelled);
        assert!(RecvFailure::Steering.to_string().contains("steer"));
        assert_eq!(
            RecvFailure::Errno(libc::ECONNRESET).to_io_error().kind(),
            std::io::ErrorKind::ConnectionReset
        );
    }
}
