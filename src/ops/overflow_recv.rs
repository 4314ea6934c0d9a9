//! A stream's receives while its worker's pools are held by the application: one plain
//! `recv` at a time into a heap buffer, within the worker's receive memory limit, and
//! the wait at that limit, which ends in an error rather than a hang.
//!
//! Why: a receive that found the pool dry waits for a buffer to come back, but when
//! the application keeps what it received (a store keeping decoded fields, replies
//! queued behind slow peers, a reader keeping its last chunk) no buffer may ever come
//! back, and every connection of the worker would wait forever. Receiving into
//! ordinary memory costs what copy mode costs anyway (the kernel copies into the
//! buffer) plus an allocation, and only while the pool is held.

use super::recv::RecvInto;
use super::SharedFd;
use crate::metrics::add_owned;
use crate::runtime::context;
use crate::runtime::op::Op;
use crate::runtime::worker::Core;
use crate::time::Sleep;
use bytes::BytesMut;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use zcrx::RxBuf;

/// What a stream does while its pool is held: a receive in flight, or none (then
/// maybe waiting at the memory limit until `deadline`).
#[derive(Default)]
pub(crate) struct Overflow {
    recv: Option<Op<RecvInto>>,
    /// The capacity of the receive in flight, counted against the worker's limit until
    /// it completes (so streams starting receives at once cannot together pass it).
    reserved: u64,
    /// Set when a receive first found no room under the limit; cleared by progress.
    deadline: Option<Sleep>,
}

impl Drop for Overflow {
    fn drop(&mut self) {
        if self.reserved > 0 {
            let reserved = self.reserved;
            context::with_core(|core| core.rx.release_overflow(reserved));
        }
    }
}

/// What the receive in flight gave.
pub(crate) enum Got {
    Data(RxBuf),
    Eof,
    /// No receive in flight.
    Nothing,
}

impl Overflow {
    /// Polls the receive in flight, if there is one.
    pub(crate) fn poll_recv(&mut self, core: &Core, cx: &mut Context<'_>) -> Poll<io::Result<Got>> {
        let Some(op) = self.recv.as_mut() else {
            return Poll::Ready(Ok(Got::Nothing));
        };
        let done = std::task::ready!(Pin::new(op).poll(cx));
        self.recv = None;
        core.rx.release_overflow(std::mem::take(&mut self.reserved));
        let (c, op) = done?;
        let n = c.result()? as usize;
        if n == 0 {
            return Poll::Ready(Ok(Got::Eof));
        }
        self.deadline = None;
        let data: Vec<u8> = op.into_filled(n).into();
        Poll::Ready(match core.rx.overflow_buf(data) {
            Some(buf) => Ok(Got::Data(buf)),
            None => Err(io::Error::other(
                "an overflow receive completed without a copy pool to account it",
            )),
        })
    }

    /// Starts a receive into ordinary memory when the limit leaves room (`Ready(Ok)`:
    /// poll it next); otherwise waits for room (or the pool's returns, which the
    /// caller registered for) until the deadline, then fails with `OutOfMemory`.
    pub(crate) fn start_or_wait(
        &mut self,
        core: &Core,
        fd: &SharedFd,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        let room = core.rx.overflow_room();
        if room > 0 {
            core.rx.warn_pinned(core.shared.index, false);
            self.recv = Some(Op::submit(RecvInto {
                socket: fd.clone(),
                buf: BytesMut::with_capacity(room),
            })?);
            self.reserved = room as u64;
            core.rx.reserve_overflow(self.reserved);
            add_owned(&core.shared.metrics.recv_overflows, 1);
            return Poll::Ready(Ok(()));
        }
        let wait = core.rx.memory_wait();
        let deadline = self
            .deadline
            .get_or_insert_with(|| crate::time::sleep(wait));
        if Pin::new(deadline).poll(cx).is_ready() {
            self.deadline = None;
            add_owned(&core.shared.metrics.recv_memory_refusals, 1);
            core.rx.warn_pinned(core.shared.index, true);
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!(
                    "worker {}: no receive memory for {wait:?}: {}",
                    core.shared.index,
                    core.rx.describe_pinning()
                ),
            )));
        }
        core.rx.wait_for_room(cx.waker());
        Poll::Pending
    }
}
