//! Which way a send goes, zero-copy or plain, under the worker's
//! [`SendZeroCopy`] policy, and what a zero-copy send's completions teach its socket:
//! shared by queued sends (`send_queue`) and awaited ones (`send`).
//!
//! A zero-copy send names registered memory (`IORING_RECVSEND_FIXED_BUF`) when every
//! byte it sends lies in one registered buffer ([`zc_run`]), so the kernel
//! does not pin those pages again. A vectored one (`SENDMSG_ZC`) can name it from
//! Linux 6.15; an older kernel refuses it (`EINVAL`), and this thread then stops
//! naming registrations in vectored sends ([`refused_registration`]) and sends the
//! same bytes again without.

use super::send_buf::SendBuf;
use super::SocketFd;
use crate::driver::{Completion, LANDED_COPIED};
use crate::metrics::{add_owned, WorkerMetrics};
use crate::runtime::{context, SendZeroCopy};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::os::fd::AsFd;
use std::sync::atomic::AtomicU64;

thread_local! {
    /// The kernel refused a `SENDMSG_ZC` naming registered memory (before Linux 6.15).
    static VECTORED_REGISTRATION_REFUSED: Cell<bool> = const { Cell::new(false) };
    /// Bytes of awaited zero-copy sends done at their result whose notification has
    /// not come, by socket (its address): bounded by [`AWAITED_UNNOTIFIED_MAX`].
    static UNNOTIFIED: RefCell<HashMap<usize, usize>> = RefCell::default();
}

/// Bytes of a socket's awaited zero-copy sends that may be done (resolved at their
/// result) while their notifications have not come; past it a send resolves at its
/// notification. The kernel charges no socket memory for the pages of a zero-copy
/// send, so without this bound a task sending in a loop to a peer that reads nothing
/// would never wait, and the buffers it hands over would pile up (the stress run with
/// every send zero-copy grew by 700 MiB in 8 s); with it, such a task waits as a
/// plain send waits for room in a full socket buffer (whose default ceiling,
/// `tcp_wmem`, is also 4 MiB).
pub(crate) const AWAITED_UNNOTIFIED_MAX: usize = 4 << 20;

/// Whether `socket`'s peer is this host: a loopback address, the socket's own
/// address, or a Unix socket. The kernel copies every zero-copy send to such a peer
/// (and refuses them on a Unix socket), so under the adaptive policy their sends go
/// plain from the start: asked once per socket, when its first send of the policy's
/// size is submitted (two syscalls), instead of learning it from a notification. That
/// also keeps clear of a measured loopback pathology: a zero-copy send to a local peer whose
/// receive buffer is tiny (4 KiB) waited ~30 s for its notification (the receiver
/// dropped the retransmitted segments), where plain sends took milliseconds.
fn peer_is_local(socket: &SocketFd) -> bool {
    let s = socket2::SockRef::from(socket);
    let (Ok(peer), Ok(local)) = (s.peer_addr(), s.local_addr()) else {
        return false;
    };
    match (peer.as_socket(), local.as_socket()) {
        (Some(peer), Some(local)) => {
            let ip = peer.ip().to_canonical();
            ip.is_loopback() || ip == local.ip().to_canonical()
        }
        // Not an IP socket: a Unix one.
        _ => true,
    }
}

/// Whether `rest` bytes on `socket` go zero-copy under `policy`. Before the socket's
/// first send of that size, an adaptive policy asks once whether the peer is this
/// host, and switches the socket to plain sends if so (`switched` is set then, for the
/// caller to count where the counters are at hand).
#[inline]
pub(crate) fn goes_zero_copy(
    socket: &SocketFd,
    policy: SendZeroCopy,
    rest: usize,
    switched: &mut bool,
) -> bool {
    let zc = rest > 0 && zero_copy_size(socket, policy, rest);
    if zc && policy.adaptive() && socket.set_peer_checked() && peer_is_local(socket) {
        *switched = socket.set_sends_copy();
        return false;
    }
    zc
}

/// Whether `len` bytes are of a size `policy` sends zero-copy on `socket`, as far as
/// what the socket learnt says (before the peer check of [`goes_zero_copy`]).
#[inline]
pub(crate) fn zero_copy_size(socket: &SocketFd, policy: SendZeroCopy, len: usize) -> bool {
    len >= policy.threshold() && !socket.sends_copy()
}

/// Whether a zero-copy submission's result says the kernel refused it before it ran:
/// the socket (a Unix one) or the kernel takes no zero-copy send of this kind.
pub(crate) fn refused(res: i32) -> bool {
    res == -libc::EOPNOTSUPP || res == -libc::EINVAL
}

