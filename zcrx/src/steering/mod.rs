//! Queue steering: what decides which receive queue a packet lands on, read from the
//! NIC, and the arithmetic to predict it.
//!
//! Zero-copy receive only helps a flow the NIC delivers on a queue bound to a ZCRX
//! instance. Whether it does depends on header/data split, the RSS key and
//! indirection table, and ntuple rules — settings users check by hand with `ethtool`
//! today. [`report`] reads them all for one interface (ethtool netlink and the
//! `SIOCETHTOOL` ioctl), [`SteeringReport::queue_for`] says where a TCP 4-tuple goes,
//! and [`toeplitz::local_port_for_queue`] picks the local port that puts a new
//! connection on a chosen queue. Everything a NIC or kernel does not answer is kept
//! as the reason, in words, instead of failing the whole report.

mod ethtool;
mod genl;
pub mod netdev;
mod ntuple;
pub mod toeplitz;

pub use ethtool::{DataSplit, Rings, Rss};
pub use netdev::{PagePool, RxQueue};
pub use ntuple::FlowRule;

use serde::Serialize;
use std::io;
use std::net::SocketAddr;

/// One reading of the report: the value, or why the NIC or kernel did not give it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reading<T> {
    /// What the device reported.
    Known(T),
    /// Why there is nothing: the errno's meaning here, in words.
    Unavailable(String),
}

impl<T> Reading<T> {
    fn from_io(what: &str, r: io::Result<T>) -> Reading<T> {
        match r {
            Ok(v) => Reading::Known(v),
            Err(e) => Reading::Unavailable(unavailable(what, &e)),
        }
    }

    /// The value, if known.
    pub fn known(&self) -> Option<&T> {
        match self {
            Reading::Known(v) => Some(v),
            Reading::Unavailable(_) => None,
        }
    }
}

fn unavailable(what: &str, e: &io::Error) -> String {
    let why = match e.raw_os_error() {
        Some(libc::EOPNOTSUPP) => "the driver does not support it".to_owned(),
        Some(libc::ENODEV) => "no such interface".to_owned(),
        Some(libc::ENOENT) => "the kernel has no ethtool netlink (Linux 5.6+)".to_owned(),
        Some(libc::EPERM) => "not permitted (CAP_NET_ADMIN)".to_owned(),
        _ => e.to_string(),
    };
    let name = e
        .raw_os_error()
        .map(|n| format!(" ({})", crate::probe::errno_name(n)))
        .unwrap_or_default();
    format!("{what}: {why}{name}")
}

/// What steers packets on one interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SteeringReport {
    /// The interface.
    pub interface: String,
    /// Receive queues (rx-only plus combined channels).
    pub rx_queues: Reading<u32>,
    /// Ring sizes and header/data split.
    pub rings: Reading<Rings>,
    /// RSS hash function, key and indirection table.
    pub rss: Reading<Rss>,
    /// ntuple steering rules.
    pub flow_rules: Reading<Vec<FlowRule>>,
    /// The receive queues the kernel's netdev family lists: NAPI ids, and which have
    /// an io_uring memory provider (a ZCRX instance) bound.
    pub queues: Reading<Vec<RxQueue>>,
}

/// Reads everything that steers packets on `interface`.
pub fn report(interface: &str) -> SteeringReport {
    let (rx_queues, rings, rss) = match ethtool::EthtoolSocket::open() {
        Ok(mut s) => (
            Reading::from_io("queue counts", s.rx_queues(interface)),
            Reading::from_io("ring settings", s.rings(interface)),
            Reading::from_io("RSS", s.rss(interface)),
        ),
        Err(e) => {
            let why = unavailable("ethtool netlink", &e);
            (
                Reading::Unavailable(why.clone()),
                Reading::Unavailable(why.clone()),
                Reading::Unavailable(why),
            )
        }
    };
    let queues = match ifindex(interface) {
        Ok(i) => Reading::from_io("queues (netdev netlink)", netdev::rx_queues(i)),
        Err(e) => Reading::Unavailable(unavailable("queues", &e)),
    };
    SteeringReport {
        interface: interface.to_owned(),
        rx_queues,
        rings,
        rss,
        flow_rules: Reading::from_io("flow rules", ntuple::rules(interface)),
        queues,
    }
}

