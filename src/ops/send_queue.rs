//! Sends queued on a connection with no task waiting for them
//! ([`Connection::queue_send`](crate::net::Connection::queue_send)): the socket's
//! writer, kept by the thread while a send is in flight (or after one failed), and the
//! one detached op ([`QueuedSend`]) that carries its bytes.
//!
//! A send a task awaits costs the task a second wake-up and poll per reply (the
//! completion comes a loop turn after the send was made), and the connection an op
//! box per send. Here the driver takes the completion itself: a short send goes again
//! from where it stopped, and what was queued meanwhile goes next, all of it in one
//! gathered send, without waking anyone. At most one send per socket is in flight,
//! which keeps the bytes in order (two sends in flight could be reordered by a kernel
//! that parks the first on a full socket buffer). The first failure is kept and
//! returned by every later call, so none is lost.
//!
//! Sends of the [policy](crate::SendZeroCopy)'s size go out zero-copy (`SEND_ZC`, or
//! `SENDMSG_ZC` for several buffers, with `MSG_WAITALL` so the kernel sends all of it
//! before it answers). Their op keeps the buffers until the kernel's notification, and
//! with them its slot; once its result came, the socket's next bytes go in a new op
//! (made through the driver's `DetachedCx`), so the notification holds no send back. The
//! writer counts those ops (`Writer::notifying`), and a flush is done only when they
//! are too. A notification that reports the kernel copied switches the socket to plain
//! sends under the adaptive policy (`SocketFd::set_sends_copy`).

mod flight;

use super::send::MsgParts;
use super::send_buf::SendBuf;
use super::send_way::{self, refused_registration};
use super::{fd, SharedFd, SocketFd};
use crate::driver::op::{OpData, Single};
use crate::driver::slab::{GenSlab, Key};
use crate::driver::{Completion, DetachedCx, Driver, OpCode};
use crate::metrics::add_owned;
use crate::runtime::context;
use crate::runtime::op::not_in_runtime;
use crate::runtime::SendZeroCopy;
use io_uring::squeue;
use std::cell::RefCell;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::io;
use std::task::{Context, Poll, Waker};

/// A socket's queued sends while one is in flight or after one failed; a socket with
/// neither has none (an idle connection keeps no room for sending: the socket's
/// allocation fits a 96-byte chunk, and a pointer more would take it to 112).
#[derive(Default)]
struct Writer {
    /// A send is in flight: its op holds what it sends.
    busy: bool,
    /// Zero-copy sends whose bytes are sent and whose notification has not come: their
    /// ops hold their buffers (and the socket) until it does.
    notifying: u32,
    /// Bytes queued or in flight, not yet confirmed sent.
    backlog: usize,
    /// This writer among the thread's (a new one for each run of sends after the
    /// socket's queue was empty), and the bytes it sent: a send's progress.
    id: u64,
    sent: u64,
    /// Queued while a send is in flight, in order: the next send takes them all.
    queued: Vec<SendBuf>,
    /// Why the connection sends no more: each later call returns it.
    failed: Option<Failure>,
    /// The task waiting in [`poll_flush`] for the backlog to empty.
    flusher: Option<Waker>,
    /// Where this socket's op waits in the driver to be submitted with the next
    /// kernel entry (valid until then: `Driver::with_deferred`).
    deferred_at: Option<(u64, u32)>,
    /// Where this socket's send waits among the thread's direct sends of this turn
    /// ([`Direct`]), when the writer was made while it waited (`writer_of`): the
    /// writer then ends with it.
    direct_at: Option<u32>,
    /// The send in flight when it is a flight (`flight::fly`): a direct send of a turn
    /// that had several, sent through the ring without an op; its place among the
    /// thread's flights.
    flight: Option<Key>,
}

/// The writers of this thread's sockets, by the socket's address (a socket's writer
/// is removed when the socket is freed, [`forget`]), and emptied buffer lists for the
/// next sends (a send in a loop allocates nothing).
#[derive(Default)]
struct Writers {
    by_socket: WriterMap,
    /// The last writer id given out.
    last_id: u64,
    spare_bufs: Vec<Vec<SendBuf>>,
    spare_iovecs: Vec<Vec<libc::iovec>>,
    /// Plain sends of one buffer queued this turn on sockets the writers did not
    /// know, in order ([`send_direct`] takes them at the end of the turn).
    direct: Vec<Direct>,
    /// The sends in flight without an op: what the kernel reads for each.
    flights: GenSlab<flight::Flight>,
}

/// A plain send of one buffer, queued on a socket the writers did not know (nothing
/// queued, in flight or failed), waiting for the end of the loop turn with neither an
/// op nor a writer: alone in its turn, it goes out in one `send` there
/// ([`send_direct`]); otherwise it goes through the ring then as a flight (`flight`),
/// or, joined by a second send of its turn, in a [`QueuedSend`]. Counted on one
/// connection's 64 B echo, a writer made and removed and an op made, deferred, sent
/// at once and ended cost ~900 instructions of bookkeeping per send (the map entry,
/// the op's box and lists, the driver's deferred batch, the completion handed to it);
/// this costs a list entry and a flag in the socket ([`SocketFd::writer_known`]). A
/// query or a second send of the same turn finds it by a look from the list's end
/// (where the sender's own is, as a rule) and makes the writer then (`writer_of`).
struct Direct {
    socket: SharedFd,
    /// `None` once its writer took it (another buffer of the same turn joined it in an
    /// op, or the writer was cancelled).
    buf: Option<SendBuf>,
    policy: SendZeroCopy,
    /// Its writer's id, should one be made.
    id: u64,
}

