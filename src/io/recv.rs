//! Receive into a caller-owned buffer (the buffer travels with the op and comes back).

use super::{fd, SharedFd};
use crate::driver::{Completion, OpCode};
use bytes::BytesMut;
use io_uring::{opcode, squeue};
use std::collections::VecDeque;
use std::io;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use zcrx::{CopyPool, PoolError, RxBuf};

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

/// Buffers decoded from the completions of a multishot pool receive, in completion
/// order, until the stream takes them.
#[derive(Default)]
pub(crate) struct Decoded {
    bufs: VecDeque<RxBuf>,
    /// Why a completion could not be decoded (its bytes are lost; the stream fails).
    bad: Option<String>,
}

impl Decoded {
    /// Queues what decoding one completion gave.
    pub(crate) fn push(&mut self, decoded: Result<Vec<RxBuf>, PoolError>) {
        match decoded {
            Ok(bufs) => self.bufs.extend(bufs),
            Err(e) => {
                self.bad.get_or_insert_with(|| e.to_string());
            }
        }
    }

    /// Moves the buffers holding the `res` bytes of the data completion just taken
    /// from the stream into `out`.
    pub(crate) fn take(&mut self, res: i32, out: &mut VecDeque<RxBuf>) -> io::Result<()> {
        if let Some(why) = self.bad.take() {
            return Err(io::Error::new(io::ErrorKind::InvalidData, why));
        }
        let mut left = res.max(0) as usize;
        while left > 0 {
            let Some(buf) = self.bufs.pop_front() else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{left} received bytes have no decoded buffer"),
                ));
            };
            left = left.saturating_sub(buf.len());
            out.push_back(buf);
        }
        Ok(())
    }

    /// Drops the buffers of a queued completion nobody will take; `false` if nothing
    /// was decoded (the completion arrived after the stream was dropped).
    pub(crate) fn discard(&mut self, res: i32) -> bool {
        if self.bufs.is_empty() {
            return false;
        }
        let mut left = res.max(0) as usize;
        while left > 0 {
            match self.bufs.pop_front() {
                Some(buf) => left = left.saturating_sub(buf.len()),
                None => break,
            }
        }
        true
    }
}

/// Multishot receive drawing buffers from the worker's copy pool. Completions are
/// decoded into buffers as they are reaped ([`OpCode::on_complete`]): in an incremental
/// pool the position of a completion's bytes depends on every completion before it,
/// and a bundle's buffers are named by ring slots that later returns overwrite.
pub(crate) struct RecvMulti {
    socket: SharedFd,
    pool: Rc<CopyPool>,
    bundle: bool,
    pub(crate) decoded: Decoded,
}

impl RecvMulti {
    /// A multishot receive on `socket`; `bundle`: one completion may fill several
    /// buffers (not on incremental pools).
    pub(crate) fn new(socket: SharedFd, pool: Rc<CopyPool>, bundle: bool) -> RecvMulti {
        let bundle = bundle && !pool.is_incremental();
        RecvMulti {
            socket,
            pool,
            bundle,
            decoded: Decoded::default(),
        }
    }

    fn decode(&self, c: &Completion) -> Result<Vec<RxBuf>, PoolError> {
        if self.bundle {
            let mut bufs = Vec::new();
            self.pool.take_bundle(c.res, c.flags, |b| bufs.push(b))?;
            Ok(bufs)
        } else {
            self.pool.take(c.res, c.flags).map(|b| vec![b])
        }
    }
}

// SAFETY: the entry names the fd `socket` keeps open and a buffer group whose memory
// the pool owns; the `Rc` keeps the pool (and so the memory) alive for as long as this
// op exists. Buffers delivered to nobody are handed back to the pool in `release`.
unsafe impl OpCode for RecvMulti {
    fn create_entry(&mut self) -> squeue::Entry {
        let fd = self.socket.as_raw_fd();
        if self.bundle {
            self.pool.recv_multishot_bundle(fd)
        } else {
            self.pool.recv_multishot(fd)
        }
    }

    fn on_complete(&mut self, c: &Completion) {
        if c.res > 0 {
            let bufs = self.decode(c);
            self.decoded.push(bufs);
        }
    }

    fn release(&mut self, c: &Completion) {
        if c.res > 0 && !self.decoded.discard(c.res) {
            // Never decoded: taking and dropping returns the buffers (in reaping
            // order, as decoding needs).
            drop(self.decode(c));
        }
    }
}