/// A registered run shorter than this rides along unregistered in the next zero-copy
/// submission, unless it is all that is left: one SQE names one registered buffer, so
/// naming a run between other bytes takes a submission (and a notification) of its
/// own, which pays only where pinning the run's pages (16 of them here) would cost
/// more. A judgment, not a measurement: no NIC here shows the pinning cost.
pub(crate) const NAMED_RUN_MIN: usize = 64 << 10;

/// What the next zero-copy submission of a buffer list takes: buffers `first..end`
/// (`bytes` bytes from the send's position on), naming `slot` if they lie in one
/// registered buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Run {
    pub(crate) first: usize,
    pub(crate) end: usize,
    pub(crate) bytes: usize,
    pub(crate) slot: Option<u16>,
}

/// What one submission of a buffer list sends, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// It sends the buffers before this index (from the send's position).
    pub(crate) end: usize,
    /// Zero-copy, naming the registered buffer `slot` if any.
    pub(crate) zc: bool,
    pub(crate) slot: Option<u16>,
    /// A `SENDMSG_ZC` naming registered memory (which a kernel before 6.15 refuses).
    pub(crate) named_vectored: bool,
}

/// The next submission of `bufs` from byte `skip` on: all of them plain when the
/// policy does not let the send go `zero_copy`; otherwise its [`zc_run`], zero-copy
/// unless it is a short unregistered run (under `threshold` bytes) ahead of a
/// registered one, which goes plain. One naming registered memory is counted.
pub(crate) fn plan(bufs: &[SendBuf], skip: usize, zero_copy: bool, threshold: usize) -> Plan {
    if !zero_copy {
        return Plan {
            end: bufs.len(),
            zc: false,
            slot: None,
            named_vectored: false,
        };
    }
    let run = zc_run(bufs, skip);
    if run.slot.is_some() {
        count(|m| &m.send_zc_registered);
    }
    Plan {
        end: run.end,
        zc: run.slot.is_some() || run.bytes >= threshold,
        slot: run.slot,
        named_vectored: run.slot.is_some() && run.end - run.first > 1,
    }
}

/// The next zero-copy submission of `bufs` from byte `skip` on: a run of buffers lying
/// in one registered buffer, named, when it is [`NAMED_RUN_MIN`] bytes or more or all
/// that is left; otherwise everything up to the next such run. A run of several
/// buffers is named only while this thread's kernel takes registered vectored sends.
pub(crate) fn zc_run(bufs: &[SendBuf], skip: usize) -> Run {
    let (mut first, mut skip) = (0, skip);
    while first < bufs.len() && skip >= bufs[first].len() {
        skip -= bufs[first].len();
        first += 1;
    }
    let vectored = !VECTORED_REGISTRATION_REFUSED.with(Cell::get);
    let (mut k, mut before) = (first, 0);
    // The slot of buffer `k`, looked up once (an address look-up each): the scan of a
    // run ends at the buffer the next run starts with.
    let mut next_slot = bufs.get(k).and_then(SendBuf::registered_slot);
    while k < bufs.len() {
        let slot = next_slot;
        next_slot = None;
        let mut end = k + 1;
        let mut bytes = bufs[k].len() - if k == first { skip } else { 0 };
        while end < bufs.len() {
            next_slot = bufs[end].registered_slot();
            if slot.is_none() || next_slot != slot {
                break;
            }
            bytes += bufs[end].len();
            end += 1;
        }
        let worth = bytes >= NAMED_RUN_MIN || (k == first && end == bufs.len());
        if slot.is_some() && worth && (end - k == 1 || vectored) {
            return if k == first {
                Run {
                    first,
                    end,
                    bytes,
                    slot,
                }
            } else {
                Run {
                    first,
                    end: k,
                    bytes: before,
                    slot: None,
                }
            };
        }
        before += bytes;
        k = end;
    }
    Run {
        first,
        end: bufs.len(),
        bytes: before,
        slot: None,
    }
}

/// A vectored zero-copy send naming registered memory got `res`: if the kernel
/// refused it, this thread stops naming registrations in vectored sends, and `true`
/// says to send the same bytes again without.
pub(crate) fn refused_registration(res: i32) -> bool {
    if !refused(res) {
        return false;
    }
    VECTORED_REGISTRATION_REFUSED.with(|r| r.set(true));
    tracing::info!(
        "the kernel refused a vectored zero-copy send naming registered memory \
         (before Linux 6.15): such sends go unregistered on this worker"
    );
    true
}

