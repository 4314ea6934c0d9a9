//! The server's counters against what the harness did: every connection the harness
//! opened and every fault it injected must show up in the server's own count, as
//! exactly what it was.

use crate::faults::{FaultKind, KindCounts};
use crate::server::stats::{CounterSnapshot, RpcFigures};
use serde::{Deserialize, Serialize};

/// One counter compared.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerCheck {
    /// What was counted.
    pub what: String,
    /// What the harness's own accounting says it should be.
    pub expected: u64,
    /// What the server counted.
    pub observed: u64,
    /// How `observed` must compare with `expected`.
    pub rule: CheckRule,
    /// Whether the rule holds.
    pub ok: bool,
}

/// How a server's count must compare with the harness's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CheckRule {
    /// Equal.
    #[default]
    #[serde(rename = "exact")]
    Exact,
    /// No more: the server may count fewer (the harness could not tell exactly,
    /// e.g. after failed connections).
    #[serde(rename = "at most")]
    AtMost,
}

impl CheckRule {
    /// `Exact` when the harness knows exactly, else `AtMost`.
    pub fn of(exact: bool) -> CheckRule {
        if exact {
            CheckRule::Exact
        } else {
            CheckRule::AtMost
        }
    }

    /// Whether `observed` keeps the rule against `expected`.
    pub fn holds(self, observed: u64, expected: u64) -> bool {
        match self {
            CheckRule::Exact => observed == expected,
            CheckRule::AtMost => observed <= expected,
        }
    }
}

impl std::fmt::Display for CheckRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `pad`, so the report's columns can set a width.
        f.pad(match self {
            CheckRule::Exact => "exact",
            CheckRule::AtMost => "at most",
        })
    }
}

/// What the harness knows about the connections it closed itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientCloses {
    /// Well-formed connections closed after at least one request.
    pub clean: u64,
    /// Well-formed connections closed without sending anything.
    pub silent: u64,
    /// Connections established (well-formed and faulty).
    pub connects: u64,
    /// Some connection failed or some fault could not be injected: only upper
    /// bounds can be checked.
    pub inexact: bool,
}

/// Compares the server's totals with the harness's accounting.
pub fn server_checks(
    t: &CounterSnapshot,
    closes: &ClientCloses,
    faults: &[(FaultKind, KindCounts)],
    burst_conns: u64,
) -> Vec<ServerCheck> {
    let done = |k: FaultKind| {
        faults
            .iter()
            .filter(|(f, _)| *f == k)
            .map(|(_, c)| c.as_expected)
            .sum::<u64>()
    };
    let tried = |k: FaultKind| {
        faults
            .iter()
            .filter(|(f, _)| *f == k)
            .map(|(_, c)| c.attempted)
            .sum::<u64>()
    };
    let exact = !closes.inexact;
    let mut out = Vec::new();
    let mut check = |what: &str, observed: u64, expected: u64, upper: u64| {
        let rule = CheckRule::of(exact);
        let shown = if exact { expected } else { upper };
        out.push(ServerCheck {
            what: what.to_owned(),
            expected: shown,
            observed,
            rule,
            ok: rule.holds(observed, shown),
        });
    };
    use FaultKind::*;
    check(
        "malformed frames",
        t.malformed,
        done(Malformed),
        tried(Malformed),
    );
    check(
        "oversized frames",
        t.oversized,
        done(Oversized),
        tried(Oversized),
    );
    check(
        "requests with a bad CRC",
        t.bad_checksum,
        done(Corrupt),
        tried(Corrupt),
    );
    // A connection the harness resets ends, on the server, as a frame cut short, a
    // reset between frames, a reply it could not send, or (reset while still in the
    // accept queue) a failed accept: which one depends on timing, so the sum is checked.
    check(
        "connections reset by the harness",
        t.truncated + t.resets + t.send_errors + t.aborted_before_accept,
        done(Reset) + done(SlowRead),
        tried(Reset) + tried(SlowRead),
    );
    if exact {
        check(
            "connections closed without a byte",
            t.silent,
            closes.silent + done(Idle),
            0,
        );
        check(
            "connections closed cleanly",
            t.clean_closes,
            closes.clean + done(HalfClose) + done(Corrupt) + done(Burst) * burst_conns,
            0,
        );
        check(
            "connections accepted or reset before accept",
            t.accepted + t.aborted_before_accept,
            closes.connects,
            0,
        );
    }
    out
}

