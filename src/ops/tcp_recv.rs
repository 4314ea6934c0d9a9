//! The receive side of a stream [`Connection`](crate::net::Connection) (TCP or Unix): one multishot receive kept
//! armed on the best source the worker has, its completions decoded into buffers as
//! they are reaped, and the re-arm rules of [`RecvTracker`].
//!
//! Sources, chosen at the first receive:
//! - **zero-copy**: RECV_ZC on this worker's ring into its zero-copy pool (owned or
//!   imported). Only flows the NIC steers to the pool's queue are received without a
//!   copy; a flow landing on another instance's queue ends with `EFAULT`, and the
//!   stream falls back to copy receives. Loopback peers use the copy pool (their bytes
//!   never cross a NIC queue), except with device-less instances; Unix sockets always
//!   do (RECV_ZC takes TCP sockets only).
//! - **handover**: this worker has no zero-copy ring of its own (the kernel cannot
//!   import an instance), so the receive runs on the owner's ring and the buffers are
//!   handed over ([`super::handover`]).
//! - **copy**: multishot `recv` into the worker's provided-buffer pool.

use super::handover::HandoverRx;
use super::overflow_recv::{Got, Overflow};
use crate::driver::peek_waker::is_peek;
use crate::driver::Completion;
use crate::metrics::{add_owned, rearm_index};
use crate::ops::recv::RecvMulti;
use crate::ops::recv_zc::RecvZcMulti;
use crate::ops::stream_recv::SocketMultiOp;
use crate::ops::stream_recv::{SocketOp, StreamRecv};
use crate::ops::SharedFd;
use crate::runtime::context;
use crate::runtime::op::not_in_runtime;
use crate::runtime::worker::{Core, ZcWorker};
use std::io;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use zcrx::{RearmReason, RecvEnd, RecvFailure, RecvTracker, RxBuf};

/// Where a stream's bytes come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    Copy,
    ZeroCopy,
    /// Through this worker (a `u16`, so the receive state stays small).
    Handover(u16),
}

/// The armed multishot receive (its op data in the stream's socket: see
/// [`crate::ops::stream_recv`]), and how many bytes of the data completion taken last
/// are still in the op's decoded buffers (`owed`). The buffers stay in the op until
/// the stream asks for them, so a stream needs no queue of its own. Its variant says
/// the pool: a tag with spare values, where [`Source`] and its `Option` keep theirs
/// (without it, they would need a word more in every connection's socket).
enum Armed {
    Copy { op: SocketMultiOp, owed: u32 },
    Zc { op: SocketMultiOp, owed: u32 },
}

impl Armed {
    fn new(op: SocketMultiOp, zero_copy: bool) -> Armed {
        if zero_copy {
            Armed::Zc { op, owed: 0 }
        } else {
            Armed::Copy { op, owed: 0 }
        }
    }

    fn parts(&mut self) -> (&mut SocketMultiOp, &mut u32) {
        match self {
            Armed::Copy { op, owed } | Armed::Zc { op, owed } => (op, owed),
        }
    }

    fn owed(&self) -> u32 {
        match self {
            Armed::Copy { owed, .. } | Armed::Zc { owed, .. } => *owed,
        }
    }

    fn set_owed(&mut self, n: u32) {
        *self.parts().1 = n;
    }