impl Direct {
    /// A writer for this send's socket, busy with `backlog` bytes.
    fn writer(&self, backlog: usize) -> Writer {
        Writer {
            id: self.id,
            busy: true,
            backlog,
            ..Writer::default()
        }
    }

    /// The socket's writer (made for this send if it has none, busy with `backlog`
    /// bytes), with `sent` bytes counted as gone and this send no longer waiting.
    #[inline]
    fn settle_sent<'a>(
        &self,
        by_socket: &'a mut WriterMap,
        backlog: usize,
        sent: usize,
    ) -> &'a mut Writer {
        let writer = by_socket
            .entry(key(&self.socket))
            .or_insert_with(|| self.writer(backlog));
        self.socket.set_writer_known(true);
        writer.direct_at = None;
        writer.backlog = writer.backlog.saturating_sub(sent);
        writer.sent += sent as u64;
        writer
    }
}

/// The buffer of the direct send `writer` was made from, taken (the writer ends it now).
fn take_direct(direct: &mut [Direct], writer: &mut Writer) -> Option<SendBuf> {
    let at = writer.direct_at.take()?;
    direct.get_mut(at as usize)?.buf.take()
}

/// The place of `socket`'s direct send among `direct`, looked for from the end.
fn direct_of(direct: &[Direct], socket: &SocketFd) -> Option<usize> {
    let k = key(socket);
    direct.iter().rposition(|d| key(&d.socket) == k)
}

/// The writer of `socket`: its entry; made from its direct send of this turn if it
/// has only that (the writer then owns the direct send's end, `direct_at`); made new if
/// `create`. Makes the socket known to the writers whenever it makes an entry.
fn writer_of<'a>(
    by_socket: &'a mut WriterMap,
    direct: &[Direct],
    last_id: &mut u64,
    socket: &SocketFd,
    create: bool,
) -> Option<&'a mut Writer> {
    let vacant = match by_socket.entry(key(socket)) {
        Entry::Occupied(o) => return Some(o.into_mut()),
        Entry::Vacant(v) => v,
    };
    let writer = match socket
        .writer_known()
        .then(|| direct_of(direct, socket))
        .flatten()
    {
        Some(at) => Writer {
            direct_at: Some(at as u32),
            ..direct[at].writer(direct[at].buf.as_ref().map_or(0, |b| b.len()))
        },
        None if create => {
            *last_id += 1;
            Writer {
                id: *last_id,
                ..Writer::default()
            }
        }
        None => return None,
    };
    socket.set_writer_known(true);
    Some(vacant.insert(writer))
}

impl Drop for Writers {
    /// The thread is exiting: a flight still in the air (its runtime was never shut
    /// down, or is torn down after this) may still be read by the kernel, so its
    /// memory is leaked, not freed; a shut-down runtime left none.
    fn drop(&mut self) {
        for flight in self.flights.drain() {
            std::mem::forget(flight);
        }
    }
}

impl Writers {
    /// Keeps emptied lists for the next sends (a bounded number of each).
    #[inline]
    fn keep_lists(&mut self, mut bufs: Vec<SendBuf>, mut iovecs: Vec<libc::iovec>) {
        bufs.clear();
        iovecs.clear();
        if bufs.capacity() > 0 && self.spare_bufs.len() < SPARE_LISTS {
            self.spare_bufs.push(bufs);
        }
        if iovecs.capacity() > 0 && self.spare_iovecs.len() < SPARE_LISTS {
            self.spare_iovecs.push(iovecs);
        }
    }
}

/// How far a socket's queued sends have got: see
/// [`Connection::send_progress`](crate::net::Connection::send_progress).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendProgress {
    writer: u64,
    sent: u64,
}

/// Emptied lists kept at most (each kind).
const SPARE_LISTS: usize = 64;

thread_local! {
    // Sockets are `!Send`: a socket's writer is always on the thread that owns it.
    static WRITERS: RefCell<Writers> = RefCell::default();
}

/// Runs `f` on this thread's writers. Nothing `f` does may drop a socket or reach
/// the writers again: neither happens while a buffer list is edited.
fn with_writers<R>(f: impl FnOnce(&mut Writers) -> R) -> Option<R> {
    WRITERS.try_with(|w| f(&mut w.borrow_mut())).ok()
}

/// The writers by socket.
type WriterMap = HashMap<usize, Writer, BuildHasherDefault<AddrHasher>>;

/// A socket's key among the writers.
fn key(socket: &SocketFd) -> usize {
    socket as *const SocketFd as usize
}

