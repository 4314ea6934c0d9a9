//! File ops: open, read and write at an offset, fsync, statx, unlink, rename, mkdir.
//! Each owns what the kernel reads or writes (paths, buffers, the statx result) until
//! its completion.

use crate::driver::{Completion, OpCode};
use bytes::{Bytes, BytesMut};
use io_uring::{opcode, squeue, types};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;

/// `openat(AT_FDCWD, path, flags, mode)`.
pub(crate) struct OpenAt {
    pub(crate) path: CString,
    pub(crate) flags: i32,
    pub(crate) mode: u32,
}

/// Takes ownership of the fd a successful open carries.
pub(crate) fn opened_fd(c: &Completion) -> Option<OwnedFd> {
    // SAFETY: a non-negative openat result is a new fd the kernel gave to us alone.
    (c.res >= 0).then(|| unsafe { OwnedFd::from_raw_fd(c.res) })
}

// SAFETY: the entry points at `path`, owned by the op; an fd opened for nobody is
// closed in `release`.
unsafe impl OpCode for OpenAt {
    fn create_entry(&mut self) -> squeue::Entry {
        opcode::OpenAt::new(types::Fd(libc::AT_FDCWD), self.path.as_ptr())
            .flags(self.flags | libc::O_CLOEXEC)
            .mode(self.mode)
            .build()
    }

    fn release(&mut self, completion: &Completion) {
        drop(opened_fd(completion));
    }
}

/// `pread` into `buf`'s spare capacity.
pub(crate) struct ReadAt {
    pub(crate) file: Arc<OwnedFd>,
    pub(crate) buf: BytesMut,
    pub(crate) offset: u64,
}

// SAFETY: the kernel writes into `buf`'s spare capacity, heap memory the op owns and
// nobody reads until the completion; `file` keeps the fd open.
unsafe impl OpCode for ReadAt {
    fn fd(&self) -> Option<std::os::fd::RawFd> {
        Some(self.file.as_raw_fd())
    }

    fn create_entry(&mut self) -> squeue::Entry {
        let spare = self.buf.spare_capacity_mut();
        let len = spare.len().min(u32::MAX as usize) as u32;
        opcode::Read::new(
            types::Fd(self.file.as_raw_fd()),
            spare.as_mut_ptr().cast(),
            len,
        )
        .offset(self.offset)
        .build()
    }
}

impl ReadAt {
    /// The buffer with the `n` bytes the kernel read marked as filled.
    pub(crate) fn into_filled(mut self, n: usize) -> BytesMut {
        let n = n.min(self.buf.capacity() - self.buf.len());
        // SAFETY: the completion reported `n` bytes written into the spare capacity
        // starting at `len()`.
        unsafe { self.buf.set_len(self.buf.len() + n) };
        self.buf
    }
}

/// `pwrite` of `buf`.
pub(crate) struct WriteAt {
    pub(crate) file: Arc<OwnedFd>,
    pub(crate) buf: Bytes,
    pub(crate) offset: u64,
}

// SAFETY: the kernel reads `buf`, which the op owns (immutable, never moved) until the
// completion; `file` keeps the fd open.
unsafe impl OpCode for WriteAt {
    fn fd(&self) -> Option<std::os::fd::RawFd> {
        Some(self.file.as_raw_fd())
    }

    fn create_entry(&mut self) -> squeue::Entry {
        let len = self.buf.len().min(u32::MAX as usize) as u32;
        opcode::Write::new(types::Fd(self.file.as_raw_fd()), self.buf.as_ptr(), len)
            .offset(self.offset)
            .build()
    }
}

/// `fsync`, or `fdatasync` with `data_only`.
pub(crate) struct Fsync {
    pub(crate) file: Arc<OwnedFd>,
    pub(crate) data_only: bool,
}

// SAFETY: no memory; `file` keeps the fd open.
unsafe impl OpCode for Fsync {
    fn fd(&self) -> Option<std::os::fd::RawFd> {
        Some(self.file.as_raw_fd())
    }

    fn create_entry(&mut self) -> squeue::Entry {
        let flags = if self.data_only {
            types::FsyncFlags::DATASYNC
        } else {
            types::FsyncFlags::empty()
        };
        opcode::Fsync::new(types::Fd(self.file.as_raw_fd()))
            .flags(flags)
            .build()
    }
}

/// `statx` of a path, or of an open file (`file`, with an empty path).
pub(crate) struct Statx {
    pub(crate) file: Option<Arc<OwnedFd>>,
    pub(crate) path: CString,
    pub(crate) out: Box<libc::statx>,
}

impl Statx {
    pub(crate) fn new(file: Option<Arc<OwnedFd>>, path: CString) -> Statx {
        Statx {
            file,
            path,
            // SAFETY: statx is plain data; all-zero is a valid value to be overwritten.
            out: Box::new(unsafe { std::mem::zeroed() }),
        }
    }
}

