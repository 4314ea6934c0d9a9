//! A spawned task: one allocation holding the scheduling state and a stage that is
//! first the future, then its result.
//!
//! Thread rules: the future is polled and dropped only on its owner worker thread. The
//! one exception is a task spawned from another thread that never reached its worker
//! (runtime gone): it is dropped wherever its last reference goes, which is sound
//! because `spawn_on` requires that future to be `Send`. Wakers may be used from any
//! thread; they only touch the atomic state and the owner's queues.

use super::join::{Join, JoinError};
use super::join_wakers::JoinWakers;
use crate::runtime::context;
use crate::runtime::worker::{Core, Remote, WorkerShared};
use std::cell::UnsafeCell;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// In a run queue (local or remote), or about to be.
const SCHEDULED: u8 = 1;
/// Finished: the future is gone and the result is in the stage (or was dropped).
const COMPLETE: u8 = 2;
/// `abort()` was called; the owner drops the future at the next run.
const CANCELLED: u8 = 4;
/// The `JoinHandle` exists: the result is kept for it.
const JOIN_INTEREST: u8 = 8;
/// The owner's [`JoinWakers`] may hold a waker of the handle, for the task to wake.
/// Set only by the handle, while not `COMPLETE`, under that map's lock: see [`Task`].
const JOIN_WAKER: u8 = 16;
/// The future was dropped: `stage` holds the output. Set by the owner only, before
/// `COMPLETE`.
const OUTPUT: u8 = 32;

/// Not in the owner's task registry (yet). Keys are `u32` (four billion live tasks on
/// one worker is beyond any memory), so the key packs next to `state`.
const UNREGISTERED: u32 = u32::MAX;

/// The type-erased face of a task, as the queues and the registry see it.
pub(crate) trait Runnable: Send + Sync {
    /// Polls the task once. Owner thread only.
    fn run(self: Arc<Self>, core: &Core);
    /// Drops the future and completes the task as cancelled. Owner thread only, or any
    /// thread for a never-run task spawned from another thread.
    fn shutdown(self: Arc<Self>);
    /// Records the task's key in the owner's registry.
    fn set_registry_key(&self, key: usize);
}

/// What a task's storage holds: the future while it runs, then its result until it
/// is taken (`None` after). A union, so a task costs the larger of the two and no tag:
/// the `OUTPUT` bit says which one it holds.
union Stage<F: Future> {
    future: ManuallyDrop<F>,
    output: ManuallyDrop<Option<Result<F::Output, JoinError>>>,
}

/// A spawned task: 104 bytes with a 72-byte future (a 112-byte malloc chunk).
///
/// Who touches what (tokio's handshake, on the `state` bits):
/// - `stage` while it holds the future: the owner thread only (polls and the drop).
///   It holds the result on the owner thread before `COMPLETE` is set (release); from
///   then on exactly one side takes the result: the handle, after it saw `COMPLETE`
///   (acquire) while holding `JOIN_INTEREST`, or the owner, when setting `COMPLETE`
///   found `JOIN_INTEREST` already gone. Each side flips its bit in one atomic step,
///   so the two never both take it.
/// - The handle's waker is not in the task but in the owner's [`JoinWakers`], keyed by
///   the task's address (no other live task has it, and the handle keeps this one
///   alive). Only the handle inserts it, and only in the same critical section of that
///   map's lock in which it sets `JOIN_WAKER` with an update refused once `COMPLETE`
///   is set. So when the owner's setting of `COMPLETE` finds `JOIN_WAKER`, the insert
///   came first, and the owner's later lock of the map sees it: it takes the waker
///   out and wakes it. When the owner found `JOIN_WAKER` clear, the handle's update is
///   refused and the handle takes the result itself. A waiting handle that goes away
///   takes its waker out under the lock; whichever of the two comes second finds
///   nothing. Wakers are cloned, woken and dropped outside the lock (foreign code).
pub(crate) struct Task<F: Future> {
    state: AtomicU8,
    registry_key: AtomicU32,
    owner: Arc<WorkerShared>,
    stage: UnsafeCell<Stage<F>>,
}

