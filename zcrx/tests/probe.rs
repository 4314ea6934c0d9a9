//! The probe against the running kernel. Assertions about kernel features are written
//! as implications on the kernel version, so they hold on 6.18 and on newer kernels.

use zcrx::probe::{capabilities, probe_queue, Reason, ReceiveMode, ZcrxVerdict};

/// `(major, minor)` of `uname -r`, e.g. `6.18.44-fc` → `(6, 18)`.
fn kernel_version() -> (u32, u32) {
    let release = &capabilities().kernel_release;
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major = parts.next().and_then(|p| p.parse().ok());
    let minor = parts.next().and_then(|p| p.parse().ok());
    match (major, minor) {
        (Some(major), Some(minor)) => (major, minor),
        _ => panic!("cannot parse kernel release {release:?}"),
    }
}

/// CAP_NET_ADMIN in the initial user namespace, which is what ZCRX registration checks:
/// the effective capability bit and an identity uid map (no user namespace).
fn has_init_net_admin() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let cap_eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .unwrap_or(0);
    let uid_map = std::fs::read_to_string("/proc/self/uid_map").unwrap_or_default();
    let init_ns = uid_map.split_whitespace().collect::<Vec<_>>() == ["0", "0", "4294967295"];
    const CAP_NET_ADMIN: u32 = 12;
    cap_eff & (1 << CAP_NET_ADMIN) != 0 && init_ns
}

#[test]
fn io_uring_is_usable() {
    let caps = capabilities();
    assert!(caps.io_uring.usable, "{:?}", caps.io_uring.problem);
    assert_eq!(caps.io_uring.problem, None);
    assert_eq!(caps.page_size, zcrx::sys::page_size());
    assert!(!caps.kernel_release.is_empty());
}

#[test]
fn zcrx_ring_flags_are_accepted() {
    let caps = capabilities();
    for flag in ["SINGLE_ISSUER", "DEFER_TASKRUN", "CQE32", "COOP_TASKRUN"] {
        assert_eq!(caps.setup_flag(flag), Some(true), "{flag}");
    }
    assert_eq!(
        caps.setup_flag("CQE_MIXED"),
        Some(kernel_version() >= (6, 18))
    );
}

#[test]
fn recv_zc_is_reported_iff_kernel_is_6_15_or_newer() {
    let caps = capabilities();
    let expected = kernel_version() >= (6, 15);
    assert_eq!(caps.opcode("RECV_ZC"), Some(expected));
    assert_eq!(caps.zcrx.recv_zc, expected);
    // Opcodes every ZCRX-era kernel has.
    for op in [
        "RECV",
        "SEND",
        "ACCEPT",
        "ASYNC_CANCEL",
        "MSG_RING",
        "SEND_ZC",
    ] {
        assert_eq!(caps.opcode(op), Some(true), "{op}");
    }
    assert_eq!(caps.opcode("NO_SUCH_OP"), None);
}

#[test]
fn buffer_rings_follow_the_kernel_version() {
    let caps = capabilities();
    let v = kernel_version();
    assert_eq!(caps.buffer_rings.provided_ring, v >= (5, 19));
    assert_eq!(caps.buffer_rings.bundle, v >= (6, 10));
    assert_eq!(caps.buffer_rings.incremental, v >= (6, 12));
}

#[test]
fn query_and_zcrx_features_follow_the_kernel_version() {
    let caps = capabilities();
    let v = kernel_version();
    let z = &caps.zcrx;
    assert_eq!(caps.query.present, v >= (6, 18));
    if v >= (6, 18) {
        let op = caps.query.opcodes.expect("QUERY OPCODES answered");
        assert!(op.nr_request_opcodes > u32::from(zcrx::abi::IORING_OP_RECV_ZC));
        assert!(op.nr_register_opcodes > zcrx::abi::IORING_REGISTER_QUERY);
        assert!(op.nr_query_opcodes >= 1);
        assert!(z.dmabuf && z.multiple_per_ring);
    }
    if v.0 == 6 && v.1 == 18 {
        assert!(caps.query.zcrx.is_none());
        assert_eq!(caps.query.zcrx_error.as_deref(), Some("EOPNOTSUPP"));
        assert!(!z.query);
        assert!(!z.import && !z.nodev && !z.flush_rq && !z.export && !z.rx_page_size);
        assert_eq!(z.nr_ctrl_opcodes, 0);
        assert_eq!(caps.query.opcodes.map(|o| o.nr_register_opcodes), Some(36));
    }
    if v >= (6, 19) {
        assert!(z.query && z.import && z.flush_rq && z.export);
    }
    if v >= (7, 1) {
        assert!(z.nodev && z.rx_page_size && caps.nodev_testing);
    }
    // Query ops past OPCODES are asked only when the kernel counts them.
    let nr_query = caps.query.opcodes.map_or(0, |o| o.nr_query_opcodes);
    assert_eq!(caps.query.scq.is_some(), nr_query > 2);
    assert_eq!(caps.query.zcrx_event.is_some(), nr_query > 3);
    assert_eq!(z.events, v >= (7, 2));
    assert_eq!(z.add_area, v >= (7, 3));
    if v >= (7, 2) {
        let e = caps
            .query
            .zcrx_event
            .expect("7.2 answers the ZCRX_EVENT query");
        // Both event types, and the stats block as `abi::ZcrxStats` lays it out.
        assert_eq!(e.event_flags, 0b11);
        assert_eq!(
            e.stats_size as usize,
            std::mem::size_of::<zcrx::abi::ZcrxStats>()
        );
        assert!(e.stats_off_alignment.is_power_of_two());
    }
    if v >= (7, 3) {
        assert_eq!(z.nr_ctrl_opcodes, 4);
        assert_eq!(z.features, 0x3);
    }
    assert_eq!(caps.nodev_testing, z.nodev);
}

