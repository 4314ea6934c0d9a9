//! [`OutBuf`]: where messages are encoded. Small values are copied into a per-thread
//! arena; large `Bytes` values are referenced as their own segment, so echoing a big
//! received payload sends it from the receive buffer without a copy. The result is a
//! list of segments for one vectored send.

use super::error::EncodeError;
use super::protocol::Protocol;
use super::theader::{self, HeaderInfo};
use super::transport::Transport;
use bytes::{BufMut, Bytes, BytesMut};
use std::cell::Cell;

/// `Bytes` values at least this long are sent by reference instead of copied.
pub const SHARE_MIN: usize = 4096;

/// Size of a new arena block.
const ARENA_CHUNK: usize = 64 * 1024;

/// A message starts in the current block while at least this much of it is free;
/// otherwise a new block is taken (or the old one reclaimed, if every chunk split
/// off it was dropped).
const ARENA_MIN_FREE: usize = 4096;

thread_local! {
    /// The thread's output arena. Encoded messages are split off its front; once every
    /// split-off chunk has been sent and dropped, `reserve` reclaims the whole
    /// allocation, so steady-state encoding allocates nothing.
    static ARENA: Cell<BytesMut> = Cell::new(BytesMut::new());
}

/// An encoded message in progress.
#[derive(Debug)]
pub struct OutBuf {
    /// The first chunk, kept mutable until [`finish`](Self::finish) so the frame length
    /// can be patched in after large segments were split off.
    head: Option<BytesMut>,
    cur: BytesMut,
    segs: Vec<Bytes>,
    /// Bytes in `segs` (not counting `head` or `cur`).
    segs_len: usize,
    framing: Framing,
    /// The sequence id a THeader prefix carries.
    seqid: i32,
    error: Option<EncodeError>,
}

/// An encoded message's segments. Most messages are one segment: keeping it out of
/// a `Vec` saves an allocation per reply on the server's hot path.
#[derive(Debug)]
pub(crate) enum Segments {
    /// One contiguous segment.
    One(Bytes),
    /// Several (large values referenced, not copied).
    Many(Vec<Bytes>),
}

impl Segments {
    /// Appends the segments to `out`.
    pub(crate) fn append_to(self, out: &mut Vec<Bytes>) {
        match self {
            Segments::One(b) => out.push(b),
            Segments::Many(mut v) => out.append(&mut v),
        }
    }

    /// The segments as a `Vec` (the public encoding functions' form).
    pub(crate) fn into_vec(self) -> Vec<Bytes> {
        match self {
            Segments::One(b) => vec![b],
            Segments::Many(v) => v,
        }
    }
}

/// How an encoded message is delimited on the wire: the prefix
/// [`finish`](OutBuf::finish) fills in once the length is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// Nothing (unframed).
    None,
    /// A 4-byte length.
    Length,
    /// A THeader frame, inside a plain frame when `outer`.
    Header {
        /// The header's protocol and flags.
        info: HeaderInfo,
        /// Also a 4-byte length before it.
        outer: bool,
    },
}

impl Framing {
    /// The prefix's size.
    fn len(self) -> usize {
        match self {
            Framing::None => 0,
            Framing::Length => FRAME_HEADER,
            Framing::Header { outer, .. } => {
                theader::PREFIX_LEN + if outer { FRAME_HEADER } else { 0 }
            }
        }
    }

    /// How messages of `transport` are framed; THeader replies carry `header`
    /// (the request's), requests `protocol` with no flags.
    pub(crate) fn of(
        transport: Transport,
        protocol: Protocol,
        header: Option<HeaderInfo>,
    ) -> Framing {
        let info = header.unwrap_or(HeaderInfo { protocol, flags: 0 });
        match transport {
            Transport::Unframed => Framing::None,
            Transport::Framed => Framing::Length,
            Transport::Header => Framing::Header { info, outer: false },
            Transport::FramedHeader => Framing::Header { info, outer: true },
        }
    }
}

