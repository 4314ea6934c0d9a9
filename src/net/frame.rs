//! [`FrameReader`]: byte ranges and length-prefixed frames cut out of the received
//! buffers themselves, as [`BytesChain`]s, without copying.

use super::{AsConnection, BytesChain};
use crate::runtime::pressure::{self, HolderSlot, Pressure};
use bytes::{Buf, BytesMut};
use std::future::poll_fn;
use std::io;
use std::task::{Context, Poll, Waker};
use zcrx::RxBuf;

/// Reads from a connection ([`TcpStream`](super::TcpStream),
/// [`UnixStream`](super::UnixStream) or [`Connection`](super::Connection)) and hands
/// out byte ranges as chains of the received buffers (each `RxBuf` becomes a segment
/// via `into_bytes()`, no copy).
///
/// `S` is how the connection is held ([`AsConnection`]): as it is, by `&`, or in an
/// `Rc` (to send from other tasks while this one reads).
///
/// # Memory
/// A received buffer held in a chain keeps its receive-pool chunk busy until the last
/// view of it drops; when the pool runs out, receives on that worker wait. The reader
/// itself never holds more than what the caller asked for plus the tail of one
/// buffer (it stops receiving as soon as the request is covered), and while
/// assembling one request it holds at most its [hold limit](Self::set_hold_limit) of
/// pool memory plus one buffer before it copies.
///
/// While it waits for the rest of a request it holds pool buffers only as long as
/// the worker's pool has room: when a quarter of the pool or less is free (checked
/// before each wait, and by the worker on every loop turn while the reader waits),
/// it copies what it holds into one heap buffer, returns the chunks, and copies the
/// rest of that request as it arrives. So readers sitting on partial messages can
/// never hold every chunk and stop the worker from receiving the bytes that would
/// complete them; [`copy_stats`](Self::copy_stats) counts what was copied.
///
/// Callers that keep data for long should copy it out (`Bytes::copy_from_slice`) and
/// drop the chain: the reader cannot take back buffers it has handed out.
///
/// # Cancellation
/// Every method is cancel-safe: received buffers are appended to
/// [`buffered`](Self::buffered) as they arrive and bytes are only taken out once a
/// request is complete, so dropping a pending `fill`/`read_exact`/`read_frame` and
/// calling again loses nothing.
pub struct FrameReader<S: AsConnection> {
    stream: S,
    buf: BytesChain,
    eof: bool,
    hold_limit: usize,
    /// Leading bytes of `buf` that are the reader's own heap copy (always one
    /// segment); the rest are views of receive buffers.
    copied: usize,
    /// The last [`consume`](Self::consume) took bytes of the heap copy.
    last_copied: bool,
    stats: CopyStats,
    /// Registered with the worker while waiting with receive buffers held.
    holder: Option<HolderSlot>,
}

/// What a [`FrameReader`] copied out of receive buffers, since it was created.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CopyStats {
    /// Requests handed out (frames, `read_exact` and `consume` ranges) that contain
    /// bytes the reader copied.
    pub frames: u64,
    /// Bytes the reader copied into heap buffers (a byte copied twice, when a heap
    /// buffer could not be grown in place, counts twice).
    pub bytes: u64,
    /// Copies made because the worker's receive pool ran low while the reader waited
    /// with buffers held.
    pub pressure_spills: u64,
}

/// Length of the big-endian frame length prefix.
const HEADER: usize = 4;

/// Default [`FrameReader::set_hold_limit`]: 4 of the default pool's 64 KiB buffers.
const DEFAULT_HOLD_LIMIT: usize = 256 * 1024;

impl<S: AsConnection> FrameReader<S> {
    /// A reader with nothing buffered.
    pub fn new(stream: S) -> Self {
        FrameReader {
            stream,
            buf: BytesChain::new(),
            eof: false,
            hold_limit: DEFAULT_HOLD_LIMIT,
            copied: 0,
            last_copied: false,
            stats: CopyStats::default(),
            holder: None,
        }
    }

