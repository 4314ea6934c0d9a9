//! What the driver tells the runtime's state dump: the ring's occupancy and every op
//! in flight (opcode, state, fd, age, the task waiting on it). The op's code and
//! state are public types (the dump's, re-exported by `runtime`): the driver is what
//! knows the codes it submits and the states its ops go through.
//!
//! Built only when a dump is asked for. The one cost paid per op is its submission
//! stamp: a coarse clock read (`CLOCK_MONOTONIC_COARSE`, a vDSO load, no TSC read:
//! 8-11 ns measured here, against 52-56 ns for `CLOCK_MONOTONIC`), taken once per
//! loop turn that submits and kept in 24 bits of the slab slot's spare bytes, so the
//! slot stays 32 bytes.

use super::op::{Lifecycle, OpSlot};
use super::slab::Meta;
use super::slim_waker::SlimWaker;
use super::Driver;
use io_uring::opcode;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::os::fd::RawFd;
use std::time::Duration;

/// The stamp clock's unit.
const TICK: Duration = Duration::from_millis(10);
/// Stamps keep 24 bits: ages wrap after 2^24 ticks (46.6 hours).
const STAMP_MASK: u32 = (1 << 24) - 1;

/// The coarse monotonic clock in [`TICK`]s, truncated to 24 bits.
pub(crate) fn stamp_now() -> u32 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC_COARSE cannot fail
    // on Linux, and on the impossible failure `ts` stays zero (an age, not a fault).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    let ticks = (ts.tv_sec as u64) * 100 + (ts.tv_nsec as u64) / 10_000_000;
    (ticks as u32) & STAMP_MASK
}

/// The time from stamp `then` to stamp `now` (modulo the 24-bit wrap).
pub(crate) fn age(then: u32, now: u32) -> Duration {
    TICK * (now.wrapping_sub(then) & STAMP_MASK)
}

/// An op in flight, as the dump shows it.
#[derive(Clone, Debug)]
pub(crate) struct OpInFlight {
    pub(crate) opcode: IoUringOp,
    pub(crate) state: OpState,
    pub(crate) fd: Option<RawFd>,
    pub(crate) multishot: bool,
    pub(crate) age: Duration,
    /// The waker the op keeps: the task waiting on it, which the dump names.
    pub(crate) waker: Option<std::task::Waker>,
}

/// Where an op in flight is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum OpState {
    /// Submitted; its completion has not come.
    Pending,
    /// A zero-copy send whose result came and whose notification (the kernel done
    /// with the memory) has not.
    WaitingForNotification,
    /// Its completion came; the task has not taken it yet.
    Completed,
    /// A multishot op posting completions.
    Streaming,
    /// A multishot op that has ended, with completions not yet taken.
    Finished,
    /// Sent on with no task waiting for it (a queued send): the runtime takes its
    /// completion and sends what follows.
    Detached,
    /// Its future was dropped: the op waits for its last completion, keeping its
    /// memory, which the kernel may still write.
    Cancelled,
}

impl fmt::Display for OpState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OpState::Pending => "pending",
            OpState::WaitingForNotification => "waiting for its notification",
            OpState::Completed => "completed, not yet taken",
            OpState::Streaming => "streaming",
            OpState::Finished => "finished, completions not yet taken",
            OpState::Detached => "sending, no task waiting",
            OpState::Cancelled => "cancelled, waiting for its last completion",
        })
    }
}

/// Generates [`IoUringOp`] from one table: variant, `IORING_OP_*` name (its JSON and
/// text form) and the io_uring crate's opcode.
macro_rules! io_uring_ops {
    ($($(#[$doc:meta])* $variant:ident $name:literal $code:ty,)*) => {
        /// The `IORING_OP_*` an op in flight is: those zerorx submits by name, any
        /// other by number. Serialized as the kernel's name (`"RECV_ZC"`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[non_exhaustive]
        pub enum IoUringOp {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)*
            /// An opcode zerorx does not name.
            #[serde(rename = "OTHER")]
            Other(u8),
        }

        impl IoUringOp {
            /// The op of opcode `code`.
            pub(crate) fn from_code(code: u8) -> IoUringOp {
                match code {
                    $(<$code>::CODE => IoUringOp::$variant,)*
                    other => IoUringOp::Other(other),
                }
            }

            /// The kernel's name without `IORING_OP_` (`None` for [`Other`](Self::Other)).
            pub fn name(self) -> Option<&'static str> {
                match self {
                    $(IoUringOp::$variant => Some($name),)*
                    IoUringOp::Other(_) => None,
                }
            }
        }
    };
}

