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
use crate::run::{plan, run, server_args, RunError};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// The scenarios a soak rotates through.
const ROTATION: [Scenario; 3] = [Scenario::Rpc, Scenario::Stream, Scenario::Churn];
/// Open fds a server may hold at quiesce beyond its baseline.
const FD_SLACK: u64 = 2;
/// Tasks a server may hold at quiesce beyond its baseline.
const TASK_SLACK: u64 = 2;
/// RSS growth a server may show over its baseline: this, or a quarter of the
/// baseline if that is more (allocator arenas and page-cache noise, not a trend).
const RSS_SLACK: u64 = 8 << 20;
/// How long a server may take to close what the interval left open.
const QUIESCE_LIMIT: Duration = Duration::from_secs(10);

/// A server's state at quiesce.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerSample {
    /// `rpc` or `frames`.
    pub service: String,
    /// Open file descriptors.
    pub open_fds: u64,
    /// Unfinished tasks over every worker.
    pub tasks: u64,
    /// Receive-pool chunks held by the application or not yet returned.
    pub chunks_held: u64,
    /// Resident memory.
    pub rss_bytes: u64,
    /// What was still open when the quiesce limit passed (from its state dump).
    pub unsettled: Option<String>,
}

/// One interval of a soak.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SoakInterval {
    /// The scenario driven.
    pub scenario: String,
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
    /// The run's verdict line, and whether it passed.
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
    pub service: String,
    /// What was measured.
    pub what: String,
    /// Its value at the baseline.
    pub baseline: u64,
    /// The largest value after the baseline.
    pub worst: u64,
    /// The most `worst` may be.
    pub bound: u64,
    /// Whether it held.
    pub ok: bool,
}

