//! Multishot RECV_ZC into the worker's zero-copy pool (owned, or imported from the
//! worker that owns it).

use super::recv::{Charge, Decoded};

use crate::driver::Completion;
use crate::runtime::zero_copy::ZcRing;
use io_uring::squeue;
use std::io;
use std::os::fd::RawFd;
use std::rc::Rc;
use zcrx::{PoolError, RxBuf};

/// A multishot RECV_ZC on `socket` with a byte budget (`0` = unlimited). Data
/// completions (32-byte CQEs) are decoded into buffers as they are reaped; the receive
/// asks to stop once they hold more than `budget` bytes nobody has taken.
pub(crate) struct RecvZcMulti {
    ring: Rc<ZcRing>,
    budget: u32,
    pub(crate) decoded: Decoded,
    /// A completion came since the last [`quiet_looks`](Self::quiet_looks).
    heard: bool,
    /// Looks in a row that found no completion since the one before
    /// (`runtime::zc_restart`).
    quiet: u8,
}

/// Each chunk counts its length against the budget.
const CHARGE: Charge = Charge { granule: 0 };

impl RecvZcMulti {
    pub(crate) fn new(ring: Rc<ZcRing>, budget: u32) -> RecvZcMulti {
        RecvZcMulti {
            ring,
            budget,
            decoded: Decoded::new(budget, ()),
            heard: false,
            quiet: 0,
        }
    }

    /// A look at the receive: how many looks in a row (this one included) found no
    /// completion since the look before.
    pub(crate) fn quiet_looks(&mut self) -> u8 {
        self.quiet = if std::mem::take(&mut self.heard) {
            0
        } else {
            self.quiet.saturating_add(1)
        };
        self.quiet
    }

    /// The next buffer of the `owed` bytes of the data completion the stream took.
    pub(crate) fn take_next(&mut self, owed: &mut u32) -> io::Result<RxBuf> {
        self.decoded.take_next(owed, CHARGE)
    }

    fn decode(&self, c: &Completion) -> Result<RxBuf, PoolError> {
        if !c.more() {
            // The tail of a terminal completion is not a ZCRX CQE: never read it.
            return Err(PoolError::BadCompletion(format!(
                "terminal RECV_ZC completion with result {}",
                c.res
            )));
        }
        self.ring.take(c.res, c.big_cqe)
    }
}

/// The op's side of the [`OpCode`](crate::driver::OpCode) contract, called through
/// [`StreamRecv`](super::stream_recv::StreamRecv) (which holds the socket's fd open).
/// The entry names the ZCRX instance whose area and refill ring the pool core owns; the
/// `Rc` keeps the pool (and its core) alive for as long as this op exists, and the
/// worker closes the ring before dropping its pool. Chunks delivered to nobody are
/// handed back in `release` (one refill entry each).
impl RecvZcMulti {
    pub(crate) fn create_entry(&mut self, fd: RawFd) -> squeue::Entry {
        self.ring.entry(fd, self.budget)
    }

    pub(crate) fn on_complete(&mut self, c: &Completion) {
        self.heard = true;
        if c.res > 0 {
            let buf = self.decode(c).map(|b| vec![b]);
            self.decoded.push(buf, CHARGE);
        }
    }

    pub(crate) fn take_stop_request(&mut self) -> bool {
        self.decoded.take_stop_request()
    }

    pub(crate) fn release(&mut self, c: &Completion) {
        if c.res > 0 && !self.decoded.discard(c.res, CHARGE) {
            drop(self.decode(c));
        }
    }

    pub(crate) fn release_queued(&mut self, c: &Completion) {
        // Decoded by `on_complete` already (or lost to a decode error); this copy of
        // the completion has no ZCRX CQE to decode again.
        self.decoded.discard(c.res, CHARGE);
    }
}
