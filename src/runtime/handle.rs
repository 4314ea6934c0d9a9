//! [`Handle`]: the `Send + Sync` face of a runtime, for spawning onto workers from any
//! thread and reading counters.

use super::context;
use super::dump::DumpStatus;
use super::receive_mode::ReceiveModeReport;
use super::worker::WorkerShared;
use crate::blocking::BlockingPool;
use crate::driver::RingFlags;
use crate::executor::{self, JoinHandle};
use crate::metrics::WorkerMetricsSnapshot;
use crate::wake::WakeMode;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub(crate) struct Shared {
    pub(crate) workers: Vec<Arc<WorkerShared>>,
    pub(crate) wake_mode: WakeMode,
    receive: ReceiveModeReport,
    placement: super::placement::Placement,
    tuning: Vec<super::tuning::Setting>,
    shutdown: AtomicBool,
    deadline: Mutex<Option<Instant>>,
    /// The threads for blocking work, shared by the workers.
    pub(crate) blocking: BlockingPool,
}

/// A cheap, cloneable reference to a runtime, usable from any thread.
#[derive(Clone)]
pub struct Handle {
    pub(crate) inner: Arc<Shared>,
}

impl Handle {
    pub(crate) fn new(
        workers: Vec<Arc<WorkerShared>>,
        wake_mode: WakeMode,
        receive: ReceiveModeReport,
        tuning: Vec<super::tuning::Setting>,
        blocking: BlockingPool,
    ) -> Handle {
        Handle {
            inner: Arc::new(Shared {
                workers,
                wake_mode,
                placement: super::placement::Placement::for_report(&receive),
                tuning,
                receive,
                shutdown: AtomicBool::new(false),
                deadline: Mutex::new(None),
                blocking,
            }),
        }
    }

    /// The handle of the runtime whose worker runs on this thread, if any.
    pub fn try_current() -> Option<Handle> {
        context::with_core(|core| core.handle.clone())
    }

    /// Number of workers (worker 0 is the thread that calls `block_on`).
    pub fn threads(&self) -> usize {
        self.inner.workers.len()
    }

    /// The index of the worker running on this thread, if it belongs to this runtime.
    pub fn current_worker(&self) -> Option<usize> {
        context::with_core(|core| {
            Arc::ptr_eq(&core.handle.inner, &self.inner).then_some(core.shared.index)
        })
        .flatten()
    }

    /// The receive mode the runtime runs in (zero-copy or copy), why, and what each
    /// worker receives with.
    pub fn receive_mode(&self) -> &ReceiveModeReport {
        &self.inner.receive
    }

    /// How wake-ups are delivered to parked workers.
    pub fn wake_mode(&self) -> WakeMode {
        self.inner.wake_mode
    }

    /// The setup flags each worker's ring was built with (`None` for a worker whose
    /// ring does not exist yet).
    pub fn ring_flags(&self) -> Vec<Option<RingFlags>> {
        self.inner
            .workers
            .iter()
            .map(|w| w.ring_flags.get().copied())
            .collect()
    }

    fn worker(&self, worker: usize) -> &Arc<WorkerShared> {
        match self.inner.workers.get(worker) {
            Some(w) => w,
            None => panic!(
                "zerorx: worker index {worker} out of range (runtime has {})",
                self.inner.workers.len()
            ),
        }
    }

    /// Spawns `future` on worker `worker`. Callable from any thread; the returned
    /// handle can be awaited on any thread. If the runtime has shut down, the handle
    /// resolves to [`JoinError::Cancelled`](crate::JoinError::Cancelled). Worker 0
    /// runs only while its thread is inside [`Runtime::block_on`](crate::Runtime::block_on):
    /// tasks sent to it wait until then.
    ///
    /// # Panics
    /// If `worker >= self.threads()`.
    pub fn spawn_on<F>(&self, worker: usize, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        executor::spawn_remote(&self.worker(worker).sched, future)
    }

    /// Like [`spawn_on`](Self::spawn_on), but the future is made on the target worker by
    /// `make`, so it may be `!Send` (hold sockets, `Rc`s, ops): only `make` crosses
    /// threads.
    ///
    /// # Panics
    /// If `worker >= self.threads()`.
    pub fn spawn_on_with<M, F>(&self, worker: usize, make: M) -> JoinHandle<F::Output>
    where
        M: FnOnce() -> F + Send + 'static,
        F: Future + 'static,
        F::Output: Send + 'static,
    {
        executor::spawn_remote_with(&self.worker(worker).sched, make)
    }

    /// Runs `make(worker_index)` on every worker and spawns the future it returns
    /// there (e.g. one listener per worker on a `SO_REUSEPORT` port).
    pub fn spawn_on_each<M, F>(&self, make: M) -> Vec<JoinHandle<F::Output>>
    where
        M: Fn(usize) -> F + Send + Sync + 'static,
        F: Future + 'static,
        F::Output: Send + 'static,
    {
        let make = Arc::new(make);
        (0..self.threads())
            .map(|i| {
                let make = make.clone();
                self.spawn_on_with(i, move || make(i))
            })
            .collect()
    }

    /// Counters of each worker's copy pool (`None` for a worker without one).
    pub fn pool_stats(&self) -> Vec<Option<zcrx::PoolStatsSnapshot>> {
        self.inner
            .workers
            .iter()
            .map(|w| w.pool_stats.get().map(|s| s.snapshot()))
            .collect()
    }

    /// Counters of each worker's datagram pool (`None` until a UDP socket on that
    /// worker received from it).
    pub fn udp_pool_stats(&self) -> Vec<Option<zcrx::PoolStatsSnapshot>> {
        self.inner
            .workers
            .iter()
            .map(|w| w.udp_pool_stats.get().map(|s| s.snapshot()))
            .collect()
    }

