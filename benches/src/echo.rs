//! The echo benchmark: every server, every workload, interleaved over rounds.
//!
//! Each round runs the workloads in order, and for each workload every server in an
//! order rotated by one per round (ABCDE, BCDEA, …), each in a fresh child process on
//! a fresh port. Ratios are taken between servers of the same round, then summarised
//! as median and min–max over rounds.

use crate::child::{self, ServerProcess};
use crate::procfs;
use crate::report::{self, Cell};
use crate::servers::{ServerConfig, ServerKind};
use crate::workloads::{self, CellConfig, Workload};
use serde::Serialize;
use std::io;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Command-line help.
pub const USAGE: &str = "\
echo benchmark: zerorx vs tokio (current_thread, multi-thread) vs monoio echo servers

cargo bench -p zerorx-bench --bench echo -- [options]

  --rounds N         interleaved rounds (default 5, at least 3 for ratios to mean much)
  --secs S           measured window per cell (default 2)
  --warmup S         warm-up per cell (default 0.5)
  --quick            3 rounds, 1 s cells, 0.3 s warm-up, 2000 idle connections
  --smoke            1 round, 0.2 s cells; checks only that every server answered correctly
  --servers LIST     comma-separated: zerorx,zerorx-mt,tokio-ct,tokio-mt,monoio (default all)
  --workloads LIST   comma-separated: W1,W2,W2-1k,W3 (or W3-50,W3-90),W4,W5,W6,W6-64,W7,W8 (default all)
  --idle-conns N     W7 idle connections (default 10000)
  --open-rate R      W3's full rate in req/s (W3-50 runs at half, W3-90 at 90 %); default:
                     the slowest server's W2 rate of the same round, so run W2 with W3
  --requests N       end each request/response and churn window after N completions
                     (fixed work, for whole-process CPU comparisons; --secs still caps it)
  --quiet-wait S     before each cell wait up to S seconds for the machine to be >= 88% idle
  --max-steal P      measure a cell again if the host stole more than P % of the CPUs
                     during its window (default 5; steal is other guests' load on a VM)
  --retries N        at most N such re-measurements per cell (default 2)
  --pool-buffers N   zerorx receive pool buffers per worker (default 64)
  --pool-buffer-size B  zerorx receive pool buffer size (default 65536)
  --json FILE        also write the whole run (cells, summary) as JSON
";

/// W3's full rate when neither `--open-rate` nor a W2 cell of the round gives one.
const DEFAULT_OPEN_RATE: f64 = 20_000.0;

/// Options of one run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Interleaved rounds.
    pub rounds: usize,
    /// Durations and sizes of each cell.
    pub cell: CellConfig,
    /// Servers to run.
    pub servers: Vec<ServerKind>,
    /// Workloads to run.
    pub workloads: Vec<Workload>,
    /// Server setup.
    pub server: ServerConfig,
    /// Smoke mode: correctness only, no background sampling.
    pub smoke: bool,
    /// Bounded wait for a quiet machine before each cell.
    pub quiet_wait: Duration,
    /// A cell whose window had more steal than this (percent of all CPUs) is measured
    /// again, up to `retries` times.
    pub max_steal: f64,
    /// See `max_steal`.
    pub retries: u32,
    /// Where to write the JSON report.
    pub json: Option<PathBuf>,
    /// W3's full rate in req/s, instead of the round's slowest W2 rate.
    pub open_rate: Option<f64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            rounds: 5,
            cell: CellConfig {
                warmup: Duration::from_millis(500),
                measure: Duration::from_secs(2),
                idle_conns: 10_000,
                idle_settle: Duration::from_secs(1),
                pause_period: Duration::from_secs(1),
                max_ops: None,
                require_window_ops: true,
            },
            servers: ServerKind::ALL.to_vec(),
            workloads: Workload::ALL.to_vec(),
            server: ServerConfig::default(),
            smoke: false,
            quiet_wait: Duration::ZERO,
            max_steal: 5.0,
            retries: 2,
            json: None,
            open_rate: None,
        }
    }
}

impl Options {
    /// The smoke preset: one short round of everything.
    pub fn smoke() -> Options {
        let mut o = Options::default();
        o.apply_smoke();
        o
    }