/// Hashes a socket's address: heap addresses differ in their high bits and are
/// 8-aligned, so a multiply spreads them (the default SipHash cost ~100 instructions a
/// lookup, and a queued reply takes two).
#[derive(Default)]
struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8 | u64::from(*b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = ((n as u64) >> 3).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// Drops the writer of `socket`, which is being freed (a failed one's is all there
/// can be: a send in flight keeps its socket alive).
pub(crate) fn forget(socket: &SocketFd) {
    if socket.writer_known() {
        with_writers(|w| w.by_socket.remove(&key(socket)));
    }
}

/// A failed queued send: the errno, or `0` when the kernel took no byte (write zero).
#[derive(Clone, Copy, Debug)]
struct Failure(i32);

impl Failure {
    /// The failure a send's result `res` says, if any: a send of zero bytes is one.
    #[inline]
    fn of(res: i32) -> Option<Failure> {
        match res {
            0 => Some(Failure(0)),
            1.. => None,
            errno => Some(Failure(-errno)),
        }
    }

    fn error(self) -> io::Error {
        match self.0 {
            0 => io::Error::new(io::ErrorKind::WriteZero, "a queued send sent no byte"),
            errno => io::Error::from_raw_os_error(errno),
        }
    }
}

/// Queues `bufs` on `socket`, in order, after everything queued before them; see
/// [`Connection::queue_send`](crate::net::Connection::queue_send). Empty buffers are
/// skipped.
///
/// One plain buffer on an idle socket, queued by the tasks of a turn that reaped at
/// most one completion, goes at once if it is the first such ([`send_now`]; not for
/// [`Connection::queue_send_more`](crate::net::Connection::queue_send_more)).
/// Otherwise nothing is submitted here: a socket with nothing in flight gets its send
/// op made and deferred in the driver, where later buffers of the same loop turn join
/// it, and the driver submits it right before its next kernel entry
/// (`Driver::defer_detached`). So everything else a turn queues on a connection (the
/// replies to pipelined requests) goes out in one send: submitting the first reply at
/// once through the ring and the rest behind it cost a kernel round trip and a second
/// send per turn (measured: Thrift under pipelined load fell from ~170k to ~100k
/// requests per second).
pub(crate) fn queue_send(
    socket: &SharedFd,
    bufs: impl IntoIterator<Item = SendBuf>,
) -> io::Result<()> {
    let mut bufs = bufs.into_iter();
    // The caller's iterator runs before the writers are borrowed.
    let Some(first) = bufs.by_ref().find(|b| !b.is_empty()) else {
        return failure_of(socket);
    };
    // A kept list: a vectored reply per request allocates nothing.
    let mut rest = with_writers(|w| w.spare_bufs.pop())
        .flatten()
        .unwrap_or_default();
    rest.extend(bufs.filter(|b| !b.is_empty()));
    let len = first.len() + rest.iter().map(|b| b.len()).sum::<usize>();
    let queued = queue(socket, first, &mut rest, len, true);
    // Emptied by `queue`, or holding what an error left: dropped here, outside the
    // writers' borrow.
    rest.clear();
    with_writers(|w| w.keep_lists(rest, Vec::new()));
    queued
}

/// [`queue_send`] of one buffer (no iterator to run); `at_once`: it may go at once
/// ([`send_now`]), unless more sends follow it this turn.
pub(crate) fn queue_one(socket: &SharedFd, buf: SendBuf, at_once: bool) -> io::Result<()> {
    if buf.is_empty() {
        return failure_of(socket);
    }
    let len = buf.len();
    queue(socket, buf, &mut Vec::new(), len, at_once)
}

/// Queues `first` and `rest` (`len` bytes together, none empty) on `socket`; with
/// `at_once`, a plain send of one buffer on an idle socket may go at once.
#[inline]
fn queue(
    socket: &SharedFd,
    first: SendBuf,
    rest: &mut Vec<SendBuf>,
    len: usize,
    at_once: bool,
) -> io::Result<()> {
    let core = context::current().ok_or_else(not_in_runtime)?;
    let mut driver = core
        .driver
        .try_borrow_mut()
        .map_err(|_| io::Error::other("queue_send called while the worker's driver is busy"))?;
    // A plain send of one buffer on a socket the writers do not know: nothing is
    // queued, in flight or failed on it.
    let plain_alone = !socket.writer_known()
        && rest.is_empty()
        && !send_way::zero_copy_size(socket, core.send_zc, len);
    let first = if at_once && plain_alone && driver.take_at_once() {
        match send_now(&mut driver, socket, first, core.send_zc)? {
            Some(first) => first,
            None => return Ok(()),
        }
    } else {
        first
    };
    let queued = with_writers(|w| {
        if plain_alone {
            if w.direct.is_empty() {
                driver.before_submit(send_direct);
            }
            w.last_id += 1;
            w.direct.push(Direct {
                socket: socket.clone(),
                buf: Some(first),
                policy: core.send_zc,
                id: w.last_id,
            });
            socket.set_writer_known(true);
            return Ok(());
        }
        let Some(writer) = writer_of(&mut w.by_socket, &w.direct, &mut w.last_id, socket, true)
        else {
            return Err(Failure(libc::EIO));
        };
        if let Some(f) = writer.failed {
            return Err(f);
        }
        writer.backlog += len;
        // Joins the op made this turn, not yet submitted (its buffers are not in the
        // kernel's hands yet).
        let mut first = Some(first);
        if let Some(at) = writer.deferred_at {
            let joined = driver.with_deferred(at, |op: &mut QueuedSend| {
                op.total += len;
                op.bufs.extend(first.take());
                op.bufs.append(rest);
            });
            if joined.is_some() {
                return Ok(());
            }
        }
        let mut bufs = w.spare_bufs.pop().unwrap_or_default();
        // Joins the direct send of this turn: both go in an op.
        let mut total = len;
        if let Some(b) = take_direct(&mut w.direct, writer) {
            total += b.len();
            bufs.push(b);
            writer.busy = false;
        }
        if writer.busy {
            // The kept list holds what queues behind the send in flight (a new
            // writer's own list would be allocated for it, and freed with the writer).
            if writer.queued.capacity() == 0 {
                writer.queued = bufs;
            } else {
                w.spare_bufs.push(bufs);
            }
            writer.queued.extend(first.take());
            writer.queued.append(rest);
            return Ok(());
        }
        bufs.extend(first.take());
        bufs.append(rest);
        let iovecs = w.spare_iovecs.pop().unwrap_or_default();
        // Making a box drops nothing, so the writers' borrow is safe across it. The op is
        // made in its box.
        let data = driver.spare.boxed_with(|| {
            Single::new(QueuedSend::new(
                socket.clone(),
                bufs,
                total,
                iovecs,
                core.send_zc,
            ))
        });
        writer.busy = true;
        writer.deferred_at = Some(driver.defer_detached(OpData::boxed(data)));
        Ok(())
    });
    match queued {
        Some(Ok(())) => Ok(()),
        Some(Err(f)) => Err(f.error()),
        None => Err(not_in_runtime()),
    }
}

/// Sends `buf` on `socket` at once, with one non-blocking `send`: the first plain send
/// of the tasks a loop turn woke, on an idle socket ([`Driver::take_at_once`]).
/// Counted on one connection's 64 B echo, waiting for the turn's end as a [`Direct`]
/// send cost ~250 instructions more (the list entry made and taken, the socket's flag
/// set and cleared, the turn's look at the list: the send's 504 became 258).
/// `Some(buf)` back when the socket took none of it (its buffer is full): it then waits
/// as a direct send. Otherwise it ends as a direct send sent at once does
/// ([`go_on_short`]), and a failure is also returned.
fn send_now(
    driver: &mut Driver,
    socket: &SharedFd,
    buf: SendBuf,
    policy: SendZeroCopy,
) -> io::Result<Option<SendBuf>> {
    let Some(res) = send_at_once(socket, &buf) else {
        return Ok(Some(buf));
    };
    driver.count_at_once();
    let sent = sent_or_failed(res);
    if matches!(sent, Ok(n) if n == buf.len()) {
        // The rule: all of it went. The buffer goes back to its pool here.
        return Ok(None);
    }
    let d = with_writers(|w| {
        w.last_id += 1;
        Direct {
            socket: socket.clone(),
            buf: None,
            policy,
            id: w.last_id,
        }
    })
    .ok_or_else(not_in_runtime)?;
    go_on_short(driver, &d, buf, sent);
    sent.map(|_| None).map_err(Failure::error)
}

/// A send's result `res` (bytes sent, or `-errno`) as bytes sent or the failure.
#[inline]
fn sent_or_failed(res: i32) -> Result<usize, Failure> {
    Failure::of(res).map_or(Ok(res as usize), Err)
}

/// Goes on with direct send `d` of `buf`, of which `sent` bytes went at once (fewer
/// than all) or which failed: the rest goes as a flight; a failure is kept in its
/// writer, as a queued send's is.
fn go_on_short(driver: &mut Driver, d: &Direct, buf: SendBuf, sent: Result<usize, Failure>) {
    match sent {
        Ok(n) => flight::fly(driver, d, buf, n),
        Err(f) => {
            // The buffer goes back to its pool here, outside the writers' borrow.
            drop(buf);
            with_writers(|w| end_direct(w, d, 0, Some(f), driver.later_wakers()));
        }
    }
}

/// The direct sends of the turn that is ending, run by the driver before it submits
/// its deferred ops: one alone (no other send this turn) goes out now with one
/// non-blocking `send`; the rest of a short one, or every one when there are several
/// (one kernel entry for all beats a syscall each: see `Driver::submit_deferred`),
/// goes through the ring as a flight, with no op ([`flight`]). While the driver shuts
/// down they fail.
fn send_direct(driver: &mut Driver) {
    let Some(mut list) = with_writers(|w| std::mem::take(&mut w.direct)) else {
        return;
    };
    let live = list.iter().filter(|d| d.buf.is_some()).count();
    let at_once = live == 1 && driver.alone_at_once();
    let shutting_down = driver.is_shutting_down();
    for d in &mut list {
        // Taken by its writer meanwhile, which ends it.
        let Some(buf) = d.buf.take() else { continue };
        let sent = if shutting_down {
            Err(Failure(libc::ECANCELED))
        } else if at_once {
            send_at_once(&d.socket, &buf).map_or(Ok(0), sent_or_failed)
        } else {
            Ok(0)
        };
        match sent {
            Ok(n) if n == buf.len() => {
                driver.count_at_once();
                // The buffer goes back to its pool here, outside the writers' borrow.
                drop(buf);
                with_writers(|w| end_direct(w, d, n, None, driver.later_wakers()));
            }
            _ => {
                if at_once && sent.is_ok() {
                    driver.count_at_once();
                }
                go_on_short(driver, d, buf, sent);
            }
        }
    }
    // The sockets' owners go here, outside the writers' borrow (the last one frees its
    // socket, which reaches the writers).
    list.clear();
    with_writers(|w| {
        if w.direct.is_empty() {
            w.direct = list;
        }
    });
}

/// The flags of a send made at once: it never blocks nor raises `SIGPIPE`.
const AT_ONCE_FLAGS: libc::c_int = libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT;

/// One plain send of `bytes` on `socket` that does not block: its result as a
/// completion would give it (bytes sent, or `-errno`), `None` when the socket's buffer
/// is full (or a signal came).
#[inline]
fn send_at_once(socket: &SharedFd, bytes: &[u8]) -> Option<i32> {
    // SAFETY: `bytes` is a live slice for the call; the fd is kept open by `socket`; the
    // call does not block (`MSG_DONTWAIT`).
    let n = unsafe {
        libc::send(
            fd(socket).0,
            bytes.as_ptr().cast(),
            bytes.len(),
            AT_ONCE_FLAGS,
        )
    };
    at_once_result(n)
}

/// [`send_at_once`]'s result from the syscall's return value.
#[inline]
fn at_once_result(n: isize) -> Option<i32> {
    if n >= 0 {
        return Some(n.min(i32::MAX as isize) as i32);
    }
    match io::Error::last_os_error().raw_os_error() {
        Some(libc::EAGAIN | libc::EINTR) | None => None,
        Some(errno) => Some(-errno),
    }
}

/// Ends direct send `d`: `sent` bytes went, or it failed with `failure`. Without a
/// writer (the rule) the socket is simply no longer known; a failure makes one, which
/// keeps it.
#[inline]
fn end_direct(
    w: &mut Writers,
    d: &Direct,
    sent: usize,
    failure: Option<Failure>,
    wake: &mut Vec<Waker>,
) {
    let socket: &SocketFd = &d.socket;
    if failure.is_none() && !w.by_socket.contains_key(&key(socket)) {
        // The rule: no writer was made for it, and none is needed now.
        socket.set_writer_known(false);
        return;
    }
    d.settle_sent(&mut w.by_socket, 0, sent);
    end_writer(w, socket, failure, wake);
}

/// Whether a send of `len` bytes queued on `socket` now would go out zero-copy, as far
/// as the policy and what the socket learnt say (its peer may still turn out to be
/// this host at the first such send). For writers that copy anyway: they copy into
/// registered memory then ([`RegisteredBuf`](crate::runtime::RegisteredBuf)).
pub(crate) fn would_send_zero_copy(socket: &SharedFd, len: usize) -> bool {
    context::with_core(|core| send_way::zero_copy_size(socket, core.send_zc, len)).unwrap_or(false)
}

/// The failure kept for `socket`, if any (a call that queued nothing reports it too).
fn failure_of(socket: &SharedFd) -> io::Result<()> {
    if !socket.writer_known() {
        return Ok(());
    }
    let failed = with_writers(|w| w.by_socket.get(&key(socket)).and_then(|w| w.failed));
    match failed {
        Some(Some(f)) => Err(f.error()),
        _ => Ok(()),
    }
}

/// Gives up the queued sends of `socket`: the one in flight is cancelled, the rest
/// dropped, and the writer fails with `ECANCELED`; see
/// [`Connection::cancel_sends`](crate::net::Connection::cancel_sends).
pub(crate) fn cancel(socket: &SharedFd) {
    if !socket.writer_known() {
        return;
    }
    let mut dropped = Vec::new();
    let mut settled = false;
    let in_flight = with_writers(|w| {
        let writer = writer_of(&mut w.by_socket, &w.direct, &mut w.last_id, socket, false)?;
        if !writer.busy {
            return None;
        }
        writer.failed.get_or_insert(Failure(libc::ECANCELED));
        writer.backlog = 0;
        dropped.push(std::mem::take(&mut writer.queued));
        // A direct send of this turn is dropped, and the writer ends with the failure.
        if let Some(b) = take_direct(&mut w.direct, writer) {
            dropped.push(vec![b]);
            settled = true;
            return None;
        }
        // A flight is cancelled in the kernel.
        if let Some(at) = writer.flight {
            return Some(Some(at));
        }
        // An op still waiting in the driver goes out empty (a send of nothing) and
        // ends at once; the failure set here stays the writer's.
        if let Some(at) = writer.deferred_at {
            let emptied = context::with_core(|core| {
                let mut driver = core.driver.try_borrow_mut().ok()?;
                driver.with_deferred(at, |op: &mut QueuedSend| {
                    dropped.push(std::mem::take(&mut op.bufs));
                    op.total = 0;
                })
            })
            .flatten();
            if emptied.is_some() {
                return None;
            }
        }
        Some(None)
    })
    .flatten();
    if settled {
        let mut wake = Vec::new();
        with_writers(|w| end_writer(w, socket, Some(Failure(libc::ECANCELED)), &mut wake));
        wake.into_iter().for_each(Waker::wake);
    }
    // Outside the borrow: buffers dropped here reach no socket, but stay on the safe side.
    drop(dropped);
    if let Some(flight) = in_flight {
        context::with_core(|core| {
            if let Ok(mut driver) = core.driver.try_borrow_mut() {
                if let Some(at) = flight {
                    driver.cancel_flight(at.user_data());
                } else {
                    driver.cancel_detached_on(fd(socket).0);
                }
            }
        });
    }
}

/// Bytes queued on `socket` and not yet confirmed sent.
pub(crate) fn backlog(socket: &SharedFd) -> usize {
    if !socket.writer_known() {
        return 0;
    }
    with_writers(|w| match w.by_socket.get(&key(socket)) {
        Some(writer) => writer.backlog,
        None => direct_of(&w.direct, socket)
            .and_then(|at| w.direct[at].buf.as_ref())
            .map_or(0, |b| b.len()),
    })
    .unwrap_or(0)
}

/// How far the queued sends of `socket` have got; `None` when none is queued or in
/// flight.
pub(crate) fn progress(socket: &SharedFd) -> Option<SendProgress> {
    if !socket.writer_known() {
        return None;
    }
    with_writers(|w| match w.by_socket.get(&key(socket)) {
        Some(writer) => (writer.busy || writer.notifying > 0).then_some(SendProgress {
            writer: writer.id,
            sent: writer.sent,
        }),
        None => direct_of(&w.direct, socket).map(|at| SendProgress {
            writer: w.direct[at].id,
            sent: 0,
        }),
    })
    .flatten()
}

/// Whether every queued send of `socket` is done (`Some(Ok)`), one failed
/// (`Some(Err)`), or some are still queued or in flight (`None`); registers nothing.
pub(crate) fn done(socket: &SharedFd) -> Option<io::Result<()>> {
    match poll_flush_with(socket, None) {
        Poll::Ready(r) => Some(r),
        Poll::Pending => None,
    }
}

/// `Ready(Ok)` once every queued send of `socket` is done; the failure of one that
/// failed; otherwise registers `cx` to be woken when that changes.
pub(crate) fn poll_flush(socket: &SharedFd, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
    poll_flush_with(socket, Some(cx.waker()))
}

/// [`poll_flush`], registering `waker` (if any) when sends are still on their way.
fn poll_flush_with(socket: &SharedFd, waker: Option<&Waker>) -> Poll<io::Result<()>> {
    if !socket.writer_known() {
        return Poll::Ready(Ok(()));
    }
    with_writers(|ws| {
        // A query alone makes no writer for a direct send of this turn.
        let writer = match waker {
            Some(_) => writer_of(
                &mut ws.by_socket,
                &ws.direct,
                &mut ws.last_id,
                socket,
                false,
            ),
            None => ws.by_socket.get_mut(&key(socket)),
        };
        let Some(w) = writer else {
            return match direct_of(&ws.direct, socket) {
                Some(_) => Poll::Pending,
                None => Poll::Ready(Ok(())),
            };
        };
        if let Some(f) = w.failed {
            return Poll::Ready(Err(f.error()));
        }
        if !w.busy && w.notifying == 0 {
            return Poll::Ready(Ok(()));
        }
        match (&w.flusher, waker) {
            (_, None) => {}
            (Some(k), Some(waker)) if k.will_wake(waker) => {}
            (_, Some(waker)) => w.flusher = Some(waker.clone()),
        }
        Poll::Pending
    })
    .unwrap_or(Poll::Ready(Ok(())))
}

/// Where a queued send's submission is, zero-copy-wise.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Zc {
    /// Submitted plain (or not submitted yet).
    Plain,
    /// Submitted zero-copy; its result has not come.
    Sent,
    /// Its result (`res`) came with `F_MORE`: the notification follows, and until then
    /// the kernel may read the buffers. The op is still the socket's send in flight
    /// (a short or failed result counts once the notification came).
    Notifying(i32),
    /// Its result sent every buffer it reached: the writer went on without the op,
    /// which waits only for its notification (counted in the writer's `notifying`).
    HandedOver,
}

