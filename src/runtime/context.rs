//! The thread-local "current worker" of the calling thread.

use super::worker::Core;
use std::cell::RefCell;
use std::rc::Rc;

thread_local! {
    static CURRENT: RefCell<Option<Rc<Core>>> = const { RefCell::new(None) };
}

/// The worker running on this thread, if any.
pub(crate) fn current() -> Option<Rc<Core>> {
    CURRENT.try_with(|c| c.borrow().clone()).ok().flatten()
}

/// Runs `f` with this thread's worker; `None` if there is none (or the thread-local is
/// being destroyed).
pub(crate) fn with_core<R>(f: impl FnOnce(&Core) -> R) -> Option<R> {
    CURRENT
        .try_with(|c| c.borrow().as_deref().map(f))
        .ok()
        .flatten()
}

/// Makes `core` this thread's worker until dropped.
pub(crate) struct EnterGuard(());

/// Queues a MSG_RING wake-up to `target` on this thread's worker's ring (false when
/// there is none, or its driver is busy): what `wake` uses on worker threads.
fn queue_msg_ring(target: std::os::fd::RawFd) -> bool {
    with_core(|core| match core.driver.try_borrow_mut() {
        Ok(mut d) => d.push_msg_ring(target).is_ok(),
        Err(_) => false,
    }) == Some(true)
}

/// Installs `core`; `None` if the thread already runs a worker (nested `block_on`).
pub(crate) fn enter(core: Rc<Core>) -> Option<EnterGuard> {
    crate::wake::set_local_queue(queue_msg_ring);
    CURRENT.with(|c| {
        let mut c = c.borrow_mut();
        if c.is_some() {
            return None;
        }
        crate::time::enter(core.time.clone());
        crate::executor::enter(core.sched.clone());
        *c = Some(core);
        Some(EnterGuard(()))
    })
}

impl Drop for EnterGuard {
    fn drop(&mut self) {
        // Taken out first and dropped after the borrow ends: dropping the core can run
        // destructors that look at the context.
        let old = CURRENT.try_with(|c| c.borrow_mut().take()).ok().flatten();
        crate::time::exit();
        crate::executor::exit();
        drop(old);
    }
}
