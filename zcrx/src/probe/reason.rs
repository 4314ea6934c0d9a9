//! Why ZCRX (or io_uring itself) cannot be used, each with the fix a person can apply.
//!
//! The kernel answers every refused registration with a bare errno, and the same errno
//! means different things at different layers (`EOPNOTSUPP` is "no parent device" on
//! loopback but "no queue-management ops" on virtio_net). The probe turns the errno plus
//! what it knows about the interface into one of these named reasons.

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};
use std::fmt;

/// The symbolic name of an errno value (`EOPNOTSUPP`), or `errno N` for rare ones.
pub fn errno_name(errno: i32) -> String {
    let name = match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EINTR => "EINTR",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::ENODEV => "ENODEV",
        libc::EINVAL => "EINVAL",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::ENOSPC => "ENOSPC",
        libc::ERANGE => "ERANGE",
        libc::ENOSYS => "ENOSYS",
        libc::ENODATA => "ENODATA",
        libc::EPROTONOSUPPORT => "EPROTONOSUPPORT",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        _ => return format!("errno {errno}"),
    };
    name.to_owned()
}

/// Why io_uring cannot be used at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IoUringBlock {
    /// `kernel.io_uring_disabled` is 1 or 2 (Linux 6.6+), so `io_uring_setup` gets `EPERM`.
    DisabledBySysctl {
        /// The sysctl's value.
        value: u32,
    },
    /// `EPERM` with the sysctl at 0: a seccomp filter or container policy blocks the syscall.
    BlockedByPolicy,
    /// `ENOSYS`: the kernel lacks io_uring or a filter hides the syscall.
    NotAvailable,
    /// Any other setup failure.
    Other {
        /// The errno `io_uring_setup` returned.
        errno: i32,
    },
}

impl IoUringBlock {
    /// The errno behind this block.
    pub fn errno(&self) -> i32 {
        match self {
            Self::DisabledBySysctl { .. } | Self::BlockedByPolicy => libc::EPERM,
            Self::NotAvailable => libc::ENOSYS,
            Self::Other { errno } => *errno,
        }
    }

    /// What to do about it.
    pub fn fix(&self) -> String {
        match self {
            Self::DisabledBySysctl { .. } => "sysctl -w kernel.io_uring_disabled=0".to_owned(),
            Self::BlockedByPolicy => "allow io_uring_setup/io_uring_enter/io_uring_register in \
                the seccomp profile (e.g. docker --security-opt seccomp=<profile>) or run outside \
                the restricted container"
                .to_owned(),
            Self::NotAvailable => "use a kernel built with CONFIG_IO_URING=y (Linux 6.15+ for \
                zero-copy receive) and make sure no syscall filter hides io_uring"
                .to_owned(),
            Self::Other { .. } => "check the kernel log and resource limits (RLIMIT_MEMLOCK, \
                open files) of this process"
                .to_owned(),
        }
    }
}

impl fmt::Display for IoUringBlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DisabledBySysctl { value } => write!(
                f,
                "io_uring is disabled by sysctl kernel.io_uring_disabled={value}"
            )?,
            Self::BlockedByPolicy => write!(f, "io_uring is blocked by seccomp/container policy")?,
            Self::NotAvailable => write!(
                f,
                "kernel built without io_uring or the syscall is filtered"
            )?,
            Self::Other { .. } => write!(f, "io_uring_setup failed")?,
        }
        write!(f, " ({})", errno_name(self.errno()))
    }
}

