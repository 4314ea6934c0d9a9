//! The wake-up benchmark: `Handle::spawn_on` round trips to a parked worker, woken by
//! eventfd or by `IORING_OP_MSG_RING` ([`zerorx::WakeMode`]), in interleaved rounds.
//!
//! Two paths, each a round trip that includes a real wake-up (every request waits for
//! the previous reply, so the target worker has parked in between):
//! - foreign thread → worker 1 → foreign thread;
//! - worker 0 → worker 1 → worker 0.

use crate::report::Spread;
use serde::Serialize;
use std::io;
use std::time::{Duration, Instant};
use zerorx::{Runtime, WakeMode};

/// Options of one run.
#[derive(Clone, Debug)]
pub struct WakeOptions {
    /// Interleaved rounds (each runs both modes, order alternating).
    pub rounds: usize,
    /// Round trips per path per mode per round.
    pub trips: usize,
}

impl Default for WakeOptions {
    fn default() -> Self {
        WakeOptions {
            rounds: 5,
            trips: 20_000,
        }
    }
}

/// Command-line help.
pub const USAGE: &str = "\
wake-up benchmark: spawn_on round trips, eventfd vs MSG_RING

cargo bench -p zerorx-bench --bench wake -- [--rounds N] [--trips N] [--smoke]
";

impl WakeOptions {
    /// Parses arguments (`--bench` is ignored).
    pub fn parse(args: &[String]) -> Result<WakeOptions, String> {
        let mut o = WakeOptions::default();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let (flag, inline) = match a.split_once('=') {
                Some((f, v)) => (f, Some(v.to_string())),
                None => (a.as_str(), None),
            };
            let mut number = |lo: usize, hi: usize| -> Result<usize, String> {
                let v = inline
                    .clone()
                    .or_else(|| it.next().cloned())
                    .ok_or_else(|| format!("{flag} needs a value"))?;
                v.parse()
                    .ok()
                    .filter(|n| (lo..=hi).contains(n))
                    .ok_or_else(|| format!("{flag}: expected {lo}..={hi}, got {v:?}"))
            };
            match flag {
                "--bench" => {}
                "--smoke" => {
                    o.rounds = 2;
                    o.trips = 200;
                }
                "--rounds" => o.rounds = number(1, 100)?,
                "--trips" => o.trips = number(10, 10_000_000)?,
                "-h" | "--help" => return Err(USAGE.into()),
                other => return Err(format!("unknown argument {other:?}\n\n{USAGE}")),
            }
        }
        Ok(o)
    }
}

/// p50 and p99 of one path in one round, in microseconds.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Latency {
    /// Median round trip.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
}

/// One mode in one round.
#[derive(Clone, Debug, Serialize)]
pub struct WakeCell {
    /// Round, from 1.
    pub round: usize,
    /// `EventFd` or `MsgRing`.
    pub mode: String,
    /// foreign thread → worker 1 → back.
    pub foreign: Latency,
    /// worker 0 → worker 1 → back.
    pub worker: Latency,
    /// Wake-ups worker 1 received.
    pub wakeups_received: u64,
}

/// Runs one mode: builds a 2-worker runtime with `mode` and times `trips` round trips
/// on each path.
pub fn measure(mode: WakeMode, trips: usize, round: usize) -> io::Result<WakeCell> {
    let rt = Runtime::builder().threads(2).wake(mode).build()?;
    let h = rt.handle().clone();
    let h_foreign = h.clone();
    let foreign = std::thread::spawn(move || -> io::Result<Vec<Duration>> {
        let mut lat = Vec::with_capacity(trips);
        for i in 0..trips {
            let t = Instant::now();
            let back = futures_executor::block_on(h_foreign.spawn_on(1, async move { i }))
                .map_err(|e| io::Error::other(format!("spawn_on: {e:?}")))?;
            if back != i {
                return Err(io::Error::other("spawn_on returned another task's result"));
            }
            lat.push(t.elapsed());
        }
        Ok(lat)
    })
    .join()
    .map_err(|_| io::Error::other("the foreign thread panicked"))??;
    let h_worker = h.clone();
    let worker = rt.block_on(async move {
        let mut lat = Vec::with_capacity(trips);
        for i in 0..trips {
            let t = Instant::now();
            let back = h_worker
                .spawn_on(1, async move { i })
                .await
                .map_err(|e| io::Error::other(format!("spawn_on: {e:?}")))?;
            if back != i {
                return Err(io::Error::other("spawn_on returned another task's result"));
            }
            lat.push(t.elapsed());
        }
        Ok::<_, io::Error>(lat)
    })?;
    let wakeups_received = h.metrics().get(1).map_or(0, |m| m.wakeups_received);
    Ok(WakeCell {
        round,
        mode: format!("{mode:?}"),
        foreign: latency(foreign),
        worker: latency(worker),
        wakeups_received,
    })
}