    fn apply_smoke(&mut self) {
        self.smoke = true;
        self.rounds = 1;
        self.cell.warmup = Duration::from_millis(50);
        self.cell.measure = Duration::from_millis(200);
        self.cell.idle_conns = 200;
        self.cell.idle_settle = Duration::from_millis(100);
        self.cell.pause_period = Duration::from_millis(100);
        self.cell.require_window_ops = false;
        self.server.life_secs = 60;
    }

    /// Parses the benchmark's arguments (`--bench`, which `cargo bench` adds, is
    /// accepted and ignored).
    pub fn parse(args: &[String]) -> Result<Options, String> {
        let mut o = Options::default();
        let mut it = args.iter();
        let secs = |v: &str, flag: &str| -> Result<Duration, String> {
            v.parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s >= 0.0 && *s < 3600.0)
                .map(Duration::from_secs_f64)
                .ok_or_else(|| format!("{flag}: expected seconds, got {v:?}"))
        };
        while let Some(a) = it.next() {
            let (flag, inline) = match a.split_once('=') {
                Some((f, v)) => (f, Some(v.to_string())),
                None => (a.as_str(), None),
            };
            let mut value = || -> Result<String, String> {
                inline
                    .clone()
                    .or_else(|| it.next().cloned())
                    .ok_or_else(|| format!("{flag} needs a value"))
            };
            match flag {
                "--bench" => {}
                "--smoke" => o.apply_smoke(),
                "--quick" => {
                    o.rounds = 3;
                    o.cell.measure = Duration::from_secs(1);
                    o.cell.warmup = Duration::from_millis(300);
                    o.cell.idle_conns = 2000;
                }
                "--rounds" => {
                    let v = value()?;
                    o.rounds = v
                        .parse()
                        .ok()
                        .filter(|n| (1..=100).contains(n))
                        .ok_or_else(|| format!("--rounds: expected 1..=100, got {v:?}"))?;
                }
                "--secs" => o.cell.measure = secs(&value()?, flag)?,
                "--warmup" => o.cell.warmup = secs(&value()?, flag)?,
                "--quiet-wait" => o.quiet_wait = secs(&value()?, flag)?,
                "--max-steal" => {
                    let v = value()?;
                    o.max_steal = v
                        .parse()
                        .ok()
                        .filter(|p: &f64| (0.0..=100.0).contains(p))
                        .ok_or_else(|| format!("--max-steal: expected 0..=100 (%), got {v:?}"))?;
                }
                "--retries" => {
                    let v = value()?;
                    o.retries = v
                        .parse()
                        .ok()
                        .filter(|n| *n <= 10)
                        .ok_or_else(|| format!("--retries: expected 0..=10, got {v:?}"))?;
                }
                "--idle-conns" => {
                    let v = value()?;
                    o.cell.idle_conns = v
                        .parse()
                        .ok()
                        .filter(|n| (1..=1_000_000).contains(n))
                        .ok_or_else(|| format!("--idle-conns: bad count {v:?}"))?;
                }
                "--requests" => {
                    let v = value()?;
                    o.cell.max_ops = Some(
                        v.parse()
                            .ok()
                            .filter(|n| *n > 0)
                            .ok_or_else(|| format!("--requests: bad count {v:?}"))?,
                    );
                }
                "--servers" => {
                    o.servers = value()?
                        .split(',')
                        .map(|s| {
                            ServerKind::parse(s.trim())
                                .ok_or_else(|| format!("unknown server {s:?}"))
                        })
                        .collect::<Result<_, _>>()?;
                }
                "--workloads" => {
                    let mut ws = Vec::new();
                    for s in value()?.split(',') {
                        ws.extend(
                            Workload::parse(s.trim())
                                .ok_or_else(|| format!("unknown workload {s:?}"))?,
                        );
                    }
                    // Run order is fixed: W3 needs W2 of the same round.
                    o.workloads = Workload::ALL
                        .into_iter()
                        .filter(|w| ws.contains(w))
                        .collect();
                }
                "--pool-buffers" => {
                    let v = value()?;
                    o.server.pool_buffers = v
                        .parse()
                        .map_err(|_| format!("--pool-buffers: bad count {v:?}"))?;
                }
                "--pool-buffer-size" => {
                    let v = value()?;
                    o.server.pool_buffer_size = v
                        .parse()
                        .map_err(|_| format!("--pool-buffer-size: bad size {v:?}"))?;
                }
                "--json" => o.json = Some(PathBuf::from(value()?)),
                "--open-rate" => {
                    let v = value()?;
                    o.open_rate = Some(
                        v.parse()
                            .ok()
                            .filter(|r: &f64| r.is_finite() && *r >= 1.0)
                            .ok_or_else(|| format!("--open-rate: bad rate {v:?}"))?,
                    );
                }
                "-h" | "--help" => return Err(USAGE.into()),
                other => return Err(format!("unknown argument {other:?}\n\n{USAGE}")),
            }
        }
        if o.servers.is_empty() || o.workloads.is_empty() {
            return Err("nothing to run: no servers or no workloads".into());
        }
        Ok(o)
    }
}

