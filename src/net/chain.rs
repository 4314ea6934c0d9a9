//! [`BytesChain`]: received bytes as an ordered list of shared segments, so a message
//! that arrived in several buffers is handed out without gluing them together.

use bytes::{Buf, Bytes};
use std::collections::VecDeque;
use std::fmt;
use std::io::IoSlice;

/// An ordered list of [`Bytes`] segments read from the socket; implements [`Buf`].
///
/// Splitting and consuming never copy payload bytes: segments are reference-counted
/// views, cut with [`Bytes::split_to`]. Only [`into_contiguous`](Self::into_contiguous)
/// (with more than one segment) and [`Buf::copy_to_bytes`] across a segment boundary
/// copy.
///
/// Segments that came from [`Connection::recv`](crate::net::Connection::recv) keep their
/// receive-pool chunk busy until the last view of it is dropped, so data kept for long
/// (caches, queues) should be copied out (`into_contiguous` on a one-segment chain does
/// not copy: use `Bytes::copy_from_slice` for that).
#[derive(Clone, Default)]
pub struct BytesChain {
    /// The first segment, inline: most frames lie in one receive buffer, and a chain
    /// of one segment then allocates nothing (a `VecDeque` of one cost a malloc and a
    /// free per request, measured in issue 22). Empty only when the chain is.
    first: Bytes,
    /// The segments after `first`, never holding an empty one, so `chunk()` is
    /// non-empty while bytes remain.
    rest: VecDeque<Bytes>,
    len: usize,
}

impl BytesChain {
    /// An empty chain.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a segment (empty segments are dropped).
    pub fn push(&mut self, b: Bytes) {
        if b.is_empty() {
            return;
        }
        self.len += b.len();
        if self.first.is_empty() {
            self.first = b;
        } else {
            self.rest.push_back(b);
        }
    }

    /// Drops the (emptied) first segment and moves the next one up.
    fn pop_first(&mut self) {
        self.first = self.rest.pop_front().unwrap_or_default();
    }

    /// Total bytes in all segments.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no bytes are held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The segments in order, none of them empty.
    pub fn segments(&self) -> ChainSegments<'_> {
        ChainSegments {
            first: (!self.first.is_empty()).then_some(&self.first),
            rest: self.rest.iter(),
        }
    }

    /// True with 0 or 1 segment: the bytes are one slice of memory.
    pub fn is_contiguous(&self) -> bool {
        self.rest.is_empty()
    }

    /// The bytes as one [`Bytes`]: no copy when contiguous (the segment itself, still
    /// pointing into the receive buffer); otherwise one copy into a buffer recycled per
    /// thread (it returns to the dropping thread's free list with the last view, so
    /// large frames do not fault fresh pages in every time).
    pub fn into_contiguous(self) -> Bytes {
        if self.rest.is_empty() {
            return self.first;
        }
        super::assembly::concat(self.segments(), self.len)
    }

    /// Takes the first `n` bytes as a new chain, without copying: whole segments move,
    /// the one straddling the cut is split into two views of the same memory.
    ///
    /// Returns `None` (and leaves the chain unchanged) when `n > len()`.
    pub fn split_to(&mut self, n: usize) -> Option<BytesChain> {
        if n > self.len {
            return None;
        }
        if n == self.len {
            return Some(std::mem::take(self));
        }
        let mut head = BytesChain::new();
        while head.len < n {
            let want = n - head.len;
            if self.first.len() <= want {
                let seg = std::mem::take(&mut self.first);
                self.pop_first();
                head.push(seg);
            } else {
                head.push(self.first.split_to(want));
            }
        }
        self.len -= head.len;
        Some(head)
    }

    /// Copies the first `min(out.len(), len())` bytes into `out` without consuming
    /// them and returns how many were copied (a peek, e.g. at a length prefix).
    pub fn copy_prefix(&self, out: &mut [u8]) -> usize {
        let mut done = 0;
        for s in self.segments() {
            if done == out.len() {
                break;
            }
            let n = s.len().min(out.len() - done);
            out[done..done + n].copy_from_slice(&s[..n]);
            done += n;
        }
        done
    }
}

/// The segments of a [`BytesChain`], in order.
pub struct ChainSegments<'a> {
    first: Option<&'a Bytes>,
    rest: std::collections::vec_deque::Iter<'a, Bytes>,
}

