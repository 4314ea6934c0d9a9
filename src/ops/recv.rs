//! Receive into a caller-owned buffer (the buffer travels with the op and comes back).

use super::sqe::with_optlen;
use super::{fd, SharedFd};
use crate::driver::queue::{from_stock, stocked, to_stock, SmallQueue};
use crate::driver::{Completion, OpCode};
use bytes::BytesMut;
use io_uring::{opcode, squeue};
use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;
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
    fn fd(&self) -> Option<std::os::fd::RawFd> {
        Some(fd(&self.socket).0)
    }

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
    fn fd(&self) -> Option<std::os::fd::RawFd> {
        Some(fd(&self.socket).0)
    }

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

/// What a held buffer counts against a receive's hold limit: its length, and at least
/// `granule` (a whole buffer of a pool that is not consumed incrementally). Derived
/// from the pool when needed, so the op every armed receive carries stays small.
#[derive(Clone, Copy)]
pub(crate) struct Charge {
    pub(crate) granule: u32,
}

impl Charge {
    fn of(self, buf: &RxBuf) -> i32 {
        let bytes = (buf.len().min(u32::MAX as usize) as u32).max(self.granule);
        i32::try_from(bytes).unwrap_or(i32::MAX)
    }
}

/// The room a hold limit of `limit` bytes gives (`0`: none). Kept as an `i32`, so the
/// room and the op's flags share one word in every armed receive: a limit above
/// `i32::MAX` (2 GiB held by one stream) counts as `i32::MAX`, which is no limit in
/// practice.
fn room_for(limit: u32) -> i32 {
    match limit {
        0 => i32::MAX,
        n => i32::try_from(n).unwrap_or(i32::MAX),
    }
}

/// A decoded buffer, or why a completion could not be decoded (its bytes are lost;
/// the stream fails when it gets there; boxed, as it is almost never made).
type Decode = Result<RxBuf, Box<PoolError>>;

// Empty queues of receives that drained theirs wait for the next receive that gets a
// completion: an idle receive holds no queue, and a busy one does not allocate per
// completion. A bundle's buffers queue the same way while it is decoded.
stocked!(Decode);
stocked!(RxBuf);

/// A FIFO of decoded buffers that holds no memory while empty (one word in every
/// idle receive), borrowing a queue from the thread's stock while it has items.
#[derive(Default)]
struct DecodeQueue(
    // Boxed on purpose: one word while empty, and a kept queue moves as a pointer.
    #[allow(clippy::box_collection)] Option<Box<VecDeque<Decode>>>,
);

impl DecodeQueue {
    fn push_back(&mut self, item: Decode) {
        self.0.get_or_insert_with(from_stock).push_back(item);
    }

    fn pop_front(&mut self) -> Option<Decode> {
        let q = self.0.as_mut()?;
        let item = q.pop_front();
        if q.is_empty() {
            self.drained();
        }
        item
    }

    fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// The queue drained: its storage goes back to the thread's stock.
    #[inline(always)]
    fn drained(&mut self) {
        if let Some(q) = self.0.take() {
            to_stock(q);
        }
    }
}

/// Buffers decoded from the completions of a multishot pool receive, in completion
/// order, until the stream takes them; and how much more of the pool they may hold
/// before the receive asks to stop. Lives in the op of every armed receive (one per
/// connection): two words while nothing is queued, with the op's own flags (`mode`)
/// in the room the struct's padding would otherwise take.
pub(crate) struct Decoded<M = ()> {
    bufs: DecodeQueue,
    /// Pool bytes the stream may still leave untaken: the hold limit less what `bufs`
    /// keep from other streams (saturating; below zero the limit was passed, and only
    /// that matters: it is `stopped`).
    room: i32,
    /// A stop was asked for; [`take_stop_request`](Self::take_stop_request) hands it
    /// to the driver once.
    stop_wanted: bool,
    /// This receive asked to stop because its stream held more than its limit.
    stopped: bool,
    /// What the op keeps beside it.
    pub(crate) mode: M,
}

impl<M> Decoded<M> {
    /// Nothing decoded yet, with a hold limit of `limit` bytes (`0`: none).
    pub(crate) fn new(limit: u32, mode: M) -> Decoded<M> {
        Decoded {
            bufs: DecodeQueue::default(),
            room: room_for(limit),
            stop_wanted: false,
            stopped: false,
            mode,
        }
    }

    /// The hold limit (in bytes, at most `i32::MAX`) as long as nothing is held, as
    /// when the op makes its entry.
    pub(crate) fn room(&self) -> u32 {
        self.room.max(0) as u32
    }

    /// Queues what decoding one completion gave.
    pub(crate) fn push<I: IntoIterator<Item = RxBuf>>(
        &mut self,
        decoded: Result<I, PoolError>,
        charge: Charge,
    ) {
        match decoded {
            Ok(bufs) => {
                for buf in bufs {
                    self.room = self.room.saturating_sub(charge.of(&buf));
                    self.bufs.push_back(Ok(buf));
                }
                if self.room < 0 && !self.stopped {
                    self.stopped = true;
                    self.stop_wanted = true;
                }
            }
            Err(e) => self.bufs.push_back(Err(Box::new(e))),
        }
    }