/// `if_nametoindex`, with `ENODEV` for an unknown (or unnameable) interface.
fn ifindex(interface: &str) -> io::Result<u32> {
    let name = std::ffi::CString::new(interface)
        .map_err(|_| io::Error::from_raw_os_error(libc::ENODEV))?;
    // SAFETY: `name` is a valid NUL-terminated string for the call's duration.
    match unsafe { libc::if_nametoindex(name.as_ptr()) } {
        0 => Err(io::Error::from_raw_os_error(libc::ENODEV)),
        i => Ok(i),
    }
}

/// Where a flow goes, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QueueChoice {
    /// The receive queue.
    pub queue: u32,
    /// What put it there: an ntuple rule (by location) or RSS.
    pub by: String,
}

impl SteeringReport {
    /// The queue packets from `peer` to `local` land on: the first ntuple rule that
    /// matches the destination, else RSS (Toeplitz over the device's key and
    /// indirection table). An error says what is missing to tell.
    pub fn queue_for(&self, peer: SocketAddr, local: SocketAddr) -> Result<QueueChoice, String> {
        if let Reading::Known(rules) = &self.flow_rules {
            let hit = rules.iter().find(|r| {
                let family = matches!(
                    (r.flow.as_str(), local),
                    ("tcp4", SocketAddr::V4(_)) | ("tcp6", SocketAddr::V6(_))
                );
                family
                    && (r.dst_port == 0 || r.dst_port == local.port())
                    && r.dst_ip.is_none_or(|ip| ip == local.ip())
            });
            if let Some(r) = hit {
                return match r.queue {
                    Some(queue) => Ok(QueueChoice {
                        queue,
                        by: format!("ntuple rule {}", r.location),
                    }),
                    None => Err(format!("ntuple rule {} drops the flow", r.location)),
                };
            }
        }
        let rss = match &self.rss {
            Reading::Known(rss) => rss,
            Reading::Unavailable(why) => return Err(why.clone()),
        };
        if rss
            .hash_function
            .is_some_and(|f| f != ethtool::HASH_TOEPLITZ)
        {
            return Err(format!(
                "RSS uses hash function {:#x}, not Toeplitz: the queue cannot be predicted",
                rss.hash_function.unwrap_or(0)
            ));
        }
        if rss.key.is_empty() || rss.indirection.is_empty() {
            return Err("the device reports no RSS key or indirection table".to_owned());
        }
        let hash = toeplitz::tcp_flow_hash(&rss.key, peer, local)
            .ok_or("the two addresses are of different families")?;
        let queue = toeplitz::queue_for_hash(hash, &rss.indirection)
            .ok_or("the indirection table is empty")?;
        Ok(QueueChoice {
            queue,
            by: format!("RSS (Toeplitz hash {hash:#010x})"),
        })
    }

