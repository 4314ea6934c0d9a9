//! The io_uring instance of one worker: setup with flag fallback, pushing SQEs,
//! entering the kernel, and reading CQEs of either size into one [`Completion`] type.

use io_uring::{cqueue, squeue, types, IoUring};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

/// One completion, copied out of the CQ so the ring can be reused while it is handled.
#[derive(Clone, Copy, Debug)]
pub struct Completion {
    /// `user_data` of the request.
    pub user_data: u64,
    /// The result: a non-negative value, or `-errno`.
    pub res: i32,
    /// `IORING_CQE_F_*` flags (`F_MORE`, `F_BUFFER`, ...).
    pub flags: u32,
    /// The two extra words of a 32-byte CQE; zero on a ring with 16-byte CQEs, and in
    /// the completions a multishot stream hands out (its op's `on_complete` read them).
    pub big_cqe: [u64; 2],
}

impl Completion {
    /// Whether more completions will follow for the same request (`IORING_CQE_F_MORE`).
    pub fn more(&self) -> bool {
        cqueue::more(self.flags)
    }

    /// The result as an `io::Result`, with `-errno` turned into an error.
    pub fn result(&self) -> io::Result<u32> {
        if self.res < 0 {
            Err(io::Error::from_raw_os_error(-self.res))
        } else {
            Ok(self.res as u32)
        }
    }
}

impl From<&cqueue::Entry> for Completion {
    fn from(e: &cqueue::Entry) -> Self {
        Completion {
            user_data: e.user_data(),
            res: e.result(),
            flags: e.flags(),
            big_cqe: [0; 2],
        }
    }
}

impl From<&cqueue::Entry32> for Completion {
    fn from(e: &cqueue::Entry32) -> Self {
        Completion {
            user_data: e.user_data(),
            res: e.result(),
            flags: e.flags(),
            big_cqe: *e.big_cqe(),
        }
    }
}

/// Ring sizing and the setup flags to try.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RingConfig {
    pub(crate) sq_entries: u32,
    pub(crate) cq_entries: u32,
    pub(crate) cqe32: bool,
    /// Blocking waits collect up to `.0` completions, returning early with fewer once
    /// `.1` has passed since the first (`IORING_FEAT_MIN_TIMEOUT`, Linux 6.12).
    pub(crate) wait_batch: Option<(u32, Duration)>,
    /// NAPI busy polling while waiting: timeout and prefer-busy-poll
    /// (`IORING_REGISTER_NAPI`, Linux 6.9).
    pub(crate) busy_poll: Option<(Duration, bool)>,
}

/// Which setup flags the kernel accepted for this ring.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingFlags {
    /// `IORING_SETUP_SINGLE_ISSUER` + `IORING_SETUP_DEFER_TASKRUN`.
    pub defer_taskrun: bool,
    /// `IORING_SETUP_COOP_TASKRUN` + `IORING_SETUP_TASKRUN_FLAG`.
    pub coop_taskrun: bool,
    /// 32-byte CQEs.
    pub cqe32: bool,
    /// NAPI busy polling registered (`IORING_REGISTER_NAPI`).
    pub napi_busy_poll: bool,
}

/// The ring, with its CQE size chosen at runtime. An enum rather than a type parameter
/// so the rest of the runtime stays monomorphic; the match costs one branch per call.
enum Inner {
    Cqe16(IoUring<squeue::Entry, cqueue::Entry>),
    Cqe32(IoUring<squeue::Entry, cqueue::Entry32>),
}

macro_rules! with_ring {
    ($self:expr, $r:ident => $body:expr) => {
        match &mut $self.inner {
            Inner::Cqe16($r) => $body,
            Inner::Cqe32($r) => $body,
        }
    };
}

pub(crate) struct Ring {
    inner: Inner,
    flags: RingFlags,
    /// `(events, microseconds)` of a batched wait, when configured and supported.
    wait_batch: Option<(usize, u32)>,
}

/// Setup flags, most wanted first. A kernel that refuses a set gets the next one.
const ATTEMPTS: [(bool, bool); 3] = [(true, true), (false, true), (false, false)];

fn build<C: cqueue::EntryMarker>(
    cfg: &RingConfig,
    defer: bool,
    coop: bool,
) -> io::Result<IoUring<squeue::Entry, C>> {
    let mut b = IoUring::<squeue::Entry, C>::builder();
    b.setup_cqsize(cfg.cq_entries).setup_clamp();
    if defer {
        b.setup_single_issuer().setup_defer_taskrun();
    }
    if coop {
        b.setup_coop_taskrun().setup_taskrun_flag();
    }
    b.build(cfg.sq_entries)
}

