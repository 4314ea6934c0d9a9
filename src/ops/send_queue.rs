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

use super::send::gather;
use super::send_buf::SendBuf;
use super::{fd, SharedFd, SocketFd};
use crate::driver::op::{Lifecycle, OpData, Single};
use crate::driver::{Completion, OpCode};
use crate::runtime::context;
use crate::runtime::op::not_in_runtime;
use io_uring::{opcode, squeue};
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
    /// Queued while a send is in flight, in order: the next send takes them all.
    queued: Vec<SendBuf>,
    /// Why the connection sends no more: each later call returns it.
    failed: Option<Failure>,
    /// The task waiting in [`poll_flush`] for the backlog to empty.
    flusher: Option<Waker>,
}

/// The writers of this thread's sockets, by the socket's address (a socket's writer
/// is removed when the socket is freed, [`forget`]), and emptied buffer lists for the
/// next sends (a send in a loop allocates nothing).
#[derive(Default)]
struct Writers {
    by_socket: HashMap<usize, Writer, BuildHasherDefault<AddrHasher>>,
    spare_bufs: Vec<Vec<SendBuf>>,
    spare_iovecs: Vec<Vec<libc::iovec>>,
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
pub(crate) fn queue_send(
    socket: &SharedFd,
    bufs: impl IntoIterator<Item = SendBuf>,
) -> io::Result<()> {
    let core = context::current().ok_or_else(not_in_runtime)?;
    let k = key(socket);
    // Taken before the writers are: the iterator is the caller's code.
    let mut list = with_writers(|w| w.spare_bufs.pop())
        .flatten()
        .unwrap_or_default();
    list.extend(bufs.into_iter().filter(|b| !b.is_empty()));
    let len: usize = list.iter().map(|b| b.len()).sum();
    let sent = with_writers(|w| {
        let writer = w.by_socket.entry(k).or_default();
        if let Some(f) = writer.failed {
            return Err(f);
        }
        writer.backlog += len;
        if writer.busy {
            if writer.queued.is_empty() {
                std::mem::swap(&mut writer.queued, &mut list);
            } else {
                writer.queued.append(&mut list);
            }
            return Ok(None);
        }
        if list.is_empty() {
            w.by_socket.remove(&k);
            return Ok(None);
        }
        writer.busy = true;
        Ok(Some(w.spare_iovecs.pop().unwrap_or_default()))
    });
    let iovecs = match sent {
        Some(Ok(Some(iovecs))) => iovecs,
        Some(Ok(None)) => {
            keep_spare(list, Vec::new());
            return Ok(());
        }
        Some(Err(f)) => return Err(f.error()),
        None => return Err(not_in_runtime()),
    };
    let op = QueuedSend {
        socket: socket.clone(),
        bufs: list,
        skip: 0,
        total: len,
        iovecs,
        // SAFETY: `msghdr` is plain data; all-zero is a valid empty header.
        msghdr: unsafe { std::mem::zeroed() },
        live: true,
    };
    let mut driver = core.driver.borrow_mut();
    let data = driver.spare.boxed(Single::new(op));
    // A failed submit drops the op, which marks the writer failed (`Drop` below): the
    // ring is unusable then, and so is the connection's sending.
    driver
        .submit(OpData::boxed(data), Lifecycle::Detached)
        .map(drop)
}

/// Keeps emptied lists for the next sends (a bounded number).
fn keep_spare(mut bufs: Vec<SendBuf>, mut iovecs: Vec<libc::iovec>) {
    bufs.clear();
    iovecs.clear();
    with_writers(|w| {
        if bufs.capacity() > 0 && w.spare_bufs.len() < SPARE_LISTS {
            w.spare_bufs.push(bufs);
        }
        if iovecs.capacity() > 0 && w.spare_iovecs.len() < SPARE_LISTS {
            w.spare_iovecs.push(iovecs);
        }
    });
}

/// Bytes queued on `socket` and not yet confirmed sent.
pub(crate) fn backlog(socket: &SharedFd) -> usize {
    with_writers(|w| w.by_socket.get(&key(socket)).map_or(0, |w| w.backlog)).unwrap_or(0)
}

/// `Ready(Ok)` once every queued send of `socket` is done; the failure of one that
/// failed; otherwise registers `cx` to be woken when that changes.
pub(crate) fn poll_flush(socket: &SharedFd, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
    with_writers(|w| {
        let Some(w) = w.by_socket.get_mut(&key(socket)) else {
            return Poll::Ready(Ok(()));
        };
        if let Some(f) = w.failed {
            return Poll::Ready(Err(f.error()));
        }
        match &w.flusher {
            Some(k) if k.will_wake(cx.waker()) => {}
            _ => w.flusher = Some(cx.waker().clone()),
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
                writer.failed = Some(f);
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
        let (mut bufs, mut iovecs) = (
            std::mem::take(&mut self.bufs),
            std::mem::take(&mut self.iovecs),
        );
        bufs.clear();
        iovecs.clear();
        if w.spare_bufs.len() < SPARE_LISTS {
            w.spare_bufs.push(bufs);
        }
        if w.spare_iovecs.len() < SPARE_LISTS {
            w.spare_iovecs.push(iovecs);
        }
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
            let rest = &one[self.skip.min(one.len())..];
            let len = rest.len().min(u32::MAX as usize) as u32;
            return opcode::Send::new(fd(&self.socket), rest.as_ptr(), len)
                .flags(libc::MSG_NOSIGNAL)
                .build();
        }
        gather(&self.bufs, self.skip, &mut self.iovecs, &mut self.msghdr);
        opcode::SendMsg::new(fd(&self.socket), &self.msghdr)
            .flags(libc::MSG_NOSIGNAL as u32)
            .build()
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
