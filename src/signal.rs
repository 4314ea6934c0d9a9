//! Unix signals as streams on a worker's ring: [`signal`] and [`ctrl_c`].
//!
//! Each [`Signal`] has an eventfd of its own. A process-wide handler (installed through
//! `signal-hook-registry`, which chains handlers and keeps them async-signal-safe)
//! adds one to the eventfd of every listener of that signal; the listener waits for
//! its eventfd with a poll op on the ring of the worker that awaits it, like any other
//! I/O, so any worker can listen and none needs a thread of its own.
//!
//! Why not `signalfd`: it only receives signals blocked in *every* thread of the
//! process, which a library cannot arrange once threads it did not start exist (a
//! test harness, the blocking pool, the application's own); a handler sees every
//! delivery, whichever thread the kernel picks.
//!
//! The eventfd's counter coalesces: a burst of deliveries before the listener looks
//! is one wake-up, as with any Unix signal. Once a handler is installed for a signal
//! its default action (terminate, for `SIGINT`/`SIGTERM`/`SIGHUP`) no longer happens,
//! also after every listener is gone: a program that listens for `SIGTERM` decides
//! itself when to exit. For the same reason a handler that a shared library installed
//! for the signal (libfabric's PSM provider installs ones that `exit(1)`) is removed
//! when the first listener starts.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;

/// A signal to listen for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SignalKind(libc::c_int);

impl SignalKind {
    /// `SIGINT` (Ctrl-C).
    pub const fn interrupt() -> SignalKind {
        SignalKind(libc::SIGINT)
    }
    /// `SIGTERM` (a polite kill, what service managers send to stop).
    pub const fn terminate() -> SignalKind {
        SignalKind(libc::SIGTERM)
    }
    /// `SIGHUP` (terminal gone; by convention, reload).
    pub const fn hangup() -> SignalKind {
        SignalKind(libc::SIGHUP)
    }
    /// `SIGQUIT`.
    pub const fn quit() -> SignalKind {
        SignalKind(libc::SIGQUIT)
    }
    /// `SIGUSR1`.
    pub const fn user_defined1() -> SignalKind {
        SignalKind(libc::SIGUSR1)
    }
    /// `SIGUSR2` (`zerorx serve` prints its state dump on it).
    pub const fn user_defined2() -> SignalKind {
        SignalKind(libc::SIGUSR2)
    }
    /// `SIGCHLD`.
    pub const fn child() -> SignalKind {
        SignalKind(libc::SIGCHLD)
    }
    /// Any signal by number. Those a handler may not take (`SIGKILL`, `SIGSTOP`,
    /// `SIGSEGV`, `SIGBUS`, `SIGILL`, `SIGFPE`) are refused by [`signal`].
    pub const fn from_raw(signum: libc::c_int) -> SignalKind {
        SignalKind(signum)
    }
    /// The signal's number.
    pub const fn as_raw(self) -> libc::c_int {
        self.0
    }
}

/// Deliveries of one signal, received on the worker that awaits them.
#[derive(Debug)]
pub struct Signal {
    kind: SignalKind,
    /// Shared with the handler's action, so the fd outlives every run of it.
    fd: Arc<OwnedFd>,
    id: signal_hook_registry::SigId,
}

/// Starts listening for `kind`: deliveries from now on are kept (coalesced) until
/// [`Signal::recv`] takes them. Errors name a signal that cannot be handled.
pub fn signal(kind: SignalKind) -> io::Result<Signal> {
    if signal_hook_registry::FORBIDDEN.contains(&kind.0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "cannot listen for signal {}: the kernel never lets a handler take it \
                 (SIGKILL, SIGSTOP) or a handler that returns would loop on the fault \
                 (SIGSEGV, SIGBUS, SIGILL, SIGFPE)",
                kind.0
            ),
        ));
    }
    drop_foreign_handler(kind.0)?;
    // SAFETY: eventfd takes no pointers; the result is checked before use.
    let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a new eventfd that nothing else owns.
    let fd = Arc::new(unsafe { OwnedFd::from_raw_fd(raw) });
    let target = fd.clone();
    let action = move || {
        let one: u64 = 1;
        // Async-signal-safe: one write(2) to an fd the action itself keeps open. A
        // full counter (EAGAIN) still leaves the listener woken.
        // SAFETY: writes 8 bytes from a live local to an open eventfd.
        unsafe { libc::write(target.as_raw_fd(), (&one as *const u64).cast(), 8) };
    };
    // SAFETY: the action only calls write(2), which is async-signal-safe, and touches
    // no lock or allocation (the Arc is only dereferenced).
    let id = unsafe { signal_hook_registry::register(kind.0, action) }.map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot listen for signal {}: {e}", kind.0),
        )
    })?;
    Ok(Signal { kind, fd, id })
}

