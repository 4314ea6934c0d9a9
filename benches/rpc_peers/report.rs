//! Results: one cell per (round, workload, server), summarised as medians with their
//! spread, and zerorx's ratios against each peer computed round by round (the servers
//! of one round ran back to back, so they saw the most similar machine).

use serde_json::{json, Value};
use zerorx_bench::profile::{Attribution, Category};
use zerorx_bench::report::Spread;

/// One measured (round, workload, server).
#[derive(Clone, Debug)]
pub struct Cell {
    /// Round number, from 0.
    pub round: usize,
    /// Workload name.
    pub workload: String,
    /// Server name.
    pub server: &'static str,
    /// Threads the server ran (event loops; workers for the thrift crate).
    pub server_threads: usize,
    /// Replies per second in the window.
    pub req_per_s: f64,
    /// Server CPU over the window, in % of one core.
    pub server_cpu_pct: f64,
    /// Client CPU over the run, in % of one core per client thread.
    pub client_cpu_pct: f64,
    /// Latency percentiles, microseconds.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Why the cell failed, if it did.
    pub error: Option<String>,
    /// Where the server's CPU went in the window (`--profile`).
    pub profile: Option<Attribution>,
}

impl Cell {
    /// The cell as JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "round": self.round,
            "workload": self.workload,
            "server": self.server,
            "server_threads": self.server_threads,
            "req_per_s": self.req_per_s,
            "server_cpu_pct": self.server_cpu_pct,
            "client_cpu_pct": self.client_cpu_pct,
            "p50_us": self.p50_us,
            "p99_us": self.p99_us,
            "p999_us": self.p999_us,
            "error": self.error,
        })
    }
}

/// JSON of a spread: median, min and max (the run's size is in the cell list).
fn spread_json(s: &Spread) -> Value {
    json!({"median": s.median, "min": s.min, "max": s.max})
}

fn ok_cells<'a>(
    cells: &'a [Cell],
    workload: &'a str,
    server: &'a str,
) -> impl Iterator<Item = &'a Cell> {
    cells
        .iter()
        .filter(move |c| c.workload == workload && c.server == server && c.error.is_none())
}

fn spread_of(
    cells: &[Cell],
    workload: &str,
    server: &str,
    f: impl Fn(&Cell) -> f64,
) -> Option<Spread> {
    Spread::of(&ok_cells(cells, workload, server).map(f).collect::<Vec<_>>())
}

fn fmt_rate(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

fn fmt_us(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.2}ms", v / 1000.0)
    } else {
        format!("{v:.0}µs")
    }
}

