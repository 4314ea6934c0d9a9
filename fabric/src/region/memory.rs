//! [`RegionMemory`]: the bytes of a region, shared with providers, and the memlock
//! limit they count against.

use crate::error::{FabricError, PostError};
use bytes::Bytes;
use std::alloc::Layout;
use std::fmt;
use std::ops::Range;
use std::ptr::NonNull;
use std::sync::Arc;

/// How the bytes were allocated, so they are freed the same way.
enum Owner {
    Layout(Layout),
    Vec {
        capacity: usize,
    },
    /// Memory the program owns and frees ([`Domain::register_foreign`](crate::Domain::register_foreign)).
    Foreign,
}

/// The bytes of a registered region. Shared (`Arc`) between the region handle, the
/// provider and operations in flight; freed when the last of them lets go.
///
/// The memory may be written by the provider at any time an operation or a remote key
/// allows it, so it is only ever accessed by copying through raw pointers
/// ([`read_at`](Self::read_at), [`write_at`](Self::write_at)); no `&[u8]` to it is
/// handed out except inside `Bytes` made for sending ([`bytes`](Self::bytes)).
pub struct RegionMemory {
    ptr: NonNull<u8>,
    len: usize,
    owner: Owner,
    locked: bool,
}

// SAFETY: the memory is plain heap bytes owned by this value; every access copies
// through raw pointers after a bounds check, and the provider contract makes the only
// concurrent writers (providers' progress, the kernel) follow the same rule.
unsafe impl Send for RegionMemory {}
// SAFETY: as above: shared access never creates overlapping Rust references.
unsafe impl Sync for RegionMemory {}

// SAFETY: the bytes are this value's own allocation, neither moved nor resized while
// it lives, and freed only in its drop.
unsafe impl zerorx::runtime::SendMemory for RegionMemory {
    fn range(&self) -> (*const u8, usize) {
        (self.ptr.as_ptr(), self.len)
    }
}

impl RegionMemory {
    /// `len` zeroed bytes, page aligned.
    pub(crate) fn zeroed(len: usize) -> Result<RegionMemory, FabricError> {
        if len == 0 {
            return Err(FabricError::invalid(
                "len",
                0,
                "a region needs at least one byte",
            ));
        }
        let layout = Layout::from_size_align(len, 4096)
            .map_err(|e| FabricError::invalid("len", len, e.to_string()))?;
        // SAFETY: `layout` has a non-zero size (checked above).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).ok_or(FabricError::Io {
            call: "alloc",
            code: libc::ENOMEM,
            text: format!("could not allocate {len} bytes"),
        })?;
        Ok(RegionMemory {
            ptr,
            len,
            owner: Owner::Layout(layout),
            locked: false,
        })
    }

    /// Takes over `v`'s heap memory without copying.
    pub(crate) fn from_vec(v: Vec<u8>) -> Result<RegionMemory, FabricError> {
        if v.is_empty() {
            return Err(FabricError::invalid(
                "buf.len()",
                0,
                "a region needs at least one byte",
            ));
        }
        let mut v = std::mem::ManuallyDrop::new(v);
        let (len, capacity) = (v.len(), v.capacity());
        let ptr = NonNull::new(v.as_mut_ptr()).ok_or(FabricError::invalid(
            "buf",
            "null",
            "a vector with data has a non-null pointer",
        ))?;
        Ok(RegionMemory {
            ptr,
            len,
            owner: Owner::Vec { capacity },
            locked: false,
        })
    }

    /// Memory at `ptr` the caller owns; never freed here.
    ///
    /// # Safety
    /// `[ptr, ptr+len)` stays valid for reads and writes while the region lives and
    /// while any operation posted on it is outstanding.
    pub(crate) unsafe fn foreign(ptr: *mut u8, len: usize) -> Result<RegionMemory, FabricError> {
        let ptr = NonNull::new(ptr).ok_or(FabricError::invalid(
            "ptr",
            "null",
            "foreign memory needs a non-null address",
        ))?;
        if len == 0 || (ptr.as_ptr() as usize).checked_add(len).is_none() {
            return Err(FabricError::invalid(
                "len",
                len,
                "a region needs at least one byte and must not wrap the address space",
            ));
        }
        Ok(RegionMemory {
            ptr,
            len,
            owner: Owner::Foreign,
            locked: false,
        })
    }

    /// Whether the program owns the bytes (they are then never registered with the
    /// ring: their owner may unmap them without telling anyone but libfabric-style
    /// contracts).
    pub(crate) fn is_foreign(&self) -> bool {
        matches!(self.owner, Owner::Foreign)
    }

    /// Locks the pages in RAM (`mlock`), first checking `RLIMIT_MEMLOCK` so the error
    /// can say how much was asked and how to raise the limit.
    pub(crate) fn lock(&mut self) -> Result<(), FabricError> {
        memlock_check(self.len as u64)?;
        // SAFETY: `[ptr, ptr+len)` is memory this value owns.
        let rc = unsafe { libc::mlock(self.ptr.as_ptr().cast(), self.len) };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::ENOMEM) || e.raw_os_error() == Some(libc::EAGAIN) {
                let (limit, locked) = memlock_state();
                return Err(FabricError::MemlockLimit {
                    limit,
                    requested: self.len as u64,
                    locked,
                });
            }
            return Err(FabricError::io("mlock", &e));
        }
        self.locked = true;
        Ok(())
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true (regions have at least one byte); here for symmetry with `len`.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Start of the memory, for providers that hand it to a NIC or the kernel. Writes
    /// through it must stay inside `len` and follow the provider contract.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub(super) fn check(&self, offset: usize, len: usize) -> Result<(), PostError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(PostError::LocalRange {
                offset,
                len,
                region_len: self.len,
            }),
        }
    }

    /// Copies `src` into the region at `offset`.
    pub fn write_at(&self, offset: usize, src: &[u8]) -> Result<(), PostError> {
        self.check(offset, src.len())?;
        // SAFETY: bounds checked above; `src` is ordinary memory that cannot overlap
        // the region (no `&[u8]` into the region is ever handed out mutably, and
        // `Bytes` views are read-only and never passed here by the crate).
        unsafe {
            std::ptr::copy(src.as_ptr(), self.ptr.as_ptr().add(offset), src.len());
        }
        Ok(())
    }

    /// Copies region bytes at `offset` into `dst`.
    pub fn read_at(&self, offset: usize, dst: &mut [u8]) -> Result<(), PostError> {
        self.check(offset, dst.len())?;
        // SAFETY: bounds checked; `dst` is a distinct `&mut` so it cannot alias the
        // region's bytes being read.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.ptr.as_ptr().add(offset),
                dst.as_mut_ptr(),
                dst.len(),
            );
        }
        Ok(())
    }

    /// A read-only view of `range` that keeps the memory alive, for sending without a
    /// user-space copy.
    pub fn bytes(self: &Arc<Self>, range: Range<usize>) -> Result<Bytes, PostError> {
        self.check(range.start, range.len())?;
        Ok(Bytes::from_owner(RegionView {
            mem: self.clone(),
            range,
        }))
    }
}

