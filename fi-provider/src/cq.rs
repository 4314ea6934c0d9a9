//! A libfabric completion queue's contents: entries the domain's worker pushes and
//! the application's threads read, in order, errors in line with successes.
//!
//! One mutex guards the queue: readers and the worker meet only here, so
//! `FI_THREAD_SAFE` costs one uncontended lock per read batch. A reader blocked in
//! `fi_cq_sread` waits on the condition variable the worker signals after a push.

use std::collections::VecDeque;
use std::ffi::CString;
use std::fs::File;
use std::io::{PipeReader, PipeWriter, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Operations an endpoint may have posted whose completions the application has not
/// read: taken at post (`-FI_EAGAIN` when none is left, `FI_RM_ENABLED`), given
/// back when the completion is read, or when the operation ends without one.
#[derive(Debug)]
pub(crate) struct Credits {
    left: AtomicUsize,
}

impl Credits {
    pub(crate) fn new(n: usize) -> Arc<Credits> {
        Arc::new(Credits {
            left: AtomicUsize::new(n),
        })
    }

    /// Takes one; false when none is left.
    pub(crate) fn take(&self) -> bool {
        self.left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
    }

    pub(crate) fn give(&self) {
        self.left.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn left(&self) -> usize {
        self.left.load(Ordering::Acquire)
    }
}

/// One completion, in the widest form (`fi_cq_tagged_entry` plus the source).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub context: usize,
    pub flags: u64,
    pub len: usize,
    pub buf: usize,
    pub data: u64,
    pub tag: u64,
    /// The sender's `fi_addr_t` (`fi_cq_readfrom`), `FI_ADDR_NOTAVAIL` when unknown.
    pub src: u64,
}

impl Default for Entry {
    fn default() -> Entry {
        Entry {
            context: 0,
            flags: 0,
            len: 0,
            buf: 0,
            data: 0,
            tag: 0,
            src: u64::MAX,
        }
    }
}

/// A failed operation: its entry plus what `fi_cq_readerr` reports.
#[derive(Debug)]
pub(crate) struct ErrEntry {
    pub entry: Entry,
    /// Positive `FI_E*` code.
    pub err: i32,
    /// zerorx's own code for the cause (see `crate::errors`).
    pub prov_errno: i32,
    /// Bytes that did not fit (truncation).
    pub olen: usize,
    /// What happened, for `fi_cq_strerror`.
    pub text: CString,
}

#[derive(Debug)]
pub(crate) enum Item {
    Ok(Entry),
    Err(ErrEntry),
}

struct Queued {
    item: Item,
    credit: Option<Arc<Credits>>,
}

#[derive(Default)]
struct Inner {
    items: VecDeque<Queued>,
    signaled: bool,
    /// Readers blocked in `wait`: only then does a push pay the futex wake.
    waiters: usize,
    /// The wait fd is armed: the next push writes its byte.
    armed: bool,
    /// A byte is in the wait fd's pipe.
    byte: bool,
}

/// What a read found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ReadOutcome {
    /// This many entries were handed out.
    Read(usize),
    /// Nothing there.
    Empty,
    /// An error entry is next (`-FI_EAVAIL`).
    ErrorNext,
}

/// A CQ's wait fd (`FI_WAIT_FD`).
pub(crate) enum WaitFd {
    /// For a domain with a worker thread: the read end of a pipe that holds a byte
    /// while an entry arrived since the application last armed it (`fi_trywait`). A
    /// pipe from `std::io::pipe` needs no `unsafe`. Arming and signalling happen under
    /// the CQ's lock, so at most one byte is in the pipe and a write never blocks.
    Pipe {
        reader: PipeReader,
        writer: PipeWriter,
    },
    /// For a domain its opening thread progresses: (a duplicate of) the runtime's
    /// readiness eventfd, which the kernel signals when the ring has work for a turn.
    /// Entries only appear inside that thread's calls, so what the application
    /// sleeps for is the ring's work, which its next `fi_cq_read` turns into entries.
    Ring(File),
}

impl WaitFd {
    fn pipe() -> std::io::Result<WaitFd> {
        let (reader, writer) = std::io::pipe()?;
        Ok(WaitFd::Pipe { reader, writer })
    }

    /// The fd the application polls.
    pub(crate) fn fd(&self) -> RawFd {
        match self {
            WaitFd::Pipe { reader, .. } => reader.as_raw_fd(),
            WaitFd::Ring(f) => f.as_raw_fd(),
        }
    }
}