    /// Whether the receive should stop now (`true` once).
    pub(crate) fn take_stop_request(&mut self) -> bool {
        std::mem::take(&mut self.stop_wanted)
    }

    /// Whether this receive asked to stop because its stream held its limit: its
    /// `-ECANCELED` end is that stop, not a cancellation from outside.
    pub(crate) fn stopped_at_limit(&self) -> bool {
        self.stopped
    }

    fn pop(&mut self, charge: Charge) -> Option<Decode> {
        let buf = self.bufs.pop_front()?;
        if let Ok(b) = &buf {
            self.room = self.room.saturating_add(charge.of(b));
        }
        Some(buf)
    }

    /// The next buffer of a data completion the stream took, `owed` being the bytes
    /// of it not handed out yet (counted down here; `0` after an error, whose bytes
    /// are lost).
    pub(crate) fn take_next(&mut self, owed: &mut u32, charge: Charge) -> io::Result<RxBuf> {
        match self.pop(charge) {
            Some(Ok(buf)) => {
                *owed = owed.saturating_sub(buf.len() as u32);
                Ok(buf)
            }
            Some(Err(why)) => {
                *owed = 0;
                Err(io::Error::new(io::ErrorKind::InvalidData, why.to_string()))
            }
            None => {
                let left = std::mem::take(owed);
                Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{left} received bytes have no decoded buffer"),
                ))
            }
        }
    }

    /// Drops the buffers of a queued completion nobody will take; `false` if nothing
    /// was decoded (the completion arrived after the stream was dropped).
    pub(crate) fn discard(&mut self, res: i32, charge: Charge) -> bool {
        if self.bufs.is_empty() {
            return false;
        }
        let mut left = res.max(0) as usize;
        while left > 0 {
            match self.pop(charge) {
                Some(Ok(buf)) => left = left.saturating_sub(buf.len()),
                // The completion whose decoding failed: its bytes are lost with it.
                Some(Err(_)) => break,
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
    pool: Rc<CopyPool>,
    /// With the receive's flags beside it: the op is three words.
    pub(crate) decoded: Decoded<CopyFlags>,
}

/// How a copy receive is armed: a bool each (their spare values leave room for the
/// tags of the enums and options the op goes in).
#[derive(Clone, Copy)]
pub(crate) struct CopyFlags {
    bundle: bool,
    /// The kernel ends the receive after the hold limit's bytes.
    kernel_limit: bool,
}

impl RecvMulti {
    /// A multishot receive (on the socket whose allocation it goes in: see
    /// [`SocketOp`](super::stream_recv::SocketOp)); `bundle`: one completion may fill several
    /// buffers (not on incremental pools). It stops once it holds more than
    /// `hold_limit` pool bytes nobody has taken (`0`: no limit): ended by the kernel
    /// after that many bytes when `kernel_limit` (Linux 6.17), and cancelled when the
    /// buffers it filled count for more (a buffer of a pool that is not consumed
    /// incrementally counts whole, however few bytes it got).
    pub(crate) fn new(
        pool: Rc<CopyPool>,
        bundle: bool,
        hold_limit: u32,
        kernel_limit: bool,
    ) -> RecvMulti {
        let flags = CopyFlags {
            bundle: bundle && !pool.is_incremental(),
            kernel_limit: kernel_limit && hold_limit > 0,
        };
        RecvMulti {
            pool,
            decoded: Decoded::new(hold_limit, flags),
        }
    }

    /// The byte budget the kernel is given (`0`: none). Asked before the op is
    /// submitted, while nothing is held (the room is then the whole hold limit).
    pub(crate) fn kernel_limit(&self) -> u32 {
        if self.decoded.mode.kernel_limit {
            self.decoded.room()
        } else {
            0
        }
    }

    /// What a buffer counts against the hold limit: each buffer of a pool that is not
    /// consumed incrementally counts whole, however few bytes it got.
    fn charge(&self) -> Charge {
        let granule = if self.pool.is_incremental() {
            0
        } else {
            self.pool.buffer_size()
        };
        Charge { granule }
    }

    /// The next buffer of the `owed` bytes of the data completion the stream took.
    pub(crate) fn take_next(&mut self, owed: &mut u32) -> io::Result<RxBuf> {
        let charge = self.charge();
        self.decoded.take_next(owed, charge)
    }

    /// Takes the buffers completion `c` filled from the pool into `decoded` (in
    /// place: no allocation per completion).
    fn decode_into<M>(
        pool: &CopyPool,
        bundle: bool,
        c: &Completion,
        decoded: &mut Decoded<M>,
        charge: Charge,
    ) {
        if bundle {
            let mut bufs = SmallQueue::default();
            let taken = pool.take_bundle(c.res, c.flags, |b| bufs.push_back(b));
            decoded.push(
                taken.map(|_| std::iter::from_fn(move || bufs.pop_front())),
                charge,
            );
        } else {
            decoded.push(pool.take(c.res, c.flags).map(Some), charge);
        }
    }
}

/// The op's side of the [`OpCode`] contract, called through
/// [`StreamRecv`](super::stream_recv::StreamRecv) (which holds the socket's fd open, so
/// the entry takes it as a plain number). The entry names a buffer group whose memory
/// the pool owns; the `Rc` keeps the pool (and so the memory) alive for as long as this
/// op exists. Buffers delivered to nobody are handed back to the pool in `release`.
impl RecvMulti {
    pub(crate) fn create_entry(&mut self, fd: RawFd) -> squeue::Entry {
        let entry = if self.decoded.mode.bundle {
            self.pool.recv_multishot_bundle(fd)
        } else {
            self.pool.recv_multishot(fd)
        };
        match self.kernel_limit() {
            0 => entry,
            limit => with_optlen(entry, limit),
        }
    }

    pub(crate) fn on_complete(&mut self, c: &Completion) {
        if c.res > 0 {
            let (charge, bundle) = (self.charge(), self.decoded.mode.bundle);
            Self::decode_into(&self.pool, bundle, c, &mut self.decoded, charge);
        }
    }

    pub(crate) fn take_stop_request(&mut self) -> bool {
        self.decoded.take_stop_request()
    }

    pub(crate) fn release(&mut self, c: &Completion) {
        let charge = self.charge();
        if c.res > 0 && !self.decoded.discard(c.res, charge) {
            // Never decoded: taking and dropping returns the buffers (in reaping
            // order, as decoding needs).
            let mut lost = Decoded::new(0, ());
            Self::decode_into(&self.pool, self.decoded.mode.bundle, c, &mut lost, charge);
        }
    }

    pub(crate) fn release_queued(&mut self, c: &Completion) {
        // Decoded by `on_complete` already (or lost to a decode error): never take
        // from the pool a second time.
        let charge = self.charge();
        self.decoded.discard(c.res, charge);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::queue::{Stocked, STOCK_LEN, STOCK_SLOTS};

    fn bad(i: usize) -> Decode {
        Err(Box::new(PoolError::InvalidConfig {
            field: "test",
            reason: i.to_string(),
        }))
    }

    fn reason(d: Option<Decode>) -> Option<String> {
        match d? {
            Err(e) => match *e {
                PoolError::InvalidConfig { reason, .. } => Some(reason),
                other => panic!("unexpected {other:?}"),
            },
            Ok(_) => panic!("no buffers were queued"),
        }
    }

    #[test]
    fn an_idle_receive_keeps_one_word_of_decoded_queue() {
        // What every armed receive (one per idle connection) carries.
        assert_eq!(std::mem::size_of::<DecodeQueue>(), 8);
        assert_eq!(std::mem::size_of::<RecvMulti>(), 24);
    }

    #[test]
    fn a_hold_limit_gives_its_room_and_no_limit_or_a_huge_one_gives_the_most() {
        assert_eq!(room_for(512 * 1024), 512 * 1024);
        assert_eq!(room_for(0), i32::MAX, "no limit");
        assert_eq!(room_for(u32::MAX), i32::MAX);
        let d = Decoded::new(64 * 1024, ());
        assert_eq!(
            d.room(),
            64 * 1024,
            "the kernel's budget before anything is held"
        );
        assert!(!d.stopped_at_limit());
    }

    #[test]
    fn decode_queue_keeps_order_and_hands_drained_queues_to_the_next() {
        let mut a = DecodeQueue::default();
        assert!(a.is_empty() && a.pop_front().is_none());
        for i in 0..40 {
            a.push_back(bad(i));
        }
        for i in 0..40 {
            assert_eq!(reason(a.pop_front()), Some(i.to_string()));
        }
        // Drained: it holds nothing, and its queue (shrunk) waits for the next one.
        assert!(a.is_empty());
        let kept = Decode::with_stock(|s| s.last().map(|q| (q.capacity(), &**q as *const _)));
        let (capacity, queue) = kept.flatten().expect("the drained queue is kept");
        assert!(capacity <= STOCK_SLOTS.max(4));
        let mut b = DecodeQueue::default();
        b.push_back(bad(7));
        assert_eq!(b.0.as_deref().map(|q| q as *const _), Some(queue));
        assert_eq!(reason(b.pop_front()), Some("7".into()));
    }

    #[test]
    fn spare_decode_queues_are_bounded() {
        let mut qs: Vec<DecodeQueue> = (0..STOCK_LEN + 8).map(|_| DecodeQueue::default()).collect();
        for q in &mut qs {
            q.push_back(bad(0));
        }
        for q in &mut qs {
            assert!(reason(q.pop_front()).is_some());
        }
        assert_eq!(Decode::with_stock(|s| s.len()), Some(STOCK_LEN));
    }
}
