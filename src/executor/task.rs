//! A spawned task: one allocation holding a [`Header`] (the task's vtable, a state
//! word packing the reference count with the state bits, the registry key and the
//! owner worker) and a stage that is first the future, then its result. Queues, the
//! registry and wakers hold it through a thin [`TaskRef`] (one word), and a waker of a
//! task is a data pointer plus one shared [`RawWakerVTable`], so other parts of the
//! runtime can recognise it and keep it in one word too ([`TaskRef::from_waker`]).
//!
//! Thread rules: the future is polled and dropped only on its owner worker thread. The
//! one exception is a task spawned from another thread that never reached its worker
//! (runtime gone): it is dropped wherever its last reference goes, which is sound
//! because `spawn_on` requires that future to be `Send`. Wakers may be used from any
//! thread; they only touch the state word and the owner's queues.
//!
//! One file on purpose (over 600 lines): the state-word handshake between the owner,
//! the handle and wakers (see [`Header`]) is only checkable when every side of it is
//! read together.

use super::join::JoinError;
use super::join_wakers::JoinWakers;
use super::scheduler::{Local, Remote, Shared};
use std::cell::UnsafeCell;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

/// In a run queue (local or remote), or about to be.
const SCHEDULED: u64 = 1;
/// Finished: the future is gone and the result is in the stage (or was dropped).
const COMPLETE: u64 = 2;
/// `abort()` was called; the owner drops the future at the next run.
const CANCELLED: u64 = 4;
/// The `JoinHandle` exists: the result is kept for it.
const JOIN_INTEREST: u64 = 8;
/// The owner's [`JoinWakers`] may hold a waker of the handle, for the task to wake.
/// Set only by the handle, while not `COMPLETE`, under that map's lock: see [`Header`].
const JOIN_WAKER: u64 = 16;
/// The future was dropped: `stage` holds the output. Set by the owner only, before
/// `COMPLETE`.
const OUTPUT: u64 = 32;

/// One reference in the state word: the count lives above the state bits.
const REF_ONE: u64 = 1 << 8;
/// An increment that finds this many references aborts, as `Arc`'s does past
/// `isize::MAX`: the count (56 bits) cannot wrap, and reaching this takes leaking
/// references in a loop (2^55 of them), never a program that keeps what it counts.
const MAX_REFS: u64 = 1 << 55;

/// Not in the owner's task registry (yet, or any more). Registry keys are `u32` (four
/// billion live tasks on one worker is beyond any memory), so the key is half a word.
pub(crate) const UNREGISTERED: u32 = u32::MAX;

/// The references counted in `state`.
fn refs(state: u64) -> u64 {
    state / REF_ONE
}

/// Whether an increment that found `state` would make too many references.
fn too_many_refs(state: u64) -> bool {
    refs(state) >= MAX_REFS
}

/// What a task's storage holds: the future while it runs, then its result until it
/// is taken (`None` after). A union, so a task costs the larger of the two and no tag:
/// the `OUTPUT` bit says which one it holds.
union Stage<F: Future> {
    future: ManuallyDrop<F>,
    output: ManuallyDrop<Option<Result<F::Output, JoinError>>>,
}

/// What differs between tasks of different futures, reached from the [`Header`].
struct VTable {
    /// Polls the task once. Owner thread only; the caller holds a reference.
    poll: unsafe fn(NonNull<Header>, &Local),
    /// Drops the future and completes the task as cancelled, unless complete. Owner
    /// thread only, or any thread for a never-run task spawned from another thread.
    shutdown: unsafe fn(NonNull<Header>),
    /// Moves the result out (into a `Poll<Result<F::Output, JoinError>>` the second
    /// pointer names). The handle only, after it saw `COMPLETE` while holding
    /// `JOIN_INTEREST`.
    read_output: unsafe fn(NonNull<Header>, NonNull<()>),
    /// Drops the result. Same conditions as `read_output`.
    drop_output: unsafe fn(NonNull<Header>),
    /// Drops the stage and the header and frees the allocation: the last reference.
    dealloc: unsafe fn(NonNull<Header>),
}