/// Compares the Thrift server's counters with the harness's accounting.
pub fn rpc_checks(
    r: &RpcFigures,
    closes: &ClientCloses,
    faults: &[(FaultKind, KindCounts)],
    fires_sent: u64,
) -> Vec<ServerCheck> {
    let sum = |k: FaultKind, f: fn(&KindCounts) -> u64| {
        faults
            .iter()
            .filter(|(x, _)| *x == k)
            .map(|(_, c)| f(c))
            .sum::<u64>()
    };
    let done = |k| sum(k, |c| c.as_expected);
    let tried = |k| sum(k, |c| c.attempted);
    let exact = !closes.inexact;
    let mut out = Vec::new();
    let mut check = |what: &str, observed: u64, expected: u64, upper: u64, always_exact: bool| {
        let rule = CheckRule::of(exact || always_exact);
        let shown = if rule == CheckRule::Exact {
            expected
        } else {
            upper
        };
        out.push(ServerCheck {
            what: what.to_owned(),
            expected: shown,
            observed,
            rule,
            ok: rule.holds(observed, shown),
        });
    };
    use FaultKind::*;
    check(
        "oneway fire calls processed",
        r.fired.max(0) as u64,
        fires_sent,
        fires_sent,
        false,
    );
    check(
        "Thrift protocol errors",
        r.counters.protocol_errors,
        done(Malformed) + done(Corrupt),
        tried(Malformed) + tried(Corrupt),
        false,
    );
    check(
        "frames over the limit",
        r.counters.frames_too_large,
        done(Oversized),
        tried(Oversized),
        false,
    );
    check(
        "connections reset by the harness",
        r.counters.truncated
            + r.counters.io_errors
            + r.counters.write_timeouts
            + r.counters.accept_errors
            + r.counters.accept_reset,
        done(Reset) + done(SlowRead),
        tried(Reset) + tried(SlowRead),
        false,
    );
    check(
        "unknown methods, bad args, handler errors",
        r.counters.unknown_method
            + r.counters.bad_args
            + r.counters.invalid_message_type
            + r.counters.handler_errors
            + r.counters.handler_panics
            + r.counters.reply_too_large,
        0,
        0,
        true,
    );
    if exact {
        check(
            "connections accepted or reset before accept",
            r.counters.connections_accepted + r.counters.accept_errors + r.counters.accept_reset,
            closes.connects,
            0,
            true,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(attempted: u64, as_expected: u64) -> KindCounts {
        KindCounts {
            attempted,
            as_expected,
            ..KindCounts::default()
        }
    }

    #[test]
    fn exact_accounting_matches_and_mismatches_are_named() {
        let t = CounterSnapshot {
            malformed: 2,
            truncated: 2,
            aborted_before_accept: 1,
            clean_closes: 10 + 1 + 2 * 4,
            silent: 1 + 5,
            accepted: 29,
            ..CounterSnapshot::default()
        };
        let closes = ClientCloses {
            clean: 10,
            silent: 1,
            connects: 30,
            inexact: false,
        };
        let faults = [
            (FaultKind::Malformed, counts(2, 2)),
            (FaultKind::Reset, counts(3, 3)),
            (FaultKind::HalfClose, counts(1, 1)),
            (FaultKind::Burst, counts(2, 2)),
            (FaultKind::Idle, counts(5, 5)),
        ];
        let checks = server_checks(&t, &closes, &faults, 4);
        assert!(checks.iter().all(|c| c.ok), "{checks:#?}");

        let mut t2 = t;
        t2.oversized = 1;
        let bad: Vec<_> = server_checks(&t2, &closes, &faults, 4)
            .into_iter()
            .filter(|c| !c.ok)
            .collect();
        assert_eq!(bad.len(), 1);
        assert_eq!(
            (bad[0].what.as_str(), bad[0].expected, bad[0].observed),
            ("oversized frames", 0, 1)
        );
    }

    #[test]
    fn inexact_accounting_checks_upper_bounds_only() {
        let t = CounterSnapshot {
            malformed: 1,
            clean_closes: 999,
            ..CounterSnapshot::default()
        };
        let closes = ClientCloses {
            inexact: true,
            ..ClientCloses::default()
        };
        let checks = server_checks(&t, &closes, &[(FaultKind::Malformed, counts(2, 0))], 0);
        assert!(
            checks.iter().all(|c| c.ok && c.rule == CheckRule::AtMost),
            "{checks:#?}"
        );
        assert!(!checks.iter().any(|c| c.what.contains("cleanly")));
    }
}
