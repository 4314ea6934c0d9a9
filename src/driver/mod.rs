//! The proactor of one worker: its ring, the slab of in-flight ops, the wake-up
//! request, and one `io_uring_enter` per loop turn.
//!
//! Everything here is owned by one worker thread and reached through
//! `RefCell<Driver>` in that worker's `Core`; nothing is shared across threads except
//! the eventfd (through `Arc`) and the counters.
//!
//! Ops implement [`OpCode`] (read its safety contract); the runtime's op futures
//! (`runtime::op::Op`, `runtime::multishot::MultiOp`) submit them and take their
//! completions. The driver is internal; the benchmarks reach it
//! through `zerorx::bench_support`:
//!
//! ```
//! use zerorx::bench_support::{Op, OpCode};
//!
//! struct Nop;
//!
//! // SAFETY: a NOP references no memory and no fd.
//! unsafe impl OpCode for Nop {
//!     fn create_entry(&mut self) -> io_uring::squeue::Entry {
//!         io_uring::opcode::Nop::new().build()
//!     }
//! }
//!
//! let rt = zerorx::Runtime::builder().threads(1).build()?;
//! let res = rt.block_on(async { Op::submit(Nop)?.await.map(|(c, _)| c.res) })?;
//! assert_eq!(res, 0);
//! # Ok::<(), std::io::Error>(())
//! ```

mod cancel;
mod detached;
mod flight;
pub(crate) mod inspect;
pub(crate) mod op;
pub(crate) mod peek_waker;
pub(crate) mod queue;
pub(crate) mod ring;
pub(crate) mod slab;
pub(crate) mod slim_waker;
mod spare;
#[cfg(test)]
mod tests;

pub use detached::DetachedCx;
pub(crate) use flight::FlightKind;
pub use op::OpCode;
pub(crate) use op::LANDED_COPIED;
pub use ring::{Completion, RingFlags};

use crate::metrics::{add_owned, WorkerMetrics};
use io_uring::{opcode, squeue, types};
use op::{Landed, Lifecycle, OpBox, OpData, OpSlot};
use ring::{Ring, RingConfig};
use slab::{reserved, GenSlab, Key};
use slim_waker::SlimWaker;
use spare::SpareBoxes;
use std::io;
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// The [`DetachedCx`] of driver `$d`, from its fields (a method would borrow the whole
/// driver, and the caller holds an op's slot of it).
macro_rules! detached_cx {
    ($d:ident) => {
        DetachedCx::new(
            &mut $d.wakers,
            &$d.metrics,
            &mut $d.spare,
            &mut $d.deferred,
            $d.deferred_batch,
        )
    };
}

/// The eventfd read kept armed in the ring so a write from another thread completes
/// it and ends the worker's wait.
struct WakeRead {
    fd: Arc<OwnedFd>,
    /// Kernel-written while armed: boxed so its address is stable, and leaked rather
    /// than freed if shutdown cannot confirm the read ended.
    buf: Box<u64>,
    armed: bool,
}

pub(crate) struct Driver {
    ring: Ring,
    ops: GenSlab<OpSlot>,
    wake: Option<WakeRead>,
    /// Boxes of finished single-shot ops, reused by the next ones.
    pub(crate) spare: SpareBoxes,
    /// Wakers of the ops completed this turn; woken by the loop after the driver
    /// borrow ends, because waking may re-enter the driver.
    wakers: Vec<Waker>,
    /// Multishot ops that asked to stop ([`OpCode::take_stop_request`]) while their
    /// completions were dispatched; cancelled once reaping is done, so a full SQ cannot
    /// make dispatching re-enter itself out of kernel order.
    stops: Vec<Key>,
    /// Detached ops that asked to be submitted again while their completions were
    /// dispatched; pushed once reaping is done, for the same reason as `stops`.
    again: Vec<Key>,
    /// Detached ops to submit with the next kernel entry ([`defer_detached`]), and
    /// how many times such a batch was submitted (a place in it is valid for one).
    ///
    /// [`defer_detached`]: Self::defer_detached
    deferred: Vec<OpData>,
    deferred_batch: u64,
    /// Asked by a layer above for the start of the next turn, before the deferred ops
    /// are submitted ([`before_submit`](Self::before_submit)): the queued sends that may
    /// go out without an op.
    before_submit: Option<fn(&mut Driver)>,
    /// A send went at once in a task since the last turn ([`take_at_once`](Self::take_at_once)).
    at_once_taken: bool,
    /// Completions reaped this turn, and how many of them were detached ops ending
    /// with nobody to wake ([`quiet_turn`](Self::quiet_turn)).
    reaped: u32,
    quiet: u32,
    metrics: Arc<WorkerMetrics>,
    shutting_down: bool,
    /// ZCRX event CQEs reaped this turn (their `res`, the event type), for the worker.
    zcrx_events: Vec<i32>,
    /// The coarse clock's stamp for ops submitted this turn (read at the first submit
    /// after a kernel entry, so a turn that submits many ops reads it once).
    stamp: Option<u32>,
    /// Requests a layer above keeps outside the slab ([`flight`]).
    flights: flight::Flights,
}

