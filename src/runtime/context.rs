//! The thread-local "current worker" of the calling thread.

use super::worker::Core;
use crate::thread_slot::{self, Owner};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

thread_local! {
    static CURRENT: RefCell<Option<Owner<Core>>> = const { RefCell::new(None) };
    static CORE: Cell<*const Core> = const { Cell::new(std::ptr::null()) };
}

/// The worker running on this thread, if any.
pub(crate) fn current() -> Option<Rc<Core>> {
    thread_slot::get(&CORE)
}

/// Runs `f` with this thread's worker; `None` if there is none (or the thread-local is
/// being destroyed).
pub(crate) fn with_core<R>(f: impl FnOnce(&Core) -> R) -> Option<R> {
    thread_slot::with(&CORE, f)
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
    let (time, sched) = (core.time.clone(), core.sched.clone());
    if !thread_slot::install(&CURRENT, &CORE, core) {
        return None;
    }
    crate::time::enter(time);
    crate::executor::enter(sched);
    Some(EnterGuard(()))
}

impl Drop for EnterGuard {
    fn drop(&mut self) {
        // Taken out first and dropped after the borrow ends: dropping the core can run
        // destructors that look at the context.
        let old = thread_slot::take(&CURRENT);
        crate::time::exit();
        crate::executor::exit();
        drop(old);
    }
}
