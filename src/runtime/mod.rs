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
mod owned_loop;
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

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("handle", &self.handle)
            .finish()
    }
}
