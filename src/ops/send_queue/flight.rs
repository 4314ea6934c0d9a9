//! A turn's direct sends through the ring as flights ([`Driver::push_flight`]): each
//! is one SEND whose buffer and socket the thread's writers keep ([`Flight`]), with
//! no op, box or slot in the driver's slab. Several sockets' replies in one loop turn
//! go out this way, in one kernel entry for all (a syscall each was measured slower in
//! real time); their completions come back here ([`FLIGHTS`]). Counted at 8
//! connections of 64 B echo, a send as a [`QueuedSend`] op cost ~1,100 instructions of
//! bookkeeping; the writer, which the queries need anyway, is all a flight adds to the
//! SQE.
//!
//! Only the common end is handled here: the whole buffer sent and nothing queued
//! behind it, which ends the writer. Anything else (a short send, a failure, a cancel,
//! sends queued meanwhile) becomes the op the send would have been, which takes the
//! result as its own completion.

use super::{end_removed, end_writer, key, with_writers, Direct, Failure, QueuedSend};
use crate::driver::op::{OpData, Single};
use crate::driver::slab::Key;
use crate::driver::{Completion, Driver, FlightKind};
use crate::ops::send::send_entry;
use crate::ops::send_buf::SendBuf;
use crate::ops::{fd, SharedFd};
use crate::runtime::SendZeroCopy;
use std::os::fd::RawFd;

/// What the kernel reads for a socket's send in flight without an op.
pub(super) struct Flight {
    socket: SharedFd,
    buf: SendBuf,
    /// Bytes of `buf` sent before the flight (a send at once the socket took in part).
    skip: usize,
    policy: SendZeroCopy,
    /// The ring it flies on, and when it was submitted (the state dump shows its age).
    ring: RawFd,
    stamp: u32,
}

/// The queued sends' functions for the driver.
static FLIGHTS: FlightKind = FlightKind {
    done: landed,
    describe,
    abandon,
};

/// Sends `buf` of direct send `d`, from byte `skip` on, as a flight: its writer (made
/// now, busy with the rest) names it, and the thread's flights keep the buffer and the
/// socket until the completion.
pub(super) fn fly(driver: &mut Driver, d: &Direct, buf: SendBuf, skip: usize) {
    let entry = send_entry(&d.socket, &buf[skip.min(buf.len())..]);
    let flight = Flight {
        socket: d.socket.clone(),
        buf,
        skip,
        policy: d.policy,
        ring: driver.ring_fd(),
        stamp: driver.turn_stamp(),
    };
    let at = with_writers(|w| {
        let len = flight.buf.len();
        let writer = d.settle_sent(&mut w.by_socket, len, skip);
        if writer.flight.is_some() {
            // Never so (a direct send's socket had nothing in flight), but should it
            // be, the bytes go after the flight's, in order.
            writer.queued.push(flight.buf);
            return None;
        }
        let at = w.flights.insert(flight);
        writer.flight = Some(at);
        Some(at)
    });
    // Queued behind the flight, or the thread's writers are gone (its buffer went
    // with them): nothing to submit.
    let Some(Some(at)) = at else { return };
    // SAFETY: the entry points into the buffer's bytes (on the heap, in static memory
    // or in a pool's area: a move of the `SendBuf` leaves them where they are) and names
    // the socket's fd; the flight at `at` keeps both until `landed` takes them, or
    // forever once `abandon` leaked them.
    if unsafe { driver.push_flight(entry, at.user_data(), &FLIGHTS) }.is_err() {
        let failed = Completion {
            user_data: 0,
            res: -libc::EIO,
            flags: 0,
            big_cqe: [0; 2],
        };
        landed(driver, at.user_data(), &failed);
    }
}

/// The completion `c` of the flight tagged `tag` (its place among the flights).
fn landed(driver: &mut Driver, tag: u64, c: &Completion) {
    let wake = driver.later_wakers();
    let taken = with_writers(|w| {
        let flight = w.flights.remove(Key::from_user_data(tag)?)?;
        let k = key(&flight.socket);
        // Taken out in the one lookup the rule needs, and put back otherwise. A flight's
        // writer goes only here: a missing one would be a bug.
        let Some(mut writer) = w.by_socket.remove(&k) else {
            return Some((flight, true));
        };
        writer.flight = None;
        let rest = flight.buf.len().saturating_sub(flight.skip);
        let whole = usize::try_from(c.res).is_ok_and(|n| n == rest && n > 0);
        if whole && writer.queued.is_empty() {
            // The rule: all of it went and nothing waits behind it; the writer's send
            // ends as an op's would.
            end_removed(w, &flight.socket, writer, wake);
            return Some((flight, true));
        }
        w.by_socket.insert(k, writer);
        Some((flight, false))
    })
    .flatten();
    // The buffer goes back to its pool and the socket's owner goes here, outside the
    // writers' borrow (the last owner frees its socket, which reaches the writers).
    let Some((flight, false)) = taken else { return };
    // Short, failed or cancelled, or with sends queued behind it: the op it would have
    // been takes the result as its completion, and goes on from there.
    let Flight {
        socket,
        buf,
        skip,
        policy,
        ..
    } = flight;
    let k = key(&socket);
    let mut op = new_op(socket, buf, skip, policy);
    if op.sent(c.res, driver.later_wakers()) && !driver.is_shutting_down() {
        let data = driver.spare.boxed_with(|| Single::new(op));
        let at = driver.defer_detached(OpData::boxed(data));
        with_writers(|w| {
            if let Some(writer) = w.by_socket.get_mut(&k) {
                writer.deferred_at = Some(at);
            }
        });
    }
    // Otherwise the op ended the writer's run; or the driver shuts down, and the op,
    // dropped still live, fails the writer.
}