fn latency(mut v: Vec<Duration>) -> Latency {
    v.sort_unstable();
    let q = |q: f64| {
        v.get(((v.len() as f64 * q) as usize).min(v.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64() * 1e6)
    };
    Latency {
        p50_us: q(0.5),
        p99_us: q(0.99),
    }
}

/// Runs every round (EventFd, MsgRing; then MsgRing, EventFd; …) and prints the table.
pub fn run(opts: &WakeOptions) -> io::Result<Vec<WakeCell>> {
    let modes = [WakeMode::EventFd, WakeMode::MsgRing];
    let mut cells = Vec::new();
    for round in 1..=opts.rounds {
        let order = if round % 2 == 1 {
            modes
        } else {
            [modes[1], modes[0]]
        };
        for mode in order {
            let c = measure(mode, opts.trips, round)?;
            println!(
                "r{round} {:<8} foreign p50 {:>6.1}us p99 {:>6.1}us | worker p50 {:>6.1}us p99 {:>6.1}us | {} wake-ups",
                c.mode, c.foreign.p50_us, c.foreign.p99_us, c.worker.p50_us, c.worker.p99_us, c.wakeups_received
            );
            cells.push(c);
        }
    }
    print!("{}", table(&cells, opts));
    Ok(cells)
}

/// The summary: per path and mode, median [min–max] of p50 and p99 over rounds, and
/// the MsgRing / EventFd ratio paired within each round.
pub fn table(cells: &[WakeCell], opts: &WakeOptions) -> String {
    let mut out = format!(
        "\nspawn_on round trip, {} rounds x {} trips (default mode: {:?})\n  {:<24} {:<8} {:>22} {:>22}\n",
        opts.rounds,
        opts.trips,
        WakeMode::default(),
        "path",
        "mode",
        "p50 us median [min-max]",
        "p99 us median [min-max]"
    );
    type Pick = fn(&WakeCell) -> Latency;
    let paths: [(&str, Pick); 2] = [
        ("foreign -> w1 -> foreign", |c| c.foreign),
        ("w0 -> w1 -> w0", |c| c.worker),
    ];
    for (name, pick) in paths {
        for mode in ["EventFd", "MsgRing"] {
            let of = |f: fn(Latency) -> f64| {
                let v: Vec<f64> = cells
                    .iter()
                    .filter(|c| c.mode == mode)
                    .map(|c| f(pick(c)))
                    .collect();
                Spread::of(&v).map_or("-".into(), |s| {
                    format!("{:.1} [{:.1}-{:.1}]", s.median, s.min, s.max)
                })
            };
            out += &format!(
                "  {name:<24} {mode:<8} {:>22} {:>22}\n",
                of(|l| l.p50_us),
                of(|l| l.p99_us)
            );
        }
        let ratio = |f: fn(Latency) -> f64| {
            let v: Vec<f64> = cells
                .iter()
                .filter(|c| c.mode == "MsgRing")
                .filter_map(|m| {
                    let e = cells
                        .iter()
                        .find(|c| c.mode == "EventFd" && c.round == m.round)?;
                    let b = f(pick(e));
                    (b > 0.0).then(|| f(pick(m)) / b)
                })
                .collect();
            Spread::of(&v).map_or("-".into(), |s| {
                format!("{:.2} [{:.2}-{:.2}]", s.median, s.min, s.max)
            })
        };
        out += &format!(
            "  {name:<24} {:<8} {:>22} {:>22}\n",
            "ratio",
            ratio(|l| l.p50_us),
            ratio(|l| l.p99_us)
        );
    }
    out += "  (ratio = MsgRing / EventFd within each round; below 1 means MSG_RING is faster)\n";
    out
}

/// The wake benchmark's `main`; returns the exit code.
pub fn main_with_args(args: Vec<String>) -> i32 {
    crate::main_with(&args, "wake", WakeOptions::parse, run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_quantiles() {
        let v: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        let l = latency(v);
        assert_eq!((l.p50_us, l.p99_us), (51.0, 100.0));
        let empty = latency(Vec::new());
        assert_eq!(empty.p50_us, 0.0);
    }

    #[test]
    fn options() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let o = WakeOptions::parse(&a(&["--bench", "--rounds=3", "--trips", "100"])).expect("ok");
        assert_eq!((o.rounds, o.trips), (3, 100));
        assert!(WakeOptions::parse(&a(&["--trips", "1"])).is_err());
        assert!(WakeOptions::parse(&a(&["--what"])).is_err());
    }

    #[test]
    fn ratio_table_pairs_rounds() {
        let cell = |round, mode: &str, us| WakeCell {
            round,
            mode: mode.into(),
            foreign: Latency {
                p50_us: us,
                p99_us: us * 2.0,
            },
            worker: Latency {
                p50_us: us,
                p99_us: us * 2.0,
            },
            wakeups_received: 1,
        };
        let cells = vec![
            cell(1, "EventFd", 10.0),
            cell(1, "MsgRing", 5.0),
            cell(2, "MsgRing", 8.0),
            cell(2, "EventFd", 10.0),
        ];
        let t = table(&cells, &WakeOptions::default());
        assert!(t.contains("0.65 [0.50-0.80]"), "{t}");
    }
}
