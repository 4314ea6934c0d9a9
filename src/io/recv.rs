//! Receive into a caller-owned buffer (the buffer travels with the op and comes back).

use super::{fd, SharedFd};
use crate::driver::OpCode;
use bytes::BytesMut;
use io_uring::{opcode, squeue};

/// Receives into the spare capacity of `buf`.
pub(crate) struct RecvInto {
    pub(crate) socket: SharedFd,
    pub(crate) buf: BytesMut,
}

// SAFETY: the kernel writes into `buf`'s spare capacity, heap memory owned by the op
// and neither moved nor read until the final completion. The fd is kept open by
// `socket`.
unsafe impl OpCode for RecvInto {
    fn create_entry(&mut self) -> squeue::Entry {
        let spare = self.buf.spare_capacity_mut();
        let len = spare.len().min(u32::MAX as usize) as u32;
        opcode::Recv::new(fd(&self.socket), spare.as_mut_ptr().cast(), len).build()
    }
}

impl RecvInto {
    /// Marks the `n` bytes the kernel wrote as initialised and returns the buffer.
    pub(crate) fn into_filled(mut self, n: usize) -> BytesMut {
        let n = n.min(self.buf.capacity() - self.buf.len());
        // SAFETY: the completion reported `n` bytes written into the spare capacity
        // starting at `len()`.
        unsafe { self.buf.set_len(self.buf.len() + n) };
        self.buf
    }
}

/// RECVMSG into `buf`'s spare capacity, recording the sender's address.
pub(crate) struct RecvFrom {
    pub(crate) socket: SharedFd,
    pub(crate) buf: BytesMut,
    pub(crate) addr: Box<libc::sockaddr_storage>,
    iovec: libc::iovec,
    msghdr: libc::msghdr,
}

impl RecvFrom {
    pub(crate) fn new(socket: SharedFd, buf: BytesMut) -> Self {
        RecvFrom {
            socket,
            buf,
            // SAFETY: plain data, all-zero is valid.
            addr: Box::new(unsafe { std::mem::zeroed() }),
            iovec: libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0,
            },
            // SAFETY: plain data, all-zero is a valid empty header.
            msghdr: unsafe { std::mem::zeroed() },
        }
    }

    pub(crate) fn into_parts(mut self, n: usize) -> (BytesMut, socket2::SockAddr) {
        let n = n.min(self.buf.capacity() - self.buf.len());
        // SAFETY: the kernel wrote `n` bytes into the spare capacity.
        unsafe { self.buf.set_len(self.buf.len() + n) };
        let len = self.msghdr.msg_namelen;
        // SAFETY: the kernel filled `addr` with a socket address of `len` bytes.
        let addr = unsafe { socket2::SockAddr::new(*self.addr, len) };
        (self.buf, addr)
    }
}

// SAFETY: the msghdr points at `iovec` and `addr` inside this op, the iovec at `buf`'s
// spare capacity; none is touched until the final completion; `socket` keeps the fd.
unsafe impl OpCode for RecvFrom {
    fn create_entry(&mut self) -> squeue::Entry {
        let spare = self.buf.spare_capacity_mut();
        self.iovec = libc::iovec {
            iov_base: spare.as_mut_ptr().cast(),
            iov_len: spare.len(),
        };
        self.msghdr.msg_iov = &mut self.iovec;
        self.msghdr.msg_iovlen = 1;
        self.msghdr.msg_name = (&mut *self.addr as *mut libc::sockaddr_storage).cast();
        self.msghdr.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as _;
        opcode::RecvMsg::new(fd(&self.socket), &mut self.msghdr).build()
    }
}

/// Multishot receive drawing buffers from the worker's copy pool.
pub(crate) struct RecvMulti {
    pub(crate) socket: SharedFd,
    pub(crate) pool: std::rc::Rc<zcrx::CopyPool>,
}

// SAFETY: the entry names the fd `socket` keeps open and a buffer group whose memory
// the pool owns; the `Rc` keeps the pool (and so the memory) alive for as long as this
// op exists. Buffers delivered to nobody are handed back to the pool in `release`.
unsafe impl OpCode for RecvMulti {
    fn create_entry(&mut self) -> squeue::Entry {
        use std::os::fd::AsRawFd;
        self.pool.recv_multishot(self.socket.as_raw_fd())
    }

    fn release(&mut self, completion: &crate::driver::Completion) {
        if completion.res > 0 {
            // Taking the buffer and dropping it returns it to the ring.
            drop(self.pool.take(completion.res, completion.flags));
        }
    }
}
