//! The one module that reads and writes memory shared with the kernel.
//!
//! Three shapes of shared memory exist, each with its ordering rule:
//!
//! - **Provided-buffer ring** ([`BufRing`]): user space produces entries and
//!   release-stores the 16-bit tail (which overlays the reserved field of entry 0); the
//!   kernel load-acquires the tail before reading entries. There is no shared head.
//! - **Refill ring** ([`RefillRing`], ZCRX): user space writes entries, then
//!   release-stores the 32-bit tail; free space is computed from a load-acquire of the
//!   kernel-written head, so an entry slot is never rewritten before the kernel has
//!   consumed it.
//! - **Receive areas** ([`received_bytes`]): the kernel writes payload, then posts a
//!   completion; the completion (read by the ring owner) orders the payload before any
//!   user read. Received ranges are only ever read.
//! - **The kernel's copy statistics** ([`KernelStats`], ZCRX events, Linux 7.2): two
//!   `u64` counters in the refill region that the kernel updates with plain stores
//!   while receives run. User space only reads them, with relaxed atomic loads: they
//!   order nothing, and a torn or lost update only makes the figure approximate.
//!
//! Only the ring's owner thread produces entries; other threads hand their returns to
//! the owner (see `core`). Nothing else in the crate dereferences these pointers.

use crate::abi::{ZcrxRqe, ZcrxStats};
use crate::mem::Mapping;
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, Ordering};

/// Size of `struct io_uring_buf`.
pub(crate) const BUF_RING_ENTRY_SIZE: usize = 16;
/// Offset of the shared tail inside entry 0 (`struct io_uring_buf_ring`).
const BUF_RING_TAIL_OFFSET: usize = 14;

/// A provided-buffer ring living in a [`Mapping`] registered with the kernel.
#[derive(Debug)]
pub(crate) struct BufRing {
    base: *mut u8,
    mask: u16,
}

impl BufRing {
    /// # Safety
    /// `mapping` must hold at least `entries * 16` bytes, `entries` must be a power of
    /// two, and the mapping must outlive the returned value.
    pub(crate) unsafe fn new(mapping: &Mapping, entries: u16) -> BufRing {
        debug_assert!(entries.is_power_of_two());
        debug_assert!(mapping.len() >= entries as usize * BUF_RING_ENTRY_SIZE);
        BufRing {
            base: mapping.as_ptr(),
            mask: entries - 1,
        }
    }

    /// Fills the entry at ring position `index` (not yet visible to the kernel until
    /// [`publish`](Self::publish) moves the tail past it).
    pub(crate) fn write(&self, index: u16, addr: u64, len: u32, bid: u16) {
        let slot = (index & self.mask) as usize * BUF_RING_ENTRY_SIZE;
        // SAFETY: `slot` is inside the ring (masked index); the slot is at or beyond the
        // published tail, or was consumed by the kernel, so the kernel is not reading it.
        // Fields are written one by one so entry 0's `resv` (the shared tail) is never
        // overwritten.
        unsafe {
            let entry = self.base.add(slot);
            entry.cast::<u64>().write(addr);
            entry.add(8).cast::<u32>().write(len);
            entry.add(12).cast::<u16>().write(bid);
        }
    }

    /// Makes every entry before `tail` visible to the kernel.
    pub(crate) fn publish(&self, tail: u16) {
        // SAFETY: the tail field is 2-byte aligned inside the live mapping; the kernel
        // only reads it. Release orders the entry writes above before the new tail.
        let shared = unsafe { &*(self.base.add(BUF_RING_TAIL_OFFSET) as *const AtomicU16) };
        shared.store(tail, Ordering::Release);
    }
}

/// Pointers into a ZCRX refill region, from the offsets the kernel returned.
#[derive(Debug)]
pub(crate) struct RefillRing {
    head: *const AtomicU32,
    tail: *const AtomicU32,
    rqes: *mut ZcrxRqe,
    mask: u32,
}

impl RefillRing {
    /// # Safety
    /// `region` must be the registered refill region, `head`, `tail` and `rqes` the
    /// offsets the kernel wrote back (4-, 4- and 16-byte aligned), `entries` the rounded
    /// entry count, with `rqes + entries * 16 <= region.len()`; the region must outlive
    /// the returned value.
    pub(crate) unsafe fn new(
        region: &Mapping,
        head: u32,
        tail: u32,
        rqes: u32,
        entries: u32,
    ) -> RefillRing {
        debug_assert!(entries.is_power_of_two());
        debug_assert!(rqes as usize + entries as usize * 16 <= region.len());
        let base = region.as_ptr();
        // SAFETY: the offsets are inside the region by the caller's contract.
        unsafe {
            RefillRing {
                head: base.add(head as usize).cast(),
                tail: base.add(tail as usize).cast(),
                rqes: base.add(rqes as usize).cast(),
                mask: entries - 1,
            }
        }
    }

    /// The kernel's consumer position. Acquire: entries before it may be rewritten.
    pub(crate) fn head(&self) -> u32 {
        // SAFETY: aligned u32 inside the live region (constructor contract).
        unsafe { (*self.head).load(Ordering::Acquire) }
    }

