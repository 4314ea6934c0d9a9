//! A domain as application threads see it: the channel to its command loop
//! ([`crate::worker`]), what runs that loop, and counts that keep `fi_close` from
//! pulling the domain from under objects still open in it.
//!
//! Two ways to run the loop (DESIGN.md, "libfabric provider", has the costs):
//! - [`Progress::Thread`]: a worker thread per domain. Any application thread may
//!   call at any time (`FI_THREAD_SAFE`, automatic progress); each operation crosses
//!   to the worker and its completion back.
//! - [`Progress::Caller`]: the thread that opened the domain turns its runtime
//!   whenever it calls in (`crate::engine`): posts go out inside `fi_send`,
//!   completions are reaped inside `fi_cq_read`. For `FI_THREAD_DOMAIN` with
//!   `FI_PROGRESS_MANUAL`, where the application promises to call in to progress.

use crate::engine;
use crate::worker::{self, Cmd};
use futures_channel::mpsc::{unbounded, UnboundedSender};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant};

/// Who runs a domain's command loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Progress {
    /// A worker thread of the domain's own.
    Thread,
    /// The thread that opens the domain, whenever it calls into the provider.
    Caller,
}

impl std::fmt::Display for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Progress::Thread => "progressed by a worker thread of its own",
            Progress::Caller => {
                "progressed by the calling thread inside its calls (FI_THREAD_DOMAIN, \
                 FI_PROGRESS_MANUAL)"
            }
        })
    }
}

enum Runner {
    Thread(Mutex<Option<JoinHandle<()>>>),
    Caller {
        owner: ThreadId,
        /// `owner`'s [`thread_token`], compared on every call (a `ThreadId` is
        /// only reachable through a reference-counted `Thread` handle).
        token: usize,
        /// Commands other threads queued for the owner's next call.
        queued: Arc<AtomicUsize>,
        /// Wakes the owner's blocked turn from another thread (`fi_cq_signal`).
        handle: zerorx::Handle,
        /// A call from another thread was told once that it does not progress.
        warned: AtomicBool,
    },
}

/// This thread, as a number no other live thread has: the address of a
/// thread-local (a dead thread's may come back, but its domains' runtimes went with
/// it, so a match finds nothing to turn).
fn thread_token() -> usize {
    thread_local! {
        static TOKEN: u8 = const { 0 };
    }
    TOKEN.with(|t| t as *const u8 as usize)
}

/// Domains of this process, numbered for the thread-local of caller-driven ones.
static DOMAINS: AtomicU64 = AtomicU64::new(1);

pub(crate) struct DomainShared {
    id: u64,
    cmds: UnboundedSender<Cmd>,
    runner: Runner,
    next_id: AtomicU64,
    /// Endpoints, CQs, AVs, EQs and MRs open in the domain.
    pub children: AtomicUsize,
}

impl DomainShared {
    /// Starts the domain's command loop as `progress` says and waits until its
    /// runtime and zerorx-fabric domain are up, or returns why they are not.
    pub(crate) fn start(progress: Progress) -> Result<Arc<DomainShared>, String> {
        let id = DOMAINS.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = unbounded();
        let runner = match progress {
            Progress::Caller => {
                let queued = Arc::new(AtomicUsize::new(0));
                Runner::Caller {
                    owner: std::thread::current().id(),
                    token: thread_token(),
                    handle: engine::start(id, rx, queued.clone())?,
                    queued,
                    warned: AtomicBool::new(false),
                }
            }
            Progress::Thread => {
                let (ready_tx, ready_rx) = sync_channel(1);
                let thread = std::thread::Builder::new()
                    .name("zerorx-fi-domain".into())
                    .spawn(move || worker::run(rx, ready_tx))
                    .map_err(|e| format!("spawning the domain's worker thread: {e}"))?;
                let started = ready_rx.recv().unwrap_or_else(|_| {
                    Err("the domain's worker thread ended while starting".into())
                });
                if let Err(e) = started {
                    let _ = thread.join();
                    return Err(e);
                }
                Runner::Thread(Mutex::new(Some(thread)))
            }
        };
        Ok(Arc::new(DomainShared {
            id,
            cmds: tx,
            runner,
            next_id: AtomicU64::new(1),
            children: AtomicUsize::new(0),
        }))
    }

    pub(crate) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Whether this thread is a caller-driven domain's owner, the one thread that
    /// can turn its runtime.
    fn is_owner(&self) -> bool {
        matches!(&self.runner, Runner::Caller { token, .. } if *token == thread_token())
    }

    /// Whether this thread turns the domain's runtime ([`is_owner`](Self::is_owner));
    /// another thread's call to a caller-driven domain is told once, in the log, that
    /// it does not progress it.
    fn drives_here(&self) -> bool {
        let here = self.is_owner();
        if let Runner::Caller { owner, warned, .. } = &self.runner {
            if !here && !warned.swap(true, Ordering::Relaxed) {
                crate::ffi::warn(&format!(
                    "a call from {:?} into a domain progressed by the thread that opened it \
                     ({owner:?}, FI_THREAD_DOMAIN with FI_PROGRESS_MANUAL) does not progress \
                     it: call from that thread, or ask for FI_PROGRESS_AUTO",
                    std::thread::current().id()
                ));
            }
        }
        here
    }

    /// Makes progress if this thread drives the domain: one non-blocking turn of its
    /// runtime (posts go out, completions are reaped). True if it turned.
    pub(crate) fn progress(&self) -> bool {
        self.drives_here() && self.turn(None)
    }