/// The queue.
#[derive(Default)]
pub(crate) struct CqStore {
    inner: Mutex<Inner>,
    ready: Condvar,
    /// Set for a CQ opened with `FI_WAIT_FD`.
    pub(crate) wait_fd: Option<WaitFd>,
    /// The error entry last handed out, kept so `fi_cq_strerror` can give its text
    /// (valid until the next `fi_cq_readerr`, libfabric's rule for error data).
    pub(crate) last_err: Mutex<Option<ErrEntry>>,
}

impl CqStore {
    /// A queue with a wait fd (`FI_WAIT_FD`) of its own.
    pub(crate) fn with_wait_fd() -> std::io::Result<CqStore> {
        Ok(CqStore {
            wait_fd: Some(WaitFd::pipe()?),
            ..CqStore::default()
        })
    }

    /// A queue whose wait fd is `ring`, the readiness eventfd of the runtime of a
    /// domain its opening thread progresses.
    pub(crate) fn with_ring_fd(ring: OwnedFd) -> CqStore {
        CqStore {
            wait_fd: Some(WaitFd::Ring(File::from(ring))),
            ..CqStore::default()
        }
    }

    /// Resets a ring wait fd before the last turn ahead of a sleep (`fi_trywait`):
    /// what signals it from here on is work that turn did not see.
    pub(crate) fn drain_ring_fd(&self) {
        if let Some(WaitFd::Ring(f)) = &self.wait_fd {
            // Non-blocking: at zero the read fails with EAGAIN, which is fine.
            let _ = (&*f).read(&mut [0u8; 8]);
        }
    }

