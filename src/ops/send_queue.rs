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

use super::send::{gather, send_entry, sendmsg_entry};
use super::send_buf::SendBuf;
use super::{fd, SharedFd, SocketFd};
use crate::driver::op::{OpData, Single};
use crate::driver::{Completion, OpCode};
use crate::runtime::context;
use crate::runtime::op::not_in_runtime;
use io_uring::squeue;
use std::cell::RefCell;
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
}

/// The writers of this thread's sockets, by the socket's address (a socket's writer
/// is removed when the socket is freed, [`forget`]), and emptied buffer lists for the
/// next sends (a send in a loop allocates nothing).
#[derive(Default)]
struct Writers {
    by_socket: HashMap<usize, Writer, BuildHasherDefault<AddrHasher>>,
    /// The last writer id given out.
    last_id: u64,
    spare_bufs: Vec<Vec<SendBuf>>,
    spare_iovecs: Vec<Vec<libc::iovec>>,
}

impl Writers {
    /// Keeps emptied lists for the next sends (a bounded number of each).
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
    with_writers(|w| {
        if !w.by_socket.is_empty() {
            w.by_socket.remove(&key(socket));
        }
    });
}

/// A failed queued send: the errno, or `0` when the kernel took no byte (write zero).
#[derive(Clone, Copy, Debug)]
struct Failure(i32);

impl Failure {
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
/// Nothing is submitted here: a socket with nothing in flight gets its send op made
/// and deferred in the driver, where later buffers of the same loop turn join it, and
/// the driver submits it right before its next kernel entry
/// (`Driver::defer_detached`). So everything a turn queues on a connection (the replies to
/// pipelined requests) goes out in one send: submitting the first reply at once and
/// the rest behind it cost a kernel round trip and a second send per turn (measured:
/// Thrift under pipelined load fell from ~170k to ~100k requests per second).
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
    let queued = queue(socket, first, &mut rest, len);
    // Emptied by `queue`, or holding what an error left: dropped here, outside the
    // writers' borrow.
    rest.clear();
    with_writers(|w| w.keep_lists(rest, Vec::new()));
    queued
}

/// [`queue_send`] of one buffer (no iterator to run).
pub(crate) fn queue_one(socket: &SharedFd, buf: SendBuf) -> io::Result<()> {
    if buf.is_empty() {
        return failure_of(socket);
    }
    let len = buf.len();
    queue(socket, buf, &mut Vec::new(), len)
}