/// The type-independent part of a task, at the start of its allocation: 32 bytes, so
/// a task with a 72-byte future is a 104-byte request (a 112-byte malloc chunk).
///
/// Who touches what (tokio's handshake, on the state bits of `state`):
/// - The reference count shares `state` with the bits: a [`TaskRef`] (queues, the
///   registry, the handle, each waker) owns one. Increments are relaxed (a new
///   reference is made from an existing one); decrements are acquire-release, and the
///   one that takes the count to zero frees the task, after every other side's last
///   access (each of which came before its own decrement).
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
/// - `registry_key`: the owner thread only (relaxed atomics, for `Sync`).
#[repr(C)]
pub(crate) struct Header {
    vtable: &'static VTable,
    state: AtomicU64,
    registry_key: AtomicU32,
    owner: Arc<Shared>,
}

/// A task's allocation: the header first (`repr(C)`), so a pointer to the header is
/// a pointer to the cell.
#[repr(C)]
struct Cell<F: Future> {
    header: Header,
    stage: UnsafeCell<Stage<F>>,
}

/// One counted reference to a task: one word.
pub(crate) struct TaskRef(NonNull<Header>);

// SAFETY: the future in `stage` is only touched on the owner worker thread (see the
// module doc; the one cross-thread drop is of a `Send` future). The result is taken
// by the `JoinHandle`, which is `Send` only when the output is, or dropped on the
// owner thread; `stage` changes hands between threads only through the state bits
// (see [`Header`]), with release/acquire ordering. The rest is atomics and an `Arc` of
// `Sync` shared state.
unsafe impl Send for TaskRef {}
// SAFETY: as for `Send`: what a shared reference reaches is the header's atomics and
// `owner`, and `stage` under the handshake of [`Header`].
unsafe impl Sync for TaskRef {}