    /// Writes the entry at ring position `index`; the caller has checked free space.
    pub(crate) fn write(&self, index: u32, rqe: ZcrxRqe) {
        // SAFETY: masked index inside the entry array; the slot was consumed by the
        // kernel (free space checked against an acquired head) or never published.
        unsafe { self.rqes.add((index & self.mask) as usize).write(rqe) }
    }

    /// Makes every entry before `tail` visible to the kernel.
    pub(crate) fn publish(&self, tail: u32) {
        // SAFETY: aligned u32 inside the live region. Release orders the entry writes
        // before the tail, as the kernel load-acquires it.
        unsafe { (*self.tail).store(tail, Ordering::Release) }
    }
}

/// The `struct zcrx_stats` block the kernel keeps inside a refill region.
#[derive(Debug)]
pub(crate) struct KernelStats {
    counters: *const AtomicU64,
}

impl KernelStats {
    /// # Safety
    /// `offset` must be 8-byte aligned with `offset + 16 <= region.len()`, inside the
    /// registered refill region whose registration named it as the stats block; the
    /// region must outlive the returned value.
    pub(crate) unsafe fn new(region: &Mapping, offset: usize) -> KernelStats {
        debug_assert!(offset.is_multiple_of(8) && offset + 16 <= region.len());
        KernelStats {
            // SAFETY: inside the region by the caller's contract.
            counters: unsafe { region.as_ptr().add(offset).cast() },
        }
    }

    /// The counters now.
    pub(crate) fn read(&self) -> ZcrxStats {
        // SAFETY: two aligned u64s inside the live region (constructor contract); the
        // kernel only ever stores whole words there.
        unsafe {
            ZcrxStats {
                copy_count: (*self.counters).load(Ordering::Relaxed),
                copy_bytes: (*self.counters.add(1)).load(Ordering::Relaxed),
            }
        }
    }
}

/// The bytes a completion reported, as a slice.
///
/// # Safety
/// `[ptr, ptr + len)` must lie inside a live receive area, the completion that reported
/// the range must have been reaped (ordering the kernel's writes before this read), and
/// the range must not be handed back to the kernel while the slice lives.
pub(crate) unsafe fn received_bytes<'a>(ptr: *const u8, len: usize) -> &'a [u8] {
    // SAFETY: forwarded from the caller's contract.
    unsafe { std::slice::from_raw_parts(ptr, len) }
}

// SAFETY: the raw pointers refer to mappings owned by the same pool core; only the
// owner thread calls the producer methods (enforced by `core`).
unsafe impl Send for BufRing {}
// SAFETY: as above.
unsafe impl Send for RefillRing {}
// SAFETY: the pointer refers to the refill region owned by the same pool core, which
// outlives it; it is only read, with atomic loads, from any thread.
unsafe impl Send for KernelStats {}
// SAFETY: as above.
unsafe impl Sync for KernelStats {}

/// Stand-ins for the kernel side, used by tests that run without ZCRX hardware.
#[cfg(test)]
pub(crate) mod fake_kernel {
    use super::*;

    /// The kernel's consumer side of a refill ring: the same pointers as the
    /// producer's [`RefillRing`], used the other way round.
    pub(crate) struct FakeRefillConsumer(RefillRing);

    impl FakeRefillConsumer {
        /// # Safety
        /// Same contract as [`RefillRing::new`].
        pub(crate) unsafe fn new(
            region: &Mapping,
            head: u32,
            tail: u32,
            rqes: u32,
            n: u32,
        ) -> Self {
            // SAFETY: forwarded.
            FakeRefillConsumer(unsafe { RefillRing::new(region, head, tail, rqes, n) })
        }

        /// Consumes up to `max` published entries, like the kernel's refill path:
        /// acquire the tail, read entries, release the head.
        pub(crate) fn consume(&self, max: usize) -> Vec<ZcrxRqe> {
            let ring = &self.0;
            // SAFETY: aligned words and entries inside the live region.
            unsafe {
                let tail = (*ring.tail).load(Ordering::Acquire);
                let mut head = (*ring.head).load(Ordering::Relaxed);
                let mut out = Vec::new();
                while head != tail && out.len() < max {
                    out.push(ring.rqes.add((head & ring.mask) as usize).read());
                    head = head.wrapping_add(1);
                }
                (*ring.head).store(head, Ordering::Release);
                out
            }
        }

        /// Entries published but not consumed.
        pub(crate) fn queued(&self) -> u32 {
            // SAFETY: aligned words inside the live region.
            unsafe {
                (*self.0.tail)
                    .load(Ordering::Acquire)
                    .wrapping_sub(self.0.head())
            }
        }
    }

    /// Writes payload into an area the way a NIC (or the copy fallback) would.
    ///
    /// # Safety
    /// The range must be inside the live area and not held by any buffer handle.
    pub(crate) unsafe fn nic_write(area: &Mapping, off: usize, data: &[u8]) {
        // SAFETY: forwarded.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), area.as_ptr().add(off), data.len()) }
    }
}