// SAFETY: the kernel reads `path` and writes `out`, both owned by the op (boxed or
// heap, not moved) until the completion; `file` keeps the fd open.
unsafe impl OpCode for Statx {
    fn fd(&self) -> Option<std::os::fd::RawFd> {
        self.file.as_ref().map(|f| f.as_raw_fd())
    }

    fn create_entry(&mut self) -> squeue::Entry {
        let (dirfd, flags) = match &self.file {
            Some(f) => (f.as_raw_fd(), libc::AT_EMPTY_PATH),
            None => (libc::AT_FDCWD, 0),
        };
        opcode::Statx::new(
            types::Fd(dirfd),
            self.path.as_ptr(),
            (&mut *self.out as *mut libc::statx).cast(),
        )
        .flags(flags)
        .mask(libc::STATX_BASIC_STATS | libc::STATX_BTIME)
        .build()
    }
}

/// `unlinkat(AT_FDCWD, path, flags)`: a file, or with `AT_REMOVEDIR` an empty directory.
pub(crate) struct UnlinkAt {
    pub(crate) path: CString,
    pub(crate) flags: i32,
}

// SAFETY: the entry points at `path`, owned by the op.
unsafe impl OpCode for UnlinkAt {
    fn create_entry(&mut self) -> squeue::Entry {
        opcode::UnlinkAt::new(types::Fd(libc::AT_FDCWD), self.path.as_ptr())
            .flags(self.flags)
            .build()
    }
}

/// `renameat(AT_FDCWD, from, AT_FDCWD, to)`.
pub(crate) struct RenameAt {
    pub(crate) from: CString,
    pub(crate) to: CString,
}

// SAFETY: the entry points at `from` and `to`, owned by the op.
unsafe impl OpCode for RenameAt {
    fn create_entry(&mut self) -> squeue::Entry {
        opcode::RenameAt::new(
            types::Fd(libc::AT_FDCWD),
            self.from.as_ptr(),
            types::Fd(libc::AT_FDCWD),
            self.to.as_ptr(),
        )
        .build()
    }
}

/// `mkdirat(AT_FDCWD, path, mode)`.
pub(crate) struct MkDirAt {
    pub(crate) path: CString,
    pub(crate) mode: u32,
}

// SAFETY: the entry points at `path`, owned by the op.
unsafe impl OpCode for MkDirAt {
    fn create_entry(&mut self) -> squeue::Entry {
        opcode::MkDirAt::new(types::Fd(libc::AT_FDCWD), self.path.as_ptr())
            .mode(self.mode)
            .build()
    }
}

/// `pread` into a registered buffer (`READ_FIXED`), up to its capacity.
pub(crate) struct ReadFixedAt {
    pub(crate) file: Arc<OwnedFd>,
    pub(crate) buf: crate::runtime::fixed_buffers::FixedBuf,
    pub(crate) offset: u64,
}

// SAFETY: the kernel writes into `buf`'s registered memory, which the op owns (and
// nobody reads) until the completion; `file` keeps the fd open; the slot is `buf`'s
// on this worker's ring (checked before submitting).
unsafe impl OpCode for ReadFixedAt {
    fn fd(&self) -> Option<std::os::fd::RawFd> {
        Some(self.file.as_raw_fd())
    }

    fn create_entry(&mut self) -> squeue::Entry {
        let (slot, ptr, cap) = self.buf.raw();
        opcode::ReadFixed::new(
            types::Fd(self.file.as_raw_fd()),
            ptr,
            cap.min(u32::MAX as usize) as u32,
            slot,
        )
        .offset(self.offset)
        .build()
    }
}

/// `pwrite` from a registered buffer (`WRITE_FIXED`): its filled bytes.
pub(crate) struct WriteFixedAt {
    pub(crate) file: Arc<OwnedFd>,
    pub(crate) buf: crate::runtime::fixed_buffers::FixedBuf,
    pub(crate) offset: u64,
}

// SAFETY: the kernel reads `buf`'s filled bytes, registered memory the op owns until
// the completion; `file` keeps the fd open; the slot is `buf`'s on this ring.
unsafe impl OpCode for WriteFixedAt {
    fn fd(&self) -> Option<std::os::fd::RawFd> {
        Some(self.file.as_raw_fd())
    }

    fn create_entry(&mut self) -> squeue::Entry {
        let len = self.buf.len();
        let (slot, ptr, _) = self.buf.raw();
        opcode::WriteFixed::new(
            types::Fd(self.file.as_raw_fd()),
            ptr,
            len.min(u32::MAX as usize) as u32,
            slot,
        )
        .offset(self.offset)
        .build()
    }
}
