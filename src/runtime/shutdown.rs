//! Stopping a runtime: signal the workers, drain worker 0 here, join the others and
//! surface what went wrong.

use super::context;
use super::Runtime;
use std::any::Any;
use std::io;
use std::time::{Duration, Instant};

fn panic_message(p: &(dyn Any + Send)) -> &str {
    p.downcast_ref::<&str>()
        .copied()
        .or_else(|| p.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("non-string panic payload")
}

impl Runtime {
    /// Stops every worker: their tasks are dropped, in-flight ops cancelled, and
    /// completions drained until no op is left or `timeout` passes; then the rings are
    /// closed; blocking jobs still running get what is left of `timeout`. Errors name
    /// the workers that failed, panicked, or had to leak ops still in the kernel when
    /// the timeout expired, and the blocking jobs abandoned (running or never started).
    pub fn shutdown(mut self, timeout: Duration) -> io::Result<()> {
        self.shutdown_inner(timeout)
    }

    pub(crate) fn shutdown_inner(&mut self, timeout: Duration) -> io::Result<()> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        let deadline = Instant::now() + timeout;
        let _span = tracing::debug_span!("zerorx_shutdown", ?timeout).entered();
        self.handle.begin_shutdown(deadline);

        let mut errors = Vec::new();
        let leaked = {
            // Worker 0's tasks are dropped with its context installed, as they ran.
            let _guard = context::enter(self.core0.clone());
            self.core0.shutdown(deadline)
        };
        if leaked > 0 {
            errors.push(format!("worker 0 leaked {leaked} ops still in flight"));
        }
        for (index, t) in self.threads.drain(..) {
            match t.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => errors.push(format!("worker {index} failed: {e}")),
                Err(p) => errors.push(format!("worker {index} panicked: {}", panic_message(&*p))),
            }
        }
        // Blocking jobs get what is left of the time; those still running then are
        // left to finish on their own threads, and named.
        let abandoned = self.handle.inner.blocking.shutdown(deadline);
        if !abandoned.is_empty() {
            errors.push(abandoned.to_string());
        }
        for m in self.handle.metrics() {
            if m.leaked_ops > 0 && m.worker != 0 {
                errors.push(format!(
                    "worker {} leaked {} ops still in flight",
                    m.worker, m.leaked_ops
                ));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(io::Error::other(errors.join("; ")))
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown_inner(self.shutdown_timeout) {
            tracing::error!(error = %e, "runtime shutdown");
        }
    }
}