impl TaskRef {
    /// Allocates a task that starts out scheduled (the caller enqueues it) and with a
    /// handle (the caller makes it): two references, returned as (queue, handle).
    pub(crate) fn new<F: Future + 'static>(future: F, owner: Arc<Shared>) -> (TaskRef, TaskRef) {
        let cell = Box::new(Cell {
            header: Header {
                vtable: &VTable {
                    poll: poll::<F>,
                    shutdown: shutdown::<F>,
                    read_output: read_output::<F>,
                    drop_output: drop_output::<F>,
                    dealloc: dealloc::<F>,
                },
                state: AtomicU64::new((2 * REF_ONE) | SCHEDULED | JOIN_INTEREST),
                registry_key: AtomicU32::new(UNREGISTERED),
                owner,
            },
            stage: UnsafeCell::new(Stage {
                future: ManuallyDrop::new(future),
            }),
        });
        let ptr = NonNull::from(Box::leak(cell)).cast::<Header>();
        (TaskRef(ptr), TaskRef(ptr))
    }

    fn header(&self) -> &Header {
        // SAFETY: this reference keeps the allocation alive; the header is only read
        // through shared references (its mutable parts are atomics).
        unsafe { self.0.as_ref() }
    }

    /// Polls the task once, on its owner's thread (`local`). Consumes the queue's
    /// reference.
    pub(crate) fn run(self, local: &Local) {
        // SAFETY: the owner thread (the caller's `local` is the task's: tasks are only
        // queued on their owner), and `self` holds a reference through the call.
        unsafe { (self.header().vtable.poll)(self.0, local) }
    }

    /// Drops the future and completes the task as cancelled. Its owner's thread, or
    /// the one thread that took a never-run spawn out of the channel.
    pub(crate) fn shutdown(self) {
        // SAFETY: the caller's contract, and `self` holds a reference.
        unsafe { (self.header().vtable.shutdown)(self.0) }
    }

    /// Records the task's key in the owner's registry. Owner thread only.
    pub(crate) fn set_registry_key(&self, key: u32) {
        self.header().registry_key.store(key, Ordering::Relaxed);
    }

    /// The pointer, carrying this reference (given back by [`from_raw`](Self::from_raw)).
    /// 8-byte aligned.
    pub(crate) fn into_raw(self) -> NonNull<()> {
        ManuallyDrop::new(self).0.cast()
    }

    /// The reference [`into_raw`](Self::into_raw) made `ptr` of.
    ///
    /// # Safety
    /// `ptr` came from `into_raw` (or is a task waker's data pointer that owns a
    /// reference), and each such reference is given back once.
    pub(crate) unsafe fn from_raw(ptr: NonNull<()>) -> TaskRef {
        TaskRef(ptr.cast())
    }

    /// Wakes the task, consuming this reference.
    pub(crate) fn wake(self) {
        if self.header().mark_scheduled() {
            self.enqueue();
        }
    }

    /// Wakes the task.
    pub(crate) fn wake_by_ref(&self) {
        if self.header().mark_scheduled() {
            self.clone().enqueue();
        }
    }

    /// Puts the task in its owner's run queue: this reference moves into the queue,
    /// so a wake by value costs no reference-count traffic.
    fn enqueue(self) {
        let mut task = Some(self);
        super::with_local(|local| {
            if let Some(t) = task.take_if(|t| Arc::ptr_eq(&local.shared, &t.header().owner)) {
                local.run_queue.borrow_mut().push_back(t);
            }
        });
        if let Some(t) = task {
            // Woken from another thread: the owner must stay reachable after `t` moves
            // into the message.
            let owner = t.header().owner.clone();
            owner.push_remote(Remote::Wake(t));
        }
    }

    /// The handle's poll: the result once the task finished; otherwise `cx`'s waker is
    /// kept to be woken then.
    ///
    /// # Safety
    /// The caller is the task's `JoinHandle<T>` (holding `JOIN_INTEREST`), and `T` is
    /// the output of the task's future.
    pub(crate) unsafe fn poll_join<T>(&self, cx: &mut Context<'_>) -> Poll<Result<T, JoinError>> {
        let h = self.header();
        // When the waker is refused, the task completed meanwhile, as the refused
        // update saw (acquire).
        if h.state.load(Ordering::Acquire) & COMPLETE == 0 && h.set_join_waker(cx.waker()) {
            return Poll::Pending;
        }
        let mut out = Poll::Pending;
        // SAFETY: `COMPLETE` was seen with acquire ordering while this handle holds
        // `JOIN_INTEREST`: the result is the handle's (see [`Header`]), and `out` has
        // the type `read_output` writes (the caller's contract on `T`).
        unsafe { (h.vtable.read_output)(self.0, NonNull::from(&mut out).cast()) };
        out
    }

    /// The handle is gone: its result (if already made) is dropped here, on the
    /// handle's thread, and otherwise by the task.
    ///
    /// # Safety
    /// The caller is the task's `JoinHandle`, going away (once).
    pub(crate) unsafe fn drop_handle(&self) {
        let h = self.header();
        // Only the handle sets `JOIN_WAKER`, so it sees its own bit.
        if h.state.load(Ordering::Relaxed) & JOIN_WAKER != 0 {
            drop(h.join_wakers().take(h.id()));
        }
        let prev = h.state.fetch_and(!JOIN_INTEREST, Ordering::AcqRel);
        if prev & COMPLETE != 0 {
            // SAFETY: complete (acquire) while this handle held `JOIN_INTEREST`: the
            // result is the handle's, dropped here on the handle's thread (the owner
            // thread when the output is not `Send`).
            unsafe { (h.vtable.drop_output)(self.0) }
        }
    }

    /// Requests cancellation: the owner drops the future at the task's next run.
    pub(crate) fn abort(&self) {
        self.header().state.fetch_or(CANCELLED, Ordering::AcqRel);
        self.wake_by_ref();
    }

    /// Whether the task has finished.
    pub(crate) fn is_complete(&self) -> bool {
        self.header().state.load(Ordering::Acquire) & COMPLETE != 0
    }

    /// The task's name in a state dump.
    pub(crate) fn name(&self) -> TaskName {
        self.header().name()
    }

    /// Whether the task is queued to run (woken and not yet polled).
    pub(crate) fn is_scheduled(&self) -> bool {
        self.header().state.load(Ordering::Relaxed) & SCHEDULED != 0
    }
}

/// A task as a state dump names it: its worker and its key in that worker's registry
/// (`u32::MAX` once it has left the registry).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct TaskName {
    pub(crate) worker: usize,
    pub(crate) key: u32,
}

/// The task `waker` wakes, if it is a zerorx task's waker.
pub(crate) fn task_of(waker: &Waker) -> Option<TaskName> {
    if !is_task_waker(waker) {
        return None;
    }
    // SAFETY: a task waker's data pointer is a live `TaskRef`'s header, kept alive by
    // the reference the waker owns for as long as `waker` is borrowed; only its
    // atomics and `owner` are read.
    let header = unsafe { &*waker.data().cast::<Header>() };
    Some(header.name())
}

