//! The progress task of one endpoint, on the worker that opened it: it reads the
//! completion queue (which is also what drives libfabric's manual progress, the target
//! side of RMA included), retries the backlog, and sleeps on the CQ's wait fd where the
//! provider has one, else for a bounded, growing interval.

use super::endpoint::EpState;
use super::errors::{self, Dir, ErrCompletion};
use super::ops::{key_of_context, Phase, Record};
use super::wait;
use crate::{Lease, OpError, OpOutcome, PeerId};
use bytes::Bytes;
use std::collections::VecDeque;
use std::ffi::CStr;
use std::rc::Rc;
use std::time::{Duration, Instant};
use zerorx_libfabric_sys as fi;

/// CQ entries read per call.
const BATCH: usize = 32;
/// Longest sleep on the wait fd: a bound in case the provider's fd misses an event
/// (connection requests, for one, are handled only when progress runs).
const FD_WAIT_MAX: Duration = Duration::from_millis(10);
/// First and longest poll interval without a wait fd.
const POLL_MIN: Duration = Duration::from_micros(20);
const POLL_MAX: Duration = Duration::from_millis(1);

/// Runs until the endpoint is closed.
pub(super) async fn run(state: Rc<EpState>) {
    let mut idle = 0u32;
    loop {
        if state.closed.get() {
            return;
        }
        let worked = state.progress_once();
        if state.closed.get() {
            return;
        }
        if worked {
            idle = 0;
            zerorx::yield_now().await;
            continue;
        }
        // No busy polling: measured on this machine, yielding for even 50 µs before
        // sleeping made round trips slower (the worker's other tasks and the kernel pay
        // for it), while the wait fd and short timer sleeps wake the task in time.
        idle = idle.saturating_add(1);
        let fd = state.res.borrow().as_ref().and_then(|r| r.wait_fd.clone());
        match fd {
            // fi_trywait only where there is a wait object: shm's fabric has no trywait
            // and crashes on it.
            Some(fd) if state.res.borrow().as_ref().is_some_and(|r| r.try_wait()) => {
                wait::sleep(&state.kick, Some(&fd), FD_WAIT_MAX).await;
            }
            Some(_) => wait::sleep(&state.kick, None, POLL_MIN).await,
            None => {
                let step = (idle - 1).min(6);
                let interval = (POLL_MIN * 2u32.pow(step)).min(POLL_MAX);
                wait::sleep(&state.kick, None, interval).await;
            }
        }
    }
}

impl EpState {
    /// One round: reports decided outcomes, drains the CQ, retries the backlog. Returns
    /// whether anything happened.
    pub(super) fn progress_once(&self) -> bool {
        let mut worked = self.deliver_ready();
        worked |= self.drain_cq() > 0;
        worked |= self.check_peers();
        worked |= self.retry_backlog();
        worked |= self.deliver_ready();
        worked
    }

    fn deliver_ready(&self) -> bool {
        let ready: Vec<_> = self.ops.borrow_mut().ready.drain(..).collect();
        let any = !ready.is_empty();
        for (lane, op, outcome) in ready {
            self.report(lane, op, outcome);
        }
        any
    }

    /// Reads every completion available; returns how many.
    pub(super) fn drain_cq(&self) -> usize {
        let mut total = 0;
        loop {
            let mut entries = [fi::fi_cq_tagged_entry::default(); BATCH];
            let mut srcs = [fi::FI_ADDR_NOTAVAIL; BATCH];
            let n = {
                let res = self.res.borrow();
                let Some(res) = res.as_ref() else {
                    return total;
                };
                // SAFETY: the CQ is open and has the tagged format; both arrays have
                // BATCH entries.
                unsafe {
                    fi::fi_cq_readfrom(
                        res.cq(),
                        entries.as_mut_ptr().cast(),
                        BATCH,
                        srcs.as_mut_ptr(),
                    )
                }
            };
            if n > 0 {
                let n = n as usize;
                for (entry, src) in entries.iter().zip(srcs).take(n) {
                    self.on_success(entry, src);
                }
                total += n;
                if n < BATCH {
                    return total;
                }
            } else if n == -(fi::FI_EAVAIL as isize) {
                match self.read_error() {
                    Some((entry, text)) => {
                        self.on_error(&entry, text);
                        total += 1;
                    }
                    None => return total,
                }
            } else {
                // FI_EAGAIN: empty. Anything else is a CQ-level failure with nothing to
                // attribute it to; the next round tries again.
                return total;
            }
        }
    }

