//! The echo benchmark: every server, every workload, interleaved over rounds.
//!
//! Each round runs the workloads in order, and for each workload every server in an
//! order rotated by one per round (ABCDE, BCDEA, …), each in a fresh child process on
//! a fresh port. Ratios are taken between servers of the same round, then summarised
//! as median and min–max over rounds.

use crate::child::{self, ServerProcess};
use crate::procfs;
use crate::report::{self, Cell};
use crate::servers::ServerKind;
use crate::workloads::{self, Workload};
use serde::Serialize;
use std::io;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

mod count;
mod options;

use options::DEFAULT_OPEN_RATE;
pub use options::{Options, USAGE};

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
    if opts.cell.profile {
        print!(
            "{}",
            report::attribution(&cells, &opts.workloads, &opts.servers)
        );
    }
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
    let mut rest = args[1.min(args.len())..].to_vec();
    match crate::count::cli::take(&mut rest) {
        Ok(Some(c)) => return count::main(&c, &rest),
        Ok(None) => {}
        Err(msg) => {
            eprintln!("{msg}");
            return 2;
        }
    }
    let opts = match Options::parse(&rest) {
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
        let o = Options::parse(&args(&[
            "--servers",
            "zerorx,zerorx-alt",
            "--alt-env",
            "ZERORX_COMPLETION_BATCH=16,50us ZERORX_RECV_BUNDLES=on",
        ]))
        .expect("alt");
        assert_eq!(o.servers, vec![ServerKind::Zerorx, ServerKind::ZerorxAlt]);
        assert_eq!(
            o.server.alt_env,
            vec![
                ("ZERORX_COMPLETION_BATCH".to_owned(), "16,50us".to_owned()),
                ("ZERORX_RECV_BUNDLES".to_owned(), "on".to_owned())
            ]
        );
        for bad in [
            &["--alt-env", "PATH=/bin"][..],
            &["--alt-env", "ZERORX_WAKE"],
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