impl Clone for TaskRef {
    fn clone(&self) -> TaskRef {
        let prev = self.header().state.fetch_add(REF_ONE, Ordering::Relaxed);
        if too_many_refs(prev) {
            std::process::abort();
        }
        TaskRef(self.0)
    }
}

impl Drop for TaskRef {
    fn drop(&mut self) {
        let prev = self.header().state.fetch_sub(REF_ONE, Ordering::AcqRel);
        if refs(prev) == 1 {
            // SAFETY: the last reference: nobody else reaches the task any more, and
            // every other side's accesses came before its decrement, which this one's
            // acquire ordering sees.
            unsafe { (self.header().vtable.dealloc)(self.0) }
        }
    }
}

impl Header {
    fn name(&self) -> TaskName {
        TaskName {
            worker: self.owner.index,
            // Relaxed: written by the owner thread only; a dump on another thread may
            // see a key a moment old, which names the task all the same.
            key: self.registry_key.load(Ordering::Relaxed),
        }
    }

    /// Sets `SCHEDULED`; `true` when the caller must enqueue the task (it was neither
    /// queued nor finished).
    fn mark_scheduled(&self) -> bool {
        self.update(|s| (s & (SCHEDULED | COMPLETE) == 0).then_some(s | SCHEDULED))
            .is_ok()
    }

    /// Applies `f` to the state until it sticks, or until `f` refuses (`None`, state
    /// unchanged). Returns the state it replaced (`Err`: the one `f` refused). `f`
    /// must leave the reference count alone.
    fn update(&self, f: impl Fn(u64) -> Option<u64>) -> Result<u64, u64> {
        self.state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, f)
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

/// The one waker vtable of every task: its data pointer is a [`TaskRef`]'s.
static WAKER: RawWakerVTable =
    RawWakerVTable::new(waker_clone, waker_wake, waker_wake_by_ref, waker_drop);

/// The vtable of every task waker, for the driver to keep task wakers in one word
/// (`driver::slim_waker::recognise_task_wakers`).
pub(crate) fn waker_vtable() -> &'static RawWakerVTable {
    &WAKER
}

fn is_task_waker(waker: &Waker) -> bool {
    std::ptr::eq(waker.vtable(), &WAKER)
}

/// # Safety (all four)
/// `ptr` is a task waker's data pointer: a live `TaskRef`'s, owning one reference.
unsafe fn waker_clone(ptr: *const ()) -> RawWaker {
    // SAFETY: the waker's reference keeps the task alive; the clone counts its own.
    let t = ManuallyDrop::new(unsafe { TaskRef::from_raw(NonNull::new_unchecked(ptr.cast_mut())) });
    RawWaker::new(
        ManuallyDrop::into_inner(t.clone()).into_raw().as_ptr(),
        &WAKER,
    )
}

unsafe fn waker_wake(ptr: *const ()) {
    // SAFETY: waking by value consumes the waker's reference.
    unsafe { TaskRef::from_raw(NonNull::new_unchecked(ptr.cast_mut())) }.wake()
}

unsafe fn waker_wake_by_ref(ptr: *const ()) {
    // SAFETY: borrowed: the waker keeps its reference (never dropped here).
    let t = ManuallyDrop::new(unsafe { TaskRef::from_raw(NonNull::new_unchecked(ptr.cast_mut())) });
    t.wake_by_ref()
}

unsafe fn waker_drop(ptr: *const ()) {
    // SAFETY: the waker's reference, given back once.
    drop(unsafe { TaskRef::from_raw(NonNull::new_unchecked(ptr.cast_mut())) })
}

/// The cell a header pointer belongs to.
///
/// # Safety
/// `ptr` is the header of a live `Cell<F>` (the vtable's functions of `F` are only
/// reached through such a header).
unsafe fn cell<'a, F: Future>(ptr: NonNull<Header>) -> &'a Cell<F> {
    // SAFETY: the caller's contract; the header is the cell's first field (`repr(C)`).
    unsafe { ptr.cast::<Cell<F>>().as_ref() }
}

