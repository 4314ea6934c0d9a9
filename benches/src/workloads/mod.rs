//! Workloads W1–W8 of `performance.md` §3.2: what the client does, which numbers each
//! one reports, and the goal ratios of §3.4 / issue 3.

/// One workload of the suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Workload {
    /// Unloaded round trip: 1 connection, 64 B ping-pong.
    W1,
    /// Small-message RPC capacity: 64 B × 64 connections, closed loop.
    W2,
    /// The same with 1 KiB messages.
    W2Kib,
    /// p99 under load: open loop (Poisson) at 50 % of the slowest server's W2 rate.
    W3Half,
    /// The same at 90 %.
    W3Most,
    /// Stream echo: 64 KiB writes, 4 connections, full duplex.
    W4,
    /// Large request/response: 64 KiB × 16 connections.
    W5,
    /// Connection churn: connect → one 64 B RPC → close, 8 at a time.
    W6,
    /// The same, 64 at a time: enough load that the servers, not the load generator,
    /// set the rate (at 8 neither server uses half a core).
    W6Wide,
    /// Many idle connections: memory per connection and wake-ups while idle.
    W7,
    /// Buffer pool under slow readers: W2 and W4 together, the stream readers stop
    /// reading for 100 ms of every second.
    W8,
}

/// A goal for a zerorx server.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Goal {
    /// The median ratio to the reference tokio server is at most this.
    RatioAtMost(f64),
    /// The median ratio to the reference tokio server is at least this.
    RatioAtLeast(f64),
    /// The median value itself is at most this.
    AtMost(f64),
}

impl Goal {
    /// Whether a median value / median ratio meets the goal.
    pub fn met(self, value: f64, ratio: Option<f64>) -> Option<bool> {
        match self {
            Goal::RatioAtMost(g) => ratio.map(|r| r <= g),
            Goal::RatioAtLeast(g) => ratio.map(|r| r >= g),
            Goal::AtMost(g) => Some(value <= g),
        }
    }

    /// How the goal is printed.
    pub fn describe(self) -> String {
        match self {
            Goal::RatioAtMost(g) => format!("<= {g:.2}x"),
            Goal::RatioAtLeast(g) => format!(">= {g:.2}x"),
            Goal::AtMost(g) => format!("<= {g}"),
        }
    }
}

/// How a metric is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Operations per second (printed with k/M).
    PerSec,
    /// Microseconds.
    Micros,
    /// Gigabytes per second.
    GbPerSec,
    /// CPU seconds per gigabyte.
    SecPerGb,
    /// Bytes.
    Bytes,
    /// Percent of one CPU.
    Percent,
    /// A plain count.
    Count,
    /// A ratio of two counts.
    Ratio,
}

/// One number a workload reports.
#[derive(Clone, Copy, Debug)]
pub struct Metric {
    /// JSON key.
    pub key: &'static str,
    /// Table label.
    pub label: &'static str,
    /// Print unit.
    pub unit: Unit,
    /// The goal for zerorx, if the issue sets one.
    pub goal: Option<Goal>,
}

const fn m(key: &'static str, label: &'static str, unit: Unit, goal: Option<Goal>) -> Metric {
    Metric {
        key,
        label,
        unit,
        goal,
    }
}

/// Figures every request/response workload reports besides its own.
const RR_COMMON: [Metric; 4] = [
    m(
        "ctx_switches_per_s",
        "server ctx-switches/s",
        Unit::PerSec,
        None,
    ),
    m(
        "server_core_pct",
        "server CPU % of a core",
        Unit::Percent,
        None,
    ),
    m(
        "client_core_pct",
        "client CPU % of a core",
        Unit::Percent,
        None,
    ),
    m("enobufs", "zerorx ENOBUFS in window", Unit::Count, None),
];

/// W3's metrics; its two load levels differ only in the p99 goal.
const fn w3_metrics(p99_goal: f64) -> [Metric; 6] {
    use Goal::*;
    use Unit::*;
    [
        m(
            "p99_us",
            "p99 us (from schedule)",
            Micros,
            Some(RatioAtMost(p99_goal)),
        ),
        m("p999_us", "p99.9 us", Micros, None),
        m(
            "cpu_us_per_req",
            "server CPU us/req",
            Micros,
            Some(RatioAtMost(0.85)),
        ),
        m("req_per_s", "achieved req/s", PerSec, None),
        m("offered_req_per_s", "offered req/s", PerSec, None),
        RR_COMMON[1],
    ]
}

impl Workload {
    /// Every workload, in run order (W3 needs this round's W2 result first).
    pub const ALL: [Workload; 11] = [
        Workload::W1,
        Workload::W2,
        Workload::W2Kib,
        Workload::W3Half,
        Workload::W3Most,
        Workload::W4,
        Workload::W5,
        Workload::W6,
        Workload::W6Wide,
        Workload::W7,
        Workload::W8,
    ];

