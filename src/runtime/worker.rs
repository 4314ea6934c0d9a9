//! One worker: the thread-owned [`Core`] (ring, scheduler, timers, pools) and the
//! cross-thread [`WorkerShared`] (the scheduler's shared side, counters, pool
//! statistics), plus the loop.

use super::context;
use super::handle::Handle;
use super::pressure::Holders;
use super::receive_plan::ReceiveRole;
pub(crate) use super::zero_copy::ZcWorker;
use super::zero_copy::{ZcLinks, ZcSetup};
use crate::driver::ring::RingConfig;
use crate::driver::{Driver, RingFlags};
use crate::executor::scheduler::{self, Local};
use crate::metrics::{add_owned, WorkerMetrics};
use crate::time::Timers;
use crate::wake::Unparker;
use std::cell::{Cell, RefCell};
use std::io;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::Waker;
use std::time::{Duration, Instant};
use zcrx::{CopyPool, CopyPoolConfig, StatsHandle};

/// What each worker builds on its own thread.
#[derive(Clone, Debug)]
pub(crate) struct WorkerConfig {
    pub(crate) ring: RingConfig,
    pub(crate) pool: Option<CopyPoolConfig>,
    /// What this worker receives with.
    pub(crate) role: ReceiveRole,
    /// Arm copy receives as bundles (one completion, several buffers).
    pub(crate) recv_bundles: bool,
    /// Pool bytes a stream's receive may hold untaken before it stops (`0`: no limit).
    pub(crate) recv_hold_limit: u32,
    /// Zero-copy target and pool size (zero-copy modes).
    pub(crate) zc: Option<ZcSetup>,
    /// The pool UDP sockets receive datagrams into, registered at first use.
    pub(crate) udp_pool: Option<CopyPoolConfig>,
}

impl WorkerConfig {
    /// This configuration for a worker with `role`.
    pub(crate) fn for_worker(&self, role: ReceiveRole) -> WorkerConfig {
        WorkerConfig {
            role,
            ..self.clone()
        }
    }
}

/// The part of a worker other threads may touch.
pub(crate) struct WorkerShared {
    pub(crate) index: usize,
    /// The scheduler's shared side: remote spawns and wakes, parking, the wake-up.
    pub(crate) sched: Arc<scheduler::Shared>,
    pub(crate) metrics: Arc<WorkerMetrics>,
    pub(crate) ring_flags: OnceLock<RingFlags>,
    pub(crate) pool_stats: OnceLock<StatsHandle>,
    /// Counters of the datagram pool, once a UDP socket used it.
    pub(crate) udp_pool_stats: OnceLock<StatsHandle>,
    /// Counters of the zero-copy pool this worker receives into (the owner's, for an
    /// importer).
    pub(crate) zc_pool_stats: OnceLock<StatsHandle>,
    /// The ZCRX instance this worker's ring receives with, once registered or imported.
    pub(crate) zc_instance: OnceLock<super::ZcInstance>,
    /// A receive on this worker waits for zero-copy chunks: the owner unparks it when
    /// it gives the kernel chunks back.
    pub(crate) zc_waiting: AtomicBool,
    /// State dumps asked of this worker ([`Handle::dump`]).
    pub(crate) dump_requests: super::dump::collect::DumpRequests,
}

impl WorkerShared {
    pub(crate) fn new(index: usize, unparker: Unparker) -> WorkerShared {
        let metrics: Arc<WorkerMetrics> = Arc::default();
        WorkerShared {
            index,
            sched: Arc::new(scheduler::Shared::new(index, unparker, metrics.clone())),
            metrics,
            ring_flags: OnceLock::new(),
            pool_stats: OnceLock::new(),
            zc_pool_stats: OnceLock::new(),
            zc_instance: OnceLock::new(),
            udp_pool_stats: OnceLock::new(),
            zc_waiting: AtomicBool::new(false),
            dump_requests: Default::default(),
        }
    }

    pub(crate) fn unparker(&self) -> &Unparker {
        self.sched.unparker()
    }

    /// Whether the worker has shut down.
    pub(crate) fn is_closed(&self) -> bool {
        self.sched.is_closed()
    }

    /// Wakes the worker if it is parked; no syscall otherwise.
    pub(crate) fn unpark(&self) {
        self.sched.unpark()
    }
}

