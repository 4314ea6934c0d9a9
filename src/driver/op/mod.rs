//! An op as the driver holds it: the contract an op type signs ([`OpCode`], here), the
//! type-erased box the slab keeps it in (`boxed`: [`OpBox`], [`Single`], [`Multi`],
//! the completions a multishot op queues), where an op is in its life (`lifecycle`:
//! [`Lifecycle`], [`OpSlot`]) and the one-word pointer a slot names its memory by,
//! boxed or kept in place by its maker (`data`: [`OpData`], [`InPlace`]).

mod boxed;
mod data;
mod lifecycle;

pub(crate) use boxed::{Multi, OpBox, Queued, Single};
pub(crate) use data::{InPlace, OpData};
pub(crate) use lifecycle::{Landed, Lifecycle, OpSlot, LANDED_COPIED};

use super::detached::DetachedCx;
use super::ring::Completion;
use io_uring::squeue;
use std::os::fd::RawFd;

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

    /// Detached ops (submitted with no future to take the result,
    /// the driver's `Lifecycle::Detached`): runs on each completion; on a final one (without
    /// `F_MORE`; the return value of any other is ignored) `true` submits the op
    /// again, in the same slot (its [`create_entry`](OpCode::create_entry) is called
    /// anew, once reaping is done, so completions stay in kernel order); `false` ends
    /// it (the slot is freed and the box kept for the next op of its size). Wakers
    /// pushed to `cx.wake` are woken once the driver is free, and ops made with
    /// `cx.defer` go out with the next kernel entry. Runs under the same rules as
    /// [`release`](OpCode::release) otherwise; the default releases what the
    /// completion delivered and ends the op.
    fn on_detached(&mut self, completion: &Completion, cx: &mut DetachedCx<'_>) -> bool {
        let _ = cx;
        self.release(completion);
        false
    }

    /// Detached ops, as the driver is about to submit them: the op may do its I/O at
    /// once, with a non-blocking syscall, where the kernel can finish it without
    /// waiting. `Some(res)` is then the op's completion (given to
    /// [`on_detached`](OpCode::on_detached) as if the kernel had posted it; asked to go
    /// again, the op is submitted to the ring); `None` submits it as usual (it would
    /// have to wait, or is not a kind that can go at once). Why: a reply that fits the
    /// socket's buffer costs the same kernel work either way, but through the ring it
    /// also costs a completion to reap and, with one connection, a second loop turn
    /// (counted: about a quarter of a 64 B echo request's user-space instructions).
    /// Runs under the same rules as [`release`](OpCode::release); the default does
    /// nothing.
    fn try_at_once(&mut self) -> Option<i32> {
        None
    }

    /// A two-completion op's result `res` came (with `F_MORE`; a zero-copy send's):
    /// `true` when its future is done at it, and the driver wakes the task now rather
    /// than at the notification (the op keeps its memory until then). Runs under the
    /// same rules as [`release`](OpCode::release); the default waits for the
    /// notification.
    fn done_at_result(&mut self, res: i32) -> bool {
        let _ = res;
        false
    }

    /// Shutdown: the op is still in flight halfway to the deadline. An op that waits
    /// on something only it can end early (a zero-copy send's notification, which a
    /// peer that reads nothing holds back) ends it here, so the shutdown need not leak
    /// it. Runs under the same rules as [`release`](OpCode::release); the default does
    /// nothing.
    fn on_shutdown_stuck(&mut self) {}

    /// The fd the op works on, named in the runtime's state dump (`None`: no fd, or
    /// not worth naming). Called only when a dump is taken; runs under the same rules
    /// as [`release`](OpCode::release).
    fn fd(&self) -> Option<RawFd> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::Queued;
    use crate::driver::slab::Key;
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