    /// Short id used on the command line and in JSON.
    pub fn id(self) -> &'static str {
        match self {
            Workload::W1 => "W1",
            Workload::W2 => "W2",
            Workload::W2Kib => "W2-1k",
            Workload::W3Half => "W3-50",
            Workload::W3Most => "W3-90",
            Workload::W4 => "W4",
            Workload::W5 => "W5",
            Workload::W6 => "W6",
            Workload::W6Wide => "W6-64",
            Workload::W7 => "W7",
            Workload::W8 => "W8",
        }
    }

    /// Parses an [`id`](Self::id) (case-insensitive); `W3` means both W3 rates.
    pub fn parse(s: &str) -> Option<Vec<Workload>> {
        if s.eq_ignore_ascii_case("W3") {
            return Some(vec![Workload::W3Half, Workload::W3Most]);
        }
        Workload::ALL
            .into_iter()
            .find(|w| w.id().eq_ignore_ascii_case(s))
            .map(|w| vec![w])
    }

    /// One-line description.
    pub fn title(self) -> &'static str {
        match self {
            Workload::W1 => "unloaded round trip: 1 connection, 64 B ping-pong",
            Workload::W2 => "small RPC: 64 B x 64 connections, closed loop",
            Workload::W2Kib => "small RPC: 1 KiB x 64 connections, closed loop",
            Workload::W3Half => "p99 under load: 64 B x 64 connections, open loop (Poisson) at 50% of the slowest server's W2 rate",
            Workload::W3Most => "p99 under load: 64 B x 64 connections, open loop (Poisson) at 90% of the slowest server's W2 rate",
            Workload::W4 => "stream echo: 64 KiB writes, 4 connections, full duplex",
            Workload::W5 => "large request/response: 64 KiB x 16 connections",
            Workload::W6 => "connection churn: connect -> one 64 B RPC -> close, 8 at a time",
            Workload::W6Wide => "connection churn: connect -> one 64 B RPC -> close, 64 at a time",
            Workload::W7 => "idle connections: each pinged once, then idle",
            Workload::W8 => "pool under slow readers: 64 B x 64 RPC + 4 x 64 KiB streams whose readers stop 10% of each period",
        }
    }

    /// The numbers this workload reports, goals attached.
    pub fn metrics(self) -> &'static [Metric] {
        use Goal::*;
        use Unit::*;
        match self {
            Workload::W1 => {
                const M: &[Metric] = &[
                    m(
                        "p50_us",
                        "p50 round trip us",
                        Micros,
                        Some(RatioAtMost(1.05)),
                    ),
                    m(
                        "p99_us",
                        "p99 round trip us",
                        Micros,
                        Some(RatioAtMost(1.1)),
                    ),
                    m("p999_us", "p99.9 round trip us", Micros, None),
                    m("req_per_s", "req/s", PerSec, None),
                    m("cpu_us_per_req", "server CPU us/req", Micros, None),
                ];
                M
            }
            Workload::W2 => {
                const M: &[Metric] = &[
                    m("req_per_s", "req/s", PerSec, Some(RatioAtLeast(1.1))),
                    m(
                        "cpu_us_per_req",
                        "server CPU us/req",
                        Micros,
                        Some(RatioAtMost(0.85)),
                    ),
                    m("p99_us", "p99 us", Micros, None),
                    RR_COMMON[0],
                    RR_COMMON[1],
                    RR_COMMON[2],
                    m(
                        "enobufs",
                        "zerorx ENOBUFS in window",
                        Count,
                        Some(AtMost(0.0)),
                    ),
                    m("client_us_per_op", "client CPU us/req", Micros, None),
                    m(
                        "server_user_share_pct",
                        "server user-space share",
                        Percent,
                        None,
                    ),
                    m("enters_per_op", "zerorx io_uring_enter/req", Ratio, None),
                    m("cqes_per_op", "zerorx CQEs/req", Ratio, None),
                ];
                M
            }
            Workload::W2Kib => {
                const M: &[Metric] = &[
                    m("req_per_s", "req/s", PerSec, None),
                    m("cpu_us_per_req", "server CPU us/req", Micros, None),
                    m("p99_us", "p99 us", Micros, None),
                    RR_COMMON[1],
                    RR_COMMON[2],
                    RR_COMMON[3],
                ];
                M
            }
            Workload::W3Half => {
                const M: &[Metric] = &w3_metrics(0.8);
                M
            }
            Workload::W3Most => {
                const M: &[Metric] = &w3_metrics(0.6);
                M
            }
            Workload::W4 => {
                const M: &[Metric] = &[
                    m("gb_per_s", "echoed GB/s", GbPerSec, Some(RatioAtLeast(1.0))),
                    m(
                        "cpu_s_per_gb",
                        "server CPU s/GB",
                        SecPerGb,
                        Some(RatioAtMost(1.0)),
                    ),
                    RR_COMMON[1],
                    RR_COMMON[2],
                    m(
                        "enobufs",
                        "zerorx ENOBUFS in window",
                        Count,
                        Some(AtMost(0.0)),
                    ),
                    m(
                        "server_user_share_pct",
                        "server user-space share",
                        Percent,
                        None,
                    ),
                    m(
                        "enters_per_op",
                        "zerorx enters per client recv",
                        Ratio,
                        None,
                    ),
                    m("cqes_per_op", "zerorx CQEs per client recv", Ratio, None),
                ];
                M
            }
            Workload::W5 => {
                const M: &[Metric] = &[
                    m("req_per_s", "req/s", PerSec, Some(RatioAtLeast(1.0))),
                    m(
                        "cpu_us_per_req",
                        "server CPU us/req",
                        Micros,
                        Some(RatioAtMost(1.0)),
                    ),
                    m("p99_us", "p99 us", Micros, None),
                    RR_COMMON[1],
                    RR_COMMON[3],
                ];
                M
            }
            Workload::W6 | Workload::W6Wide => {
                const M: &[Metric] = &[
                    m("conn_per_s", "conn/s", PerSec, Some(RatioAtLeast(1.3))),
                    m(
                        "cpu_us_per_conn",
                        "server CPU us/conn",
                        Micros,
                        Some(RatioAtMost(0.75)),
                    ),
                    m("p99_us", "p99 connect+RPC+close us", Micros, None),
                    RR_COMMON[1],
                    m("enters_per_op", "zerorx io_uring_enter/conn", Ratio, None),
                    m("cqes_per_op", "zerorx CQEs/conn", Ratio, None),
                ];
                M
            }
            Workload::W7 => {
                const M: &[Metric] = &[
                    m(
                        "rss_per_conn",
                        "server RSS B/conn",
                        Bytes,
                        Some(AtMost(256.0)),
                    ),
                    m("anon_per_conn", "server RssAnon B/conn", Bytes, None),
                    m("heap_per_conn", "server malloc'd B/conn", Bytes, None),
                    m(
                        "wakeups_per_s",
                        "wake-ups/s while idle",
                        PerSec,
                        Some(AtMost(0.0)),
                    ),
                    m("conns", "idle connections", Count, None),
                ];
                M
            }
            Workload::W8 => {
                const M: &[Metric] = &[
                    m("req_per_s", "RPC req/s", PerSec, None),
                    m("p99_us", "RPC p99 us", Micros, None),
                    m("p999_us", "RPC p99.9 us", Micros, None),
                    m("gb_per_s", "stream GB/s", GbPerSec, None),
                    m("enobufs", "zerorx ENOBUFS in window", Count, None),
                    m(
                        "pool_high_water",
                        "zerorx pool high water (buffers)",
                        Count,
                        None,
                    ),
                ];
                M
            }
        }
    }
}