    /// What keeps the interface from receiving zero-copy, in words (empty: nothing
    /// the report can see).
    pub fn zero_copy_problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        match &self.rings {
            Reading::Known(r) => {
                match r.tcp_data_split {
                    Some(DataSplit::Enabled) => {}
                    Some(DataSplit::Disabled) => out.push(
                        "header/data split is off: `ethtool -G IF tcp-data-split on`".to_owned(),
                    ),
                    Some(DataSplit::Unknown) | None => out.push(
                        "the driver does not report header/data split, which ZCRX needs".to_owned(),
                    ),
                }
                if let Some(t) = r.hds_thresh.filter(|&t| t > 0) {
                    out.push(format!(
                        "hds-thresh is {t}: payloads below it are not split (`ethtool -G IF hds-thresh 0`)"
                    ));
                }
            }
            Reading::Unavailable(why) => out.push(why.clone()),
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report_with(rss: Reading<Rss>, rules: Reading<Vec<FlowRule>>) -> SteeringReport {
        SteeringReport {
            interface: "eth9".into(),
            rx_queues: Reading::Known(4),
            rings: Reading::Known(Rings {
                rx: Some(1024),
                rx_max: Some(4096),
                tcp_data_split: Some(DataSplit::Enabled),
                hds_thresh: Some(0),
                hds_thresh_max: Some(1024),
            }),
            rss,
            flow_rules: rules,
            queues: Reading::Known(vec![]),
        }
    }

    fn key() -> Vec<u8> {
        (0..40u8).map(|i| i.wrapping_mul(37) ^ 0x5a).collect()
    }

    #[test]
    fn a_flow_goes_where_its_rule_says_else_where_rss_hashes_it() {
        let rss = Rss {
            hash_function: Some(ethtool::HASH_TOEPLITZ),
            key: key(),
            indirection: (0..64).map(|i| i % 4).collect(),
        };
        let rule = FlowRule {
            location: 2,
            flow: "tcp4".into(),
            dst_ip: None,
            dst_port: 9090,
            queue: Some(3),
        };
        let r = report_with(Reading::Known(rss.clone()), Reading::Known(vec![rule]));
        let peer: SocketAddr = "10.0.0.1:40000".parse().expect("addr");
        let served: SocketAddr = "10.0.0.2:9090".parse().expect("addr");
        assert_eq!(
            r.queue_for(peer, served),
            Ok(QueueChoice {
                queue: 3,
                by: "ntuple rule 2".into()
            })
        );
        let other: SocketAddr = "10.0.0.2:8080".parse().expect("addr");
        let hash = toeplitz::tcp_flow_hash(&rss.key, peer, other).expect("v4");
        let choice = r.queue_for(peer, other).expect("RSS");
        assert_eq!(choice.queue, hash % 4, "{choice:?}");
        assert!(choice.by.starts_with("RSS"));
        assert!(r.zero_copy_problems().is_empty());
    }

    #[test]
    fn what_is_missing_is_said_in_words() {
        let r = report_with(
            Reading::Unavailable("RSS: the driver does not support it (EOPNOTSUPP)".into()),
            Reading::Unavailable("flow rules: the driver does not support it".into()),
        );
        let peer: SocketAddr = "10.0.0.1:1".parse().expect("addr");
        let local: SocketAddr = "10.0.0.2:2".parse().expect("addr");
        let err = r.queue_for(peer, local).expect_err("no RSS");
        assert!(err.contains("EOPNOTSUPP"), "{err}");
        let xor = report_with(
            Reading::Known(Rss {
                hash_function: Some(2),
                key: key(),
                indirection: vec![0, 1],
            }),
            Reading::Known(vec![]),
        );
        assert!(xor
            .queue_for(peer, local)
            .expect_err("xor")
            .contains("not Toeplitz"));
        let mut off = r.clone();
        off.rings = Reading::Known(Rings {
            rx: None,
            rx_max: None,
            tcp_data_split: Some(DataSplit::Disabled),
            hds_thresh: Some(256),
            hds_thresh_max: None,
        });
        let problems = off.zero_copy_problems();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("tcp-data-split on") && problems[1].contains("hds-thresh 0"));
    }

    #[test]
    fn loopback_reports_each_missing_piece_and_no_panic() {
        let r = report("lo");
        assert_eq!(r.interface, "lo");
        // lo has no flow steering and no RSS; whatever ethtool netlink answers for
        // rings, every piece is either a value or a reason.
        assert!(matches!(r.flow_rules, Reading::Unavailable(ref w) if w.contains("EOPNOTSUPP")));
        assert!(r.rss.known().is_none_or(|rss| rss.indirection.is_empty()));
        assert!(r
            .queues
            .known()
            .is_none_or(|q| q.iter().all(|q| !q.io_uring)));
        let none = report("no-such-if0");
        assert!(
            matches!(none.queues, Reading::Unavailable(ref w) if w.contains("no such interface"))
        );
        let whys = [
            match &none.rings {
                Reading::Unavailable(w) => w.clone(),
                Reading::Known(_) => "rings known".into(),
            },
            match &none.rss {
                Reading::Unavailable(w) => w.clone(),
                Reading::Known(_) => "rss known".into(),
            },
        ];
        for why in whys {
            assert!(
                why.contains("no such interface") || why.contains("ENODEV"),
                "{why}"
            );
        }
    }
}
