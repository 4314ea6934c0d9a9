//! The receive mode's tests: every form parses and prints back, and resolution against
//! a fake probe picks each mode, or refuses with the reason, as the kernel would.

use super::*;

#[test]
fn every_receive_mode_parses_from_its_command_line_form() {
    let parse = |s: &str| s.parse::<ReceiveMode>();
    for form in ["auto", "copy", "device-less:3", "zero-copy:eth1:3,5"] {
        assert_eq!(parse(form).map(|m| m.to_arg()), Ok(form.to_owned()));
    }
    assert_eq!(parse("auto"), Ok(ReceiveMode::Auto));
    assert_eq!(parse("copy"), Ok(ReceiveMode::Copy));
    assert_eq!(
        parse("device-less:2"),
        Ok(ReceiveMode::DeviceLess { instances: 2 })
    );
    assert_eq!(
        parse("zero-copy:eth1:3,5"),
        Ok(ReceiveMode::ZeroCopy {
            interface: "eth1".into(),
            queues: vec![3, 5]
        })
    );
}

#[test]
fn a_bad_receive_mode_is_refused_with_what_is_wrong() {
    let cases = [
        ("", "unknown mode"),
        ("zerocopy", "unknown mode"),
        ("auto:1", "unknown mode"),
        ("device-less", "how many instances"),
        ("device-less:0", "at least 1"),
        ("device-less:two", "at least 1"),
        ("zero-copy", "interface and its queues"),
        ("zero-copy:eth1", "interface and its queues"),
        ("zero-copy::0", "interface name is empty"),
        ("zero-copy:eth1:", "whole numbers"),
        ("zero-copy:eth1:1,x", "whole numbers"),
    ];
    for (input, why) in cases {
        let err = input.parse::<ReceiveMode>().expect_err(input);
        assert!(err.contains(why), "{input:?}: {err}");
        assert!(err.contains(RECEIVE_MODE_SYNTAX), "{input:?}: {err}");
    }
}

struct FakeProbe {
    features: ZcrxFeatures,
    auto: ReceiveModeDecision,
    possible: Vec<(&'static str, u32)>,
}

impl FakeProbe {
    fn kernel_6_18() -> FakeProbe {
        FakeProbe {
            features: ZcrxFeatures {
                recv_zc: true,
                ..ZcrxFeatures::default()
            },
            auto: ReceiveModeDecision {
                mode: ResolvedMode::Copy,
                interface: None,
                queue: None,
                reason: "no interface can bind a ZCRX queue: eth0: driver virtio_net lacks \
                         queue management (EOPNOTSUPP)"
                    .into(),
            },
            possible: Vec::new(),
        }
    }

