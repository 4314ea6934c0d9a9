//! Kernel feature detection: what io_uring and ZCRX can do on this machine, and why not.
//!
//! [`capabilities`] probes once per process and caches the answer. Every probe is a
//! real call into the kernel (ring setup with each flag, the opcode probe, the blind
//! QUERY, and one actual ZCRX registration per interface) because ZCRX refusals come
//! from driver and net-core checks no static query exposes. Failing syscalls become data
//! in the report; nothing here panics on a kernel answer.
//!
//! Registering a queue of a NIC that supports ZCRX restarts that queue twice (bind,
//! release), so run the probe at startup or from `zerorx doctor`, not on a hot
//! production path.

mod interface;
mod mode;
pub mod names;
mod query;
mod reason;
mod register;
mod ring;
mod verdict;

pub use mode::{decide_receive_mode, ReceiveMode, ReceiveModeDecision};
pub use query::{zcrx_features, QueryOpcodesAnswer, QueryReport, ZcrxQueryAnswer};
pub use reason::{errno_name, IoUringBlock, Reason};
pub use ring::{
    incremental_buffers, BufferRingSupport, IoUringStatus, OpcodeSupport, SetupFlagSupport,
};
pub use verdict::ZcrxVerdict;

use crate::ZcrxFeatures;
use serde::Serialize;
use std::sync::OnceLock;
use verdict::{KernelFacts, QueueFacts};

/// Everything the probe found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Capabilities {
    /// `uname -r`.
    pub kernel_release: String,
    /// System page size in bytes.
    pub page_size: usize,
    /// Whether io_uring works at all.
    pub io_uring: IoUringStatus,
    /// Setup flags accepted by `io_uring_setup`.
    pub setup_flags: Vec<SetupFlagSupport>,
    /// Opcodes from `IORING_REGISTER_PROBE`.
    pub opcodes: Vec<OpcodeSupport>,
    /// Why the opcode probe failed, if it did.
    pub opcode_probe_error: Option<String>,
    /// Provided-buffer ring features.
    pub buffer_rings: BufferRingSupport,
    /// `IORING_REGISTER_QUERY` results.
    pub query: QueryReport,
    /// ZCRX features for the pools.
    pub zcrx: ZcrxFeatures,
    /// Whether the kernel has `CONFIG_IO_URING_ZCRX` (`None`: could not tell).
    pub zcrx_in_kernel: Option<bool>,
    /// Every interface and whether its queue 0 can take a ZCRX instance.
    pub interfaces: Vec<InterfaceReport>,
    /// The receive mode to start in.
    pub receive_mode: ReceiveModeDecision,
    /// `ZCRX_REG_NODEV` is available, so device-less instances can test the ZCRX path
    /// on loopback (Linux 7.1+).
    pub nodev_testing: bool,
}

/// One network interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct InterfaceReport {
    /// Interface name.
    pub name: String,
    /// Interface index.
    pub ifindex: u32,
    /// Driver of the parent device.
    pub driver: Option<String>,
    /// Has a parent (DMA) device.
    pub has_parent_device: bool,
    /// Number of receive queues.
    pub rx_queues: u32,
    /// Whether queue 0 accepted a ZCRX registration.
    pub queue0: ZcrxVerdict,
}

impl Capabilities {
    /// Whether the named opcode (`"RECV_ZC"`) is supported; `None` if not probed.
    pub fn opcode(&self, name: &str) -> Option<bool> {
        self.opcodes
            .iter()
            .find(|o| o.name == name)
            .map(|o| o.supported)
    }

