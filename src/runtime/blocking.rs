//! [`spawn_blocking`]: blocking work on the runtime's thread pool, awaited as a task.

use super::handle::Handle;
use crate::executor::{spawn, JoinHandle};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// Runs `f` on the runtime's blocking pool, off the workers, and returns a handle to
/// await its result, as for a task: a blocking library (a database driver, a
/// compressor, `std::fs`, a DNS lookup) stalls only its pool thread, not the worker's
/// other connections.
///
/// The pool starts threads as jobs need them, up to [`Builder::max_blocking_threads`](crate::Builder::max_blocking_threads)
/// (beyond, jobs queue), and lets idle ones go after [`Builder::blocking_keep_alive`](crate::Builder::blocking_keep_alive).
/// A panic in `f` reaches the handle as [`JoinError::Panic`](crate::JoinError) with
/// its message. Aborting or dropping the handle does not stop `f` (a thread cannot be
/// interrupted); its result is dropped. At shutdown the runtime waits for running jobs
/// up to its shutdown timeout, drops queued ones (their handles then fail with a panic
/// saying so) and names what it abandoned in `Runtime::shutdown`'s error. The state
/// dump lists running and queued jobs by their closure's type.
///
/// ```no_run
/// # zerorx::Runtime::new()?.block_on(async {
/// let digest = zerorx::spawn_blocking(|| {
///     std::fs::read("/etc/hostname").map(|b| b.len())   // blocks a pool thread only
/// })
/// .await
/// .expect("the job did not panic")?;
/// # Ok::<_, std::io::Error>(()) })?;
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// # Panics
/// When called outside a zerorx runtime worker, as [`spawn`](crate::spawn) does.
pub fn spawn_blocking<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let Some(handle) = Handle::try_current() else {
        panic!("zerorx::spawn_blocking called outside a zerorx runtime worker");
    };
    let name = std::any::type_name::<F>();
    let (tx, rx) = futures_channel::oneshot::channel();
    let job = Box::new(move || {
        // The result or the panic travels to the awaiting task; a dropped handle
        // makes the send fail, and the result is dropped here.
        let _ = tx.send(catch_unwind(AssertUnwindSafe(f)));
    });
    let refused = handle.inner.blocking.spawn(name, job).is_err();
    spawn(async move {
        if refused {
            panic!("spawn_blocking({name}): the runtime's blocking pool has shut down");
        }
        match rx.await {
            Ok(Ok(value)) => value,
            Ok(Err(payload)) => resume_unwind(payload),
            Err(_) => panic!(
                "spawn_blocking({name}): the job was dropped before it ran (the runtime \
                 shut down, or no pool thread could be started)"
            ),
        }
    })
}