// SAFETY: the future in `stage` is only touched on the owner worker thread (see the
// module doc; the one cross-thread drop is of a `Send` future). The result is taken
// by the `JoinHandle`, which is `Send` only when the output is, or dropped on the
// owner thread; `stage` changes hands between threads only through the `state` bits
// (see [`Task`]), with release/acquire ordering. The rest is atomics and an `Arc` of
// `Sync` shared state.
unsafe impl<F: Future> Send for Task<F> {}
// SAFETY: as for `Send`: what other threads reach through a shared reference is
// `state`, `owner`, and `stage` under the handshake of [`Task`].
unsafe impl<F: Future> Sync for Task<F> {}

impl<F: Future + 'static> Task<F> {
    /// Allocates a task that starts out scheduled (the caller enqueues it) and with a
    /// handle (the caller makes it).
    pub(crate) fn new(future: F, owner: Arc<WorkerShared>) -> Arc<Task<F>> {
        Arc::new(Task {
            state: AtomicU8::new(SCHEDULED | JOIN_INTEREST),
            registry_key: AtomicU32::new(UNREGISTERED),
            owner,
            stage: UnsafeCell::new(Stage {
                future: ManuallyDrop::new(future),
            }),
        })
    }

    /// Sets `SCHEDULED`; `true` when the caller must enqueue the task (it was neither
    /// queued nor finished).
    fn mark_scheduled(&self) -> bool {
        self.update(|s| (s & (SCHEDULED | COMPLETE) == 0).then_some(s | SCHEDULED))
            .is_ok()
    }

    /// Applies `f` to the state until it sticks, or until `f` refuses (`None`, state
    /// unchanged). Returns the state it replaced (`Err`: the one `f` refused).
    fn update(&self, f: impl Fn(u8) -> Option<u8>) -> Result<u8, u8> {
        self.state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, f)
    }

    /// Puts the task in its owner's run queue: this reference moves into the queue,
    /// so a wake by value costs no reference-count traffic.
    fn enqueue(self: Arc<Self>) {
        let mut task = Some(self);
        context::with_core(|core| {
            if let Some(t) = task.take_if(|t| Arc::ptr_eq(&core.shared, &t.owner)) {
                core.run_queue.borrow_mut().push_back(t);
            }
        });
        if let Some(t) = task {
            // Woken from another thread: the owner must stay reachable after `t` moves
            // into the message.
            let owner = t.owner.clone();
            owner.push_remote(Remote::Wake(t));
        }
    }

    /// Sets `SCHEDULED` and enqueues the task, unless it is queued or finished already.
    fn schedule(self: &Arc<Self>) {
        if self.mark_scheduled() {
            self.clone().enqueue();
        }
    }

    /// Drops the future, stores the result and wakes the handle. Owner thread only
    /// (or the one thread that owns a never-run remote spawn), never during a poll,
    /// and only while not complete.
    fn finish(&self, result: Result<F::Output, JoinError>, core: Option<&Core>) {
        let stage = self.stage.get();
        // SAFETY: the caller's contract: the owner thread, no poll running, and not
        // `COMPLETE` (so `OUTPUT` is clear: the union holds the future, dropped once
        // here, and the handle does not look at it).
        let dropped = catch_unwind(AssertUnwindSafe(|| unsafe {
            ManuallyDrop::drop(&mut (*stage).future)
        }));
        // SAFETY: as above; the future is gone (a panicking drop has still ended).
        unsafe { (*stage).output = ManuallyDrop::new(None) };
        self.state.fetch_or(OUTPUT, Ordering::Relaxed);
        let result = match dropped {
            Ok(()) => result,
            Err(p) => Err(JoinError::Panic(p)),
        };
        if let Some(core) = core {
            let key = self.registry_key.swap(UNREGISTERED, Ordering::Relaxed);
            if key != UNREGISTERED {
                // Must not drop the registry's Arc while the borrow is held: dropping
                // the last reference runs `Task::drop`.
                let removed = core.tasks.borrow_mut().try_remove(key as usize);
                drop(removed);
            }
        }
        // SAFETY: as above; dropping the future (which may drop the task's own handle)
        // has not set `COMPLETE` either.
        unsafe { *(*stage).output = Some(result) };
        // Release: the result is visible to whoever sees `COMPLETE`.
        let prev = self.state.fetch_or(COMPLETE, Ordering::AcqRel);
        if prev & JOIN_INTEREST == 0 {
            // SAFETY: the handle was gone before `COMPLETE`, so it never takes the
            // result: it is the owner's, dropped here on the owner thread.
            drop(unsafe { (*(*stage).output).take() });
        } else if prev & JOIN_WAKER != 0 {
            // The handle inserted its waker before it set `JOIN_WAKER` (see [`Task`]);
            // it may have taken it back since (going away).
            if let Some(w) = self.join_wakers().take(self.id()) {
                w.wake();
            }
        }
    }

    /// The task's key in its owner's [`JoinWakers`].
    fn id(&self) -> usize {
        std::ptr::from_ref(self).addr()
    }

    fn join_wakers(&self) -> &JoinWakers {
        &self.owner.join_wakers
    }

    /// Keeps `waker` for the task to wake at completion; `false` if the task completed
    /// first (the waker is then not kept). Handle only.
    fn set_join_waker(&self, waker: &Waker) -> bool {
        let id = self.id();
        if self.state.load(Ordering::Acquire) & JOIN_WAKER != 0
            && self
                .join_wakers()
                .lock()
                .get(&id)
                .is_some_and(|kept| kept.will_wake(waker))
        {
            // Kept already; if the owner took it meanwhile, it is waking it.
            return true;
        }
        let waker = waker.clone();
        let mut map = self.join_wakers().lock();
        let set = self.update(|s| (s & COMPLETE == 0).then_some(s | JOIN_WAKER));
        let unused = match set {
            Ok(_) => map.insert(id, waker),
            Err(_) => Some(waker),
        };
        drop(map);
        drop(unused);
        set.is_ok()
    }
}

