//! Restarting zero-copy receives a kernel without zcrx events (Linux 7.1) left parked.
//!
//! On 7.1 a multishot RECV_ZC that meets a dry area may stay armed without a
//! completion instead of ending with `ENOMEM`, and chunks given back later do not wake
//! it: only the socket's next wake-up would, which never comes once the peer has sent
//! everything or filled its window (docs/testing.md, "A kernel-line difference").
//! Cancelling such a receive works: it ends with `-ECANCELED`, and the stream arms a
//! new one, which takes the queued data (`ops::tcp_recv`).
//!
//! Which receives are parked cannot be read off the pool's counters: one stalled in a
//! guest run beside 13 of 16 chunks free. So the worker looks at the receives
//! themselves, and only around a shortage (parks need one): from the moment its pool is
//! seen low ([`Pressure::is_low`]) until [`WATCH`] after the last such moment, every
//! [`CHECK_EVERY`] it cancels each RECV_ZC that has had no completion since the last
//! look while its socket holds unread bytes (`FIONREAD`). An idle connection (nothing
//! to read) and a busy one (completions coming) are left alone, so a restart costs a
//! re-arm of a receive that was stuck, and the look costs one `ioctl` per quiet
//! receive, only while a shortage lasts.
//!
//! Kernels with zcrx events (Linux 7.2+) end such a receive with `ENOMEM` (and post
//! an allocation-failure event): nothing is watched there
//! ([`Builder::zero_copy_restarts`](crate::Builder::zero_copy_restarts) decides).

use super::pressure::Pressure;
use super::worker::WorkerShared;
use crate::driver::op::OpData;
use crate::driver::Driver;
use crate::metrics::add_owned;
use std::cell::Cell;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};
use zcrx::StatsHandle;

/// The opcode label the driver keeps for RECV_ZC ops.
const RECV_ZC: u8 = io_uring::opcode::RecvZc::CODE;

/// How long after the pool was last seen low its receives are still looked at: a
/// receive parks at the shortage, and is found at the next look or the one after.
const WATCH: Duration = Duration::from_secs(1);

/// Time between two looks: how long a parked receive stalls at most (about).
const CHECK_EVERY: Duration = Duration::from_millis(20);

/// The watch of one worker receiving zero-copy on a kernel without events.
#[derive(Debug, Default)]
pub(crate) struct ParkedRestart {
    /// Until when receives are looked at (`None`: no shortage lately).
    watch_until: Cell<Option<Instant>>,
    /// When the next look is due.
    next_look: Cell<Option<Instant>>,
}

impl ParkedRestart {
    /// Once per loop turn, with the counters of the zero-copy pool the worker's ring
    /// receives into (the owner's, for an importer). Returns how long the loop may
    /// sleep before the next look, while a watch is on.
    pub(crate) fn maintain(
        &self,
        stats: &StatsHandle,
        driver: &mut Driver,
        shared: &WorkerShared,
    ) -> Option<Duration> {
        let s = stats.snapshot();
        let low = Pressure {
            available: s.chunks_total.saturating_sub(s.in_use + s.returns_pending) as usize,
            total: s.chunks_total as usize,
        }
        .is_low();
        if !low && self.watch_until.get().is_none() {
            // The usual turn: no shortage, no clock read.
            return None;
        }
        let now = Instant::now();
        if low {
            self.watch_until.set(Some(now + WATCH));
        }
        if self.watch_until.get().is_some_and(|until| now > until) {
            self.watch_until.set(None);
            self.next_look.set(None);
            return None;
        }
        // The first look of a watch is due at once: a receive quiet since it was armed
        // may be parked already (at worst, one that was about to complete re-arms).
        let due = self.next_look.get().unwrap_or(now);
        let due = if now >= due {
            look(driver, shared);
            now + CHECK_EVERY
        } else {
            due
        };
        self.next_look.set(Some(due));
        Some(due - now)
    }
}

/// Cancels the worker's RECV_ZC receives that had no completion since the last look
/// and whose socket holds unread bytes, counted in its metrics; marks the others
/// unheard for the next look.
fn look(driver: &mut Driver, shared: &WorkerShared) -> usize {
    let n = driver.cancel_streaming(RECV_ZC, stuck);
    add_owned(&shared.metrics.recv_zc_restarts, n as u64);
    n
}

/// Whether the receive `data` is parked: nothing heard since the last look while its
/// socket has bytes to read.
fn stuck(data: &mut OpData) -> bool {
    if data.take_heard() != Some(false) {
        return false;
    }
    data.describe().0.is_some_and(has_unread_bytes)
}

/// Whether the socket `fd` has bytes queued for reading (`FIONREAD`); `false` when
/// the kernel will not say.
fn has_unread_bytes(fd: RawFd) -> bool {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int into `n`, which lives across the call; `fd` is
    // held open by the op it came from, which is in the driver's slab meanwhile.
    let rc = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) };
    rc == 0 && n > 0
}
