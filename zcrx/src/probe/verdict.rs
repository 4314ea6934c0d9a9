//! Turning a registration attempt into a verdict with a named reason.

use super::interface::xdp_attached;
use super::reason::{IoUringBlock, Reason};
use super::register::AttemptError;
use super::ring::{block_from_errno, errno_of, read_disabled_sysctl};
use serde::Serialize;

/// The first kernel with `IORING_OP_RECV_ZC` and `IORING_REGISTER_ZCRX_IFQ`.
const ZCRX_KERNEL: &str = "Linux 6.15";

/// Can a ZCRX instance be bound to this queue?
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", content = "reason", rename_all = "snake_case")]
pub enum ZcrxVerdict {
    /// A real registration succeeded (and was released again).
    Possible,
    /// It cannot, and why.
    Unavailable(Reason),
}

impl ZcrxVerdict {
    /// True for [`ZcrxVerdict::Possible`].
    pub fn is_possible(&self) -> bool {
        matches!(self, Self::Possible)
    }

    /// The reason, when unavailable.
    pub fn reason(&self) -> Option<&Reason> {
        match self {
            Self::Possible => None,
            Self::Unavailable(reason) => Some(reason),
        }
    }
}

/// What the probe knows about the kernel when it judges a queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KernelFacts {
    /// Why io_uring is unusable, if it is.
    pub(crate) io_uring: Option<IoUringBlock>,
    /// `IORING_OP_RECV_ZC` is supported.
    pub(crate) recv_zc: bool,
    /// See `register::zcrx_in_kernel`.
    pub(crate) zcrx_in_kernel: Option<bool>,
}

/// What the probe knows about the queue it tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueueFacts<'a> {
    pub(crate) interface: &'a str,
    pub(crate) queue: u32,
    pub(crate) has_parent: bool,
    pub(crate) driver: Option<&'a str>,
    pub(crate) rx_queues: u32,
    /// Only looked up for `EEXIST`; `None` if unknown.
    pub(crate) xdp_attached: Option<bool>,
}

/// Names a failed `IORING_REGISTER_ZCRX_IFQ` from its errno and the surrounding facts.
pub(crate) fn classify(errno: i32, kernel: &KernelFacts, q: &QueueFacts<'_>) -> Reason {
    // Kernels before 6.15 do not know register opcode 32 and reject it generically.
    if !kernel.recv_zc && matches!(errno, libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP) {
        return Reason::KernelTooOld {
            needs: ZCRX_KERNEL,
            errno,
        };
    }
    let driver = || q.driver.unwrap_or("unknown").to_owned();
    match errno {
        libc::EPERM => Reason::NoCapNetAdmin,
        libc::EOPNOTSUPP if kernel.zcrx_in_kernel == Some(false) => Reason::KernelWithoutZcrx,
        libc::EOPNOTSUPP if !q.has_parent => Reason::NoParentDevice,
        libc::EOPNOTSUPP => Reason::DriverLacksQueueManagement { driver: driver() },
        libc::ERANGE => Reason::QueueOutOfRange {
            interface: q.interface.to_owned(),
            queue: q.queue,
            queues: q.rx_queues,
        },
        // The ring flags are right by construction, so a device-level EINVAL is the
        // net core's header-split check; without a device it is something else.
        libc::EINVAL if q.has_parent => Reason::HeaderSplitOffOrHdsThresh {
            interface: q.interface.to_owned(),
        },
        libc::EEXIST if q.xdp_attached == Some(true) => Reason::XdpAttached {
            interface: q.interface.to_owned(),
        },
        libc::EEXIST | libc::EBUSY => Reason::QueueBusy { errno },
        libc::ENODEV => Reason::NoSuchInterface {
            interface: q.interface.to_owned(),
        },
        libc::ENODATA => Reason::PagePoolNotProviderAware { driver: driver() },
        libc::ENOMEM => Reason::MemlockLimit,
        _ => Reason::Other { errno },
    }
}

/// Names a failure to create the ZCRX ring itself.
pub(crate) fn classify_ring_error(errno: i32, sysctl: Option<u32>) -> Reason {
    match errno {
        // DEFER_TASKRUN (6.1) or CQE32 unknown: far older than ZCRX.
        libc::EINVAL => Reason::KernelTooOld {
            needs: ZCRX_KERNEL,
            errno,
        },
        _ => Reason::IoUringUnavailable(block_from_errno(errno, sysctl)),
    }
}

