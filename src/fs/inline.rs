//! Small reads and writes of files in memory (tmpfs, ramfs), done on the worker.
//!
//! Those filesystems cannot take a read or write without blocking (`RWF_NOWAIT` gets
//! `EOPNOTSUPP` on Linux 6.18's tmpfs), so io_uring hands every such op to an io-wq
//! thread: a thread hop of tens of microseconds for a copy of a few kilobytes (the
//! file benchmark measured 21 k random 4 KiB reads/s through the ring against std's
//! 326 k). Their data is in memory (short of swap), so a small copy on the worker costs
//! less than the hop; large ones still go through the ring, so a long copy never
//! stalls the worker's other tasks.

use bytes::BytesMut;
use std::io;
use std::os::fd::RawFd;

/// Largest read or write done on the worker: a copy of 64 KiB takes a few
/// microseconds, about what the io-wq hop costs.
pub(crate) const INLINE_MAX: usize = 64 * 1024;

/// Whether `fd` is a file of a memory filesystem (tmpfs or ramfs).
pub(crate) fn memory_backed(fd: RawFd) -> bool {
    // ramfs's magic (linux/magic.h; libc has TMPFS_MAGIC only), as `f_type` holds it.
    const RAMFS_MAGIC: libc::c_long = 0x8584_58f6_u32 as libc::c_long;
    let mut s = std::mem::MaybeUninit::<libc::statfs>::zeroed();
    // SAFETY: fstatfs writes one `statfs` into `s`, which lives across the call.
    let rc = unsafe { libc::fstatfs(fd, s.as_mut_ptr()) };
    if rc != 0 {
        return false;
    }
    // SAFETY: the call succeeded, so it filled `s`.
    let kind = unsafe { s.assume_init() }.f_type;
    kind == libc::TMPFS_MAGIC || kind == RAMFS_MAGIC
}

/// `pread` into the spare capacity of `buf`; the bytes read with the buffer.
pub(crate) fn pread(fd: RawFd, mut buf: BytesMut, offset: u64) -> io::Result<(usize, BytesMut)> {
    let spare = buf.spare_capacity_mut();
    // SAFETY: the kernel writes at most `spare.len()` bytes into `spare`, memory this
    // buffer owns; `fd` is held open by the caller's file.
    let n = unsafe {
        libc::pread(
            fd,
            spare.as_mut_ptr().cast(),
            spare.len(),
            offset as libc::off_t,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = n as usize;
    // SAFETY: the kernel initialised the first `n` spare bytes.
    unsafe { buf.set_len(buf.len() + n) };
    Ok((n, buf))
}

/// `pwrite` of `data` at `offset`; the bytes written.
pub(crate) fn pwrite(fd: RawFd, data: &[u8], offset: u64) -> io::Result<usize> {
    // SAFETY: the kernel reads `data.len()` bytes of `data`; `fd` is held open by the
    // caller's file.
    let n = unsafe { libc::pwrite(fd, data.as_ptr().cast(), data.len(), offset as libc::off_t) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}