/// Queues `first` and `rest` (`len` bytes together, none empty) on `socket`.
fn queue(socket: &SharedFd, first: SendBuf, rest: &mut Vec<SendBuf>, len: usize) -> io::Result<()> {
    let k = key(socket);
    let core = context::current().ok_or_else(not_in_runtime)?;
    let mut driver = core
        .driver
        .try_borrow_mut()
        .map_err(|_| io::Error::other("queue_send called while the worker's driver is busy"))?;
    let queued = with_writers(|w| {
        let next_id = w.last_id + 1;
        let writer = w.by_socket.entry(k).or_insert_with(|| Writer {
            id: next_id,
            ..Writer::default()
        });
        w.last_id = w.last_id.max(writer.id);
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
        if writer.busy {
            writer.queued.extend(first.take());
            writer.queued.append(rest);
            return Ok(());
        }
        let mut bufs = w.spare_bufs.pop().unwrap_or_default();
        bufs.extend(first.take());
        bufs.append(rest);
        let op = QueuedSend {
            socket: socket.clone(),
            bufs,
            skip: 0,
            total: len,
            iovecs: w.spare_iovecs.pop().unwrap_or_default(),
            // SAFETY: `msghdr` is plain data; all-zero is a valid empty header.
            msghdr: unsafe { std::mem::zeroed() },
            live: true,
        };
        // Making a box drops nothing, so the writers' borrow is safe across it.
        let data = driver.spare.boxed(Single::new(op));
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

/// The failure kept for `socket`, if any (a call that queued nothing reports it too).
fn failure_of(socket: &SharedFd) -> io::Result<()> {
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
    let mut dropped = Vec::new();
    let in_flight = with_writers(|w| {
        let writer = w.by_socket.get_mut(&key(socket))?;
        if !writer.busy {
            return None;
        }
        writer.failed.get_or_insert(Failure(libc::ECANCELED));
        writer.backlog = 0;
        dropped.push(std::mem::take(&mut writer.queued));
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
        Some(())
    })
    .flatten();
    // Outside the borrow: buffers dropped here reach no socket, but stay on the safe side.
    drop(dropped);
    if in_flight.is_some() {
        context::with_core(|core| {
            if let Ok(mut driver) = core.driver.try_borrow_mut() {
                driver.cancel_detached_on(fd(socket).0);
            }
        });
    }
}

/// Bytes queued on `socket` and not yet confirmed sent.
pub(crate) fn backlog(socket: &SharedFd) -> usize {
    with_writers(|w| w.by_socket.get(&key(socket)).map_or(0, |w| w.backlog)).unwrap_or(0)
}

/// How far the queued sends of `socket` have got; `None` when none is queued or in
/// flight.
pub(crate) fn progress(socket: &SharedFd) -> Option<SendProgress> {
    with_writers(|w| {
        let writer = w.by_socket.get(&key(socket))?;
        writer.busy.then_some(SendProgress {
            writer: writer.id,
            sent: writer.sent,
        })
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
    with_writers(|w| {
        let Some(w) = w.by_socket.get_mut(&key(socket)) else {
            return Poll::Ready(Ok(()));
        };
        if let Some(f) = w.failed {
            return Poll::Ready(Err(f.error()));
        }
        if !w.busy {
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

/// The send in flight for a socket's writer: the buffers it took, sent with SEND
/// (one buffer) or SENDMSG (several), again from where a short send stopped, then with
/// whatever was queued meanwhile.
pub(crate) struct QueuedSend {
    socket: SharedFd,
    bufs: Vec<SendBuf>,
    /// Bytes of `bufs` sent already.
    skip: usize,
    /// Bytes of `bufs` together.
    total: usize,
    /// The SENDMSG of several buffers: the header points at the iovecs, which point
    /// into `bufs`; rebuilt for each submission.
    iovecs: Vec<libc::iovec>,
    msghdr: libc::msghdr,
    /// Still the socket's send in flight: cleared once it has told the writer how it
    /// ended. Dropped while set (the runtime shut down with it in flight), it marks
    /// the writer failed.
    live: bool,
}

impl QueuedSend {
    /// Ends the socket's send in flight with `failure` (`None`: all sent): a failed
    /// writer stays (with nothing queued), a finished one goes; its waiting flush is
    /// woken, and the op's emptied lists are kept for the next sends.
    fn finish(&mut self, w: &mut Writers, failure: Option<Failure>, wake: &mut Vec<Waker>) {
        self.live = false;
        let k = key(&self.socket);
        let flusher = match failure {
            Some(f) => w.by_socket.get_mut(&k).and_then(|writer| {
                writer.busy = false;
                // The first failure stays (a cancel's, say).
                writer.failed.get_or_insert(f);
                writer.backlog = 0;
                // Dropped, not kept: the list may be long, and this is rare.
                writer.queued = Vec::new();
                writer.flusher.take()
            }),
            None => w.by_socket.remove(&k).and_then(|writer| writer.flusher),
        };
        wake.extend(flusher);
        self.msghdr.msg_iov = std::ptr::null_mut();
        self.msghdr.msg_iovlen = 0;
        w.keep_lists(
            std::mem::take(&mut self.bufs),
            std::mem::take(&mut self.iovecs),
        );
    }
}

// SAFETY: the SEND points into the one buffer, the SENDMSG at the header, which points
// at the iovecs, which point into the buffers: all owned by the op (the buffers' bytes
// on the heap, in static memory or in a pool's area, unmoved while the op owns them)
// and left alone until the completion; they are swapped or cleared only between
// completions, when the kernel holds no pointer into the op. The fd is kept open by
// `socket`.
unsafe impl OpCode for QueuedSend {
    fn fd(&self) -> Option<std::os::fd::RawFd> {
        Some(fd(&self.socket).0)
    }

    fn create_entry(&mut self) -> squeue::Entry {
        if let [one] = &self.bufs[..] {
            return send_entry(&self.socket, &one[self.skip.min(one.len())..]);
        }
        gather(&self.bufs, self.skip, &mut self.iovecs, &mut self.msghdr);
        sendmsg_entry(&self.socket, &self.msghdr)
    }

    fn on_detached(&mut self, c: &Completion, wake: &mut Vec<Waker>) -> bool {
        let failure = match c.result() {
            Ok(0) => Some(Failure(0)),
            Ok(_) => None,
            Err(e) => Some(Failure(e.raw_os_error().unwrap_or(libc::EIO))),
        };
        // Buffers dropped here (a received one goes back to its pool) reach neither a
        // socket nor the writers.
        with_writers(|w| {
            let sent = c.res.max(0) as usize;
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
}

impl Drop for QueuedSend {
    fn drop(&mut self) {
        if self.live {
            let mut wake = Vec::new();
            with_writers(|w| self.finish(w, Some(Failure(libc::ECANCELED)), &mut wake));
            wake.into_iter().for_each(Waker::wake);
        }
    }
}