/// The thread-owned state of a worker. Lives in an `Rc` in the thread-local context.
pub(crate) struct Core {
    pub(crate) shared: Arc<WorkerShared>,
    pub(crate) handle: Handle,
    /// Declared before `pool`: fields drop in order, and the ring must be closed
    /// before the pool's memory can go (the `CopyPool::register` contract).
    pub(crate) driver: RefCell<Driver>,
    /// The receive pool registered with this worker's ring. Receive ops hold clones;
    /// an op leaked at shutdown leaks its clone, and with it the pool memory.
    pub(crate) pool: Option<Rc<CopyPool>>,
    /// The zero-copy pool this ring receives into, or the worker serving its
    /// receives. Declared after `driver` for the same reason as `pool`.
    pub(crate) zc: ZcWorker,
    /// The datagram pool (registered with the ring at the first pooled UDP receive;
    /// after `driver` for the same reason as `pool`).
    udp_pool: std::cell::OnceCell<Rc<CopyPool>>,
    udp_pool_config: Option<CopyPoolConfig>,
    /// UDP receives waiting for the datagram pool (`ENOBUFS`).
    pub(crate) udp_waiters: RefCell<Vec<Waker>>,
    /// Copy receives are armed as bundles.
    pub(crate) recv_bundles: bool,
    /// Pool bytes a stream's receive may hold untaken before it stops (`0`: none).
    pub(crate) recv_hold_limit: u32,
    /// The kernel took the byte limit of multishot `recv` (`IORING_RECV_MSHOT_LIM`,
    /// Linux 6.17); cleared when it refused it with `EINVAL`.
    pub(crate) recv_kernel_limit: Cell<bool>,
    /// Receives waiting for the copy pool to give buffers back to the kernel
    /// (`ENOBUFS`), each with the pool's `returned_to_kernel` when it was armed: only a
    /// return published after that can help it.
    pub(crate) copy_waiters: RefCell<Vec<(u64, Waker)>>,
    /// Receives waiting for zero-copy chunks to go back to the kernel (`ENOMEM`).
    pub(crate) zc_waiters: RefCell<Vec<Waker>>,
    /// Readers holding receive buffers while they wait, woken when the pools run low.
    pub(crate) holders: Rc<Holders>,
    /// [`zc_progress`](Self::zc_progress) at the last turn.
    zc_seen: Cell<u64>,
    /// The zero-copy pool's counters (cheap reads of its return progress).
    zc_stats: Option<StatsHandle>,
    /// The steering fall-back was logged once on this worker.
    pub(crate) steering_warned: Cell<bool>,
    /// The worker's tasks: run queue and registry (installed on the thread while the
    /// worker runs, for `spawn` and wakes).
    pub(crate) sched: Rc<Local>,
    /// The worker's timers and its clock for the turn (installed on the thread for
    /// the timer futures while the worker runs).
    pub(crate) time: Rc<Timers>,
    /// Scratch space for wakers to call once no borrow is held.
    wakers: Cell<Vec<Waker>>,
}

/// Tasks polled per turn at most, so I/O completions and timers are not starved by a
/// task that keeps waking itself.
const RUN_BUDGET: usize = 256;

