//! [`File`] and [`OpenOptions`].

use super::inline::{self, INLINE_MAX};
use super::{c_path, context, Metadata};
use crate::ops::file::{
    opened_fd, Fsync, OpenAt, ReadAt, ReadFixedAt, Statx, WriteAt, WriteFixedAt,
};
use crate::runtime::fixed_buffers::FixedBuf;
use crate::runtime::op::Op;
use bytes::{Bytes, BytesMut};
use std::cell::Cell;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How to open a file: `File::options().write(true).create(true).open(path)`.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    read: bool,
    write: bool,
    append: bool,
    truncate: bool,
    create: bool,
    create_new: bool,
    mode: u32,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            read: false,
            write: false,
            append: false,
            truncate: false,
            create: false,
            create_new: false,
            mode: 0o666,
        }
    }
}

impl OpenOptions {
    /// Nothing set: say what the file is opened for.
    pub fn new() -> OpenOptions {
        OpenOptions::default()
    }
    /// Open for reading.
    pub fn read(&mut self, on: bool) -> &mut Self {
        self.read = on;
        self
    }
    /// Open for writing.
    pub fn write(&mut self, on: bool) -> &mut Self {
        self.write = on;
        self
    }
    /// Every write goes to the end (implies writing).
    pub fn append(&mut self, on: bool) -> &mut Self {
        self.append = on;
        self
    }
    /// Cut the file to 0 bytes when opened (needs writing).
    pub fn truncate(&mut self, on: bool) -> &mut Self {
        self.truncate = on;
        self
    }
    /// Create the file if it is missing (needs writing).
    pub fn create(&mut self, on: bool) -> &mut Self {
        self.create = on;
        self
    }
    /// Create the file, failing with `AlreadyExists` if it is there.
    pub fn create_new(&mut self, on: bool) -> &mut Self {
        self.create_new = on;
        self
    }
    /// Permission bits of a created file, before the umask (default `0o666`).
    pub fn mode(&mut self, mode: u32) -> &mut Self {
        self.mode = mode;
        self
    }

    fn flags(&self, path: &Path) -> io::Result<i32> {
        let writes = self.write || self.append;
        if (self.truncate || self.create || self.create_new) && !writes {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "opening {}: truncate, create and create_new need write or append",
                    path.display()
                ),
            ));
        }
        let mut flags = match (self.read, writes) {
            (true, true) => libc::O_RDWR,
            (false, true) => libc::O_WRONLY,
            (true, false) => libc::O_RDONLY,
            (false, false) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "opening {}: neither read nor write asked for",
                        path.display()
                    ),
                ))
            }
        };
        if self.append {
            flags |= libc::O_APPEND;
        }
        if self.truncate {
            flags |= libc::O_TRUNC;
        }
        if self.create_new {
            flags |= libc::O_CREAT | libc::O_EXCL;
        } else if self.create {
            flags |= libc::O_CREAT;
        }
        Ok(flags)
    }

    /// Opens `path` with these options through the current worker's ring.
    pub async fn open(&self, path: impl AsRef<Path>) -> io::Result<File> {
        let path = path.as_ref();
        let op = OpenAt {
            path: c_path(path)?,
            flags: self.flags(path)?,
            mode: self.mode,
        };
        let (c, _) = Op::submit(op)?.await?;
        c.result().map_err(|e| context(e, "opening", path))?;
        let fd = opened_fd(&c).ok_or_else(|| io::Error::other("openat gave no fd"))?;
        let inline = super::inline::memory_backed(fd.as_raw_fd());
        Ok(File {
            fd: Arc::new(fd),
            path: path.into(),
            pos: Cell::new(0),
            inline,
        })
    }
}

/// An open file. Reads and writes at an offset take `&self`; the sequential ones
/// ([`read`](Self::read), [`write_all`](Self::write_all)) move the file's own position.
/// Any worker may use it (files are not tied to a ring); the fd closes when the file
/// and every op on it are done.
#[derive(Debug)]
pub struct File {
    fd: Arc<OwnedFd>,
    path: PathBuf,
    pos: Cell<u64>,
    /// A memory filesystem's file: small reads and writes are done on the worker
    /// (`fs::inline`).
    inline: bool,
}

impl File {
    /// Opens `path` for reading.
    pub async fn open(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new().read(true).open(path).await
    }

    /// Creates `path` for writing, or cuts it to 0 bytes if it exists.
    pub async fn create(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .await
    }

    /// Options to open with.
    pub fn options() -> OpenOptions {
        OpenOptions::new()
    }

    /// The path it was opened at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's position: where [`read`](Self::read) and
    /// [`write_all`](Self::write_all) go next.
    pub fn position(&self) -> u64 {
        self.pos.get()
    }

