//! One real, throwaway ZCRX registration: the only reliable test of whether a queue can
//! be bound, since most refusals come from the NIC driver and the net core.

use super::mem::AnonMap;
use super::ring::errno_of;
use crate::{abi, sys};
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

/// Registers `if_rxq` of `if_idx` on a fresh ring and tears everything down again.
///
/// On a NIC that supports ZCRX this restarts the queue twice (bind and release).
pub(crate) fn try_register(if_idx: u32, if_rxq: u32) -> Result<(), AttemptError> {
    let page = sys::page_size();
    let area = AnonMap::new(AREA_PAGES * page).map_err(AttemptError::Memory)?;
    // A full page of header keeps the entries clear of any header size the kernel
    // uses (8 bytes up to 6.17, 64 from 6.18, larger in pending patches).
    let region_len =
        (page + RQ_ENTRIES as usize * std::mem::size_of::<abi::ZcrxRqe>()).next_multiple_of(page);
    let region = AnonMap::new(region_len).map_err(AttemptError::Memory)?;
    let ring = IoUring::<squeue::Entry, cqueue::Entry32>::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(8)
        .map_err(AttemptError::Ring)?;

    let mut area_reg = abi::ZcrxAreaReg {
        addr: area.addr(),
        len: area.len() as u64,
        ..Default::default()
    };
    let mut region_desc = abi::RegionDesc {
        user_addr: region.addr(),
        size: region.len() as u64,
        flags: abi::IORING_MEM_REGION_TYPE_USER,
        ..Default::default()
    };
    let mut reg = abi::ZcrxIfqReg {
        if_idx,
        if_rxq,
        rq_entries: RQ_ENTRIES,
        area_ptr: &mut area_reg as *mut abi::ZcrxAreaReg as u64,
        region_ptr: &mut region_desc as *mut abi::RegionDesc as u64,
        ..Default::default()
    };
    // SAFETY: `reg`, `area_reg` and `region_desc` are writable locals alive across the
    // call; the area and region mappings are dropped only after the ring below, so they
    // outlive the registration. The ring was created on this thread, as SINGLE_ISSUER
    // requires of register calls.
    let result = unsafe { sys::register_zcrx_ifq(ring.as_raw_fd(), &mut reg) };
    // The instance lives until its ring is closed; only then may its memory go.
    drop(ring);
    drop(region);
    drop(area);
    result.map_err(|e| AttemptError::Register(errno_of(&e)))
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
