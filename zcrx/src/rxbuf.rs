//! `RxBuf`: the owned handle to bytes the kernel received, shared by both pools.

use crate::core::{PoolCore, Return};
use bytes::Bytes;
use std::fmt;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::Arc;

/// Bytes the kernel placed in a pool's memory, exactly as many as the completion
/// reported (never the chunk's capacity).
///
/// Read-only and `Send`: it may move to and be dropped on any thread. Dropping it hands
/// the chunk back to its pool (directly on the pool's owner thread, through the
/// owner's return queue elsewhere). The pool's memory stays mapped while any `RxBuf`
/// is alive, even after the pool and its ring are gone.
///
/// ```no_run
/// # fn demo(buf: zcrx::RxBuf) {
/// let n = buf.len();
/// let bytes: bytes::Bytes = buf.into_bytes(); // no copy: the chunk returns when the last clone drops
/// assert_eq!(bytes.len(), n);
/// # }
/// ```
pub struct RxBuf {
    /// Into a pool's area, or (with [`OVERFLOW`] in `token`) a heap allocation of
    /// exactly `len` bytes that this handle owns.
    ptr: NonNull<u8>,
    len: u32,
    token: u64,
    core: Arc<PoolCore>,
}

/// Tag of a handle whose bytes were received into ordinary memory while its pool was
/// dry ([`RxBuf::overflow`]). Pool tokens never carry it: buffer ids are 16-bit and
/// zero-copy tokens hold an area id below `ZCRX_MAX_AREAS` (1024) from bit 48 up.
const OVERFLOW: u64 = 1 << 63;

// SAFETY: the bytes are read-only for the handle's whole life and the memory is kept
// alive by the Arc; returning goes through `PoolCore::give_back`, which is thread-safe.
unsafe impl Send for RxBuf {}
// SAFETY: shared access only reads.
unsafe impl Sync for RxBuf {}

impl RxBuf {
    /// # Safety
    /// `[ptr, ptr+len)` must be inside one of `core`'s areas, reported by a reaped
    /// completion, and owned by this handle until it is dropped (one handle per
    /// completion).
    pub(crate) unsafe fn new(core: Arc<PoolCore>, ptr: *mut u8, len: u32, token: u64) -> RxBuf {
        debug_assert!(core
            .area_holding(ptr as usize)
            .is_some_and(|m| { ptr as usize + len as usize <= m.as_ptr() as usize + m.len() }));
        RxBuf {
            // SAFETY: inside a live mapping, hence non-null.
            ptr: unsafe { NonNull::new_unchecked(ptr) },
            len,
            token,
            core,
        }
    }

    /// Bytes the kernel received into ordinary memory (a plain `recv` into `data`)
    /// because `core`'s pool was dry while the application held its chunks. The handle
    /// behaves as a pooled one; it frees the memory when dropped, and `core` counts
    /// the bytes as held meanwhile ([`PoolStatsSnapshot::overflow_held`]).
    ///
    /// [`PoolStatsSnapshot::overflow_held`]: crate::PoolStatsSnapshot::overflow_held
    pub(crate) fn overflow(core: Arc<PoolCore>, mut data: Vec<u8>) -> RxBuf {
        data.truncate(u32::MAX as usize);
        // Exactly `len` bytes, so the allocation can be rebuilt from the handle alone.
        // A receive that filled less than half its buffer is copied into a block of
        // its own size: shrunk in place, the block's free tail could not take the next
        // buffer-sized receive, so each small buffer a reader kept would pin a whole
        // buffer of heap (a guest rpc run grew to 350 MiB within a 128 MiB limit).
        let data: Box<[u8]> = if data.len() < data.capacity() / 2 {
            Box::from(&data[..])
        } else {
            data.into_boxed_slice()
        };
        let len = data.len() as u32;
        core.overflow_taken(len as u64);
        let ptr = NonNull::from(Box::leak(data)).cast::<u8>();
        RxBuf {
            ptr,
            len,
            token: OVERFLOW,
            core,
        }
    }

    /// Whether these bytes were received into ordinary memory while the pool was dry,
    /// rather than into one of its chunks.
    pub fn is_overflow(&self) -> bool {
        self.token & OVERFLOW != 0
    }

    /// Number of bytes received.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// True for a zero-length buffer (pools never produce one).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Converts into [`Bytes`] without copying; the chunk returns to its pool when the
    /// last clone (or slice) of the `Bytes` is dropped.
    pub fn into_bytes(self) -> Bytes {
        Bytes::from_owner(self)
    }

    /// Offset of these bytes from the start of the pool area that holds them (for
    /// diagnostics and tests that check where the kernel placed data).
    pub fn area_offset(&self) -> usize {
        if self.is_overflow() {
            return 0;
        }
        let p = self.ptr.as_ptr() as usize;
        self.core
            .area_holding(p)
            .map_or(0, |m| p - m.as_ptr() as usize)
    }
}

impl Deref for RxBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        if self.is_overflow() {
            // SAFETY: `overflow` leaked a boxed slice of exactly `len` bytes, freed only
            // by this handle's drop.
            return unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len as usize) };
        }
        // SAFETY: `new`'s contract: a reaped completion's range inside the live area,
        // not returned to the kernel before this handle drops.
        unsafe { crate::shm::received_bytes(self.ptr.as_ptr(), self.len as usize) }
    }
}

impl AsRef<[u8]> for RxBuf {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl Drop for RxBuf {
    fn drop(&mut self) {
        if self.is_overflow() {
            let slice = std::ptr::slice_from_raw_parts_mut(self.ptr.as_ptr(), self.len as usize);
            // SAFETY: `overflow` made this pointer from a boxed slice of `len` bytes, and
            // only this drop turns it back into one.
            drop(unsafe { Box::from_raw(slice) });
            self.core.overflow_released(self.len as u64);
            return;
        }
        self.core.give_back(Return {
            token: self.token,
            len: self.len,
        });
    }
}

impl fmt::Debug for RxBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RxBuf")
            .field("len", &self.len)
            .field("overflow", &self.is_overflow())
            .field("area_offset", &self.area_offset())
            .finish()
    }
}
