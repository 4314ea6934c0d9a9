//! `--soak DURATION`: a long run that proves nothing leaks. One embedded server per
//! service (Thrift for `rpc`, frames for `stream` and `churn`) lives for the whole
//! soak; every interval drives one scenario against its server with every fault kind
//! at a high rate (an ordinary run with `--connect`, every reply checked), then both
//! servers are let to quiesce and sampled through their state dump: open fds, tasks,
//! receive-pool chunks held, RSS. The first full rotation warms caches and pools; the
//! samples after it must stay within the stated bounds of the baseline it ends with,
//! and the latency of each interval is kept so a tail that creeps up shows as a trend.

use crate::cli::{RunArgs, Scenario};
use crate::embedded::EmbeddedServer;
use crate::faults::{parse_list, FaultSpec};
use crate::quiesce::{self, ServerState};
use crate::run::{plan, run, server_args, RunError};
use serde::{Deserialize, Serialize};
use std::time::Duration;

mod judge;
mod measure;
mod text;

use judge::judge;
pub use measure::{SoakMeasure, Unit};
use text::interval_line;
pub use text::render;

/// The scenarios a soak rotates through.
const ROTATION: [Scenario; 3] = [Scenario::Rpc, Scenario::Stream, Scenario::Churn];
/// Open fds a server may hold at quiesce beyond its baseline.
const FD_SLACK: u64 = 2;
/// Tasks a server may hold at quiesce beyond its baseline.
const TASK_SLACK: u64 = 2;
/// RSS growth from the first third of the soak to the last (medians): this, or a
/// tenth of the first if that is more.
const RSS_SLACK: u64 = 8 << 20;
/// Past this, a server that has not closed what the interval left open is named in a
/// note (from its state dump).
const QUIESCE_NOTE: Duration = Duration::from_secs(10);
/// Past this, it has failed to: longer than the server's write timeout (30 s), which
/// closes a connection whose peer stopped taking its replies.
const QUIESCE_LIMIT: Duration = Duration::from_secs(40);

/// The two servers a soak keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SoakServer {
    /// The Thrift server, for `rpc`.
    Rpc,
    /// The frame server, for `stream` and `churn`.
    Frames,
}

impl std::fmt::Display for SoakServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SoakServer::Rpc => "rpc",
            SoakServer::Frames => "frames",
        })
    }
}

/// A server's state at quiesce.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerSample {
    /// The server.
    pub service: SoakServer,
    /// What it held.
    #[serde(flatten)]
    pub state: ServerState,
    /// What was still open when the quiesce limit passed (from its state dump).
    pub unsettled: Option<String>,
    /// A quiesce that took over 10 s but happened.
    #[serde(default)]
    pub slow: Option<SlowQuiesce>,
}

/// A quiesce that took longer than 10 s but happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlowQuiesce {
    /// How long it took, in seconds.
    pub took_s: f64,
    /// What was open at 10 s (from the server's state dump).
    pub open_then: String,
}

/// One interval of a soak.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SoakInterval {
    /// The scenario driven.
    pub scenario: Scenario,
    /// Replies checked.
    pub requests: u64,
    /// Requests per second.
    pub req_per_s: f64,
    /// Latency percentiles and maximum, in µs.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Maximum.
    pub max_us: f64,
    /// Faults injected.
    pub faults: u64,
    /// The run's verdict line.
    pub verdict: String,
    /// Whether the run passed.
    pub pass: bool,
    /// Both servers after the interval.
    pub servers: Vec<ServerSample>,
}

/// One bound checked over the samples after the warm-up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SoakCheck {
    /// The server.
    pub service: SoakServer,
    /// What was measured.
    pub what: SoakMeasure,
    /// The unit of `baseline`, `worst` and `bound` (the measure's).
    pub unit: Unit,
    /// Its value at the baseline.
    pub baseline: u64,
    /// The largest value after the baseline.
    pub worst: u64,
    /// The most `worst` may be.
    pub bound: u64,
    /// Whether it held.
    pub ok: bool,
}

impl SoakCheck {
    /// `what` of `service`: `worst` against `bound`.
    pub fn new(
        service: SoakServer,
        what: SoakMeasure,
        baseline: u64,
        worst: u64,
        bound: u64,
    ) -> SoakCheck {
        SoakCheck {
            service,
            what,
            unit: what.unit(),
            baseline,
            worst,
            bound,
            ok: worst <= bound,
        }
    }
}

/// A server's RSS trend after the warm-up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RssTrend {
    /// The server.
    pub service: SoakServer,
    /// The least-squares slope over its samples, in MiB per hour (`None` with fewer
    /// than 3 samples).
    pub mib_per_hour: Option<f64>,
}

