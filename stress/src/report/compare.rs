//! `--compare A.json B.json`: two reports side by side.

use super::text::{count, us};
use super::Report;
use std::fmt::Write;
use std::path::Path;

/// Reads a report written with `--json`.
pub fn load(path: &Path) -> Result<Report, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text)
        .map_err(|e| format!("{} is not a zerorx-stress report: {e}", path.display()))
}

/// One compared figure: name, A, B, how to print it, whether higher is better.
type Row = (&'static str, f64, f64, fn(f64) -> String, bool);

/// The two reports side by side, with B's change against A.
pub fn render(a: &Report, b: &Report, a_name: &str, b_name: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<22} {:>18} {:>18} {:>10}",
        "", a_name, b_name, "B vs A"
    );
    let rows: Vec<Row> = vec![
        (
            "requests/s",
            a.throughput.req_per_s,
            b.throughput.req_per_s,
            |v| count(v.round() as u64),
            true,
        ),
        (
            "MB/s sent",
            a.throughput.mb_per_s_sent,
            b.throughput.mb_per_s_sent,
            |v| format!("{v:.1}"),
            true,
        ),
        (
            "MB/s received",
            a.throughput.mb_per_s_received,
            b.throughput.mb_per_s_received,
            |v| format!("{v:.1}"),
            true,
        ),
        ("latency p50", a.latency.p50_us, b.latency.p50_us, us, false),
        ("latency p90", a.latency.p90_us, b.latency.p90_us, us, false),
        ("latency p99", a.latency.p99_us, b.latency.p99_us, us, false),
        (
            "latency p99.9",
            a.latency.p999_us,
            b.latency.p999_us,
            us,
            false,
        ),
        ("latency max", a.latency.max_us, b.latency.max_us, us, false),
        (
            "replies",
            a.requests.ok as f64,
            b.requests.ok as f64,
            |v| count(v as u64),
            true,
        ),
        (
            "failed requests",
            a.requests.failed as f64,
            b.requests.failed as f64,
            |v| count(v as u64),
            false,
        ),
        (
            "harness RSS peak MiB",
            a.rss.harness.peak_kib as f64 / 1024.0,
            b.rss.harness.peak_kib as f64 / 1024.0,
            |v| format!("{v:.1}"),
            false,
        ),
        (
            "server RSS peak MiB",
            a.rss
                .server
                .as_ref()
                .map_or(0.0, |s| s.peak_kib as f64 / 1024.0),
            b.rss
                .server
                .as_ref()
                .map_or(0.0, |s| s.peak_kib as f64 / 1024.0),
            |v| format!("{v:.1}"),
            false,
        ),
    ];
    for (name, va, vb, fmt, higher_is_better) in rows {
        let change = if va > 0.0 {
            let ratio = vb / va;
            let better = if higher_is_better {
                ratio > 1.0
            } else {
                ratio < 1.0
            };
            let mark = if (ratio - 1.0).abs() < 0.02 {
                ""
            } else if better {
                " +"
            } else {
                " -"
            };
            format!("{ratio:.2}x{mark}")
        } else {
            "-".into()
        };
        let _ = writeln!(o, "{name:<22} {:>18} {:>18} {change:>10}", fmt(va), fmt(vb));
    }
    let _ = writeln!(
        o,
        "{:<22} {:>18} {:>18}",
        "scenario", a.scenario, b.scenario
    );
    let _ = writeln!(
        o,
        "{:<22} {:>18} {:>18}",
        "receive mode", a.receive_mode.mode, b.receive_mode.mode
    );
    let verdict = |r: &Report| if r.verdict.pass { "PASS" } else { "FAIL" };
    let _ = writeln!(o, "{:<22} {:>18} {:>18}", "verdict", verdict(a), verdict(b));
    let _ = writeln!(
        o,
        "\n(+ better, - worse for B; changes under 2 % unmarked. A: {}; B: {})",
        a.verdict.line, b.verdict.line
    );
    o
}