    fn turn(&self, wait: Option<Duration>) -> bool {
        match engine::turn(self.id, wait) {
            Ok(turned) => turned,
            Err(e) => {
                crate::ffi::warn(&format!("progressing the domain: {e}"));
                false
            }
        }
    }

    /// Waits until `check` gives an answer or `limit` passes (`None`: forever;
    /// `None` back on timeout). On a caller-driven domain's own thread it turns the
    /// runtime meanwhile, since nothing else would produce the answer; anywhere else
    /// the answer comes from the worker, and `block` waits for it the queue's way.
    pub(crate) fn wait_for<T>(
        &self,
        limit: Option<Duration>,
        mut check: impl FnMut() -> Option<T>,
        block: impl FnOnce(Option<Duration>) -> Option<T>,
    ) -> Option<T> {
        if !self.drives_here() {
            return block(limit);
        }
        let deadline = limit.map(|l| Instant::now() + l);
        loop {
            if let Some(v) = check() {
                return Some(v);
            }
            let left = match deadline {
                None => Duration::from_secs(3600),
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => left,
                    _ => return None,
                },
            };
            if !self.turn(Some(left)) {
                return check();
            }
        }
    }

    /// A duplicate of the readiness eventfd of a caller-driven domain's runtime
    /// (`zerorx::Runtime::readiness_fd`), for its `FI_WAIT_FD` CQs; only its own
    /// thread may ask. `None` on a worker-thread domain, whose CQs have fds of their
    /// own.
    pub(crate) fn readiness_fd(&self) -> Option<Result<std::os::fd::OwnedFd, String>> {
        let Runner::Caller { owner, .. } = &self.runner else {
            return None;
        };
        Some(if self.is_owner() {
            engine::readiness_fd(self.id)
                .and_then(|fd| fd.ok_or_else(|| "the domain's runtime is gone".to_string()))
        } else {
            Err(format!(
                "this domain is progressed by the thread that opened it ({owner:?}): open \
                 its wait-fd CQs from that thread"
            ))
        })
    }

    /// Wakes the thread driving the domain if it is blocked in a turn (a CQ's
    /// `fi_cq_signal` from another thread); nothing on a worker-thread domain, whose
    /// waiters sleep on the queues themselves.
    pub(crate) fn nudge(&self) {
        if let Runner::Caller { handle, .. } = &self.runner {
            handle.spawn_on(0, async {});
        }
    }

    /// Hands `cmd` to the command loop (on a caller-driven domain's own thread: runs
    /// it at once and turns the ring); false when the loop is gone.
    pub(crate) fn send(&self, cmd: Cmd) -> bool {
        if self.drives_here() {
            return match engine::run(self.id, cmd) {
                Ok(ran) => ran,
                Err(e) => {
                    crate::ffi::warn(&format!("running an operation: {e}"));
                    false
                }
            };
        }
        let sent = self.cmds.unbounded_send(cmd).is_ok();
        if let (true, Runner::Caller { queued, .. }) = (sent, &self.runner) {
            queued.fetch_add(1, Ordering::Release);
        }
        sent
    }

    /// Sends the command `make` builds around a reply channel and waits for the reply.
    pub(crate) fn call<T>(&self, make: impl FnOnce(SyncSender<T>) -> Cmd) -> Result<T, String> {
        if let Runner::Caller { owner, .. } = &self.runner {
            if !self.is_owner() {
                return Err(format!(
                    "this domain is progressed by the thread that opened it ({owner:?}, \
                     FI_THREAD_DOMAIN with FI_PROGRESS_MANUAL): open endpoints and register \
                     memory from that thread, or ask for FI_PROGRESS_AUTO"
                ));
            }
        }
        let (tx, rx) = sync_channel(1);
        if !self.send(make(tx)) {
            return Err("the domain's command loop is gone".into());
        }
        match self.runner {
            Runner::Thread(_) => rx.recv().map_err(|_| ()),
            // The owner's `send` carried the command out before returning, reply
            // included.
            Runner::Caller { .. } => rx.try_recv().map_err(|_| ()),
        }
        .map_err(|()| "the domain's command loop dropped the request".into())
    }

    /// Registers `[ptr, ptr+len)` with the command loop for remote `access` under `key`.
    pub(crate) fn register(
        &self,
        ptr: usize,
        len: usize,
        access: zerorx_fabric::Access,
        key: u64,
    ) -> Result<(), String> {
        self.call(|reply| Cmd::RegMr {
            ptr,
            len,
            access,
            key,
            reply,
        })?
    }

    /// Deregisters what `register` registered under `key`.
    pub(crate) fn deregister(&self, key: u64) {
        let _ = self.call(|reply| Cmd::CloseMr { key, reply });
    }

    /// Stops the command loop (it closes every endpoint left) and waits for it. A
    /// caller-driven domain closed from another thread than its own leaves its
    /// runtime to that thread's exit (it cannot be touched from here).
    pub(crate) fn stop(&self) {
        self.cmds.close_channel();
        match &self.runner {
            Runner::Thread(thread) => {
                let t = thread.lock().unwrap_or_else(|p| p.into_inner()).take();
                if let Some(t) = t {
                    let _ = t.join();
                }
            }
            Runner::Caller { owner, .. } => {
                if !engine::stop(self.id) && !self.is_owner() {
                    crate::ffi::warn(&format!(
                        "a domain progressed by {owner:?} was closed from {:?}: its ring \
                         belongs to {owner:?} and closes when that thread exits (at once if \
                         it has)",
                        std::thread::current().id()
                    ));
                }
            }
        }
    }
}

impl Drop for DomainShared {
    fn drop(&mut self) {
        self.stop();
    }
}