    /// What has arrived and not been consumed.
    pub fn buffered(&self) -> &BytesChain {
        &self.buf
    }

    /// Receives until at least `n` bytes are buffered: `Ok(true)` then, `Ok(false)` if
    /// the peer closed first (what did arrive stays buffered).
    ///
    /// Past the [hold limit](Self::set_hold_limit), or once the pool ran low while
    /// waiting, the request is assembled in one heap buffer and the receive buffers go
    /// back to the pool at once.
    pub async fn fill(&mut self, n: usize) -> io::Result<bool> {
        poll_fn(|cx| self.poll_fill(cx, n)).await
    }

    fn poll_fill(&mut self, cx: &mut Context<'_>, n: usize) -> Poll<io::Result<bool>> {
        while self.buf.len() < n {
            if self.eof {
                self.holder = None;
                return Poll::Ready(Ok(false));
            }
            match self.stream.connection().poll_recv(cx) {
                Poll::Pending => {
                    self.before_wait(cx.waker(), n);
                    return Poll::Pending;
                }
                Poll::Ready(Err(e)) => {
                    self.holder = None;
                    return Poll::Ready(Err(e));
                }
                Poll::Ready(Ok(None)) => self.eof = true,
                Poll::Ready(Ok(Some(rx))) => self.take_in(rx, n),
            }
        }
        self.holder = None;
        Poll::Ready(Ok(true))
    }

    /// Adds a received buffer to the request for `n` bytes: as a view, unless all of
    /// the request so far is a copy or it would pass the hold limit without
    /// completing. A copy takes only the bytes up to `n`; the rest of the buffer (the
    /// start of what follows) stays a view.
    fn take_in(&mut self, rx: RxBuf, n: usize) {
        let held = self.buf.len() + rx.len();
        // Everything buffered is already our copy: growing it is cheaper than holding.
        let copying = self.copied > 0 && self.copied == self.buf.len();
        if !copying && (held >= n || held <= self.hold_limit) {
            self.buf.push(rx.into_bytes());
            return;
        }
        let mut rest = rx.into_bytes();
        let head = rest.split_to(n.saturating_sub(self.buf.len()).min(rest.len()));
        self.copy_out(&head, n);
        self.buf.push(rest);
    }

    /// About to wait for more of a request for `n` bytes: with receive buffers held,
    /// copies them out if the pool is low, else asks the worker to wake `waker` when
    /// it runs low.
    fn before_wait(&mut self, waker: &Waker, n: usize) {
        if self.copied == self.buf.len() {
            // Nothing but our own heap copy (or nothing at all) is held.
            self.holder = None;
            return;
        }
        if pressure::current().is_some_and(Pressure::is_low) {
            self.copy_out(&[], n);
            self.stats.pressure_spills += 1;
            self.holder = None;
            return;
        }
        if self.holder.is_none() {
            self.holder = HolderSlot::new();
        }
        if let Some(holder) = &self.holder {
            holder.wait(waker);
        }
    }

    /// Replaces everything buffered by one heap buffer holding it followed by `extra`,
    /// so no receive buffer stays held. Grows the reader's earlier copy in place when
    /// it can; a new one doubles up to the request `n` (never sized by an unchecked
    /// length).
    fn copy_out(&mut self, extra: &[u8], n: usize) {
        let held = self.buf.len() + extra.len();
        let old = std::mem::take(&mut self.buf);
        let own = self.copied == old.len() && old.segments().len() == 1;
        let mut heap = if own {
            match old.into_contiguous().try_into_mut() {
                Ok(m) => m,
                Err(shared) => self.fresh_copy(&BytesChain::from(shared), held, n),
            }
        } else {
            self.fresh_copy(&old, held, n)
        };
        heap.extend_from_slice(extra);
        self.stats.bytes += extra.len() as u64;
        self.buf = BytesChain::from(heap.freeze());
        self.copied = held;
    }