/// Ends the send in flight of `socket`'s writer with `failure` (`None`: all sent): the
/// writer is settled (a failed one keeps the failure, with nothing queued).
fn end_writer(w: &mut Writers, socket: &SocketFd, failure: Option<Failure>, wake: &mut Vec<Waker>) {
    let k = key(socket);
    match failure {
        // The common end, in one lookup: the writer is done and goes, unless it still
        // waits for notifications or failed meanwhile (then it is put back).
        None => {
            if let Some(writer) = w.by_socket.remove(&k) {
                end_removed(w, socket, writer, wake);
            }
        }
        Some(f) => {
            if let Some(writer) = w.by_socket.get_mut(&k) {
                writer.busy = false;
                // The first failure stays (a cancel's, say).
                writer.failed.get_or_insert(f);
                writer.backlog = 0;
                // Dropped, not kept: the list may be long, and this is rare.
                writer.queued = Vec::new();
            }
            settle(w, socket, wake);
        }
    }
}

/// Ends the send in flight of `socket`'s `writer`, all sent, the writer taken out of
/// the map by the caller's one lookup: done, it goes (its list kept for the next
/// sends); one still waiting for notifications, or failed meanwhile, is put back.
fn end_removed(w: &mut Writers, socket: &SocketFd, mut writer: Writer, wake: &mut Vec<Waker>) {
    writer.busy = false;
    if writer.notifying == 0 && writer.failed.is_none() {
        wake.extend(writer.flusher);
        socket.set_writer_known(false);
        if writer.queued.capacity() > 0 {
            w.keep_lists(writer.queued, Vec::new());
        }
    } else {
        w.by_socket.insert(key(socket), writer);
        settle(w, socket, wake);
    }
}