    /// Reads into the spare capacity of `buf` at `offset`; returns the bytes read (0 at
    /// the end of the file) with the buffer.
    pub async fn read_at(&self, buf: BytesMut, offset: u64) -> io::Result<(usize, BytesMut)> {
        if buf.capacity() == buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "read_at needs a buffer with spare capacity",
            ));
        }
        if self.inline && buf.capacity() - buf.len() <= INLINE_MAX {
            return inline::pread(self.fd.as_raw_fd(), buf, offset)
                .map_err(|e| context(e, "reading", &self.path));
        }
        let (c, op) = Op::submit(ReadAt {
            file: self.fd.clone(),
            buf,
            offset,
        })?
        .await?;
        let n = c.result().map_err(|e| context(e, "reading", &self.path))? as usize;
        Ok((n, op.into_filled(n)))
    }

    /// Reads at the file's position and moves it past what was read.
    pub async fn read(&self, buf: BytesMut) -> io::Result<(usize, BytesMut)> {
        let (n, buf) = self.read_at(buf, self.pos.get()).await?;
        self.pos.set(self.pos.get() + n as u64);
        Ok((n, buf))
    }

    /// Exactly `len` bytes at `offset`; a file that ends before is `UnexpectedEof`
    /// saying how much there was.
    pub async fn read_exact_at(&self, len: usize, offset: u64) -> io::Result<BytesMut> {
        let mut buf = BytesMut::with_capacity(len);
        while buf.len() < len {
            let at = offset + buf.len() as u64;
            let (n, b) = self.read_at(buf, at).await?;
            buf = b;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "reading {}: {len} bytes at offset {offset} asked for, the file ends \
                         after {} of them",
                        self.path.display(),
                        buf.len()
                    ),
                ));
            }
        }
        Ok(buf)
    }

    /// Everything from the file's position to its end.
    pub async fn read_to_end(&self) -> io::Result<Vec<u8>> {
        let size = self.metadata().await.map(|m| m.len()).unwrap_or(0);
        let start = self.pos.get();
        let mut buf = BytesMut::with_capacity((size.saturating_sub(start) as usize).max(4096));
        loop {
            if buf.capacity() == buf.len() {
                buf.reserve(buf.len().max(64 * 1024));
            }
            let (n, b) = self.read(buf).await?;
            buf = b;
            if n == 0 {
                return Ok(buf.into());
            }
        }
    }

    /// Writes `buf` at `offset`; returns how much was written (maybe less).
    pub async fn write_at(&self, buf: Bytes, offset: u64) -> io::Result<usize> {
        if self.inline && buf.len() <= INLINE_MAX {
            return inline::pwrite(self.fd.as_raw_fd(), &buf, offset)
                .map_err(|e| context(e, "writing", &self.path));
        }
        let (c, _) = Op::submit(WriteAt {
            file: self.fd.clone(),
            buf,
            offset,
        })?
        .await?;
        Ok(c.result().map_err(|e| context(e, "writing", &self.path))? as usize)
    }

    /// Writes all of `buf` at `offset`.
    pub async fn write_all_at(&self, mut buf: Bytes, mut offset: u64) -> io::Result<()> {
        while !buf.is_empty() {
            let n = self.write_at(buf.clone(), offset).await?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    format!(
                        "writing {}: the file took no more bytes",
                        self.path.display()
                    ),
                ));
            }
            buf = buf.slice(n..);
            offset += n as u64;
        }
        Ok(())
    }

    /// Writes all of `buf` at the file's position (at the end, when opened to append)
    /// and moves the position past it.
    pub async fn write_all(&self, buf: Bytes) -> io::Result<()> {
        let len = buf.len() as u64;
        self.write_all_at(buf, self.pos.get()).await?;
        self.pos.set(self.pos.get() + len);
        Ok(())
    }

    /// Reads into `buf` (up to its capacity) at `offset` with `READ_FIXED`: the kernel
    /// pinned the buffer's pages once, at registration, instead of at every call.
    /// Returns the bytes read (0 at the end of the file) with the buffer, holding them.
    pub async fn read_fixed_at(
        &self,
        mut buf: FixedBuf,
        offset: u64,
    ) -> io::Result<(usize, FixedBuf)> {
        buf.check_ring()?;
        let (c, op) = Op::submit(ReadFixedAt {
            file: self.fd.clone(),
            buf,
            offset,
        })?
        .await?;
        let mut op = op;
        let n = c.result().map_err(|e| context(e, "reading", &self.path))? as usize;
        op.buf.set_filled(n);
        buf = op.buf;
        Ok((n, buf))
    }

    /// Writes `buf`'s bytes at `offset` with `WRITE_FIXED`; returns how many were
    /// written (maybe fewer) with the buffer.
    pub async fn write_fixed_at(
        &self,
        buf: FixedBuf,
        offset: u64,
    ) -> io::Result<(usize, FixedBuf)> {
        buf.check_ring()?;
        let (c, op) = Op::submit(WriteFixedAt {
            file: self.fd.clone(),
            buf,
            offset,
        })?
        .await?;
        let n = c.result().map_err(|e| context(e, "writing", &self.path))? as usize;
        Ok((n, op.buf))
    }

    /// Flushes data and metadata to the device (`fsync`).
    pub async fn sync_all(&self) -> io::Result<()> {
        self.sync(false).await
    }

    /// Flushes data, and only the metadata needed to read it back (`fdatasync`).
    pub async fn sync_data(&self) -> io::Result<()> {
        self.sync(true).await
    }

    async fn sync(&self, data_only: bool) -> io::Result<()> {
        let (c, _) = Op::submit(Fsync {
            file: self.fd.clone(),
            data_only,
        })?
        .await?;
        c.result()
            .map_err(|e| context(e, "syncing", &self.path))
            .map(drop)
    }

    /// Its size, kind, permissions and times (`statx`).
    pub async fn metadata(&self) -> io::Result<Metadata> {
        let op = Statx::new(Some(self.fd.clone()), CString::default());
        let (c, op) = Op::submit(op)?.await?;
        c.result().map_err(|e| context(e, "statx", &self.path))?;
        Ok(Metadata::from_statx(&op.out))
    }
}