/// The per-workload tables.
pub fn tables(cells: &[Cell], workloads: &[String], servers: &[&'static str]) -> String {
    let mut out = String::new();
    for w in workloads {
        out += &format!(
            "\n{w}\n  {:<13} {:>24} {:>10} {:>8} {:>12} {:>9} {:>9} {:>9} {:>7}\n",
            "server",
            "req/s median [min-max]",
            "/thread",
            "srv CPU",
            "req/CPU-s",
            "p50",
            "p99",
            "p999",
            "cli CPU"
        );
        for s in servers {
            let failed: Vec<&Cell> = cells
                .iter()
                .filter(|c| &c.workload == w && c.server == *s && c.error.is_some())
                .collect();
            let Some(rate) = spread_of(cells, w, s, |c| c.req_per_s) else {
                let why = failed
                    .first()
                    .and_then(|c| c.error.clone())
                    .unwrap_or_else(|| "not run".into());
                out += &format!(
                    "  {s:<13} FAILED: {}\n",
                    why.lines().next().unwrap_or_default()
                );
                continue;
            };
            let med =
                |f: fn(&Cell) -> f64| spread_of(cells, w, s, f).map_or(f64::NAN, |x| x.median);
            let threads = med(|c| c.server_threads as f64);
            let cpu = med(|c| c.server_cpu_pct);
            // Below 1% of a core the CPU reading is mostly clock-tick rounding.
            let per_cpu = if cpu >= 1.0 {
                fmt_rate(med(|c| c.req_per_s / (c.server_cpu_pct / 100.0)))
            } else {
                "n/a".into()
            };
            out += &format!(
                "  {s:<13} {:>24} {:>10} {:>7.0}% {:>12} {:>9} {:>9} {:>9} {:>6.0}%{}\n",
                format!(
                    "{} [{}-{}]",
                    fmt_rate(rate.median),
                    fmt_rate(rate.min),
                    fmt_rate(rate.max)
                ),
                fmt_rate(rate.median / threads.max(1.0)),
                cpu,
                per_cpu,
                fmt_us(med(|c| c.p50_us)),
                fmt_us(med(|c| c.p99_us)),
                fmt_us(med(|c| c.p999_us)),
                med(|c| c.client_cpu_pct),
                if failed.is_empty() {
                    String::new()
                } else {
                    format!("  ({} round(s) failed)", failed.len())
                }
            );
        }
    }
    out
}

/// zerorx against one peer on one workload.
#[derive(Clone, Debug)]
pub struct Ratio {
    /// Workload name.
    pub workload: String,
    /// The peer.
    pub peer: &'static str,
    /// zerorx req/s per server thread over the peer's, round by round.
    pub per_thread: Option<Spread>,
    /// zerorx req/s over the peer's (absolute), round by round.
    pub throughput: Option<Spread>,
    /// zerorx p99 over the peer's, round by round.
    pub p99: Option<Spread>,
    /// zerorx req per server CPU-second over the peer's, round by round.
    pub per_cpu: Option<Spread>,
}

/// Round-by-round ratios of zerorx against every peer.
pub fn ratios(cells: &[Cell], workloads: &[String], peers: &[&'static str]) -> Vec<Ratio> {
    let mut out = Vec::new();
    for w in workloads {
        for &peer in peers {
            let mut per_thread = Vec::new();
            let mut throughput = Vec::new();
            let mut p99 = Vec::new();
            let mut per_cpu = Vec::new();
            for z in ok_cells(cells, w, "zerorx") {
                let Some(p) = ok_cells(cells, w, peer).find(|p| p.round == z.round) else {
                    continue;
                };
                let thr = |c: &Cell| c.req_per_s / c.server_threads.max(1) as f64;
                let eff = |c: &Cell| c.req_per_s / c.server_cpu_pct.max(1e-9);
                per_thread.push(thr(z) / thr(p));
                throughput.push(z.req_per_s / p.req_per_s);
                p99.push(z.p99_us / p.p99_us);
                per_cpu.push(eff(z) / eff(p));
            }
            out.push(Ratio {
                workload: w.clone(),
                peer,
                per_thread: Spread::of(&per_thread),
                throughput: Spread::of(&throughput),
                p99: Spread::of(&p99),
                per_cpu: Spread::of(&per_cpu),
            });
        }
    }
    out
}

fn fmt_ratio(s: &Option<Spread>) -> String {
    match s {
        Some(s) => format!("{:.2}x [{:.2}-{:.2}]", s.median, s.min, s.max),
        None => "n/a".into(),
    }
}

fn verdict(met: Option<bool>) -> &'static str {
    match met {
        Some(true) => "MET",
        Some(false) => "NOT MET",
        None => "n/a",
    }
}

/// The ratio table and the goals, each marked met or not.
pub fn goals(ratios: &[Ratio], connections: usize) -> (String, Value) {
    let mut out = String::from("\nzerorx vs each peer (median of per-round ratios [min-max])\n");
    out += &format!(
        "  {:<12} {:<13} {:>22} {:>22} {:>22} {:>22}\n",
        "workload", "peer", "req/s per thread", "req/s", "req per CPU-s", "p99 (lower=better)"
    );
    for r in ratios {
        out += &format!(
            "  {:<12} {:<13} {:>22} {:>22} {:>22} {:>22}\n",
            r.workload,
            r.peer,
            fmt_ratio(&r.per_thread),
            fmt_ratio(&r.throughput),
            fmt_ratio(&r.per_cpu),
            fmt_ratio(&r.p99)
        );
    }
    out += "\ngoals\n";
    let mut goals = Vec::new();
    for r in ratios {
        let (text, met) = match r.peer {
            "tnonblocking" => {
                let thr = r.per_thread.map(|s| s.median >= 2.0);
                let p99 = r.p99.map(|s| s.median <= 0.5);
                let met = thr.zip(p99).map(|(a, b)| a && b);
                (
                    format!(
                        "{}: >= 2x TNonblockingServer req/s per server thread ({}) with p99 <= 0.5x ({})",
                        r.workload,
                        fmt_ratio(&r.per_thread),
                        fmt_ratio(&r.p99)
                    ),
                    met,
                )
            }
            "volo" => {
                // 64 B: >= 1.3x requests per server CPU-second; 64 KiB: >= 1.0x; p99
                // <= 1.0x at both.
                let want = if r.workload.contains("64KiB") {
                    1.0
                } else {
                    1.3
                };
                let cpu = r.per_cpu.map(|s| s.median >= want);
                let p99 = r.p99.map(|s| s.median <= 1.0);
                (
                    format!(
                        "{}: >= {want}x volo-thrift's req per server CPU-second ({}) with p99 <= 1.0x ({})",
                        r.workload,
                        fmt_ratio(&r.per_cpu),
                        fmt_ratio(&r.p99)
                    ),
                    cpu.zip(p99).map(|(a, b)| a && b),
                )
            }
            "thrift-crate" => {
                let met = if connections == 64 {
                    r.throughput.map(|s| s.median >= 1.5)
                } else {
                    None
                };
                let note = if connections == 64 {
                    ""
                } else {
                    " (goal defined at 64 connections)"
                };
                (
                    format!(
                        "{}: >= 1.5x the thrift crate server's req/s at 64 connections ({}){note}",
                        r.workload,
                        fmt_ratio(&r.throughput)
                    ),
                    met,
                )
            }
            _ => continue,
        };
        out += &format!("  [{:>7}] {text}\n", verdict(met));
        goals.push(json!({"goal": text, "met": met}));
    }
    let json_ratios: Vec<Value> = ratios
        .iter()
        .map(|r| {
            json!({
                "workload": r.workload,
                "peer": r.peer,
                "per_thread": r.per_thread.as_ref().map(spread_json),
                "throughput": r.throughput.as_ref().map(spread_json),
                "per_cpu": r.per_cpu.as_ref().map(spread_json),
                "p99": r.p99.as_ref().map(spread_json),
            })
        })
        .collect();
    (out, json!({"ratios": json_ratios, "goals": goals}))
}

/// How many of the leaf symbols with the most own cost `--profile` lists per server.
const TOP_SYMBOLS: usize = 12;

/// `--profile`: per workload and server, the server's CPU per request split by
/// category (samples of every round merged; CPU per request the median over rounds),
/// the shared kernel floor and the runtime's own cost, and zerorx's own cost over
/// each peer's.
pub fn attribution(cells: &[Cell], workloads: &[String], servers: &[&'static str]) -> String {
    let mut out = String::from(
        "\nwhere each server's CPU goes, µs per request (perf samples of the measured windows; \
         floor = copies + tcp/ip + other-kernel, own = the rest)\n",
    );
    for w in workloads {
        out += &format!("{w}\n  {:<13}", "server");
        for c in Category::ALL {
            out += &format!(" {:>12}", c.name());
        }
        out += &format!(" {:>9} {:>9} {:>9}\n", "total", "floor", "own");
        let mut own_of: Vec<(&str, f64)> = Vec::new();
        let mut tops: Vec<(&str, f64, Attribution)> = Vec::new();
        for &srv in servers {
            let mut merged = Attribution::default();
            let mut per_req = Vec::new();
            for c in ok_cells(cells, w, srv) {
                if let Some(p) = &c.profile {
                    merged.merge(p);
                    per_req.push(c.server_cpu_pct / 100.0 / c.req_per_s.max(1e-9) * 1e6);
                }
            }
            let Some(split) = Spread::of(&per_req).and_then(|s| merged.split(s.median)) else {
                continue;
            };
            let total = split.floor + split.own;
            out += &format!("  {srv:<13}");
            for (_, us) in split.per_category {
                out += &format!(" {us:>12.2}");
            }
            own_of.push((srv, split.own));
            out += &format!(" {total:>9.2} {:>9.2} {:>9.2}\n", split.floor, split.own);
            tops.push((srv, total, merged));
        }
        for (srv, total, merged) in &tops {
            out += &format!("  {srv}: most own cost, µs per request\n");
            for (sym, share) in merged.top_own(TOP_SYMBOLS) {
                out += &format!("    {:>6.3}  {sym}\n", total * share);
            }
        }
        if let Some(&(_, z)) = own_of.iter().find(|(s, _)| *s == "zerorx") {
            for (peer, own) in own_of.iter().filter(|(s, _)| *s != "zerorx") {
                out += &format!("  zerorx own cost / {peer}'s: {:.2}x\n", z / own.max(1e-9));
            }
        }
    }
    out
}
