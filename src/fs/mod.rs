//! Files over the ring: open, read and write at an offset or in sequence, sync,
//! `statx`, and the directory operations — each one SQE on the current worker's ring,
//! so file I/O waits beside the sockets instead of blocking the worker (io_uring began
//! with files). Reading a directory's entries has no io_uring op: [`read_dir`] runs on
//! the blocking pool.
//!
//! Buffers are owned, as io_uring needs (the kernel fills or reads them after the call
//! returns): a read takes a `BytesMut` and gives it back filled, a write takes `Bytes`.
//! Errors name the path and what was done to it.
//!
//! ```no_run
//! # zerorx::Runtime::new()?.block_on(async {
//! zerorx::fs::write("/tmp/zerorx-example", &b"hello"[..]).await?;
//! let text = zerorx::fs::read("/tmp/zerorx-example").await?;
//! assert_eq!(text, b"hello");
//! let f = zerorx::fs::File::open("/tmp/zerorx-example").await?;
//! let (n, buf) = f.read_at(bytes::BytesMut::with_capacity(4096), 1).await?;
//! assert_eq!(&buf[..n], b"ello");
//! # Ok::<_, std::io::Error>(()) })?;
//! # Ok::<(), std::io::Error>(())
//! ```

mod compat;
mod file;
mod inline;
mod metadata;

pub use crate::runtime::fixed_buffers::{FixedBuf, SLOTS as FIXED_BUFFER_SLOTS};
pub use compat::{FileCompat, READ_AHEAD};
pub use file::{File, OpenOptions};
pub use metadata::Metadata;

use crate::ops::file::{MkDirAt, RenameAt, Statx, UnlinkAt};
use crate::runtime::op::Op;
use bytes::Bytes;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// `path` as the kernel takes it.
fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: a path with a NUL byte", path.display()),
        )
    })
}

/// `e` with what was done to which path.
fn context(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

/// Runs a path op, its error naming `what` and `path`.
async fn path_op<T: crate::driver::OpCode>(what: &str, path: &Path, op: T) -> io::Result<T> {
    let (c, op) = Op::submit(op)?.await?;
    c.result().map_err(|e| context(e, what, path))?;
    Ok(op)
}

/// The whole file at `path`.
pub async fn read(path: impl AsRef<Path>) -> io::Result<Vec<u8>> {
    File::open(path).await?.read_to_end().await
}

/// Creates (or truncates) the file at `path` and writes `data` to it.
pub async fn write(path: impl AsRef<Path>, data: impl Into<Bytes>) -> io::Result<()> {
    File::create(path).await?.write_all(data.into()).await
}

/// The metadata of the file or directory at `path` (following symlinks).
pub async fn metadata(path: impl AsRef<Path>) -> io::Result<Metadata> {
    let path = path.as_ref();
    let op = path_op("statx", path, Statx::new(None, c_path(path)?)).await?;
    Ok(Metadata::from_statx(&op.out))
}

/// Removes the file at `path`.
pub async fn remove_file(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref();
    let op = UnlinkAt {
        path: c_path(path)?,
        flags: 0,
    };
    path_op("removing", path, op).await.map(drop)
}

/// Removes the empty directory at `path`.
pub async fn remove_dir(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref();
    let op = UnlinkAt {
        path: c_path(path)?,
        flags: libc::AT_REMOVEDIR,
    };
    path_op("removing directory", path, op).await.map(drop)
}

/// Renames `from` to `to`, replacing `to` if it exists.
pub async fn rename(from: impl AsRef<Path>, to: impl AsRef<Path>) -> io::Result<()> {
    let (from, to) = (from.as_ref(), to.as_ref());
    let op = RenameAt {
        from: c_path(from)?,
        to: c_path(to)?,
    };
    let what = format!("renaming to {}:", to.display());
    path_op(&what, from, op).await.map(drop)
}

/// Creates the directory `path` (its parent must exist).
pub async fn create_dir(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref();
    let op = MkDirAt {
        path: c_path(path)?,
        mode: 0o777,
    };
    path_op("creating directory", path, op).await.map(drop)
}

/// Creates `path` and every missing parent; a directory already there is fine.
pub async fn create_dir_all(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref();
    let mut missing = Vec::new();
    let mut at = Some(path);
    while let Some(p) = at.filter(|p| !p.as_os_str().is_empty()) {
        match metadata(p).await {
            Ok(m) if m.is_dir() => break,
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!(
                        "creating directory {}: {} is not a directory",
                        path.display(),
                        p.display()
                    ),
                ))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => missing.push(p.to_path_buf()),
            Err(e) => return Err(e),
        }
        at = p.parent();
    }
    for dir in missing.iter().rev() {
        match create_dir(dir).await {
            // Made meanwhile by someone else: as good.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            other => other?,
        }
    }
    Ok(())
}

/// The entries of the directory `path`, in the order the filesystem gives them. Runs
/// on the blocking pool: io_uring has no op for it.
pub async fn read_dir(path: impl AsRef<Path>) -> io::Result<Vec<PathBuf>> {
    let path = path.as_ref().to_path_buf();
    let shown = path.clone();
    crate::spawn_blocking(move || {
        std::fs::read_dir(&path)?
            .map(|e| e.map(|e| e.path()))
            .collect::<io::Result<Vec<_>>>()
    })
    .await
    .map_err(|e| io::Error::other(format!("reading directory {}: {e:?}", shown.display())))?
    .map_err(|e| context(e, "reading directory", &shown))
}