/// The verdict for one attempt's outcome, looking up the XDP state only for `EEXIST`.
pub(crate) fn judge(
    outcome: Result<(), AttemptError>,
    kernel: &KernelFacts,
    queue: QueueFacts<'_>,
) -> ZcrxVerdict {
    match outcome {
        Ok(()) => ZcrxVerdict::Possible,
        Err(AttemptError::Ring(err)) => {
            ZcrxVerdict::Unavailable(classify_ring_error(errno_of(&err), read_disabled_sysctl()))
        }
        Err(AttemptError::Memory(err)) => ZcrxVerdict::Unavailable(Reason::Other {
            errno: errno_of(&err),
        }),
        Err(AttemptError::Register(errno)) => {
            let queue = QueueFacts {
                xdp_attached: if errno == libc::EEXIST {
                    xdp_attached(queue.interface)
                } else {
                    None
                },
                ..queue
            };
            ZcrxVerdict::Unavailable(classify(errno, kernel, &queue))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL_6_18: KernelFacts = KernelFacts {
        io_uring: None,
        recv_zc: true,
        zcrx_in_kernel: Some(true),
    };

    fn nic(driver: &'static str) -> QueueFacts<'static> {
        QueueFacts {
            interface: "eth0",
            queue: 0,
            has_parent: true,
            driver: Some(driver),
            rx_queues: 4,
            xdp_attached: None,
        }
    }

    fn loopback() -> QueueFacts<'static> {
        QueueFacts {
            interface: "lo",
            queue: 0,
            has_parent: false,
            driver: None,
            rx_queues: 1,
            xdp_attached: None,
        }
    }

    #[test]
    fn eperm_is_missing_cap_net_admin() {
        let r = classify(libc::EPERM, &KERNEL_6_18, &nic("mlx5_core"));
        assert_eq!(r, Reason::NoCapNetAdmin);
        assert!(r.to_string().contains("EPERM"));
        assert!(r.fix().contains("root"));
        assert!(r.fix().contains("rootless containers cannot"));
    }

    #[test]
    fn eopnotsupp_depends_on_parent_device_and_kernel_config() {
        let r = classify(libc::EOPNOTSUPP, &KERNEL_6_18, &loopback());
        assert_eq!(r, Reason::NoParentDevice);
        assert!(r.to_string().contains("EOPNOTSUPP"));
        assert!(r.fix().contains("ZCRX_REG_NODEV on Linux 7.1+"));
        assert!(r.fix().contains("physical NIC"));

        let r = classify(libc::EOPNOTSUPP, &KERNEL_6_18, &nic("virtio_net"));
        assert_eq!(
            r,
            Reason::DriverLacksQueueManagement {
                driver: "virtio_net".into()
            }
        );
        assert!(r.to_string().contains("virtio_net lacks queue management"));
        assert!(r.fix().contains("bnxt, mlx5, gve, fbnic"));

        let unknown_driver = QueueFacts {
            driver: None,
            ..nic("x")
        };
        let r = classify(libc::EOPNOTSUPP, &KERNEL_6_18, &unknown_driver);
        assert_eq!(
            r,
            Reason::DriverLacksQueueManagement {
                driver: "unknown".into()
            }
        );

        let stub = KernelFacts {
            zcrx_in_kernel: Some(false),
            ..KERNEL_6_18
        };
        let r = classify(libc::EOPNOTSUPP, &stub, &nic("bnxt_en"));
        assert_eq!(r, Reason::KernelWithoutZcrx);
        assert!(r.fix().contains("CONFIG_IO_URING_ZCRX=y"));
    }

    #[test]
    fn erange_is_queue_out_of_range_with_an_ethtool_fix() {
        let q = QueueFacts {
            queue: 7,
            ..nic("bnxt_en")
        };
        let r = classify(libc::ERANGE, &KERNEL_6_18, &q);
        assert_eq!(
            r,
            Reason::QueueOutOfRange {
                interface: "eth0".into(),
                queue: 7,
                queues: 4
            }
        );
        assert!(r.to_string().contains("ERANGE"));
        assert!(r.to_string().contains("4 rx queues"));
        assert!(r.fix().contains("ethtool -L eth0 combined 8"));
    }

    #[test]
    fn einval_on_a_device_is_header_split() {
        let r = classify(libc::EINVAL, &KERNEL_6_18, &nic("bnxt_en"));
        assert_eq!(
            r,
            Reason::HeaderSplitOffOrHdsThresh {
                interface: "eth0".into()
            }
        );
        assert!(r.to_string().contains("tcp-data-split"));
        assert!(r.to_string().contains("hds-thresh"));
        assert!(r
            .fix()
            .contains("ethtool -G eth0 tcp-data-split on hds-thresh 0"));
        // Without a device the net core never ran: not a header-split problem.
        let r = classify(libc::EINVAL, &KERNEL_6_18, &loopback());
        assert_eq!(
            r,
            Reason::Other {
                errno: libc::EINVAL
            }
        );
    }

    #[test]
    fn eexist_and_ebusy_split_by_xdp() {
        let with_xdp = QueueFacts {
            xdp_attached: Some(true),
            ..nic("mlx5_core")
        };
        let r = classify(libc::EEXIST, &KERNEL_6_18, &with_xdp);
        assert_eq!(
            r,
            Reason::XdpAttached {
                interface: "eth0".into()
            }
        );
        assert!(r.fix().contains("xdp off"));
        assert!(r.to_string().contains("EEXIST"));

        for xdp in [Some(false), None] {
            let q = QueueFacts {
                xdp_attached: xdp,
                ..nic("mlx5_core")
            };
            let r = classify(libc::EEXIST, &KERNEL_6_18, &q);
            assert_eq!(
                r,
                Reason::QueueBusy {
                    errno: libc::EEXIST
                }
            );
        }
        let r = classify(libc::EBUSY, &KERNEL_6_18, &nic("mlx5_core"));
        assert_eq!(r, Reason::QueueBusy { errno: libc::EBUSY });
        assert!(r.to_string().contains("EBUSY"));
        assert!(r.to_string().contains("AF_XDP"));
    }

    #[test]
    fn enodev_enodata_enomem_and_others() {
        let r = classify(libc::ENODEV, &KERNEL_6_18, &nic("bnxt_en"));
        assert_eq!(
            r,
            Reason::NoSuchInterface {
                interface: "eth0".into()
            }
        );
        assert!(r.to_string().contains("ENODEV"));
        assert!(r.fix().contains("ip link"));

        let r = classify(libc::ENODATA, &KERNEL_6_18, &nic("netdevsim"));
        assert_eq!(
            r,
            Reason::PagePoolNotProviderAware {
                driver: "netdevsim".into()
            }
        );
        assert!(r.fix().contains("netdevsim cannot be used"));

        let r = classify(libc::ENOMEM, &KERNEL_6_18, &nic("bnxt_en"));
        assert_eq!(r, Reason::MemlockLimit);
        assert!(r.fix().contains("ulimit -l"));
        assert!(r.fix().contains("CAP_IPC_LOCK"));

        let r = classify(libc::EFAULT, &KERNEL_6_18, &nic("bnxt_en"));
        assert_eq!(
            r,
            Reason::Other {
                errno: libc::EFAULT
            }
        );
        assert!(r.to_string().contains("EFAULT"));
        assert!(r.fix().contains("EFAULT"));
    }

    #[test]
    fn a_kernel_without_recv_zc_is_too_old() {
        let old = KernelFacts {
            recv_zc: false,
            zcrx_in_kernel: None,
            ..KERNEL_6_18
        };
        for errno in [libc::EINVAL, libc::ENOSYS, libc::EOPNOTSUPP] {
            let r = classify(errno, &old, &nic("bnxt_en"));
            assert_eq!(
                r,
                Reason::KernelTooOld {
                    needs: "Linux 6.15",
                    errno
                }
            );
            assert!(r.to_string().contains("Linux 6.15"));
            assert!(r.fix().contains("Linux 6.15"));
        }
        // Permission problems are still permission problems on old kernels.
        assert_eq!(
            classify(libc::EPERM, &old, &nic("bnxt_en")),
            Reason::NoCapNetAdmin
        );
    }

    #[test]
    fn ring_setup_failures() {
        assert_eq!(
            classify_ring_error(libc::EINVAL, Some(0)),
            Reason::KernelTooOld {
                needs: "Linux 6.15",
                errno: libc::EINVAL
            }
        );
        let r = classify_ring_error(libc::EPERM, Some(2));
        assert_eq!(
            r,
            Reason::IoUringUnavailable(IoUringBlock::DisabledBySysctl { value: 2 })
        );
        assert!(r
            .to_string()
            .contains("disabled by sysctl kernel.io_uring_disabled=2"));
        assert!(r.fix().contains("sysctl -w kernel.io_uring_disabled=0"));
        assert_eq!(
            classify_ring_error(libc::EPERM, Some(0)),
            Reason::IoUringUnavailable(IoUringBlock::BlockedByPolicy)
        );
        assert_eq!(
            classify_ring_error(libc::EPERM, None),
            Reason::IoUringUnavailable(IoUringBlock::BlockedByPolicy)
        );
        let r = classify_ring_error(libc::ENOSYS, None);
        assert_eq!(r, Reason::IoUringUnavailable(IoUringBlock::NotAvailable));
        assert!(r.to_string().contains("ENOSYS"));
        assert_eq!(
            classify_ring_error(libc::EMFILE, None),
            Reason::IoUringUnavailable(IoUringBlock::Other {
                errno: libc::EMFILE
            })
        );
    }

    #[test]
    fn verdicts_serialize_with_name_errno_message_and_fix() {
        let v = ZcrxVerdict::Unavailable(Reason::DriverLacksQueueManagement {
            driver: "virtio_net".into(),
        });
        let json = serde_json::to_value(&v).unwrap();
        assert_eq!(json["verdict"], "unavailable");
        assert_eq!(json["reason"]["name"], "DriverLacksQueueManagement");
        assert_eq!(json["reason"]["errno"], libc::EOPNOTSUPP);
        assert_eq!(json["reason"]["errno_name"], "EOPNOTSUPP");
        assert!(json["reason"]["message"]
            .as_str()
            .unwrap()
            .contains("virtio_net"));
        assert!(json["reason"]["fix"].as_str().unwrap().contains("mlx5"));
        let json = serde_json::to_value(ZcrxVerdict::Possible).unwrap();
        assert_eq!(json["verdict"], "possible");
    }
}