impl Drop for RegionMemory {
    fn drop(&mut self) {
        if self.locked {
            // SAFETY: unlocking the range `lock` locked; failure leaves nothing to undo.
            unsafe { libc::munlock(self.ptr.as_ptr().cast(), self.len) };
        }
        match self.owner {
            // SAFETY: allocated in `zeroed` with exactly this layout.
            Owner::Layout(layout) => unsafe { std::alloc::dealloc(self.ptr.as_ptr(), layout) },
            // SAFETY: the parts of the vector taken over in `from_vec`.
            Owner::Vec { capacity } => unsafe {
                drop(Vec::from_raw_parts(self.ptr.as_ptr(), self.len, capacity));
            },
            Owner::Foreign => {}
        }
    }
}

impl fmt::Debug for RegionMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegionMemory")
            .field("len", &self.len)
            .field("locked", &self.locked)
            .finish()
    }
}

/// Owner of a `Bytes` made from region memory.
struct RegionView {
    mem: Arc<RegionMemory>,
    range: Range<usize>,
}

impl AsRef<[u8]> for RegionView {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: the range was bounds-checked when the view was made and the Arc keeps
        // the memory alive. The bytes may change under the view if a receive or a
        // remote write targets them while a send is in flight — the usual RDMA rule
        // (do not modify a buffer under a posted send); they are only read and passed
        // to the kernel.
        unsafe {
            std::slice::from_raw_parts(
                self.mem.ptr.as_ptr().add(self.range.start),
                self.range.len(),
            )
        }
    }
}

/// `RLIMIT_MEMLOCK` (soft, bytes; `u64::MAX` when unlimited) and the bytes this process
/// has locked (`VmLck`).
pub fn memlock_state() -> (u64, u64) {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `rl` is a valid out-pointer for getrlimit.
    let limit = if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut rl) } == 0 {
        if rl.rlim_cur == libc::RLIM_INFINITY {
            u64::MAX
        } else {
            rl.rlim_cur
        }
    } else {
        u64::MAX
    };
    let locked = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmLck:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024);
    (limit, locked)
}

/// Fails with [`FabricError::MemlockLimit`] when locking `requested` more bytes would
/// pass `RLIMIT_MEMLOCK`. Processes with `CAP_IPC_LOCK` are not limited by the kernel,
/// but the check stays conservative. Providers that pin memory call this before
/// pinning.
pub fn memlock_check(requested: u64) -> Result<(), FabricError> {
    let (limit, locked) = memlock_state();
    if limit != u64::MAX && locked.saturating_add(requested) > limit {
        return Err(FabricError::MemlockLimit {
            limit,
            requested,
            locked,
        });
    }
    Ok(())
}