/// Polls the task once: [`VTable::poll`].
///
/// # Safety
/// As [`VTable::poll`]; `ptr` is a `Cell<F>`'s header.
unsafe fn poll<F: Future + 'static>(ptr: NonNull<Header>, local: &Local) {
    // SAFETY: the caller's contract.
    let cell = unsafe { cell::<F>(ptr) };
    let prev = cell.header.state.fetch_and(!SCHEDULED, Ordering::AcqRel);
    if prev & COMPLETE != 0 {
        return;
    }
    if prev & CANCELLED != 0 {
        // SAFETY: owner thread, no poll running, not complete.
        unsafe { finish(cell, Err(JoinError::Cancelled), Some(local)) };
        return;
    }
    // The waker borrows the caller's reference instead of taking one of its own: it is
    // never dropped (`ManuallyDrop`), so it never gives back a count it did not take,
    // and the caller's reference outlives it (both end with this call). Clones the
    // future makes, and wakes by value of those clones, count as usual.
    // SAFETY: the data pointer is the task's header, whose reference the caller holds.
    let waker =
        ManuallyDrop::new(unsafe { Waker::from_raw(RawWaker::new(ptr.as_ptr().cast(), &WAKER)) });
    let mut cx = Context::from_waker(&waker);
    let polled = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: owner thread and not complete, so the union holds the future (only
        // `finish` drops it, and then sets `COMPLETE`) and only this thread touches
        // it; it lives in the task's allocation, never moved: pinned until `finish`
        // or `dealloc` drops it.
        unsafe { Pin::new_unchecked(&mut *(*cell.stage.get()).future) }.poll(&mut cx)
    }));
    let result = match polled {
        Ok(Poll::Pending) => return,
        Ok(Poll::Ready(v)) => Ok(v),
        Err(p) => Err(JoinError::Panic(p)),
    };
    // SAFETY: owner thread, the poll has ended, and not complete (it was before the
    // poll, and only `finish` sets `COMPLETE`).
    unsafe { finish(cell, result, Some(local)) }
}

/// Drops the future, stores the result, leaves the registry and wakes the handle.
///
/// # Safety
/// Owner thread (or the one thread that owns a never-run remote spawn), never during
/// a poll, and only while not complete. The caller holds a reference.
unsafe fn finish<F: Future>(
    cell: &Cell<F>,
    result: Result<F::Output, JoinError>,
    local: Option<&Local>,
) {
    let h = &cell.header;
    let stage = cell.stage.get();
    // SAFETY: the caller's contract: the owner thread, no poll running, and not
    // `COMPLETE` (so `OUTPUT` is clear: the union holds the future, dropped once here,
    // and the handle does not look at it).
    let dropped = catch_unwind(AssertUnwindSafe(|| unsafe {
        ManuallyDrop::drop(&mut (*stage).future)
    }));
    // SAFETY: as above; the future is gone (a panicking drop has still ended).
    unsafe { (*stage).output = ManuallyDrop::new(None) };
    h.state.fetch_or(OUTPUT, Ordering::Relaxed);
    let result = match dropped {
        Ok(()) => result,
        Err(p) => Err(JoinError::Panic(p)),
    };
    let key = h.registry_key.swap(UNREGISTERED, Ordering::Relaxed);
    if let (Some(local), true) = (local, key != UNREGISTERED) {
        // Must not drop the registry's reference while the borrow is held: dropping
        // the last reference frees the task. (The caller holds one, too.)
        let removed = local.tasks.borrow_mut().remove(key);
        drop(removed);
    }
    // SAFETY: as above; dropping the future (which may drop the task's own handle) has
    // not set `COMPLETE` either.
    unsafe { *(*stage).output = Some(result) };
    // Release: the result is visible to whoever sees `COMPLETE`.
    let prev = h.state.fetch_or(COMPLETE, Ordering::AcqRel);
    if prev & JOIN_INTEREST == 0 {
        // SAFETY: the handle was gone before `COMPLETE`, so it never takes the result:
        // it is the owner's, dropped here on the owner thread.
        drop(unsafe { (*(*stage).output).take() });
    } else if prev & JOIN_WAKER != 0 {
        // The handle inserted its waker before it set `JOIN_WAKER` (see [`Header`]);
        // it may have taken it back since (going away).
        if let Some(w) = h.join_wakers().take(h.id()) {
            w.wake();
        }
    }
}

