//! Fault injection (`--faults LIST`): connections that misbehave on purpose, each kind
//! at its own rate, alongside the well-formed load. Every fault uses a connection of
//! its own, so the rest of the load must stay exactly correct; the server's counters
//! must show each fault as what it was (see [`crate::report::checks`]).

pub mod actions;
pub mod injector;
pub mod wire;

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Duration;

/// One way to misbehave.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// Send half a frame, then reset the connection (RST).
    Reset,
    /// Send requests, close the sending half, read every reply to the end.
    HalfClose,
    /// Send requests without reading replies until the pipe is full; hold; reset.
    SlowRead,
    /// After a correct request, send a frame header with a bad magic.
    Malformed,
    /// Announce a payload over the server's frame limit.
    Oversized,
    /// Connect and send nothing for a while.
    Idle,
    /// Open many connections at once, each sending one large request (drains the
    /// server's receive pool).
    Burst,
    /// Send a request whose payload does not match its CRC, then a correct one.
    Corrupt,
}

impl FaultKind {
    /// Every kind, in report order.
    pub const ALL: [FaultKind; 8] = [
        FaultKind::Reset,
        FaultKind::HalfClose,
        FaultKind::SlowRead,
        FaultKind::Malformed,
        FaultKind::Oversized,
        FaultKind::Idle,
        FaultKind::Burst,
        FaultKind::Corrupt,
    ];

    /// The name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Reset => "reset",
            FaultKind::HalfClose => "halfclose",
            FaultKind::SlowRead => "slowread",
            FaultKind::Malformed => "malformed",
            FaultKind::Oversized => "oversized",
            FaultKind::Idle => "idle",
            FaultKind::Burst => "burst",
            FaultKind::Corrupt => "corrupt",
        }
    }

    /// What the server must do about it.
    pub fn expectation(self) -> &'static str {
        match self {
            FaultKind::Reset => "count a truncated frame, nothing else affected",
            FaultKind::HalfClose => "answer every request, then close",
            FaultKind::SlowRead => {
                "stop sending to it without stalling others; count a failed send"
            }
            FaultKind::Malformed => "answer the good request, then close the connection",
            FaultKind::Oversized => "close without allocating for the announced length",
            FaultKind::Idle => "hold the connection without cost; count it silent",
            FaultKind::Burst => "answer every request once buffers come back",
            FaultKind::Corrupt => {
                "refuse the bad request by id (frames: and keep serving; Thrift: then close)"
            }
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    fn parse(s: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// A fault and how often to inject it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FaultSpec {
    /// Which fault.
    pub kind: FaultKind,
    /// Injections per second.
    pub rate: f64,
}

/// A parsed fault list back in `--faults` form: `all:20/s` when every kind has one
/// rate, else `reset:2/s,idle:5/s`.
pub fn spec_text(list: &[FaultSpec]) -> String {
    match list.first() {
        Some(first)
            if list.len() == FaultKind::ALL.len() && list.iter().all(|f| f.rate == first.rate) =>
        {
            format!("all:{}/s", first.rate)
        }
        _ => list
            .iter()
            .map(|f| format!("{}:{}/s", f.kind.name(), f.rate))
            .collect::<Vec<_>>()
            .join(","),
    }
}

/// Parses `reset:2/s,idle:5,burst:0.2/s` or `all:1/s` (a bare kind means 1/s).
pub fn parse_list(s: &str) -> Result<Vec<FaultSpec>, String> {
    let mut out: Vec<FaultSpec> = Vec::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (name, rate) = match item.split_once(':') {
            Some((n, r)) => (n.trim(), crate::parse::rate(r)?),
            None => (item, 1.0),
        };
        let kinds: Vec<FaultKind> = if name == "all" {
            FaultKind::ALL.to_vec()
        } else {
            vec![FaultKind::parse(name).ok_or_else(|| {
                let names: Vec<&str> = FaultKind::ALL.iter().map(|k| k.name()).collect();
                format!("unknown fault '{name}' (one of: all, {})", names.join(", "))
            })?]
        };
        for kind in kinds {
            match out.iter_mut().find(|f| f.kind == kind) {
                Some(f) => f.rate = rate,
                None => out.push(FaultSpec { kind, rate }),
            }
        }
    }
    if out.is_empty() {
        return Err("--faults needs at least one fault".into());
    }
    out.sort_by_key(|f| f.kind);
    Ok(out)
}

/// How fault actions behave.
#[derive(Clone, Debug)]
pub struct FaultPlan {
    /// How long idle and slow-reading connections hold on.
    pub hold: Duration,
    /// Connections per burst.
    pub burst_conns: usize,
    /// Payload size of a burst request.
    pub burst_size: usize,
    /// The server's frame limit (oversized frames announce one byte more).
    pub max_frame: u32,
    /// How long to wait for the server's reaction.
    pub timeout: Duration,
}

/// The result of one fault action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Injected, and the server reacted as it must.
    AsExpected,
    /// Injected, and the server reacted wrongly.
    Unexpected(String),
    /// The fault could not be injected (e.g. connect failed).
    NotInjected(String),
}