/// Marks `k`'s writer done with whatever ended: a writer with nothing in flight and no
/// notification to wait for wakes its flusher and goes (one that failed stays, to
/// report it); a failed one wakes its flusher at once.
fn settle(w: &mut Writers, socket: &SocketFd, wake: &mut Vec<Waker>) {
    let k = key(socket);
    let Some(writer) = w.by_socket.get_mut(&k) else {
        return;
    };
    let idle = !writer.busy && writer.notifying == 0;
    if idle || writer.failed.is_some() {
        wake.extend(writer.flusher.take());
    }
    if idle && writer.failed.is_none() {
        w.by_socket.remove(&k);
        socket.set_writer_known(false);
    }
}

/// The send in flight for a socket's writer: the buffers it took, sent with SEND
/// (one buffer) or SENDMSG (several), zero-copy at the policy's size, again from where
/// a short send stopped, then with whatever was queued meanwhile.
pub(crate) struct QueuedSend {
    socket: SharedFd,
    bufs: Vec<SendBuf>,
    /// Bytes of `bufs` sent already.
    skip: usize,
    /// Bytes of `bufs` together.
    total: usize,
    /// The SENDMSG of several buffers: the header points at the iovecs, which point
    /// into `bufs`; rebuilt for each submission.
    msg: MsgParts,
    /// Still the socket's send in flight: cleared once it has told the writer how it
    /// ended (or handed the writer on). Dropped while set (the runtime shut down with
    /// it in flight), it marks the writer failed.
    live: bool,
    /// The worker's policy, kept for the follow-up ops a hand-over makes.
    policy: SendZeroCopy,
    zc: Zc,
    /// This op found the socket's peer is this host and switched it to plain sends:
    /// counted with its completion (where the counters are at hand).
    found_local: bool,
    /// Its zero-copy submission in flight is a `SENDMSG_ZC` naming registered memory.
    registered_vectored: bool,
}

