//! Where an op's memory is ([`OpData`]): a box of the driver's, or memory its maker
//! keeps in place and hands over with an [`InPlace`] table; every slab call reaches
//! either through one `with_op`.

use super::boxed::{Headed, Header, OpBox, Queued};
use crate::driver::ring::Completion;
use crate::driver::slab::Key;
use io_uring::squeue;
use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::sync::OnceLock;

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
/// The maker's op type is one pointer wide and its value is exactly the pointer it
/// passes to [`OpData::in_place`] (`#[repr(transparent)]` over it), so the slab's word
/// *is* the op. Given that word's address while the driver still owns it, `as_op`
/// returns it as the op (unsizing only: no call into the op, no copy), which the
/// driver never moves out of nor drops; `give_back` ends the driver's ownership once
/// (the op's memory may be freed then).
pub(crate) struct InPlace {
    /// The op whose value is the word at this address.
    pub(crate) as_op: unsafe fn(NonNull<NonNull<u8>>) -> NonNull<dyn OpBox>,
    /// Gives the op's ownership back to its maker.
    pub(crate) give_back: unsafe fn(NonNull<u8>),
}

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
    /// An in-place op is this `OpData`'s own word seen as its maker's type
    /// ([`InPlace`]): reached without a visitor closure (counted: the closure's two
    /// indirect calls and its result slot were ~60 instructions per visit, three visits
    /// per received message).
    #[inline]
    fn with_op<R>(&mut self, f: impl FnOnce(&mut dyn OpBox) -> R) -> R {
        let op = match self.boxed_ptr() {
            Some(op) => op,
            // SAFETY: not a box, so `in_place` made it, with the program's one kind, and
            // this `OpData` still owns it: its word is the op (`InPlace`'s contract).
            None => unsafe { (in_place_kind().as_op)(NonNull::from(&mut self.0)) },
        };
        // SAFETY: the op is live and owned by this `OpData`; `&mut self` makes the
        // reference unique for as long as it lives, and `f` can neither move out of a
        // `&mut dyn` nor drop it.
        f(unsafe { &mut *op.as_ptr() })
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

    /// A multishot op's completion, in one visit of the op (each visit of an op kept
    /// in its socket costs two indirect calls: counted, three of them were ~200
    /// instructions of a 64 B echo request): its `on_complete`, then queued for the
    /// stream; `true` when the op asks to stop (asked only while more follow). Forced
    /// inline: the driver's dispatch is its one caller, which the compiler stopped
    /// inlining it into when dispatch grew a branch (counted: 17 instructions per
    /// received message).
    #[inline(always)]
    pub(crate) fn on_stream_completion(&mut self, completion: &Completion) -> bool {
        self.with_op(|op| {
            op.on_complete(completion);
            if let Some(q) = op.stream_queue() {
                q.push_back(Queued::new(completion));
            }
            completion.more() && op.take_stop_request()
        })
    }

    pub(crate) fn on_detached(
        &mut self,
        completion: &Completion,
        cx: &mut crate::driver::DetachedCx<'_>,
    ) -> bool {
        self.with_op(|op| op.on_detached(completion, cx))
    }

    pub(crate) fn done_at_result(&mut self, res: i32) -> bool {
        self.with_op(|op| op.done_at_result(res))
    }

    pub(crate) fn try_at_once(&mut self) -> Option<i32> {
        self.with_op(|op| op.try_at_once())
    }

    pub(crate) fn on_shutdown_stuck(&mut self) {
        self.with_op(|op| op.on_shutdown_stuck())
    }

    /// The fd the op works on and whether it is multishot, for the state dump.
    pub(crate) fn describe(&mut self) -> (Option<RawFd>, bool) {
        self.with_op(|op| (op.fd(), op.stream_queue().is_some()))
    }

    /// The oldest completion queued for the stream of a multishot op.
    pub(crate) fn pop_for_stream(&mut self) -> Option<Queued> {
        self.with_op(|op| op.stream_queue()?.pop_front())
    }

    /// [`pop_for_stream`](Self::pop_for_stream) as op `key`'s completion, then `f` on
    /// it and the op's data as a `T`, in the same visit of the op (a stream takes the
    /// first buffer of a data completion at once: one visit instead of two).
    pub(crate) fn pop_for_stream_with<T: 'static, R>(
        &mut self,
        key: Key,
        f: impl FnOnce(&Completion, &mut T) -> Option<R>,
    ) -> Option<(Completion, Option<R>)> {
        self.with_op(|op| {
            let c = op.stream_queue()?.pop_front()?.completion(key);
            let r = op
                .stream_data()
                .and_then(|d| d.downcast_mut::<T>())
                .and_then(|d| f(&c, d));
            Some((c, r))
        })
    }

    /// Releases every completion queued for the stream of op `key`, which nobody will
    /// read.
    pub(crate) fn release_all_queued(&mut self, key: Key) {
        self.with_op(|op| op.release_all_queued(key))
    }

    /// [`OpBox::quiet_looks`] of this op.
    pub(crate) fn quiet_looks(&mut self) -> Option<u8> {
        self.with_op(|op| op.quiet_looks())
    }

    /// Runs `f` on the data of a single-shot op as a `T` ([`OpBox::single_data`]).
    pub(crate) fn with_single_data<T: 'static, R>(
        &mut self,
        f: impl FnOnce(&mut T) -> R,
    ) -> Option<R> {
        self.with_op(|op| op.single_data()?.downcast_mut::<T>().map(f))
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
