//! Send of one buffer, and SENDMSG of several (optionally to an address), each
//! plain or zero-copy as its [`AwaitedWay`] chooses per submission. A zero-copy
//! submission's result comes with `F_MORE` and its notification follows; the driver
//! keeps the op (and with it the buffers) until the notification, also when the
//! future is dropped first.

use super::send_buf::SendBuf;
use super::send_way::{disconnect, plan, AwaitedWay, Plan};
use super::{fd, sqe, SharedFd};
use crate::driver::{Completion, OpCode};
use io_uring::{opcode, squeue};
use socket2::SockAddr;

/// Sends `buf[offset..]`.
pub(crate) struct Send {
    pub(crate) socket: SharedFd,
    pub(crate) buf: SendBuf,
    pub(crate) offset: usize,
    pub(crate) way: AwaitedWay,
}

// SAFETY: points into `buf`, whose storage (heap or static for `Bytes`, the pool's
// mapped area for an `RxBuf`, the registered arena) stays alive and unmoved while the
// op owns it, which for a zero-copy submission is until its notification (the driver's
// `Partial` state holds the op until then); names the fd `socket` keeps open.
unsafe impl OpCode for Send {
    fn fd(&self) -> Option<std::os::fd::RawFd> {
        Some(fd(&self.socket).0)
    }

    fn create_entry(&mut self) -> squeue::Entry {
        let rest = &self.buf[self.offset.min(self.buf.len())..];
        let zc = self.way.choose(&self.socket, rest.len());
        let bufs = std::slice::from_ref(&self.buf);
        let plan = plan(bufs, self.offset, zc, self.way.threshold());
        self.way.submitted(&plan);
        if plan.zc {
            send_zc_entry(&self.socket, rest, plan.slot)
        } else {
            send_entry(&self.socket, rest)
        }
    }

    fn release(&mut self, completion: &Completion) {
        self.way.released(&self.socket, completion);
    }

    fn done_at_result(&mut self, res: i32) -> bool {
        let rest = self.buf.len().saturating_sub(self.offset);
        self.way.done_at_result(&self.socket, res, rest)
    }

    fn on_shutdown_stuck(&mut self) {
        if self.way.zero_copy() {
            disconnect(&self.socket);
        }
    }
}

/// The SEND of `bytes` on `socket` (at most 4 GiB of them: a longer one is a short
/// send, which every sender continues).
pub(crate) fn send_entry(socket: &SharedFd, bytes: &[u8]) -> squeue::Entry {
    let len = bytes.len().min(u32::MAX as usize) as u32;
    opcode::Send::new(fd(socket), bytes.as_ptr(), len)
        .flags(libc::MSG_NOSIGNAL)
        .build()
}

/// The SENDMSG of `msghdr` on `socket`.
pub(crate) fn sendmsg_entry(socket: &SharedFd, msghdr: &libc::msghdr) -> squeue::Entry {
    opcode::SendMsg::new(fd(socket), msghdr)
        .flags(libc::MSG_NOSIGNAL as u32)
        .build()
}

/// Flags of a zero-copy send on a stream: the kernel sends all of it before it
/// answers (a short zero-copy send could go again only after its notification).
const ZC_MSG_FLAGS: i32 = libc::MSG_NOSIGNAL | libc::MSG_WAITALL;

/// The SEND_ZC of `bytes` on `socket`, whose notification says whether the kernel
/// copied after all (`IORING_SEND_ZC_REPORT_USAGE`); `registered`: the fixed-buffer
/// slot `bytes` lie in (`IORING_RECVSEND_FIXED_BUF`: no pinning per send).
pub(crate) fn send_zc_entry(
    socket: &SharedFd,
    bytes: &[u8],
    registered: Option<u16>,
) -> squeue::Entry {
    let len = bytes.len().min(u32::MAX as usize) as u32;
    opcode::SendZc::new(fd(socket), bytes.as_ptr(), len)
        .flags(ZC_MSG_FLAGS)
        .zc_flags(zcrx::abi::IORING_SEND_ZC_REPORT_USAGE)
        .buf_index(registered)
        .build()
}

/// The SENDMSG_ZC of `msghdr` on `socket`, as [`send_zc_entry`]: `registered` is the
/// slot every iovec lies in.
pub(crate) fn sendmsg_zc_entry(
    socket: &SharedFd,
    msghdr: &libc::msghdr,
    registered: Option<u16>,
) -> squeue::Entry {
    let fixed = registered.map_or(0, |_| zcrx::abi::IORING_RECVSEND_FIXED_BUF);
    let entry = opcode::SendMsgZc::new(fd(socket), msghdr)
        .flags(ZC_MSG_FLAGS as u32)
        .ioprio(zcrx::abi::IORING_SEND_ZC_REPORT_USAGE | fixed)
        .build();
    match registered {
        // The crate's `SendMsgZc` has no `buf_index` setter.
        Some(slot) => sqe::with_buf_index(entry, slot),
        None => entry,
    }
}

/// The most iovecs one SENDMSG takes (Linux's `UIO_MAXIOV`).
const IOV_MAX: usize = 1024;

/// A SENDMSG's header and the iovecs it points at, kept in the op (the kernel reads
/// them until the final completion) and rebuilt for each submission.
pub(crate) struct MsgParts {
    iovecs: Vec<libc::iovec>,
    pub(crate) msghdr: libc::msghdr,
}

