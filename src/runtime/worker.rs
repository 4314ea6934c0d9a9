//! One worker: the thread-owned [`Core`] (ring, scheduler, timers, pools) and the
//! cross-thread [`WorkerShared`] (the scheduler's shared side, counters, pool
//! statistics), plus the loop.

use super::context;
use super::handle::Handle;
use super::receive_plan::ReceiveRole;
use super::rx_state::{register_copy_pool, RecvMemory, RxLimits, RxState};
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
use std::sync::atomic::AtomicBool;
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
    /// The receive memory limit and what overflow receives may use of it.
    pub(crate) recv_memory: RecvMemory,
    /// Zero-copy target and pool size (zero-copy modes).
    pub(crate) zc: Option<ZcSetup>,
    /// The pool UDP sockets receive datagrams into, registered at first use.
    pub(crate) udp_pool: Option<CopyPoolConfig>,
    /// When queued sends go out zero-copy.
    pub(crate) send_zc: super::SendZeroCopy,
    /// Bytes of each worker's registered send arena.
    pub(crate) send_arena: usize,
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
    /// Pools, waiting receives, limits. Declared after `driver`: the ring must be
    /// closed before the pools' memory can go (the `CopyPool::register` contract).
    pub(crate) rx: RxState,
    /// The worker's tasks: run queue and registry (installed on the thread while the
    /// worker runs, for `spawn` and wakes).
    pub(crate) sched: Rc<Local>,
    /// The worker's timers and its clock for the turn (installed on the thread for
    /// the timer futures while the worker runs).
    pub(crate) time: Rc<Timers>,
    /// Scratch space for wakers to call once no borrow is held.
    wakers: Cell<Vec<Waker>>,
    /// The fixed-buffer table, registered with the ring at the first `FixedBuf`.
    pub(crate) fixed: RefCell<Option<Rc<super::fixed_buffers::FixedTable>>>,
    /// When this worker's queued sends go out zero-copy.
    pub(crate) send_zc: super::SendZeroCopy,
    /// Bytes of the registered send arena (`0`: none, or its registration failed),
    /// and the arena once made.
    pub(crate) send_arena_bytes: Cell<usize>,
    pub(crate) send_arena: RefCell<Option<Rc<super::send_arena::Arena>>>,
    /// Memory the application registered for sends (`register_send_memory`).
    pub(crate) send_memory: super::send_memory::SendRegistrations,
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
                // SAFETY: the pool ends up in `Core::rx`, declared after `driver`, so
                // the ring is closed first; ops holding clones are freed only after
                // their final completion, or leaked together with their clone.
                let pool = unsafe { register_copy_pool(&mut driver, pool_cfg, &shared) }
                    .map_err(|e| io::Error::other(format!("receive pool: {e}")))?;
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
        let rx = RxState::new(
            pool,
            zc,
            zc_stats,
            cfg.udp_pool.clone(),
            RxLimits {
                bundles: cfg.recv_bundles,
                hold_limit: cfg.recv_hold_limit,
                memory: cfg.recv_memory,
            },
        );
        Ok(Core {
            sched: Rc::new(Local::new(shared.sched.clone())),
            shared,
            handle,
            driver: RefCell::new(driver),
            rx,
            time: Rc::default(),
            wakers: Cell::new(Vec::new()),
            fixed: RefCell::new(None),
            send_zc: cfg.send_zc,
            send_arena_bytes: Cell::new(cfg.send_arena),
            send_arena: RefCell::new(None),
            send_memory: Default::default(),
        })
    }

    fn wake_all(&self, wakers: &mut Vec<Waker>) {
        // Called three times a turn, mostly with nothing to wake: an empty `drain`
        // still costs its set-up and drop (~18 instructions, counted).
        // One alone (the common case) is popped: a `drain` of one costs as much again.
        match wakers.len() {
            0 => return,
            1 => {
                if let Some(w) = wakers.pop() {
                    w.wake();
                }
                return;
            }
            _ => {}
        }
        for w in wakers.drain(..) {
            w.wake();
        }
    }

    /// One loop turn: remote queue, ready tasks, expired timers, one kernel entry
    /// (blocking only if nothing is runnable and `busy()` is false, for at most `cap`
    /// when given), completions.
    pub(crate) fn tick(&self, busy: &dyn Fn() -> bool, cap: Option<Duration>) -> io::Result<()> {
        if self.shared.dump_requests.pending() {
            self.answer_dumps();
        }
        self.sched.drain_remote();
        self.sched.run(RUN_BUDGET);

        let mut wakers = self.wakers.take();
        // No clock read on a turn without timers, and the tasks' one on a turn with
        // them (late by at most the time the tasks ran this turn).
        let timeout = {
            let mut timers = self.time.queue.borrow_mut();
            if timers.is_empty() {
                None
            } else {
                let now = self.time.turn_time();
                let (fired, next) = timers.fire_due(now, &mut wakers);
                add_owned(&self.shared.metrics.timers_fired, fired as u64);
                next.map(|d| d.saturating_duration_since(now))
            }
        };
        self.wake_all(&mut wakers);

        let look_within = self.rx.maintain(&self.driver, &self.shared, &mut wakers);
        self.wake_all(&mut wakers);
        let timeout = [timeout, look_within, cap].into_iter().flatten().min();

        let mut wait = self.sched.is_idle() && !busy();
        if wait && (self.shared.sched.park() || self.shared.dump_requests.pending() || busy()) {
            wait = false;
        }
        if timeout == Some(Duration::ZERO) {
            wait = false;
        }
        let res = loop {
            let res = self.driver.borrow_mut().turn(wait, timeout);
            self.time.turn_time.set(None);
            self.shared.sched.unpark_self();
            self.driver.borrow_mut().take_wakers(&mut wakers);
            self.wake_all(&mut wakers);
            // A wait ended only by queued sends finishing (an echo's reply, reaped a
            // turn after it was made) changed nothing the loop acts on but the pools:
            // look after them and wait again, without the rest of a tick (counted:
            // a reply's second turn was ~10 % of a 64 B echo request).
            if !(wait && timeout.is_none() && res.is_ok() && self.driver.borrow().quiet_turn()) {
                break res;
            }
            let look_within = self.rx.maintain(&self.driver, &self.shared, &mut wakers);
            if !wakers.is_empty() || look_within.is_some() {
                self.wake_all(&mut wakers);
                break res;
            }
            if self.shared.sched.park() || self.shared.dump_requests.pending() || busy() {
                self.shared.sched.unpark_self();
                break res;
            }
        };
        self.wakers.set(wakers);
        res
    }

    /// Runs the tasks that are ready (those the last turn's completions woke).
    pub(crate) fn run_ready(&self) {
        self.sched.drain_remote();
        self.sched.run(RUN_BUDGET);
    }

    /// The datagram pool, registered with this worker's ring on first use.
    pub(crate) fn udp_pool(&self) -> io::Result<Rc<CopyPool>> {
        self.rx.udp_pool(&self.driver, &self.shared)
    }

    /// Drops every task's future on this thread, then cancels and drains the ring
    /// until `deadline`. Returns the number of ops that had to be leaked.
    pub(crate) fn shutdown(&self, deadline: Instant) -> usize {
        self.sched.shutdown();
        let timers = std::mem::take(&mut *self.time.queue.borrow_mut());
        drop(timers);
        let leaked = self.driver.borrow_mut().shutdown(deadline);
        self.rx.shutdown(leaked > 0);
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
            if let Err(e) = core.tick(&|| handle.is_shutdown(), None) {
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