    /// `fi_cq_readerr` and the provider's text for it.
    fn read_error(&self) -> Option<(fi::fi_cq_err_entry, String)> {
        let res = self.res.borrow();
        let res = res.as_ref()?;
        let mut entry = fi::fi_cq_err_entry::default();
        // SAFETY: the CQ is open and reported an error entry (FI_EAVAIL); entry is a
        // valid out struct with no err_data buffer (the provider supplies its own).
        let rc = unsafe { fi::fi_cq_readerr(res.cq(), &mut entry, 0) };
        if rc != 1 {
            return None;
        }
        // SAFETY: fi_cq_strerror returns a NUL-terminated string owned by the provider
        // (or null); it is copied before the next CQ call.
        let text = unsafe {
            let p = fi::fi_cq_strerror(
                res.cq(),
                entry.prov_errno,
                entry.err_data,
                std::ptr::null_mut(),
                0,
            );
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        Some((entry, text))
    }

    /// Takes the record a completion belongs to, releasing what it held in counters.
    fn take(&self, ctx: *mut std::ffi::c_void) -> Option<Record> {
        let key = key_of_context(ctx)?;
        let rec = self.ops.borrow_mut().remove(key)?;
        self.release(&rec);
        if rec.rma_key().is_some() && rec.phase == Phase::Posted {
            if let Some(p) = rec.peer {
                if let Some(peer) = self.peers.borrow_mut().get_mut(p) {
                    peer.rma_in_flight = peer.rma_in_flight.saturating_sub(1);
                }
            }
        }
        Some(rec)
    }

    fn on_success(&self, entry: &fi::fi_cq_tagged_entry, src: fi::fi_addr_t) {
        let Some(mut rec) = self.take(entry.op_context) else {
            return;
        };
        if let Some(p) = rec.lane() {
            if let Some(peer) = self.peers.borrow_mut().get_mut(p) {
                peer.reset_since = None;
            }
        }
        if rec.reported {
            return;
        }
        let posted = rec.posted_len();
        let mut out = OpOutcome::ok(posted);
        if rec.dir() == Dir::Recv {
            out.len = entry.len.min(posted);
            out.peer = self.source(src);
            out.tag = rec.tagged_recv().then_some(entry.tag);
            out.imm = (entry.flags & fi::FI_REMOTE_CQ_DATA != 0).then_some(entry.data);
            out.lease = lease(&mut rec, out.len);
            if entry.len > posted {
                // A lease receive's buffer is larger than asked (see `post`): the whole
                // message arrived, so its length is known.
                out.status = Err(OpError::Truncated {
                    needed: Some(entry.len),
                    posted,
                });
            }
        }
        self.report(rec.lane(), rec.op, out);
    }

    fn on_error(&self, entry: &fi::fi_cq_err_entry, text: String) {
        let Some(mut rec) = self.take(entry.op_context) else {
            return;
        };
        if rec.reported {
            return;
        }
        let posted = rec.posted_len();
        // What libfabric was given, which for a lease can be more than asked.
        let given = rec.lease.as_ref().map_or(posted, Vec::len);
        let e = ErrCompletion {
            err: entry.err,
            prov_errno: entry.prov_errno,
            olen: entry.olen,
            text,
        };
        let err = match errors::op_error(&self.name, rec.dir(), rec.peer, rec.rma_key(), given, &e)
        {
            OpError::Truncated { needed, .. } => OpError::Truncated { needed, posted },
            other => other,
        };
        let lost = errors::is_connection_loss(&err) && rec.dir() != Dir::Recv;
        if let (true, Some(since)) = (lost, rec.lane().and_then(|p| self.reset_since(p))) {
            if since.elapsed() < self.connect_timeout {
                self.requeue(rec, since);
                return;
            }
        }
        if let (OpError::RemoteAccess { .. }, Some(p)) = (&err, rec.peer) {
            if let Some(peer) = self.peers.borrow_mut().get_mut(p) {
                peer.reset_since = Some(Instant::now());
            }
        }
        let mut out = OpOutcome::err(err.clone());
        match &err {
            OpError::Truncated { .. } => {
                out.len = posted;
                out.tag = rec.tagged_recv().then_some(entry.tag);
                out.lease = lease(&mut rec, posted);
            }
            OpError::Canceled => self.canceled.borrow_mut().push(rec.op),
            _ => {}
        }
        self.report(rec.lane(), rec.op, out);
        if let (true, Some(peer), OpError::ConnectionLost { cause, .. }) = (lost, rec.peer, &err) {
            self.peer_down(peer, cause);
        }
    }

    /// When `peer`'s connection started being reset by a refused RMA, if it is.
    fn reset_since(&self, peer: PeerId) -> Option<Instant> {
        self.peers.borrow().get(peer).and_then(|p| p.reset_since)
    }

    /// Puts an operation that met a connection dropped after a refused RMA back in the
    /// backlog, ahead of the operations posted after it to the same peer. Nothing was
    /// delivered: the target discards what follows the refused RMA on that connection.
    fn requeue(&self, mut rec: Record, since: Instant) {
        rec.phase = Phase::Queued {
            eagain_since: Some(since),
        };
        let (lane, op) = (rec.lane(), rec.op);
        let mut ops = self.ops.borrow_mut();
        let key = ops.insert(rec);
        let at = ops
            .backlog
            .iter()
            .position(|&k| ops.get(k).is_some_and(|r| r.lane() == lane && r.op > op))
            .unwrap_or(ops.backlog.len());
        ops.backlog.insert(at, key);
        drop(ops);
        self.kick.kick();
    }

    /// The peer id of a message source (`None` when the sender is not in the table).
    fn source(&self, src: fi::fi_addr_t) -> Option<PeerId> {
        if src == fi::FI_ADDR_NOTAVAIL {
            return None;
        }
        self.peers.borrow().by_fi_addr(src)
    }

    /// Hands queued operations to libfabric in post order per lane, holding a lane that
    /// is fenced or got `FI_EAGAIN`; a peer that stays unreachable past the connect
    /// timeout is marked down. Returns whether anything was posted or completed.
    fn retry_backlog(&self) -> bool {
        let keys: Vec<usize> = std::mem::take(&mut self.ops.borrow_mut().backlog).into();
        if keys.is_empty() {
            return false;
        }
        let mut keep = VecDeque::new();
        let mut blocked: Vec<Option<PeerId>> = Vec::new();
        let mut downs: Vec<(PeerId, String)> = Vec::new();
        let mut worked = false;
        for key in keys {
            let Some((lane, peer)) = self.ops.borrow().get(key).map(|r| (r.lane(), r.peer)) else {
                continue;
            };
            if blocked.contains(&lane) || self.fenced(lane) {
                keep.push_back(key);
                if !blocked.contains(&lane) {
                    blocked.push(lane);
                }
                continue;
            }
            let rc = self.start(key);
            if rc == 0 {
                worked = true;
            } else if rc == -(fi::FI_EAGAIN as isize) {
                let since = self.note_eagain(key);
                if let (Some(p), true) = (peer, since.elapsed() > self.connect_timeout) {
                    downs.push((
                        p,
                        format!(
                            "{}: the peer was not reachable within {:?} (libfabric kept \
                             answering FI_EAGAIN)",
                            self.name, self.connect_timeout
                        ),
                    ));
                }
                keep.push_back(key);
                blocked.push(lane);
            } else {
                self.refused(key, rc);
                worked = true;
            }
        }
        let mut ops = self.ops.borrow_mut();
        // Posts made while this ran (none: nothing here awaits) would be behind these.
        keep.extend(ops.backlog.drain(..));
        ops.backlog = keep;
        drop(ops);
        for (p, cause) in downs {
            self.peer_down(p, &cause);
            worked = true;
        }
        worked
    }

    /// Records the first `FI_EAGAIN` of a queued record; returns when it was.
    fn note_eagain(&self, key: usize) -> Instant {
        let mut ops = self.ops.borrow_mut();
        let now = Instant::now();
        match ops.get_mut(key) {
            Some(rec) => match rec.phase {
                Phase::Queued {
                    eagain_since: Some(t),
                } => t,
                _ => {
                    rec.phase = Phase::Queued {
                        eagain_since: Some(now),
                    };
                    now
                }
            },
            None => now,
        }
    }
}

/// The lease of a lease receive: its buffer cut to the bytes placed.
fn lease(rec: &mut Record, len: usize) -> Option<Lease> {
    let mut buf = rec.lease.take()?;
    buf.truncate(len);
    // Give back the unused tail of a buffer sized for the longest message (glibc shrinks
    // in place, without copying).
    buf.shrink_to_fit();
    Some(Lease::new(vec![Bytes::from(buf)]))
}