impl Core {
    /// Builds the worker's ring on the calling thread.
    pub(crate) fn new(
        shared: Arc<WorkerShared>,
        handle: Handle,
        cfg: &WorkerConfig,
        links: ZcLinks,
    ) -> io::Result<Core> {
        let _span =
            tracing::info_span!("zerorx_worker_start", worker = shared.index, role = %cfg.role)
                .entered();
        // RECV_ZC posts 32-byte completions; the ring that receives them needs CQE32.
        let ring = RingConfig {
            cqe32: cfg.ring.cqe32
                || matches!(
                    cfg.role,
                    ReceiveRole::Owner { .. } | ReceiveRole::Import { .. }
                ),
            ..cfg.ring
        };
        let mut driver = Driver::new(&ring, shared.unparker().eventfd(), shared.metrics.clone())?;
        shared.unparker().set_ring_fd(driver.ring_fd())?;
        let _ = shared.ring_flags.set(driver.ring_flags());
        let pool = match &cfg.pool {
            None => None,
            Some(pool_cfg) => {
                // SAFETY: the pool ends up in `Core::pool`, declared after `driver`, so
                // the ring is closed first; ops holding clones are freed only after
                // their final completion, or leaked together with their clone.
                let pool = driver
                    .with_submitter(|s| unsafe { CopyPool::register(s, pool_cfg) })
                    .map_err(|e| io::Error::other(format!("receive pool: {e}")))?;
                let weak = Arc::downgrade(&shared);
                pool.set_return_notifier(Arc::new(move || {
                    if let Some(shared) = weak.upgrade() {
                        shared.unpark();
                    }
                }));
                let _ = shared.pool_stats.set(pool.stats_handle());
                tracing::debug!(
                    buffers = pool_cfg.buffers,
                    buffer_size = pool_cfg.buffer_size,
                    incremental = pool_cfg.incremental,
                    "copy pool registered"
                );
                Some(Rc::new(pool))
            }
        };
        let zc = super::zero_copy::attach(cfg.role, cfg.zc.as_ref(), links, &mut driver, &shared)?;
        let zc_stats = shared.zc_pool_stats.get().cloned();
        Ok(Core {
            sched: Rc::new(Local::new(shared.sched.clone())),
            shared,
            handle,
            driver: RefCell::new(driver),
            pool,
            zc,
            udp_pool: std::cell::OnceCell::new(),
            udp_pool_config: cfg.udp_pool.clone(),
            udp_waiters: RefCell::new(Vec::new()),
            recv_bundles: cfg.recv_bundles,
            recv_hold_limit: cfg.recv_hold_limit,
            recv_kernel_limit: Cell::new(true),
            copy_waiters: RefCell::new(Vec::new()),
            zc_waiters: RefCell::new(Vec::new()),
            holders: Rc::default(),
            zc_seen: Cell::new(zc_stats.as_ref().map_or(0, |s| s.chunks_given_to_kernel())),
            zc_stats,
            steering_warned: Cell::new(false),
            time: Rc::default(),
            wakers: Cell::new(Vec::new()),
        })
    }

    fn wake_all(&self, wakers: &mut Vec<Waker>) {
        for w in wakers.drain(..) {
            w.wake();
        }
    }

    /// One loop turn: remote queue, ready tasks, expired timers, one kernel entry
    /// (blocking only if nothing is runnable and `busy()` is false), completions.
    pub(crate) fn tick(&self, busy: &dyn Fn() -> bool) -> io::Result<()> {
        if self.shared.dump_requests.pending() {
            self.answer_dumps();
        }
        self.sched.drain_remote();
        self.sched.run(RUN_BUDGET);

        let mut wakers = self.wakers.take();
        // No clock read on a turn without timers (an RPC server's usual turn).
        let timeout = {
            let mut timers = self.time.queue.borrow_mut();
            if timers.is_empty() {
                None
            } else {
                let now = Instant::now();
                let (fired, next) = timers.fire(now, &mut wakers);
                add_owned(&self.shared.metrics.timers_fired, fired as u64);
                next.map(|d| d.saturating_duration_since(now))
            }
        };
        self.wake_all(&mut wakers);

        self.maintain_pools(&mut wakers);

        let mut wait = self.sched.is_idle() && !busy();
        if wait && (self.shared.sched.park() || self.shared.dump_requests.pending() || busy()) {
            wait = false;
        }
        if timeout == Some(Duration::ZERO) {
            wait = false;
        }
        let res = self.driver.borrow_mut().turn(wait, timeout);
        self.time.turn_time.set(None);
        self.shared.sched.unpark_self();
        self.driver.borrow_mut().take_wakers(&mut wakers);
        self.wake_all(&mut wakers);
        self.wakers.set(wakers);
        res
    }