io_uring_ops! {
    /// `IORING_OP_NOP`.
    Nop "NOP" opcode::Nop,
    /// `IORING_OP_READ`.
    Read "READ" opcode::Read,
    /// `IORING_OP_WRITE`.
    Write "WRITE" opcode::Write,
    /// `IORING_OP_POLL_ADD`.
    PollAdd "POLL_ADD" opcode::PollAdd,
    /// `IORING_OP_SENDMSG`.
    SendMsg "SENDMSG" opcode::SendMsg,
    /// `IORING_OP_RECVMSG`.
    RecvMsg "RECVMSG" opcode::RecvMsg,
    /// `IORING_OP_ACCEPT`.
    Accept "ACCEPT" opcode::Accept,
    /// `IORING_OP_ASYNC_CANCEL`.
    AsyncCancel "ASYNC_CANCEL" opcode::AsyncCancel,
    /// `IORING_OP_CONNECT`.
    Connect "CONNECT" opcode::Connect,
    /// `IORING_OP_CLOSE`.
    Close "CLOSE" opcode::Close,
    /// `IORING_OP_SEND`.
    Send "SEND" opcode::Send,
    /// `IORING_OP_RECV`.
    Recv "RECV" opcode::Recv,
    /// `IORING_OP_SHUTDOWN`.
    Shutdown "SHUTDOWN" opcode::Shutdown,
    /// `IORING_OP_MSG_RING`.
    MsgRing "MSG_RING" opcode::MsgRingData,
    /// `IORING_OP_SEND_ZC`.
    SendZc "SEND_ZC" opcode::SendZc,
    /// `IORING_OP_SENDMSG_ZC`.
    SendMsgZc "SENDMSG_ZC" opcode::SendMsgZc,
    /// `IORING_OP_RECV_ZC`.
    RecvZc "RECV_ZC" opcode::RecvZc,
}

impl fmt::Display for IoUringOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.name(), self) {
            (Some(name), _) => f.write_str(name),
            (None, IoUringOp::Other(code)) => write!(f, "op {code}"),
            (None, _) => write!(f, "{self:?}"),
        }
    }
}

/// The ring's queues as the user side sees them.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RingState {
    pub(crate) sq_entries: usize,
    pub(crate) sq_pending: usize,
    pub(crate) cq_entries: usize,
    pub(crate) cq_ready: usize,
    /// The kernel's count of completions it could not post (CQ ring's overflow field).
    pub(crate) cq_overflow: u32,
    /// The kernel's count of SQEs it dropped as invalid.
    pub(crate) sq_dropped: u32,
}

impl Driver {
    /// Every op in the slab, oldest first.
    pub(crate) fn describe_ops(&mut self) -> Vec<OpInFlight> {
        let now = stamp_now();
        let mut out: Vec<OpInFlight> = self
            .ops
            .with_meta()
            .map(|(meta, slot)| describe(meta, slot, now))
            .collect();
        self.describe_flights(now, &mut out);
        out.sort_by_key(|o| std::cmp::Reverse(o.age));
        out
    }

    pub(crate) fn ring_state(&mut self) -> RingState {
        self.ring.state()
    }
}

fn describe(meta: Meta, slot: &mut OpSlot, now: u32) -> OpInFlight {
    let (state, waker) = match &slot.lifecycle {
        Lifecycle::Pending(w) => (OpState::Pending, w.as_ref()),
        Lifecycle::Partial { waker, .. } => (OpState::WaitingForNotification, waker.as_ref()),
        Lifecycle::Completed(_) => (OpState::Completed, None),
        Lifecycle::Streaming {
            finished: false,
            waker,
        } => (OpState::Streaming, waker.as_ref()),
        Lifecycle::Streaming {
            finished: true,
            waker,
        } => (OpState::Finished, waker.as_ref()),
        Lifecycle::Detached { notifying: false } => (OpState::Detached, None),
        Lifecycle::Detached { notifying: true } => (OpState::WaitingForNotification, None),
        // A zero-copy send whose task went on at its result (or dropped it) keeps
        // its buffers until the notification.
        Lifecycle::Abandoned
            if meta.label == opcode::SendZc::CODE || meta.label == opcode::SendMsgZc::CODE =>
        {
            (OpState::WaitingForNotification, None)
        }
        Lifecycle::Abandoned => (OpState::Cancelled, None),
    };
    let waker = waker.map(SlimWaker::to_waker);
    let (fd, multishot) = slot.data.describe();
    OpInFlight {
        opcode: IoUringOp::from_code(meta.label),
        state,
        fd,
        multishot,
        age: age(meta.stamp(), now),
        waker,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_survive_the_24_bit_wrap() {
        assert_eq!(age(10, 110), Duration::from_secs(1));
        // 100 ticks up to the wrap, 101 after it.
        assert_eq!(age(STAMP_MASK - 99, 101), TICK * 201);
        let now = stamp_now();
        assert!(now <= STAMP_MASK);
        assert!(age(now, stamp_now()) < Duration::from_secs(60));
    }

    #[test]
    fn opcodes_have_their_kernel_names_in_text_and_json() {
        let recv_zc = IoUringOp::from_code(opcode::RecvZc::CODE);
        assert_eq!(recv_zc, IoUringOp::RecvZc);
        assert_eq!(recv_zc.to_string(), "RECV_ZC");
        assert_eq!(
            IoUringOp::from_code(opcode::Accept::CODE),
            IoUringOp::Accept
        );
        assert_eq!(IoUringOp::from_code(250).to_string(), "op 250");
        for op in [
            IoUringOp::SendMsg,
            IoUringOp::MsgRing,
            IoUringOp::Other(250),
        ] {
            let json = serde_json::to_string(&op).unwrap();
            assert_eq!(serde_json::from_str::<IoUringOp>(&json).unwrap(), op);
        }
        assert_eq!(
            serde_json::to_string(&IoUringOp::SendMsg).unwrap(),
            "\"SENDMSG\""
        );
        assert_eq!(
            serde_json::to_string(&OpState::Cancelled).unwrap(),
            "\"cancelled\""
        );
    }
}