/// Facts about the run, for the JSON and the header.
#[derive(Clone, Debug, Serialize)]
pub struct RunInfo {
    /// UTC start time.
    pub date: String,
    /// The command line.
    pub command: String,
    /// Kernel release.
    pub kernel: String,
    /// CPUs available.
    pub cpus: usize,
    /// 1-minute load average at start.
    pub load_start: f64,
    /// 1-minute load average at the end.
    pub load_end: f64,
    /// Rounds.
    pub rounds: usize,
    /// Measured window per cell, seconds.
    pub secs: f64,
    /// Warm-up per cell, seconds.
    pub warmup_secs: f64,
    /// zerorx receive pool bytes per worker.
    pub zerorx_pool_bytes_per_worker: u64,
    /// W7 idle connections.
    pub idle_conns: usize,
    /// Wall time of the run, seconds.
    pub wall_secs: f64,
}

/// Everything a run produced.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    /// Facts about the run.
    pub info: RunInfo,
    /// Every cell.
    pub cells: Vec<Cell>,
    /// Medians, ratios and goal verdicts.
    pub summary: Vec<report::Row>,
}

impl Run {
    /// Cells that failed.
    pub fn failures(&self) -> impl Iterator<Item = &Cell> {
        self.cells.iter().filter(|c| c.error.is_some())
    }
}

/// Runs the benchmark with `opts`, printing progress and tables to stdout.
pub fn run(opts: &Options, command: &str) -> io::Result<Run> {
    let t0 = Instant::now();
    procfs::raise_fd_limit()?;
    let info0 = RunInfo {
        date: utc_now(),
        command: command.to_string(),
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        load_start: procfs::load_average().unwrap_or(0.0),
        load_end: 0.0,
        rounds: opts.rounds,
        secs: opts.cell.measure.as_secs_f64(),
        warmup_secs: opts.cell.warmup.as_secs_f64(),
        zerorx_pool_bytes_per_worker: opts.server.pool_bytes(),
        idle_conns: opts.cell.idle_conns,
        wall_secs: 0.0,
    };
    println!(
        "echo benchmark {} | kernel {} | {} CPUs | load {:.2} | {} rounds x {:.1}s (+{:.1}s warm-up) | zerorx pool {} KiB/worker",
        info0.date,
        info0.kernel,
        info0.cpus,
        info0.load_start,
        opts.rounds,
        info0.secs,
        info0.warmup_secs,
        opts.server.pool_bytes() / 1024
    );
    let w3 = opts
        .workloads
        .iter()
        .any(|w| matches!(w, Workload::W3Half | Workload::W3Most));
    if w3 && opts.open_rate.is_none() && !opts.workloads.contains(&Workload::W2) {
        println!(
            "note: W3 without W2 and without --open-rate runs at a fixed {DEFAULT_OPEN_RATE} req/s \
             (W3-50 at half of it), not at a share of any server's capacity"
        );
    }
    let mut cells = Vec::new();
    for round in 1..=opts.rounds {
        let mut w2_rates: Vec<f64> = Vec::new();
        for &w in &opts.workloads {
            let n = opts.servers.len();
            let order: Vec<ServerKind> =
                (0..n).map(|i| opts.servers[(i + round - 1) % n]).collect();
            // W3's rate: a share of the slowest server's W2 capacity this round.
            let slowest = w2_rates.iter().copied().fold(f64::INFINITY, f64::min);
            let open_rate = opts.open_rate.unwrap_or(if slowest.is_finite() {
                slowest
            } else {
                DEFAULT_OPEN_RATE
            });
            for (pos, &kind) in order.iter().enumerate() {
                let cell = run_one(opts, round, pos, w, kind, open_rate);
                if w == Workload::W2 {
                    if let Some(r) = cell.metrics.get("req_per_s") {
                        w2_rates.push(*r);
                    }
                }
                println!("{}", progress_line(&cell));
                cells.push(cell);
            }
        }
    }
    let measured = cells.iter().filter(|c| c.error.is_none()).count();
    let stolen = cells
        .iter()
        .filter(|c| c.error.is_none() && c.machine.steal_pct > opts.max_steal)
        .count();
    let retried = cells.iter().filter(|c| c.attempts > 1).count();
    if !opts.smoke {
        println!(
            "host steal: {retried} of {measured} cells measured again; {stolen} still had more \
             than {:.0}% steal (their numbers are the host's as much as the servers')",
            opts.max_steal
        );
    }
    let summary = report::summarise(&cells, &opts.workloads, &opts.servers);
    print!("{}", report::tables(&summary, &opts.workloads));
    print!("{}", report::goal_summary(&summary));
    let info = RunInfo {
        load_end: procfs::load_average().unwrap_or(0.0),
        wall_secs: t0.elapsed().as_secs_f64(),
        ..info0
    };
    println!(
        "\nload average {:.2} -> {:.2}; wall time {:.0}s",
        info.load_start, info.load_end, info.wall_secs
    );
    let run = Run {
        info,
        cells,
        summary,
    };
    if let Some(path) = &opts.json {
        let text = serde_json::to_string_pretty(&run).map_err(io::Error::other)?;
        std::fs::write(path, text)
            .map_err(|e| io::Error::new(e.kind(), format!("writing {}: {e}", path.display())))?;
        println!("wrote {}", path.display());
    }
    Ok(run)
}

