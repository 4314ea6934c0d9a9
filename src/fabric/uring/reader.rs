//! Frames out of a TCP stream: headers assembled across receive buffers, payloads
//! handed out as zero-copy slices of the worker pool's buffers.

use super::wire::{Header, HDR};
use crate::net::TcpStream;
use bytes::{Buf, Bytes};
use std::rc::Rc;

/// Reads frames from one connection.
pub(super) struct FrameReader {
    stream: Rc<TcpStream>,
    cur: Bytes,
}

impl FrameReader {
    pub(super) fn new(stream: Rc<TcpStream>) -> FrameReader {
        FrameReader {
            stream,
            cur: Bytes::new(),
        }
    }

    /// Next receive buffer into `cur`; `Ok(false)` at end of stream.
    async fn fill(&mut self) -> Result<bool, String> {
        match self.stream.recv().await {
            Ok(Some(buf)) => {
                self.cur = buf.into_bytes();
                Ok(true)
            }
            Ok(None) => Ok(false),
            Err(e) => Err(format!("receive failed: {e}")),
        }
    }

    /// The next header; `None` when the peer closed between frames.
    pub(super) async fn header(&mut self) -> Result<Option<Header>, String> {
        let mut raw = [0u8; HDR];
        let mut have = 0;
        while have < HDR {
            if self.cur.is_empty() && !self.fill().await? {
                return if have == 0 {
                    Ok(None)
                } else {
                    Err("peer closed the connection inside a frame header".into())
                };
            }
            let n = (HDR - have).min(self.cur.len());
            raw[have..have + n].copy_from_slice(&self.cur[..n]);
            self.cur.advance(n);
            have += n;
        }
        Header::decode(&raw).map(Some)
    }

    /// Up to `max` (≥ 1) payload bytes, without copying.
    pub(super) async fn chunk(&mut self, max: usize) -> Result<Bytes, String> {
        if self.cur.is_empty() && !self.fill().await? {
            return Err("peer closed the connection inside a frame".into());
        }
        let n = max.min(self.cur.len());
        Ok(self.cur.split_to(n))
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
