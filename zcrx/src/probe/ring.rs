//! Is io_uring usable, which setup flags and opcodes does the kernel accept, and does it
//! have provided-buffer rings (plain, bundle, incremental)?

use super::reason::{errno_name, IoUringBlock};
use crate::mem::{Backing, Mapping};
use crate::{abi, sys};
use io_uring::{opcode, types, IoUring, Probe};
use serde::Serialize;
use std::io;
use std::sync::OnceLock;

/// Whether io_uring works at all in this process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IoUringStatus {
    /// A small ring could be created.
    pub usable: bool,
    /// Why not, when it could not.
    pub problem: Option<IoUringBlock>,
}

/// One `IORING_SETUP_*` combination and whether `io_uring_setup` accepted it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SetupFlagSupport {
    /// The flag tested (`DEFER_TASKRUN` is tested together with `SINGLE_ISSUER`, which it needs).
    pub name: &'static str,
    /// The exact flags passed to `io_uring_setup`.
    pub flags: u32,
    /// The kernel created the ring.
    pub supported: bool,
    /// The errno name when it did not.
    pub error: Option<String>,
}

/// One opcode and whether `IORING_REGISTER_PROBE` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpcodeSupport {
    /// `IORING_OP_*` name without the prefix.
    pub name: &'static str,
    /// The opcode number.
    pub opcode: u8,
    /// The kernel supports it.
    pub supported: bool,
}

/// Provided-buffer ring features.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct BufferRingSupport {
    /// `IORING_REGISTER_PBUF_RING` accepted a ring (Linux 5.19).
    pub provided_ring: bool,
    /// `IORING_FEAT_RECVSEND_BUNDLE` (Linux 6.10).
    pub bundle: bool,
    /// `IOU_PBUF_RING_INC` accepted, incrementally consumed buffers (Linux 6.12).
    pub incremental: bool,
}

/// What the opcode probe ring found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RingFeatures {
    /// The opcodes the runtime cares about.
    pub opcodes: Vec<OpcodeSupport>,
    /// Why the opcode probe failed, if it did (every opcode then reads as unsupported).
    pub probe_error: Option<String>,
    /// Provided-buffer ring features.
    pub buffer_rings: BufferRingSupport,
}

impl RingFeatures {
    /// Whether `IORING_OP_RECV_ZC` was reported supported.
    pub(crate) fn recv_zc(&self) -> bool {
        self.opcodes
            .iter()
            .any(|o| o.opcode == abi::IORING_OP_RECV_ZC && o.supported)
    }
}

/// The opcodes reported, in report order.
const OPCODES: [(&str, u8); 14] = [
    ("RECV_ZC", opcode::RecvZc::CODE),
    ("SEND_ZC", opcode::SendZc::CODE),
    ("MSG_RING", opcode::MsgRingData::CODE),
    ("ASYNC_CANCEL", opcode::AsyncCancel::CODE),
    ("ACCEPT", opcode::Accept::CODE),
    ("RECV", opcode::Recv::CODE),
    ("RECVMSG", opcode::RecvMsg::CODE),
    ("SEND", opcode::Send::CODE),
    ("SENDMSG", opcode::SendMsg::CODE),
    ("CONNECT", opcode::Connect::CODE),
    ("TIMEOUT", opcode::Timeout::CODE),
    ("POLL_ADD", opcode::PollAdd::CODE),
    ("SHUTDOWN", opcode::Shutdown::CODE),
    ("READ", opcode::Read::CODE),
];

/// The setup flag combinations tested, in report order.
const SETUP_FLAGS: [(&str, u32); 5] = [
    ("SINGLE_ISSUER", abi::setup::SINGLE_ISSUER),
    (
        "DEFER_TASKRUN",
        abi::setup::SINGLE_ISSUER | abi::setup::DEFER_TASKRUN,
    ),
    ("COOP_TASKRUN", abi::setup::COOP_TASKRUN),
    ("CQE32", abi::setup::CQE32),
    ("CQE_MIXED", abi::setup::CQE_MIXED),
];

/// The errno of an `io::Error`, or `EIO` for errors that carry none (never from syscalls).
pub(crate) fn errno_of(err: &io::Error) -> i32 {
    err.raw_os_error().unwrap_or(libc::EIO)
}

/// Creates a ring with `flags` through the raw syscall and closes it at once.
fn try_setup(flags: u32) -> io::Result<()> {
    let mut params = abi::SetupParams {
        flags,
        ..Default::default()
    };
    sys::io_uring_setup(4, &mut params).map(drop)
}

