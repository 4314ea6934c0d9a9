//! The per-worker task scheduler: local run queue, remote queue, task registry.

pub(crate) mod join;
pub(crate) mod join_wakers;
pub(crate) mod registry;
pub(crate) mod task;

pub use join::{JoinError, JoinHandle};

use crate::metrics::{add_owned, add_shared};
use crate::runtime::context;
use crate::runtime::worker::{Core, Remote, WorkerShared};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use task::TaskRef;

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
    match context::current() {
        Some(core) => spawn_local(&core, future),
        None => panic!("zerorx::spawn called outside a zerorx runtime worker"),
    }
}

pub(crate) fn spawn_local<F>(core: &Core, future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let (task, handle) = TaskRef::new(future, core.shared.clone());
    core.register(&task);
    core.run_queue.borrow_mut().push_back(task);
    add_owned(&core.shared.metrics.tasks_spawned, 1);
    JoinHandle::new(handle)
}

/// Spawns a `Send` future on `worker` from any thread.
pub(crate) fn spawn_remote<F>(worker: &Arc<WorkerShared>, future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    // On the target worker itself, skip the channel.
    if let Some(core) = context::current().filter(|c| Arc::ptr_eq(&c.shared, worker)) {
        return spawn_local(&core, future);
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
pub(crate) fn spawn_remote_with<M, F>(worker: &Arc<WorkerShared>, make: M) -> JoinHandle<F::Output>
where
    M: FnOnce() -> F + Send + 'static,
    F: Future + 'static,
    F::Output: Send + 'static,
{
    if let Some(core) = context::current().filter(|c| Arc::ptr_eq(&c.shared, worker)) {
        return spawn_local(&core, make());
    }
    // Until its first poll the task's future holds only `make` (which is `Send`); it is
    // registered on the worker before that poll, so if it is ever dropped on another
    // thread (runtime gone), only `make` is dropped there.
    let (task, handle) = TaskRef::new(async move { make().await }, worker.clone());
    add_shared(&worker.metrics.remote_spawns, 1);
    worker.push_remote(Remote::Spawn(task));
    JoinHandle::new(handle)
}
