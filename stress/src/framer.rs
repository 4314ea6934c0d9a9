//! Splits a byte stream of received chunks into [`Frame`]s.
//!
//! A frame that lies inside one chunk is handed out as a slice of it (no copy). The
//! unfinished tail of a chunk is copied into an owned buffer at once, so the receive
//! pool's buffers are never held while waiting for more bytes: a peer that sends half
//! a frame and stops cannot pin pool memory. That buffer grows only as bytes arrive,
//! never to a length announced by the peer.

use crate::wire::{Frame, FrameError, Header, HEADER_LEN};
use bytes::{Buf, Bytes, BytesMut};

/// The incremental frame splitter of one connection.
#[derive(Debug)]
pub struct Framer {
    max_len: u32,
    cur: Bytes,
    carry: Option<Carry>,
    assembled: u64,
}

/// A frame being copied together from several chunks.
#[derive(Debug)]
struct Carry {
    buf: BytesMut,
    header: Option<Header>,
}

impl Carry {
    fn target(&self) -> usize {
        self.header
            .map_or(HEADER_LEN, |h| HEADER_LEN + h.len as usize)
    }
}

impl Framer {
    /// A framer accepting payloads of at most `max_len` bytes.
    pub fn new(max_len: u32) -> Framer {
        Framer {
            max_len,
            cur: Bytes::new(),
            carry: None,
            assembled: 0,
        }
    }

    /// Adds a received chunk. Call [`next_frame`](Self::next_frame) until it returns
    /// `None` before pushing the next one.
    pub fn push(&mut self, chunk: Bytes) {
        debug_assert!(
            self.cur.is_empty(),
            "push before the last chunk was drained"
        );
        self.cur = chunk;
    }

    /// The next complete frame, `None` when more bytes are needed, or the error that
    /// makes the rest of the stream unreadable.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, FrameError> {
        if let Some(carry) = self.carry.as_mut() {
            loop {
                let need = carry.target() - carry.buf.len();
                let take = need.min(self.cur.len());
                carry.buf.extend_from_slice(&self.cur[..take]);
                self.cur.advance(take);
                if self.cur.is_empty() {
                    // An advanced-to-the-end `Bytes` still owns its chunk: a framer
                    // waiting for the rest of a frame would pin a pool buffer (with
                    // incremental buffers, a whole 64 KiB one per connection).
                    self.cur = Bytes::new();
                }
                if carry.buf.len() < carry.target() {
                    return Ok(None);
                }
                if carry.header.is_none() {
                    let hdr = header_bytes(&carry.buf);
                    let h = Header::decode(&hdr, self.max_len)?;
                    carry.header = Some(h);
                    continue;
                }
                let Some(carry) = self.carry.take() else {
                    return Ok(None);
                };
                let Some(header) = carry.header else {
                    return Ok(None);
                };
                self.assembled += 1;
                return Ok(Some(Frame {
                    header,
                    bytes: carry.buf.freeze(),
                    assembled: true,
                }));
            }
        }
        if self.cur.is_empty() {
            return Ok(None);
        }
        if self.cur.len() < HEADER_LEN {
            self.start_carry(None);
            return Ok(None);
        }
        let header = Header::decode(&header_bytes(&self.cur), self.max_len)?;
        let total = HEADER_LEN + header.len as usize;
        if self.cur.len() >= total {
            return Ok(Some(Frame {
                header,
                bytes: self.cur.split_to(total),
                assembled: false,
            }));
        }
        self.start_carry(Some(header));
        Ok(None)
    }

    fn start_carry(&mut self, header: Option<Header>) {
        let mut buf = BytesMut::with_capacity(self.cur.len().max(HEADER_LEN));
        buf.extend_from_slice(&self.cur);
        self.cur = Bytes::new();
        self.carry = Some(Carry { buf, header });
    }

    /// Whether part of a frame has arrived and the rest has not.
    pub fn mid_frame(&self) -> bool {
        self.carry.is_some() || !self.cur.is_empty()
    }

    /// Frames that spanned chunks and were copied together.
    pub fn assembled(&self) -> u64 {
        self.assembled
    }
}