mod cell;

pub use cell::{run_cell, CellConfig, CellMetrics};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_back() {
        for w in Workload::ALL {
            assert_eq!(Workload::parse(w.id()), Some(vec![w]));
        }
        assert_eq!(
            Workload::parse("w3"),
            Some(vec![Workload::W3Half, Workload::W3Most])
        );
        assert_eq!(Workload::parse("W9"), None);
    }

    #[test]
    fn goals_judge_ratios_and_values() {
        assert_eq!(Goal::RatioAtLeast(1.1).met(5.0, Some(1.2)), Some(true));
        assert_eq!(Goal::RatioAtLeast(1.1).met(5.0, Some(1.0)), Some(false));
        assert_eq!(Goal::RatioAtMost(0.85).met(5.0, Some(0.85)), Some(true));
        assert_eq!(Goal::RatioAtMost(0.85).met(5.0, None), None);
        assert_eq!(Goal::AtMost(256.0).met(300.0, None), Some(false));
        assert_eq!(Goal::AtMost(0.0).met(0.0, Some(9.0)), Some(true));
    }

    #[test]
    fn every_goal_metric_is_unique_per_workload() {
        for w in Workload::ALL {
            let keys: Vec<_> = w.metrics().iter().map(|m| m.key).collect();
            let mut dedup = keys.clone();
            dedup.sort();
            dedup.dedup();
            assert_eq!(keys.len(), dedup.len(), "{w:?}");
        }
    }
}