impl<'a> Iterator for ChainSegments<'a> {
    type Item = &'a Bytes;

    fn next(&mut self) -> Option<&'a Bytes> {
        self.first.take().or_else(|| self.rest.next())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::from(self.first.is_some()) + self.rest.len();
        (n, Some(n))
    }
}

impl ExactSizeIterator for ChainSegments<'_> {}

impl From<Bytes> for BytesChain {
    fn from(b: Bytes) -> Self {
        let mut c = BytesChain::new();
        c.push(b);
        c
    }
}

impl Buf for BytesChain {
    fn remaining(&self) -> usize {
        self.len
    }

    fn chunk(&self) -> &[u8] {
        &self.first
    }

    fn chunks_vectored<'a>(&'a self, dst: &mut [IoSlice<'a>]) -> usize {
        let mut n = 0;
        for (slot, seg) in dst.iter_mut().zip(self.segments()) {
            *slot = IoSlice::new(seg);
            n += 1;
        }
        n
    }

    /// # Panics
    /// When `cnt > remaining()`, as the [`Buf`] contract asks; use
    /// [`split_to`](BytesChain::split_to) for a checked cut.
    fn advance(&mut self, mut cnt: usize) {
        assert!(
            cnt <= self.len,
            "BytesChain::advance({cnt}) past the {} remaining bytes",
            self.len
        );
        self.len -= cnt;
        while cnt > 0 {
            if self.first.len() <= cnt {
                cnt -= self.first.len();
                self.pop_first();
            } else {
                self.first.advance(cnt);
                cnt = 0;
            }
        }
    }

    /// Zero-copy when the bytes lie in the first segment; one copy otherwise.
    ///
    /// # Panics
    /// When `len > remaining()`, as the [`Buf`] contract asks.
    fn copy_to_bytes(&mut self, len: usize) -> Bytes {
        assert!(
            len <= self.len,
            "BytesChain::copy_to_bytes({len}) past the {} remaining bytes",
            self.len
        );
        if self.first.len() >= len {
            let out = self.first.split_to(len);
            if self.first.is_empty() {
                self.pop_first();
            }
            self.len -= len;
            return out;
        }
        self.split_to(len)
            .map(BytesChain::into_contiguous)
            .unwrap_or_default()
    }
}