fn header_bytes(b: &[u8]) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h.copy_from_slice(&b[..HEADER_LEN]);
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{request, Kind, PayloadSource};

    fn stream_of(n: u64, size: usize) -> Vec<u8> {
        let src = PayloadSource::new(size, 3);
        let mut out = Vec::new();
        for id in 0..n {
            let p = src.payload(id, size);
            let (h, _) = request(Kind::Echo, 1, id, &p);
            out.extend_from_slice(&h);
            out.extend_from_slice(&p);
        }
        out
    }

    fn split(bytes: &[u8], chunk: usize, max: u32) -> Result<Vec<Frame>, FrameError> {
        let mut f = Framer::new(max);
        let mut frames = Vec::new();
        for c in bytes.chunks(chunk) {
            f.push(Bytes::copy_from_slice(c));
            while let Some(fr) = f.next_frame()? {
                frames.push(fr);
            }
        }
        assert!(!f.mid_frame());
        Ok(frames)
    }

    #[test]
    fn any_chunking_yields_the_same_verified_frames() {
        let bytes = stream_of(20, 100);
        for chunk in [1, 7, 31, 32, 33, 132, 500, bytes.len()] {
            let frames = split(&bytes, chunk, 1 << 20).expect("valid stream");
            assert_eq!(frames.len(), 20, "chunk {chunk}");
            for (i, fr) in frames.iter().enumerate() {
                assert_eq!(fr.header.id, i as u64);
                assert!(fr.crc_ok(), "chunk {chunk} frame {i}");
            }
        }
    }

    #[test]
    fn whole_frames_in_one_chunk_are_not_copied() {
        let bytes = stream_of(4, 64);
        let mut f = Framer::new(1 << 20);
        f.push(Bytes::from(bytes));
        let mut n = 0;
        while let Some(fr) = f.next_frame().expect("valid") {
            assert!(!fr.assembled);
            n += 1;
        }
        assert_eq!((n, f.assembled()), (4, 0));
    }

    #[test]
    fn oversized_is_refused_from_the_header_alone() {
        let bytes = stream_of(1, 1000);
        let mut f = Framer::new(999);
        f.push(Bytes::copy_from_slice(&bytes[..HEADER_LEN]));
        assert_eq!(
            f.next_frame().unwrap_err(),
            FrameError::Oversized {
                len: 1000,
                max: 999
            }
        );
    }

    /// A chunk that only continues a frame is copied and let go at once: the framer
    /// holds no received buffer while it waits for the rest.
    #[test]
    fn a_chunk_copied_into_an_unfinished_frame_is_released() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        struct Chunk(Vec<u8>, Arc<AtomicUsize>);
        impl AsRef<[u8]> for Chunk {
            fn as_ref(&self) -> &[u8] {
                &self.0
            }
        }
        impl Drop for Chunk {
            fn drop(&mut self) {
                self.1.fetch_add(1, Ordering::SeqCst);
            }
        }
        let bytes = stream_of(1, 1000);
        let released = Arc::new(AtomicUsize::new(0));
        let mut f = Framer::new(1 << 20);
        for (i, part) in [&bytes[..100], &bytes[100..600], &bytes[600..900]]
            .into_iter()
            .enumerate()
        {
            f.push(Bytes::from_owner(Chunk(part.to_vec(), released.clone())));
            assert!(f.next_frame().expect("ok").is_none());
            assert_eq!(released.load(Ordering::SeqCst), i + 1, "chunk {i} is held");
        }
        f.push(Bytes::from_owner(Chunk(
            bytes[900..].to_vec(),
            released.clone(),
        )));
        let frame = f.next_frame().expect("ok").expect("the whole frame");
        assert!(frame.crc_ok() && frame.assembled);
        assert_eq!(released.load(Ordering::SeqCst), 4);
    }

    #[test]
    fn a_partial_frame_is_reported_mid_frame() {
        let bytes = stream_of(1, 100);
        let mut f = Framer::new(1 << 20);
        f.push(Bytes::copy_from_slice(&bytes[..50]));
        assert!(f.next_frame().expect("ok").is_none());
        assert!(f.mid_frame());
    }
}