impl Driver {
    /// Builds the ring on the calling thread. With `eventfd`, arms a read on it.
    pub(crate) fn new(
        cfg: &RingConfig,
        eventfd: Option<Arc<OwnedFd>>,
        metrics: Arc<WorkerMetrics>,
    ) -> io::Result<Driver> {
        let ring = Ring::new(cfg)?;
        let mut d = Driver {
            ring,
            ops: GenSlab::default(),
            wake: eventfd.map(|fd| WakeRead {
                fd,
                buf: Box::new(0),
                armed: false,
            }),
            spare: SpareBoxes::default(),
            wakers: Vec::new(),
            stops: Vec::new(),
            again: Vec::new(),
            deferred: Vec::new(),
            deferred_batch: 0,
            before_submit: None,
            at_once_taken: false,
            reaped: 0,
            quiet: 0,
            metrics,
            shutting_down: false,
            zcrx_events: Vec::new(),
            stamp: None,
            flights: flight::Flights::default(),
        };
        d.arm_wake()?;
        Ok(d)
    }

    pub(crate) fn ring_fd(&self) -> std::os::fd::RawFd {
        self.ring.fd()
    }

    pub(crate) fn with_submitter<R>(&mut self, f: impl FnOnce(&io_uring::Submitter<'_>) -> R) -> R {
        self.ring.with_submitter(f)
    }

    pub(crate) fn ring_flags(&self) -> RingFlags {
        self.ring.flags()
    }

    /// Ops in the slab and flights in the air.
    pub(crate) fn ops_in_flight(&self) -> usize {
        self.ops.len() + self.flights.in_air as usize
    }

    /// Dispatches a completion as if the kernel had posted it (tests of stale CQEs).
    #[cfg(test)]
    pub(crate) fn dispatch_for_test(&mut self, c: Completion) {
        self.dispatch(c)
    }

    fn arm_wake(&mut self) -> io::Result<()> {
        let Some(w) = self.wake.as_mut() else {
            return Ok(());
        };
        if w.armed || self.shutting_down {
            return Ok(());
        }
        let entry = opcode::Read::new(
            types::Fd(w.fd.as_raw_fd()),
            (&mut *w.buf as *mut u64).cast(),
            8,
        )
        .build()
        .user_data(reserved::WAKE);
        w.armed = true;
        // SAFETY: the buffer is the boxed `buf`, kept (or leaked) until the read's CQE;
        // the eventfd is kept open by the `Arc` held here.
        unsafe { self.push(&entry) }
    }

    /// Queues one SQE, submitting first if the SQ is full.
    ///
    /// # Safety
    /// Memory and fds the entry refers to must stay valid until its final completion.
    pub(crate) unsafe fn push(&mut self, entry: &squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: forwarded from the caller's contract.
            if unsafe { self.ring.try_push(entry) } {
                return Ok(());
            }
            add_owned(&self.metrics.sq_full, 1);
            let n = self.ring.enter(false, None)?;
            add_owned(&self.metrics.enter_calls, 1);
            add_owned(&self.metrics.sqes_submitted, n as u64);
            if n == 0 {
                // The kernel took nothing (EBUSY/EAGAIN: CQ backed up). Reap to make
                // room; the completions are dispatched as usual.
                self.reap_and_dispatch();
            }
        }
    }