/// Ends a zero-copy send of `socket`'s still waiting for its notification at
/// shutdown: its peer reads nothing, and the kernel keeps the bytes (and with them the
/// buffers) queued on the socket. Disconnecting the socket (`connect` to `AF_UNSPEC`:
/// TCP resets the connection and drops its send queue) lets the notification come;
/// the runtime is going away, and the peer had half its shutdown time to read.
pub(crate) fn disconnect(socket: &SocketFd) {
    // SAFETY: `sockaddr` is plain data; all zero is family AF_UNSPEC.
    let addr: libc::sockaddr = unsafe { std::mem::zeroed() };
    // SAFETY: `addr` is a valid sockaddr of the length given; the fd is kept open by
    // the caller's `socket`. A failure leaves the shutdown to its deadline.
    let _ = unsafe {
        libc::connect(
            std::os::fd::AsRawFd::as_raw_fd(&socket.as_fd()),
            &addr,
            std::mem::size_of::<libc::sockaddr>() as libc::socklen_t,
        )
    };
}

/// A socket whose last user handle is being dropped while ops still hold it (sends in
/// flight; a zero-copy one holds it until its notification, which a peer that reads
/// nothing holds back): if the application asked for a reset on close
/// (`SO_LINGER` 0), it resets now, as `close` would have, instead of when the last op
/// lets go.
pub(crate) fn reset_if_lingering(socket: &SocketFd) {
    let linger = socket2::SockRef::from(socket).linger();
    if matches!(linger, Ok(Some(d)) if d.is_zero()) {
        disconnect(socket);
    }
}

/// Adds one to the current worker's `counter`.
pub(crate) fn count(counter: impl FnOnce(&WorkerMetrics) -> &AtomicU64) {
    context::with_core(|core| add_owned(counter(&core.shared.metrics), 1));
}

/// How an awaited send chooses its way at each submission, and what it learns from
/// the completion.
#[derive(Debug)]
pub(crate) struct AwaitedWay {
    policy: SendZeroCopy,
    /// Zero-copy whatever the socket learnt (`Connection::send_zc`).
    forced: bool,
    /// The last submission went zero-copy, and named registered memory in a vectored
    /// send.
    zc: bool,
    registered_vectored: bool,
    /// Bytes this op counts under its socket's [`AWAITED_UNNOTIFIED_MAX`].
    unnotified: usize,
}

impl AwaitedWay {
    /// The current worker's policy (plain off a worker).
    pub(crate) fn policy() -> AwaitedWay {
        let policy = context::with_core(|core| core.send_zc).unwrap_or(SendZeroCopy::Off);
        AwaitedWay::new(policy, false)
    }

    /// Always zero-copy.
    pub(crate) fn forced() -> AwaitedWay {
        AwaitedWay::new(SendZeroCopy::Always { threshold: 0 }, true)
    }

    /// Always plain (datagrams).
    pub(crate) fn plain() -> AwaitedWay {
        AwaitedWay::new(SendZeroCopy::Off, false)
    }

    fn new(policy: SendZeroCopy, forced: bool) -> AwaitedWay {
        AwaitedWay {
            policy,
            forced,
            zc: false,
            registered_vectored: false,
            unnotified: 0,
        }
    }

    /// Whether the next submission, of `rest` bytes on `socket`, goes zero-copy.
    pub(crate) fn choose(&mut self, socket: &SocketFd, rest: usize) -> bool {
        self.registered_vectored = false;
        self.zc = if self.forced {
            rest > 0
        } else {
            let mut switched = false;
            let zc = goes_zero_copy(socket, self.policy, rest, &mut switched);
            if switched {
                count(|m| &m.send_zc_off);
            }
            zc
        };
        self.zc
    }

    /// The smallest unregistered run that goes zero-copy.
    pub(crate) fn threshold(&self) -> usize {
        if self.forced {
            0
        } else {
            self.policy.threshold()
        }
    }

    /// The submission about to go follows `plan` ([`plan`]).
    pub(crate) fn submitted(&mut self, plan: &Plan) {
        self.zc = plan.zc;
        self.registered_vectored = plan.named_vectored;
    }

    /// What the landed completion `c` of the last submission teaches `socket`; `true`
    /// when the kernel refused it zero-copy before it ran, and the same bytes go again
    /// (plain, or zero-copy without naming registered memory).
    pub(crate) fn landed(&mut self, socket: &SocketFd, c: &Completion) -> bool {
        if !self.zc {
            return false;
        }
        // A refusal may come with a notification to follow (a Unix socket's does).
        if refused(c.res) {
            if self.registered_vectored && refused_registration(c.res) {
                return true;
            }
            if !self.forced {
                if socket.set_sends_copy() {
                    count(|m| &m.send_zc_off);
                }
                return true;
            }
            return false;
        }
        if !c.more() {
            return false;
        }
        count(|m| &m.send_zc);
        if c.flags & LANDED_COPIED != 0 {
            self.copied(socket);
        }
        false
    }