/// Why a ZCRX instance cannot be bound to an interface queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// io_uring itself is unusable.
    IoUringUnavailable(IoUringBlock),
    /// The kernel predates the needed io_uring support.
    KernelTooOld {
        /// The first kernel with the needed support.
        needs: &'static str,
        /// The errno that gave it away.
        errno: i32,
    },
    /// `EOPNOTSUPP` even for a nonexistent interface: the kernel was built without
    /// `CONFIG_IO_URING_ZCRX` and answers every registration with the stub's error.
    KernelWithoutZcrx,
    /// `EPERM`: registration needs `CAP_NET_ADMIN` in the initial user namespace.
    NoCapNetAdmin,
    /// `ENODEV`: no such interface in this network namespace.
    NoSuchInterface {
        /// The interface asked for.
        interface: String,
    },
    /// `EOPNOTSUPP` on a device without a parent (DMA) device: loopback, veth, bridge, ifb.
    NoParentDevice,
    /// `EOPNOTSUPP` on a real device: the driver has no queue-management ops.
    DriverLacksQueueManagement {
        /// The driver bound to the parent device (`unknown` if sysfs does not say).
        driver: String,
    },
    /// `ERANGE`: the queue index is not below the number of active receive queues.
    QueueOutOfRange {
        /// The interface.
        interface: String,
        /// The queue asked for.
        queue: u32,
        /// The receive queues the interface has.
        queues: u32,
    },
    /// `EINVAL` from the net core: header/data split is not on, or its threshold is not 0.
    /// The two cannot be told apart without ethtool's netlink family, so one variant
    /// names both settings.
    HeaderSplitOffOrHdsThresh {
        /// The interface.
        interface: String,
    },
    /// `EEXIST` with an XDP program attached to the device.
    XdpAttached {
        /// The interface.
        interface: String,
    },
    /// `EEXIST`/`EBUSY`: the queue already has a memory provider (devmem, another ZCRX),
    /// is used by AF_XDP, or is leased to a virtual device.
    QueueBusy {
        /// `EEXIST` or `EBUSY`.
        errno: i32,
    },
    /// `ENODATA`: the queue restarted but its page pool did not adopt the provider; the
    /// driver's page pools are not memory-provider aware (netdevsim, for example).
    PagePoolNotProviderAware {
        /// The driver.
        driver: String,
    },
    /// `ENOMEM`: the area could not be accounted against `RLIMIT_MEMLOCK`.
    MemlockLimit,
    /// Anything the probe has no name for.
    Other {
        /// The errno.
        errno: i32,
    },
}

