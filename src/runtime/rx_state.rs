//! A worker's receive state: its pools (copy, zero-copy, datagram), the receives that
//! wait for their buffers to come back, the limits receives are armed with, and the
//! readers holding buffers while they wait. The fields are private: the receive paths
//! (`ops::tcp_recv`, `net::udp`, the pressure of `runtime::pressure`) ask through
//! methods, and the worker maintains the state once per loop turn ([`RxState::maintain`]).
//!
//! A pool can run dry for good when the application keeps what it received (a store
//! keeping decoded fields, replies queued behind slow peers): no return would ever wake
//! the receives waiting for one. So a waiting stream receives into ordinary memory
//! instead, within the worker's receive memory limit ([`RecvMemory`]); the room that
//! memory frees wakes the receives that waited at the limit.

use super::pressure::Holders;
use super::worker::WorkerShared;
use super::zero_copy::ZcWorker;
use crate::driver::Driver;
use std::cell::{Cell, OnceCell, RefCell};
use std::io;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::Waker;
use std::time::{Duration, Instant};
use zcrx::{CopyPool, CopyPoolConfig, StatsHandle};

/// What a worker receives with and who waits for it.
pub(crate) struct RxState {
    /// The receive pool registered with this worker's ring. Receive ops hold clones;
    /// an op leaked at shutdown leaks its clone, and with it the pool memory.
    pool: Option<Rc<CopyPool>>,
    /// Its counters (cheap reads of its return progress).
    pool_stats: Option<StatsHandle>,
    /// The zero-copy pool this ring receives into, or the worker serving its receives.
    zc: ZcWorker,
    /// The zero-copy pool's counters.
    zc_stats: Option<StatsHandle>,
    /// [`zc_progress`](Self::zc_progress) at the last turn.
    zc_seen: Cell<u64>,
    /// The datagram pool, registered with the ring at the first pooled UDP receive.
    udp_pool: OnceCell<Rc<CopyPool>>,
    udp_pool_config: Option<CopyPoolConfig>,
    /// UDP receives waiting for the datagram pool (`ENOBUFS`).
    udp_waiters: RefCell<Vec<Waker>>,
    /// Copy receives are armed as bundles.
    bundles: bool,
    /// Pool bytes a stream's receive may hold untaken before it stops (`0`: none).
    hold_limit: u32,
    /// The kernel took the byte limit of multishot `recv` (`IORING_RECV_MSHOT_LIM`,
    /// Linux 6.17); cleared when it refused it with `EINVAL`.
    kernel_limit: Cell<bool>,
    /// Receives waiting for the copy pool to give buffers back to the kernel
    /// (`ENOBUFS`), each with the pool's `returned_to_kernel` when it was armed: only a
    /// return published after that can help it.
    copy_waiters: RefCell<Vec<(u64, Waker)>>,
    /// Receives waiting for zero-copy chunks to go back to the kernel (`ENOMEM`).
    zc_waiters: RefCell<Vec<Waker>>,
    /// Readers holding receive buffers while they wait, woken when the pools run low.
    holders: Rc<Holders>,
    /// The receive memory limit, and the part of it overflow receives may use.
    memory: RecvMemory,
    /// Receives waiting at the memory limit, woken when overflow memory is freed.
    room_waiters: RefCell<Vec<Waker>>,
    /// Capacity of the overflow receives in flight: counted against the limit from
    /// submission, before their bytes are held.
    overflow_reserved: Cell<u64>,
    /// When the pinning warning was last logged.
    pinned_warned: Cell<Option<Instant>>,
    /// Since when receives have gone to ordinary memory (the pools held), until the
    /// copy pool is no longer low.
    held_since: Cell<Option<Instant>>,
    /// The steering fall-back was logged once on this worker.
    steering_warned: Cell<bool>,
}

/// How receives are armed on a worker.
pub(crate) struct RxLimits {
    pub(crate) bundles: bool,
    pub(crate) hold_limit: u32,
    pub(crate) memory: RecvMemory,
}

