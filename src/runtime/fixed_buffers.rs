//! Buffers registered with a worker's ring (`IORING_REGISTER_BUFFERS2`), for
//! `READ_FIXED`/`WRITE_FIXED`: the kernel pins their pages once at registration
//! instead of on every call, which large reads and writes (direct I/O above all) pay
//! otherwise.
//!
//! Each worker has a table of [`SLOTS`] entries, registered empty (sparse) when its
//! first buffer is made; a [`FixedBuf`] takes a slot and installs its memory there,
//! and gives the slot back (emptied) when dropped. A buffer belongs to the worker
//! whose table holds it (`!Send`), and a call with it on a ring that is not that table's
//! (a later runtime on the same thread) fails with an error rather than naming another
//! ring's slot.

use super::context;
use std::alloc::{self, Layout};
use std::cell::RefCell;
use std::io;
use std::ops::{Deref, DerefMut};
use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::rc::Rc;

/// Registered buffers a worker can hold at once.
pub const SLOTS: u16 = 64;

/// A worker's fixed-buffer table.
#[derive(Debug)]
pub(crate) struct FixedTable {
    /// The ring it is registered with.
    ring_fd: RawFd,
    /// Slots without a buffer.
    free: RefCell<Vec<u16>>,
}

impl FixedTable {
    /// The current worker's table, registered at the first call.
    pub(crate) fn current() -> io::Result<Rc<FixedTable>> {
        let core = context::current().ok_or_else(crate::runtime::op::not_in_runtime)?;
        if let Some(t) = core.fixed.borrow().as_ref() {
            return Ok(t.clone());
        }
        let mut driver = core.driver.borrow_mut();
        driver
            .with_submitter(|s| s.register_buffers_sparse(u32::from(SLOTS)))
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("registering a table of {SLOTS} fixed buffers with the ring: {e}"),
                )
            })?;
        let table = Rc::new(FixedTable {
            ring_fd: driver.ring_fd(),
            free: RefCell::new((0..SLOTS).rev().collect()),
        });
        *core.fixed.borrow_mut() = Some(table.clone());
        Ok(table)
    }

    /// A free slot, if any.
    pub(crate) fn take_slot(&self) -> Option<u16> {
        self.free.borrow_mut().pop()
    }

    /// Empties `slot` (taken with [`take_slot`](Self::take_slot)) and frees it: after
    /// this the kernel reaches no memory through it. `false` when the ring is gone
    /// (its registrations died with it) or off the worker; the slot stays taken then.
    pub(crate) fn empty_slot(&self, slot: u16) -> bool {
        let empty = libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        };
        // SAFETY: an empty iovec names no memory.
        let emptied = unsafe { self.update(slot, empty) }.is_ok();
        if emptied {
            self.free.borrow_mut().push(slot);
        }
        emptied
    }

    /// Installs `iov` in `slot` (an empty one removes what was there).
    ///
    /// # Safety
    /// `iov` is empty, or memory that stays allocated (not unmapped) until the slot
    /// is emptied or the ring closed.
    pub(crate) unsafe fn update(&self, slot: u16, iov: libc::iovec) -> io::Result<()> {
        let done = context::with_core(|core| {
            let mut driver = core.driver.borrow_mut();
            if driver.ring_fd() != self.ring_fd {
                return Err(io::Error::other(
                    "this fixed buffer belongs to a ring that is gone",
                ));
            }
            // SAFETY: the caller's contract: `iov` is empty or stays allocated until
            // the slot is emptied (or the ring, which releases every registration,
            // closes).
            driver.with_submitter(|s| unsafe {
                s.register_buffers_update(u32::from(slot), &[iov], None)
            })
        });
        done.unwrap_or_else(|| Err(crate::runtime::op::not_in_runtime()))
            .map(drop)
    }
}

/// A buffer registered with the current worker's ring, for
/// [`File::read_fixed_at`](crate::fs::File::read_fixed_at) and
/// [`write_fixed_at`](crate::fs::File::write_fixed_at): page-aligned, of a fixed
/// capacity, holding `len()` bytes (what a read filled, or what was put in to write).
pub struct FixedBuf {
    ptr: NonNull<u8>,
    cap: usize,
    len: usize,
    slot: u16,
    table: Rc<FixedTable>,
}

