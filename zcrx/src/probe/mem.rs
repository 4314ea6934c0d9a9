//! Throwaway page-aligned anonymous memory for probe registrations.

use std::io;

/// A private anonymous mapping, unmapped on drop.
///
/// The kernel zero-fills it, which is what a refill ring header must be before
/// registration (older kernels do not clear user regions themselves).
pub(crate) struct AnonMap {
    ptr: *mut libc::c_void,
    len: usize,
}

impl AnonMap {
    /// Maps `len` bytes (rounded up to whole pages by the kernel) read-write.
    pub(crate) fn new(len: usize) -> io::Result<Self> {
        // SAFETY: an anonymous private mapping with a null hint aliases no existing
        // memory; the result is checked against MAP_FAILED before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Self { ptr, len })
    }

    /// The start address as the kernel ABI wants it.
    pub(crate) fn addr(&self) -> u64 {
        self.ptr as u64
    }

    /// The mapped length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for AnonMap {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned and nothing borrows the
        // memory; callers drop the ring that registered it first, so the kernel no
        // longer uses it either.
        unsafe {
            libc::munmap(self.ptr, self.len);
        }
    }
}