/// A worker's receive memory ([`Builder::receive_memory_limit`](crate::Builder::receive_memory_limit)).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RecvMemory {
    /// The whole limit: pools and overflow.
    pub(crate) limit: u64,
    /// What overflow receives may hold beside the pools.
    pub(crate) overflow: u64,
    /// How long a receive waits at the limit before it fails.
    pub(crate) wait: Duration,
}

/// Least time between two warnings about pinned pools on one worker.
const PINNED_WARNING_EVERY: Duration = Duration::from_secs(10);

impl RxState {
    pub(crate) fn new(
        pool: Option<Rc<CopyPool>>,
        zc: ZcWorker,
        zc_stats: Option<StatsHandle>,
        udp_pool_config: Option<CopyPoolConfig>,
        limits: RxLimits,
    ) -> RxState {
        RxState {
            pool_stats: pool.as_ref().map(|p| p.stats_handle()),
            pool,
            zc,
            zc_seen: Cell::new(zc_stats.as_ref().map_or(0, |s| s.chunks_given_to_kernel())),
            zc_stats,
            udp_pool: OnceCell::new(),
            udp_pool_config,
            udp_waiters: RefCell::new(Vec::new()),
            bundles: limits.bundles,
            hold_limit: limits.hold_limit,
            kernel_limit: Cell::new(true),
            copy_waiters: RefCell::new(Vec::new()),
            zc_waiters: RefCell::new(Vec::new()),
            holders: Rc::default(),
            memory: limits.memory,
            room_waiters: RefCell::new(Vec::new()),
            overflow_reserved: Cell::new(0),
            pinned_warned: Cell::new(None),
            held_since: Cell::new(None),
            steering_warned: Cell::new(false),
        }
    }

    /// The copy pool, if the runtime has one.
    pub(crate) fn copy_pool(&self) -> Option<&Rc<CopyPool>> {
        self.pool.as_ref()
    }

    /// The zero-copy side of this worker.
    pub(crate) fn zc(&self) -> &ZcWorker {
        &self.zc
    }

    /// Whether the worker restarts zero-copy receives (by cancelling them) that the
    /// kernel may have left parked: a zero-copy receive's `ECANCELED` end is then a
    /// restart, not an error ([`ParkedRestart`]).
    pub(crate) fn restarts_parked(&self) -> bool {
        matches!(
            self.zc,
            ZcWorker::Local {
                restart: Some(_),
                ..
            }
        )
    }

    /// Whether copy receives are armed as bundles.
    pub(crate) fn bundles(&self) -> bool {
        self.bundles
    }

    /// Bytes a stream's receive may hold untaken before it stops (`0`: none).
    pub(crate) fn hold_limit(&self) -> u32 {
        self.hold_limit
    }

    /// Whether receives pass the byte limit to the kernel.
    pub(crate) fn kernel_limit(&self) -> bool {
        self.kernel_limit.get()
    }

    /// The kernel refused the byte limit: receives stop passing it. Returns whether
    /// this is the first refusal (to log it once).
    pub(crate) fn refuse_kernel_limit(&self) -> bool {
        self.kernel_limit.replace(false)
    }

    /// Whether the steering fall-back is to be logged (the first time only).
    pub(crate) fn first_steering_fallback(&self) -> bool {
        !self.steering_warned.replace(true)
    }

    /// The readers holding buffers while they wait.
    pub(crate) fn holders(&self) -> &Rc<Holders> {
        &self.holders
    }

    /// `returned_to_kernel` of the copy pool (0 without one).
    pub(crate) fn copy_returned(&self) -> u64 {
        self.pool_stats
            .as_ref()
            .map_or(0, |s| s.returned_to_kernel())
    }

    /// Chunks the zero-copy pool this worker receives into has given the kernel so far
    /// (returns and growth: see `StatsHandle::chunks_given_to_kernel`). An importer's
    /// receives wait on this, not on returns alone: an area the owner adds while they
    /// wait gives no return, and they would sleep beside free chunks.
    pub(crate) fn zc_progress(&self) -> Option<u64> {
        self.zc_stats.as_ref().map(|s| s.chunks_given_to_kernel())
    }