/// A [`QueuedSend`] of `buf` from byte `skip` on, with the thread's kept lists.
fn new_op(socket: SharedFd, buf: SendBuf, skip: usize, policy: SendZeroCopy) -> QueuedSend {
    let total = buf.len();
    let (mut bufs, iovecs) = with_writers(|w| {
        (
            w.spare_bufs.pop().unwrap_or_default(),
            w.spare_iovecs.pop().unwrap_or_default(),
        )
    })
    .unwrap_or_default();
    bufs.push(buf);
    let mut op = QueuedSend::new(socket, bufs, total, iovecs, policy);
    op.skip = skip;
    op
}

/// The flights on ring `ring`: their fds and stamps.
fn describe(ring: RawFd, out: &mut Vec<(RawFd, u32)>) {
    with_writers(|w| {
        let flights = w.flights.iter_mut().map(|(_, f)| f);
        out.extend(
            flights
                .filter(|f| f.ring == ring)
                .map(|f| (fd(&f.socket).0, f.stamp)),
        );
    });
}

/// The driver of ring `ring` gave up on its flights: their buffers and sockets are
/// leaked (the kernel may still read them), and their writers fail (what was queued
/// behind them is dropped, and a task waiting for a flush is woken to the failure).
fn abandon(ring: RawFd) {
    let mut wake = Vec::new();
    with_writers(|w| {
        let gone: Vec<Key> = w
            .flights
            .iter_mut()
            .filter(|(_, f)| f.ring == ring)
            .map(|(at, _)| at)
            .collect();
        for at in gone {
            let Some(flight) = w.flights.remove(at) else {
                continue;
            };
            if let Some(writer) = w.by_socket.get_mut(&key(&flight.socket)) {
                writer.flight = None;
            }
            end_writer(w, &flight.socket, Some(Failure(libc::ECANCELED)), &mut wake);
            std::mem::forget(flight);
        }
    });
    wake.into_iter().for_each(std::task::Waker::wake);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::SocketFd;
    use std::os::fd::OwnedFd;

    /// A socket with a flight on ring `ring` of `payload`, as `fly` leaves it.
    fn flying(ring: RawFd, payload: &bytes::Bytes) -> SharedFd {
        let (a, _peer) = std::os::unix::net::UnixStream::pair().expect("socketpair");
        let socket = SocketFd::shared(OwnedFd::from(a));
        with_writers(|w| {
            let at = w.flights.insert(Flight {
                socket: socket.clone(),
                buf: SendBuf::Bytes(payload.clone()),
                skip: 0,
                policy: SendZeroCopy::Off,
                ring,
                stamp: 7,
            });
            let writer = super::super::Writer {
                busy: true,
                backlog: payload.len(),
                flight: Some(at),
                ..Default::default()
            };
            w.by_socket.insert(key(&socket), writer);
        });
        socket.set_writer_known(true);
        socket
    }

    #[test]
    fn abandoned_flights_keep_their_memory_and_fail_their_writers_on_their_ring_only() {
        let (mine, other) = (
            bytes::Bytes::from(vec![1u8; 100]),
            bytes::Bytes::from(vec![2u8; 50]),
        );
        let a = flying(901, &mine);
        let b = flying(902, &other);
        let mut listed = Vec::new();
        describe(901, &mut listed);
        assert_eq!(
            listed,
            vec![(fd(&a).0, 7)],
            "the dump lists ring 901's flight only"
        );

        abandon(901);
        let (a_writer, b_writer) = with_writers(|w| {
            let of = |s: &SharedFd| {
                let writer = &w.by_socket[&key(s)];
                (
                    writer.busy,
                    writer.flight.is_some(),
                    writer.failed.map(|f| f.0),
                )
            };
            (of(&a), of(&b))
        })
        .expect("the thread's writers");
        assert_eq!(a_writer, (false, false, Some(libc::ECANCELED)));
        assert_eq!(
            b_writer,
            (true, true, None),
            "another ring's flight is untouched"
        );
        // The abandoned buffer was leaked, not freed: the kernel may still read it.
        assert!(!mine.is_unique(), "the abandoned flight's buffer was freed");
        assert_eq!(crate::ops::send_queue::backlog(&a), 0);
        let done = crate::ops::send_queue::done(&a).expect("a failed writer is done");
        assert_eq!(
            done.expect_err("failed").raw_os_error(),
            Some(libc::ECANCELED)
        );

        let mut left = Vec::new();
        describe(902, &mut left);
        assert_eq!(left, vec![(fd(&b).0, 7)]);
        abandon(902);
        assert!(!other.is_unique());
        assert_eq!(with_writers(|w| w.flights.len()), Some(0));
    }
}