impl QueuedSend {
    #[inline(always)]
    fn new(
        socket: SharedFd,
        bufs: Vec<SendBuf>,
        total: usize,
        iovecs: Vec<libc::iovec>,
        policy: SendZeroCopy,
    ) -> QueuedSend {
        QueuedSend {
            socket,
            bufs,
            skip: 0,
            total,
            msg: MsgParts::new(iovecs),
            live: true,
            policy,
            zc: Zc::Plain,
            found_local: false,
            registered_vectored: false,
        }
    }

    /// Ends the socket's send in flight with `failure` (`None`: all sent): the writer
    /// is settled (a failed one keeps the failure, with nothing queued), and the op's
    /// emptied lists are kept for the next sends.
    fn finish(&mut self, w: &mut Writers, failure: Option<Failure>, wake: &mut Vec<Waker>) {
        self.live = false;
        end_writer(w, &self.socket, failure, wake);
        self.keep_lists(w);
    }

    /// Gives the emptied buffer and iovec lists to the writers for the next sends.
    fn keep_lists(&mut self, w: &mut Writers) {
        w.keep_lists(std::mem::take(&mut self.bufs), self.msg.take_iovecs());
    }

    /// A (final) result `res` of the socket's send in flight: counts what was sent,
    /// and says whether the op goes again (the rest of a short send, or what was queued
    /// meanwhile) or ends the writer's run.
    fn sent(&mut self, res: i32, wake: &mut Vec<Waker>) -> bool {
        let failure = Failure::of(res);
        // Buffers dropped here (a received one goes back to its pool) reach neither a
        // socket nor the writers.
        with_writers(|w| {
            let sent = res.max(0) as usize;
            let writer = match (failure, w.by_socket.get_mut(&key(&self.socket))) {
                (None, Some(writer)) => writer,
                (failure, _) => {
                    // A writer in flight is never removed but here: a missing one
                    // would be a bug, and ends the send as failed.
                    self.finish(w, Some(failure.unwrap_or(Failure(libc::EIO))), wake);
                    return false;
                }
            };
            self.skip += sent;
            writer.backlog = writer.backlog.saturating_sub(sent);
            writer.sent += sent as u64;
            if writer.failed.is_some() {
                // Cancelled meanwhile: a send the kernel finished in part (a
                // zero-copy one reports what it sent before the cancel) goes no further.
                self.finish(w, None, wake);
                return false;
            }
            if self.skip < self.total {
                return true;
            }
            // All sent: the buffers go, and what was queued meanwhile goes next.
            self.bufs.clear();
            self.skip = 0;
            if writer.queued.is_empty() {
                self.finish(w, None, wake);
                return false;
            }
            std::mem::swap(&mut self.bufs, &mut writer.queued);
            self.total = self.bufs.iter().map(|b| b.len()).sum();
            true
        })
        .unwrap_or(false)
    }

