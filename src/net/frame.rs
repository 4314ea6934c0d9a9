//! [`FrameReader`]: byte ranges and length-prefixed frames cut out of the received
//! buffers themselves, as [`BytesChain`]s, without copying.

use super::{BytesChain, TcpStream};
use bytes::{Buf, BytesMut};
use std::io;

/// Reads from a [`TcpStream`] and hands out byte ranges as chains of the received
/// buffers (each `RxBuf` becomes a segment via `into_bytes()`, no copy).
///
/// `S` is how the stream is held: `TcpStream`, `&TcpStream` or `Rc<TcpStream>` (to
/// send from other tasks while this one reads).
///
/// # Memory
/// A received buffer held in a chain keeps its receive-pool chunk busy until the last
/// view of it drops; when the pool runs out, receives on that worker wait. The reader
/// itself never holds more than what the caller asked for plus the tail of one
/// buffer (it stops receiving as soon as the request is covered), and while
/// assembling one request it holds at most its [hold limit](Self::set_hold_limit) of
/// pool memory plus one buffer before it copies. Callers that keep data for long
/// should copy it out (`Bytes::copy_from_slice`) and drop the chain.
///
/// # Cancellation
/// Every method is cancel-safe: received buffers are appended to
/// [`buffered`](Self::buffered) as they arrive and bytes are only taken out once a
/// request is complete, so dropping a pending `fill`/`read_exact`/`read_frame` and
/// calling again loses nothing.
pub struct FrameReader<S: AsRef<TcpStream>> {
    stream: S,
    buf: BytesChain,
    eof: bool,
    hold_limit: usize,
    /// `buf` is exactly one segment: a heap copy made by `spill`.
    spilled: bool,
}

/// Length of the big-endian frame length prefix.
const HEADER: usize = 4;

/// Default [`FrameReader::set_hold_limit`]: 4 of the default pool's 64 KiB buffers.
const DEFAULT_HOLD_LIMIT: usize = 256 * 1024;

impl<S: AsRef<TcpStream>> FrameReader<S> {
    /// A reader with nothing buffered.
    pub fn new(stream: S) -> Self {
        FrameReader {
            stream,
            buf: BytesChain::new(),
            eof: false,
            hold_limit: DEFAULT_HOLD_LIMIT,
            spilled: false,
        }
    }

    /// What has arrived and not been consumed.
    pub fn buffered(&self) -> &BytesChain {
        &self.buf
    }

    /// Receives until at least `n` bytes are buffered: `Ok(true)` then, `Ok(false)` if
    /// the peer closed first (what did arrive stays buffered).
    ///
    /// Past the [hold limit](Self::set_hold_limit), buffers that do not complete the
    /// request are copied into one heap buffer and returned to the pool at once.
    pub async fn fill(&mut self, n: usize) -> io::Result<bool> {
        while self.buf.len() < n {
            if self.eof {
                return Ok(false);
            }
            match self.stream.as_ref().recv().await? {
                Some(rx) => {
                    let held = self.buf.len() + rx.len();
                    if held < n && held > self.hold_limit {
                        self.spill(&rx, n);
                    } else {
                        self.buf.push(rx.into_bytes());
                    }
                }
                None => self.eof = true,
            }
        }
        Ok(true)
    }

    /// Appends `rx` to the heap copy of everything buffered (making that copy first,
    /// unless the buffer already is one), so no pool chunk stays held. The heap buffer
    /// grows by doubling up to the request `n` (never sized by an unchecked length).
    fn spill(&mut self, rx: &[u8], n: usize) {
        let held = self.buf.len() + rx.len();
        let fresh = |buf: &BytesChain| {
            let mut m = BytesMut::with_capacity(held.saturating_mul(2).min(n));
            for s in buf.segments() {
                m.extend_from_slice(s);
            }
            m
        };
        let mut heap = if self.spilled {
            // The only segment is our earlier heap copy: reuse its allocation.
            match std::mem::take(&mut self.buf)
                .into_contiguous()
                .try_into_mut()
            {
                Ok(m) => m,
                Err(shared) => fresh(&BytesChain::from(shared)),
            }
        } else {
            fresh(&std::mem::take(&mut self.buf))
        };
        heap.extend_from_slice(rx);
        self.buf = BytesChain::from(heap.freeze());
        self.spilled = true;
    }

    /// Most bytes of pool buffers held to assemble one request before the reader
    /// switches to copying (default 256 KiB). Each held buffer keeps a receive-pool
    /// chunk busy for every connection of the worker, and a request larger than the
    /// whole pool could never complete without copying; below the limit, requests
    /// are handed out as chains of the received buffers themselves. `usize::MAX`
    /// never copies (then size the pool for the largest request).
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
        Ok(Some(self.consume(len)))
    }

    /// Takes up to `n` already-buffered bytes, without receiving: fewer when fewer are
    /// buffered (check the chain's `len`).
    pub fn consume(&mut self, n: usize) -> BytesChain {
        let n = n.min(self.buf.len());
        // Whatever is left after a cut is no longer our whole heap copy.
        self.spilled = false;
        self.buf.split_to(n).unwrap_or_default()
    }

    /// The stream, e.g. to send on it.
    pub fn get_ref(&self) -> &TcpStream {
        self.stream.as_ref()
    }

    /// The stream and whatever was buffered but not consumed.
    pub fn into_inner(self) -> (S, BytesChain) {
        (self.stream, self.buf)
    }
}

impl AsRef<TcpStream> for TcpStream {
    fn as_ref(&self) -> &TcpStream {
        self
    }
}