    /// A new heap buffer holding `old`, with room for `held` bytes (doubling up to the
    /// request `n`).
    fn fresh_copy(&mut self, old: &BytesChain, held: usize, n: usize) -> BytesMut {
        let mut m = BytesMut::with_capacity(held.saturating_mul(2).min(n).max(held));
        for s in old.segments() {
            m.extend_from_slice(s);
        }
        self.stats.bytes += old.len() as u64;
        m
    }

    /// Most bytes of pool buffers held to assemble one request before the reader
    /// switches to copying (default 256 KiB). Each held buffer keeps a receive-pool
    /// chunk busy for every connection of the worker, and a request larger than the
    /// whole pool could never complete without copying; below the limit, requests
    /// are handed out as chains of the received buffers themselves. `usize::MAX`
    /// never copies for size (then size the pool for the largest request); the reader
    /// still copies what it holds when the pool runs low while it waits.
    pub fn set_hold_limit(&mut self, bytes: usize) {
        self.hold_limit = bytes;
    }

    /// The current [hold limit](Self::set_hold_limit).
    pub fn hold_limit(&self) -> usize {
        self.hold_limit
    }

    /// The next `n` bytes. `UnexpectedEof`, saying how many of the `n` arrived, when the
    /// peer closes first (those bytes stay buffered).
    pub async fn read_exact(&mut self, n: usize) -> io::Result<BytesChain> {
        if !self.fill(n).await? {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "connection closed after {} of {n} requested bytes",
                    self.buf.len()
                ),
            ));
        }
        Ok(self.consume(n))
    }

    /// The next frame: a 4-byte big-endian length, then that many bytes (the chain
    /// returned holds the body only).
    ///
    /// - `Ok(None)`: the peer closed cleanly at a frame boundary.
    /// - `UnexpectedEof`: it closed inside a header or a body (the message says where).
    /// - `InvalidData`: the length exceeds `max`. This is decided from the header alone,
    ///   before waiting for (or holding) any of the body, and the header stays
    ///   buffered; the stream is not usable for frames after it.
    pub async fn read_frame(&mut self, max: usize) -> io::Result<Option<BytesChain>> {
        if !self.fill(HEADER).await? {
            if self.buf.is_empty() {
                return Ok(None);
            }
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "connection closed inside a frame header ({} of {HEADER} bytes)",
                    self.buf.len()
                ),
            ));
        }
        let mut header = [0u8; HEADER];
        self.buf.copy_prefix(&mut header);
        let len = u32::from_be_bytes(header) as usize;
        if len > max {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("frame length {len} exceeds the limit of {max} bytes"),
            ));
        }
        let total = HEADER + len;
        if !self.fill(total).await? {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "connection closed inside a frame ({} of {len} body bytes)",
                    self.buf.len() - HEADER
                ),
            ));
        }
        // Cannot panic: at least `total` bytes are buffered.
        self.buf.advance(HEADER);
        self.copied = self.copied.saturating_sub(HEADER);
        Ok(Some(self.consume(len)))
    }

    /// Takes up to `n` already-buffered bytes, without receiving: fewer when fewer are
    /// buffered (check the chain's `len`).
    pub fn consume(&mut self, n: usize) -> BytesChain {
        let n = n.min(self.buf.len());
        self.last_copied = n > 0 && self.copied > 0;
        if self.last_copied {
            self.stats.frames += 1;
        }
        self.copied = self.copied.saturating_sub(n);
        self.buf.split_to(n).unwrap_or_default()
    }

    /// Whether the bytes the last [`read_frame`](Self::read_frame),
    /// [`read_exact`](Self::read_exact) or [`consume`](Self::consume) handed out
    /// include bytes the reader copied (past the hold limit, or because the pool ran
    /// low), rather than only views of receive buffers.
    pub fn last_copied(&self) -> bool {
        self.last_copied
    }

    /// What this reader has copied so far.
    pub fn copy_stats(&self) -> CopyStats {
        self.stats
    }

    /// The stream as it is held, e.g. to send on it.
    pub fn get_ref(&self) -> &S {
        &self.stream
    }

    /// The stream and whatever was buffered but not consumed.
    pub fn into_inner(self) -> (S, BytesChain) {
        (self.stream, self.buf)
    }
}