impl<F: Future + 'static> Runnable for Task<F> {
    fn run(self: Arc<Self>, core: &Core) {
        let prev = self.state.fetch_and(!SCHEDULED, Ordering::AcqRel);
        if prev & COMPLETE != 0 {
            return;
        }
        if prev & CANCELLED != 0 {
            self.finish(Err(JoinError::Cancelled), Some(core));
            return;
        }
        // SAFETY: the waker borrows the reference `self` holds instead of taking one of
        // its own: it is never dropped (`ManuallyDrop`), so it never gives back a count
        // it did not take, and `self` outlives it (both end with this call). Clones the
        // future makes, and wakes by value of those clones, count as usual.
        let waker = ManuallyDrop::new(Waker::from(unsafe { Arc::from_raw(Arc::as_ptr(&self)) }));
        let mut cx = Context::from_waker(&waker);
        let polled = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: owner thread and not complete, so the union holds the future
            // (only `finish` drops it, and then sets `COMPLETE`) and only this thread
            // touches it; it lives in the `Arc` allocation, never moved: pinned until
            // `finish` drops it after this poll.
            unsafe { Pin::new_unchecked(&mut *(*self.stage.get()).future) }.poll(&mut cx)
        }));
        match polled {
            Ok(Poll::Pending) => {}
            Ok(Poll::Ready(v)) => self.finish(Ok(v), Some(core)),
            Err(p) => self.finish(Err(JoinError::Panic(p)), Some(core)),
        }
    }

    fn shutdown(self: Arc<Self>) {
        // Whoever calls this owns the task exclusively (its worker, or the one thread
        // that took a never-run spawn out of the channel), so check-then-finish is safe.
        if self.state.load(Ordering::Acquire) & COMPLETE != 0 {
            return;
        }
        self.registry_key.store(UNREGISTERED, Ordering::Relaxed);
        self.finish(Err(JoinError::Cancelled), None);
    }

    fn set_registry_key(&self, key: usize) {
        // A key beyond `u32` (never reached) leaves the task to the shutdown drain.
        let key = u32::try_from(key).unwrap_or(UNREGISTERED);
        self.registry_key.store(key, Ordering::Relaxed);
    }
}