impl fmt::Debug for BytesChain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BytesChain")
            .field("len", &self.len)
            .field("segments", &self.segments().len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(parts: &[&[u8]]) -> BytesChain {
        let mut c = BytesChain::new();
        for p in parts {
            c.push(Bytes::copy_from_slice(p));
        }
        c
    }

    fn flat(c: &BytesChain) -> Vec<u8> {
        c.segments().flat_map(|s| s.iter().copied()).collect()
    }

    /// xorshift: reproducible pseudo-random cuts.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    #[test]
    fn push_skips_empty_segments() {
        let mut c = BytesChain::new();
        c.push(Bytes::new());
        assert!(c.is_empty() && c.is_contiguous());
        assert_eq!(c.segments().len(), 0);
        c.push(Bytes::from_static(b"ab"));
        c.push(Bytes::new());
        c.push(Bytes::from_static(b"c"));
        assert_eq!((c.len(), c.segments().len()), (3, 2));
        assert!(!c.is_contiguous());
    }

    #[test]
    fn split_at_every_position_keeps_order_and_memory() {
        let parts: [&[u8]; 4] = [b"abc", b"d", b"efgh", b"ij"];
        let whole: Vec<u8> = parts.concat();
        for n in 0..=whole.len() {
            let mut c = chain(&parts);
            let base: Vec<*const u8> = c.segments().map(|s| s.as_ptr()).collect();
            let head = c.split_to(n).expect("in range");
            assert_eq!(flat(&head), &whole[..n], "head at {n}");
            assert_eq!(flat(&c), &whole[n..], "tail at {n}");
            assert_eq!((head.len(), c.len()), (n, whole.len() - n));
            // No copy: the head's first segment starts where the first part did.
            if n > 0 {
                assert_eq!(head.segments().next().map(|s| s.as_ptr()), Some(base[0]));
            }
        }
    }

    #[test]
    fn split_past_the_end_is_none_and_changes_nothing() {
        let mut c = chain(&[b"abc", b"de"]);
        assert!(c.split_to(6).is_none());
        assert_eq!(flat(&c), b"abcde");
        assert_eq!(c.split_to(5).map(|h| h.len()), Some(5));
        assert!(c.is_empty());
        assert_eq!(c.split_to(0).map(|h| h.len()), Some(0));
        assert!(c.split_to(1).is_none());
    }

    #[test]
    fn into_contiguous_copies_only_when_needed() {
        let one = Bytes::from_static(b"hello");
        let ptr = one.as_ptr();
        assert_eq!(BytesChain::from(one).into_contiguous().as_ptr(), ptr);
        assert!(BytesChain::new().into_contiguous().is_empty());
        assert_eq!(
            &chain(&[b"he", b"ll", b"o"]).into_contiguous()[..],
            b"hello"
        );
    }

    #[test]
    fn copy_prefix_peeks() {
        let c = chain(&[b"ab", b"cd", b"e"]);
        let mut out = [0u8; 3];
        assert_eq!(c.copy_prefix(&mut out), 3);
        assert_eq!(&out, b"abc");
        let mut big = [0u8; 8];
        assert_eq!(c.copy_prefix(&mut big), 5);
        assert_eq!(&big[..5], b"abcde");
        assert_eq!(c.len(), 5);
        assert_eq!(BytesChain::new().copy_prefix(&mut out), 0);
    }

    #[test]
    fn buf_reads_across_segments() {
        let mut c = chain(&[b"\x00\x00", b"\x01\x02", b"xyz"]);
        assert_eq!(c.get_u32(), 0x0102);
        assert_eq!(c.chunk(), b"xyz");
        let mut dst = [IoSlice::new(&[]); 4];
        assert_eq!(c.chunks_vectored(&mut dst), 1);
        c.advance(3);
        assert_eq!(c.remaining(), 0);
        assert!(c.chunk().is_empty());
        assert!(c.try_get_u8().is_err());
    }

    #[test]
    fn copy_to_bytes_is_zero_copy_within_a_segment() {
        let first = Bytes::from_static(b"abcdef");
        let p = first.as_ptr();
        let mut c = BytesChain::from(first);
        c.push(Bytes::from_static(b"gh"));
        let a = c.copy_to_bytes(4);
        assert_eq!((&a[..], a.as_ptr()), (&b"abcd"[..], p));
        let b = c.copy_to_bytes(2);
        assert_eq!(b.as_ptr(), p.wrapping_add(4));
        assert_eq!(c.segments().len(), 1, "an emptied segment is dropped");
        let mut c2 = chain(&[b"ab", b"cd"]);
        assert_eq!(&c2.copy_to_bytes(3)[..], b"abc");
        assert_eq!(flat(&c2), b"d");
    }

    #[test]
    #[should_panic(expected = "past the 2 remaining")]
    fn advance_past_end_panics_per_buf_contract() {
        chain(&[b"ab"]).advance(3);
    }

    #[test]
    fn random_splits_and_reads_match_a_flat_model() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..300 {
            let mut model = Vec::new();
            let mut c = BytesChain::new();
            for _ in 0..rng.below(8) {
                let part: Vec<u8> = (0..rng.below(20)).map(|_| rng.next() as u8).collect();
                model.extend_from_slice(&part);
                c.push(Bytes::from(part));
            }
            let mut pos = 0;
            while !c.is_empty() {
                let n = rng.below(c.len() + 2);
                match rng.below(3) {
                    0 => match c.split_to(n) {
                        Some(h) => {
                            assert_eq!(flat(&h), &model[pos..pos + n]);
                            pos += n;
                        }
                        None => assert!(n > c.len()),
                    },
                    1 if n <= c.len() => {
                        assert_eq!(&c.copy_to_bytes(n)[..], &model[pos..pos + n]);
                        pos += n;
                    }
                    _ => {
                        let mut out = vec![0; n];
                        let got = c.copy_prefix(&mut out);
                        assert_eq!(&out[..got], &model[pos..pos + got]);
                        let k = n.min(c.len());
                        c.advance(k);
                        pos += k;
                    }
                }
                assert_eq!(c.len(), model.len() - pos);
                assert_eq!(flat(&c), &model[pos..]);
            }
        }
    }
}
