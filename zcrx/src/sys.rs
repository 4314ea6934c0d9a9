//! Raw `io_uring_setup` / `io_uring_register` calls the `io-uring` crate does not expose.
//!
//! Each wrapper takes the ABI struct by `&mut` because the kernel writes results back
//! into it; a read-only argument would make the kernel roll the operation back with
//! `EFAULT`.

use crate::abi;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// Calls `io_uring_setup(2)` and returns the ring fd. The probe uses it to test setup
/// flags the `io-uring` builder cannot express (`CQE_MIXED`).
pub fn io_uring_setup(entries: u32, params: &mut abi::SetupParams) -> io::Result<OwnedFd> {
    // SAFETY: `params` is a valid, writable `struct io_uring_params` (layout tested in
    // `abi`) that outlives the call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_io_uring_setup,
            entries as libc::c_ulong,
            params as *mut abi::SetupParams,
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a non-negative return of io_uring_setup is a new fd owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(ret as RawFd) })
}

/// Calls `io_uring_register(2)`.
///
/// # Safety
/// `arg` must point to memory of the shape `opcode` expects, valid and writable for the
/// duration of the call, and whatever the kernel keeps a reference to (areas, regions)
/// must stay valid for as long as the registration lives.
pub unsafe fn io_uring_register(
    ring_fd: RawFd,
    opcode: u32,
    arg: *mut libc::c_void,
    nr_args: u32,
) -> io::Result<i32> {
    // SAFETY: forwarded from the caller's contract.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_io_uring_register,
            ring_fd as libc::c_long,
            opcode as libc::c_long,
            arg,
            nr_args as libc::c_long,
        )
    };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as i32)
    }
}

/// Runs one blind `IORING_REGISTER_QUERY` entry (ring fd -1) and returns the entry's
/// own result: `Ok(Ok(bytes))` when the kernel answered, `Ok(Err(errno))` when it knows
/// QUERY but not this op, `Err` when the syscall itself failed (kernel < 6.18).
pub fn query<T: Default>(op: u32) -> io::Result<Result<(T, u32), i32>> {
    let mut data = T::default();
    let mut hdr = abi::QueryHdr {
        query_data: &mut data as *mut T as u64,
        query_op: op,
        size: std::mem::size_of::<T>() as u32,
        ..Default::default()
    };
    // SAFETY: `hdr` and `data` are writable and live across the call; the kernel writes
    // at most `size` bytes into `data` and the header back into `hdr`.
    unsafe {
        io_uring_register(
            -1,
            abi::IORING_REGISTER_QUERY,
            &mut hdr as *mut abi::QueryHdr as *mut libc::c_void,
            0,
        )?;
    }
    if hdr.result < 0 {
        return Ok(Err(-hdr.result));
    }
    Ok(Ok((data, hdr.size)))
}

/// `IORING_REGISTER_ZCRX_IFQ`.
///
/// # Safety
/// The area and region pointed to by `reg` must stay mapped until the ring and every
/// import of the instance are closed; `reg`, the area and region structs are written back.
pub unsafe fn register_zcrx_ifq(ring_fd: RawFd, reg: &mut abi::ZcrxIfqReg) -> io::Result<()> {
    // SAFETY: forwarded from the caller's contract; nr_args must be 1.
    unsafe {
        io_uring_register(
            ring_fd,
            abi::IORING_REGISTER_ZCRX_IFQ,
            reg as *mut abi::ZcrxIfqReg as *mut libc::c_void,
            1,
        )
    }
    .map(drop)
}

/// `IORING_REGISTER_ZCRX_CTRL` (Linux 6.19+). Callers must have confirmed the op exists.
pub fn zcrx_ctrl(ring_fd: RawFd, ctrl: &mut abi::ZcrxCtrl) -> io::Result<()> {
    // SAFETY: `ctrl` is a writable `struct zcrx_ctrl` living across the call; the kernel
    // copies it back (the export arm carries the new fd).
    unsafe {
        io_uring_register(
            ring_fd,
            abi::IORING_REGISTER_ZCRX_CTRL,
            ctrl as *mut abi::ZcrxCtrl as *mut libc::c_void,
            0,
        )
    }
    .map(drop)
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as usize
    } else {
        4096
    }
}
