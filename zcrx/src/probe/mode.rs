//! Zero-copy or copy: the receive mode the runtime should start in.

use super::InterfaceReport;
use serde::Serialize;
use std::fmt;

/// How received bytes reach the application.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReceiveMode {
    /// RECV_ZC from a ZCRX-bound hardware queue.
    ZeroCopy,
    /// Ordinary receives into provided buffers.
    Copy,
}

impl fmt::Display for ReceiveMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ZeroCopy => "zero-copy",
            Self::Copy => "copy",
        })
    }
}

/// The chosen mode and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReceiveModeDecision {
    /// The mode.
    pub mode: ReceiveMode,
    /// The interface to bind, in zero-copy mode.
    pub interface: Option<String>,
    /// The queue to bind, in zero-copy mode.
    pub queue: Option<u32>,
    /// Why, in words.
    pub reason: String,
}

/// Zero-copy if some interface with a parent device accepted a registration on queue 0,
/// else copy, with every interface's refusal in the reason.
pub fn decide_receive_mode(interfaces: &[InterfaceReport]) -> ReceiveModeDecision {
    if let Some(chosen) = interfaces
        .iter()
        .find(|i| i.has_parent_device && i.queue0.is_possible())
    {
        return ReceiveModeDecision {
            mode: ReceiveMode::ZeroCopy,
            interface: Some(chosen.name.clone()),
            queue: Some(0),
            reason: format!("{} queue 0 accepted a ZCRX registration", chosen.name),
        };
    }
    let reason = if interfaces.is_empty() {
        "no network interfaces found in /sys/class/net".to_owned()
    } else {
        // Devices with a parent come first: they are the ones an operator can fix.
        let mut ordered: Vec<&InterfaceReport> = interfaces.iter().collect();
        ordered.sort_by_key(|i| !i.has_parent_device);
        let why: Vec<String> = ordered
            .iter()
            .map(|i| match i.queue0.reason() {
                Some(reason) => format!("{}: {reason}", i.name),
                None => format!("{}: no parent device", i.name),
            })
            .collect();
        format!("no interface can bind a ZCRX queue: {}", why.join("; "))
    };
    ReceiveModeDecision {
        mode: ReceiveMode::Copy,
        interface: None,
        queue: None,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::{Reason, ZcrxVerdict};

    fn iface(name: &str, parent: bool, queue0: ZcrxVerdict) -> InterfaceReport {
        InterfaceReport {
            name: name.to_owned(),
            ifindex: 1,
            driver: parent.then(|| "virtio_net".to_owned()),
            has_parent_device: parent,
            rx_queues: 1,
            queue0,
        }
    }

    #[test]
    fn no_interfaces_means_copy() {
        let d = decide_receive_mode(&[]);
        assert_eq!(d.mode, ReceiveMode::Copy);
        assert!(d.reason.contains("no network interfaces"));
        assert_eq!((d.interface, d.queue), (None, None));
    }

    #[test]
    fn all_refused_means_copy_with_every_reason_device_first() {
        let lo = iface(
            "lo",
            false,
            ZcrxVerdict::Unavailable(Reason::NoParentDevice),
        );
        let eth = iface(
            "eth0",
            true,
            ZcrxVerdict::Unavailable(Reason::DriverLacksQueueManagement {
                driver: "virtio_net".into(),
            }),
        );
        let d = decide_receive_mode(&[lo, eth]);
        assert_eq!(d.mode, ReceiveMode::Copy);
        assert_eq!(d.interface, None);
        assert!(d
            .reason
            .starts_with("no interface can bind a ZCRX queue: eth0: "));
        assert!(d.reason.contains("virtio_net"));
        assert!(d.reason.contains("lo: no parent"));
        assert!(d.reason.contains("EOPNOTSUPP"));
        assert!(d.reason.find("eth0").unwrap() < d.reason.find("lo:").unwrap());
    }

    #[test]
    fn a_possible_device_queue_means_zero_copy() {
        let lo = iface(
            "lo",
            false,
            ZcrxVerdict::Unavailable(Reason::NoParentDevice),
        );
        let eth = iface("eth1", true, ZcrxVerdict::Possible);
        let d = decide_receive_mode(&[lo, eth]);
        assert_eq!(d.mode, ReceiveMode::ZeroCopy);
        assert_eq!(d.interface.as_deref(), Some("eth1"));
        assert_eq!(d.queue, Some(0));
    }

    #[test]
    fn possible_without_parent_does_not_count() {
        let odd = iface("dummy0", false, ZcrxVerdict::Possible);
        let d = decide_receive_mode(&[odd]);
        assert_eq!(d.mode, ReceiveMode::Copy);
        assert!(d.reason.contains("dummy0: no parent device"));
    }

    #[test]
    fn mode_serializes_as_the_documented_strings() {
        assert_eq!(
            serde_json::to_string(&ReceiveMode::Copy).unwrap(),
            "\"copy\""
        );
        assert_eq!(
            serde_json::to_string(&ReceiveMode::ZeroCopy).unwrap(),
            "\"zero-copy\""
        );
        assert_eq!(ReceiveMode::ZeroCopy.to_string(), "zero-copy");
    }
}