/// Live counters of every fault kind.
#[derive(Debug, Default)]
pub struct FaultStats {
    kinds: [KindStats; FaultKind::ALL.len()],
    samples: Mutex<Vec<String>>,
}

#[derive(Debug, Default)]
struct KindStats {
    attempted: AtomicU64,
    as_expected: AtomicU64,
    unexpected: AtomicU64,
    not_injected: AtomicU64,
    skipped: AtomicU64,
    connects: AtomicU64,
}

/// A copy of one kind's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindCounts {
    /// Actions started.
    pub attempted: u64,
    /// Injected, and the server reacted as it must.
    pub as_expected: u64,
    /// Injected, and the server reacted wrongly.
    pub unexpected: u64,
    /// Could not be injected.
    pub not_injected: u64,
    /// Not started because too many of this kind were still running.
    pub skipped: u64,
    /// Connections the actions opened.
    pub connects: u64,
}

/// Most unexpected reactions kept in words.
const MAX_SAMPLES: usize = 200;

impl FaultStats {
    /// Counts an action started.
    pub fn attempted(&self, k: FaultKind) {
        self.kinds[k.index()].attempted.fetch_add(1, Relaxed);
    }

    /// Counts an action skipped.
    pub fn skipped(&self, k: FaultKind) {
        self.kinds[k.index()].skipped.fetch_add(1, Relaxed);
    }

    /// Counts a connection opened by an action.
    pub fn connected(&self, k: FaultKind) {
        self.kinds[k.index()].connects.fetch_add(1, Relaxed);
    }

    /// Records how an action ended.
    pub fn finished(&self, k: FaultKind, o: Outcome) {
        let s = &self.kinds[k.index()];
        let detail = match o {
            Outcome::AsExpected => {
                s.as_expected.fetch_add(1, Relaxed);
                return;
            }
            Outcome::Unexpected(d) => {
                s.unexpected.fetch_add(1, Relaxed);
                format!("{}: unexpected: {d}", k.name())
            }
            Outcome::NotInjected(d) => {
                s.not_injected.fetch_add(1, Relaxed);
                format!("{}: not injected: {d}", k.name())
            }
        };
        let mut v = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        if v.len() < MAX_SAMPLES {
            v.push(detail);
        }
    }

    /// A copy of kind `k`'s counters.
    pub fn counts(&self, k: FaultKind) -> KindCounts {
        let s = &self.kinds[k.index()];
        KindCounts {
            attempted: s.attempted.load(Relaxed),
            as_expected: s.as_expected.load(Relaxed),
            unexpected: s.unexpected.load(Relaxed),
            not_injected: s.not_injected.load(Relaxed),
            skipped: s.skipped.load(Relaxed),
            connects: s.connects.load(Relaxed),
        }
    }

    /// The unexpected reactions and failed injections, in words.
    pub fn samples(&self) -> Vec<String> {
        self.samples
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parsed_list_reads_back_as_the_spec_it_came_from() {
        let all = parse_list("all:20/s").expect("valid");
        assert_eq!(spec_text(&all), "all:20/s");
        let some = parse_list("idle:5/s, reset:0.5/s,burst").expect("valid");
        assert_eq!(spec_text(&some), "reset:0.5/s,idle:5/s,burst:1/s");
        assert_eq!(parse_list(&spec_text(&some)), Ok(some));
    }

    #[test]
    fn lists_parse_with_rates_and_all() {
        let l = parse_list("idle:5/s, reset:0.5/s,burst").expect("valid");
        assert_eq!(
            l,
            vec![
                FaultSpec {
                    kind: FaultKind::Reset,
                    rate: 0.5
                },
                FaultSpec {
                    kind: FaultKind::Idle,
                    rate: 5.0
                },
                FaultSpec {
                    kind: FaultKind::Burst,
                    rate: 1.0
                },
            ]
        );
        let all = parse_list("all:2/s,idle:3").expect("valid");
        assert_eq!(all.len(), FaultKind::ALL.len());
        assert!(all
            .iter()
            .all(|f| f.rate == if f.kind == FaultKind::Idle { 3.0 } else { 2.0 }));
        assert!(parse_list("nosuch:1/s")
            .unwrap_err()
            .contains("unknown fault 'nosuch'"));
        assert!(parse_list("reset:0/s").is_err());
        assert!(parse_list("").is_err());
    }

    #[test]
    fn outcomes_are_counted_and_described() {
        let s = FaultStats::default();
        s.attempted(FaultKind::Malformed);
        s.finished(
            FaultKind::Malformed,
            Outcome::Unexpected("kept the connection open".into()),
        );
        s.attempted(FaultKind::Malformed);
        s.finished(FaultKind::Malformed, Outcome::AsExpected);
        let c = s.counts(FaultKind::Malformed);
        assert_eq!((c.attempted, c.as_expected, c.unexpected), (2, 1, 1));
        assert_eq!(
            s.samples(),
            vec!["malformed: unexpected: kept the connection open"]
        );
    }
}
