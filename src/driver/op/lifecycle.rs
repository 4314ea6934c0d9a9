//! Where an op is in its life ([`Lifecycle`]) and what its slab slot keeps
//! ([`OpSlot`], [`Landed`]): 32 bytes per op in flight, one per idle connection.

use super::data::OpData;
use crate::driver::ring::Completion;
use crate::driver::slab::Key;
use crate::driver::slim_waker::SlimWaker;

/// Set in the landed completion of a two-completion send when its notification
/// reported that the kernel copied the bytes after all (`IORING_NOTIF_USAGE_ZC_COPIED`):
/// the driver folds it in, since the task sees one completion. The kernel defines
/// no completion flag there (its flags are bits 0-5 and 15; the buffer id is 16-31).
pub(crate) const LANDED_COPIED: u32 = 1 << 14;

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
/// detached:  Detached ──CQE──▶ on_detached(): again ─▶ (resubmitted, same slot)
///               │                           └ done ─▶ (removed, box kept)
///               └─CQE with F_MORE (SEND_ZC result)─▶ on_detached(), notifying
///                                     ──notif CQE──▶ on_detached(): again / done
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
        /// The op's task is done with it at this result (`OpCode::done_at_result`):
        /// woken, it takes the result and leaves the op to the notification.
        done: bool,
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
    /// A single-shot op no future waits for (a queued send): each completion goes to
    /// [`OpCode::on_detached`], which may submit the op again after a final one.
    /// `notifying`: a zero-copy send's result came, its notification has not.
    Detached { notifying: bool },
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
