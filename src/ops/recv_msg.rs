//! Multishot RECVMSG drawing buffers from a copy pool: one datagram per completion,
//! each buffer holding the kernel's `io_uring_recvmsg_out` header, the sender's
//! address and the payload.

use super::{fd, SharedFd};
use crate::driver::{Completion, OpCode};
use bytes::Bytes;
use io_uring::{opcode, squeue, types};
use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use zcrx::{CopyPool, RxBuf};

/// One received datagram.
#[derive(Debug, Clone)]
pub struct Datagram {
    /// The payload: a slice of the pool buffer it was received into (no copy); the
    /// buffer returns to its pool when the last clone is dropped.
    pub data: Bytes,
    /// The sender.
    pub from: SocketAddr,
    /// The datagram was larger than a pool buffer could hold: `data` is its start.
    pub truncated: bool,
}

/// Multishot RECVMSG on a datagram socket into `pool`.
pub(crate) struct RecvMsgMulti {
    socket: SharedFd,
    pool: Rc<CopyPool>,
    /// The layout template the kernel follows (name and control lengths); stable in
    /// the op's box while the kernel reads it.
    msghdr: libc::msghdr,
    /// Datagrams of queued completions, in completion order.
    pub(crate) decoded: VecDeque<io::Result<Datagram>>,
}

impl RecvMsgMulti {
    pub(crate) fn new(socket: SharedFd, pool: Rc<CopyPool>) -> RecvMsgMulti {
        // SAFETY: plain data; all-zero is an empty header.
        let mut msghdr: libc::msghdr = unsafe { std::mem::zeroed() };
        msghdr.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as _;
        RecvMsgMulti {
            socket,
            pool,
            msghdr,
            decoded: VecDeque::new(),
        }
    }

    fn decode(&self, c: &Completion) -> io::Result<Datagram> {
        let buf: RxBuf = self
            .pool
            .take(c.res, c.flags)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
        let out = types::RecvMsgOut::parse(&buf, &self.msghdr)
            .map_err(|()| bad("a RECVMSG completion too short for its header"))?;
        let name = out.name_data();
        let mut storage: libc::sockaddr_storage =
            // SAFETY: plain data; all-zero is a valid (unspecified) address.
            unsafe { std::mem::zeroed() };
        let len = name
            .len()
            .min(std::mem::size_of::<libc::sockaddr_storage>());
        // SAFETY: `len` bytes fit both the kernel-written name and the storage.
        unsafe {
            std::ptr::copy_nonoverlapping(
                name.as_ptr(),
                (&mut storage as *mut libc::sockaddr_storage).cast::<u8>(),
                len,
            )
        };
        // SAFETY: the kernel wrote a socket address of `incoming_name_len` bytes.
        let addr = unsafe { socket2::SockAddr::new(storage, out.incoming_name_len() as _) };
        let from = addr
            .as_socket()
            .ok_or_else(|| bad("a datagram from a non-IP address"))?;
        let start = out.payload_data().as_ptr() as usize - buf.as_ptr() as usize;
        let end = start + out.payload_data().len();
        let truncated = out.is_payload_truncated();
        Ok(Datagram {
            data: buf.into_bytes().slice(start..end),
            from,
            truncated,
        })
    }
}

// SAFETY: the entry points at `msghdr` inside this boxed op and names the fd `socket`
// keeps open and a buffer group whose memory the pool (kept alive by the `Rc`) owns.
// Buffers delivered to nobody go back to the pool in `release`.
unsafe impl OpCode for RecvMsgMulti {
    fn fd(&self) -> Option<std::os::fd::RawFd> {
        Some(fd(&self.socket).0)
    }

    fn create_entry(&mut self) -> squeue::Entry {
        opcode::RecvMsgMulti::new(
            types::Fd(self.socket.as_raw_fd()),
            &self.msghdr,
            self.pool.group_id(),
        )
        .build()
    }

    fn on_complete(&mut self, c: &Completion) {
        if c.res > 0 {
            let d = self.decode(c);
            self.decoded.push_back(d);
        }
    }

    fn release(&mut self, c: &Completion) {
        if c.res > 0 && self.decoded.pop_front().is_none() {
            drop(self.decode(c));
        }
    }
}