impl<F: Future + 'static> Wake for Task<F> {
    fn wake(self: Arc<Self>) {
        if self.mark_scheduled() {
            self.enqueue();
        }
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.schedule();
    }
}

impl<F: Future + 'static> Join<F::Output> for Task<F> {
    fn poll_join(&self, cx: &mut Context<'_>) -> Poll<Result<F::Output, JoinError>> {
        // When the waker is refused, the task completed meanwhile, as the refused
        // update saw (acquire).
        if self.state.load(Ordering::Acquire) & COMPLETE == 0 && self.set_join_waker(cx.waker()) {
            return Poll::Pending;
        }
        // SAFETY: `COMPLETE` was seen with acquire ordering while this handle holds
        // `JOIN_INTEREST`: the union holds the result (`OUTPUT` was set before), and
        // it is the handle's alone (see [`Task`]).
        match unsafe { (*(*self.stage.get()).output).take() } {
            Some(out) => Poll::Ready(out),
            // Taken by an earlier poll: a handle polled after it resolved.
            None => Poll::Pending,
        }
    }

    fn drop_handle(&self) {
        // Only this handle sets `JOIN_WAKER`, so it sees its own bit.
        if self.state.load(Ordering::Relaxed) & JOIN_WAKER != 0 {
            drop(self.join_wakers().take(self.id()));
        }
        let prev = self.state.fetch_and(!JOIN_INTEREST, Ordering::AcqRel);
        if prev & COMPLETE != 0 {
            // SAFETY: complete (acquire) while this handle held `JOIN_INTEREST`: the
            // union holds the result, and it is the handle's, dropped here on the
            // handle's thread (the owner thread when the output is not `Send`).
            drop(unsafe { (*(*self.stage.get()).output).take() });
        }
    }

    fn abort(self: Arc<Self>) {
        self.state.fetch_or(CANCELLED, Ordering::AcqRel);
        self.schedule();
    }

    fn is_complete(&self) -> bool {
        self.state.load(Ordering::Acquire) & COMPLETE != 0
    }
}

impl<F: Future> Drop for Task<F> {
    fn drop(&mut self) {
        let stage = self.stage.get_mut();
        if *self.state.get_mut() & OUTPUT != 0 {
            // SAFETY: `OUTPUT` is set once the union holds the output.
            unsafe { ManuallyDrop::drop(&mut stage.output) }
        } else {
            // SAFETY: `OUTPUT` is clear: the future was never dropped. This is the
            // owner thread, or a never-run task spawned from another thread, whose
            // future is `Send` (module doc).
            unsafe { ManuallyDrop::drop(&mut stage.future) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A future as large as the echo benchmark's connection task (its words are
    /// never read: only its size matters).
    struct Sized72(#[allow(dead_code)] [u64; 9]);

    impl Future for Sized72 {
        type Output = ();
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
            Poll::Ready(())
        }
    }

    #[test]
    fn a_task_with_a_72_byte_future_fits_a_112_byte_chunk() {
        assert_eq!(std::mem::size_of::<Sized72>(), 72);
        // The `Arc`'s two counts come on top; glibc adds an 8-byte header and rounds
        // up to 16: 16 + 88 + 8 = 112.
        assert_eq!(std::mem::size_of::<Task<Sized72>>(), 88);
    }
}