    /// Whether the rest goes zero-copy under the policy (`send_way::goes_zero_copy`).
    fn goes_zero_copy(&mut self) -> bool {
        let rest = self.total - self.skip.min(self.total);
        send_way::goes_zero_copy(&self.socket, self.policy, rest, &mut self.found_local)
    }

    /// How many of the buffers a zero-copy result of `res` bytes leaves entirely sent,
    /// if it ends exactly where one ends (always, unless the kernel stopped inside
    /// one: an error after some bytes, a signal); `None` otherwise, or when nothing
    /// was sent.
    fn whole_buffers_sent(&self, res: i32) -> Option<usize> {
        let mut end = self
            .skip
            .checked_add(usize::try_from(res).ok().filter(|&n| n > 0)?)?;
        for (i, b) in self.bufs.iter().enumerate() {
            match end.checked_sub(b.len()) {
                Some(0) => return Some(i + 1),
                Some(rest) => end = rest,
                None => return None,
            }
        }
        None
    }

    /// A zero-copy result that sent `n` bytes, up to the end of buffer `whole - 1`:
    /// the writer goes on without this op, which keeps those buffers until the
    /// notification. The buffers it did not reach (a gathered send takes at most
    /// 1,024) and what was queued meanwhile go in a new op, submitted with the next
    /// kernel entry, which later sends of this loop turn join.
    fn hand_over(&mut self, n: usize, whole: usize, cx: &mut DetachedCx<'_>) {
        let k = key(&self.socket);
        let unsent = &mut self.bufs;
        let next = with_writers(|w| {
            let writer = w.by_socket.get_mut(&k)?;
            writer.backlog = writer.backlog.saturating_sub(n);
            writer.sent += n as u64;
            writer.notifying += 1;
            // Cancelled meanwhile: nothing more goes (what the op did not reach stays
            // with it until the notification, and is dropped then).
            if writer.failed.is_some() || (writer.queued.is_empty() && unsent.len() == whole) {
                writer.busy = false;
                return None;
            }
            let mut bufs = w.spare_bufs.pop().unwrap_or_default();
            bufs.extend(unsent.drain(whole..));
            bufs.append(&mut writer.queued);
            Some((bufs, w.spare_iovecs.pop().unwrap_or_default()))
        })
        .flatten();
        self.live = false;
        self.zc = Zc::HandedOver;
        if let Some((bufs, iovecs)) = next {
            let total = bufs.iter().map(|b| b.len()).sum();
            let op = QueuedSend::new(self.socket.clone(), bufs, total, iovecs, self.policy);
            // Boxing drops nothing, so no socket or writer is reached meanwhile.
            let at = cx.defer(op);
            with_writers(|w| {
                if let Some(writer) = w.by_socket.get_mut(&k) {
                    writer.deferred_at = Some(at);
                }
            });
        }
    }

