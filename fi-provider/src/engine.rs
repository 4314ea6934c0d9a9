//! Domains progressed by the application's own thread (`FI_THREAD_DOMAIN` with
//! `FI_PROGRESS_MANUAL`): the domain's one-worker zerorx runtime and its
//! [`DomainState`] live in a thread-local of the thread that opened the domain, and
//! that thread's calls into the provider run its commands at once
//! (`zerorx::Runtime::enter`) and turn its ring (`zerorx::Runtime::turn`). The
//! runtime never crosses threads: its ring is single-issuer and its parts are
//! thread-bound, which is why it sits in a thread-local rather than in the domain
//! object other threads can see. Commands from other threads wait in the domain's
//! channel until the owner's next call.
//!
//! A turn with nothing to do costs no system call, so an application spinning on
//! `fi_cq_read` busy-polls the ring the way `tcp;ofi_rxm` busy-polls its sockets,
//! with no hand-off to another thread on either side of a transfer, and completions
//! are taken from each endpoint's queue after the turn rather than by a task.

use crate::worker::{Cmd, DomainState, Reaping};
use futures_channel::mpsc::UnboundedReceiver;
use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

struct Engine {
    domain: u64,
    rt: zerorx::Runtime,
    state: DomainState,
    /// Commands other threads sent, and how many (checked before the channel, whose
    /// empty poll costs more than a load).
    inbox: RefCell<UnboundedReceiver<Cmd>>,
    queued: Arc<AtomicUsize>,
}

impl Engine {
    /// Runs the commands other threads sent, then `cmd` (if any): in that order, as
    /// an application serialising its calls (`FI_THREAD_DOMAIN`) made them. With
    /// `wait`, then one turn blocking up to it, and moves completions to the
    /// application's queues. All inside one `enter`, so the call installs the
    /// runtime's context once.
    fn call(&self, cmd: Option<Cmd>, wait: Option<Option<Duration>>) -> Result<(), String> {
        self.rt
            .enter(|| {
                if self.queued.swap(0, Ordering::Acquire) > 0 {
                    loop {
                        let next = self.inbox.borrow_mut().try_recv();
                        match next {
                            Ok(cmd) => self.state.handle(cmd),
                            // Empty, or closed (the domain is being closed).
                            Err(_) => break,
                        }
                    }
                }
                if let Some(cmd) = cmd {
                    self.state.handle(cmd);
                }
                let Some(wait) = wait else {
                    return Ok(());
                };
                let turned = self.rt.turn(wait);
                self.state.reap();
                turned
            })
            .and_then(|turned| turned)
            .map_err(|e| e.to_string())
    }
}

thread_local! {
    static ENGINES: RefCell<Vec<Engine>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on domain `domain`'s engine; `Ok(None)` when it is not on this thread.
fn with<R>(domain: u64, f: impl FnOnce(&Engine) -> Result<R, String>) -> Result<Option<R>, String> {
    ENGINES.with(|e| {
        let engines = e
            .try_borrow()
            .map_err(|_| "the domain's runtime is being opened or closed".to_string())?;
        match engines.iter().find(|g| g.domain == domain) {
            Some(g) => f(g).map(Some),
            None => Ok(None),
        }
    })
}

/// Builds domain `domain`'s runtime and state on this thread, returning the
/// runtime's handle (for wake-ups from other threads).
pub(crate) fn start(
    domain: u64,
    inbox: UnboundedReceiver<Cmd>,
    queued: Arc<AtomicUsize>,
) -> Result<zerorx::Handle, String> {
    let rt = zerorx::Runtime::builder()
        .threads(1)
        .build()
        .map_err(|e| format!("starting the domain's zerorx runtime: {e}"))?;
    let state = rt
        .enter(|| DomainState::open(Reaping::Turn))
        .map_err(|e| e.to_string())??;
    let handle = rt.handle().clone();
    let engine = Engine {
        domain,
        rt,
        state,
        inbox: RefCell::new(inbox),
        queued,
    };
    ENGINES.with(|e| match e.try_borrow_mut() {
        Ok(mut engines) => {
            engines.push(engine);
            Ok(handle)
        }
        Err(_) => Err("the thread's domains are busy".to_string()),
    })
}

/// Carries out `cmd` on domain `domain` now, then (if it gave the kernel work) turns
/// its ring once without blocking, so an operation posted goes out inside the call.
/// `Ok(false)` when the domain's runtime is not on this thread.
pub(crate) fn run(domain: u64, cmd: Cmd) -> Result<bool, String> {
    // A receive or a cancel has nothing for the kernel: its effects (a match with a
    // waiting message, the cancelled entry) are reaped by the next read, which turns
    // anyway (counted: a turn per posted receive was a fifth of a 64 B ping-pong's
    // instructions).
    let turn = cmd.needs_turn().then_some(None);
    with(domain, |g| g.call(Some(cmd), turn)).map(|r| r.is_some())
}

/// Runs the commands other threads sent, one turn of domain `domain`'s runtime
/// (blocking up to `wait`, see `zerorx::Runtime::turn`), then moves completions to
/// the application's queues. `Ok(false)` when the domain's runtime is not on this
/// thread.
pub(crate) fn turn(domain: u64, wait: Option<Duration>) -> Result<bool, String> {
    with(domain, |g| g.call(None, Some(wait))).map(|r| r.is_some())
}

/// A duplicate of domain `domain`'s runtime readiness eventfd (registered with its
/// ring at the first call); `Ok(None)` when the runtime is not on this thread.
pub(crate) fn readiness_fd(domain: u64) -> Result<Option<std::os::fd::OwnedFd>, String> {
    with(domain, |g| {
        g.rt.readiness_fd()
            .and_then(|fd| fd.try_clone_to_owned())
            .map_err(|e| e.to_string())
    })
}

/// Closes domain `domain`'s endpoints and ends its runtime on this thread. False
/// when it is not on this thread.
pub(crate) fn stop(domain: u64) -> bool {
    let engine = ENGINES.with(|e| {
        let mut engines = e.try_borrow_mut().ok()?;
        let at = engines.iter().position(|g| g.domain == domain)?;
        Some(engines.swap_remove(at))
    });
    let Some(engine) = engine else {
        return false;
    };
    let _ = engine.call(None, Some(None));
    let _ = engine.rt.enter(|| engine.state.close());
    // Lets the closes go out before the runtime's own shutdown drains the ring.
    let _ = engine.rt.turn(None);
    drop(engine);
    true
}