    /// Counters of the zero-copy pool each worker receives into (`None` in copy mode
    /// and for workers served by handover). Importers report their owner's pool.
    pub fn zc_pool_stats(&self) -> Vec<Option<zcrx::PoolStatsSnapshot>> {
        self.inner
            .workers
            .iter()
            .map(|w| w.zc_pool_stats.get().map(|s| s.snapshot()))
            .collect()
    }

    /// The effective value of every tunable setting and where it came from (code,
    /// `ZERORX_*` environment, default), as the runtime was built.
    pub fn tuning(&self) -> &[super::tuning::Setting] {
        &self.inner.tuning
    }

    /// The worker that owns the zero-copy queue `socket`'s packets arrive on, when the
    /// runtime binds NIC queues to several workers and the kernel names the socket's
    /// NAPI instance (`SO_INCOMING_NAPI_ID`); `None` otherwise (copy or device-less
    /// mode, loopback, no NAPI id). See [`TcpListener::accept_placed`](crate::net::TcpListener::accept_placed).
    pub fn worker_for(&self, socket: &impl std::os::fd::AsRawFd) -> Option<usize> {
        self.inner.placement.worker_for(socket)
    }

    /// The ZCRX instance each worker's ring receives with (`None` in copy mode and for
    /// workers served by handover). An importer names its owner's area.
    pub fn zc_instances(&self) -> Vec<Option<super::ZcInstance>> {
        self.inner
            .workers
            .iter()
            .map(|w| w.zc_instance.get().cloned())
            .collect()
    }

    /// A state dump: per worker its ring, every op in flight (opcode, age, fd and
    /// socket addresses, the task waiting on it), tasks and what each waits on,
    /// timers and receive pools; per process the open fds and sockets. Callable from
    /// any thread, including a worker's task.
    ///
    /// Each worker builds its own part at its next loop turn; one that has not
    /// answered within 2 s (a task that never yields; worker 0 while no thread is in
    /// `block_on`) is listed with a note instead. See [`dump_within`](Self::dump_within).
    ///
    /// ```
    /// let rt = zerorx::Runtime::builder().threads(2).build()?;
    /// let dump = rt.block_on(async {
    ///     let listener = zerorx::net::TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    ///     let accept = zerorx::spawn(async move { listener.accept().await.map(|_| ()) });
    ///     zerorx::time::sleep(std::time::Duration::from_millis(20)).await;
    ///     let dump = zerorx::Handle::try_current().expect("on a worker").dump();
    ///     accept.abort();
    ///     Ok::<_, std::io::Error>(dump)
    /// })?;
    /// use zerorx::runtime::IoUringOp;
    /// assert!(dump.workers[0].ops.iter().any(|op| op.opcode == IoUringOp::Accept));
    /// println!("{dump}");
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn dump(&self) -> super::RuntimeDump {
        self.dump_within(std::time::Duration::from_secs(2))
    }

    /// [`dump`](Self::dump), waiting at most `wait` for the workers' answers.
    pub fn dump_within(&self, wait: std::time::Duration) -> super::RuntimeDump {
        let deadline = Instant::now() + wait;
        let here = self.current_worker();
        let asked: Vec<_> = self
            .inner
            .workers
            .iter()
            .map(|w| {
                if Some(w.index) == here || w.is_closed() {
                    return None;
                }
                let (tx, rx) = std::sync::mpsc::channel();
                w.dump_requests.ask(tx);
                // A parked worker wakes; a running one sees the flag at its next turn
                // or in its last look before parking.
                w.unpark();
                Some(rx)
            })
            .collect();
        let workers = self
            .inner
            .workers
            .iter()
            .zip(asked)
            .map(|(w, rx)| match rx {
                None if Some(w.index) == here => context::with_core(|core| core.dump())
                    .unwrap_or_else(|| absent(w.index, DumpStatus::LeftRuntime)),
                None => absent(w.index, DumpStatus::ShutDown),
                Some(rx) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    rx.recv_timeout(left).unwrap_or_else(|_| {
                        absent(
                            w.index,
                            DumpStatus::NoAnswer {
                                waited_ms: wait.as_millis() as u64,
                            },
                        )
                    })
                }
            })
            .collect();
        let (nic_queues, nic_note) =
            super::dump::kernel::nic_queues(self.inner.receive.target.as_ref());
        super::RuntimeDump {
            process: super::dump::kernel::process_state(),
            workers,
            nic_queues,
            nic_note,
            blocking: super::dump::BlockingDump::from_state(self.inner.blocking.state()),
        }
    }

    /// A snapshot of every worker's counters.
    pub fn metrics(&self) -> Vec<WorkerMetricsSnapshot> {
        self.inner
            .workers
            .iter()
            .map(|w| w.metrics.snapshot(w.index))
            .collect()
    }

    pub(crate) fn is_shutdown(&self) -> bool {
        self.inner.shutdown.load(Ordering::SeqCst)
    }

    pub(crate) fn shutdown_deadline(&self) -> Instant {
        let d = *self
            .inner
            .deadline
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        d.unwrap_or_else(Instant::now)
    }

    /// Asks every worker to stop, draining until `deadline`.
    pub(crate) fn begin_shutdown(&self, deadline: Instant) {
        *self
            .inner
            .deadline
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(deadline);
        self.inner.shutdown.store(true, Ordering::SeqCst);
        for w in &self.inner.workers {
            w.unpark();
        }
    }
}

/// The dump entry of worker `index`, which gave none.
fn absent(index: usize, status: DumpStatus) -> super::WorkerDump {
    super::WorkerDump {
        index,
        status,
        ..Default::default()
    }
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("threads", &self.threads())
            .field("wake_mode", &self.inner.wake_mode)
            .finish()
    }
}
