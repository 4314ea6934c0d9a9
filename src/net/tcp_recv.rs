//! The receive side of a [`TcpStream`](super::TcpStream): one multishot receive kept
//! armed on the best source the worker has, its completions decoded into buffers as
//! they are reaped, and the re-arm rules of [`RecvTracker`].
//!
//! Sources, chosen at the first receive:
//! - **zero-copy**: RECV_ZC on this worker's ring into its zero-copy pool (owned or
//!   imported). Only flows the NIC steers to the pool's queue are received without a
//!   copy; a flow landing on another instance's queue ends with `EFAULT`, and the
//!   stream falls back to copy receives. Loopback peers use the copy pool (their bytes
//!   never cross a NIC queue), except with device-less instances.
//! - **handover**: this worker has no zero-copy ring of its own (the kernel cannot
//!   import an instance), so the receive runs on the owner's ring and the buffers are
//!   handed over ([`super::handover`]).
//! - **copy**: multishot `recv` into the worker's provided-buffer pool.

use super::handover::HandoverRx;
use crate::driver::multishot::MultiOp;
use crate::driver::op::not_in_runtime;
use crate::driver::Completion;
use crate::io::recv::RecvMulti;
use crate::io::recv_zc::RecvZcMulti;
use crate::io::SharedFd;
use crate::metrics::{add_owned, rearm_index};
use crate::runtime::context;
use crate::runtime::worker::{Core, ZcWorker};
use std::collections::VecDeque;
use std::io;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use zcrx::{RearmReason, RecvEnd, RecvFailure, RecvTracker, RxBuf};

/// Where a stream's bytes come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    Copy,
    ZeroCopy,
    Handover(usize),
}

/// The armed multishot receive.
enum Armed {
    Copy(MultiOp<RecvMulti>),
    Zc(MultiOp<RecvZcMulti>),
}

impl Armed {
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Completion>> {
        match self {
            Armed::Copy(op) => op.poll_next(cx),
            Armed::Zc(op) => op.poll_next(cx),
        }
    }

    /// Moves the buffers of data completion `res` into `out`.
    fn take(&self, res: i32, out: &mut VecDeque<RxBuf>) -> io::Result<()> {
        let taken = match self {
            Armed::Copy(op) => op.with_data(|d| d.decoded.take(res, out)),
            Armed::Zc(op) => op.with_data(|d| d.decoded.take(res, out)),
        };
        taken.unwrap_or_else(|| {
            Err(io::Error::other(
                "the receive op vanished under a data completion",
            ))
        })
    }
}

/// Why no receive is armed right now.
#[derive(Clone, Copy, Debug)]
enum Wait {
    /// `ENOBUFS`: until the copy pool has a buffer again.
    CopyBuffers,
    /// `ENOMEM`: until the zero-copy pool has given the kernel chunks back since the
    /// receive was armed (`mark`).
    ZcChunks { mark: u64 },
}

/// One stream's receive state.
#[derive(Default)]
pub(crate) struct Receiver {
    path: Option<Path>,
    armed: Option<Armed>,
    handover: Option<HandoverRx>,
    /// Buffers received and not yet returned (a bundle completion fills several).
    ready: VecDeque<RxBuf>,
    tracker: RecvTracker,
    wait: Option<Wait>,
    /// Zero-copy: the pool's `returned_to_kernel` when the receive was armed. An
    /// `ENOMEM` end waits for chunks returned after it: any return since arming may
    /// have come after the kernel found the area dry, and a later one is the only
    /// thing that can help (so waiting cannot miss the last return).
    armed_mark: u64,
    eof: bool,
}

/// Whether a stream may receive zero-copy: its peer is not on loopback, unless the
/// instance is device-less (which copies anyway and serves any TCP socket).
fn eligible(fd: &SharedFd, loopback_ok: bool) -> bool {
    if loopback_ok {
        return true;
    }
    match socket2::SockRef::from(&**fd).peer_addr() {
        Ok(addr) => addr.as_socket().is_some_and(|a| !a.ip().is_loopback()),
        Err(_) => false,
    }
}

fn choose(core: &Core, fd: &SharedFd) -> Path {
    match &core.zc {
        ZcWorker::None => Path::Copy,
        ZcWorker::Local { loopback, .. } if eligible(fd, *loopback) => Path::ZeroCopy,
        ZcWorker::Handover { owner, loopback } if eligible(fd, *loopback) => Path::Handover(*owner),
        _ => Path::Copy,
    }
}

impl Receiver {
    /// The receive of a handover server on the pool's owner: always local, zero-copy
    /// when this worker has a zero-copy ring.
    pub(crate) fn serving(core: &Core) -> Receiver {
        let path = match core.zc {
            ZcWorker::Local { .. } => Path::ZeroCopy,
            _ => Path::Copy,
        };
        Receiver {
            path: Some(path),
            ..Receiver::default()
        }
    }

    /// Routes this stream's receives through `owner`'s ring (tests of the handover on
    /// machines without zero-copy).
    #[cfg(test)]
    pub(crate) fn force_handover(&mut self, owner: usize) {
        self.path = Some(Path::Handover(owner));
    }

    /// The source in use, once chosen.
    #[cfg(test)]
    pub(crate) fn path(&self) -> Option<Path> {
        self.path
    }

