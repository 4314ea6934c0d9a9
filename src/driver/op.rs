//! The op contract ([`OpCode`]), the lifecycle of an op in the slab, and the
//! single-completion [`Op`] future.

use super::queue::SmallQueue;
use super::ring::Completion;
use super::slab::Key;
use super::slim_waker::SlimWaker;
use io_uring::squeue;
use std::any::Any;
use std::mem::offset_of;
use std::num::NonZeroU32;
use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::sync::OnceLock;

/// One io_uring operation: the memory and fds it hands to the kernel, and how to build
/// its SQE.
///
/// # Safety
///
/// The driver boxes the value, calls [`create_entry`](OpCode::create_entry) once on the
/// boxed value, and keeps the box, unmoved and unaliased, in the op slab until the
/// kernel posts the op's final completion (a CQE without `IORING_CQE_F_MORE`), even if
/// the future awaiting it is dropped first. Implementors promise that:
///
/// 1. every pointer the entry carries points into `self` (or into heap memory `self`
///    owns), so it stays valid for as long as the driver holds the box;
/// 2. every fd the entry names is kept open by `self`, or is guaranteed by the caller to
///    outlive the op (a socket whose `Drop` runs after the op's future);
/// 3. the entry does not set `user_data`: the driver does;
/// 4. [`release`](OpCode::release) frees whatever kernel-made resource a completion
///    delivered that nobody will take (the fd of an accept that finished after its
///    future was dropped, a provided buffer), and touches nothing else: it runs while
///    the driver is borrowed, so it must not submit, drop or poll ops, or spawn.
///    [`on_complete`](OpCode::on_complete) runs under the same rules.
pub unsafe trait OpCode: 'static {
    /// Builds the SQE. `self` is at its final address when this is called.
    fn create_entry(&mut self) -> squeue::Entry;

    /// Frees what `completion` produced when no future will consume it. For a
    /// multishot op this gets both completions that were queued (and passed to
    /// [`on_complete`](OpCode::on_complete)) and completions that arrived after the
    /// stream was dropped (which were not).
    fn release(&mut self, completion: &Completion) {
        let _ = completion;
    }

    /// Multishot ops: frees what a completion that was passed to
    /// [`on_complete`](OpCode::on_complete) and queued for the stream produced, when
    /// the stream is dropped without taking it. The queue keeps only `res` and `flags`,
    /// so `big_cqe` is zero here: whatever it named was resolved by `on_complete`.
    /// Defaults to [`release`](OpCode::release); runs under the same rules.
    fn release_queued(&mut self, completion: &Completion) {
        self.release(completion)
    }

    /// Multishot ops: runs as each completion is reaped, in reaping order, before it
    /// is queued for the stream. For what must be resolved in kernel order (the
    /// position of bytes in an incrementally consumed buffer, the buffers of a bundle).
    fn on_complete(&mut self, completion: &Completion) {
        let _ = completion;
    }

    /// Multishot ops: asked after each [`on_complete`](OpCode::on_complete) of a
    /// completion with `F_MORE`; `true` stops the op early, for a stream whose consumer
    /// has fallen behind. The driver sends one `ASYNC_CANCEL` with its next submission;
    /// completions already under way still arrive, and the final one says how the op
    /// ended (`-ECANCELED`, or whatever ended it first). Return `true` at most once.
    /// Runs under the same rules as [`release`](OpCode::release).
    fn take_stop_request(&mut self) -> bool {
        false
    }

    /// The fd the op works on, named in the runtime's state dump (`None`: no fd, or
    /// not worth naming). Called only when a dump is taken; runs under the same rules
    /// as [`release`](OpCode::release).
    fn fd(&self) -> Option<RawFd> {
        None
    }
}

