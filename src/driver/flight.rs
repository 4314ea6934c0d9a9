//! Flights: requests a layer above submits without an op in the slab, keeping their
//! memory itself and taking their completions through one function of its own.
//!
//! A queued send of one buffer on a socket with nothing else in flight (the reply of
//! a request/response connection) costs, as an op, a box, a slab slot with its stamp,
//! the op's SQE built through the send plan, a visit of the boxed op per completion and
//! the box's recycling: counted at 8 connections of 64 B echo, ~1,100 instructions per
//! send, a third of the request. As a flight it costs the SQE and the owner's
//! bookkeeping (`ops::send_queue` keeps the buffer among the thread's flights, and the
//! socket's writer, which its queries need anyway, names it). The driver knows no type
//! above it, so the owner hands it its functions ([`FlightKind`]) and names each flight
//! by a tag of 62 bits (the owner's key for it) carried in the SQE's user data.
//!
//! The driver counts the flights in the air, so shutdown drains them like ops, the
//! state dump lists them, and the in-flight counter includes them.

use super::inspect::{stamp_now, IoUringOp, OpInFlight, OpState};
use super::ring::Completion;
use super::Driver;
use io_uring::squeue;
use std::io;
use std::os::fd::RawFd;

/// The user data bits that mark a flight's completion: bit 63 set, bit 62 clear. Op
/// keys keep bit 63 clear (their generation stays below 2^31) and the reserved values
/// have both set.
const FLIGHT: u64 = 1 << 63;
const TAG_BITS: u64 = (1 << 62) - 1;

/// The flight tagged `tag`'s user data.
fn user_data(tag: u64) -> u64 {
    FLIGHT | tag
}

/// The tag of a flight's completion; `None` for any other user data.
pub(super) fn tag_of(user_data: u64) -> Option<u64> {
    (user_data >> 62 == 0b10).then_some(user_data & TAG_BITS)
}

/// What the driver calls on the owner of its flights (one owner per program: the
/// queued sends).
pub(crate) struct FlightKind {
    /// Takes the completion of the flight tagged `tag` (a plain request: one
    /// completion each). May submit or defer ops, and push wakers to
    /// [`Driver::later_wakers`].
    pub(crate) done: fn(&mut Driver, tag: u64, &Completion),
    /// The flights the owner keeps in the air on the ring with this fd: their fds and
    /// submission stamps ([`stamp_now`]), for the state dump.
    pub(crate) describe: fn(ring: RawFd, &mut Vec<(RawFd, u32)>),
    /// Shutdown of the ring with this fd gave up waiting: the kernel may still read
    /// its flights' memory after the ring is gone, so the owner must never free it (it
    /// leaks it).
    pub(crate) abandon: fn(ring: RawFd),
}

/// The driver's account of its flights.
#[derive(Default)]
pub(super) struct Flights {
    /// Submitted and not completed.
    pub(super) in_air: u32,
    /// Their owner's functions, from the first flight on.
    pub(super) kind: Option<&'static FlightKind>,
}

impl Driver {
    /// Queues `entry` as a flight tagged `tag` (below 2^62), whose completion goes to
    /// `kind.done`. The caller sets no user data.
    ///
    /// # Safety
    /// As [`push`](Self::push): memory and fds the entry refers to stay valid until
    /// `kind.done` got its completion, or forever once `kind.abandon` was called.
    pub(crate) unsafe fn push_flight(
        &mut self,
        entry: squeue::Entry,
        tag: u64,
        kind: &'static FlightKind,
    ) -> io::Result<()> {
        if tag > TAG_BITS {
            return Err(io::Error::other("a flight tag above 62 bits"));
        }
        self.flights.kind = Some(kind);
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.push(&entry.user_data(user_data(tag))) }?;
        self.flights.in_air += 1;
        Ok(())
    }

    /// Asks the kernel to cancel the flight tagged `tag`; its completion comes as
    /// usual (`-ECANCELED`, or its result if it ended first).
    pub(crate) fn cancel_flight(&mut self, tag: u64) {
        self.push_cancel_of(user_data(tag));
    }

    /// The stamp of requests submitted this turn (see [`stamp_now`]).
    pub(crate) fn turn_stamp(&mut self) -> u32 {
        *self.stamp.get_or_insert_with(stamp_now)
    }

    /// Hands a flight's completion to its owner; `true` when it woke nobody and made
    /// no op (a quiet completion).
    pub(super) fn flight_done(&mut self, tag: u64, c: &Completion) -> bool {
        let Some(kind) = self.flights.kind else {
            return false;
        };
        self.flights.in_air = self.flights.in_air.saturating_sub(1);
        let (woken, deferred) = (self.wakers.len(), self.deferred.len());
        (kind.done)(self, tag, c);
        self.wakers.len() == woken && self.deferred.len() == deferred
    }

    /// The flights in the air, as the state dump shows ops.
    pub(super) fn describe_flights(&self, now: u32, out: &mut Vec<OpInFlight>) {
        let Some(kind) = self.flights.kind.filter(|_| self.flights.in_air > 0) else {
            return;
        };
        let mut fds = Vec::new();
        (kind.describe)(self.ring_fd(), &mut fds);
        out.extend(fds.into_iter().map(|(fd, stamp)| OpInFlight {
            opcode: IoUringOp::from_code(io_uring::opcode::Send::CODE),
            state: OpState::Detached,
            fd: Some(fd),
            multishot: false,
            age: super::inspect::age(stamp, now),
            waker: None,
        }));
    }

    /// Shutdown gives up on the flights still in the air: their owner leaks their
    /// memory. Returns how many there were.
    pub(super) fn abandon_flights(&mut self) -> usize {
        let n = std::mem::take(&mut self.flights.in_air) as usize;
        if let Some(kind) = self.flights.kind.filter(|_| n > 0) {
            (kind.abandon)(self.ring_fd());
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flight_tags_do_not_meet_keys_or_reserved_values() {
        assert_eq!(tag_of(user_data(0x7fff_1234_5678)), Some(0x7fff_1234_5678));
        assert_eq!(tag_of(user_data(TAG_BITS)), Some(TAG_BITS));
        for reserved in [u64::MAX, u64::MAX - 1, u64::MAX - 4] {
            assert_eq!(tag_of(reserved), None);
        }
        // A key's user data: its generation (below 2^31) in the high half.
        assert_eq!(tag_of(((1u64 << 31) - 1) << 32 | 7), None);
    }
}