impl FixedBuf {
    /// A buffer of `capacity` bytes (1 byte to 1 GiB), registered with the current
    /// worker's ring. Fails off a worker, when the worker already holds [`SLOTS`]
    /// buffers, or when the kernel refuses to pin the memory (`RLIMIT_MEMLOCK` on
    /// kernels that count it), naming the cause.
    pub fn new(capacity: usize) -> io::Result<FixedBuf> {
        if capacity == 0 || capacity > 1 << 30 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a fixed buffer of {capacity} bytes: it takes 1 byte to 1 GiB"),
            ));
        }
        let table = FixedTable::current()?;
        let slot = table.take_slot().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!("this worker holds {SLOTS} fixed buffers already: drop one first"),
            )
        })?;
        let layout = Layout::from_size_align(capacity, 4096).map_err(io::Error::other)?;
        // SAFETY: the layout has a non-zero size.
        let ptr = NonNull::new(unsafe { alloc::alloc_zeroed(layout) })
            .ok_or_else(|| io::Error::from(io::ErrorKind::OutOfMemory))?;
        let buf = FixedBuf {
            ptr,
            cap: capacity,
            len: 0,
            slot,
            table,
        };
        // SAFETY: the buffer's memory is freed only in its drop, after the slot was
        // emptied (or once the ring is gone).
        unsafe { buf.table.update(slot, buf.iovec()) }
            .map_err(|e| io::Error::new(e.kind(), format!("registering a fixed buffer: {e}")))?;
        Ok(buf)
    }

    fn iovec(&self) -> libc::iovec {
        libc::iovec {
            iov_base: self.ptr.as_ptr().cast(),
            iov_len: self.cap,
        }
    }

    /// Bytes it can hold.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Empties it (the capacity stays).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Appends `data`; fails with `InvalidInput` when it would not fit.
    pub fn extend_from_slice(&mut self, data: &[u8]) -> io::Result<()> {
        if data.len() > self.cap - self.len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} bytes do not fit: the fixed buffer has {} of {} left",
                    data.len(),
                    self.cap - self.len,
                    self.cap
                ),
            ));
        }
        // SAFETY: `len + data.len() <= cap` bytes of the allocation; `data` cannot
        // overlap it (`&mut self` is the only access to the buffer).
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                self.ptr.as_ptr().add(self.len),
                data.len(),
            )
        };
        self.len += data.len();
        Ok(())
    }

    /// The slot and the memory the kernel reads or writes: `(index, start, capacity)`.
    pub(crate) fn raw(&mut self) -> (u16, *mut u8, usize) {
        (self.slot, self.ptr.as_ptr(), self.cap)
    }

    /// Marks the first `n` bytes as filled (after a read of `n` bytes).
    pub(crate) fn set_filled(&mut self, n: usize) {
        self.len = n.min(self.cap);
    }

    /// Whether the current worker's ring is the one this buffer is registered with.
    pub(crate) fn check_ring(&self) -> io::Result<()> {
        let ring = context::with_core(|core| core.driver.borrow().ring_fd())
            .ok_or_else(crate::runtime::op::not_in_runtime)?;
        if ring == self.table.ring_fd {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "this fixed buffer is registered with another ring (a runtime that is gone)",
            ))
        }
    }
}

impl Deref for FixedBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: the first `len` bytes of the allocation, initialised (zeroed at
        // allocation, then written).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for FixedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl std::fmt::Debug for FixedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FixedBuf")
            .field("slot", &self.slot)
            .field("len", &self.len)
            .field("capacity", &self.cap)
            .finish()
    }
}

impl Drop for FixedBuf {
    fn drop(&mut self) {
        // Empty the slot before the memory goes. Off the worker, or once its ring is
        // gone, the registration died with the ring.
        self.table.empty_slot(self.slot);
        if let Ok(layout) = Layout::from_size_align(self.cap, 4096) {
            // SAFETY: allocated in `new` with this layout; no op holds the buffer (an
            // op owns the `FixedBuf` it uses until its completion).
            unsafe { alloc::dealloc(self.ptr.as_ptr(), layout) };
        }
    }
}