/// An op in the slab: [`OpCode`] type-erased, plus access to the concrete type (while
/// queued, and once complete) and, for a multishot op, to its completion queue.
pub(crate) trait OpBox {
    /// The SQE; `None` when the op has nothing to submit (an in-place op whose memory
    /// is gone: a bug its maker guards against).
    fn create_entry(&mut self) -> Option<squeue::Entry>;
    fn release(&mut self, completion: &Completion);
    fn release_queued(&mut self, completion: &Completion);
    fn on_complete(&mut self, completion: &Completion);
    fn take_stop_request(&mut self) -> bool;
    /// The completions queued for the stream of a multishot op; `None` for a
    /// single-shot op.
    fn stream_queue(&mut self) -> Option<&mut SmallQueue<Queued>>;
    fn fd(&self) -> Option<RawFd>;
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
    /// A multishot op's data (its [`OpCode`] value, or an in-place op's state), for
    /// the stream to downcast; `None` for a single-shot op.
    fn stream_data(&mut self) -> Option<&mut dyn Any>;

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
pub(crate) struct Header(unsafe fn(NonNull<Header>) -> NonNull<dyn OpBox>);

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

    fn take_stop_request(&mut self) -> bool {
        self.0.take_stop_request()
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

/// A completion without its `user_data` (the slot's key says it) and `big_cqe` (no
/// single-shot op gets a 32-byte CQE): what the slot keeps of a single-shot op's
/// result, so the slot stays small.
#[derive(Clone, Copy)]
pub(crate) struct Landed {
    res: i32,
    flags: u32,
}

impl Landed {
    pub(crate) fn new(c: &Completion) -> Landed {
        Landed {
            res: c.res,
            flags: c.flags,
        }
    }

    /// The result of a single-shot op that came in two CQEs (SEND_ZC), or a queued
    /// multishot completion: `res` and `flags` are all there is of it.
    pub(crate) fn partial(res: i32, flags: u32) -> Landed {
        Landed { res, flags }
    }

    /// The completion as the kernel posted it for op `key`.
    pub(crate) fn completion(self, key: Key) -> Completion {
        Completion {
            user_data: key.user_data(),
            res: self.res,
            flags: self.flags,
            big_cqe: [0; 2],
        }
    }
}

/// Where an op is in its life. The slab entry (and with it the op's memory) lives until
/// the state machine reaches its end: taken by the future, or final CQE while
/// abandoned.
///
/// ```text
/// single:    Pending ──CQE──▶ Completed ──future takes it──▶ (removed)
///               │  └─CQE with F_MORE (SEND_ZC result)─▶ Partial ──notif CQE──▶ Completed
///               └─future dropped─▶ Abandoned ──final CQE──▶ (removed, release())
/// multishot: Streaming (queue in the op) ──CQE without F_MORE──▶ finished
///               │                                        ──queue drained──▶ (removed)
///               └─stream dropped─▶ Abandoned ──final CQE──▶ (removed, release() each)
/// ```
///
/// Every slab slot is as large as the largest variant, and every op in flight (one
/// per idle connection) has one: keep the variants small.
pub(crate) enum Lifecycle {
    /// Single-shot op in flight, with the waker of the future once it has been polled.
    Pending(Option<SlimWaker>),
    /// Single-shot op whose result (`res`, `flags`) came with `F_MORE` (SEND_ZC): the
    /// kernel still uses the op's memory until the notification CQE. Only the low
    /// half of `flags` is kept (the high half names a provided buffer, which a send
    /// never has), so the variant leaves room for the tag and the slot stays small.
    Partial {
        res: i32,
        flags: u16,
        waker: Option<SlimWaker>,
    },
    /// Single-shot op done; the future has not taken the result yet.
    Completed(Landed),
    /// Multishot op: completions queue in the op ([`OpBox::stream_queue`]) until one
    /// arrives without `F_MORE` (`finished`).
    Streaming {
        waker: Option<SlimWaker>,
        finished: bool,
    },
    /// The future is gone and a cancel was requested. The kernel may still write into
    /// the op's memory, so the slot keeps it until the final CQE, releasing what each
    /// CQE delivers.
    Abandoned,
}

/// An op in the slab (its `IORING_OP_*`, to name it in diagnostics, is the slab
/// entry's label).
pub(crate) struct OpSlot {
    pub(crate) lifecycle: Lifecycle,
    pub(crate) data: OpData,
}

/// Where an op's memory is: its own box, or memory its maker manages and names by one
/// pointer (a TCP stream's armed receive, kept in its socket's allocation, held through
/// an owner count that stands for the box). Either way the slab owns it until the op's
/// final completion. One word (every slab slot has one): a box is named by its
/// [`Header`] field with the low bit set (a header is 8-byte aligned), an in-place op
/// by its maker's pointer, whose low bit is clear.
pub(crate) struct OpData(NonNull<u8>);

/// The low bit of an [`OpData`] that names a boxed op's header.
const BOXED: usize = 1;
// A header pointer leaves the tag bit clear; `in_place` checks its pointers.
const _: () = assert!(std::mem::align_of::<Header>() > BOXED);

/// How the driver reaches ops kept in place by their maker: functions of the one type
/// that makes them (the receive a TCP stream keeps in its socket), handed to the
/// driver with the first such op, so the driver knows no type above it.
///
/// # Safety
///
/// Given a pointer its maker passed to [`OpData::in_place`] and whose ownership the
/// driver still holds: `with_op` calls `f` exactly once with the op (unique for the
/// call), and `give_back` ends the driver's ownership once (the op's memory may be
/// freed then).
pub(crate) struct InPlace {
    /// Runs `f` on the op at the pointer.
    pub(crate) with_op: unsafe fn(NonNull<u8>, OpVisitor<'_>),
    /// Gives the op's ownership back to its maker.
    pub(crate) give_back: unsafe fn(NonNull<u8>),
}

/// What [`InPlace::with_op`] runs on the op.
pub(crate) type OpVisitor<'a> = &'a mut dyn FnMut(&mut dyn OpBox);

/// The one kind of in-place op in this program, set by the first [`OpData::in_place`].
static IN_PLACE: OnceLock<&'static InPlace> = OnceLock::new();

/// The kind an in-place [`OpData`] was made with.
fn in_place_kind() -> &'static InPlace {
    match IN_PLACE.get() {
        Some(kind) => kind,
        // An in-place `OpData` exists only after `in_place` set the kind.
        None => unreachable!("an in-place op without its kind"),
    }
}

impl OpData {
    /// A boxed op, owned by the slab from now on.
    pub(crate) fn boxed<O: Headed>(op: Box<O>) -> OpData {
        let header = O::header(NonNull::from(Box::leak(op)));
        OpData(header.cast::<u8>().map_addr(|a| a | BOXED))
    }

    /// An op kept in place by its maker (`kind`'s functions reach it), owned by the
    /// slab from now on. `ptr` must have its low bit clear, and every in-place op of the
    /// program must come with the same `kind`.
    ///
    /// # Safety
    /// `kind`'s contract holds for `ptr` until the slab gives it back.
    pub(crate) unsafe fn in_place(ptr: NonNull<u8>, kind: &'static InPlace) -> OpData {
        assert_eq!(
            ptr.addr().get() & BOXED,
            0,
            "an in-place op pointer with the tag bit"
        );
        let known = IN_PLACE.get_or_init(|| kind);
        assert!(std::ptr::eq(*known, kind), "a second kind of in-place op");
        OpData(ptr)
    }

    /// The boxed op's fat pointer; `None` for an in-place op.
    fn boxed_ptr(&self) -> Option<NonNull<dyn OpBox>> {
        if self.0.addr().get() & BOXED == 0 {
            return None;
        }
        // SAFETY: the tag bit was set on a header pointer (8-byte aligned, so the bit
        // was clear and the address stays non-zero); clearing it keeps its provenance.
        let header = unsafe { NonNull::new_unchecked(self.0.as_ptr().wrapping_byte_sub(BOXED)) }
            .cast::<Header>();
        // SAFETY: `boxed` made it from the header of a live `Headed` op, which the slab
        // owns until this `OpData` is dropped or taken apart; the function is the one
        // its type stored for exactly this.
        Some(unsafe { (header.as_ref().0)(header) })
    }

    /// Runs `f` on the op, boxed or in place: the one place that tells them apart.
    fn with_op<R>(&mut self, f: impl FnOnce(&mut dyn OpBox) -> R) -> R {
        if let Some(op) = self.boxed_ptr() {
            // SAFETY: the op is live and owned by this `OpData`; `&mut self` makes the
            // reference unique for as long as it lives.
            return f(unsafe { &mut *op.as_ptr() });
        }
        let mut f = Some(f);
        let mut out = None;
        // SAFETY: not a box, so `in_place` made it, with the program's one kind, and
        // this `OpData` still owns it; `&mut self` makes the call's op unique.
        unsafe {
            (in_place_kind().with_op)(self.0, &mut |op| {
                if let Some(f) = f.take() {
                    out = Some(f(op));
                }
            })
        };
        match out {
            Some(out) => out,
            None => unreachable!("InPlace::with_op did not call back"),
        }
    }

    /// The boxed op back (a single-shot op's result was taken); `None` for an in-place
    /// op, which is then dropped as usual.
    pub(crate) fn into_boxed(self) -> Option<Box<dyn OpBox>> {
        let op = self.boxed_ptr()?;
        std::mem::forget(self);
        // SAFETY: the box `boxed` leaked, handed back once (`self` is forgotten).
        Some(unsafe { Box::from_raw(op.as_ptr()) })
    }

    pub(crate) fn create_entry(&mut self) -> Option<squeue::Entry> {
        self.with_op(|op| op.create_entry())
    }

    pub(crate) fn release(&mut self, completion: &Completion) {
        self.with_op(|op| op.release(completion))
    }

    pub(crate) fn on_complete(&mut self, completion: &Completion) {
        self.with_op(|op| op.on_complete(completion))
    }

    pub(crate) fn take_stop_request(&mut self) -> bool {
        self.with_op(|op| op.take_stop_request())
    }

    /// The fd the op works on and whether it is multishot, for the state dump.
    pub(crate) fn describe(&mut self) -> (Option<RawFd>, bool) {
        self.with_op(|op| (op.fd(), op.stream_queue().is_some()))
    }

    /// Queues a completion for the stream of a multishot op.
    pub(crate) fn queue_for_stream(&mut self, completion: &Completion) {
        self.with_op(|op| {
            if let Some(q) = op.stream_queue() {
                q.push_back(Queued::new(completion));
            }
        })
    }

    /// The oldest completion queued for the stream of a multishot op.
    pub(crate) fn pop_for_stream(&mut self) -> Option<Queued> {
        self.with_op(|op| op.stream_queue()?.pop_front())
    }

    /// Releases every completion queued for the stream of op `key`, which nobody will
    /// read.
    pub(crate) fn release_all_queued(&mut self, key: Key) {
        self.with_op(|op| op.release_all_queued(key))
    }

    /// Runs `f` on the data of a multishot op as a `T` ([`OpBox::stream_data`]).
    pub(crate) fn with_stream_data<T: 'static, R>(
        &mut self,
        f: impl FnOnce(&mut T) -> R,
    ) -> Option<R> {
        self.with_op(|op| op.stream_data()?.downcast_mut::<T>().map(f))
    }
}

impl Drop for OpData {
    fn drop(&mut self) {
        match self.boxed_ptr() {
            // SAFETY: the box `boxed` leaked, owned by this `OpData` and freed once.
            Some(op) => drop(unsafe { Box::from_raw(op.as_ptr()) }),
            // SAFETY: made by `in_place` with the program's one kind; this `OpData`
            // owns it and gives it back once.
            None => unsafe { (in_place_kind().give_back)(self.0) },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Key, Queued};
    use crate::driver::Completion;

    #[test]
    fn an_op_slot_stays_small() {
        // Every op in flight has one, and every idle connection has an op in flight.
        assert!(std::mem::size_of::<super::Lifecycle>() <= 24);
        assert_eq!(std::mem::size_of::<super::OpData>(), 8);
        assert!(std::mem::size_of::<super::OpSlot>() <= 32);
    }

    #[test]
    fn a_queued_completion_keeps_res_and_flags_in_eight_bytes() {
        assert_eq!(std::mem::size_of::<Option<Queued>>(), 8);
        let key = Key::from_user_data(5).expect("key");
        for res in [0, 1, 4096, i32::MAX, -1, -libc::ECANCELED, -4095] {
            let c = Completion {
                user_data: key.user_data(),
                res,
                flags: 0xffff_0003,
                big_cqe: [0; 2],
            };
            let back = Queued::new(&c).completion(key);
            assert_eq!(
                (back.res, back.flags, back.user_data),
                (res, 0xffff_0003, 5)
            );
        }
    }
}