/// Tries a plain small ring and explains a failure.
pub(crate) fn check_usable() -> IoUringStatus {
    match try_setup(0) {
        Ok(()) => IoUringStatus {
            usable: true,
            problem: None,
        },
        Err(err) => IoUringStatus {
            usable: false,
            problem: Some(block_from_errno(errno_of(&err), read_disabled_sysctl())),
        },
    }
}

/// Names why `io_uring_setup` failed; `sysctl` is `kernel.io_uring_disabled` if readable.
pub(crate) fn block_from_errno(errno: i32, sysctl: Option<u32>) -> IoUringBlock {
    match (errno, sysctl) {
        (libc::EPERM, Some(value @ 1..)) => IoUringBlock::DisabledBySysctl { value },
        (libc::EPERM, _) => IoUringBlock::BlockedByPolicy,
        (libc::ENOSYS, _) => IoUringBlock::NotAvailable,
        (errno, _) => IoUringBlock::Other { errno },
    }
}

/// `kernel.io_uring_disabled` (Linux 6.6+); `None` when absent or unreadable.
pub(crate) fn read_disabled_sysctl() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Tests each setup flag by creating (and closing) a ring with it.
pub(crate) fn probe_setup_flags() -> Vec<SetupFlagSupport> {
    SETUP_FLAGS
        .iter()
        .map(|&(name, flags)| {
            let result = try_setup(flags);
            SetupFlagSupport {
                name,
                flags,
                supported: result.is_ok(),
                error: result.err().map(|e| errno_name(errno_of(&e))),
            }
        })
        .collect()
}

/// Probes opcodes and buffer-ring features on one throwaway ring.
pub(crate) fn probe_ring_features() -> RingFeatures {
    let unsupported = || {
        OPCODES.iter().map(|&(name, opcode)| OpcodeSupport {
            name,
            opcode,
            supported: false,
        })
    };
    let ring = match IoUring::new(8) {
        Ok(ring) => ring,
        Err(err) => {
            return RingFeatures {
                opcodes: unsupported().collect(),
                probe_error: Some(errno_name(errno_of(&err))),
                buffer_rings: BufferRingSupport::default(),
            }
        }
    };
    let mut probe = Probe::new();
    let (opcodes, probe_error) = match ring.submitter().register_probe(&mut probe) {
        Ok(()) => (
            OPCODES
                .iter()
                .map(|&(name, opcode)| OpcodeSupport {
                    name,
                    opcode,
                    supported: probe.is_supported(opcode),
                })
                .collect(),
            None,
        ),
        Err(err) => (unsupported().collect(), Some(errno_name(errno_of(&err)))),
    };
    let buffer_rings = BufferRingSupport {
        provided_ring: try_buf_ring(&ring, 0, 0),
        bundle: ring.params().is_feature_recvsend_bundle(),
        incremental: try_buf_ring(&ring, 1, types::IOU_PBUF_RING_INC as u16),
    };
    RingFeatures {
        opcodes,
        probe_error,
        buffer_rings,
    }
}

/// Whether the kernel accepts incrementally consumed provided-buffer rings
/// (`IOU_PBUF_RING_INC`), answered from the capability report when it exists and
/// otherwise by one throwaway ring; cached for the process. Cheap enough for
/// [`CopyPoolConfig::default`](crate::CopyPoolConfig), unlike a full
/// [`capabilities`](super::capabilities) probe (which tries every interface).
pub fn incremental_buffers() -> bool {
    static INC: OnceLock<bool> = OnceLock::new();
    *INC.get_or_init(|| match super::CAPS.get() {
        Some(caps) => caps.buffer_rings.incremental,
        None => IoUring::new(8)
            .map(|ring| try_buf_ring(&ring, 1, types::IOU_PBUF_RING_INC as u16))
            .unwrap_or(false),
    })
}

/// Registers and unregisters an 8-entry provided-buffer ring with `flags` under `bgid`.
fn try_buf_ring(ring: &IoUring, bgid: u16, flags: u16) -> bool {
    // One page holds 8 entries of 16 bytes and keeps the ring page aligned.
    let Ok(mem) = Mapping::new(sys::page_size(), Backing::Anonymous) else {
        return false;
    };
    let submitter = ring.submitter();
    // SAFETY: `mem` is a live, writable, page-aligned mapping large enough for 8 entries;
    // it is unregistered below before `mem` is unmapped, and if unregistering failed
    // the mapping is leaked instead so the kernel never sees freed memory.
    let registered =
        unsafe { submitter.register_buf_ring_with_flags(mem.as_ptr() as u64, 8, bgid, flags) };
    if registered.is_err() {
        return false;
    }
    if submitter.unregister_buf_ring(bgid).is_err() {
        std::mem::forget(mem);
    }
    true
}