impl Reason {
    /// A stable machine-readable name of the variant.
    pub fn name(&self) -> &'static str {
        match self {
            Self::IoUringUnavailable(_) => "IoUringUnavailable",
            Self::KernelTooOld { .. } => "KernelTooOld",
            Self::KernelWithoutZcrx => "KernelWithoutZcrx",
            Self::NoCapNetAdmin => "NoCapNetAdmin",
            Self::NoSuchInterface { .. } => "NoSuchInterface",
            Self::NoParentDevice => "NoParentDevice",
            Self::DriverLacksQueueManagement { .. } => "DriverLacksQueueManagement",
            Self::QueueOutOfRange { .. } => "QueueOutOfRange",
            Self::HeaderSplitOffOrHdsThresh { .. } => "HeaderSplitOffOrHdsThresh",
            Self::XdpAttached { .. } => "XdpAttached",
            Self::QueueBusy { .. } => "QueueBusy",
            Self::PagePoolNotProviderAware { .. } => "PagePoolNotProviderAware",
            Self::MemlockLimit => "MemlockLimit",
            Self::Other { .. } => "Other",
        }
    }

    /// The errno the kernel answered with.
    pub fn errno(&self) -> i32 {
        match self {
            Self::IoUringUnavailable(block) => block.errno(),
            Self::KernelTooOld { errno, .. }
            | Self::QueueBusy { errno }
            | Self::Other { errno } => *errno,
            Self::KernelWithoutZcrx
            | Self::NoParentDevice
            | Self::DriverLacksQueueManagement { .. } => libc::EOPNOTSUPP,
            Self::NoCapNetAdmin => libc::EPERM,
            Self::NoSuchInterface { .. } => libc::ENODEV,
            Self::QueueOutOfRange { .. } => libc::ERANGE,
            Self::HeaderSplitOffOrHdsThresh { .. } => libc::EINVAL,
            Self::XdpAttached { .. } => libc::EEXIST,
            Self::PagePoolNotProviderAware { .. } => libc::ENODATA,
            Self::MemlockLimit => libc::ENOMEM,
        }
    }

    /// What wrong, without the errno suffix `Display` adds.
    fn message(&self) -> String {
        match self {
            Self::IoUringUnavailable(block) => format!("io_uring unavailable: {block}"),
            Self::KernelTooOld { needs, .. } => {
                format!("kernel too old for zero-copy receive (needs {needs})")
            }
            Self::KernelWithoutZcrx => {
                "kernel built without CONFIG_IO_URING_ZCRX (even a nonexistent interface gets \
                 EOPNOTSUPP)"
                    .to_owned()
            }
            Self::NoCapNetAdmin => {
                "registration needs CAP_NET_ADMIN in the initial user namespace".to_owned()
            }
            Self::NoSuchInterface { interface } => {
                format!(
                    "no interface {interface} in this network namespace, or its device is closed"
                )
            }
            Self::NoParentDevice => "no parent (DMA) device".to_owned(),
            Self::DriverLacksQueueManagement { driver } => format!(
                "driver {driver} lacks queue management (no queue-management ops, or it refused \
                 the queue restart)"
            ),
            Self::QueueOutOfRange {
                interface,
                queue,
                queues,
            } => format!("queue {queue} is out of range: {interface} has {queues} rx queues"),
            Self::HeaderSplitOffOrHdsThresh { interface } => format!(
                "{interface} rejected the queue: header/data split (tcp-data-split) is off or \
                 hds-thresh is not 0"
            ),
            Self::XdpAttached { interface } => {
                format!("an XDP program is attached to {interface}")
            }
            Self::QueueBusy { .. } => "queue busy: already bound to a memory provider (devmem or \
                another ZCRX), used by AF_XDP, or leased"
                .to_owned(),
            Self::PagePoolNotProviderAware { driver } => format!(
                "driver {driver} restarted the queue but its page pool did not adopt the \
                 zero-copy memory provider"
            ),
            Self::MemlockLimit => "the area exceeds the locked-memory limit".to_owned(),
            Self::Other { .. } => "registration failed".to_owned(),
        }
    }

    /// What to do about it.
    pub fn fix(&self) -> String {
        match self {
            Self::IoUringUnavailable(block) => block.fix(),
            Self::KernelTooOld { needs, .. } => {
                format!("upgrade to {needs} or newer built with CONFIG_IO_URING_ZCRX=y")
            }
            Self::KernelWithoutZcrx => "use a kernel built with CONFIG_IO_URING_ZCRX=y".to_owned(),
            Self::NoCapNetAdmin => "run as root or grant CAP_NET_ADMIN (setcap cap_net_admin+ep, \
                AmbientCapabilities=CAP_NET_ADMIN); rootless containers cannot, namespaced \
                capabilities are not enough"
                .to_owned(),
            Self::NoSuchInterface { .. } => {
                "check the name with `ip link` (it must exist in this network namespace and be up)"
                    .to_owned()
            }
            Self::NoParentDevice => "loopback/veth/bridge/ifb have no DMA device; use a \
                physical NIC queue, or ZCRX_REG_NODEV on Linux 7.1+ for testing"
                .to_owned(),
            Self::DriverLacksQueueManagement { driver } => format!(
                "driver {driver} has no queue-management ops; use a NIC such as bnxt, mlx5, gve, \
                 fbnic (on mlx5 also disable XDP, PTP and HTB)"
            ),
            Self::QueueOutOfRange {
                interface, queue, ..
            } => format!(
                "use a queue below the count, or raise it: ethtool -L {interface} combined {}",
                queue.saturating_add(1).max(2)
            ),
            Self::HeaderSplitOffOrHdsThresh { interface } => {
                format!("ethtool -G {interface} tcp-data-split on hds-thresh 0")
            }
            Self::XdpAttached { interface } => {
                format!("detach XDP first: ip link set dev {interface} xdp off")
            }
            Self::QueueBusy { .. } => "pick another queue, or stop the AF_XDP socket / devmem \
                binding / other ZCRX instance holding this one"
                .to_owned(),
            Self::PagePoolNotProviderAware { .. } => "use a NIC whose driver supports memory \
                providers (bnxt, mlx5, gve, fbnic); netdevsim cannot be used"
                .to_owned(),
            Self::MemlockLimit => {
                "raise RLIMIT_MEMLOCK: ulimit -l / LimitMEMLOCK=, or CAP_IPC_LOCK".to_owned()
            }
            Self::Other { errno } => format!(
                "unexpected {}: check dmesg and the preconditions in Documentation/networking/\
                 iou-zcrx.rst",
                errno_name(*errno)
            ),
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // The block already names its errno.
            Self::IoUringUnavailable(block) => write!(f, "io_uring unavailable: {block}"),
            _ => write!(f, "{} ({})", self.message(), errno_name(self.errno())),
        }
    }
}