fn run_one(
    opts: &Options,
    round: usize,
    order: usize,
    w: Workload,
    kind: ServerKind,
    open_rate: f64,
) -> Cell {
    let mut cell = Cell {
        round,
        order,
        workload: w.id().into(),
        server: kind.name().into(),
        metrics: Default::default(),
        background_busy_pct: 0.0,
        machine: Default::default(),
        attempts: 0,
        error: None,
    };
    loop {
        cell.attempts += 1;
        match measure(opts, w, kind, open_rate, &mut cell.background_busy_pct) {
            Ok(m) => {
                cell.metrics = m.values;
                cell.machine = m.machine;
                cell.error = None;
            }
            Err(e) => cell.error = Some(e.to_string()),
        }
        let stolen = cell.error.is_none() && cell.machine.steal_pct > opts.max_steal;
        if opts.smoke || !stolen || cell.attempts > opts.retries {
            return cell;
        }
    }
}

fn measure(
    opts: &Options,
    w: Workload,
    kind: ServerKind,
    open_rate: f64,
    background: &mut f64,
) -> io::Result<workloads::CellMetrics> {
    let mut server = ServerProcess::start(kind, &opts.server)?;
    if !opts.smoke {
        let deadline = Instant::now() + opts.quiet_wait;
        loop {
            *background = procfs::busy_over(Duration::from_millis(250))?;
            if *background <= 12.0 || Instant::now() >= deadline {
                break;
            }
        }
    }
    let result = workloads::run_cell(w, &mut server, &opts.cell, open_rate);
    if !server.is_running() {
        return Err(io::Error::other(format!(
            "the {} server died during the cell",
            kind.name()
        )));
    }
    server.stop()?;
    result
}

fn progress_line(c: &Cell) -> String {
    if let Some(e) = &c.error {
        return format!(
            "r{} {:<6} {:<10} FAILED: {e}",
            c.round, c.workload, c.server
        );
    }
    let g = |k: &str| c.metrics.get(k).copied().unwrap_or(0.0);
    let main = match c.workload.as_str() {
        "W4" => format!(
            "{:.3} GB/s, {:.3} CPU-s/GB",
            g("gb_per_s"),
            g("cpu_s_per_gb")
        ),
        "W6" | "W6-64" => format!(
            "{:.0} conn/s, {:.1} CPU-us/conn, p99 {:.0}us",
            g("conn_per_s"),
            g("cpu_us_per_conn"),
            g("p99_us")
        ),
        "W7" => format!(
            "{:.0} conns, {:.0} B/conn RSS, {:.1} wake-ups/s",
            g("conns"),
            g("rss_per_conn"),
            g("wakeups_per_s")
        ),
        _ => format!(
            "{:.0} req/s, {:.2} CPU-us/req, p50 {:.0}us p99 {:.0}us",
            g("req_per_s"),
            g("cpu_us_per_req"),
            g("p50_us"),
            g("p99_us")
        ),
    };
    let extra = if c.workload == "W7" {
        String::new()
    } else {
        format!(
            " | server {:.0}% client {:.0}% of a core",
            g("server_core_pct"),
            g("client_core_pct")
        )
    };
    let retried = if c.attempts > 1 {
        format!(", measured {}x", c.attempts)
    } else {
        String::new()
    };
    format!(
        "r{} {:<6} {:<10} {main}{extra} | machine busy before {:.0}%, steal {:.0}%{retried}",
        c.round, c.workload, c.server, c.background_busy_pct, c.machine.steal_pct
    )
}

