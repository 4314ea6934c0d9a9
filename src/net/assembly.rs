//! [`concat`]: the one copy [`BytesChain::into_contiguous`] makes of bytes that
//! arrived in several receive buffers, written into a buffer recycled per thread.
//!
//! A frame that straddles two receive buffers has to be copied into one allocation
//! so that, for example, an RPC request's `binary`/`string` fields can be borrowed as
//! `Bytes`. A fresh allocation per
//! message cost more than the copy itself at 64 KiB: glibc hands such blocks back to
//! the kernel when they are freed and the next message faults the pages in again.
//! Here the allocation goes back to a per-thread free list when the last view of the
//! message drops, and the next straddling message is written into memory that is
//! already mapped.

#[cfg(doc)]
use super::BytesChain;
use bytes::Bytes;
use std::cell::RefCell;

/// Most bytes of free buffers a thread keeps: the working set of a worker whose
/// connections each have a large message in flight.
const KEEP_BYTES: usize = 8 << 20;

/// Buffers above this are freed rather than kept: a rare huge frame must not pin its
/// memory for the thread's life.
const KEEP_MAX_BUF: usize = 1 << 20;

/// Capacities are rounded up to this, so messages of nearly the same size (the same
/// payload with different headers) fit each other's buffers.
const ROUND: usize = 16 * 1024;

/// Free buffers, most recently returned last (still warm in cache).
#[derive(Default)]
struct FreeList {
    bufs: Vec<Vec<u8>>,
    bytes: usize,
}

thread_local! {
    static FREE: RefCell<FreeList> = RefCell::default();
}

/// An assembled message's memory; goes back to the dropping thread's free list.
struct Assembled(Vec<u8>);

impl AsRef<[u8]> for Assembled {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Assembled {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.0);
        if buf.capacity() > KEEP_MAX_BUF {
            return;
        }
        // During thread exit the list may be gone: the buffer is then simply freed.
        let _ = FREE.try_with(|f| {
            let Ok(mut f) = f.try_borrow_mut() else {
                return;
            };
            if f.bytes + buf.capacity() <= KEEP_BYTES {
                f.bytes += buf.capacity();
                f.bufs.push(buf);
            }
        });
    }
}

/// An empty buffer with room for `len` bytes: the most recently freed one that
/// fits, else a new one.
fn take(len: usize) -> Vec<u8> {
    let reused = FREE
        .try_with(|f| {
            let mut f = f.try_borrow_mut().ok()?;
            let at = f.bufs.iter().rposition(|b| b.capacity() >= len)?;
            let buf = f.bufs.swap_remove(at);
            f.bytes -= buf.capacity();
            Some(buf)
        })
        .ok()
        .flatten();
    let mut buf = reused.unwrap_or_else(|| Vec::with_capacity(len.next_multiple_of(ROUND)));
    buf.clear();
    buf
}

/// `segs` (`len` bytes in all) copied one after another into a recycled buffer.
pub(super) fn concat<'a>(segs: impl IntoIterator<Item = &'a Bytes>, len: usize) -> Bytes {
    let mut buf = take(len);
    for s in segs {
        buf.extend_from_slice(s);
    }
    Bytes::from_owner(Assembled(buf))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::BytesChain;

    fn assemble(chain: BytesChain) -> Bytes {
        chain.into_contiguous()
    }

    /// Free buffers and bytes the current thread keeps.
    fn kept() -> (usize, usize) {
        FREE.with(|f| {
            let f = f.borrow();
            (f.bufs.len(), f.bytes)
        })
    }

    fn chain(parts: &[&[u8]]) -> BytesChain {
        let mut c = BytesChain::new();
        for p in parts {
            c.push(Bytes::copy_from_slice(p));
        }
        c
    }

    #[test]
    fn one_segment_is_handed_on_without_a_copy() {
        let seg = Bytes::from(vec![5u8; 100]);
        let p = seg.as_ptr();
        assert_eq!(assemble(BytesChain::from(seg)).as_ptr(), p);
        assert!(assemble(BytesChain::new()).is_empty());
    }

    #[test]
    fn a_buffer_is_reused_once_the_message_is_dropped_and_not_before() {
        let first = assemble(chain(&[&[1; 3000], &[2; 5000]]));
        assert_eq!(first.len(), 8000);
        // While the first message is alive, the next one gets other memory and the
        // first keeps its bytes.
        let second = assemble(chain(&[&[3; 4000], &[4; 4000]]));
        assert_ne!(first.as_ptr(), second.as_ptr());
        assert!(first[..3000].iter().all(|&b| b == 1) && first[3000..].iter().all(|&b| b == 2));
        assert!(second[..4000].iter().all(|&b| b == 3) && second[4000..].iter().all(|&b| b == 4));
        // A slice keeps the buffer busy as long as it lives.
        let field = second.slice(10..20);
        let p2 = second.as_ptr();
        drop(second);
        let third = assemble(chain(&[&[5; 10], &[6; 10]]));
        assert_ne!(third.as_ptr(), p2, "a slice of it was still alive");
        assert_eq!(&field[..], &[3; 10]);
        drop(field);
        let p1 = first.as_ptr();
        drop(first);
        let fourth = assemble(chain(&[&[7; 7000], &[8; 1000]]));
        assert!(
            fourth.as_ptr() == p1 || fourth.as_ptr() == p2,
            "a freed buffer was reused"
        );
        assert!(fourth[..7000].iter().all(|&b| b == 7) && fourth[7000..].iter().all(|&b| b == 8));
        drop((third, fourth));
    }

    #[test]
    fn a_freed_buffer_too_small_for_the_next_message_is_not_used() {
        drop(assemble(chain(&[&[1; 10], &[2; 10]])));
        assert_eq!(kept(), (1, ROUND));
        let big = assemble(chain(&[&[3; ROUND], &[4; ROUND]]));
        assert_eq!(kept(), (1, ROUND), "the small buffer stays free");
        assert_eq!(big.len(), 2 * ROUND);
        assert!(big[..ROUND].iter().all(|&b| b == 3) && big[ROUND..].iter().all(|&b| b == 4));
    }

    #[test]
    fn what_a_thread_keeps_is_bounded() {
        let huge = assemble(chain(&[&vec![1; KEEP_MAX_BUF], &[2]]));
        let before = kept();
        drop(huge);
        assert_eq!(kept(), before, "a buffer over KEEP_MAX_BUF is freed");
        let many: Vec<Bytes> = (0..2 * KEEP_BYTES / KEEP_MAX_BUF)
            .map(|_| assemble(chain(&[&vec![1; KEEP_MAX_BUF / 2], &[2; 10]])))
            .collect();
        drop(many);
        let (_, bytes) = kept();
        assert!(bytes <= KEEP_BYTES, "{bytes} bytes kept");
    }
}