    /// `fi_trywait`: arms the wait fd and says whether the application may block on
    /// it (nothing is queued); with entries queued it must read them first.
    pub(crate) fn try_arm(&self) -> bool {
        let mut g = self.lock();
        if let Some(WaitFd::Pipe { reader, .. }) = &self.wait_fd {
            if std::mem::take(&mut g.byte) {
                // The byte is there (written under this lock): the read cannot wait.
                let _ = (&*reader).read_exact(&mut [0u8; 1]);
            }
            g.armed = true;
        }
        g.items.is_empty()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock is caught at the FFI edge; the queue itself
        // stays consistent (every mutation is a single push or pop).
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends completions (the worker), waking a blocked reader.
    pub(crate) fn push(&self, item: Item, credit: Option<Arc<Credits>>) {
        let waiting = {
            let mut g = self.lock();
            g.items.push_back(Queued { item, credit });
            if let Some(WaitFd::Pipe { writer, .. }) = &self.wait_fd {
                if std::mem::take(&mut g.armed) && (&*writer).write_all(&[1]).is_ok() {
                    g.byte = true;
                }
            }
            g.waiters > 0
        };
        if waiting {
            self.ready.notify_all();
        }
    }

    /// Hands up to `max` successes to `each`, stopping at the first error entry.
    pub(crate) fn read(&self, max: usize, mut each: impl FnMut(usize, &Entry)) -> ReadOutcome {
        let mut g = self.lock();
        let mut n = 0;
        while n < max {
            match g.items.front() {
                Some(Queued {
                    item: Item::Ok(e), ..
                }) => each(n, e),
                Some(_) if n == 0 => return ReadOutcome::ErrorNext,
                _ => break,
            }
            if let Some(q) = g.items.pop_front() {
                if let Some(c) = q.credit {
                    c.give();
                }
            }
            n += 1;
        }
        if n == 0 {
            ReadOutcome::Empty
        } else {
            ReadOutcome::Read(n)
        }
    }

    /// Takes the error entry at the head, if that is what is next.
    pub(crate) fn read_err(&self) -> Option<ErrEntry> {
        let mut g = self.lock();
        if !matches!(
            g.items.front(),
            Some(Queued {
                item: Item::Err(_),
                ..
            })
        ) {
            return None;
        }
        let q = g.items.pop_front()?;
        if let Some(c) = q.credit {
            c.give();
        }
        match q.item {
            Item::Err(e) => Some(e),
            Item::Ok(_) => None,
        }
    }

    /// Whether a blocked read may end: `Some(true)` with an entry there,
    /// `Some(false)` when `signal` was called (which this consumes), `None` otherwise.
    pub(crate) fn ready_or_signaled(&self) -> Option<bool> {
        Self::wait_ends(&mut self.lock())
    }

    /// `ready_or_signaled` under the lock, for `wait` too.
    fn wait_ends(g: &mut Inner) -> Option<bool> {
        if !g.items.is_empty() {
            Some(true)
        } else if std::mem::take(&mut g.signaled) {
            Some(false)
        } else {
            None
        }
    }

    /// Waits until an entry is there, `signal` was called, or `timeout` passes
    /// (`None`: forever). True if an entry is there.
    pub(crate) fn wait(&self, timeout: Option<Duration>) -> bool {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut g = self.lock();
        loop {
            if let Some(entry) = Self::wait_ends(&mut g) {
                return entry;
            }
            let left = match deadline {
                None => None,
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => return false,
                },
            };
            g.waiters += 1;
            g = match left {
                None => self.ready.wait(g).unwrap_or_else(|p| p.into_inner()),
                Some(left) => {
                    self.ready
                        .wait_timeout(g, left)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
            };
            g.waiters -= 1;
        }
    }

    /// Wakes a blocked reader without an entry (`fi_cq_signal`).
    pub(crate) fn signal(&self) {
        self.lock().signaled = true;
        self.ready.notify_all();
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().items.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(context: usize) -> Item {
        Item::Ok(Entry {
            context,
            ..Entry::default()
        })
    }

    fn err(context: usize) -> Item {
        Item::Err(ErrEntry {
            entry: Entry {
                context,
                ..Entry::default()
            },
            err: libc::ECANCELED,
            prov_errno: 1,
            olen: 0,
            text: CString::new("cancelled").unwrap(),
        })
    }

    #[test]
    fn errors_keep_their_place_and_reading_gives_credits_back() {
        let cq = CqStore::default();
        let credits = Credits::new(3);
        for _ in 0..3 {
            assert!(credits.take());
        }
        assert!(!credits.take(), "no credit is left after three posts");
        cq.push(ok(1), Some(credits.clone()));
        cq.push(err(2), Some(credits.clone()));
        cq.push(ok(3), Some(credits.clone()));
        let mut seen = Vec::new();
        assert_eq!(
            cq.read(8, |_, e| seen.push(e.context)),
            ReadOutcome::Read(1)
        );
        assert_eq!(seen, [1]);
        assert_eq!(credits.left(), 1);
        assert_eq!(cq.read(8, |_, _| ()), ReadOutcome::ErrorNext);
        assert_eq!(cq.read_err().map(|e| e.entry.context), Some(2));
        assert!(cq.read_err().is_none(), "a success is next, not an error");
        assert_eq!(
            cq.read(8, |_, e| seen.push(e.context)),
            ReadOutcome::Read(1)
        );
        assert_eq!(seen, [1, 3]);
        assert_eq!(credits.left(), 3);
        assert_eq!(cq.read(8, |_, _| ()), ReadOutcome::Empty);
    }

    /// Whether `fd` is readable now.
    fn readable(fd: RawFd) -> bool {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the call, no timeout.
        let n = unsafe { libc::poll(&mut p, 1, 0) };
        n == 1 && p.revents & libc::POLLIN != 0
    }

    #[test]
    fn the_wait_fd_turns_readable_for_an_entry_after_arming_and_is_drained_by_the_next() {
        let cq = CqStore::with_wait_fd().unwrap();
        let fd = cq.wait_fd.as_ref().unwrap().fd();
        assert!(cq.try_arm(), "empty: the caller may block");
        assert!(!readable(fd));
        cq.push(ok(1), None);
        assert!(readable(fd), "an entry after arming makes the fd readable");
        cq.push(ok(2), None);
        assert!(!cq.try_arm(), "entries queued: read them first");
        assert!(!readable(fd), "arming drained the byte");
        assert_eq!(cq.read(8, |_, _| ()), ReadOutcome::Read(2));
        assert!(cq.try_arm());
        assert!(!readable(fd), "nothing since");
    }

    #[test]
    fn a_blocked_reader_wakes_on_a_push_a_signal_or_its_timeout() {
        let cq = Arc::new(CqStore::default());
        assert!(!cq.wait(Some(Duration::from_millis(20))), "times out empty");
        let c = cq.clone();
        let t = std::thread::spawn(move || c.wait(None));
        std::thread::sleep(Duration::from_millis(20));
        cq.push(ok(7), None);
        assert!(t.join().unwrap(), "woken by the push");
        assert_eq!(cq.read(1, |_, _| ()), ReadOutcome::Read(1));
        let c = cq.clone();
        let t = std::thread::spawn(move || c.wait(None));
        std::thread::sleep(Duration::from_millis(20));
        cq.signal();
        assert!(
            !t.join().unwrap(),
            "woken by the signal, with nothing to read"
        );
    }
}
