//! [`Metadata`]: what `statx` says of a file.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A file's size, kind, permissions and times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metadata {
    len: u64,
    mode: u32,
    modified: SystemTime,
    accessed: SystemTime,
    created: Option<SystemTime>,
}

fn time(t: &libc::statx_timestamp) -> SystemTime {
    let d = Duration::new(t.tv_sec.unsigned_abs(), t.tv_nsec);
    if t.tv_sec >= 0 {
        UNIX_EPOCH + d
    } else {
        UNIX_EPOCH - d
    }
}

impl Metadata {
    pub(crate) fn from_statx(s: &libc::statx) -> Metadata {
        Metadata {
            len: s.stx_size,
            mode: s.stx_mode as u32,
            modified: time(&s.stx_mtime),
            accessed: time(&s.stx_atime),
            created: (s.stx_mask & libc::STATX_BTIME != 0).then(|| time(&s.stx_btime)),
        }
    }

    /// Size in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the size is 0.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A regular file.
    pub fn is_file(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFREG
    }

    /// A directory.
    pub fn is_dir(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFDIR
    }

    /// The permission bits (`0o644`).
    pub fn permissions(&self) -> u32 {
        self.mode & 0o7777
    }

    /// Last modification.
    pub fn modified(&self) -> SystemTime {
        self.modified
    }

    /// Last access.
    pub fn accessed(&self) -> SystemTime {
        self.accessed
    }

    /// Creation, where the filesystem records it.
    pub fn created(&self) -> Option<SystemTime> {
        self.created
    }
}