const FRAME_HEADER: usize = 4;

impl OutBuf {
    /// A buffer for one unframed message.
    pub fn new() -> OutBuf {
        let mut cur = ARENA.with(|a| a.take());
        if cur.capacity() < ARENA_MIN_FREE {
            cur.reserve(ARENA_CHUNK);
        }
        OutBuf {
            head: None,
            cur,
            segs: Vec::new(),
            segs_len: 0,
            framing: Framing::None,
            seqid: 0,
            error: None,
        }
    }

    /// A buffer for one framed message: a 4-byte length prefix is written by
    /// [`finish`](Self::finish).
    pub fn framed() -> OutBuf {
        OutBuf::with_framing(Framing::Length, 0)
    }

    /// A buffer for one message delimited by `framing` (`seqid` goes into a THeader).
    pub(crate) fn with_framing(framing: Framing, seqid: i32) -> OutBuf {
        let mut out = OutBuf::new();
        out.framing = framing;
        out.seqid = seqid;
        out.cur.put_bytes(0, framing.len());
        out
    }

    /// Bytes written so far (including a frame prefix).
    pub fn len(&self) -> usize {
        self.head.as_ref().map_or(0, BytesMut::len) + self.segs_len + self.cur.len()
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends one byte.
    pub fn put_u8(&mut self, v: u8) {
        self.put_array([v]);
    }

    /// Appends a few bytes whose count is known when compiling (a field header, an
    /// integer): written in place when the block has room, a store instead of a
    /// `memcpy` call (counted: the 8 small writes of a 64 B RPC reply cost ~320
    /// instructions through `BytesMut::put_slice`).
    #[inline]
    pub(crate) fn put_array<const N: usize>(&mut self, v: [u8; N]) {
        let spare = self.cur.spare_capacity_mut();
        if spare.len() < N {
            self.cur.put_slice(&v);
            return;
        }
        // SAFETY: `spare` has room for `N` bytes past the buffer's length; they are
        // written before the length is moved over them.
        unsafe {
            std::ptr::copy_nonoverlapping(v.as_ptr(), spare.as_mut_ptr().cast::<u8>(), N);
            self.cur.set_len(self.cur.len() + N);
        }
    }

    /// Appends a slice, copied.
    pub fn put_slice(&mut self, v: &[u8]) {
        self.cur.put_slice(v);
    }

    /// Appends `v`: by reference when it is at least [`SHARE_MIN`] bytes, else copied.
    pub fn put_bytes(&mut self, v: &Bytes) {
        if v.len() < SHARE_MIN {
            self.cur.put_slice(v);
            return;
        }
        let chunk = self.cur.split();
        if self.head.is_none() {
            self.head = Some(chunk);
        } else if !chunk.is_empty() {
            self.segs_len += chunk.len();
            self.segs.push(chunk.freeze());
        }
        self.segs_len += v.len();
        self.segs.push(v.clone());
    }

    /// Records an error; [`finish`](Self::finish) returns the first one recorded.
    pub fn fail(&mut self, e: EncodeError) {
        self.error.get_or_insert(e);
    }

    /// Checks a length fits the protocols' `i32`, recording an error if not.
    pub(crate) fn check_len(&mut self, len: usize) -> i32 {
        match i32::try_from(len) {
            Ok(n) => n,
            Err(_) => {
                self.fail(EncodeError::TooLong(len));
                0
            }
        }
    }

    /// The encoded message as segments for one vectored send (one segment unless large
    /// `Bytes` values were referenced). A framed message gets its length prefix here;
    /// it must not exceed `max_frame` bytes (prefix excluded).
    pub fn finish(self, max_frame: usize) -> Result<Vec<Bytes>, EncodeError> {
        self.finish_segments(max_frame).map(Segments::into_vec)
    }

    /// [`finish`](Self::finish) without a `Vec` for the common single segment.
    pub(crate) fn finish_segments(mut self, max_frame: usize) -> Result<Segments, EncodeError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let total = self.len();
        let body = total - self.framing.len();
        if body > max_frame {
            return Err(EncodeError::FrameTooLarge {
                size: body,
                limit: max_frame,
            });
        }
        let tail = self.cur.split();
        let mut head = match self.head.take() {
            Some(h) => {
                if !tail.is_empty() {
                    self.segs.push(tail.freeze());
                }
                h
            }
            None => tail,
        };
        // `body <= max_frame`, and a frame limit above u32::MAX is not meaningful.
        let len = u32::try_from(body).map_err(|_| EncodeError::TooLong(body))?;
        match self.framing {
            Framing::None => {}
            Framing::Length => head[..FRAME_HEADER].copy_from_slice(&len.to_be_bytes()),
            Framing::Header { info, outer } => {
                let at = if outer { FRAME_HEADER } else { 0 };
                let prefix = theader::prefix(len, info, self.seqid);
                head[at..at + theader::PREFIX_LEN].copy_from_slice(&prefix);
                if outer {
                    let whole = len + theader::PREFIX_LEN as u32;
                    head[..FRAME_HEADER].copy_from_slice(&whole.to_be_bytes());
                }
            }
        }
        if self.segs.is_empty() {
            return Ok(Segments::One(head.freeze()));
        }
        let mut out = Vec::with_capacity(1 + self.segs.len());
        out.push(head.freeze());
        out.append(&mut self.segs);
        Ok(Segments::Many(out))
    }

