//! Pass or fail: the rules, applied to a finished report.

use super::{Report, Verdict};
use crate::errors::ErrorKind;

/// Error kinds that concern one request (wrong or missing replies).
pub const REQUEST_KINDS: [ErrorKind; 7] = [
    ErrorKind::Lost,
    ErrorKind::Duplicate,
    ErrorKind::Corrupted,
    ErrorKind::Misrouted,
    ErrorKind::UnknownId,
    ErrorKind::Rejected,
    ErrorKind::ServerError,
];

/// Judges a report. A run passes when it was not aborted, at least one request was
/// answered, no reply was wrong or missing, no well-formed connection failed, every
/// injected fault got the reaction it must, the server's counters match what the
/// harness did, and neither process's memory grew without bound.
pub fn decide(r: &Report) -> Verdict {
    let mut reasons = Vec::new();
    if let Some(why) = &r.aborted {
        reasons.push(format!("run aborted: {why}"));
    }
    let count = |k: ErrorKind| r.errors.get(k.name()).copied().unwrap_or(0);
    let wrong: u64 = REQUEST_KINDS.iter().map(|&k| count(k)).sum();
    if wrong > 0 {
        let parts: Vec<String> = REQUEST_KINDS
            .iter()
            .filter(|&&k| count(k) > 0)
            .map(|&k| format!("{} {}", count(k), k))
            .collect();
        reasons.push(format!(
            "{wrong} requests wrong or missing ({})",
            parts.join(", ")
        ));
    }
    let conn_errors: Vec<String> = ErrorKind::ALL
        .iter()
        .filter(|k| !REQUEST_KINDS.contains(k) && count(**k) > 0)
        .map(|&k| format!("{} {}", count(k), k))
        .collect();
    if !conn_errors.is_empty() {
        reasons.push(format!("connection failures: {}", conn_errors.join(", ")));
    }
    if r.requests.ok == 0 {
        reasons.push("no request was answered".into());
    }
    for c in r.server_checks.iter().filter(|c| !c.ok) {
        reasons.push(format!(
            "the server counted {} {}, the harness expected {} {}",
            c.observed, c.what, c.rule, c.expected
        ));
    }
    let wrong_faults: u64 = r.faults.iter().map(|f| f.counts.unexpected).sum();
    if wrong_faults > 0 {
        let first = r
            .fault_samples
            .iter()
            .find(|s| s.contains("unexpected"))
            .map_or_else(String::new, |s| format!(" (first: {s})"));
        reasons.push(format!(
            "{wrong_faults} injected faults got the wrong reaction{first}"
        ));
    }
    for (who, s) in [
        ("harness", Some(&r.rss.harness)),
        ("server", r.rss.server.as_ref()),
    ] {
        if let Some(s) = s.filter(|s| s.growing) {
            reasons.push(format!(
                "{who} memory grew without bound: +{} MiB, {:.1} MiB/s at the end",
                s.growth_kib / 1024,
                s.slope_kib_per_s / 1024.0
            ));
        }
    }
    let pass = reasons.is_empty();
    let injected: u64 = r.faults.iter().map(|f| f.counts.as_expected).sum();
    let faults = if r.faults.is_empty() {
        String::new()
    } else if r.server.is_none() {
        format!(" through {injected} injected faults")
    } else {
        format!(" through {injected} injected faults, each counted by the server")
    };
    let line = if pass {
        format!(
            "PASS: {} requests, every reply correct{faults}; {} req/s, p99 {}; memory steady",
            super::text::count(r.requests.ok),
            super::text::count(r.throughput.req_per_s.round() as u64),
            super::text::us(r.latency.p99_us)
        )
    } else {
        format!("FAIL: {}", reasons[0])
    };
    Verdict {
        pass,
        line,
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok_report() -> Report {
        let mut r = Report::default();
        r.requests.ok = 10;
        r.requests.sent = 10;
        r
    }

    #[test]
    fn a_clean_run_passes() {
        let v = decide(&ok_report());
        assert!(v.pass, "{v:?}");
        assert!(v.line.starts_with("PASS"));
    }

    #[test]
    fn each_rule_fails_the_run() {
        let mut r = ok_report();
        r.errors.insert("lost".into(), 2);
        let v = decide(&r);
        assert!(!v.pass);
        assert!(
            v.line.contains("2 requests wrong or missing (2 lost)"),
            "{}",
            v.line
        );

        let mut r = ok_report();
        r.errors.insert("connect".into(), 1);
        assert!(!decide(&r).pass);

        let mut r = ok_report();
        r.requests.ok = 0;
        assert!(!decide(&r).pass);

        let mut r = ok_report();
        r.aborted = Some("server died".into());
        assert!(decide(&r).line.contains("server died"));

        let mut r = ok_report();
        r.rss.harness.growing = true;
        assert!(!decide(&r).pass);

        let mut r = ok_report();
        r.server_checks.push(super::super::checks::ServerCheck {
            what: "malformed frames".into(),
            expected: 0,
            observed: 1,
            rule: super::super::checks::CheckRule::Exact,
            ok: false,
        });
        let v = decide(&r);
        assert!(
            v.line.contains("the server counted 1 malformed frames"),
            "{}",
            v.line
        );

        let mut r = ok_report();
        r.faults.push(super::super::FaultFigures {
            kind: crate::faults::FaultKind::Malformed,
            rate_per_s: 1.0,
            expectation: String::new(),
            counts: crate::faults::KindCounts {
                attempted: 1,
                unexpected: 1,
                ..Default::default()
            },
        });
        r.fault_samples
            .push("malformed: unexpected: kept open".into());
        let v = decide(&r);
        assert!(v.line.contains("1 injected faults got the wrong reaction (first: malformed: unexpected: kept open)"), "{}", v.line);
    }
}