    /// What the op's final completion, nobody taking it (the send was done at its
    /// result), teaches `socket`: a notification may say the kernel copied.
    pub(crate) fn released(&self, socket: &SocketFd, c: &Completion) {
        let notification = io_uring::cqueue::notif(c.flags);
        if notification && c.res as u32 & zcrx::abi::IORING_NOTIF_USAGE_ZC_COPIED != 0 {
            self.copied(socket);
        }
    }

    /// Whether the send, whose last submission's result `res` came with a notification
    /// to follow, is done at it: all of the `rest` sent, and room under `socket`'s
    /// [`AWAITED_UNNOTIFIED_MAX`], which the bytes then take until the op goes (at the
    /// notification, [`let_go`](Self::let_go)).
    pub(crate) fn done_at_result(&mut self, socket: &SocketFd, res: i32, rest: usize) -> bool {
        if usize::try_from(res) != Ok(rest) || self.unnotified > 0 {
            return false;
        }
        let key = socket as *const SocketFd as usize;
        UNNOTIFIED.with(|u| {
            let mut u = u.borrow_mut();
            let held = u.entry(key).or_insert(0);
            if *held + rest > AWAITED_UNNOTIFIED_MAX && *held > 0 {
                return false;
            }
            *held += rest;
            self.unnotified = rest;
            true
        })
    }

    /// The op goes (its notification came, or the runtime ended): the bytes it held
    /// under `socket`'s bound are free.
    pub(crate) fn let_go(&mut self, socket: &SocketFd) {
        let bytes = std::mem::take(&mut self.unnotified);
        if bytes == 0 {
            return;
        }
        let key = socket as *const SocketFd as usize;
        let _ = UNNOTIFIED.try_with(|u| {
            let mut u = u.borrow_mut();
            if let Some(held) = u.get_mut(&key) {
                *held = held.saturating_sub(bytes);
                if *held == 0 {
                    u.remove(&key);
                }
            }
        });
    }

    /// Whether the last submission went zero-copy (its notification may be what a
    /// shutdown waits for).
    pub(crate) fn zero_copy(&self) -> bool {
        self.zc
    }

    /// The kernel copied a zero-copy send of `socket`'s (counted); under the adaptive
    /// policy its sends go plain from now on.
    fn copied(&self, socket: &SocketFd) {
        count(|m| &m.send_zc_copied);
        if self.policy.adaptive() && socket.set_sends_copy() {
            count(|m| &m.send_zc_off);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[test]
    fn heap_bytes_make_one_unnamed_run_from_the_send_position() {
        let bufs = [
            SendBuf::from(Bytes::from_static(b"ab")),
            SendBuf::from(Bytes::from_static(b"cd")),
        ];
        let run = |first, bytes| Run {
            first,
            end: 2,
            bytes,
            slot: None,
        };
        assert_eq!(zc_run(&bufs, 0), run(0, 4));
        assert_eq!(zc_run(&bufs, 3), run(1, 1));
        assert_eq!(zc_run(&bufs, 4), run(2, 0));
    }

    #[test]
    fn awaited_sends_are_done_at_their_result_while_their_socket_has_room_for_them() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().expect("pair");
        let socket = SocketFd::new(a.into());
        let mib = 1 << 20;
        let way = || {
            let mut w = AwaitedWay::forced();
            w.zc = true;
            w
        };
        let (mut first, mut second) = (way(), way());
        // Short: not done.
        assert!(!first.done_at_result(&socket, mib as i32, 3 * mib));
        assert!(first.done_at_result(&socket, 3 * mib as i32, 3 * mib));
        // 3 + 2 MiB would pass the bound: this one waits for its notification.
        assert!(!second.done_at_result(&socket, 2 * mib as i32, 2 * mib));
        assert!(second.done_at_result(&socket, mib as i32, mib));
        first.let_go(&socket);
        second.let_go(&socket);
        // All let go: a send over the bound alone is done at its result.
        let mut big = way();
        assert!(big.done_at_result(&socket, 6 * mib as i32, 6 * mib));
        assert!(!way().done_at_result(&socket, 1, 1));
        big.let_go(&socket);
        assert!(UNNOTIFIED.with(|u| u.borrow().is_empty()));
    }

    #[test]
    fn only_refusals_before_the_send_ran_count_as_refused() {
        assert!(refused(-libc::EOPNOTSUPP) && refused(-libc::EINVAL));
        assert!(!refused(-libc::EPIPE) && !refused(0) && !refused(10));
        assert!(!refused_registration(-libc::ECONNRESET));
        assert!(!VECTORED_REGISTRATION_REFUSED.with(Cell::get));
    }
}
