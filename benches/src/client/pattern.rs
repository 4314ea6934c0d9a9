//! The bytes the client sends, chosen so that any misplaced, lost or repeated byte in
//! an echo is caught.

/// Byte `i` of a stream is `i % PERIOD`; a prime period means no power-of-two buffer
/// boundary lines up with it.
const PERIOD: usize = 251;

/// A pattern buffer from which any `len ≤ max_len` bytes starting at any stream
/// offset can be borrowed without copying.
pub struct Pattern {
    bytes: Box<[u8]>,
}

impl Pattern {
    /// A pattern long enough for slices of up to `max_len` bytes.
    pub fn new(max_len: usize) -> Pattern {
        Pattern {
            bytes: (0..max_len + PERIOD).map(|i| (i % PERIOD) as u8).collect(),
        }
    }

    /// The `len` bytes of the stream starting at `offset`.
    pub fn at(&self, offset: u64, len: usize) -> &[u8] {
        let start = (offset % PERIOD as u64) as usize;
        &self.bytes[start..start + len]
    }
}

/// Fills a request: the pattern, with the request's sequence number in its first
/// (up to) 8 bytes, so an echo of an earlier request does not pass for this one.
pub fn fill_request(buf: &mut [u8], pattern: &Pattern, seq: u64) {
    let n = buf.len();
    buf.copy_from_slice(pattern.at(0, n));
    let tag = seq.to_le_bytes();
    let k = n.min(tag.len());
    buf[..k].copy_from_slice(&tag[..k]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_follow_the_stream() {
        let p = Pattern::new(1000);
        let whole = p.at(0, 1000).to_vec();
        for off in [1u64, 250, 251, 252, 777] {
            let s = p.at(off, 100);
            for (i, b) in s.iter().enumerate() {
                assert_eq!(*b as u64, (off + i as u64) % PERIOD as u64);
            }
        }
        assert_eq!(p.at(251, 10), &whole[..10]);
    }

    #[test]
    fn requests_differ_by_sequence() {
        let p = Pattern::new(64);
        let (mut a, mut b) = ([0u8; 64], [0u8; 64]);
        fill_request(&mut a, &p, 1);
        fill_request(&mut b, &p, 2);
        assert_ne!(a, b);
        assert_eq!(a[8..], b[8..]);
        let mut tiny = [0u8; 3];
        fill_request(&mut tiny, &p, 0x0102_0304);
        assert_eq!(tiny, [4, 3, 2]);
    }
}
