//! Tasks and their scheduling: a task ([`task`]) belongs to one worker's scheduler
//! ([`scheduler`]: local run queue, remote queue, task registry), which the worker
//! embeds and installs on its thread ([`enter`]) while it runs.

pub(crate) mod join;
pub(crate) mod join_wakers;
pub(crate) mod registry;
pub(crate) mod scheduler;
pub(crate) mod task;

pub use join::{JoinError, JoinHandle};

use crate::metrics::{add_owned, add_shared};
use crate::thread_slot::{self, Owner};
use scheduler::{Local, Remote, Shared};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use task::TaskRef;

thread_local! {
    /// The scheduler of the worker running on this thread.
    static CURRENT: RefCell<Option<Owner<Local>>> = const { RefCell::new(None) };
    static LOCAL: Cell<*const Local> = const { Cell::new(std::ptr::null()) };
}

/// Makes `local` this thread's scheduler (the worker's loop runs here) until [`exit`].
pub(crate) fn enter(local: Rc<Local>) {
    thread_slot::install(&CURRENT, &LOCAL, local);
}

/// Removes this thread's scheduler.
pub(crate) fn exit() {
    // Taken out first and dropped after the borrow ends: dropping it can drop tasks,
    // whose destructors may look at the scheduler.
    let old = thread_slot::take(&CURRENT);
    drop(old);
}

/// Runs `f` with this thread's scheduler; `None` if there is none (or the
/// thread-local is being destroyed).
pub(crate) fn with_local<R>(f: impl FnOnce(&Local) -> R) -> Option<R> {
    thread_slot::with(&LOCAL, f)
}

/// This thread's scheduler, if a worker runs here.
fn current() -> Option<Rc<Local>> {
    thread_slot::get(&LOCAL)
}

/// Spawns a task on the current worker. The future need not be `Send`: it never
/// leaves this thread.
///
/// # Panics
/// When called outside a zerorx worker thread.
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    match current() {
        Some(local) => spawn_local(&local, future),
        None => panic!("zerorx::spawn called outside a zerorx runtime worker"),
    }
}

pub(crate) fn spawn_local<F>(local: &Local, future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let (task, handle) = TaskRef::new(future, local.shared.clone());
    local.register(&task);
    local.run_queue.borrow_mut().push_back(task);
    add_owned(&local.shared.metrics.tasks_spawned, 1);
    JoinHandle::new(handle)
}

/// Spawns a `Send` future on `worker` from any thread.
pub(crate) fn spawn_remote<F>(worker: &Arc<Shared>, future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    // On the target worker itself, skip the channel.
    if let Some(local) = current().filter(|l| Arc::ptr_eq(&l.shared, worker)) {
        return spawn_local(&local, future);
    }
    let (task, handle) = TaskRef::new(future, worker.clone());
    add_shared(&worker.metrics.remote_spawns, 1);
    worker.push_remote(Remote::Spawn(task));
    JoinHandle::new(handle)
}

/// Yields to the other tasks of this worker once.
pub async fn yield_now() {
    struct YieldNow(bool);
    impl Future for YieldNow {
        type Output = ();
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if self.0 {
                return Poll::Ready(());
            }
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
    YieldNow(false).await
}

/// Spawns on `worker` the future `make` returns there; only `make` crosses threads.
pub(crate) fn spawn_remote_with<M, F>(worker: &Arc<Shared>, make: M) -> JoinHandle<F::Output>
where
    M: FnOnce() -> F + Send + 'static,
    F: Future + 'static,
    F::Output: Send + 'static,
{
    if let Some(local) = current().filter(|l| Arc::ptr_eq(&l.shared, worker)) {
        return spawn_local(&local, make());
    }
    // Until its first poll the task's future holds only `make` (which is `Send`); it is
    // registered on the worker before that poll, so if it is ever dropped on another
    // thread (runtime gone), only `make` is dropped there.
    let (task, handle) = TaskRef::new(async move { make().await }, worker.clone());
    add_shared(&worker.metrics.remote_spawns, 1);
    worker.push_remote(Remote::Spawn(task));
    JoinHandle::new(handle)
}
