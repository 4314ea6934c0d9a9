//! The soak report as text.

use super::{SoakInterval, SoakReport};
use std::fmt::Write as _;

/// One interval as a line of the progress and the report.
pub(super) fn interval_line(i: usize, iv: &SoakInterval) -> String {
    let mut line = format!(
        "{:>3}  {:<8} {:>9} {:>9.0} {:>8.0} {:>8.0} {:>9.0} {:>8.0} {:>6}  {:<4}",
        i + 1,
        iv.scenario.name(),
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
            s.state.open_fds,
            s.state.tasks,
            s.state.chunks_held,
            s.state.rss_bytes as f64 / (1024.0 * 1024.0)
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
        crate::faults::spec_text(&r.faults)
    );
    let servers: Vec<String> = r
        .intervals
        .first()
        .map(|i| i.servers.iter().map(|s| s.service.to_string()).collect())
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
        let _ = writeln!(
            o,
            "  {:<7} {:<52} baseline {:>10}  worst {:>10}  bound {:>10}  {}",
            c.service.to_string(),
            c.what.to_string(),
            c.unit.show(c.baseline),
            c.unit.show(c.worst),
            c.unit.show(c.bound),
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
    for trend in &r.rss_mib_per_hour {
        if let Some(t) = trend.mib_per_hour {
            let _ = writeln!(
                o,
                "RSS trend        {} server {t:+.1} MiB/h (least squares over the samples \
                 after the warm-up)",
                trend.service
            );
        }
    }
    for iv in &r.intervals {
        for s in &iv.servers {
            if let Some(slow) = &s.slow {
                let _ = writeln!(
                    o,
                    "note             {} server took {:.1} s to quiesce; at 10 s: {}",
                    s.service, slow.took_s, slow.open_then
                );
            }
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