    fn arm(&self, core: &Core, fd: &SharedFd, path: Path) -> io::Result<Armed> {
        match (path, &core.zc) {
            (Path::ZeroCopy, ZcWorker::Local { ring, .. }) => Ok(Armed::Zc(MultiOp::submit(
                RecvZcMulti::new(fd.clone(), ring.clone(), 0),
            )?)),
            _ => {
                let Some(pool) = core.pool.clone() else {
                    return Err(io::Error::new(
                        io::ErrorKind::Unsupported,
                        "the runtime has no receive pool (Builder::copy_pool(None))",
                    ));
                };
                Ok(Armed::Copy(MultiOp::submit(RecvMulti::new(
                    fd.clone(),
                    pool,
                    core.recv_bundles,
                ))?))
            }
        }
    }

    /// Whether the wait is over; registers `cx`'s waker to be woken when it may be.
    fn wait_over(core: &Core, wait: Wait, cx: &mut Context<'_>) -> bool {
        match wait {
            Wait::CopyBuffers => {
                if core.pool.as_ref().is_some_and(|p| p.available() > 0) {
                    return true;
                }
                core.copy_waiters.borrow_mut().push(cx.waker().clone());
                false
            }
            Wait::ZcChunks { mark } => {
                let Some(returned) = core.zc_returned() else {
                    return true;
                };
                if returned > mark {
                    return true;
                }
                // Flag first, then re-check: the owner publishes and then reads the
                // flag, so one of the two sees the other.
                core.zc_waiters.borrow_mut().push(cx.waker().clone());
                core.shared.zc_waiting.store(true, Ordering::SeqCst);
                core.zc_returned().is_none_or(|r| r > mark)
            }
        }
    }

    /// Records a receive's end in the pool and worker counters.
    fn record(core: &Core, path: Path, res: i32, end: &RecvEnd) {
        let stats = match (path, &core.zc) {
            (Path::ZeroCopy, ZcWorker::Local { ring, .. }) => Some(ring.stats_handle()),
            _ => core.pool.as_ref().map(|p| p.stats_handle()),
        };
        if let Some(stats) = &stats {
            if res < 0 {
                stats.record_errno(-res);
            }
        }
        if let Some(i) = rearm_index(end) {
            if let Some(stats) = &stats {
                stats.record_rearm();
            }
            add_owned(&core.shared.metrics.rearms[i], 1);
        }
    }

    /// The next buffer: `Ok(None)` at end of stream.
    pub(crate) fn poll_recv(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<Option<RxBuf>>> {
        let Some(core) = context::current() else {
            return Poll::Ready(Err(not_in_runtime()));
        };
        loop {
            if let Some(buf) = self.ready.pop_front() {
                return Poll::Ready(Ok(Some(buf)));
            }
            if self.eof {
                return Poll::Ready(Ok(None));
            }
            let path = *self.path.get_or_insert_with(|| choose(&core, fd));
            if let Path::Handover(owner) = path {
                if self.handover.is_none() {
                    self.handover = Some(HandoverRx::start(&core, owner, fd)?);
                    add_owned(&core.shared.metrics.recv_handovers, 1);
                }
                if let Some(h) = self.handover.as_mut() {
                    return h.poll_recv(cx);
                }
            }
            if self.armed.is_none() {
                if let Some(wait) = self.wait {
                    if !Self::wait_over(&core, wait, cx) {
                        return Poll::Pending;
                    }
                    self.wait = None;
                }
                self.armed_mark = core.zc_returned().unwrap_or(0);
                self.armed = Some(self.arm(&core, fd, path)?);
                self.tracker = RecvTracker::new(0);
            }
            let Some(armed) = self.armed.as_mut() else {
                continue;
            };
            let c = match armed.poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    // The final completion was consumed: arm a new receive.
                    self.armed = None;
                    continue;
                }
                Poll::Ready(Some(c)) => c,
            };
            if c.res > 0 {
                self.tracker.on_data(c.res as u32);
                armed.take(c.res, &mut self.ready)?;
                if c.more() {
                    continue;
                }
            }
            let end = self.tracker.on_end(c.res);
            Self::record(&core, path, c.res, &end);
            match end {
                RecvEnd::Eof => {
                    self.eof = true;
                    self.armed = None;
                }
                RecvEnd::Rearm(RearmReason::NoBuffers) => {
                    add_owned(&core.shared.metrics.recv_enobufs, 1);
                    self.wait = Some(Wait::CopyBuffers);
                }
                RecvEnd::Rearm(RearmReason::NoFreeChunk) => {
                    self.wait = Some(Wait::ZcChunks {
                        mark: self.armed_mark,
                    });
                }
                RecvEnd::Rearm(_) | RecvEnd::BudgetDone => {}
                RecvEnd::Cancelled => {
                    self.armed = None;
                    return Poll::Ready(Err(io::Error::from_raw_os_error(libc::ECANCELED)));
                }
                RecvEnd::Failed(RecvFailure::Steering) if path == Path::ZeroCopy => {
                    // This flow is not on the pool's queue: receive it by copy.
                    self.armed = None;
                    self.path = Some(Path::Copy);
                    add_owned(&core.shared.metrics.recv_steering_fallbacks, 1);
                    if !core.steering_warned.replace(true) {
                        tracing::warn!(
                            worker = core.shared.index,
                            "RECV_ZC failed with EFAULT: a flow arrives on a queue bound to \
                             another zero-copy instance; it falls back to copy receives. Steer \
                             each worker's flows to its queue (ethtool -N ... action Q)"
                        );
                    }
                }
                RecvEnd::Failed(f) => {
                    self.armed = None;
                    return Poll::Ready(Err(f.to_io_error()));
                }
            }
        }
    }
}