    /// Whether the named setup flag (`"DEFER_TASKRUN"`) was accepted; `None` if not probed.
    pub fn setup_flag(&self, name: &str) -> Option<bool> {
        self.setup_flags
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.supported)
    }

    /// The report of the named interface.
    pub fn interface(&self, name: &str) -> Option<&InterfaceReport> {
        self.interfaces.iter().find(|i| i.name == name)
    }

    fn detect() -> Self {
        let io_uring = ring::check_usable();
        let setup_flags = ring::probe_setup_flags();
        let features = ring::probe_ring_features();
        let query = query::run_query();
        let recv_zc = features.recv_zc();
        let zcrx = zcrx_features(recv_zc, query.present, query.zcrx.as_ref());
        let kernel = kernel_facts(&io_uring, recv_zc);
        let interfaces: Vec<InterfaceReport> = interface::list()
            .into_iter()
            .map(|info| {
                let queue0 = verdict_for(&info, 0, &kernel);
                InterfaceReport {
                    name: info.name,
                    ifindex: info.ifindex,
                    driver: info.driver,
                    has_parent_device: info.has_parent,
                    rx_queues: info.rx_queues,
                    queue0,
                }
            })
            .collect();
        Capabilities {
            kernel_release: kernel_release(),
            page_size: crate::sys::page_size(),
            io_uring,
            setup_flags,
            opcodes: features.opcodes,
            opcode_probe_error: features.probe_error,
            buffer_rings: features.buffer_rings,
            receive_mode: decide_receive_mode(&interfaces),
            nodev_testing: zcrx.nodev,
            query,
            zcrx,
            zcrx_in_kernel: kernel.zcrx_in_kernel,
            interfaces,
        }
    }
}

/// The process-wide capability report, probed on first use.
pub fn capabilities() -> &'static Capabilities {
    CAPS.get_or_init(Capabilities::detect)
}

/// The cache behind [`capabilities`]; [`probe_queue`] peeks at it without forcing a probe.
static CAPS: OnceLock<Capabilities> = OnceLock::new();

/// Tries a ZCRX registration on `queue` of `interface` now (not cached).
pub fn probe_queue(interface: &str, queue: u32) -> ZcrxVerdict {
    let Some(info) = interface::read(interface) else {
        return ZcrxVerdict::Unavailable(Reason::NoSuchInterface {
            interface: interface.to_owned(),
        });
    };
    let kernel = match CAPS.get() {
        Some(caps) => KernelFacts {
            io_uring: caps.io_uring.problem.clone(),
            recv_zc: caps.zcrx.recv_zc,
            zcrx_in_kernel: caps.zcrx_in_kernel,
        },
        None => kernel_facts(&ring::check_usable(), ring::probe_ring_features().recv_zc()),
    };
    verdict_for(&info, queue, &kernel)
}

fn kernel_facts(io_uring: &IoUringStatus, recv_zc: bool) -> KernelFacts {
    let zcrx_in_kernel = if io_uring.usable {
        register::zcrx_in_kernel(recv_zc)
    } else {
        None
    };
    KernelFacts {
        io_uring: io_uring.problem.clone(),
        recv_zc,
        zcrx_in_kernel,
    }
}

fn verdict_for(info: &interface::InterfaceInfo, queue: u32, kernel: &KernelFacts) -> ZcrxVerdict {
    if let Some(block) = &kernel.io_uring {
        return ZcrxVerdict::Unavailable(Reason::IoUringUnavailable(block.clone()));
    }
    let facts = QueueFacts {
        interface: &info.name,
        queue,
        has_parent: info.has_parent,
        driver: info.driver.as_deref(),
        rx_queues: info.rx_queues,
        xdp_attached: None,
    };
    verdict::judge(register::try_register(info.ifindex, queue), kernel, facts)
}

/// `uname -r`, or `unknown` if uname fails.
fn kernel_release() -> String {
    // SAFETY: `utsname` is plain old data; all-zero is a valid value to pass to uname.
    let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `uts` is a valid, writable utsname for the duration of the call.
    if unsafe { libc::uname(&mut uts) } != 0 {
        return "unknown".to_owned();
    }
    // SAFETY: on success uname stores NUL-terminated strings in every field.
    let release = unsafe { std::ffi::CStr::from_ptr(uts.release.as_ptr()) };
    release.to_string_lossy().into_owned()
}