    /// The datagram pool, registered with this worker's ring on first use.
    pub(crate) fn udp_pool(&self) -> io::Result<Rc<CopyPool>> {
        if let Some(pool) = self.udp_pool.get() {
            return Ok(pool.clone());
        }
        let Some(config) = &self.udp_pool_config else {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the runtime has no datagram pool (Builder::udp_pool(None))",
            ));
        };
        // SAFETY: the pool lives in `Core::udp_pool`, declared after `driver`, so the
        // ring is closed first; ops hold clones until their final completion.
        let pool = self
            .driver
            .borrow_mut()
            .with_submitter(|s| unsafe { CopyPool::register(s, config) })
            .map_err(|e| io::Error::other(format!("datagram pool: {e}")))?;
        let weak = Arc::downgrade(&self.shared);
        pool.set_return_notifier(Arc::new(move || {
            if let Some(shared) = weak.upgrade() {
                shared.unpark();
            }
        }));
        let _ = self.shared.udp_pool_stats.set(pool.stats_handle());
        tracing::debug!(
            worker = self.shared.index,
            buffers = config.buffers,
            buffer_size = config.buffer_size,
            "datagram pool registered"
        );
        let pool = Rc::new(pool);
        Ok(self.udp_pool.get_or_init(|| pool).clone())
    }

    /// `returned_to_kernel` of the copy pool (0 without one).
    pub(crate) fn copy_returned(&self) -> u64 {
        self.shared
            .pool_stats
            .get()
            .map_or(0, |s| s.returned_to_kernel())
    }

    /// Chunks the zero-copy pool this worker receives into has given the kernel so far
    /// (returns and growth: see `StatsHandle::chunks_given_to_kernel`). An importer's
    /// receives wait on this, not on returns alone: an area the owner adds while they
    /// wait gives no return, and they would sleep beside free chunks.
    pub(crate) fn zc_progress(&self) -> Option<u64> {
        self.zc_stats.as_ref().map(|s| s.chunks_given_to_kernel())
    }

    /// Publishes buffer returns to the kernel (one tail store per pool, before the
    /// kernel is entered) and wakes receives that waited for buffers.
    fn maintain_pools(&self, wakers: &mut Vec<Waker>) {
        if let Some(pool) = &self.pool {
            // Takes back buffers dropped on other threads, too.
            pool.maintain();
            let mut waiters = self.copy_waiters.borrow_mut();
            let mut free = pool.available();
            if !waiters.is_empty() && free > 0 {
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
            ..
        } = &self.zc
        {
            let events = self.driver.borrow_mut().take_zcrx_events();
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
                .is_some_and(|g| g.grow_if_needed(ring, dry, self.shared.index));
            let progress = self.zc_progress().unwrap_or(0);
            if progress != self.zc_seen.replace(progress) || grew {
                wakers.append(&mut self.zc_waiters.borrow_mut());
                self.shared.zc_waiting.store(false, Ordering::SeqCst);
                for importer in importers {
                    if importer.zc_waiting.swap(false, Ordering::SeqCst) {
                        importer.unpark();
                    }
                }
            }
        }
        self.holders.take_if_low(self, wakers);
        self.wake_all(wakers);
    }

    /// Drops every task's future on this thread, then cancels and drains the ring
    /// until `deadline`. Returns the number of ops that had to be leaked.
    pub(crate) fn shutdown(&self, deadline: Instant) -> usize {
        self.sched.shutdown();
        let timers = std::mem::take(&mut *self.time.queue.borrow_mut());
        drop(timers);
        self.copy_waiters.borrow_mut().clear();
        self.zc_waiters.borrow_mut().clear();
        self.udp_waiters.borrow_mut().clear();
        let leaked = self.driver.borrow_mut().shutdown(deadline);
        if leaked > 0 {
            // A leaked receive may still write into the pools after the ring closes.
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
        leaked
    }
}

/// Body of a background worker thread: build the ring here, report readiness, loop
/// until shutdown, drain.
pub(crate) fn run_background(
    shared: Arc<WorkerShared>,
    handle: Handle,
    cfg: WorkerConfig,
    links: ZcLinks,
    ready: std::sync::mpsc::Sender<io::Result<()>>,
) -> io::Result<()> {
    let core = match Core::new(shared, handle.clone(), &cfg, links) {
        Ok(core) => Rc::new(core),
        Err(e) => {
            let msg = e.to_string();
            let _ = ready.send(Err(e));
            return Err(io::Error::other(msg));
        }
    };
    let index = core.shared.index;
    let Some(_guard) = context::enter(core.clone()) else {
        let _ = ready.send(Err(io::Error::other("worker thread already runs a worker")));
        return Err(io::Error::other("worker thread already runs a worker"));
    };
    let _ = ready.send(Ok(()));
    drop(ready);
    let _span = tracing::debug_span!("zerorx_worker", worker = index).entered();
    tracing::debug!("worker started");
    let looped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        while !handle.is_shutdown() {
            if let Err(e) = core.tick(&|| handle.is_shutdown()) {
                tracing::error!(worker = index, error = %e, "io_uring_enter failed, worker stops");
                return Err(e);
            }
        }
        Ok(())
    }));
    let deadline = match &looped {
        Ok(_) => handle.shutdown_deadline(),
        // Nobody asked for shutdown: give the drain its own bound.
        Err(_) => Instant::now() + Duration::from_secs(1),
    };
    // Always drain, even after a panic: tasks hold ops that hold the core, and only
    // this breaks that cycle and closes their fds.
    let leaked = core.shutdown(deadline);
    tracing::debug!(leaked, "worker stopped");
    match looped {
        Ok(result) => result,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}