/// The current UTC time as `YYYY-MM-DD HH:MM:SSZ`.
fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// The benchmark binary's `main`: a server child when called with `--serve`, else
/// the benchmark. Returns the process exit code.
pub fn main_with_args(args: Vec<String>) -> i32 {
    if let Some(parsed) = child::child_args(&args) {
        match parsed {
            Ok((kind, cfg)) => child::serve_main(kind, &cfg),
            Err(e) => {
                eprintln!("{e}");
                return 2;
            }
        }
    }
    let opts = match Options::parse(&args[1.min(args.len())..]) {
        Ok(o) => o,
        Err(msg) => {
            eprintln!("{msg}");
            return 2;
        }
    };
    match run(&opts, &args.join(" ")) {
        Ok(run) => {
            let failed: Vec<_> = run.failures().collect();
            if failed.is_empty() {
                if opts.smoke {
                    println!(
                        "smoke: {} cells, every server answered every request correctly",
                        run.cells.len()
                    );
                }
                0
            } else {
                eprintln!("{} cells failed:", failed.len());
                for c in failed {
                    eprintln!(
                        "  round {} {} {}: {}",
                        c.round,
                        c.workload,
                        c.server,
                        c.error.as_deref().unwrap_or("")
                    );
                }
                1
            }
        }
        Err(e) => {
            eprintln!("echo benchmark failed: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_parse() {
        let o = Options::parse(&args(&["--bench"])).expect("defaults");
        assert_eq!((o.rounds, o.servers.len(), o.workloads.len()), (5, 5, 11));
        let o = Options::parse(&args(&[
            "--rounds=3",
            "--secs",
            "1.5",
            "--servers",
            "zerorx,tokio-ct",
            "--workloads",
            "W4,W3,W1",
            "--json",
            "/tmp/x.json",
            "--open-rate",
            "90000",
        ]))
        .expect("valid");
        assert_eq!(o.rounds, 3);
        assert_eq!(o.cell.measure, Duration::from_millis(1500));
        assert_eq!(o.servers, vec![ServerKind::Zerorx, ServerKind::TokioCt]);
        assert_eq!(
            o.workloads,
            vec![
                Workload::W1,
                Workload::W3Half,
                Workload::W3Most,
                Workload::W4
            ]
        );
        assert!(o.json.is_some());
        assert_eq!(o.open_rate, Some(90_000.0));
        let s = Options::parse(&args(&["--smoke"])).expect("smoke");
        assert!(s.smoke && s.rounds == 1);
        assert_eq!((o.max_steal, o.retries), (5.0, 2));
        let o = Options::parse(&args(&["--max-steal", "12.5", "--retries=0"])).expect("steal");
        assert_eq!((o.max_steal, o.retries), (12.5, 0));
        for bad in [
            &["--max-steal", "-1"][..],
            &["--max-steal", "101"],
            &["--max-steal", "lots"],
            &["--retries", "11"],
            &["--retries", "-1"],
        ] {
            let e = Options::parse(&args(bad)).expect_err("refused");
            assert!(e.contains(bad[0]), "{bad:?}: {e}");
        }
    }

    #[test]
    fn bad_options_are_errors() {
        for bad in [
            &["--rounds", "0"][..],
            &["--rounds"],
            &["--secs", "-1"],
            &["--servers", "nginx"],
            &["--workloads", "W42"],
            &["--pool-buffers", "many"],
            &["--open-rate", "0"],
            &["--open-rate", "fast"],
            &["--frobnicate"],
        ] {
            assert!(Options::parse(&args(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    }
}