    /// Puts `data` in the slab and queues its SQE.
    pub(crate) fn submit(&mut self, data: OpData, lifecycle: Lifecycle) -> io::Result<Key> {
        let key = self.ops.insert(OpSlot { lifecycle, data });
        let entry = match self.ops.get_mut(key).map(|slot| slot.data.create_entry()) {
            Some(Some(entry)) => entry.user_data(key.user_data()),
            _ => {
                self.ops.remove(key);
                return Err(io::Error::other("op slab lost a fresh entry"));
            }
        };
        let stamp = self.turn_stamp();
        self.ops
            .set_meta(key, slab::Meta::new(entry.get_opcode() as u8, stamp));
        // SAFETY: the entry points into the op data (its box, or its socket's
        // allocation), which the slab owns until the op's final completion (the
        // OpCode contract).
        if let Err(e) = unsafe { self.push(&entry) } {
            self.ops.remove(key);
            return Err(e);
        }
        Ok(key)
    }

    fn push_cancel(&mut self, key: Key) {
        self.push_cancel_of(key.user_data());
    }

    /// Queues an ASYNC_CANCEL of the request with user data `target`.
    fn push_cancel_of(&mut self, target: u64) {
        let entry = opcode::AsyncCancel::new(target)
            .build()
            .user_data(reserved::CANCEL);
        // SAFETY: ASYNC_CANCEL carries only the target's user_data, no memory. If the
        // push fails the ring is unusable and shutdown will leak the op instead.
        let _ = unsafe { self.push(&entry) };
    }

    /// Cancels the multishot ops still streaming whose SQE had `opcode` and for which
    /// `pick` (given the op's data) says so, leaving each to its future, which sees the
    /// `-ECANCELED` final completion as usual (unlike [`drop_op`](Self::drop_op), which
    /// abandons the op). Returns how many.
    pub(crate) fn cancel_streaming(
        &mut self,
        opcode: u8,
        mut pick: impl FnMut(&mut OpData) -> bool,
    ) -> usize {
        let keys: Vec<Key> = self
            .ops
            .iter_with_meta()
            .filter(|(_, meta, slot)| {
                meta.label == opcode
                    && matches!(
                        slot.lifecycle,
                        Lifecycle::Streaming {
                            finished: false,
                            ..
                        }
                    )
            })
            .filter_map(|(key, _, slot)| pick(&mut slot.data).then_some(key))
            .collect();
        for &key in &keys {
            self.push_cancel(key);
        }
        keys.len()
    }

    /// Keeps `data` to be submitted detached at the start of the next turn (before its
    /// kernel entry), so its maker can still add to it meanwhile
    /// ([`with_deferred`](Self::with_deferred)): a connection's sends of one loop turn
    /// go out as one. Returns its place, valid until then.
    pub(crate) fn defer_detached(&mut self, data: OpData) -> (u64, u32) {
        detached::defer_into(&mut self.deferred, self.deferred_batch, data)
    }

