//! Anonymous memory mappings that the kernel pins: receive areas, refill regions and
//! provided-buffer rings.
//!
//! A [`Mapping`] only owns the address range; reading or writing what the kernel shares
//! through it is the job of `shm` (the one module that touches kernel-shared memory).

use std::io;
use std::ptr::NonNull;

/// 2 MiB: the transparent-huge-page size on x86_64 and arm64 (4 KiB base pages).
const THP_SIZE: usize = 2 << 20;

/// How an area's memory is backed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub enum Backing {
    /// Anonymous pages, 2 MiB aligned with `MADV_HUGEPAGE` so the kernel can back large
    /// chunks with transparent huge pages.
    #[default]
    Anonymous,
    /// Explicit huge pages (`MAP_HUGETLB`); needs `vm.nr_hugepages` reserved.
    HugeTlb,
}

/// An owned, zero-filled, page-aligned anonymous mapping, unmapped on drop.
#[derive(Debug)]
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a Mapping is an exclusive owner of an address range; the pointer is never
// aliased mutably through it (all access to its contents goes through `shm`).
unsafe impl Send for Mapping {}
// SAFETY: `&Mapping` only exposes the address and length.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes (rounded up to pages). `Anonymous` mappings of 2 MiB or more are
    /// aligned to 2 MiB and advised as huge-page candidates.
    pub fn new(len: usize, backing: Backing) -> io::Result<Mapping> {
        if len == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "mapping of 0 bytes",
            ));
        }
        let page = crate::sys::page_size();
        let len = len.div_ceil(page) * page;
        match backing {
            Backing::HugeTlb => {
                let len = len.div_ceil(THP_SIZE) * THP_SIZE;
                Self::map(len, libc::MAP_HUGETLB).map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!(
                            "MAP_HUGETLB of {len} bytes failed ({e}); reserve huge pages \
                             with `sysctl vm.nr_hugepages=N` or use anonymous memory"
                        ),
                    )
                })
            }
            Backing::Anonymous if len >= THP_SIZE => Self::map_thp_aligned(len),
            Backing::Anonymous => Self::map(len, 0),
        }
    }

    fn map(len: usize, extra_flags: libc::c_int) -> io::Result<Mapping> {
        // SAFETY: a fresh private anonymous mapping; no existing memory is affected.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | extra_flags,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mapping = Mapping {
            ptr: NonNull::new(ptr.cast()).ok_or_else(io::Error::last_os_error)?,
            len,
        };
        mapping.dont_fork();
        Ok(mapping)
    }

    /// Over-maps by 2 MiB and trims both ends so the result starts on a 2 MiB boundary:
    /// large `rx_buf_len` chunks need physically contiguous memory, which only huge
    /// pages give.
    fn map_thp_aligned(len: usize) -> io::Result<Mapping> {
        let raw = Self::map(len + THP_SIZE, 0)?;
        let base = raw.ptr.as_ptr() as usize;
        let aligned = base.next_multiple_of(THP_SIZE);
        let head = aligned - base;
        let tail = THP_SIZE - head;
        let raw_len = raw.len;
        std::mem::forget(raw);
        // SAFETY: both trimmed ranges lie inside the mapping created above and outside
        // the range kept; nothing references them.
        unsafe {
            if head > 0 {
                libc::munmap(base as *mut libc::c_void, head);
            }
            if tail > 0 {
                libc::munmap((aligned + len) as *mut libc::c_void, tail);
            }
            // Advice only: a kernel without THP keeps working with small pages.
            libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
        debug_assert_eq!(head + len + tail, raw_len);
        Ok(Mapping {
            ptr: NonNull::new(aligned as *mut u8).ok_or_else(io::Error::last_os_error)?,
            len,
        })
    }

    /// A forked child must not share pages the kernel is writing received data into.
    fn dont_fork(&self) {
        // SAFETY: advice on a range this Mapping owns.
        unsafe {
            libc::madvise(self.ptr.as_ptr().cast(), self.len, libc::MADV_DONTFORK);
        }
    }

    /// Start of the mapping.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Length in bytes (a page multiple).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: empty mappings are refused at creation.
    pub fn is_empty(&self) -> bool {
        false
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the range was mapped by `Mapping::new` and is owned by self; callers
        // keep a Mapping alive until the kernel no longer uses it (see `shm`).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_mapping_is_page_rounded_and_zeroed() {
        let m = Mapping::new(100, Backing::Anonymous).expect("mmap");
        assert_eq!(m.len(), crate::sys::page_size());
        // SAFETY: the mapping is live, owned and at least `len` bytes long.
        let bytes = unsafe { std::slice::from_raw_parts(m.as_ptr(), m.len()) };
        assert!(bytes.iter().all(|&b| b == 0));
    }

    #[test]
    fn large_mapping_is_huge_page_aligned() {
        let m = Mapping::new(4 << 20, Backing::Anonymous).expect("mmap");
        assert_eq!(m.as_ptr() as usize % THP_SIZE, 0);
        assert_eq!(m.len(), 4 << 20);
    }

    #[test]
    fn zero_length_is_an_error() {
        let err = Mapping::new(0, Backing::Anonymous).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }
}
