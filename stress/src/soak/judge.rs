//! The soak's checks: each server's samples after the warm-up against the baseline,
//! the runs' verdicts, and the trends (p99, RSS slope).

use super::{
    RssTrend, ServerSample, SoakCheck, SoakInterval, SoakMeasure, SoakReport, FD_SLACK, ROTATION,
    RSS_SLACK, TASK_SLACK,
};
use crate::faults::FaultSpec;
use std::time::Duration;

/// The checks and the verdict over `intervals`.
pub(super) fn judge(
    total: Duration,
    interval: Duration,
    faults: Vec<FaultSpec>,
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
        let mut check = |what: SoakMeasure, f: fn(&ServerSample) -> u64, bound: u64| {
            checks.push(SoakCheck::new(base.service, what, f(base), worst(f), bound));
        };
        check(
            SoakMeasure::OpenFds,
            |s| s.state.open_fds,
            base.state.open_fds + FD_SLACK,
        );
        check(
            SoakMeasure::Tasks,
            |s| s.state.tasks,
            base.state.tasks + TASK_SLACK,
        );
        check(SoakMeasure::ChunksHeld, |s| s.state.chunks_held, 0);
        // RSS: a server's allocator keeps what its worst interval needed (a burst of
        // stalled replies), so single samples swing by tens of MiB with no leak (an
        // hour here: 204 to 304 MiB, medians of every 5 minutes flat). A leak is a
        // trend: the median of the last third of the samples after the warm-up against
        // that of the first third.
        let rss: Vec<u64> = after.iter().map(|i| i.servers[k].state.rss_bytes).collect();
        let base_rss = base.state.rss_bytes;
        let (first, last) = match rss.len() {
            0 => (base_rss, base_rss),
            n if n < 3 => (base_rss, rss.iter().copied().max().unwrap_or(0)),
            n => (median(&rss[..n / 3]), median(&rss[n - n / 3..])),
        };
        checks.push(SoakCheck::new(
            base.service,
            SoakMeasure::RssMedian,
            first,
            last,
            first + RSS_SLACK.max(first / 10),
        ));
        // Every interval, the warm-up too, must let go of what it held.
        let held = intervals
            .iter()
            .map(|i| i.servers[k].state.chunks_held)
            .max()
            .unwrap_or(0);
        checks.push(SoakCheck::new(
            base.service,
            SoakMeasure::ChunksHeldWarmUpIncluded,
            intervals[0].servers[k].state.chunks_held,
            held,
            0,
        ));
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
                .map(|i| i.servers[k].state.rss_bytes as f64 / (1024.0 * 1024.0))
                .collect();
            RssTrend {
                service: base.service,
                mib_per_hour: slope(&ys).map(|s| s * per_hour),
            }
        })
        .collect();
    let failed_runs: Vec<String> = intervals
        .iter()
        .enumerate()
        .filter(|(_, i)| !i.pass)
        .map(|(n, i)| format!("interval {} ({}): {}", n + 1, i.scenario.name(), i.verdict))
        .collect();
    let broken: Vec<String> = checks
        .iter()
        .filter(|c| !c.ok)
        .map(|c| {
            format!(
                "{} server {}: {} against a bound of {} (baseline {})",
                c.service,
                c.what,
                c.unit.show(c.worst),
                c.unit.show(c.bound),
                c.unit.show(c.baseline)
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

/// The median of `xs` (not empty).
fn median(xs: &[u64]) -> u64 {
    let mut v = xs.to_vec();
    v.sort_unstable();
    v[v.len() / 2]
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Scenario;
    use crate::quiesce::ServerState;
    use crate::soak::text::render;
    use crate::soak::SoakServer;

    fn iv(scenario: Scenario, p99: f64, fds: u64, rss: u64, held: u64) -> SoakInterval {
        let server = |service| ServerSample {
            service,
            state: ServerState {
                connections: 0,
                open_fds: fds,
                tasks: 10,
                chunks_held: held,
                rss_bytes: rss,
            },
            unsettled: None,
            slow: None,
        };
        SoakInterval {
            scenario,
            requests: 100,
            req_per_s: 10.0,
            p50_us: 10.0,
            p99_us: p99,
            p999_us: p99,
            max_us: p99,
            faults: 8,
            verdict: "PASS".into(),
            pass: true,
            servers: vec![server(SoakServer::Rpc), server(SoakServer::Frames)],
        }
    }

    const MIB: u64 = 1 << 20;

    #[test]
    fn flat_servers_pass_and_the_baseline_ends_the_first_rotation() {
        let ivs: Vec<_> = (0..9)
            .map(|i| {
                iv(
                    Scenario::Rpc,
                    100.0,
                    if i == 0 { 12 } else { 20 },
                    30 * MIB,
                    0,
                )
            })
            .collect();
        let r = judge(
            Duration::from_secs(90),
            Duration::from_secs(10),
            crate::faults::parse_list("all:20/s").unwrap(),
            ivs,
        );
        assert!(r.pass, "{}", render(&r));
        assert_eq!(r.baseline, 2);
        assert_eq!(r.p99_trend, Some(1.0));
        let trends: Vec<_> = r
            .rss_mib_per_hour
            .iter()
            .map(|t| (t.service, t.mib_per_hour))
            .collect();
        assert_eq!(
            trends,
            [
                (SoakServer::Rpc, Some(0.0)),
                (SoakServer::Frames, Some(0.0))
            ]
        );
        assert!(render(&r).contains("verdict          PASS"));
    }

    #[test]
    fn a_leak_of_fds_or_memory_or_chunks_fails_with_its_figures() {
        // One fd more per interval after the warm-up.
        let fds: Vec<_> = (0..6)
            .map(|i| iv(Scenario::Stream, 100.0, 20 + i, 30 * MIB, 0))
            .collect();
        let r = judge(
            Duration::from_secs(60),
            Duration::from_secs(10),
            Vec::new(),
            fds,
        );
        assert!(!r.pass);
        assert!(
            r.verdict
                .contains("open fds at quiesce: 25 against a bound of 24 (baseline 22)"),
            "{}",
            r.verdict
        );

        // 4 MiB more every interval: the last third's median is 16 MiB over the
        // first's (46 MiB), above the 8 MiB allowed.
        let rss: Vec<_> = (0..9)
            .map(|i| iv(Scenario::Stream, 100.0, 20, 30 * MIB + i * 4 * MIB, 0))
            .collect();
        let r = judge(
            Duration::from_secs(90),
            Duration::from_secs(10),
            Vec::new(),
            rss,
        );
        assert!(
            !r.pass
                && r.verdict.contains(
                    "RSS at quiesce, last third's median over the first's: 62.0 MiB against \
                     a bound of 54.0 MiB (baseline 46.0 MiB)"
                ),
            "{}",
            r.verdict
        );
        // 4 MiB per 10 s interval is 1440 MiB an hour.
        let trend = r.rss_mib_per_hour[0]
            .mib_per_hour
            .expect("3 samples after the warm-up");
        assert!((trend - 1440.0).abs() < 1e-6, "{trend}");

        // A chunk held once, even in the warm-up, fails.
        let mut held: Vec<_> = (0..6)
            .map(|_| iv(Scenario::Rpc, 100.0, 20, 30 * MIB, 0))
            .collect();
        held[0].servers[1].state.chunks_held = 3;
        let r = judge(
            Duration::from_secs(60),
            Duration::from_secs(10),
            Vec::new(),
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

    /// A tool reading the report's JSON learns each check's unit from a field, not
    /// from the wording of its description.
    #[test]
    fn each_check_says_its_unit() {
        let ivs: Vec<_> = (0..6)
            .map(|_| iv(Scenario::Rpc, 100.0, 20, 30 * MIB, 0))
            .collect();
        let r = judge(
            Duration::from_secs(60),
            Duration::from_secs(10),
            Vec::new(),
            ivs,
        );
        let json = serde_json::to_value(&r).expect("json");
        let checks = json["checks"].as_array().expect("checks");
        let units: Vec<&str> = checks
            .iter()
            .filter(|c| c["service"] == "rpc")
            .map(|c| c["unit"].as_str().unwrap_or("none"))
            .collect();
        assert_eq!(
            units,
            ["count", "count", "count", "bytes", "count"],
            "{json}"
        );
        assert!(render(&r).contains("30.0 MiB"), "{}", render(&r));
    }

    #[test]
    fn rss_that_swings_without_a_trend_passes() {
        // What an hour showed: single samples 100 MiB apart, medians flat.
        let ivs: Vec<_> = (0..12)
            .map(|i| {
                iv(
                    Scenario::Rpc,
                    100.0,
                    20,
                    if i % 2 == 0 { 200 } else { 300 } * MIB,
                    0,
                )
            })
            .collect();
        let r = judge(
            Duration::from_secs(120),
            Duration::from_secs(10),
            Vec::new(),
            ivs,
        );
        assert!(r.pass, "{}", render(&r));
    }

    #[test]
    fn a_failed_interval_or_a_server_that_does_not_quiesce_fails_the_soak() {
        let mut ivs: Vec<_> = (0..3)
            .map(|_| iv(Scenario::Churn, 100.0, 20, 30 * MIB, 0))
            .collect();
        ivs[1].pass = false;
        ivs[1].verdict = "FAIL: 1 wrong reply".into();
        ivs[2].servers[0].unsettled = Some("w0 fd 9: RECV".into());
        let r = judge(
            Duration::from_secs(30),
            Duration::from_secs(10),
            Vec::new(),
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
