//! A spawned task: one allocation holding the scheduling state, the future and the
//! result slot.
//!
//! Thread rules: the future is polled and dropped only on its owner worker thread. The
//! one exception is a task spawned from another thread that never reached its worker
//! (runtime gone): it is dropped wherever its last reference goes, which is sound
//! because `spawn_on` requires that future to be `Send`. Wakers may be used from any
//! thread; they only touch the atomic state and the owner's queues.

use super::join::{lock, Join, JoinError, JoinState};
use crate::runtime::context;
use crate::runtime::worker::{Core, Remote, WorkerShared};
use std::cell::UnsafeCell;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};

/// In a run queue (local or remote), or about to be.
const SCHEDULED: u8 = 1;
/// Finished: value, panic or cancellation stored; the future is gone.
const COMPLETE: u8 = 2;
/// `abort()` was called; the owner drops the future at the next run.
const CANCELLED: u8 = 4;

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

pub(crate) struct Task<F: Future> {
    state: AtomicU8,
    owner: Arc<WorkerShared>,
    registry_key: AtomicU32,
    future: UnsafeCell<Option<F>>,
    join: Mutex<JoinState<F::Output>>,
}

// SAFETY: `future` is only accessed by the owner worker thread (see the module doc; the
// one cross-thread drop is of a `Send` future). The output in `join` is taken either by
// the `JoinHandle`, which is `Send` only when the output is, or by the owner thread.
// Everything else is atomics, a mutex, and an `Arc` of `Sync` shared state.
unsafe impl<F: Future> Send for Task<F> {}
// SAFETY: as for `Send`: shared access from other threads is limited to `state`,
// `join` (mutex) and `owner`.
unsafe impl<F: Future> Sync for Task<F> {}

impl<F: Future + 'static> Task<F> {
    /// Allocates a task that starts out scheduled (the caller enqueues it).
    pub(crate) fn new(future: F, owner: Arc<WorkerShared>) -> Arc<Task<F>> {
        Arc::new(Task {
            state: AtomicU8::new(SCHEDULED),
            owner,
            registry_key: AtomicU32::new(UNREGISTERED),
            future: UnsafeCell::new(Some(future)),
            join: Mutex::new(JoinState::default()),
        })
    }

    /// Sets `SCHEDULED`; `true` when the caller must enqueue the task (it was neither
    /// queued nor finished).
    fn mark_scheduled(&self) -> bool {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            if s & (SCHEDULED | COMPLETE) != 0 {
                return false;
            }
            match self.state.compare_exchange_weak(
                s,
                s | SCHEDULED,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(actual) => s = actual,
            }
        }
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

    /// Drops the future, stores the result and wakes the handle. Owner thread only.
    fn finish(&self, result: Result<F::Output, JoinError>, core: Option<&Core>) {
        // SAFETY: owner thread (the caller's contract), and no poll is running: `run`
        // calls this after its poll returned.
        let future = unsafe { (*self.future.get()).take() };
        let result = match catch_unwind(AssertUnwindSafe(move || drop(future))) {
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
        let (waker, dropped) = {
            let mut st = lock(&self.join);
            let dropped = st.store(result);
            (st.waker.take(), dropped)
        };
        // Set only now, so `is_finished()` implies the result can be taken. No other
        // thread runs the task meanwhile: only the owner does, and it is here.
        self.state.fetch_or(COMPLETE, Ordering::AcqRel);
        drop(dropped);
        if let Some(w) = waker {
            w.wake();
        }
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
            // SAFETY: owner thread; the future lives in the `Arc` allocation and is never
            // moved out while `Some` except by `finish`, which runs after this poll.
            let slot = unsafe { &mut *self.future.get() };
            match slot.as_mut() {
                // SAFETY: see above: pinned in place until dropped.
                Some(f) => unsafe { Pin::new_unchecked(f) }.poll(&mut cx),
                None => Poll::Pending,
            }
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
    fn join_state(&self) -> MutexGuard<'_, JoinState<F::Output>> {
        lock(&self.join)
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
        // Reached with the future still present only for a never-run remote spawn;
        // tell a waiting handle instead of leaving it pending forever.
        if self.future.get_mut().is_some() {
            let st = self.join.get_mut().unwrap_or_else(|e| e.into_inner());
            if st.awaited() {
                drop(st.store(Err(JoinError::Cancelled)));
                if let Some(w) = st.waker.take() {
                    w.wake();
                }
            }
        }
    }
}
