//! One real, throwaway ZCRX registration: the only reliable test of whether a queue can
//! be bound, since most refusals come from the NIC driver and the net core.

use super::ring::errno_of;
use crate::mem::Backing;
use crate::zc::register::{register, Layout};
use crate::{sys, PoolError, ZcrxFeatures};
use io_uring::{cqueue, squeue, IoUring};
use std::io;
use std::os::fd::AsRawFd;

/// Refill ring entries requested.
const RQ_ENTRIES: u32 = 64;
/// Area size in pages: enough for the kernel to accept the area, small enough to fit
/// any memlock limit.
const AREA_PAGES: usize = 16;

/// Why a registration attempt did not bind the queue.
#[derive(Debug)]
pub(crate) enum AttemptError {
    /// The ZCRX-capable ring (SINGLE_ISSUER, DEFER_TASKRUN, CQE32) could not be created.
    Ring(io::Error),
    /// The area or refill memory could not be mapped.
    Memory(io::Error),
    /// `IORING_REGISTER_ZCRX_IFQ` failed with this errno.
    Register(i32),
}

/// Registers `if_rxq` of `if_idx` on a fresh ring and tears everything down again,
/// through the same registration code the zero-copy pool uses.
///
/// On a NIC that supports ZCRX this restarts the queue twice (bind and release).
pub(crate) fn try_register(if_idx: u32, if_rxq: u32) -> Result<(), AttemptError> {
    let page = sys::page_size();
    let ring = IoUring::<squeue::Entry, cqueue::Entry32>::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(8)
        .map_err(AttemptError::Ring)?;
    let layout = Layout {
        if_idx,
        if_rxq,
        flags: 0,
        area_bytes: AREA_PAGES * page,
        chunk_size: page as u32,
        rq_entries: RQ_ENTRIES,
        backing: Backing::Anonymous,
        events: None,
    };
    // SAFETY: the registered memory is dropped only after the ring below, so it
    // outlives the registration. The ring was created on this thread, as SINGLE_ISSUER
    // requires of register calls.
    let result = unsafe { register(ring.as_raw_fd(), &ZcrxFeatures::default(), &layout) };
    // The instance lives until its ring is closed; only then may its memory go.
    drop(ring);
    match result {
        Ok(registered) => {
            drop(registered);
            Ok(())
        }
        Err(PoolError::Kernel { source, .. }) => Err(AttemptError::Register(errno_of(&source))),
        Err(PoolError::Memory(e)) => Err(AttemptError::Memory(e)),
        Err(other) => Err(AttemptError::Memory(io::Error::other(other.to_string()))),
    }
}

/// Whether the kernel has real ZCRX registration code, learned from a registration
/// against an ifindex that cannot exist: the stub compiled in without
/// `CONFIG_IO_URING_ZCRX` answers `EOPNOTSUPP` to everything, while the real code
/// answers `ENODEV` (or `EPERM` without CAP_NET_ADMIN). `None` when no ring could be
/// made or the kernel predates ZCRX (`recv_zc` false).
pub(crate) fn zcrx_in_kernel(recv_zc: bool) -> Option<bool> {
    if !recv_zc {
        return None;
    }
    match try_register(i32::MAX as u32, 0) {
        Ok(()) => Some(true),
        Err(AttemptError::Register(errno)) => Some(errno != libc::EOPNOTSUPP),
        Err(AttemptError::Ring(_) | AttemptError::Memory(_)) => None,
    }
}
