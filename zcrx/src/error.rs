//! Errors of pool creation and completion decoding.

use std::fmt;
use std::io;

/// Why a pool could not be built or a completion could not become a buffer.
#[derive(Debug)]
#[non_exhaustive]
pub enum PoolError {
    /// A configuration field is out of range.
    InvalidConfig {
        /// The field.
        field: &'static str,
        /// Why it is refused and what is accepted.
        reason: String,
    },
    /// Mapping pool memory failed.
    Memory(io::Error),
    /// The kernel refused a registration or control call.
    Kernel {
        /// What was being done.
        op: &'static str,
        /// The kernel's answer.
        source: io::Error,
        /// What the errno means here and what to do about it.
        hint: String,
    },
    /// The running kernel lacks something this call needs.
    Unsupported {
        /// The missing capability.
        what: &'static str,
        /// Which kernel has it.
        needs: &'static str,
    },
    /// A completion does not describe a buffer of this pool (wrong pool, corrupted
    /// completion, or a terminal completion passed as data).
    BadCompletion(String),
}

impl fmt::Display for PoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PoolError::InvalidConfig { field, reason } => {
                write!(f, "invalid pool configuration: `{field}` {reason}")
            }
            PoolError::Memory(e) => write!(f, "cannot map pool memory: {e}"),
            PoolError::Kernel { op, source, hint } => write!(f, "{op} failed: {source}; {hint}"),
            PoolError::Unsupported { what, needs } => {
                write!(f, "{what} is not supported by this kernel (needs {needs})")
            }
            PoolError::BadCompletion(why) => {
                write!(f, "completion is not a buffer of this pool: {why}")
            }
        }
    }
}

impl std::error::Error for PoolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PoolError::Memory(e) | PoolError::Kernel { source: e, .. } => Some(e),
            _ => None,
        }
    }
}

impl From<PoolError> for io::Error {
    fn from(e: PoolError) -> io::Error {
        let kind = match &e {
            PoolError::InvalidConfig { .. } | PoolError::BadCompletion(_) => {
                io::ErrorKind::InvalidInput
            }
            PoolError::Memory(err) | PoolError::Kernel { source: err, .. } => err.kind(),
            PoolError::Unsupported { .. } => io::ErrorKind::Unsupported,
        };
        io::Error::new(kind, e)
    }
}

/// What a registration errno most likely means, for [`PoolError::Kernel`] hints.
pub(crate) fn registration_hint(err: &io::Error) -> String {
    match err.raw_os_error() {
        Some(libc::ENOMEM) => "the pinned memory exceeds RLIMIT_MEMLOCK: raise it \
            (`ulimit -l`, systemd LimitMEMLOCK=) or grant CAP_IPC_LOCK, or use a smaller pool"
            .into(),
        Some(libc::EEXIST) => "the buffer group id is already registered on this ring, or the \
            call came from a thread that is not the ring's submitter"
            .into(),
        Some(libc::EINVAL) => "the kernel rejected the arguments (ring flags, sizes or \
            alignment); see `zerorx doctor` for what this kernel supports"
            .into(),
        Some(libc::EPERM) => "CAP_NET_ADMIN (init namespace) is required".into(),
        Some(libc::EFAULT) => "the registration memory is not writable or out of range".into(),
        _ => "see `zerorx doctor`".into(),
    }
}