    /// The zero-copy pool's counters, if this worker receives into one.
    pub(crate) fn zc_stats(&self) -> Option<&StatsHandle> {
        self.zc_stats.as_ref()
    }

    /// Registers a copy receive that failed for want of buffers when the pool had
    /// returned `mark`: woken once a later return frees a buffer. A task that waits
    /// again is registered once, with its new mark.
    pub(crate) fn wait_for_copy(&self, mark: u64, waker: &Waker) {
        let mut waiters = self.copy_waiters.borrow_mut();
        match waiters.iter_mut().find(|(_, w)| w.will_wake(waker)) {
            Some(entry) => entry.0 = mark,
            None => waiters.push((mark, waker.clone())),
        }
    }

    /// Registers a zero-copy receive that found the area dry: woken when chunks go
    /// back to the kernel.
    pub(crate) fn wait_for_zc(&self, waker: &Waker) {
        self.zc_waiters.borrow_mut().push(waker.clone());
    }

    /// Bytes the next overflow receive may take (0: none now): a pool buffer's worth,
    /// or what is left of the overflow allowance. Overflow memory is accounted with
    /// the copy pool, so a worker without one has none.
    pub(crate) fn overflow_room(&self) -> usize {
        let Some(pool) = &self.pool else {
            return 0;
        };
        let used = pool.overflow_held() + self.overflow_reserved.get();
        let left = self.memory.overflow.saturating_sub(used);
        left.min(pool.buffer_size() as u64) as usize
    }

    /// Counts `bytes` of an overflow receive's buffer against the limit while it is in
    /// flight (given back with [`release_overflow`](Self::release_overflow)).
    pub(crate) fn reserve_overflow(&self, bytes: u64) {
        self.overflow_reserved
            .set(self.overflow_reserved.get() + bytes);
    }

    /// Gives back what [`reserve_overflow`](Self::reserve_overflow) counted.
    pub(crate) fn release_overflow(&self, bytes: u64) {
        self.overflow_reserved
            .set(self.overflow_reserved.get().saturating_sub(bytes));
    }

    /// Wraps the bytes an overflow receive got (see [`overflow_room`](Self::overflow_room)).
    pub(crate) fn overflow_buf(&self, data: Vec<u8>) -> Option<zcrx::RxBuf> {
        self.pool.as_ref()?.overflow_buf(data)
    }

    /// How long a receive waits at the memory limit before it fails.
    pub(crate) fn memory_wait(&self) -> Duration {
        self.memory.wait
    }

    /// Registers a receive waiting at the memory limit: woken when overflow memory is
    /// freed (as well as by the pool's returns it waits for).
    pub(crate) fn wait_for_room(&self, waker: &Waker) {
        let mut waiters = self.room_waiters.borrow_mut();
        if !waiters.iter().any(|w| w.will_wake(waker)) {
            waiters.push(waker.clone());
        }
    }

    /// What the pools and overflow receives hold, for the pinning warning and the
    /// error at the limit.
    pub(crate) fn describe_pinning(&self) -> String {
        let mut parts = Vec::new();
        if let Some(pool) = &self.pool {
            let s = pool.stats();
            parts.push(format!(
                "the copy pool's {} buffers of {} bytes are held by the application ({} \
                 handles, {} returns pending)",
                s.chunks_total,
                pool.buffer_size(),
                s.in_use,
                s.returns_pending
            ));
        }
        if let Some(zc) = self.zc_stats() {
            let s = zc.snapshot();
            parts.push(format!(
                "the zero-copy pool has {} of {} chunks out",
                s.in_use + s.returns_pending,
                s.chunks_total
            ));
        }
        let held = self.pool.as_ref().map_or(0, |p| p.overflow_held());
        format!(
            "{}; receives into ordinary memory hold {held} of the {} bytes the receive \
             memory limit ({} bytes per worker: Builder::receive_memory_limit, \
             ZERORX_RECV_MEMORY_LIMIT) leaves beside the pools",
            parts.join("; "),
            self.memory.overflow,
            self.memory.limit
        )
    }

