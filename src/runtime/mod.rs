//! The runtime: workers, `block_on`, handles, shutdown.
//!
//! Model: the thread calling [`Runtime::block_on`] is worker 0; it runs the given
//! future and the tasks spawned on worker 0 on its own ring, built on this thread by
//! [`Builder::build`]. `threads(n)` adds `n - 1` background workers. A `Runtime` is
//! therefore tied to the thread that built it (`!Send`); its [`Handle`] is not.

mod blocking;
mod builder;
pub(crate) mod context;
mod dump;
pub(crate) mod fixed_buffers;
mod handle;
pub(crate) mod multishot;
pub(crate) mod op;
#[cfg(test)]
mod op_tests;
mod placement;
pub(crate) mod pressure;
mod receive_mode;
mod receive_plan;
pub(crate) mod rx_state;
mod send_arena;
pub(crate) mod send_memory;
mod send_zero_copy;
mod shutdown;
pub mod tuning;
pub(crate) mod worker;
mod zc_restart;
pub(crate) mod zero_copy;

pub use crate::driver::RingFlags;
pub use blocking::spawn_blocking;
pub use builder::{Builder, ZeroCopySharing};
pub use dump::{
    BlockingDump, BlockingJobDump, DumpSignal, DumpStatus, FdinfoField, FdinfoValue, IoUringOp,
    NicNote, NicQueueDump, OpDump, OpState, PagePoolDump, PoolDump, PoolKind, ProcessState,
    RingDump, RingFlag, RuntimeDump, SendsDump, SocketAddrs, TaskDump, TaskId, TimersDump,
    WorkerDump, WorkerPart,
};
pub use handle::Handle;
pub use receive_mode::{
    ReceiveMode, ReceiveModeReport, ResolvedMode, ZeroCopyTarget, ZeroCopyUnavailable,
    RECEIVE_MODE_SYNTAX,
};
pub use receive_plan::{plan_receive, ReceiveRole};
pub use send_arena::{registered_chunks, RegisteredBuf, REGISTERED_CHUNK};
pub use send_memory::{
    register_receive_pools, register_send_memory, SendMemory, SEND_REGISTRATIONS,
};
pub use send_zero_copy::{SendZeroCopy, DEFAULT_SEND_ZC_THRESHOLD};

/// One worker's ZCRX instance, as [`Handle::zc_instances`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ZcInstance {
    /// The instance's id in this worker's ring (`sqe->zcrx_ifq_idx`).
    pub zcrx_id: u32,
    /// The address range of the area the kernel receives into. Every registered
    /// instance has its own; an imported one reports its owner's.
    pub area: std::ops::Range<usize>,
    /// Imported from another worker rather than registered by this one.
    pub imported: bool,
}

use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;
use worker::{Core, WorkerShared};

/// A running set of workers.
pub struct Runtime {
    handle: Handle,
    core0: Rc<Core>,
    /// Inside [`Runtime::enter`] (a `turn` there finds the context installed) and
    /// inside [`Runtime::turn`] (which must not nest).
    entered: std::cell::Cell<bool>,
    turning: std::cell::Cell<bool>,
    /// The eventfd registered with worker 0's ring ([`Runtime::readiness_fd`]).
    readiness: std::cell::OnceCell<std::os::fd::OwnedFd>,
    threads: Vec<(usize, std::thread::JoinHandle<std::io::Result<()>>)>,
    shutdown_timeout: Duration,
    closed: bool,
}

/// Wakes the future passed to `block_on`.
struct MainWaker {
    woken: AtomicBool,
    worker: Arc<WorkerShared>,
}

impl Wake for MainWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        self.worker.unpark();
    }
}

impl Runtime {
    /// A builder with default settings.
    pub fn builder() -> Builder {
        Builder::new()
    }

    /// A runtime with default settings.
    pub fn new() -> std::io::Result<Runtime> {
        Builder::new().build()
    }

    /// The runtime's handle.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Runs `future` to completion on this thread (worker 0), together with the tasks
    /// spawned on worker 0.
    ///
    /// # Panics
    /// If this thread is already inside a zerorx worker (nested `block_on`), or if the
    /// ring fails with an unrecoverable error.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        let Some(_guard) = context::enter(self.core0.clone()) else {
            panic!("zerorx: block_on called from inside a runtime worker");
        };
        let main = Arc::new(MainWaker {
            woken: AtomicBool::new(true),
            worker: self.core0.shared.clone(),
        });
        let waker = Waker::from(main.clone());
        let mut cx = Context::from_waker(&waker);
        let mut future = pin!(future);
        loop {
            if main.woken.swap(false, Ordering::SeqCst) {
                if let Poll::Ready(v) = future.as_mut().poll(&mut cx) {
                    return v;
                }
            }
            if let Err(e) = self.core0.tick(&|| main.woken.load(Ordering::SeqCst), None) {
                panic!("zerorx: worker 0 ring failed: {e}");
            }
        }
    }
}

