//! Send of one buffer, and SENDMSG of several (optionally to an address).

use super::send_buf::SendBuf;
use super::{fd, SharedFd};
use crate::driver::OpCode;
use io_uring::{opcode, squeue};
use socket2::SockAddr;

/// Sends `buf[offset..]`.
pub(crate) struct Send {
    pub(crate) socket: SharedFd,
    pub(crate) buf: SendBuf,
    pub(crate) offset: usize,
}

// SAFETY: points into `buf`, whose storage (heap or static for `Bytes`, the pool's
// mapped area for an `RxBuf`) stays alive and unmoved while the op owns it; names the
// fd `socket` keeps open.
unsafe impl OpCode for Send {
    fn fd(&self) -> Option<std::os::fd::RawFd> {
        Some(fd(&self.socket).0)
    }

    fn create_entry(&mut self) -> squeue::Entry {
        send_entry(&self.socket, &self.buf[self.offset..])
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

/// The SENDMSG_ZC of `msghdr` on `socket`, as [`send_zc_entry`].
pub(crate) fn sendmsg_zc_entry(socket: &SharedFd, msghdr: &libc::msghdr) -> squeue::Entry {
    opcode::SendMsgZc::new(fd(socket), msghdr)
        .flags(ZC_MSG_FLAGS as u32)
        .ioprio(zcrx::abi::IORING_SEND_ZC_REPORT_USAGE)
        .build()
}

/// The most iovecs one SENDMSG takes (Linux's `UIO_MAXIOV`).
const IOV_MAX: usize = 1024;

/// Points `msghdr` at `iovecs`, filled with `bufs` from byte `skip` on.
///
/// The kernel refuses more than [`IOV_MAX`] iovecs (`EMSGSIZE`): a longer list goes out
/// as a short send, which every stream sender continues. (Datagram sends carry one
/// buffer.)
pub(crate) fn gather(
    bufs: &[SendBuf],
    mut skip: usize,
    iovecs: &mut Vec<libc::iovec>,
    msghdr: &mut libc::msghdr,
) {
    iovecs.clear();
    for b in bufs {
        if iovecs.len() == IOV_MAX {
            break;
        }
        if skip >= b.len() {
            skip -= b.len();
            continue;
        }
        let rest = &b[skip..];
        skip = 0;
        iovecs.push(libc::iovec {
            iov_base: rest.as_ptr() as *mut libc::c_void,
            iov_len: rest.len(),
        });
    }
    msghdr.msg_iov = iovecs.as_mut_ptr();
    msghdr.msg_iovlen = iovecs.len() as _;
}

/// SENDMSG over several buffers, skipping the first `skip` bytes.
pub(crate) struct SendMsg {
    pub(crate) socket: SharedFd,
    pub(crate) bufs: Vec<SendBuf>,
    pub(crate) skip: usize,
    pub(crate) to: Option<SockAddr>,
    iovecs: Vec<libc::iovec>,
    // SAFETY-relevant: `msghdr` points at `iovecs` and `to`, which live in the same
    // boxed op and are not touched until the final completion.
    msghdr: libc::msghdr,
}

impl SendMsg {
    pub(crate) fn new(
        socket: SharedFd,
        bufs: Vec<SendBuf>,
        skip: usize,
        to: Option<SockAddr>,
    ) -> Self {
        SendMsg {
            socket,
            bufs,
            skip,
            to,
            iovecs: Vec::new(),
            // SAFETY: `msghdr` is plain data; all-zero is a valid empty header.
            msghdr: unsafe { std::mem::zeroed() },
        }
    }

    /// Bytes of every buffer together.
    pub(crate) fn total(&self) -> usize {
        self.bufs.iter().map(|b| b.len()).sum()
    }
}

// SAFETY: the msghdr points at `iovecs` and `to` inside this op; the iovecs point into
// `bufs`, whose storage stays alive and unmoved while the op owns them. None of them is modified after
// `create_entry`. The fd is kept open by `socket`.
unsafe impl OpCode for SendMsg {
    fn fd(&self) -> Option<std::os::fd::RawFd> {
        Some(fd(&self.socket).0)
    }

    fn create_entry(&mut self) -> squeue::Entry {
        gather(&self.bufs, self.skip, &mut self.iovecs, &mut self.msghdr);
        if let Some(to) = &self.to {
            self.msghdr.msg_name = to.as_ptr() as *mut libc::c_void;
            self.msghdr.msg_namelen = to.len();
        }
        sendmsg_entry(&self.socket, &self.msghdr)
    }
}

/// Zero-copy send of `buf[offset..]` (`IORING_OP_SEND_ZC`): one result CQE with
/// `F_MORE`, then a notification CQE once the kernel no longer reads the buffer.
pub(crate) struct SendZc {
    pub(crate) socket: SharedFd,
    pub(crate) buf: SendBuf,
    pub(crate) offset: usize,
}

// SAFETY: points into `buf`, kept alive and unmoved while the op owns it, which is until
// the notification CQE (the driver's `Partial` state holds the op until then); names
// the fd `socket` keeps open.
unsafe impl OpCode for SendZc {
    fn fd(&self) -> Option<std::os::fd::RawFd> {
        Some(fd(&self.socket).0)
    }

    fn create_entry(&mut self) -> squeue::Entry {
        let rest = &self.buf[self.offset..];
        let len = rest.len().min(u32::MAX as usize) as u32;
        opcode::SendZc::new(fd(&self.socket), rest.as_ptr(), len)
            .flags(libc::MSG_NOSIGNAL)
            .build()
    }
}