impl MsgParts {
    /// Empty, with `iovecs`' room (a kept list).
    #[inline(always)]
    pub(crate) fn new(iovecs: Vec<libc::iovec>) -> MsgParts {
        MsgParts {
            iovecs,
            // SAFETY: `msghdr` is plain data; all-zero is a valid empty header.
            msghdr: unsafe { std::mem::zeroed() },
        }
    }

    /// Points the header at the iovecs, filled with `bufs` from byte `skip` on.
    ///
    /// The kernel refuses more than [`IOV_MAX`] iovecs (`EMSGSIZE`): a longer list goes
    /// out as a short send, which every stream sender continues. (Datagram sends carry
    /// one buffer.)
    pub(crate) fn gather(&mut self, bufs: &[SendBuf], mut skip: usize) {
        self.iovecs.clear();
        for b in bufs {
            if self.iovecs.len() == IOV_MAX {
                break;
            }
            if skip >= b.len() {
                skip -= b.len();
                continue;
            }
            let rest = &b[skip..];
            skip = 0;
            self.iovecs.push(libc::iovec {
                iov_base: rest.as_ptr() as *mut libc::c_void,
                iov_len: rest.len(),
            });
        }
        self.msghdr.msg_iov = self.iovecs.as_mut_ptr();
        self.msghdr.msg_iovlen = self.iovecs.len() as _;
    }

    /// The SQE of `plan`'s submission of `bufs` from byte `skip` on: SEND of one
    /// buffer's rest, SENDMSG (through these parts) of several; zero-copy, naming
    /// registered memory, as the plan says.
    pub(crate) fn entry(
        &mut self,
        socket: &SharedFd,
        bufs: &[SendBuf],
        skip: usize,
        plan: &Plan,
    ) -> squeue::Entry {
        let bufs = &bufs[..plan.end];
        let (mut first, mut at) = (0, skip);
        while first < bufs.len() && at >= bufs[first].len() {
            at -= bufs[first].len();
            first += 1;
        }
        if let [one] = &bufs[first.min(bufs.len())..] {
            let bytes = &one[at..];
            return if plan.zc {
                send_zc_entry(socket, bytes, plan.slot)
            } else {
                send_entry(socket, bytes)
            };
        }
        self.gather(bufs, skip);
        if plan.zc {
            sendmsg_zc_entry(socket, &self.msghdr, plan.slot)
        } else {
            sendmsg_entry(socket, &self.msghdr)
        }
    }

    /// The iovec list back, emptied (for the next sends), the header pointing at
    /// nothing.
    pub(crate) fn take_iovecs(&mut self) -> Vec<libc::iovec> {
        self.msghdr.msg_iov = std::ptr::null_mut();
        self.msghdr.msg_iovlen = 0;
        let mut iovecs = std::mem::take(&mut self.iovecs);
        iovecs.clear();
        iovecs
    }
}

/// SENDMSG over several buffers, skipping the first `skip` bytes.
pub(crate) struct SendMsg {
    pub(crate) socket: SharedFd,
    pub(crate) bufs: Vec<SendBuf>,
    pub(crate) skip: usize,
    pub(crate) to: Option<SockAddr>,
    pub(crate) way: AwaitedWay,
    // SAFETY-relevant: the header points at its iovecs and `to`, which live in the same
    // boxed op and are not touched until the final completion.
    msg: MsgParts,
}

impl SendMsg {
    pub(crate) fn new(
        socket: SharedFd,
        bufs: Vec<SendBuf>,
        skip: usize,
        to: Option<SockAddr>,
        way: AwaitedWay,
    ) -> Self {
        SendMsg {
            socket,
            bufs,
            skip,
            to,
            way,
            msg: MsgParts::new(Vec::new()),
        }
    }

    /// Bytes of every buffer together.
    pub(crate) fn total(&self) -> usize {
        self.bufs.iter().map(|b| b.len()).sum()
    }
}

// SAFETY: the msghdr points at `iovecs` and `to` inside this op; the iovecs point into
// `bufs`, whose storage stays alive and unmoved while the op owns them (for a
// zero-copy submission, until its notification). None of them is modified after
// `create_entry`. The fd is kept open by `socket`.
unsafe impl OpCode for SendMsg {
    fn fd(&self) -> Option<std::os::fd::RawFd> {
        Some(fd(&self.socket).0)
    }

    fn create_entry(&mut self) -> squeue::Entry {
        let rest = self.total().saturating_sub(self.skip);
        if let Some(to) = &self.to {
            // A datagram to an address: plain, in one SENDMSG.
            self.msg.gather(&self.bufs, self.skip);
            self.msg.msghdr.msg_name = to.as_ptr() as *mut libc::c_void;
            self.msg.msghdr.msg_namelen = to.len();
            return sendmsg_entry(&self.socket, &self.msg.msghdr);
        }
        let zc = self.way.choose(&self.socket, rest);
        let plan = plan(&self.bufs, self.skip, zc, self.way.threshold());
        self.way.submitted(&plan);
        self.msg.entry(&self.socket, &self.bufs, self.skip, &plan)
    }

    fn release(&mut self, completion: &Completion) {
        self.way.released(&self.socket, completion);
    }

    fn done_at_result(&mut self, res: i32) -> bool {
        let rest = self.total().saturating_sub(self.skip);
        self.way.done_at_result(&self.socket, res, rest)
    }

    fn on_shutdown_stuck(&mut self) {
        if self.way.zero_copy() {
            disconnect(&self.socket);
        }
    }
}

impl Drop for Send {
    fn drop(&mut self) {
        self.way.let_go(&self.socket);
    }
}

impl Drop for SendMsg {
    fn drop(&mut self) {
        self.way.let_go(&self.socket);
    }
}