    fn with_nic() -> FakeProbe {
        FakeProbe {
            auto: ReceiveModeDecision {
                mode: ResolvedMode::ZeroCopy,
                interface: Some("eth1".into()),
                queue: Some(0),
                reason: "eth1 queue 0 accepted a ZCRX registration".into(),
            },
            possible: vec![("eth1", 0), ("eth1", 1), ("eth1", 2)],
            ..FakeProbe::kernel_6_18()
        }
    }
}

impl ProbeView for FakeProbe {
    fn features(&self) -> ZcrxFeatures {
        self.features.clone()
    }
    fn auto_choice(&self) -> ReceiveModeDecision {
        self.auto.clone()
    }
    fn queue(&self, interface: &str, queue: u32) -> ZcrxVerdict {
        match interface {
            "lo" => ZcrxVerdict::Unavailable(Reason::NoParentDevice),
            "eth0" => ZcrxVerdict::Unavailable(Reason::DriverLacksQueueManagement {
                driver: "virtio_net".into(),
            }),
            _ if self
                .possible
                .iter()
                .any(|&(i, q)| i == interface && q == queue) =>
            {
                ZcrxVerdict::Possible
            }
            "eth1" => ZcrxVerdict::Unavailable(Reason::QueueOutOfRange {
                interface: "eth1".into(),
                queue,
                queues: 3,
            }),
            other => ZcrxVerdict::Unavailable(Reason::NoSuchInterface {
                interface: other.into(),
            }),
        }
    }
    fn ifindex(&self, interface: &str) -> Option<u32> {
        match interface {
            "lo" => Some(1),
            "eth0" => Some(4),
            "eth1" => Some(5),
            _ => None,
        }
    }
}

fn zc(interface: &str, queues: &[u32]) -> ReceiveMode {
    ReceiveMode::ZeroCopy {
        interface: interface.into(),
        queues: queues.to_vec(),
    }
}

fn unavailable(e: &io::Error) -> &ZeroCopyUnavailable {
    e.get_ref()
        .and_then(|e| e.downcast_ref::<ZeroCopyUnavailable>())
        .unwrap_or_else(|| panic!("not a ZeroCopyUnavailable: {e}"))
}

#[test]
fn copy_is_copy() {
    let r = resolve(&ReceiveMode::Copy, 2, &FakeProbe::with_nic(), true).expect("copy");
    assert_eq!(r.mode, ResolvedMode::Copy);
    assert_eq!(r.roles, vec![ReceiveRole::Copy; 2]);
    assert_eq!(r.target, None);
    assert!(r.reason.contains("requested"));
}

#[test]
fn auto_falls_back_to_copy_with_the_probe_reason() {
    let r = resolve(&ReceiveMode::Auto, 3, &FakeProbe::kernel_6_18(), true).expect("auto");
    assert_eq!(r.mode, ResolvedMode::Copy);
    assert_eq!(r.requested, ReceiveMode::Auto);
    assert!(
        r.reason.starts_with("auto: no interface can bind"),
        "{}",
        r.reason
    );
    assert!(r.reason.contains("virtio_net"));
    assert_eq!(r.roles, vec![ReceiveRole::Copy; 3]);
    assert!(r.to_string().starts_with("copy (auto: "), "{r}");
}

#[test]
fn auto_takes_the_probed_queue_and_shares_it() {
    let mut p = FakeProbe::with_nic();
    let r = resolve(&ReceiveMode::Auto, 3, &p, true).expect("auto");
    assert_eq!(r.mode, ResolvedMode::ZeroCopy);
    assert_eq!(
        r.target,
        Some(ZeroCopyTarget::Device {
            interface: "eth1".into(),
            ifindex: 5,
            queues: vec![0]
        })
    );
    assert_eq!(
        r.roles,
        vec![
            ReceiveRole::Owner { instance: 0 },
            ReceiveRole::Handover { owner: 0 },
            ReceiveRole::Handover { owner: 0 }
        ]
    );
    assert!(r.reason.contains("handed over"), "{}", r.reason);
    assert!(r.reason.contains("Linux 6.19"), "{}", r.reason);
    p.features.import = true;
    let r = resolve(&ReceiveMode::Auto, 2, &p, true).expect("auto");
    assert_eq!(r.roles[1], ReceiveRole::Import { owner: 0 });
    assert!(r.reason.contains("import"), "{}", r.reason);
    assert!(
        r.to_string().contains("worker 1 imports worker 0's pool"),
        "{r}"
    );
    // A single worker owns the only queue: nothing to share.
    let r = resolve(&ReceiveMode::Auto, 1, &p, true).expect("auto");
    assert_eq!(r.roles, vec![ReceiveRole::Owner { instance: 0 }]);
    assert!(!r.reason.contains("shared"), "{}", r.reason);
}

#[test]
fn zero_copy_on_loopback_and_virtio_is_refused_with_eopnotsupp_reasons() {
    let p = FakeProbe::kernel_6_18();
    let e = resolve(&zc("lo", &[0]), 1, &p, true).expect_err("lo");
    assert_eq!(e.kind(), io::ErrorKind::Unsupported);
    let u = unavailable(&e);
    assert_eq!(u.reason(), &Reason::NoParentDevice);
    assert_eq!(u.target(), "lo queue 0");
    let msg = e.to_string();
    assert!(msg.contains("no parent (DMA) device (EOPNOTSUPP)"), "{msg}");
    assert!(msg.contains("[NoParentDevice]"), "{msg}");
    assert!(msg.contains("fix: "), "{msg}");
    assert!(msg.contains("ZCRX_REG_NODEV"), "{msg}");

    let e = resolve(&zc("eth0", &[0]), 1, &p, true).expect_err("eth0");
    let u = unavailable(&e);
    assert_eq!(u.reason().name(), "DriverLacksQueueManagement");
    assert!(e.to_string().contains("virtio_net"), "{e}");
    assert!(u.fix().contains("mlx5"));
}

#[test]
fn zero_copy_names_the_first_refused_queue() {
    let p = FakeProbe::with_nic();
    let e = resolve(&zc("eth1", &[1, 7]), 2, &p, true).expect_err("queue 7");
    let u = unavailable(&e);
    assert_eq!(u.target(), "eth1 queue 7");
    assert_eq!(u.reason().name(), "QueueOutOfRange");
    assert!(u.fix().contains("ethtool -L eth1"));
    let e = resolve(&zc("nope0", &[0]), 1, &p, true).expect_err("no interface");
    assert_eq!(unavailable(&e).reason().name(), "NoSuchInterface");
}

#[test]
fn zero_copy_configuration_errors_are_invalid_input() {
    let p = FakeProbe::with_nic();
    for (mode, threads, needle) in [
        (zc("eth1", &[]), 2, "names no queue"),
        (zc("eth1", &[0, 0]), 2, "twice"),
        (
            zc("eth1", &[0, 1, 2]),
            2,
            "3 queues but the runtime has 2 workers",
        ),
        (ReceiveMode::DeviceLess { instances: 0 }, 2, "1..=2"),
        (ReceiveMode::DeviceLess { instances: 3 }, 2, "got 3"),
    ] {
        let e = resolve(&mode, threads, &p, true).expect_err("invalid");
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{mode}");
        assert!(e.to_string().contains(needle), "{e}");
    }
}

#[test]
fn zero_copy_plans_owners_and_sharing() {
    let mut p = FakeProbe::with_nic();
    let r = resolve(&zc("eth1", &[2, 0]), 3, &p, true).expect("zc");
    assert_eq!(r.mode, ResolvedMode::ZeroCopy);
    assert_eq!(
        r.target,
        Some(ZeroCopyTarget::Device {
            interface: "eth1".into(),
            ifindex: 5,
            queues: vec![2, 0]
        })
    );
    assert_eq!(r.roles[2], ReceiveRole::Handover { owner: 0 });
    p.features.import = true;
    let r = resolve(&zc("eth1", &[0, 1]), 2, &p, true).expect("zc");
    assert_eq!(
        r.roles,
        vec![
            ReceiveRole::Owner { instance: 0 },
            ReceiveRole::Owner { instance: 1 }
        ]
    );
}

#[test]
fn device_less_needs_nodev() {
    let p = FakeProbe::kernel_6_18();
    let e = resolve(&ReceiveMode::DeviceLess { instances: 1 }, 2, &p, true).expect_err("6.18");
    assert_eq!(e.kind(), io::ErrorKind::Unsupported);
    let u = unavailable(&e);
    assert_eq!(
        u.reason(),
        &Reason::KernelTooOld {
            needs: "Linux 7.1 (ZCRX_REG_NODEV)",
            errno: libc::EINVAL
        }
    );
    assert!(e.to_string().contains("Linux 7.1"), "{e}");
    let old = FakeProbe {
        features: ZcrxFeatures::default(),
        ..FakeProbe::kernel_6_18()
    };
    let e = resolve(&ReceiveMode::DeviceLess { instances: 1 }, 1, &old, true).expect_err("old");
    assert!(e.to_string().contains("Linux 6.15"), "{e}");

    let mut p = FakeProbe::kernel_6_18();
    p.features.nodev = true;
    p.features.import = true;
    let r = resolve(&ReceiveMode::DeviceLess { instances: 1 }, 2, &p, true).expect("7.1");
    assert_eq!(r.mode, ResolvedMode::ZeroCopy);
    assert_eq!(r.target, Some(ZeroCopyTarget::DeviceLess { instances: 1 }));
    assert_eq!(r.roles[1], ReceiveRole::Import { owner: 0 });
}

#[test]
fn report_serializes() {
    let r = resolve(&ReceiveMode::Auto, 1, &FakeProbe::kernel_6_18(), true).expect("auto");
    let json = serde_json::to_value(&r).expect("json");
    assert_eq!(json["mode"], "copy");
    assert_eq!(json["requested"]["mode"], "auto");
    assert_eq!(json["roles"][0]["role"], "copy");
}