    /// The notification of a handed-over op came: its buffers go (a received one back
    /// to its pool), and the writer may be done.
    fn released(&mut self, wake: &mut Vec<Waker>) {
        self.zc = Zc::Plain;
        with_writers(|w| {
            if let Some(writer) = w.by_socket.get_mut(&key(&self.socket)) {
                writer.notifying = writer.notifying.saturating_sub(1);
            }
            settle(w, &self.socket, wake);
            self.keep_lists(w);
        });
    }

    /// The notification `c` came: counts a copy the kernel made, which switches the
    /// socket to plain sends under the adaptive policy.
    fn notified(&self, c: &Completion, cx: &DetachedCx<'_>) {
        if c.res as u32 & zcrx::abi::IORING_NOTIF_USAGE_ZC_COPIED != 0 {
            add_owned(&cx.metrics.send_zc_copied, 1);
            if self.policy.adaptive() {
                self.sends_copy(cx);
            }
        }
    }

    /// The socket's sends go plain from now on (counted once per socket).
    fn sends_copy(&self, cx: &DetachedCx<'_>) {
        if self.socket.set_sends_copy() {
            add_owned(&cx.metrics.send_zc_off, 1);
        }
    }

    /// A zero-copy submission ended with `res`, nothing of it in the kernel's hands
    /// any more: one the kernel refused (a socket or kernel without zero-copy sends
    /// for this socket) goes again plain; otherwise as any result.
    fn zc_ended(&mut self, res: i32, cx: &mut DetachedCx<'_>) -> bool {
        if std::mem::take(&mut self.registered_vectored) && refused_registration(res) {
            return true;
        }
        if send_way::refused(res) {
            self.sends_copy(cx);
            return true;
        }
        self.sent(res, cx.wake)
    }
}

// SAFETY: the SEND points into the one buffer, the SENDMSG at the header, which points
// at the iovecs, which point into the buffers: all owned by the op (the buffers' bytes
// on the heap, in static memory or in a pool's area, unmoved while the op owns them)
// and left alone until the final completion (a zero-copy send's notification); they
// are swapped or cleared only between submissions, when the kernel holds no pointer
// into the op. The fd is kept open by `socket`.
unsafe impl OpCode for QueuedSend {
    fn fd(&self) -> Option<std::os::fd::RawFd> {
        Some(fd(&self.socket).0)
    }

    fn create_entry(&mut self) -> squeue::Entry {
        let zc = self.goes_zero_copy();
        let plan = send_way::plan(&self.bufs, self.skip, zc, self.policy.threshold());
        self.registered_vectored = plan.named_vectored;
        self.zc = if plan.zc { Zc::Sent } else { Zc::Plain };
        self.msg.entry(&self.socket, &self.bufs, self.skip, &plan)
    }

    /// A plain send, at once: as much as the socket's buffer takes now. The rest
    /// (or all, when the buffer is full) goes through the ring.
    fn try_at_once(&mut self) -> Option<i32> {
        if self.goes_zero_copy() {
            return None;
        }
        if let [one] = &self.bufs[..] {
            return send_at_once(&self.socket, &one[self.skip.min(one.len())..]);
        }
        self.msg.gather(&self.bufs, self.skip);
        // SAFETY: the header points at the iovecs, which point into buffers the op owns,
        // all alive for the call; the fd is kept open by `socket`; the call does not
        // block (`MSG_DONTWAIT`).
        let n = unsafe { libc::sendmsg(fd(&self.socket).0, &self.msg.msghdr, AT_ONCE_FLAGS) };
        at_once_result(n)
    }

    fn on_shutdown_stuck(&mut self) {
        if self.zc != Zc::Plain {
            send_way::disconnect(&self.socket);
        }
    }

    fn on_detached(&mut self, c: &Completion, cx: &mut DetachedCx<'_>) -> bool {
        if std::mem::take(&mut self.found_local) {
            add_owned(&cx.metrics.send_zc_off, 1);
        }
        match self.zc {
            Zc::Plain => self.sent(c.res, cx.wake),
            Zc::Sent if c.more() => {
                // The result; the kernel may read the buffers until the notification.
                add_owned(&cx.metrics.send_zc, 1);
                self.zc = Zc::Notifying(c.res);
                if let Some(whole) = self.whole_buffers_sent(c.res) {
                    self.hand_over(c.res as usize, whole, cx);
                }
                false
            }
            // A result without a notification to follow: refused before it ran.
            Zc::Sent => {
                self.zc = Zc::Plain;
                self.zc_ended(c.res, cx)
            }
            Zc::HandedOver => {
                self.notified(c, cx);
                self.released(cx.wake);
                false
            }
            Zc::Notifying(res) => {
                self.notified(c, cx);
                self.zc = Zc::Plain;
                // A short or failed zero-copy send: its result counts now.
                self.zc_ended(res, cx)
            }
        }
    }
}

impl Drop for QueuedSend {
    fn drop(&mut self) {
        // An op that ended normally (the common drop: its box kept for the next send)
        // has nothing to tell.
        if !self.live && self.zc != Zc::HandedOver {
            return;
        }
        let mut wake = Vec::new();
        if self.live {
            with_writers(|w| self.finish(w, Some(Failure(libc::ECANCELED)), &mut wake));
        } else {
            self.released(&mut wake);
        }
        wake.into_iter().for_each(Waker::wake);
    }
}
