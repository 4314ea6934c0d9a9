//! The echo benchmark's options: its command line and defaults.

use crate::servers::{ServerConfig, ServerKind};
use crate::workloads::{CellConfig, Workload};
use std::path::PathBuf;
use std::time::Duration;

/// Command-line help.
pub const USAGE: &str = "\
echo benchmark: zerorx vs tokio (current_thread, multi-thread) vs monoio echo servers

cargo bench -p zerorx-bench --bench echo -- [options]

  --rounds N         interleaved rounds (default 5, at least 3 for ratios to mean much)
  --secs S           measured window per cell (default 2)
  --warmup S         warm-up per cell (default 0.5)
  --quick            3 rounds, 1 s cells, 0.3 s warm-up, 2000 idle connections
  --smoke            1 round, 0.2 s cells; checks only that every server answered correctly
  --servers LIST     comma-separated: zerorx,zerorx-mt,tokio-ct,tokio-mt,monoio (default all),
                     zerorx-alt (see --alt-env)
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
  --alt-env 'VAR=VAL ...'  the ZERORX_* environment of the zerorx-alt server (the
                     1-worker zerorx server again, run only when --servers names it):
                     a runtime lever measured against zerorx in the same rounds
  --json FILE        also write the whole run (cells, summary) as JSON
  --profile          sample each server with perf in every measured window and print
                     where its CPU per operation goes (see benches/src/profile.rs)
";

/// W3's full rate when neither `--open-rate` nor a W2 cell of the round gives one.
pub(super) const DEFAULT_OPEN_RATE: f64 = 20_000.0;

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
                profile: false,
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
                "--alt-env" => o.server.alt_env = crate::parse_alt_env(&value()?)?,
                "--json" => o.json = Some(PathBuf::from(value()?)),
                "--profile" => {
                    crate::profile::check_available()?;
                    o.cell.profile = true;
                }
                "--open-rate" => {
                    let v = value()?;
                    o.open_rate = Some(
                        v.parse()
                            .ok()
                            .filter(|r: &f64| r.is_finite() && *r >= 1.0)
                            .ok_or_else(|| format!("--open-rate: bad rate {v:?}"))?,
                    );
                }
                "-h" | "--help" => {
                    return Err(format!(
                        "{USAGE}\n--count (W2, or --workloads W2,W4,W5; zerorx and tokio-ct unless --servers):\n{}",
                        crate::count::cli::USAGE
                    ))
                }
                other => return Err(format!("unknown argument {other:?}\n\n{USAGE}")),
            }
        }
        if o.servers.is_empty() || o.workloads.is_empty() {
            return Err("nothing to run: no servers or no workloads".into());
        }
        Ok(o)
    }
}