/// [`VTable::shutdown`].
///
/// # Safety
/// As [`VTable::shutdown`]; `ptr` is a `Cell<F>`'s header.
unsafe fn shutdown<F: Future + 'static>(ptr: NonNull<Header>) {
    // SAFETY: the caller's contract.
    let cell = unsafe { cell::<F>(ptr) };
    // Whoever calls this owns the task exclusively (its worker, or the one thread that
    // took a never-run spawn out of the channel), so check-then-finish is safe.
    if cell.header.state.load(Ordering::Acquire) & COMPLETE != 0 {
        return;
    }
    // The registry is being drained (or was never joined): nothing to remove.
    cell.header
        .registry_key
        .store(UNREGISTERED, Ordering::Relaxed);
    // SAFETY: the caller's contract; not complete.
    unsafe { finish(cell, Err(JoinError::Cancelled), None) };
}

/// [`VTable::read_output`].
///
/// # Safety
/// As [`VTable::read_output`]; `ptr` is a `Cell<F>`'s header and `out` names a
/// `Poll<Result<F::Output, JoinError>>`.
unsafe fn read_output<F: Future>(ptr: NonNull<Header>, out: NonNull<()>) {
    // SAFETY: the caller's contract.
    let cell = unsafe { cell::<F>(ptr) };
    // SAFETY: complete, seen by the handle: the union holds the result (`OUTPUT` was
    // set before `COMPLETE`), and it is the handle's alone (see [`Header`]).
    let taken = unsafe { (*(*cell.stage.get()).output).take() };
    // SAFETY: the caller's contract on `out`'s type; it is a live `&mut`.
    let out = unsafe { out.cast::<Poll<Result<F::Output, JoinError>>>().as_mut() };
    // Taken by an earlier poll: a handle polled after it resolved stays pending.
    if let Some(v) = taken {
        *out = Poll::Ready(v);
    }
}

/// [`VTable::drop_output`].
///
/// # Safety
/// As [`VTable::drop_output`]; `ptr` is a `Cell<F>`'s header.
unsafe fn drop_output<F: Future>(ptr: NonNull<Header>) {
    // SAFETY: the caller's contract.
    let cell = unsafe { cell::<F>(ptr) };
    // SAFETY: as in `read_output`: the result is the handle's.
    drop(unsafe { (*(*cell.stage.get()).output).take() });
}

/// [`VTable::dealloc`].
///
/// # Safety
/// The last reference to a `Cell<F>` whose header `ptr` is.
unsafe fn dealloc<F: Future>(ptr: NonNull<Header>) {
    // SAFETY: the last reference: `TaskRef::new` made the allocation with
    // `Box::leak` of a `Cell<F>`, and nothing else reaches it any more.
    let mut cell = unsafe { Box::from_raw(ptr.cast::<Cell<F>>().as_ptr()) };
    let stage = cell.stage.get_mut();
    if *cell.header.state.get_mut() & OUTPUT != 0 {
        // SAFETY: `OUTPUT` is set once the union holds the output.
        unsafe { ManuallyDrop::drop(&mut stage.output) }
    } else {
        // SAFETY: `OUTPUT` is clear: the future was never dropped. This is the owner
        // thread, or a never-run task spawned from another thread, whose future is
        // `Send` (module doc).
        unsafe { ManuallyDrop::drop(&mut stage.future) }
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
        assert_eq!(std::mem::size_of::<Header>(), 32);
        // glibc adds an 8-byte header and rounds up to 16: 104 + 8 = 112.
        assert_eq!(std::mem::size_of::<Cell<Sized72>>(), 104);
        assert_eq!(std::mem::size_of::<TaskRef>(), 8);
        assert_eq!(std::mem::size_of::<Option<TaskRef>>(), 8);
    }

    #[test]
    fn the_reference_count_cannot_wrap() {
        let state = |n: u64| (n * REF_ONE) | JOIN_INTEREST | SCHEDULED;
        assert_eq!(refs(state(3)), 3, "the state bits are not counted");
        assert!(!too_many_refs(state(MAX_REFS - 1)));
        assert!(too_many_refs(state(MAX_REFS)));
        // The largest count an increment can reach still fits the word.
        assert!(MAX_REFS.checked_mul(REF_ONE).is_some());
        assert_eq!(refs(state(MAX_REFS)), MAX_REFS);
    }
}