/// A soak's report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SoakReport {
    /// Length asked for, in seconds.
    pub duration_s: f64,
    /// Interval length, in seconds.
    pub interval_s: f64,
    /// The faults every interval injected.
    pub faults: String,
    /// Every interval, in order.
    pub intervals: Vec<SoakInterval>,
    /// The interval whose samples are the baseline (0-based).
    pub baseline: usize,
    /// The bounds checked.
    pub checks: Vec<SoakCheck>,
    /// Median p99 of the last third of the intervals over that of the first third
    /// (after the warm-up; `None` with fewer than 3 intervals there).
    pub p99_trend: Option<f64>,
    /// Each server's RSS trend after the warm-up: the least-squares slope over its
    /// samples, in MiB per hour (`None` with fewer than 3 samples there). Reported,
    /// not judged: a short soak's slope is mostly noise.
    #[serde(default)]
    pub rss_mib_per_hour: Vec<(String, Option<f64>)>,
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
fn sample(service: &str, s: &mut EmbeddedServer) -> Result<ServerSample, RunError> {
    let setup = |e: String| RunError::Setup(format!("the {service} server: {e}"));
    let start = Instant::now();
    let settled = loop {
        let snap = s.stats(Duration::from_secs(5)).map_err(setup)?;
        let open = match &snap.rpc {
            Some(r) => r.get("connections_active"),
            None => snap.totals().open,
        };
        if open == 0 && snap.buffers_held() == 0 {
            break true;
        }
        if start.elapsed() > QUIESCE_LIMIT {
            break false;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let dump = s.dump(Duration::from_secs(5)).map_err(setup)?;
    Ok(ServerSample {
        service: service.into(),
        open_fds: dump.process.open_fds as u64,
        tasks: dump.workers.iter().map(|w| w.tasks as u64).sum(),
        chunks_held: dump
            .workers
            .iter()
            .flat_map(|w| &w.pools)
            .map(|p| p.user + p.returns_pending)
            .sum(),
        rss_bytes: dump.process.rss_bytes.unwrap_or(0),
        unsettled: (!settled).then(|| {
            crate::stuck::describe(&dump)
                .unwrap_or_else(|| "its counters still showed an open connection".into())
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
            sample("rpc", &mut servers.rpc)?,
            sample("frames", &mut servers.frames)?,
        ];
        let interval = SoakInterval {
            scenario: scenario.name().into(),
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
    Ok(judge(total, a.soak_interval, faults, intervals))
}

/// The checks and the verdict over `intervals`.
fn judge(
    total: Duration,
    interval: Duration,
    faults: String,
    intervals: Vec<SoakInterval>,
) -> SoakReport {
    // The first full rotation warms pools, caches and allocator arenas.
    let baseline = (ROTATION.len() - 1).min(intervals.len().saturating_sub(1));
    let after = &intervals[(baseline + 1).min(intervals.len())..];
    let mut checks = Vec::new();
    let mut unsettled = Vec::new();
    for (k, base) in intervals[baseline].servers.iter().enumerate() {
        let worst = |f: fn(&ServerSample) -> u64| {
            after
                .iter()
                .map(|i| f(&i.servers[k]))
                .max()
                .unwrap_or(f(base))
        };
        let mut check = |what: &str, f: fn(&ServerSample) -> u64, bound: u64| {
            let worst = worst(f);
            checks.push(SoakCheck {
                service: base.service.clone(),
                what: what.into(),
                baseline: f(base),
                worst,
                bound,
                ok: worst <= bound,
            });
        };
        check(
            "open fds at quiesce",
            |s| s.open_fds,
            base.open_fds + FD_SLACK,
        );
        check("tasks at quiesce", |s| s.tasks, base.tasks + TASK_SLACK);
        check("pool chunks held at quiesce", |s| s.chunks_held, 0);
        check(
            "RSS at quiesce (bytes)",
            |s| s.rss_bytes,
            base.rss_bytes + RSS_SLACK.max(base.rss_bytes / 4),
        );
        // Every interval, the warm-up too, must let go of what it held.
        let held = intervals
            .iter()
            .map(|i| i.servers[k].chunks_held)
            .max()
            .unwrap_or(0);
        checks.push(SoakCheck {
            service: base.service.clone(),
            what: "pool chunks held at quiesce, warm-up included".into(),
            baseline: intervals[0].servers[k].chunks_held,
            worst: held,
            bound: 0,
            ok: held == 0,
        });
        unsettled.extend(
            intervals
                .iter()
                .enumerate()
                .filter_map(|(i, iv)| Some((i, iv.servers[k].unsettled.as_deref()?)))
                .map(|(i, what)| {
                    format!("after interval {}: {} server: {what}", i + 1, base.service)
                }),
        );
    }
    let p99_trend = (after.len() >= 3).then(|| {
        let third = after.len() / 3;
        let median = |xs: &[SoakInterval]| {
            let mut v: Vec<f64> = xs.iter().map(|i| i.p99_us).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        median(&after[after.len() - third..]) / median(&after[..third]).max(1.0)
    });
    let per_hour = 3600.0 / interval.as_secs_f64().max(1e-9);
    let rss_mib_per_hour = intervals[baseline]
        .servers
        .iter()
        .enumerate()
        .map(|(k, base)| {
            let ys: Vec<f64> = after
                .iter()
                .map(|i| i.servers[k].rss_bytes as f64 / (1024.0 * 1024.0))
                .collect();
            (base.service.clone(), slope(&ys).map(|s| s * per_hour))
        })
        .collect();
    let failed_runs: Vec<String> = intervals
        .iter()
        .enumerate()
        .filter(|(_, i)| !i.pass)
        .map(|(n, i)| format!("interval {} ({}): {}", n + 1, i.scenario, i.verdict))
        .collect();
    let broken: Vec<String> = checks
        .iter()
        .filter(|c| !c.ok)
        .map(|c| {
            format!(
                "{} server {}: {} against a bound of {} (baseline {})",
                c.service, c.what, c.worst, c.bound, c.baseline
            )
        })
        .collect();
    let requests: u64 = intervals.iter().map(|i| i.requests).sum();
    let injected: u64 = intervals.iter().map(|i| i.faults).sum();
    let pass = failed_runs.is_empty() && broken.is_empty() && unsettled.is_empty();
    let verdict = if pass {
        format!(
            "PASS: {requests} requests in {} intervals, every reply correct through {injected} \
             injected faults; fds, tasks, pool chunks and RSS flat after the warm-up",
            intervals.len()
        )
    } else {
        let reasons: Vec<String> = failed_runs
            .into_iter()
            .chain(broken)
            .chain(unsettled)
            .collect();
        format!("FAIL: {}", reasons.join("; "))
    };
    SoakReport {
        duration_s: total.as_secs_f64(),
        interval_s: interval.as_secs_f64(),
        faults,
        intervals,
        baseline,
        checks,
        p99_trend,
        rss_mib_per_hour,
        pass,
        verdict,
    }
}

/// The least-squares slope of `ys` over their indices (per step); `None` for fewer
/// than 3 points.
fn slope(ys: &[f64]) -> Option<f64> {
    if ys.len() < 3 {
        return None;
    }
    let n = ys.len() as f64;
    let mean_x = (n - 1.0) / 2.0;
    let mean_y = ys.iter().sum::<f64>() / n;
    let (mut num, mut den) = (0.0, 0.0);
    for (i, y) in ys.iter().enumerate() {
        let dx = i as f64 - mean_x;
        num += dx * (y - mean_y);
        den += dx * dx;
    }
    Some(num / den)
}

/// One interval as a line of the progress and the report.
fn interval_line(i: usize, iv: &SoakInterval) -> String {
    let mut line = format!(
        "{:>3}  {:<8} {:>9} {:>9.0} {:>8.0} {:>8.0} {:>9.0} {:>8.0} {:>6}  {:<4}",
        i + 1,
        iv.scenario,
        iv.requests,
        iv.req_per_s,
        iv.p50_us,
        iv.p99_us,
        iv.p999_us,
        iv.max_us,
        iv.faults,
        if iv.pass { "PASS" } else { "FAIL" }
    );
    for s in &iv.servers {
        let _ = write!(
            line,
            " | {:>4} {:>5} {:>4} {:>7.1}",
            s.open_fds,
            s.tasks,
            s.chunks_held,
            s.rss_bytes as f64 / (1024.0 * 1024.0)
        );
    }
    line
}

/// The soak report as text.
pub fn render(r: &SoakReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "zerorx-stress soak: {:.0} s in {} intervals of {:.0} s (rpc, stream, churn in turn), \
         faults {} in each; both servers sampled at quiesce after every interval",
        r.duration_s,
        r.intervals.len(),
        r.interval_s,
        r.faults
    );
    let servers: Vec<&str> = r
        .intervals
        .first()
        .map(|i| i.servers.iter().map(|s| s.service.as_str()).collect())
        .unwrap_or_default();
    let mut head = format!(
        "{:>3}  {:<8} {:>9} {:>9} {:>8} {:>8} {:>9} {:>8} {:>6}  {:<4}",
        "#",
        "scenario",
        "requests",
        "req/s",
        "p50 µs",
        "p99 µs",
        "p99.9 µs",
        "max µs",
        "faults",
        "run"
    );
    for s in &servers {
        let _ = write!(head, " | {s:>6}: fds tasks held RSS MiB");
    }
    let _ = writeln!(o, "{head}");
    for (i, iv) in r.intervals.iter().enumerate() {
        let _ = writeln!(o, "{}", interval_line(i, iv));
    }
    let _ = writeln!(
        o,
        "checks (baseline: the servers after interval {}, the end of the first rotation)",
        r.baseline + 1
    );
    for c in &r.checks {
        // RSS in MiB, the rest as counts.
        let (what, fig): (&str, fn(u64) -> String) = match c.what.strip_suffix(" (bytes)") {
            Some(w) => (w, |b| format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0))),
            None => (&c.what, |n| n.to_string()),
        };
        let _ = writeln!(
            o,
            "  {:<7} {:<46} baseline {:>10}  worst {:>10}  bound {:>10}  {}",
            c.service,
            what,
            fig(c.baseline),
            fig(c.worst),
            fig(c.bound),
            if c.ok { "ok" } else { "FAIL" }
        );
    }
    if let Some(t) = r.p99_trend {
        let _ = writeln!(
            o,
            "p99 trend        {t:.2}× (median p99 of the last third of the intervals after the \
             warm-up over that of the first third)"
        );
    }
    for (service, trend) in &r.rss_mib_per_hour {
        if let Some(t) = trend {
            let _ = writeln!(
                o,
                "RSS trend        {service} server {t:+.1} MiB/h (least squares over the samples \
                 after the warm-up)"
            );
        }
    }
    for iv in &r.intervals {
        for s in &iv.servers {
            if let Some(u) = &s.unsettled {
                let _ = writeln!(
                    o,
                    "note             {} server did not quiesce: {u}",
                    s.service
                );
            }
        }
    }
    let _ = writeln!(o, "\nverdict          {}", r.verdict);
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(scenario: &str, p99: f64, fds: u64, rss: u64, held: u64) -> SoakInterval {
        let server = |service: &str| ServerSample {
            service: service.into(),
            open_fds: fds,
            tasks: 10,
            chunks_held: held,
            rss_bytes: rss,
            unsettled: None,
        };
        SoakInterval {
            scenario: scenario.into(),
            requests: 100,
            req_per_s: 10.0,
            p50_us: 10.0,
            p99_us: p99,
            p999_us: p99,
            max_us: p99,
            faults: 8,
            verdict: "PASS".into(),
            pass: true,
            servers: vec![server("rpc"), server("frames")],
        }
    }

    const MIB: u64 = 1 << 20;

    #[test]
    fn flat_servers_pass_and_the_baseline_ends_the_first_rotation() {
        let ivs: Vec<_> = (0..9)
            .map(|i| iv("rpc", 100.0, if i == 0 { 12 } else { 20 }, 30 * MIB, 0))
            .collect();
        let r = judge(
            Duration::from_secs(90),
            Duration::from_secs(10),
            "all:20/s".into(),
            ivs,
        );
        assert!(r.pass, "{}", render(&r));
        assert_eq!(r.baseline, 2);
        assert_eq!(r.p99_trend, Some(1.0));
        assert_eq!(
            r.rss_mib_per_hour,
            vec![
                ("rpc".to_string(), Some(0.0)),
                ("frames".to_string(), Some(0.0))
            ]
        );
        assert!(render(&r).contains("verdict          PASS"));
    }

    #[test]
    fn a_leak_of_fds_or_memory_or_chunks_fails_with_its_figures() {
        // One fd more per interval after the warm-up.
        let fds: Vec<_> = (0..6)
            .map(|i| iv("stream", 100.0, 20 + i, 30 * MIB, 0))
            .collect();
        let r = judge(
            Duration::from_secs(60),
            Duration::from_secs(10),
            "x".into(),
            fds,
        );
        assert!(!r.pass);
        assert!(
            r.verdict
                .contains("open fds at quiesce: 25 against a bound of 24 (baseline 22)"),
            "{}",
            r.verdict
        );

        let rss: Vec<_> = (0..6)
            .map(|i| iv("stream", 100.0, 20, 30 * MIB + i * 4 * MIB, 0))
            .collect();
        let r = judge(
            Duration::from_secs(60),
            Duration::from_secs(10),
            "x".into(),
            rss,
        );
        assert!(
            !r.pass && r.verdict.contains("RSS at quiesce"),
            "{}",
            r.verdict
        );
        // 4 MiB per 10 s interval is 1440 MiB an hour.
        let trend = r.rss_mib_per_hour[0]
            .1
            .expect("3 samples after the warm-up");
        assert!((trend - 1440.0).abs() < 1e-6, "{trend}");

        // A chunk held once, even in the warm-up, fails.
        let mut held: Vec<_> = (0..6).map(|_| iv("rpc", 100.0, 20, 30 * MIB, 0)).collect();
        held[0].servers[1].chunks_held = 3;
        let r = judge(
            Duration::from_secs(60),
            Duration::from_secs(10),
            "x".into(),
            held,
        );
        assert!(
            !r.pass
                && r.verdict
                    .contains("frames server pool chunks held at quiesce, warm-up included: 3"),
            "{}",
            r.verdict
        );
    }

    #[test]
    fn a_failed_interval_or_a_server_that_does_not_quiesce_fails_the_soak() {
        let mut ivs: Vec<_> = (0..3)
            .map(|_| iv("churn", 100.0, 20, 30 * MIB, 0))
            .collect();
        ivs[1].pass = false;
        ivs[1].verdict = "FAIL: 1 wrong reply".into();
        ivs[2].servers[0].unsettled = Some("w0 fd 9: RECV".into());
        let r = judge(
            Duration::from_secs(30),
            Duration::from_secs(10),
            "x".into(),
            ivs,
        );
        assert!(!r.pass);
        assert!(
            r.verdict
                .contains("interval 2 (churn): FAIL: 1 wrong reply"),
            "{}",
            r.verdict
        );
        assert!(
            r.verdict
                .contains("after interval 3: rpc server: w0 fd 9: RECV"),
            "{}",
            r.verdict
        );
        assert_eq!(r.p99_trend, None);
    }
}