    /// The encoded bytes as one contiguous [`Bytes`] (copies when large values were
    /// referenced); for tests and tools.
    pub fn finish_contiguous(self, max_frame: usize) -> Result<Bytes, EncodeError> {
        let segs = self.finish(max_frame)?;
        if segs.len() == 1 {
            return Ok(segs.into_iter().next().unwrap_or_default());
        }
        let mut all = BytesMut::with_capacity(segs.iter().map(Bytes::len).sum());
        for s in &segs {
            all.put_slice(s);
        }
        Ok(all.freeze())
    }
}

impl Default for OutBuf {
    fn default() -> Self {
        OutBuf::new()
    }
}

impl Drop for OutBuf {
    fn drop(&mut self) {
        // Hand the unused capacity back to the thread's arena, without the bytes of a
        // message that was abandoned (an error in `finish`, or never finished).
        let mut rest = std::mem::take(&mut self.cur);
        rest.clear();
        let _ = ARENA.try_with(|a| a.set(rest));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framed_prefix_counts_every_segment() {
        let mut o = OutBuf::framed();
        o.put_slice(b"abc");
        let big = Bytes::from(vec![7u8; SHARE_MIN]);
        o.put_bytes(&big);
        o.put_u8(9);
        let segs = o.finish(1 << 20).expect("fits");
        assert_eq!(segs.len(), 3, "head, shared payload, tail");
        assert_eq!(
            segs[1].as_ptr(),
            big.as_ptr(),
            "large value referenced, not copied"
        );
        let all: Vec<u8> = segs.iter().flat_map(|s| s.iter().copied()).collect();
        let len = u32::from_be_bytes([all[0], all[1], all[2], all[3]]) as usize;
        assert_eq!(len, all.len() - 4);
        assert_eq!(&all[4..7], b"abc");
        assert_eq!(*all.last().expect("tail"), 9);
    }

    #[test]
    fn fixed_size_writes_land_in_order_in_room_and_across_a_full_block() {
        let mut o = OutBuf::new();
        o.put_array([1, 2]);
        o.put_u8(3);
        // Leave two bytes of room: the next 4-byte write takes the slow path.
        let room = o.cur.capacity() - o.cur.len();
        o.put_slice(&vec![0; room - 2]);
        o.put_array(0x0405_0607_u32.to_be_bytes());
        o.put_u8(8);
        let all = o.finish_contiguous(usize::MAX).expect("fits");
        assert_eq!(&all[..3], [1, 2, 3]);
        assert_eq!(&all[all.len() - 5..], [4, 5, 6, 7, 8]);
        assert_eq!(all.len(), 3 + room - 2 + 5);
    }

    #[test]
    fn small_values_are_copied_into_one_segment() {
        let mut o = OutBuf::new();
        o.put_bytes(&Bytes::from_static(b"small"));
        assert_eq!(
            o.finish(100).expect("fits"),
            vec![Bytes::from_static(b"small")]
        );
    }

    #[test]
    fn segments_are_one_without_a_vec_and_many_in_order() {
        let mut o = OutBuf::framed();
        o.put_slice(b"abc");
        let Segments::One(one) = o.finish_segments(100).expect("fits") else {
            panic!("a small message is one segment");
        };
        assert_eq!(&one[..], b"\0\0\0\x03abc");
        let big = Bytes::from(vec![7u8; SHARE_MIN]);
        let mut o = OutBuf::new();
        o.put_slice(b"head");
        o.put_bytes(&big);
        o.put_slice(b"tail");
        let Segments::Many(v) = o.finish_segments(usize::MAX).expect("fits") else {
            panic!("a referenced value makes several segments");
        };
        assert_eq!(v.len(), 3);
        let mut queue = vec![Bytes::from_static(b"queued")];
        Segments::Many(v).append_to(&mut queue);
        Segments::One(Bytes::from_static(b"last")).append_to(&mut queue);
        let lens: Vec<usize> = queue.iter().map(Bytes::len).collect();
        assert_eq!(lens, [6, 4, SHARE_MIN, 4, 4]);
        assert_eq!(
            queue[2].as_ptr(),
            big.as_ptr(),
            "the big value is referenced"
        );
    }

    #[test]
    fn over_limit_and_recorded_errors_are_reported() {
        let mut o = OutBuf::framed();
        o.put_slice(&[0; 10]);
        assert_eq!(
            o.finish(9),
            Err(EncodeError::FrameTooLarge { size: 10, limit: 9 })
        );
        let mut o = OutBuf::new();
        assert_eq!(o.check_len(usize::MAX), 0);
        assert_eq!(o.finish(100), Err(EncodeError::TooLong(usize::MAX)));
    }

    #[test]
    fn an_abandoned_message_leaves_nothing_in_the_arena() {
        let mut o = OutBuf::framed();
        o.put_slice(&[7; 100]);
        assert!(o.finish(10).is_err());
        let mut o = OutBuf::new();
        o.put_slice(b"next");
        drop(OutBuf::new());
        assert_eq!(
            o.finish(10).expect("fits"),
            vec![Bytes::from_static(b"next")]
        );
        let mut o = OutBuf::new();
        o.put_slice(b"clean");
        assert_eq!(
            o.finish(10).expect("fits"),
            vec![Bytes::from_static(b"clean")]
        );
    }

    #[test]
    fn messages_share_an_arena_block_which_is_reclaimed_once_free() {
        let encode = |len: usize| {
            let mut o = OutBuf::new();
            o.put_slice(&vec![1u8; len]);
            o.finish(usize::MAX).expect("fits").remove(0)
        };
        let first = encode(3);
        let second = encode(3);
        // While the first is alive (in flight), the next one goes right after it.
        assert_eq!(second.as_ptr(), first.as_ptr().wrapping_add(3));
        let base = first.as_ptr();
        drop((first, second));
        // Use up the block; with every chunk dropped, it is reclaimed, not replaced.
        let filler = encode(ARENA_CHUNK - 6 - ARENA_MIN_FREE + 1);
        drop(filler);
        assert_eq!(encode(10).as_ptr(), base, "the arena's block was reclaimed");
    }
}