/// A soak's report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SoakReport {
    /// Length asked for, in seconds.
    pub duration_s: f64,
    /// Interval length, in seconds.
    pub interval_s: f64,
    /// The faults every interval injected, each with its rate.
    pub faults: Vec<FaultSpec>,
    /// Every interval, in order.
    pub intervals: Vec<SoakInterval>,
    /// The interval whose samples are the baseline (0-based).
    pub baseline: usize,
    /// The bounds checked.
    pub checks: Vec<SoakCheck>,
    /// Median p99 of the last third of the intervals over that of the first third
    /// (after the warm-up; `None` with fewer than 3 intervals there).
    pub p99_trend: Option<f64>,
    /// Each server's RSS trend after the warm-up. Reported, not judged: a short
    /// soak's slope is mostly noise.
    #[serde(default)]
    pub rss_mib_per_hour: Vec<RssTrend>,
    /// Whether every interval passed and every bound held.
    pub pass: bool,
    /// Pass or fail, and why.
    pub verdict: String,
}

/// The two long-lived servers.
struct Servers {
    rpc: EmbeddedServer,
    frames: EmbeddedServer,
}

impl Servers {
    fn start(a: &RunArgs) -> Result<Servers, RunError> {
        let start = |scenario| {
            let args = RunArgs {
                scenario,
                ..a.clone()
            };
            let p = plan(&args)?;
            EmbeddedServer::start(&server_args(&args, &p), Duration::from_secs(30))
                .map_err(RunError::Setup)
        };
        Ok(Servers {
            rpc: start(Scenario::Rpc)?,
            frames: start(Scenario::Stream)?,
        })
    }

    fn for_scenario(&mut self, s: Scenario) -> &mut EmbeddedServer {
        match s {
            Scenario::Rpc => &mut self.rpc,
            _ => &mut self.frames,
        }
    }
}

/// Waits for `s` to close everything, then samples it.
fn sample(service: SoakServer, s: &mut EmbeddedServer) -> Result<ServerSample, RunError> {
    let setup = |e: String| RunError::Setup(format!("the {service} server: {e}"));
    let waited = quiesce::quiesce(s, QUIESCE_LIMIT, Some(QUIESCE_NOTE)).map_err(setup)?;
    let (state, dump) = quiesce::sample(s).map_err(setup)?;
    Ok(ServerSample {
        service,
        state,
        unsettled: (!waited.quiet).then(|| {
            crate::stuck::describe(&dump)
                .unwrap_or_else(|| "its counters still showed an open connection".into())
        }),
        slow: waited
            .open_at_note
            .filter(|_| waited.quiet)
            .map(|open_then| SlowQuiesce {
                took_s: waited.took.as_secs_f64(),
                open_then,
            }),
    })
}

/// Runs the soak `a.soak` asks for.
pub fn soak(a: &RunArgs) -> Result<SoakReport, RunError> {
    let Some(total) = a.soak else {
        return Err(RunError::Usage("--soak needs a duration".into()));
    };
    if a.connect.is_some() {
        return Err(RunError::Usage(
            "--soak starts and samples its own servers; --connect does not apply".into(),
        ));
    }
    if a.soak_interval < Duration::from_secs(1) || total < a.soak_interval {
        return Err(RunError::Usage(format!(
            "--soak-interval must be at least 1s and at most --soak ({:?}), got {:?}",
            total, a.soak_interval
        )));
    }
    if !(a.soak_fault_rate > 0.0 && a.soak_fault_rate.is_finite()) {
        return Err(RunError::Usage(
            "--soak-fault-rate must be above zero".into(),
        ));
    }
    let faults = a
        .faults
        .clone()
        .unwrap_or_else(|| format!("all:{}/s", a.soak_fault_rate));
    let fault_list = parse_list(&faults).map_err(RunError::Usage)?;
    let n = (total.as_secs_f64() / a.soak_interval.as_secs_f64())
        .round()
        .max(1.0) as usize;
    let mut servers = Servers::start(a)?;
    let mut intervals = Vec::with_capacity(n);
    for i in 0..n {
        let scenario = ROTATION[i % ROTATION.len()];
        let args = RunArgs {
            scenario,
            connect: Some(servers.for_scenario(scenario).addr().to_string()),
            duration: Some(a.soak_interval),
            requests: None,
            faults: Some(faults.clone()),
            quiet: true,
            json: None,
            hist: None,
            plot: None,
            soak: None,
            hostile: false,
            ..a.clone()
        };
        let r = run(&args)?;
        let samples = vec![
            sample(SoakServer::Rpc, &mut servers.rpc)?,
            sample(SoakServer::Frames, &mut servers.frames)?,
        ];
        let interval = SoakInterval {
            scenario,
            requests: r.requests.ok,
            req_per_s: r.throughput.req_per_s,
            p50_us: r.latency.p50_us,
            p99_us: r.latency.p99_us,
            p999_us: r.latency.p999_us,
            max_us: r.latency.max_us,
            faults: r.faults.iter().map(|f| f.counts.attempted).sum(),
            verdict: r.verdict.line.clone(),
            pass: r.verdict.pass,
            servers: samples,
        };
        if !a.quiet {
            eprintln!("{}", interval_line(i, &interval));
        }
        intervals.push(interval);
    }
    drop(servers);
    Ok(judge(total, a.soak_interval, fault_list, intervals))
}