    /// Since when the pools have been held (receives going to ordinary memory).
    pub(crate) fn held_since(&self) -> Option<Instant> {
        self.held_since.get()
    }

    /// Logs, at most once per ten seconds per worker, that receives found the pools
    /// held by the application and went to ordinary memory (or, `at_limit`, could not).
    pub(crate) fn warn_pinned(&self, worker: usize, at_limit: bool) {
        let now = Instant::now();
        if self.held_since.get().is_none() {
            self.held_since.set(Some(now));
        }
        if self
            .pinned_warned
            .get()
            .is_some_and(|t| now.duration_since(t) < PINNED_WARNING_EVERY)
        {
            return;
        }
        self.pinned_warned.set(Some(now));
        let what = if at_limit {
            "receives wait at the receive memory limit and fail after Builder::receive_memory_wait"
        } else {
            "streams receive into ordinary memory meanwhile"
        };
        tracing::warn!(
            worker,
            "the receive pool ran dry while the application holds its buffers: {}. {what}. \
             Received buffers (RxBuf, and Bytes or decoded fields sliced from them) kept \
             past a request pin their whole chunk; copy what you keep (detach it)",
            self.describe_pinning()
        );
    }

    /// Registers a datagram receive that found the datagram pool empty.
    pub(crate) fn wait_for_datagrams(&self, waker: &Waker) {
        self.udp_waiters.borrow_mut().push(waker.clone());
    }

    /// Receives waiting for buffers, for the state dump (a list being changed at that
    /// moment counts as empty).
    pub(crate) fn waiting(&self) -> usize {
        self.copy_waiters.try_borrow().map_or(0, |w| w.len())
            + self.zc_waiters.try_borrow().map_or(0, |w| w.len())
            + self.udp_waiters.try_borrow().map_or(0, |w| w.len())
            + self.room_waiters.try_borrow().map_or(0, |w| w.len())
    }

