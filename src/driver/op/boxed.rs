//! The type-erased op the slab keeps: [`OpBox`] over a boxed [`Single`] or [`Multi`],
//! named by one word (its [`Header`] field re-forms the fat pointer), and the
//! completions a multishot op queues for its stream ([`Queued`], eight bytes each).

use super::lifecycle::Landed;
use super::OpCode;
use crate::driver::queue::SmallQueue;
use crate::driver::ring::Completion;
use crate::driver::slab::Key;
use crate::driver::DetachedCx;
use io_uring::squeue;
use std::any::Any;
use std::mem::offset_of;
use std::num::NonZeroU32;
use std::os::fd::RawFd;
use std::ptr::NonNull;

/// An op in the slab: [`OpCode`] type-erased, plus access to the concrete type (while
/// queued, and once complete) and, for a multishot op, to its completion queue.
pub(crate) trait OpBox {
    /// The SQE; `None` when the op has nothing to submit (an in-place op whose memory
    /// is gone: a bug its maker guards against).
    fn create_entry(&mut self) -> Option<squeue::Entry>;
    fn release(&mut self, completion: &Completion);
    fn release_queued(&mut self, completion: &Completion);
    fn on_complete(&mut self, completion: &Completion);
    /// A single-shot op's data, for its maker to change it before it is submitted
    /// (a deferred detached op); `None` for a multishot op.
    fn single_data(&mut self) -> Option<&mut dyn Any> {
        None
    }

    /// [`OpCode::on_detached`]; only single-shot ops are submitted detached.
    fn on_detached(&mut self, completion: &Completion, cx: &mut DetachedCx<'_>) -> bool {
        let _ = cx;
        self.release(completion);
        false
    }
    fn take_stop_request(&mut self) -> bool;
    /// [`OpCode::try_at_once`]; only single-shot ops are submitted detached.
    fn try_at_once(&mut self) -> Option<i32> {
        None
    }
    /// [`OpCode::done_at_result`]; only single-shot ops have two completions.
    fn done_at_result(&mut self, res: i32) -> bool {
        let _ = res;
        false
    }
    /// [`OpCode::on_shutdown_stuck`]; only single-shot ops act on it.
    fn on_shutdown_stuck(&mut self) {}
    /// The completions queued for the stream of a multishot op; `None` for a
    /// single-shot op.
    fn stream_queue(&mut self) -> Option<&mut SmallQueue<Queued>>;
    fn fd(&self) -> Option<RawFd>;
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
    /// A multishot op's data (its [`OpCode`] value, or an in-place op's state), for
    /// the stream to downcast; `None` for a single-shot op.
    fn stream_data(&mut self) -> Option<&mut dyn Any>;

    /// For a zero-copy stream receive: looks in a row that found no completion since
    /// the look before, this one included (the worker's restart of receives a 7.1
    /// kernel left parked asks it, by op, with no knowledge of the receive's type);
    /// `None` for any other op.
    fn quiet_looks(&mut self) -> Option<u8> {
        None
    }

    /// Releases every completion queued for the stream of op `key`, which nobody will
    /// read.
    fn release_all_queued(&mut self, key: Key) {
        while let Some(q) = self.stream_queue().and_then(SmallQueue::pop_front) {
            self.release_queued(&q.completion(key));
        }
    }
}

/// A completion queued for a multishot op's stream: `res` and `flags` only (the slot's
/// key says the `user_data`, and [`OpCode::on_complete`] has already read any
/// `big_cqe`), so the queue every armed receive carries stays small: `res` is kept
/// with its sign bit flipped in a `NonZeroU32` (a CQE's `res` is a length or a
/// negative errno, never `i32::MIN`), which makes an `Option<Queued>` eight bytes.
#[derive(Clone, Copy)]
pub(crate) struct Queued {
    res: NonZeroU32,
    flags: u32,
}

// The worker's stream queues (`SmallQueue`) keep drained storage for the next burst.
crate::driver::queue::stocked!(Queued);

impl Queued {
    pub(crate) fn new(c: &Completion) -> Queued {
        let flipped = (c.res as u32) ^ SIGN;
        Queued {
            // `i32::MIN` (never a CQE's `res`) is stored as `i32::MIN + 1`.
            res: NonZeroU32::new(flipped).unwrap_or(NonZeroU32::MIN),
            flags: c.flags,
        }
    }

    /// The completion for op `key`, with `big_cqe` zero.
    pub(crate) fn completion(self, key: Key) -> Completion {
        Landed::partial((self.res.get() ^ SIGN) as i32, self.flags).completion(key)
    }
}

/// The sign bit of an `i32` as `u32`.
const SIGN: u32 = 1 << 31;

/// What the slab's one-word op pointer points at in a boxed op ([`Single`], [`Multi`]):
/// the function that turns it back into the op's fat pointer. It is a field of the op
/// (the last one, so `Single`'s data stays `.0`), which makes the slab slot one word
/// smaller than a `Box<dyn OpBox>` would.
pub(crate) struct Header(pub(super) unsafe fn(NonNull<Header>) -> NonNull<dyn OpBox>);