impl Serialize for Reason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Reason", 5)?;
        s.serialize_field("name", self.name())?;
        s.serialize_field("errno", &self.errno())?;
        s.serialize_field("errno_name", &errno_name(self.errno()))?;
        s.serialize_field("message", &self.to_string())?;
        s.serialize_field("fix", &self.fix())?;
        s.end()
    }
}

impl Serialize for IoUringBlock {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let name = match self {
            Self::DisabledBySysctl { .. } => "DisabledBySysctl",
            Self::BlockedByPolicy => "BlockedByPolicy",
            Self::NotAvailable => "NotAvailable",
            Self::Other { .. } => "Other",
        };
        let mut s = serializer.serialize_struct("IoUringBlock", 5)?;
        s.serialize_field("name", name)?;
        s.serialize_field("errno", &self.errno())?;
        s.serialize_field("errno_name", &errno_name(self.errno()))?;
        s.serialize_field("message", &self.to_string())?;
        s.serialize_field("fix", &self.fix())?;
        s.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_names() {
        assert_eq!(errno_name(libc::EOPNOTSUPP), "EOPNOTSUPP");
        assert_eq!(errno_name(libc::ERANGE), "ERANGE");
        assert_eq!(errno_name(4242), "errno 4242");
    }

    #[test]
    fn every_reason_has_a_distinct_name_and_a_fix() {
        let all = [
            Reason::IoUringUnavailable(IoUringBlock::NotAvailable),
            Reason::KernelTooOld {
                needs: "Linux 6.15",
                errno: libc::EINVAL,
            },
            Reason::KernelWithoutZcrx,
            Reason::NoCapNetAdmin,
            Reason::NoSuchInterface {
                interface: "x".into(),
            },
            Reason::NoParentDevice,
            Reason::DriverLacksQueueManagement { driver: "d".into() },
            Reason::QueueOutOfRange {
                interface: "x".into(),
                queue: 1,
                queues: 1,
            },
            Reason::HeaderSplitOffOrHdsThresh {
                interface: "x".into(),
            },
            Reason::XdpAttached {
                interface: "x".into(),
            },
            Reason::QueueBusy { errno: libc::EBUSY },
            Reason::PagePoolNotProviderAware { driver: "d".into() },
            Reason::MemlockLimit,
            Reason::Other { errno: libc::EIO },
        ];
        let mut names: Vec<&str> = all.iter().map(Reason::name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len());
        for r in &all {
            assert!(r.fix().len() > 10, "{} has no fix", r.name());
            assert!(
                r.to_string().contains(&errno_name(r.errno())),
                "{r} lacks its errno"
            );
        }
    }

    #[test]
    fn io_uring_blocks_name_their_fix() {
        let b = IoUringBlock::DisabledBySysctl { value: 1 };
        assert_eq!(
            b.to_string(),
            "io_uring is disabled by sysctl kernel.io_uring_disabled=1 (EPERM)"
        );
        assert_eq!(b.fix(), "sysctl -w kernel.io_uring_disabled=0");
        let b = IoUringBlock::BlockedByPolicy;
        assert!(b.to_string().contains("seccomp/container policy (EPERM)"));
        assert!(b.fix().contains("seccomp"));
        let b = IoUringBlock::NotAvailable;
        assert!(b
            .to_string()
            .contains("kernel built without io_uring or the syscall is filtered (ENOSYS)"));
        let json = serde_json::to_value(&b).unwrap();
        assert_eq!(json["name"], "NotAvailable");
        assert_eq!(json["errno_name"], "ENOSYS");
    }
}