    /// The next completion; a data completion with more to follow also hands out its
    /// first buffer, taken in the same visit of the op (the rest are owed).
    fn poll_next(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<(Completion, Option<io::Result<RxBuf>>)>> {
        let (op, owed) = self.parts();
        op.poll_next_with(cx, |c, recv| {
            if c.res <= 0 || !c.more() {
                return None;
            }
            *owed = c.res as u32;
            Some(recv.take_next(owed))
        })
    }

    /// Whether this receive stopped itself because its stream held its limit of
    /// untaken bytes (its `-ECANCELED` end is not a cancellation from outside).
    fn stopped_at_limit(&mut self) -> bool {
        self.parts()
            .0
            .with_data(|d| d.stopped_at_limit())
            .unwrap_or(false)
    }

    /// The next buffer of the `owed` bytes.
    fn take_owed(&mut self) -> io::Result<RxBuf> {
        let (op, owed) = self.parts();
        op.with_data(|d| d.take_next(owed)).unwrap_or_else(|| {
            *owed = 0;
            Err(io::Error::other(
                "the receive op vanished under a data completion",
            ))
        })
    }
}

impl Drop for Armed {
    /// Drops the buffers the stream did not take before the op goes: what is left in
    /// the op must be only buffers of completions nobody took, which the op hands
    /// back itself when it is cancelled.
    fn drop(&mut self) {
        while self.owed() > 0 {
            if self.take_owed().is_err() {
                break;
            }
        }
    }
}

/// Why no receive is armed right now.
#[derive(Clone, Copy, Debug)]
enum Wait {
    /// `ENOBUFS`: until the copy pool has given the kernel buffers back since the
    /// receive was armed (`armed_mark`), and has some.
    CopyBuffers,
    /// `ENOMEM`: until the zero-copy pool has given the kernel chunks since the
    /// receive was armed (`armed_mark`), by returns or by an added area.
    ZcChunks,
}

/// What a stream receives through right now: its own armed receive, the owner
/// worker's (handover), or plain receives into ordinary memory while its pool is held
/// (boxed: rare). One at a time, so they share the room (the others go in spare
/// values of the armed receive's tag) and bytes arrive in order.
enum Source {
    Armed(Armed),
    Handover(HandoverRx),
    Overflow(Box<Overflow>),
}

/// One stream's receive state. Every connection keeps one for its whole life: keep it
/// small (rarely used parts behind a pointer).
#[derive(Default)]
pub(crate) struct Receiver {
    path: Option<Path>,
    source: Option<Source>,
    /// The armed receive's byte budget and what it received (a [`RecvTracker`] in
    /// half the room: the budget is a `u32`, so a saturating `u32` count decides the
    /// same).
    budget: u32,
    received: u32,
    wait: Option<Wait>,
    /// The receiving pool's `returned_to_kernel` when the receive was armed. An
    /// `ENOBUFS`/`ENOMEM` end waits for buffers returned after it: any return since
    /// arming may have come after the kernel found the pool dry, and a later one is
    /// the only thing that can help (so waiting cannot miss the last return, and a
    /// receive never re-arms into a pool the kernel already found empty).
    armed_mark: u64,
    eof: bool,
}

/// The byte accounting of a receive armed with `budget` that got `received` bytes.
fn tracker(budget: u32, received: u32) -> RecvTracker {
    let mut t = RecvTracker::new(budget);
    t.on_data(received);
    t
}

/// Whether a stream may receive zero-copy: its peer is an IP address (RECV_ZC takes
/// TCP sockets only: on a Unix socket it fails), and not on loopback unless the
/// instance is device-less (which copies anyway and serves any TCP socket). Asked once
/// per stream, at its first receive, and only on a worker with zero-copy receives.
fn eligible(fd: &SharedFd, loopback_ok: bool) -> bool {
    match socket2::SockRef::from(&**fd).peer_addr() {
        Ok(addr) => addr
            .as_socket()
            .is_some_and(|a| loopback_ok || !a.ip().is_loopback()),
        Err(_) => false,
    }
}

fn choose(core: &Core, fd: &SharedFd) -> Path {
    match core.rx.zc() {
        ZcWorker::None => Path::Copy,
        ZcWorker::Local { loopback, .. } if eligible(fd, *loopback) => Path::ZeroCopy,
        ZcWorker::Handover { owner, loopback } if eligible(fd, *loopback) => {
            // Past `u16::MAX` workers (never), receive by copy.
            u16::try_from(*owner).map_or(Path::Copy, Path::Handover)
        }
        _ => Path::Copy,
    }
}

impl Receiver {
    /// The receive of a handover server on the pool's owner: always local, zero-copy
    /// when this worker has a zero-copy ring.
    pub(crate) fn serving(core: &Core) -> Receiver {
        let path = match core.rx.zc() {
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
    pub(crate) fn force_handover(&mut self, owner: u16) {
        self.path = Some(Path::Handover(owner));
    }

    /// The source in use, once chosen.
    #[cfg(test)]
    pub(crate) fn path(&self) -> Option<Path> {
        self.path
    }

    /// Arms a receive; returns it with the byte budget the kernel was given (`0`:
    /// none). Every receive stops once it holds the worker's hold limit of bytes the
    /// task has not taken.
    fn arm(&self, core: &Core, fd: &SharedFd, path: Path) -> io::Result<(Armed, u32)> {
        let limit = core.rx.hold_limit();
        let (recv, budget, zero_copy) = match (path, core.rx.zc()) {
            (Path::ZeroCopy, ZcWorker::Local { ring, .. }) => (
                StreamRecv::zc(RecvZcMulti::new(ring.clone(), limit)),
                limit,
                true,
            ),
            _ => {
                let Some(pool) = core.rx.copy_pool().cloned() else {
                    return Err(io::Error::new(
                        io::ErrorKind::Unsupported,
                        "the runtime has no receive pool (Builder::copy_pool(None))",
                    ));
                };
                let op = RecvMulti::new(pool, core.rx.bundles(), limit, core.rx.kernel_limit());
                let budget = op.kernel_limit();
                (StreamRecv::copy(op), budget, false)
            }
        };
        let op = SocketMultiOp::submit(SocketOp::new(fd.clone(), recv)?)?;
        Ok((Armed::new(op, zero_copy), budget))
    }

    /// Whether the wait for returns after `mark` is over; registers `cx`'s waker to
    /// be woken when it may be (unless it is a peek, which registers nothing).
    fn wait_over(core: &Core, wait: Wait, mark: u64, cx: &mut Context<'_>) -> bool {
        match wait {
            Wait::CopyBuffers => {
                let returned = core.rx.copy_returned();
                if returned > mark && core.rx.copy_pool().is_some_and(|p| p.available() > 0) {
                    return true;
                }
                if is_peek(cx.waker()) {
                    return false;
                }
                core.rx.wait_for_copy(mark, cx.waker());
                false
            }
            Wait::ZcChunks => {
                let Some(given) = core.rx.zc_progress() else {
                    return true;
                };
                if given > mark {
                    return true;
                }
                if is_peek(cx.waker()) {
                    return false;
                }
                // Flag first, then re-check: the owner publishes and then reads the
                // flag, so one of the two sees the other.
                core.rx.wait_for_zc(cx.waker());
                core.shared.zc_waiting.store(true, Ordering::SeqCst);
                core.rx.zc_progress().is_none_or(|r| r > mark)
            }
        }
    }

    /// Records a receive's end in the pool and worker counters.
    fn record(core: &Core, path: Path, res: i32, end: &RecvEnd) {
        let stats = match (path, core.rx.zc()) {
            (Path::ZeroCopy, ZcWorker::Local { ring, .. }) => Some(ring.stats_handle()),
            _ => core.rx.copy_pool().map(|p| p.stats_handle()),
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
        // The common case first, without the worker's handle or the state checks below:
        // an armed receive with nothing owed, whose next completion is a buffer or
        // nothing yet (an armed receive has its path, and no end of stream was seen).
        // Anything else it polled is handled by the loop, as if polled there.
        // (Bound after the fast returns, so they drop nothing.)
        let fast = match self.source.as_mut() {
            Some(Source::Armed(armed)) if armed.owed() == 0 => Some(armed.poll_next(cx)),
            _ => None,
        };
        let mut polled = match fast {
            Some(Poll::Pending) => return Poll::Pending,
            Some(Poll::Ready(Some((c, Some(first))))) => {
                self.received = self.received.saturating_add(c.res as u32);
                return Poll::Ready(first.map(Some));
            }
            other => other,
        };
        let Some(core) = context::current() else {
            return Poll::Ready(Err(not_in_runtime()));
        };
        loop {
            if let Some(Source::Armed(armed)) = self.source.as_mut() {
                if armed.owed() > 0 {
                    return Poll::Ready(armed.take_owed().map(Some));
                }
            }
            if self.eof {
                return Poll::Ready(Ok(None));
            }
            let path = *self.path.get_or_insert_with(|| choose(&core, fd));
            if let Path::Handover(owner) = path {
                if !matches!(self.source, Some(Source::Handover(_))) {
                    let rx = HandoverRx::start(&core, owner.into(), fd)?;
                    self.source = Some(Source::Handover(rx));
                    add_owned(&core.shared.metrics.recv_handovers, 1);
                }
                if let Some(Source::Handover(h)) = self.source.as_mut() {
                    return h.poll_recv(cx);
                }
            }
            if let Some(Source::Overflow(o)) = self.source.as_mut() {
                match o.poll_recv(&core, cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Err(e)) => {
                        self.source = None;
                        return Poll::Ready(Err(e));
                    }
                    Poll::Ready(Ok(Got::Data(buf))) => return Poll::Ready(Ok(Some(buf))),
                    Poll::Ready(Ok(Got::Eof)) => {
                        self.source = None;
                        self.eof = true;
                        continue;
                    }
                    Poll::Ready(Ok(Got::Nothing)) => {}
                }
                // Nothing in flight: back to the pool once it has buffers again, else
                // one more receive into ordinary memory, or the wait at the limit.
                let wait = self.wait.unwrap_or(Wait::CopyBuffers);
                if Self::wait_over(&core, wait, self.armed_mark, cx) {
                    self.source = None;
                    self.wait = None;
                } else if is_peek(cx.waker()) {
                    return Poll::Pending;
                } else {
                    match o.start_or_wait(&core, fd, cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Ok(())) => continue,
                        Poll::Ready(Err(e)) => {
                            self.source = None;
                            return Poll::Ready(Err(e));
                        }
                    }
                }
            }
            if self.source.is_none() {
                if let Some(wait) = self.wait {
                    if !Self::wait_over(&core, wait, self.armed_mark, cx) {
                        if is_peek(cx.waker()) {
                            return Poll::Pending;
                        }
                        // The pool is held: receive without it meanwhile.
                        self.source = Some(Source::Overflow(Box::default()));
                        continue;
                    }
                    self.wait = None;
                }
                self.armed_mark = match path {
                    Path::ZeroCopy => core.rx.zc_progress().unwrap_or(0),
                    _ => core.rx.copy_returned(),
                };
                let (armed, budget) = self.arm(&core, fd, path)?;
                self.source = Some(Source::Armed(armed));
                self.budget = budget;
                self.received = 0;
            }
            // Not a handover stream (that returned above): the source is a receive.
            let Some(Source::Armed(armed)) = self.source.as_mut() else {
                continue;
            };
            let (c, first) = match polled.take().unwrap_or_else(|| armed.poll_next(cx)) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    // The final completion was consumed: arm a new receive.
                    self.source = None;
                    continue;
                }
                Poll::Ready(Some(next)) => next,
            };
            if c.res > 0 {
                self.received = self.received.saturating_add(c.res as u32);
                if let Some(first) = first {
                    // A data completion with more to follow: its first buffer came
                    // with it, the rest are owed.
                    return Poll::Ready(first.map(Some));
                }
                // Its buffers are handed out from the op, starting with the next turn
                // of this loop; a final completion with data ends the receive only
                // after they are (its end below never disarms).
                armed.set_owed(c.res as u32);
                if c.more() {
                    continue;
                }
            }
            let tracker = tracker(self.budget, self.received);
            let end = match tracker.on_end(c.res) {
                // This receive stopped itself at the hold limit and everything it got
                // has been taken: arm again.
                RecvEnd::Cancelled if armed.stopped_at_limit() => RecvEnd::BudgetDone,
                end => end,
            };
            if end == RecvEnd::Failed(RecvFailure::Errno(libc::EINVAL))
                && tracker.remaining_budget() > 0
                && tracker.received() == 0
                && path != Path::ZeroCopy
            {
                // Before Linux 6.17 a multishot `recv` refuses a byte limit: arm
                // without it (the limit is then enforced by cancelling at reap time).
                if core.rx.refuse_kernel_limit() {
                    tracing::debug!(
                        worker = core.shared.index,
                        "the kernel refused the multishot recv byte limit (EINVAL); \
                         limiting receives by cancelling them instead"
                    );
                }
                self.source = None;
                continue;
            }
            if end == RecvEnd::Cancelled && path == Path::ZeroCopy && core.rx.restarts_parked() {
                // The worker cancelled it to restart a receive the kernel may have left
                // parked on a dry area (`runtime::zc_restart`): arm again.
                continue;
            }
            Self::record(&core, path, c.res, &end);
            match end {
                RecvEnd::Eof => {
                    self.eof = true;
                    self.source = None;
                }
                RecvEnd::Rearm(RearmReason::NoBuffers) => {
                    add_owned(&core.shared.metrics.recv_enobufs, 1);
                    self.wait = Some(Wait::CopyBuffers);
                }
                RecvEnd::Rearm(RearmReason::NoFreeChunk) => {
                    self.wait = Some(Wait::ZcChunks);
                }
                RecvEnd::Rearm(_) | RecvEnd::BudgetDone => {}
                RecvEnd::Cancelled => {
                    self.source = None;
                    return Poll::Ready(Err(io::Error::from_raw_os_error(libc::ECANCELED)));
                }
                RecvEnd::Failed(RecvFailure::Steering) if path == Path::ZeroCopy => {
                    // This flow is not on the pool's queue: receive it by copy.
                    self.source = None;
                    self.path = Some(Path::Copy);
                    add_owned(&core.shared.metrics.recv_steering_fallbacks, 1);
                    if core.rx.first_steering_fallback() {
                        tracing::warn!(
                            worker = core.shared.index,
                            "RECV_ZC failed with EFAULT: a flow arrives on a queue bound to \
                             another zero-copy instance; it falls back to copy receives. Steer \
                             each worker's flows to its queue (ethtool -N ... action Q)"
                        );
                    }
                }
                RecvEnd::Failed(f) => {
                    self.source = None;
                    return Poll::Ready(Err(f.to_io_error()));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::eligible;
    use crate::ops::SocketFd;
    use std::os::fd::OwnedFd;

    /// The zero-copy decision for a connected socket: (device-less, NIC-bound).
    fn decisions(fd: OwnedFd) -> (bool, bool) {
        let fd = SocketFd::shared(fd);
        (eligible(&fd, true), eligible(&fd, false))
    }

    #[test]
    fn only_ip_peers_may_receive_zero_copy() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let tcp = std::net::TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        assert_eq!(
            decisions(OwnedFd::from(tcp)),
            (true, false),
            "a loopback TCP peer: device-less instances only"
        );
        let (unix, _peer) = std::os::unix::net::UnixStream::pair().expect("pair");
        assert_eq!(
            decisions(OwnedFd::from(unix)),
            (false, false),
            "a Unix socket never takes RECV_ZC, device-less or not"
        );
        let path = std::env::temp_dir().join(format!("zerorx-eligible-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind path");
        let named = std::os::unix::net::UnixStream::connect(&path).expect("connect path");
        let _ = std::fs::remove_file(&path);
        assert!(named.peer_addr().expect("peer").as_pathname().is_some());
        assert_eq!(
            decisions(OwnedFd::from(named)),
            (false, false),
            "a path peer"
        );
        drop(listener);
    }
}