/// A boxed op type whose [`Header`] field says how to re-form its fat pointer.
///
/// # Safety
///
/// `header` returns a pointer to a field of `*this` holding a [`Header`] whose
/// function, given that pointer (with `this`'s provenance), returns `this` as a
/// `dyn OpBox`.
pub(crate) unsafe trait Headed: OpBox + 'static {
    /// The header field of the op `this` points to.
    fn header(this: NonNull<Self>) -> NonNull<Header>;
}

/// A single-shot op as the slab holds it.
pub(crate) struct Single<T>(pub(crate) T, Header);

impl<T: OpCode> Single<T> {
    #[inline(always)]
    pub(crate) fn new(op: T) -> Single<T> {
        Single(op, Header(single_from_header::<T>))
    }
}

/// The op a [`Single`]'s header is in.
///
/// # Safety
/// `h` points to the header of a live `Single<T>`, with the provenance of its box.
unsafe fn single_from_header<T: OpCode>(h: NonNull<Header>) -> NonNull<dyn OpBox> {
    // SAFETY: the caller's contract: the header is field `1` of a `Single<T>`.
    let op: NonNull<Single<T>> = unsafe { h.byte_sub(offset_of!(Single<T>, 1)) }.cast();
    op
}

// SAFETY: the header is field `1`, and `Single::new` (its only constructor) sets it to
// `single_from_header::<T>`, which steps back by that field's offset.
unsafe impl<T: OpCode> Headed for Single<T> {
    fn header(this: NonNull<Self>) -> NonNull<Header> {
        // SAFETY: a field of the live op `this` points to.
        unsafe { NonNull::new_unchecked(&raw mut (*this.as_ptr()).1) }
    }
}

/// A multishot op as the slab holds it: the queue of completions its stream has not
/// taken lives in the op's own allocation, so it costs the slab (shared by every op)
/// nothing and single-shot ops nothing.
pub(crate) struct Multi<T> {
    pub(crate) queue: SmallQueue<Queued>,
    pub(crate) op: T,
    header: Header,
}

impl<T: OpCode> Multi<T> {
    pub(crate) fn new(op: T) -> Multi<T> {
        Multi {
            queue: SmallQueue::default(),
            op,
            header: Header(multi_from_header::<T>),
        }
    }
}

/// The op a [`Multi`]'s header is in.
///
/// # Safety
/// `h` points to the header of a live `Multi<T>`, with the provenance of its box.
unsafe fn multi_from_header<T: OpCode>(h: NonNull<Header>) -> NonNull<dyn OpBox> {
    // SAFETY: the caller's contract: the header is field `header` of a `Multi<T>`.
    let op: NonNull<Multi<T>> = unsafe { h.byte_sub(offset_of!(Multi<T>, header)) }.cast();
    op
}

// SAFETY: `Multi::new` (its only constructor) sets `header` to
// `multi_from_header::<T>`, which steps back by that field's offset.
unsafe impl<T: OpCode> Headed for Multi<T> {
    fn header(this: NonNull<Self>) -> NonNull<Header> {
        // SAFETY: a field of the live op `this` points to.
        unsafe { NonNull::new_unchecked(&raw mut (*this.as_ptr()).header) }
    }
}

impl<T: OpCode> OpBox for Single<T> {
    fn create_entry(&mut self) -> Option<squeue::Entry> {
        Some(self.0.create_entry())
    }

    fn release(&mut self, completion: &Completion) {
        self.0.release(completion)
    }

    fn on_complete(&mut self, completion: &Completion) {
        self.0.on_complete(completion)
    }

    fn on_detached(&mut self, completion: &Completion, cx: &mut DetachedCx<'_>) -> bool {
        self.0.on_detached(completion, cx)
    }

    fn single_data(&mut self) -> Option<&mut dyn Any> {
        Some(&mut self.0)
    }

    fn take_stop_request(&mut self) -> bool {
        self.0.take_stop_request()
    }

    fn on_shutdown_stuck(&mut self) {
        self.0.on_shutdown_stuck()
    }

    fn done_at_result(&mut self, res: i32) -> bool {
        self.0.done_at_result(res)
    }

    fn try_at_once(&mut self) -> Option<i32> {
        self.0.try_at_once()
    }

    fn release_queued(&mut self, completion: &Completion) {
        self.0.release_queued(completion)
    }

    fn stream_queue(&mut self) -> Option<&mut SmallQueue<Queued>> {
        None
    }

    fn fd(&self) -> Option<RawFd> {
        self.0.fd()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }

    fn stream_data(&mut self) -> Option<&mut dyn Any> {
        None
    }
}

impl<T: OpCode> OpBox for Multi<T> {
    fn create_entry(&mut self) -> Option<squeue::Entry> {
        Some(self.op.create_entry())
    }

    fn release(&mut self, completion: &Completion) {
        self.op.release(completion)
    }

    fn on_complete(&mut self, completion: &Completion) {
        self.op.on_complete(completion)
    }

    fn take_stop_request(&mut self) -> bool {
        self.op.take_stop_request()
    }

    fn release_queued(&mut self, completion: &Completion) {
        self.op.release_queued(completion)
    }

    fn stream_queue(&mut self) -> Option<&mut SmallQueue<Queued>> {
        Some(&mut self.queue)
    }

    fn fd(&self) -> Option<RawFd> {
        self.op.fd()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }

    fn stream_data(&mut self) -> Option<&mut dyn Any> {
        Some(&mut self.op)
    }
}