/// Removes a handler that a shared library installed for `signum`, before the first
/// listener's handler goes in.
///
/// Why: the registry calls the handler it found installed after its own actions, and
/// some libraries install handlers at load time that end the process.
/// `libpsm_infinipath`, which libfabric loads (zerorx's `libfabric` feature), installs
/// handlers for SIGINT and SIGTERM that `exit(1)`: a server listening for SIGTERM to
/// drain exited with status 1 instead (found by the stress server's signal test in a
/// build with every feature on). A handler in this program's own object (the registry's
/// own, from an earlier listener here or in tokio, or the program's) is kept.
fn drop_foreign_handler(signum: libc::c_int) -> io::Result<()> {
    // SAFETY: `sigaction` is plain data; a zeroed one is a valid out-parameter.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only reads the current one into `old`.
    if unsafe { libc::sigaction(signum, std::ptr::null(), &mut old) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let handler = old.sa_sigaction;
    if handler == libc::SIG_DFL
        || handler == libc::SIG_IGN
        || same_object(handler, drop_foreign_handler as *const () as usize)
    {
        return Ok(());
    }
    // SAFETY: as above; the new action is the default disposition, with no handler.
    let mut default: libc::sigaction = unsafe { std::mem::zeroed() };
    default.sa_sigaction = libc::SIG_DFL;
    // SAFETY: `default` is a valid action; the old one is not needed.
    if unsafe { libc::sigaction(signum, &default, std::ptr::null_mut()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    tracing::debug!(
        signum,
        "replaced a shared library's handler for a signal this program listens for"
    );
    Ok(())
}

/// Whether two code addresses lie in the same loaded object (executable or library);
/// true too when either cannot be placed, so nothing is removed on a guess.
fn same_object(a: usize, b: usize) -> bool {
    let base = |addr: usize| {
        // SAFETY: `Dl_info` is plain data; dladdr fills it for an address in a loaded
        // object and returns 0 otherwise.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid out-parameter; the address is only looked up.
        let found = unsafe { libc::dladdr(addr as *const libc::c_void, &mut info) } != 0;
        found.then_some(info.dli_fbase as usize)
    };
    match (base(a), base(b)) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    }
}

/// Waits for the next `SIGINT` (Ctrl-C). Listening starts at the call, not at the
/// first poll: a delivery after `ctrl_c()` returned is seen.
///
/// ```no_run
/// # zerorx::Runtime::new()?.block_on(async {
/// zerorx::signal::ctrl_c().await?;
/// println!("stopping");
/// # Ok::<_, std::io::Error>(()) })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn ctrl_c() -> impl std::future::Future<Output = io::Result<()>> {
    let listening = signal(SignalKind::interrupt());
    async move { listening?.recv().await }
}

impl Signal {
    /// The signal listened for.
    pub fn kind(&self) -> SignalKind {
        self.kind
    }

    /// Waits for a delivery (those since the last `recv` count as one).
    ///
    /// Fails off a worker thread, as every op does.
    pub async fn recv(&mut self) -> io::Result<()> {
        loop {
            let mut count: u64 = 0;
            // SAFETY: reads 8 bytes into a live local from an open eventfd.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), (&mut count as *mut u64).cast(), 8) };
            if n == 8 && count > 0 {
                return Ok(());
            }
            let err = io::Error::last_os_error();
            if n < 0 && err.kind() != io::ErrorKind::WouldBlock {
                return Err(err);
            }
            crate::net::readable(self.fd.clone())?.await?;
        }
    }
}

impl Drop for Signal {
    fn drop(&mut self) {
        // The registry drops the action (and its reference to the eventfd) once no
        // handler can be running it.
        signal_hook_registry::unregister(self.id);
    }
}