#[test]
fn zcrx_build_option_is_known_iff_recv_zc_exists() {
    let caps = capabilities();
    assert_eq!(caps.zcrx_in_kernel.is_some(), caps.zcrx.recv_zc);
}

#[test]
fn loopback_cannot_bind_a_zcrx_queue() {
    let caps = capabilities();
    let lo = caps.interface("lo").expect("lo is listed");
    assert!(!lo.has_parent_device);
    assert_eq!(lo.driver, None);
    let expected = if !caps.zcrx.recv_zc {
        None
    } else if caps.zcrx_in_kernel == Some(false) {
        Some(Reason::KernelWithoutZcrx)
    } else if has_init_net_admin() {
        Some(Reason::NoParentDevice)
    } else {
        Some(Reason::NoCapNetAdmin)
    };
    if let Some(reason) = expected {
        assert_eq!(lo.queue0, ZcrxVerdict::Unavailable(reason.clone()));
        // Not cached: the same answer from a fresh attempt.
        assert_eq!(probe_queue("lo", 0), ZcrxVerdict::Unavailable(reason));
    }
    assert!(!lo.queue0.is_possible());
}

#[test]
fn unknown_interfaces_are_named() {
    let expected = ZcrxVerdict::Unavailable(Reason::NoSuchInterface {
        interface: "no-such-if0".into(),
    });
    assert_eq!(probe_queue("no-such-if0", 0), expected);
    assert!(matches!(
        probe_queue("../../etc", 0),
        ZcrxVerdict::Unavailable(Reason::NoSuchInterface { .. })
    ));
}

#[test]
fn receive_mode_is_zero_copy_only_with_a_possible_device_queue() {
    let caps = capabilities();
    let possible = caps
        .interfaces
        .iter()
        .find(|i| i.has_parent_device && i.queue0.is_possible());
    match possible {
        Some(i) => {
            assert_eq!(caps.receive_mode.mode, ReceiveMode::ZeroCopy);
            assert_eq!(
                caps.receive_mode.interface.as_deref(),
                Some(i.name.as_str())
            );
        }
        None => {
            assert_eq!(caps.receive_mode.mode, ReceiveMode::Copy);
            assert!(caps.receive_mode.reason.contains("lo: "));
        }
    }
}

#[test]
fn capabilities_are_probed_once() {
    let a = capabilities();
    let b = std::thread::spawn(|| capabilities() as *const _ as usize)
        .join()
        .expect("probe thread");
    assert!(std::ptr::eq(a, capabilities()));
    assert_eq!(a as *const _ as usize, b);
}

#[test]
fn copy_pools_are_incremental_by_default_where_the_kernel_has_it() {
    // The cheap check (used by `CopyPoolConfig::default`) agrees with the full probe,
    // and on 6.12+ the default pool consumes buffers incrementally: whole-buffer
    // receives empty a 64-buffer pool under 64 busy connections.
    let full = capabilities().buffer_rings.incremental;
    assert_eq!(zcrx::probe::incremental_buffers(), full);
    assert_eq!(zcrx::CopyPoolConfig::default().incremental, full);
    let (major, minor) = kernel_version();
    if (major, minor) >= (6, 12) {
        assert!(
            full,
            "Linux {major}.{minor} should accept IOU_PBUF_RING_INC"
        );
    }
}
