//! Frames out of a TCP stream: headers assembled across receive buffers, payloads
//! handed out as zero-copy slices of the worker pool's buffers.

use super::wire::{Header, HDR};
use bytes::Bytes;
use std::rc::Rc;
use zerorx::net::{self, TcpStream};

/// Reads frames from one connection: the runtime's [`net::FrameReader`] (which lets go
/// of pool buffers when the worker runs low) with the fabric's header and chunking.
pub(super) struct FrameReader {
    inner: net::FrameReader<Rc<TcpStream>>,
}

impl FrameReader {
    pub(super) fn new(stream: Rc<TcpStream>) -> FrameReader {
        FrameReader {
            inner: net::FrameReader::new(stream),
        }
    }

    /// Waits for `n` buffered bytes; `Ok(false)` if the peer closed first.
    async fn fill(&mut self, n: usize) -> Result<bool, String> {
        (self.inner.fill(n).await).map_err(|e| format!("receive failed: {e}"))
    }

    /// The next header; `None` when the peer closed between frames.
    pub(super) async fn header(&mut self) -> Result<Option<Header>, String> {
        if !self.fill(HDR).await? {
            return if self.inner.buffered().is_empty() {
                Ok(None)
            } else {
                Err("peer closed the connection inside a frame header".into())
            };
        }
        let mut raw = [0u8; HDR];
        self.inner.consume(HDR).copy_prefix(&mut raw);
        Header::decode(&raw).map(Some)
    }

    /// Up to `max` (≥ 1) payload bytes from one receive buffer, without copying.
    pub(super) async fn chunk(&mut self, max: usize) -> Result<Bytes, String> {
        if !self.fill(1).await? {
            return Err("peer closed the connection inside a frame".into());
        }
        let first = self
            .inner
            .buffered()
            .segments()
            .next()
            .map_or(0, Bytes::len);
        Ok(self.inner.consume(max.min(first)).into_contiguous())
    }

    /// Reads and drops `len` payload bytes.
    pub(super) async fn skip(&mut self, mut len: u64) -> Result<(), String> {
        while len > 0 {
            let c = self.chunk(len.min(usize::MAX as u64) as usize).await?;
            len -= c.len() as u64;
        }
        Ok(())
    }
}
