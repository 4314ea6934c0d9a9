//! The run report: every figure the harness measured, as data (`--json`), as text for
//! a person, as a verdict, and compared with another run.

pub mod checks;
pub mod compare;
pub mod plot;
pub mod text;
pub mod verdict;

use crate::errors::ErrorSample;
use crate::faults::{FaultKind, KindCounts};
use crate::rss::RssSeries;
use crate::sampler::TimelinePoint;
use crate::server::stats::{CounterSnapshot, ModeInfo, PoolFigures, RpcFigures, RuntimeFigures};
use checks::ServerCheck;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The whole report of one run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Program and version.
    pub tool: String,
    /// Scenario run.
    pub scenario: crate::cli::Scenario,
    /// What was loaded.
    pub target: TargetInfo,
    /// The load's shape.
    pub load: LoadInfo,
    /// How the server receives, and why (unknown for an external server).
    pub receive_mode: ModeInfo,
    /// Seconds from the first request to the last reply.
    pub elapsed_s: f64,
    /// Requests sent and answered.
    pub requests: RequestCounts,
    /// Rates over the whole run.
    pub throughput: Throughput,
    /// Latency of correct replies.
    pub latency: LatencySummary,
    /// Connections opened.
    pub connections: ConnectionFigures,
    /// Failures by kind (only kinds that happened).
    pub errors: BTreeMap<String, u64>,
    /// Failures one by one (capped), each with its request id where there is one.
    pub error_samples: Vec<ErrorSample>,
    /// Correct replies per client worker.
    pub client_workers: Vec<Share>,
    /// What the server counted (embedded server only).
    pub server: Option<ServerSection>,
    /// Memory.
    pub rss: RssSection,
    /// Per second.
    pub timeline: Vec<TimelinePoint>,
    /// Faults injected, by kind.
    #[serde(default)]
    pub faults: Vec<FaultFigures>,
    /// Faults that got the wrong reaction or could not be injected, in words.
    #[serde(default)]
    pub fault_samples: Vec<String>,
    /// The server's counters against the harness's own accounting.
    #[serde(default)]
    pub server_checks: Vec<ServerCheck>,
    /// Why the run stopped early, if it did.
    pub aborted: Option<String>,
    /// Things worth knowing that are not failures.
    pub notes: Vec<String>,
    /// Pass or fail, in one line, and why.
    pub verdict: Verdict,
}

/// One fault kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FaultFigures {
    /// Which fault.
    pub kind: FaultKind,
    /// Injections per second asked for.
    pub rate_per_s: f64,
    /// What the server must do about it.
    pub expectation: String,
    /// What happened.
    pub counts: KindCounts,
}

/// The target.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetInfo {
    /// Started by the harness (`true`) or given with `--connect`.
    pub embedded: bool,
    /// Address loaded.
    pub addr: String,
    /// Server process id (embedded).
    pub server_pid: Option<u32>,
    /// Server worker threads (embedded).
    pub server_threads: Option<usize>,
}

/// The load's shape.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadInfo {
    /// Concurrent connections.
    pub connections: usize,
    /// Client worker threads.
    pub client_threads: usize,
    /// Requests in flight per connection.
    pub depth: usize,
    /// Payload sizes cycled.
    pub sizes: Vec<usize>,
    /// Request kinds cycled.
    pub kinds: Vec<String>,
    /// Open-loop rate, requests per second (closed loop when absent).
    pub rate_per_s: Option<f64>,
    /// Requests per connection before it closes (churn).
    pub per_conn: Option<u64>,
    /// Planned duration.
    pub duration_s: Option<f64>,
    /// Planned request count.
    pub requests: Option<u64>,
    /// Reply timeout.
    pub timeout_s: f64,
}

/// Requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestCounts {
    /// Sent.
    pub sent: u64,
    /// Answered correctly.
    pub ok: u64,
    /// Oneway requests among those sent (no reply; counted by the server).
    #[serde(default)]
    pub oneway: u64,
    /// Wrong or missing (lost, duplicate, corrupted, misrouted, unknown id, rejected,
    /// server error).
    pub failed: u64,
}

