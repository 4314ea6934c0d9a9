//! Shutdown of one or both directions of a socket.

use super::{fd, SharedFd};
use crate::driver::OpCode;
use io_uring::{opcode, squeue};

pub(crate) struct Shutdown {
    pub(crate) socket: SharedFd,
    pub(crate) how: i32,
}

// SAFETY: references only the fd `socket` keeps open.
unsafe impl OpCode for Shutdown {
    fn fd(&self) -> Option<std::os::fd::RawFd> {
        Some(fd(&self.socket).0)
    }

    fn create_entry(&mut self) -> squeue::Entry {
        opcode::Shutdown::new(fd(&self.socket), self.how).build()
    }
}