impl Ring {
    /// Builds the ring on the calling thread, which becomes its only submitter.
    pub(crate) fn new(cfg: &RingConfig) -> io::Result<Ring> {
        let mut last = io::Error::from_raw_os_error(libc::EINVAL);
        for (defer, coop) in ATTEMPTS {
            let built = if cfg.cqe32 {
                build::<cqueue::Entry32>(cfg, defer, coop).map(Inner::Cqe32)
            } else {
                build::<cqueue::Entry>(cfg, defer, coop).map(Inner::Cqe16)
            };
            match built {
                Ok(inner) => {
                    let min_timeout = match &inner {
                        Inner::Cqe16(r) => r.params().is_feature_min_timeout(),
                        Inner::Cqe32(r) => r.params().is_feature_min_timeout(),
                    };
                    let wait_batch = match cfg.wait_batch {
                        None => None,
                        Some(_) if !min_timeout => {
                            return Err(io::Error::new(
                                io::ErrorKind::Unsupported,
                                "batched completion waits need IORING_FEAT_MIN_TIMEOUT \
                                 (Linux 6.12); this kernel lacks it",
                            ))
                        }
                        Some((n, d)) => Some((
                            n.max(1) as usize,
                            d.as_micros().clamp(1, u32::MAX as u128) as u32,
                        )),
                    };
                    let mut ring = Ring {
                        inner,
                        flags: RingFlags {
                            defer_taskrun: defer,
                            coop_taskrun: coop,
                            cqe32: cfg.cqe32,
                            napi_busy_poll: false,
                        },
                        wait_batch,
                    };
                    if let Some((timeout, prefer)) = cfg.busy_poll {
                        ring.register_napi(timeout, prefer)?;
                    }
                    return Ok(ring);
                }
                // EINVAL is how an older kernel refuses an unknown flag; anything else
                // (ENOMEM, EPERM, ENOSYS) will not be cured by fewer flags.
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::new(
            last.kind(),
            format!("io_uring_setup refused every flag combination: {last}"),
        ))
    }

    pub(crate) fn flags(&self) -> RingFlags {
        self.flags
    }

    /// Turns on NAPI busy polling for this ring's waits (dynamic tracking: the NAPI
    /// instances of the sockets the ring receives on).
    fn register_napi(&mut self, timeout: Duration, prefer: bool) -> io::Result<()> {
        let us = u32::try_from(timeout.as_micros())
            .ok()
            .filter(|&us| us > 0)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("busy-poll timeout must be from 1 µs to u32::MAX µs, got {timeout:?}"),
                )
            })?;
        let mut napi = types::Napi::new()
            .set_busy_poll_timeout(us)
            .set_prefer_busy_poll(prefer);
        let res = with_ring!(self, r => r.submitter().register_napi(&mut napi));
        res.map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "busy polling was refused: IORING_REGISTER_NAPI failed with {} ({e}); it \
                     needs Linux 6.9+ built with CONFIG_NET_RX_BUSY_POLL=y (and, to do \
                     anything, NIC queues with NAPI: loopback has none); leave \
                     Builder::busy_poll unset to run without it",
                    zcrx::probe::errno_name(e.raw_os_error().unwrap_or(0))
                ),
            )
        })?;
        self.flags.napi_busy_poll = true;
        Ok(())
    }

    pub(crate) fn fd(&self) -> RawFd {
        match &self.inner {
            Inner::Cqe16(r) => r.as_raw_fd(),
            Inner::Cqe32(r) => r.as_raw_fd(),
        }
    }

    /// Pushes one SQE. On a full SQ, returns `false` and leaves the entry unpushed.
    ///
    /// # Safety
    /// Everything `entry` points to must stay valid until its final completion.
    pub(crate) unsafe fn try_push(&mut self, entry: &squeue::Entry) -> bool {
        // SAFETY: forwarded from the caller's contract.
        with_ring!(self, r => unsafe { r.submission().push(entry).is_ok() })
    }

    /// The queues' sizes, fill and the kernel's overflow and drop counts.
    pub(crate) fn state(&mut self) -> super::inspect::RingState {
        with_ring!(self, r => {
            let (sq_entries, sq_pending, sq_dropped) = {
                let sq = r.submission();
                (sq.capacity(), sq.len(), sq.dropped())
            };
            let cq = r.completion();
            super::inspect::RingState {
                sq_entries,
                sq_pending,
                cq_entries: cq.capacity(),
                cq_ready: cq.len(),
                cq_overflow: cq.overflow(),
                sq_dropped,
            }
        })
    }

    /// Number of SQEs waiting to be submitted.
    pub(crate) fn sq_len(&mut self) -> usize {
        with_ring!(self, r => r.submission().len())
    }

    /// Whether an enter is needed even with nothing to submit: deferred task work is
    /// pending, or the CQ overflowed and the kernel holds completions back.
    pub(crate) fn needs_enter(&mut self) -> bool {
        with_ring!(self, r => {
            let sq = r.submission();
            sq.taskrun() || sq.cq_overflow()
        })
    }

    pub(crate) fn cq_overflowed(&mut self) -> bool {
        with_ring!(self, r => r.submission().cq_overflow())
    }

    /// One `io_uring_enter`: submit everything queued and, if `wait`, block until a
    /// completion arrives or `timeout` passes. Returns the number of SQEs submitted.
    pub(crate) fn enter(&mut self, wait: bool, timeout: Option<Duration>) -> io::Result<usize> {
        let batch = self.wait_batch;
        let res = with_ring!(self, r => {
            let submitter = r.submitter();
            match (wait, timeout, batch) {
                (false, _, _) => submitter.submit(),
                (true, None, None) => submitter.submit_and_wait(1),
                (true, None, Some((n, us))) => {
                    let args = types::SubmitArgs::new().min_wait_usec(us);
                    submitter.submit_with_args(n, &args)
                }
                (true, Some(t), batch) => {
                    let ts = types::Timespec::new()
                        .sec(t.as_secs())
                        .nsec(t.subsec_nanos());
                    let (n, us) = batch.unwrap_or((1, 0));
                    let args = types::SubmitArgs::new().timespec(&ts).min_wait_usec(us);
                    submitter.submit_with_args(n, &args)
                }
            }
        });
        match res {
            Ok(n) => Ok(n),
            // A timed-out or interrupted wait, or a CQ too full to take more
            // completions, is the normal way back to the loop, not a failure.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME | libc::EINTR | libc::EBUSY | libc::EAGAIN)
                ) =>
            {
                Ok(0)
            }
            Err(e) => Err(e),
        }
    }

    /// The oldest CQE, taken off the queue (`None`: none is waiting). One at a time, so
    /// the driver handles each as it takes it: copying a turn's CQEs into a list first
    /// and draining it cost ~100 instructions a turn (counted, one connection's echo).
    pub(crate) fn pop(&mut self) -> Option<Completion> {
        match &mut self.inner {
            Inner::Cqe16(r) => r.completion().next().map(|e| Completion::from(&e)),
            Inner::Cqe32(r) => r.completion().next().map(|e| Completion::from(&e)),
        }
    }

    /// Runs `f` with the ring's submitter (registrations).
    pub(crate) fn with_submitter<R>(&mut self, f: impl FnOnce(&io_uring::Submitter<'_>) -> R) -> R {
        with_ring!(self, r => f(&r.submitter()))
    }

    /// Synchronously cancels every submitted request (`IORING_REGISTER_SYNC_CANCEL`).
    pub(crate) fn sync_cancel_all(&mut self, timeout: Duration) -> io::Result<()> {
        let ts = types::Timespec::new()
            .sec(timeout.as_secs())
            .nsec(timeout.subsec_nanos());
        let res = with_ring!(self, r => r.submitter().register_sync_cancel(Some(ts), types::CancelBuilder::any()));
        match res {
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(()),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use io_uring::opcode;

    fn nop_round_trip(cqe32: bool) {
        let mut ring = Ring::new(&RingConfig {
            sq_entries: 8,
            cq_entries: 16,
            cqe32,
            wait_batch: None,
            busy_poll: None,
        })
        .expect("ring");
        assert!(ring.flags().defer_taskrun, "6.18 accepts DEFER_TASKRUN");
        let e = opcode::Nop::new().build().user_data(42);
        // SAFETY: NOP references no memory.
        assert!(unsafe { ring.try_push(&e) });
        assert_eq!(
            ring.enter(true, Some(Duration::from_secs(1)))
                .expect("enter"),
            1
        );
        let c = ring.pop().expect("the NOP's completion");
        assert_eq!(c.user_data, 42);
        assert_eq!(c.res, 0);
        assert_eq!(c.big_cqe, [0, 0]);
        assert!(ring.pop().is_none(), "one NOP, one completion");
    }

    #[test]
    fn nop_cqe16() {
        nop_round_trip(false);
    }

    #[test]
    fn nop_cqe32() {
        nop_round_trip(true);
    }

    #[test]
    fn wait_times_out() {
        let mut ring = Ring::new(&RingConfig {
            sq_entries: 8,
            cq_entries: 16,
            cqe32: false,
            wait_batch: None,
            busy_poll: None,
        })
        .expect("ring");
        let t = std::time::Instant::now();
        ring.enter(true, Some(Duration::from_millis(20)))
            .expect("enter");
        assert!(t.elapsed() >= Duration::from_millis(15));
    }
}
