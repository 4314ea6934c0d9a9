//! Termination signals taken with `sigwait`, for servers that drain before they exit.

use std::io;

/// Signals blocked on the calling thread (and every thread it starts afterwards), so
/// they wait to be taken with [`wait`](Self::wait) instead of killing the process.
/// Call it first in `main`, before any thread starts.
#[derive(Clone, Copy)]
pub struct Blocked(libc::sigset_t);

impl Blocked {
    /// Blocks `signals`.
    pub fn block(signals: &[libc::c_int]) -> io::Result<Blocked> {
        // SAFETY: `sigset_t` is plain data; sigemptyset initialises it.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a valid sigset_t owned by this frame.
        unsafe {
            libc::sigemptyset(&mut set);
            for &s in signals {
                libc::sigaddset(&mut set, s);
            }
        }
        // SAFETY: `set` is initialised; the old mask is not needed.
        let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        Ok(Blocked(set))
    }

    /// Waits for one of the signals and returns it.
    pub fn wait(&self) -> io::Result<libc::c_int> {
        let mut sig: libc::c_int = 0;
        // SAFETY: the set's signals are blocked in every thread of the process (masks
        // are inherited from the thread that blocked them first); `sig` is a valid out
        // pointer.
        let rc = unsafe { libc::sigwait(&self.0, &mut sig) };
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        Ok(sig)
    }
}