    /// Runs `f` on the deferred op at `at` as a `T`; `None` once it was submitted.
    pub(crate) fn with_deferred<T: 'static, R>(
        &mut self,
        at: (u64, u32),
        f: impl FnOnce(&mut T) -> R,
    ) -> Option<R> {
        if at.0 != self.deferred_batch {
            return None;
        }
        self.deferred.get_mut(at.1 as usize)?.with_single_data(f)
    }

    /// Runs `f` once at the start of the next turn (or of shutdown), before the deferred
    /// ops are submitted; `f` may defer or submit ops of its own then. One function at a
    /// time: the driver knows no type above it, so a layer that wants this hands its
    /// function in every time (the queued sends of `ops::send_queue`).
    pub(crate) fn before_submit(&mut self, f: fn(&mut Driver)) {
        self.before_submit = Some(f);
    }

    /// Whether a send done at once now would be alone in this turn: no deferred op
    /// waits, and the driver is not shutting down.
    pub(crate) fn alone_at_once(&self) -> bool {
        self.deferred.is_empty() && !self.shutting_down
    }

    /// Whether a task may send at once now, outside the ring, and if so marks it done:
    /// once between two turns, after a turn that reaped at most one completion, and
    /// never while shutting down. A lightly loaded worker's reply then costs what a
    /// readiness runtime's `write` costs. Under load (several completions a turn) the
    /// turn's sends wait for its end and share one kernel entry, as a syscall each was
    /// measured slower (see `submit_deferred`); the first of them going at once anyway
    /// measured 0.92x the requests per second of Thrift 64 B at 64 connections.
    pub(crate) fn take_at_once(&mut self) -> bool {
        if self.at_once_taken || self.reaped > 1 || self.shutting_down {
            return false;
        }
        self.at_once_taken = true;
        true
    }

    /// Whether the driver is shutting down (ops made now would never be submitted).
    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutting_down
    }

    /// Counts an op done at once by the layer above without the driver (the
    /// `ops_at_once` counter).
    pub(crate) fn count_at_once(&self) {
        add_owned(&self.metrics.ops_at_once, 1);
    }

    /// The wakers to wake after this turn, once the driver's borrow has ended.
    pub(crate) fn later_wakers(&mut self) -> &mut Vec<Waker> {
        &mut self.wakers
    }

    /// Runs the function [`before_submit`](Self::before_submit) asked for, if any.
    fn run_before_submit(&mut self) {
        if let Some(f) = self.before_submit.take() {
            f(self);
        }
    }

    /// Submits the deferred ops. One that cannot be queued is dropped, which its type
    /// must report to its maker (the op's drop).
    fn submit_deferred(&mut self) {
        if self.deferred.is_empty() {
            return;
        }
        self.deferred_batch += 1;
        let mut batch = std::mem::take(&mut self.deferred);
        // One op alone goes at once if it can: through the ring its completion would
        // end the coming wait at once, costing a second kernel entry and loop turn.
        // Several go through the ring, one kernel entry for all of them (measured, 64
        // connections: sends at once cost 20 % more CPU per request and 16 % of the
        // throughput, with more loopback work per send).
        // (A lone op is popped: a `drain` of one costs its set-up and drop, counted.)
        if batch.len() == 1 {
            if let Some(mut data) = batch.pop() {
                if self.ended_at_once(&mut data) {
                    if let Some(boxed) = data.into_boxed() {
                        self.spare.recycle_dyn(boxed);
                    }
                } else {
                    let _ = self.submit(data, Lifecycle::Detached { notifying: false });
                }
            }
        } else {
            for data in batch.drain(..) {
                let _ = self.submit(data, Lifecycle::Detached { notifying: false });
            }
        }
        if self.deferred.is_empty() {
            self.deferred = batch;
        }
    }

    /// Lets a deferred op do its I/O at once ([`OpCode::try_at_once`]) and takes the
    /// result as its completion; `true` when that ended it. Tried once: an op that
    /// asks to go again (a short send: the socket's buffer is full) goes to the ring.
    fn ended_at_once(&mut self, data: &mut OpData) -> bool {
        if self.shutting_down {
            return false;
        }
        let Some(res) = data.try_at_once() else {
            return false;
        };
        add_owned(&self.metrics.ops_at_once, 1);
        let c = Completion {
            user_data: 0,
            res,
            flags: 0,
            big_cqe: [0; 2],
        };
        let mut cx = detached_cx!(self);
        !data.on_detached(&c, &mut cx)
    }

    /// Cancels the detached ops working on `fd` (a connection's queued sends it gives
    /// up on); each ends through [`OpCode::on_detached`] with its final completion as
    /// usual. Walks every op: for failures, not for a hot path. Returns how many.
    pub(crate) fn cancel_detached_on(&mut self, fd: std::os::fd::RawFd) -> usize {
        let keys: Vec<Key> = self
            .ops
            .iter_mut()
            .filter(|(_, slot)| matches!(slot.lifecycle, Lifecycle::Detached { .. }))
            .filter_map(|(key, slot)| (slot.data.describe().0 == Some(fd)).then_some(key))
            .collect();
        for &key in &keys {
            self.push_cancel(key);
        }
        keys.len()
    }

    /// The result of a two-completion op (a zero-copy send) whose notification has not
    /// come, if its task is done at it (`OpCode::done_at_result`): dropping the op then
    /// leaves the data in the driver until the notification.
    pub(crate) fn partial_result(&mut self, key: Key) -> Option<i32> {
        match self.ops.get_mut(key)?.lifecycle {
            Lifecycle::Partial {
                res, done: true, ..
            } => Some(res),
            _ => None,
        }
    }

    /// Polls a single-shot op: `Ready(Some)` with its completion and data, `Ready(None)`
    /// if the slot is gone (runtime shut down).
    pub(crate) fn poll_op(
        &mut self,
        key: Key,
        cx: &mut Context<'_>,
    ) -> Poll<Option<(Completion, Box<dyn OpBox>)>> {
        let Some(slot) = self.ops.get_mut(key) else {
            return Poll::Ready(None);
        };
        match &mut slot.lifecycle {
            Lifecycle::Pending(waker) | Lifecycle::Partial { waker, .. } => {
                keep_waker(waker, cx);
                Poll::Pending
            }
            Lifecycle::Completed(landed) => {
                let c = landed.completion(key);
                // Only multishot ops live in a socket: a single-shot op is boxed.
                Poll::Ready(
                    self.ops
                        .remove(key)
                        .and_then(|slot| slot.data.into_boxed())
                        .map(|data| (c, data)),
                )
            }
            Lifecycle::Streaming { .. } | Lifecycle::Detached { .. } | Lifecycle::Abandoned => {
                Poll::Ready(None)
            }
        }
    }

    /// Polls a multishot op for its next completion; `Ready(None)` once the final one
    /// was consumed (the slot is then removed).
    pub(crate) fn poll_multi(
        &mut self,
        key: Key,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Completion>> {
        self.poll_stream(key, cx, |data| {
            data.pop_for_stream().map(|q| q.completion(key))
        })
    }

    /// [`poll_multi`](Self::poll_multi) that also runs `f` on the completion and the
    /// op's data as a `T` in the same visit of the op (see
    /// [`OpData::pop_for_stream_with`]).
    pub(crate) fn poll_multi_with<T: 'static, R>(
        &mut self,
        key: Key,
        cx: &mut Context<'_>,
        f: impl FnOnce(&Completion, &mut T) -> Option<R>,
    ) -> Poll<Option<(Completion, Option<R>)>> {
        self.poll_stream(key, cx, |data| data.pop_for_stream_with(key, f))
    }

    /// The next of a streaming op's completions as `pop` takes it from the op's data;
    /// `Ready(None)` once the final one was consumed (the slot is then removed).
    /// Inlined: called out of line it cost a receive ~60 instructions (counted).
    #[inline(always)]
    fn poll_stream<R>(
        &mut self,
        key: Key,
        cx: &mut Context<'_>,
        pop: impl FnOnce(&mut OpData) -> Option<R>,
    ) -> Poll<Option<R>> {
        let Some(slot) = self.ops.get_mut(key) else {
            return Poll::Ready(None);
        };
        let Lifecycle::Streaming { waker, finished } = &mut slot.lifecycle else {
            return Poll::Ready(None);
        };
        if let Some(next) = pop(&mut slot.data) {
            return Poll::Ready(Some(next));
        }
        if *finished {
            self.ops.remove(key);
            return Poll::Ready(None);
        }
        keep_waker(waker, cx);
        Poll::Pending
    }

    /// Runs `f` on the data of multishot op `key` while it is streaming; `None` if the
    /// op is gone, not streaming, or not a `T` (see [`OpData::with_stream_data`]).
    pub(crate) fn with_stream_data<T: 'static, R>(
        &mut self,
        key: Key,
        f: impl FnOnce(&mut T) -> R,
    ) -> Option<R> {
        let slot = self.ops.get_mut(key)?;
        if !matches!(slot.lifecycle, Lifecycle::Streaming { .. }) {
            return None;
        }
        slot.data.with_stream_data(f)
    }

    /// The future of op `key` is gone: release a completion nobody took, or cancel the
    /// op and keep its memory until the final CQE.
    pub(crate) fn drop_op(&mut self, key: Key) {
        let Some(slot) = self.ops.get_mut(key) else {
            return;
        };
        let cancel = match &mut slot.lifecycle {
            Lifecycle::Completed(landed) => {
                let c = landed.completion(key);
                slot.data.release(&c);
                self.ops.remove(key);
                false
            }
            Lifecycle::Pending(_) => {
                slot.lifecycle = Lifecycle::Abandoned;
                true
            }
            Lifecycle::Partial { res, flags, .. } => {
                // The operation itself is done; only the notification is outstanding,
                // and cancelling cannot speed it up.
                let result = Landed::partial(*res, u32::from(*flags)).completion(key);
                slot.data.release(&result);
                slot.lifecycle = Lifecycle::Abandoned;
                false
            }
            Lifecycle::Streaming { finished, .. } => {
                let finished = *finished;
                slot.data.release_all_queued(key);
                if finished {
                    self.ops.remove(key);
                    false
                } else {
                    slot.lifecycle = Lifecycle::Abandoned;
                    true
                }
            }
            // No future holds a detached op's key.
            Lifecycle::Detached { .. } | Lifecycle::Abandoned => false,
        };
        if cancel {
            self.push_cancel(key);
        }
    }

    /// One kernel entry: submits everything queued, waits if `wait` (at most `timeout`),
    /// then reaps and dispatches completions. Wakers of completed ops are left in the
    /// driver for [`take_wakers`](Self::take_wakers).
    pub(crate) fn turn(&mut self, wait: bool, timeout: Option<Duration>) -> io::Result<()> {
        // Also refreshed before a possibly long wait, so readers never see the count of
        // a turn whose completions have been consumed since.
        self.run_before_submit();
        self.submit_deferred();
        self.at_once_taken = false;
        // An op done at once may have woken its waiter (a flush of a send that went
        // whole): nothing would end the wait for it.
        let wait = wait && self.wakers.is_empty() && self.deferred.is_empty();
        self.publish_in_flight();
        self.reaped = 0;
        self.quiet = 0;
        if wait || self.ring.sq_len() > 0 || self.ring.needs_enter() {
            // Ops submitted after a wait are stamped anew.
            self.stamp = None;
            let n = self.ring.enter(wait, timeout)?;
            add_owned(&self.metrics.enter_calls, 1);
            add_owned(&self.metrics.sqes_submitted, n as u64);
        }
        self.reap_and_dispatch();
        if self.ring.cq_overflowed() {
            // The kernel holds back CQEs that did not fit; an enter with GETEVENTS
            // (the crate adds it when it sees the overflow flag) flushes them.
            add_owned(&self.metrics.cq_overflows, 1);
            let n = self.ring.enter(false, None)?;
            add_owned(&self.metrics.enter_calls, 1);
            add_owned(&self.metrics.sqes_submitted, n as u64);
            self.reap_and_dispatch();
        }
        self.send_stops();
        self.submit_again();
        add_owned(&self.metrics.loop_turns, 1);
        self.publish_in_flight();
        Ok(())
    }

    /// Whether the last turn reaped completions and all of them were detached ops that
    /// ended with nobody to wake (queued sends done): nothing a loop turn acts on
    /// changed, so the worker may wait again at once.
    pub(crate) fn quiet_turn(&self) -> bool {
        self.reaped > 0 && self.quiet == self.reaped && self.again.is_empty()
    }

    /// Cancels the multishot ops that asked to stop and are still running (they go
    /// out with the next enter).
    fn send_stops(&mut self) {
        while let Some(key) = self.stops.pop() {
            let running = matches!(
                self.ops.get_mut(key).map(|s| &s.lifecycle),
                Some(Lifecycle::Streaming {
                    finished: false,
                    ..
                })
            );
            if running {
                self.push_cancel(key);
            }
        }
    }

    /// Submits again the detached ops that asked for it (they go out with the next
    /// enter). One whose SQE cannot be built or queued ends as if the kernel had failed
    /// it, so its owner hears of it.
    fn submit_again(&mut self) {
        while let Some(key) = self.again.pop() {
            let entry = match self.ops.get_mut(key) {
                Some(slot) if matches!(slot.lifecycle, Lifecycle::Detached { .. }) => {
                    slot.data.create_entry()
                }
                _ => continue,
            };
            let pushed = match entry {
                // SAFETY: the entry points into the op's data, which the slab owns
                // until the op's final completion (the OpCode contract).
                Some(e) => unsafe { self.push(&e.user_data(key.user_data())) }.is_ok(),
                None => false,
            };
            if !pushed {
                let failed = Completion {
                    user_data: key.user_data(),
                    res: -libc::EIO,
                    flags: 0,
                    big_cqe: [0; 2],
                };
                self.end_detached(key, &failed);
            }
        }
    }

    /// Gives a detached op's last word to it (no resubmission) and frees its slot.
    fn end_detached(&mut self, key: Key, c: &Completion) {
        if let Some(slot) = self.ops.get_mut(key) {
            let mut cx = detached_cx!(self);
            // Asked to go again, it cannot: the op sees the failure and stops.
            let _ = slot.data.on_detached(c, &mut cx);
        }
        self.free_detached(key);
    }

    /// Frees a finished detached op's slot, keeping its box for the next op.
    fn free_detached(&mut self, key: Key) {
        if let Some(boxed) = self.ops.remove(key).and_then(|slot| slot.data.into_boxed()) {
            self.spare.recycle_dyn(boxed);
        }
    }

    fn publish_in_flight(&self) {
        self.metrics.ops_in_flight.store(
            self.ops_in_flight() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    pub(crate) fn take_wakers(&mut self, out: &mut Vec<Waker>) {
        out.append(&mut self.wakers);
    }

    /// The ZCRX event CQEs reaped since the last call, oldest first (their `res`).
    pub(crate) fn take_zcrx_events(&mut self) -> Vec<i32> {
        std::mem::take(&mut self.zcrx_events)
    }

    fn reap_and_dispatch(&mut self) {
        let mut reaped = 0u32;
        while let Some(c) = self.ring.pop() {
            reaped += 1;
            self.dispatch(c);
        }
        if reaped > 0 {
            add_owned(&self.metrics.cqes, u64::from(reaped));
            self.reaped += reaped;
        }
    }

    fn dispatch(&mut self, c: Completion) {
        match c.user_data {
            reserved::WAKE => {
                add_owned(&self.metrics.wakeups_received, 1);
                if let Some(w) = self.wake.as_mut() {
                    if !c.more() {
                        w.armed = false;
                    }
                }
                // A failed re-arm leaves wake-ups to the loop's polling of the remote
                // queue; the next turn tries again.
                let _ = self.arm_wake();
            }
            reserved::CANCEL | reserved::MSG_SENT => {}
            reserved::ZCRX_EVENT => self.zcrx_events.push(c.res),
            reserved::CLOSE => {
                // The fd is gone from this process either way; only a bug (a close of
                // an fd that was not open) lands here.
                tracing::warn!(res = c.res, "a close through the ring failed");
            }
            ud => match flight::tag_of(ud) {
                Some(tag) => {
                    if self.flight_done(tag, &c) {
                        self.quiet += 1;
                    }
                }
                None => self.dispatch_op(ud, c),
            },
        }
    }

    fn dispatch_op(&mut self, ud: u64, c: Completion) {
        let slot = match Key::from_user_data(ud).and_then(|k| self.ops.get_mut(k).map(|s| (k, s))) {
            Some(found) => found,
            None => {
                add_owned(&self.metrics.stale_cqes, 1);
                return;
            }
        };
        let (key, slot) = slot;
        match &mut slot.lifecycle {
            Lifecycle::Pending(waker) if c.more() => {
                // A zero-copy send's result: a task done at it goes on now
                // (`Driver::partial_result`); the op stays until the notification.
                let mut waker = waker.take();
                let done = slot.data.done_at_result(c.res);
                if done {
                    if let Some(w) = waker.take() {
                        self.wakers.push(w.into_waker());
                    }
                }
                slot.lifecycle = Lifecycle::Partial {
                    res: c.res,
                    flags: c.flags as u16,
                    done,
                    waker,
                };
            }
            Lifecycle::Pending(waker) => {
                if let Some(w) = waker.take() {
                    self.wakers.push(w.into_waker());
                }
                slot.lifecycle = Lifecycle::Completed(Landed::new(&c));
            }
            Lifecycle::Partial {
                res, flags, waker, ..
            } => {
                if !c.more() {
                    if let Some(w) = waker.take() {
                        self.wakers.push(w.into_waker());
                    }
                    // The notification: the task sees one completion, which says
                    // whether the kernel copied after all.
                    let copied = c.res as u32 & zcrx::abi::IORING_NOTIF_USAGE_ZC_COPIED != 0;
                    let flags = u32::from(*flags) | if copied { LANDED_COPIED } else { 0 };
                    slot.lifecycle = Lifecycle::Completed(Landed::partial(*res, flags));
                }
            }
            Lifecycle::Completed(_) => {
                // A second CQE for a single-shot op: nobody can take it.
                slot.data.release(&c);
            }
            Lifecycle::Streaming { waker, finished } => {
                if slot.data.on_stream_completion(&c) {
                    self.stops.push(key);
                }
                if !c.more() {
                    *finished = true;
                }
                if let Some(w) = waker.take() {
                    self.wakers.push(w.into_waker());
                }
            }
            Lifecycle::Detached { notifying } => {
                let woken = self.wakers.len();
                let deferred = self.deferred.len();
                let mut cx = detached_cx!(self);
                let again = slot.data.on_detached(&c, &mut cx);
                if self.wakers.len() == woken && !again && self.deferred.len() == deferred {
                    self.quiet += 1;
                }
                if c.more() {
                    // A zero-copy send's result: its notification follows.
                    *notifying = true;
                    return;
                }
                *notifying = false;
                if again && !self.shutting_down {
                    self.again.push(key);
                } else {
                    self.free_detached(key);
                }
            }
            Lifecycle::Abandoned => {
                slot.data.release(&c);
                if !c.more() {
                    self.ops.remove(key);
                }
            }
        }
    }

    /// Queues a close of `fd`, submitted with the next batch; its CQE is skipped on
    /// success. `fd` comes back if the ring is shutting down or cannot take it (the
    /// caller closes it itself then).
    pub(crate) fn push_close(&mut self, fd: OwnedFd) -> Result<(), OwnedFd> {
        if self.shutting_down {
            return Err(fd);
        }
        let entry = opcode::Close::new(types::Fd(fd.as_raw_fd()))
            .build()
            .flags(squeue::Flags::SKIP_SUCCESS)
            .user_data(reserved::CLOSE);
        // SAFETY: CLOSE carries no memory; the fd stays open (owned by `fd`, then
        // handed to the kernel below) until the request runs.
        match unsafe { self.push(&entry) } {
            Ok(()) => {
                // The queued request owns the fd now.
                let _ = fd.into_raw_fd();
                Ok(())
            }
            Err(_) => Err(fd),
        }
    }

    /// Queues a MSG_RING to `target_ring` that posts a wake CQE there. Its own CQE is
    /// skipped on success.
    pub(crate) fn push_msg_ring(&mut self, target_ring: std::os::fd::RawFd) -> io::Result<()> {
        let entry = opcode::MsgRingData::new(types::Fd(target_ring), 0, reserved::WAKE, None)
            .build()
            .flags(squeue::Flags::SKIP_SUCCESS)
            .user_data(reserved::MSG_SENT);
        // SAFETY: MSG_RING carries no memory; the target fd is kept open by the target
        // worker's shared state, which outlives every worker of the runtime.
        unsafe { self.push(&entry) }
    }
}

/// Keeps `cx`'s waker in an op's slot, unless the one kept already wakes the same task.
///
/// A peek ([`peek_waker`](peek_waker::peek_waker), behind `try_recv`) keeps
/// nothing and leaves the slot as it is: boxing it as a foreign waker cost an
/// allocation and a free per look (measured in the echo server's gathering).
#[inline(always)]
fn keep_waker(kept: &mut Option<SlimWaker>, cx: &Context<'_>) {
    match kept {
        Some(w) if w.will_wake(cx.waker()) => {}
        _ if peek_waker::is_peek(cx.waker()) => {}
        _ => *kept = Some(SlimWaker::new(cx.waker().clone())),
    }
}
