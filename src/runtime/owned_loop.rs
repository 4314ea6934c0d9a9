//! Running the runtime from a loop the program owns: one [`Runtime::turn`] at a time,
//! work started inside [`Runtime::enter`], and an fd to sleep on between turns
//! ([`Runtime::readiness_fd`]). What the libfabric provider's manual progress runs on:
//! the application's `fi_cq_read` loop is the loop.

use super::context;
use super::Runtime;
use std::cell::Cell;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::time::Duration;

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
    /// worker (a [`Handle::spawn_on`](crate::Handle::spawn_on) to it, a waker it handed out), or `d` passes.
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
    pub fn turn(&self, wait: Option<Duration>) -> io::Result<()> {
        if self.turning.get() {
            return Err(io::Error::other(
                "zerorx: Runtime::turn called from inside a turn",
            ));
        }
        self.enter(|| self.turn_entered(wait))?
    }

    /// `turn`, with this runtime's context installed on the thread.
    fn turn_entered(&self, wait: Option<Duration>) -> io::Result<()> {
        let _turning = Raised::new(&self.turning);
        match wait.filter(|d| !d.is_zero()) {
            None => self.core0.tick(&|| true, None)?,
            Some(d) => self.core0.tick(&|| false, Some(d))?,
        }
        self.core0.run_ready();
        Ok(())
    }

    /// Runs `f` on this thread as if inside worker 0: [`spawn`](crate::spawn), the
    /// I/O types and timers work in it. What it starts makes progress at the next
    /// [`turn`](Self::turn) or [`block_on`](Self::block_on); a `turn` inside `f`
    /// reuses the context `enter` installed, so a call that starts work and turns
    /// the ring installs it once. For a program that owns its loop and calls in with
    /// work (the libfabric provider posting an operation inside `fi_send`).
    ///
    /// # Errors
    /// If this thread is inside a runtime worker already.
    pub fn enter<R>(&self, f: impl FnOnce() -> R) -> io::Result<R> {
        if self.entered.get() {
            return Ok(f());
        }
        let Some(_guard) = context::enter(self.core0.clone()) else {
            return Err(io::Error::other(
                "zerorx: Runtime::enter or turn called from inside a runtime worker",
            ));
        };
        let _entered = Raised::new(&self.entered);
        Ok(f())
    }

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
    pub fn readiness_fd(&self) -> io::Result<BorrowedFd<'_>> {
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
                io::Error::new(
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
struct Raised<'a>(&'a Cell<bool>);

impl<'a> Raised<'a> {
    fn new(flag: &'a Cell<bool>) -> Raised<'a> {
        flag.set(true);
        Raised(flag)
    }
}

impl Drop for Raised<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}