impl Runtime {
    /// Runs one turn of worker 0's loop on this thread, for a program that owns its
    /// loop and calls into zerorx to make progress (the libfabric provider's manual
    /// progress, where the application's `fi_cq_read` loop is the loop): the tasks
    /// that are ready, expired timers, one kernel entry, then the tasks its
    /// completions woke.
    ///
    /// With `wait` `None` (or zero) the turn never blocks, and enters the kernel only
    /// with something to submit or completions to run: a turn with nothing to do is a
    /// few loads, no system call. With `Some(d)`, when no task is runnable, the entry
    /// blocks until a completion arrives, a timer is due, another thread wakes the
    /// worker (a [`Handle::spawn_on`] to it, a waker it handed out), or `d` passes.
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// let rt = zerorx::Runtime::builder().threads(1).build()?;
    /// let slept = rt.handle().spawn_on_with(0, || async {
    ///     zerorx::time::sleep(std::time::Duration::from_millis(5)).await;
    /// });
    /// while !slept.is_finished() {
    ///     rt.turn(Some(std::time::Duration::from_millis(50)))?;
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// If this thread is inside a runtime worker already (in `block_on`, or a task),
    /// or the ring fails.
    pub fn turn(&self, wait: Option<Duration>) -> std::io::Result<()> {
        if self.turning.get() {
            return Err(std::io::Error::other(
                "zerorx: Runtime::turn called from inside a turn",
            ));
        }
        if self.entered.get() {
            return self.turn_entered(wait);
        }
        let Some(_guard) = context::enter(self.core0.clone()) else {
            return Err(std::io::Error::other(
                "zerorx: Runtime::turn called from inside a runtime worker",
            ));
        };
        self.turn_entered(wait)
    }

    /// `turn`, with this runtime's context installed on the thread.
    fn turn_entered(&self, wait: Option<Duration>) -> std::io::Result<()> {
        let _turning = Raised::new(&self.turning);
        match wait.filter(|d| !d.is_zero()) {
            None => self.core0.tick(&|| true, None)?,
            Some(d) => self.core0.tick(&|| false, Some(d))?,
        }
        self.core0.run_ready();
        Ok(())
    }
}

impl Runtime {
    /// Runs `f` on this thread as if inside worker 0: [`spawn`](crate::spawn), the
    /// I/O types and timers work in it. What it starts makes progress at the next
    /// [`turn`](Self::turn) or [`block_on`](Self::block_on); a `turn` inside `f`
    /// reuses the context `enter` installed, so a call that starts work and turns
    /// the ring installs it once. For a program that owns
    /// its loop and calls in with work (the libfabric provider posting an operation
    /// inside `fi_send`).
    ///
    /// # Errors
    /// If this thread is inside a runtime worker already.
    pub fn enter<R>(&self, f: impl FnOnce() -> R) -> std::io::Result<R> {
        if self.entered.get() {
            return Ok(f());
        }
        let Some(_guard) = context::enter(self.core0.clone()) else {
            return Err(std::io::Error::other(
                "zerorx: Runtime::enter called from inside a runtime worker",
            ));
        };
        let _entered = Raised::new(&self.entered);
        Ok(f())
    }
}

impl Runtime {
    /// An fd that turns readable whenever worker 0's ring has work for a
    /// [`turn`](Self::turn): a completion, or deferred work the kernel queued (data
    /// arriving for a receive). For a program that owns its loop and sleeps in
    /// `poll`/`epoll` between turns; it drains the fd (an eventfd: read 8 bytes; it
    /// is non-blocking) before its last turn, then sleeps on it.
    ///
    /// Registered with the ring (`IORING_REGISTER_EVENTFD`) at the first call; after
    /// that the kernel signals it for every completion too, which costs little, but
    /// only rings that asked pay it. Timers and other threads' spawns do not signal
    /// it: a program sleeping on it bounds its sleep by its own timers.
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// use std::os::fd::AsRawFd;
    /// let rt = zerorx::Runtime::builder().threads(1).build()?;
    /// let fd = rt.readiness_fd()?.as_raw_fd();
    /// assert!(fd >= 0);
    /// rt.turn(None)?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// If the eventfd cannot be made or the ring refuses it.
    pub fn readiness_fd(&self) -> std::io::Result<std::os::fd::BorrowedFd<'_>> {
        use std::os::fd::{AsFd, AsRawFd};
        if let Some(fd) = self.readiness.get() {
            return Ok(fd.as_fd());
        }
        let fd = crate::wake::new_nonblocking_eventfd()?;
        // The kernel takes its own reference to the eventfd, so the registration
        // never outlives the file whatever the drop order.
        self.core0
            .driver
            .borrow_mut()
            .with_submitter(|s| s.register_eventfd(fd.as_raw_fd()))
            .map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!(
                        "registering the readiness eventfd with the ring \
                         (IORING_REGISTER_EVENTFD): {e}"
                    ),
                )
            })?;
        Ok(self.readiness.get_or_init(|| fd).as_fd())
    }
}

/// Raises a flag for its lifetime, lowering it even when the code inside unwinds (a
/// caller that catches the panic may go on using the runtime).
struct Raised<'a>(&'a std::cell::Cell<bool>);

impl<'a> Raised<'a> {
    fn new(flag: &'a std::cell::Cell<bool>) -> Raised<'a> {
        flag.set(true);
        Raised(flag)
    }
}

impl Drop for Raised<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("handle", &self.handle)
            .finish()
    }
}
