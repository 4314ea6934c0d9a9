//! Connect.

use super::{fd, SharedFd};
use crate::driver::OpCode;
use io_uring::{opcode, squeue};
use socket2::SockAddr;

pub(crate) struct Connect {
    pub(crate) socket: SharedFd,
    pub(crate) addr: SockAddr,
}

// SAFETY: the entry points at `addr`, stored inline in the op (boxed by the driver,
// never moved), and names the fd `socket` keeps open.
unsafe impl OpCode for Connect {
    fn fd(&self) -> Option<std::os::fd::RawFd> {
        Some(fd(&self.socket).0)
    }

    fn create_entry(&mut self) -> squeue::Entry {
        opcode::Connect::new(fd(&self.socket), self.addr.as_ptr().cast(), self.addr.len()).build()
    }
}