/// Rates over the whole run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Correct replies per second.
    pub req_per_s: f64,
    /// Megabytes (10^6) per second sent by the harness.
    pub mb_per_s_sent: f64,
    /// Megabytes per second of correct replies.
    pub mb_per_s_received: f64,
}

/// Latency figures in microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Values recorded.
    pub count: u64,
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Largest.
    pub max_us: f64,
    /// Open loop: measured from the intended send time.
    pub from_intended_send: bool,
    /// `(percentile, microseconds)` from 0 to 100, for plots.
    pub curve: Vec<(f64, f64)>,
}

impl LatencySummary {
    /// Summarises a histogram of nanoseconds.
    pub fn from_histogram(h: &Histogram<u64>, from_intended_send: bool) -> LatencySummary {
        let us = |q: f64| h.value_at_quantile(q) as f64 / 1e3;
        if h.is_empty() {
            return LatencySummary {
                from_intended_send,
                ..LatencySummary::default()
            };
        }
        // Percentiles 0, 68.4, 90, 96.8, 99, ...: evenly spaced on a 1/(1-q) log axis.
        let mut curve: Vec<(f64, f64)> = (0..=50)
            .map(|k| {
                let q = 1.0 - 10f64.powf(-(k as f64) / 10.0);
                (q * 100.0, us(q))
            })
            .collect();
        curve.push((100.0, h.max() as f64 / 1e3));
        LatencySummary {
            count: h.len(),
            mean_us: h.mean() / 1e3,
            p50_us: us(0.5),
            p90_us: us(0.9),
            p99_us: us(0.99),
            p999_us: us(0.999),
            max_us: h.max() as f64 / 1e3,
            from_intended_send,
            curve,
        }
    }
}

/// Connections.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConnectionFigures {
    /// Established.
    pub opened: u64,
    /// Established per second.
    pub per_s: f64,
    /// Time to connect.
    pub connect: LatencySummary,
}

/// One worker's part of the work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Share {
    /// Worker index.
    pub worker: usize,
    /// Requests it handled.
    pub requests: u64,
    /// Percentage of all requests.
    pub percent: f64,
}

/// Shares of `counts` in percent.
pub fn shares(counts: &[u64]) -> Vec<Share> {
    let total: u64 = counts.iter().sum();
    counts
        .iter()
        .enumerate()
        .map(|(worker, &requests)| Share {
            worker,
            requests,
            percent: if total == 0 {
                0.0
            } else {
                requests as f64 * 100.0 / total as f64
            },
        })
        .collect()
}

/// Busiest worker's requests over the mean (1.0 = perfectly even).
pub fn imbalance(shares: &[Share]) -> f64 {
    let total: u64 = shares.iter().map(|s| s.requests).sum();
    let max = shares.iter().map(|s| s.requests).max().unwrap_or(0);
    if total == 0 {
        1.0
    } else {
        max as f64 * shares.len() as f64 / total as f64
    }
}

/// What the server counted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSection {
    /// What the shares count: `requests` (harness frames) or `receive completions`
    /// (Thrift, whose server counts requests only in total).
    #[serde(default)]
    pub share_of: String,
    /// The Thrift server's counters (rpc scenario).
    #[serde(default)]
    pub rpc: Option<RpcFigures>,
    /// Sums over workers.
    pub totals: CounterSnapshot,
    /// Requests per worker.
    pub shares: Vec<Share>,
    /// Busiest worker over the mean.
    pub imbalance: f64,
    /// Per worker.
    pub workers: Vec<ServerWorkerRow>,
}

/// One server worker.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerWorkerRow {
    /// Worker index.
    pub worker: usize,
    /// Its counters.
    pub counters: CounterSnapshot,
    /// Its runtime's counters.
    pub runtime: RuntimeFigures,
    /// Its receive pool.
    pub pool: Option<PoolFigures>,
    /// The zero-copy instance it registered, if any.
    #[serde(default)]
    pub zc_pool: Option<PoolFigures>,
}

/// Memory of both processes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RssSection {
    /// The harness.
    pub harness: RssSeries,
    /// The embedded server.
    pub server: Option<RssSeries>,
}

/// The outcome.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// Every request answered correctly, nothing failed, memory steady.
    pub pass: bool,
    /// One line for a person.
    pub line: String,
    /// Each reason for a failure.
    pub reasons: Vec<String>,
}
