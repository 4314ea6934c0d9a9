//! [`DumpSignal`]: a state dump each time the process gets `SIGUSR2`, the way
//! `zerorx serve` and the stress server offer it.

use crate::Handle;
use std::io::{self, Write};
use std::path::PathBuf;

/// Writes [`Handle::dump`] to stderr, or appends it to a file, on every `SIGUSR2`.
///
/// The signal is taken by a thread of its own with `sigwait`, never by a handler, so
/// the dump may allocate, lock and wait for the workers. For that, `SIGUSR2` must be
/// blocked in every thread of the process: [`block`](Self::block) blocks it on the
/// calling thread, and threads inherit the mask, so call it before building the
/// runtime (and before starting other threads).
///
/// ```no_run
/// use zerorx::runtime::DumpSignal;
/// let signal = DumpSignal::block()?;
/// let rt = zerorx::Runtime::builder().build()?;
/// signal.start(rt.handle().clone(), None)?; // `kill -USR2 PID` prints a dump
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct DumpSignal {
    set: libc::sigset_t,
}

impl std::fmt::Debug for DumpSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DumpSignal(SIGUSR2)")
    }
}

impl DumpSignal {
    /// Blocks `SIGUSR2` on this thread (and the threads it starts from now on).
    pub fn block() -> io::Result<DumpSignal> {
        // SAFETY: `sigset_t` is plain data; sigemptyset initialises it.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a valid sigset_t owned by this frame.
        unsafe {
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGUSR2);
        }
        // SAFETY: `set` is initialised; the old mask is not needed.
        let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        Ok(DumpSignal { set })
    }

    /// Starts the thread that waits for `SIGUSR2` and writes a dump of `handle`'s
    /// runtime for each: to stderr, or appended to `to`. The thread runs for the rest
    /// of the process.
    pub fn start(self, handle: Handle, to: Option<PathBuf>) -> io::Result<()> {
        std::thread::Builder::new()
            .name("zerorx-dump-signal".into())
            .spawn(move || loop {
                let mut sig: libc::c_int = 0;
                // SAFETY: `set` holds SIGUSR2, blocked in the thread that built it and
                // the threads started after; `sig` is a valid out pointer.
                if unsafe { libc::sigwait(&self.set, &mut sig) } != 0 {
                    return;
                }
                let text = handle.dump().to_string();
                let written = match &to {
                    None => io::stderr().lock().write_all(text.as_bytes()),
                    Some(path) => std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(path)
                        .and_then(|mut f| f.write_all(text.as_bytes())),
                };
                if let Err(e) = written {
                    eprintln!("zerorx: cannot write the state dump: {e}");
                }
            })?;
        Ok(())
    }
}