    /// The datagram pool, registered with the worker's ring on first use.
    pub(crate) fn udp_pool(
        &self,
        driver: &RefCell<Driver>,
        shared: &Arc<WorkerShared>,
    ) -> io::Result<Rc<CopyPool>> {
        if let Some(pool) = self.udp_pool.get() {
            return Ok(pool.clone());
        }
        let Some(config) = &self.udp_pool_config else {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the runtime has no datagram pool (Builder::udp_pool(None))",
            ));
        };
        // SAFETY: the pool lives in `udp_pool`, and the worker's `Core` declares its
        // driver before this state, so the ring is closed first; ops hold clones until
        // their final completion.
        let pool = unsafe { register_copy_pool(&mut driver.borrow_mut(), config, shared) }
            .map_err(|e| io::Error::other(format!("datagram pool: {e}")))?;
        let _ = shared.udp_pool_stats.set(pool.stats_handle());
        tracing::debug!(
            worker = shared.index,
            buffers = config.buffers,
            buffer_size = config.buffer_size,
            "datagram pool registered"
        );
        let pool = Rc::new(pool);
        Ok(self.udp_pool.get_or_init(|| pool).clone())
    }

    /// Publishes buffer returns to the kernel (one tail store per pool, before the
    /// kernel is entered), lets a zero-copy pool grow, and moves into `wakers` the
    /// receives (and holders) whose wait is over. Returns how long the loop may sleep
    /// at most before it must look at its receives again (`runtime::zc_restart`).
    pub(crate) fn maintain(
        &self,
        driver: &RefCell<Driver>,
        shared: &WorkerShared,
        wakers: &mut Vec<Waker>,
    ) -> Option<Duration> {
        let mut look_within = None;
        if let Some(pool) = &self.pool {
            // Takes back buffers dropped on other threads, too.
            pool.maintain();
            let mut waiters = self.copy_waiters.borrow_mut();
            // `available` only matters to a waiting receive (most turns have none; it
            // cost ~40 instructions a turn, counted).
            let mut free = if waiters.is_empty() {
                0
            } else {
                pool.available()
            };
            if free > 0 {
                // Oldest first, one receive per free buffer: waking them all would fail
                // all but a few again at once (ENOBUFS). Those left wait for the next
                // turn, which does not block (the woken tasks are runnable), and whose
                // `available` then counts what the woken receives took. A receive
                // whose failure came after the last return stays: only a later return
                // can help it.
                let returned = self.copy_returned();
                waiters.retain(|(mark, waker)| {
                    if free > 0 && *mark < returned {
                        free -= 1;
                        wakers.push(waker.clone());
                        false
                    } else {
                        true
                    }
                });
            }
        }
        if let Some(pool) = self.udp_pool.get() {
            pool.maintain();
            if pool.available() > 0 && !self.udp_waiters.borrow().is_empty() {
                wakers.append(&mut self.udp_waiters.borrow_mut());
            }
        }
        if let ZcWorker::Local {
            ring,
            importers,
            growth,
            restart,
            ..
        } = &self.zc
        {
            let events = driver.borrow_mut().take_zcrx_events();
            let mut dry = false;
            for res in events {
                // The kernel found the area dry: holders of partial messages let go
                // now rather than at the next low-water look, and the pool may grow.
                if ring.on_event(res) == Some(zcrx::ZcEvent::AllocFail) {
                    dry = true;
                    self.holders.take_all(wakers);
                }
            }
            ring.maintain();
            // New chunks serve receives that waited for returns, as returns would.
            let grew = growth
                .as_ref()
                .is_some_and(|g| g.grow_if_needed(ring, dry, shared.index));
            let progress = self.zc_progress().unwrap_or(0);
            if progress != self.zc_seen.replace(progress) || grew {
                wakers.append(&mut self.zc_waiters.borrow_mut());
                shared.zc_waiting.store(false, Ordering::SeqCst);
                for importer in importers {
                    if importer.zc_waiting.swap(false, Ordering::SeqCst) {
                        importer.unpark();
                    }
                }
            }
            if let (Some(r), Some(stats)) = (restart, &self.zc_stats) {
                look_within = r.maintain(stats, &mut driver.borrow_mut(), shared);
            }
        }
        self.holders.take_if_low(self, wakers);
        if self.held_since.get().is_some() && super::pressure::of(self).is_some_and(|p| !p.is_low())
        {
            self.held_since.set(None);
        }
        // Freed overflow memory lets receives waiting at the limit go on.
        if !self.room_waiters.borrow().is_empty() && self.overflow_room() > 0 {
            wakers.append(&mut self.room_waiters.borrow_mut());
        }
        look_within
    }

    /// Lets go of every waiting receive (shutdown); with `leaked` ops, which may still
    /// write into the pools after the ring closes, the pools' memory is leaked with
    /// them.
    pub(crate) fn shutdown(&self, leaked: bool) {
        self.copy_waiters.borrow_mut().clear();
        self.zc_waiters.borrow_mut().clear();
        self.udp_waiters.borrow_mut().clear();
        self.room_waiters.borrow_mut().clear();
        if leaked {
            if let Some(pool) = &self.pool {
                std::mem::forget(pool.clone());
            }
            if let ZcWorker::Local { ring, .. } = &self.zc {
                std::mem::forget(ring.clone());
            }
            if let Some(pool) = self.udp_pool.get() {
                std::mem::forget(pool.clone());
            }
        }
    }
}

/// Registers a copy pool with the worker's ring; buffers returned on other threads
/// wake the worker (if it still exists), which publishes them at its next turn.
///
/// # Safety
/// As `CopyPool::register`: the ring is closed before the pool (and every clone an op
/// holds) is dropped.
pub(crate) unsafe fn register_copy_pool(
    driver: &mut Driver,
    config: &CopyPoolConfig,
    shared: &Arc<WorkerShared>,
) -> io::Result<CopyPool> {
    // SAFETY: the caller's contract.
    let pool = driver.with_submitter(|s| unsafe { CopyPool::register(s, config) })?;
    let weak = Arc::downgrade(shared);
    pool.set_return_notifier(Arc::new(move || {
        if let Some(shared) = weak.upgrade() {
            shared.unpark();
        }
    }));
    Ok(pool)
}
