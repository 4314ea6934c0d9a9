//! One cell: one workload against one running server, measured with the client engine
//! and the server's own counters read at the edges of the window.

use super::Workload;
use crate::child::ServerProcess;
use crate::client::{Engine, EngineResult, IdleConns, Pause, Plan, Probe, Role};
use crate::procfs::{self, MachineCpu, MachineSplit};
use crate::profile::{Attribution, Recording};
use crate::servers::ServerStats;
use std::collections::BTreeMap;
use std::io;
use std::time::{Duration, Instant};

/// Durations and sizes of a run.
#[derive(Clone, Debug)]
pub struct CellConfig {
    /// Warm-up before each measured window.
    pub warmup: Duration,
    /// The measured window.
    pub measure: Duration,
    /// W7: how many idle connections.
    pub idle_conns: usize,
    /// W7: wait after opening them before reading memory.
    pub idle_settle: Duration,
    /// W8: cycle of the slow readers (they stop for the last 10 %).
    pub pause_period: Duration,
    /// End each request/response or churn window after this many completions.
    pub max_ops: Option<u64>,
    /// Fail a cell in which nothing completed inside the measured window (off in
    /// smoke runs, which only check that every answer was correct).
    pub require_window_ops: bool,
    /// Sample the server with perf during the window (`--profile`) and report where
    /// its CPU per operation went (`cpu_<category>_us_per_op`, `own_us_per_op`,
    /// `floor_us_per_op`).
    pub profile: bool,
}

/// What one cell measured.
#[derive(Clone, Debug, Default)]
pub struct CellMetrics {
    /// Metric key → value.
    pub values: BTreeMap<String, f64>,
    /// Machine-wide CPU split inside the window.
    pub machine: MachineSplit,
}

/// Runs workload `w` against `server` (started fresh for this cell). `open_rate` is
/// the W3 rate in requests per second.
pub fn run_cell(
    w: Workload,
    server: &mut ServerProcess,
    cfg: &CellConfig,
    open_rate: f64,
) -> io::Result<CellMetrics> {
    let rr = |size: usize, n: usize| vec![Role::Closed { size }; n];
    let stream = |pause: Option<Pause>| {
        vec![
            Role::Stream {
                chunk: 64 * 1024,
                pause
            };
            4
        ]
    };
    let (roles, rate) = match w {
        Workload::W1 => (rr(64, 1), 0.0),
        Workload::W2 => (rr(64, 64), 0.0),
        Workload::W2Kib => (rr(1024, 64), 0.0),
        Workload::W3Half => (vec![Role::Open { size: 64 }; 64], open_rate * 0.5),
        Workload::W3Most => (vec![Role::Open { size: 64 }; 64], open_rate * 0.9),
        Workload::W4 => (stream(None), 0.0),
        Workload::W5 => (rr(64 * 1024, 16), 0.0),
        Workload::W6 => (vec![Role::Churn { size: 64 }; 8], 0.0),
        Workload::W6Wide => (vec![Role::Churn { size: 64 }; 64], 0.0),
        Workload::W8 => {
            let mut roles = rr(64, 64);
            roles.extend(stream(Some(Pause {
                period: cfg.pause_period,
                stopped: cfg.pause_period / 10,
            })));
            (roles, 0.0)
        }
        Workload::W7 => return idle_cell(server, cfg),
    };
    let plan = Plan {
        addr: server.addr(),
        roles,
        warmup: cfg.warmup,
        measure: cfg.measure,
        open_rate: rate,
        max_ops: cfg.max_ops,
    };
    let engine = Engine::connect(&plan)?;
    let mut probe = ServerProbe::new(server, cfg.profile.then_some(cfg.measure));
    let result = engine.run(&plan, &mut probe)?;
    let mut metrics = probe.metrics(w, &result, cfg.require_window_ops)?;
    if rate > 0.0 {
        metrics.values.insert("offered_req_per_s".into(), rate);
    }
    Ok(metrics)
}

/// Server-side counters at the edges of the measured window.
struct ServerProbe<'a> {
    server: &'a mut ServerProcess,
    start: Option<Sample>,
    end: Option<Sample>,
    /// `--profile`: how long to sample, the recording while it runs, then its result.
    profile: Option<Duration>,
    recording: Option<Recording>,
    attribution: Option<Attribution>,
}

#[derive(Clone, Copy)]
struct Sample {
    at: Instant,
    cpu_secs: f64,
    user_secs: f64,
    ctx_switches: u64,
    machine: MachineCpu,
    stats: ServerStats,
}

impl ServerProbe<'_> {
    fn new(server: &mut ServerProcess, profile: Option<Duration>) -> ServerProbe<'_> {
        ServerProbe {
            server,
            start: None,
            end: None,
            profile,
            recording: None,
            attribution: None,
        }
    }

    fn sample(&mut self) -> io::Result<Sample> {
        let pid = self.server.pid();
        let (user_secs, sys_secs) = self.server.cpu_secs()?;
        Ok(Sample {
            at: Instant::now(),
            cpu_secs: user_secs + sys_secs,
            user_secs,
            ctx_switches: procfs::context_switches(pid)?,
            machine: MachineCpu::now()?,
            stats: self.server.stats()?,
        })
    }

    /// The cell's numbers. `require_window`: fail when nothing completed inside
    /// the window (a smoke run's short windows on a loaded machine may see none).
    fn metrics(
        &self,
        w: Workload,
        r: &EngineResult,
        require_window: bool,
    ) -> io::Result<CellMetrics> {
        let (Some(a), Some(b)) = (self.start, self.end) else {
            return Err(io::Error::other("the measured window never started"));
        };
        let secs = r.window.as_secs_f64().max(1e-9);
        let wall = b.at.saturating_duration_since(a.at).as_secs_f64().max(1e-9);
        let cpu = (b.cpu_secs - a.cpu_secs).max(0.0);
        let mut v = BTreeMap::new();
        let mut put = |k: &str, x: f64| {
            v.insert(k.to_string(), x);
        };
        put("window_s", secs);
        put("server_core_pct", 100.0 * cpu / wall);
        if cpu > 0.0 {
            put(
                "server_user_share_pct",
                100.0 * (b.user_secs - a.user_secs).max(0.0) / cpu,
            );
        }
        put("client_core_pct", 100.0 * r.client_cpu.as_secs_f64() / secs);
        put(
            "ctx_switches_per_s",
            b.ctx_switches.saturating_sub(a.ctx_switches) as f64 / wall,
        );
        if let (Some(x), Some(y)) = (a.stats.enobufs, b.stats.enobufs) {
            put("enobufs", y.saturating_sub(x) as f64);
        }
        if let Some(h) = b.stats.pool_high_water {
            put("pool_high_water", h as f64);
        }
        // zerorx's own counters per completed operation: where its CPU goes.
        let ops = (r.rr.ops + r.churn.ops + r.stream.ops).max(1) as f64;
        // The same client for every server: its cost per operation should not depend
        // on the server.
        put("client_us_per_op", r.client_cpu.as_secs_f64() * 1e6 / ops);
        let delta = |f: fn(&ServerStats) -> Option<u64>| match (f(&a.stats), f(&b.stats)) {
            (Some(x), Some(y)) => Some(y.saturating_sub(x) as f64),
            _ => None,
        };
        for (key, f) in [
            (
                "enters_per_op",
                (|s: &ServerStats| s.enter_calls) as fn(&ServerStats) -> _,
            ),
            ("cqes_per_op", |s: &ServerStats| s.cqes),
            ("loop_turns_per_op", |s: &ServerStats| s.loop_turns),
        ] {
            if let Some(d) = delta(f) {
                put(key, d / ops);
            }
        }
        // Per completed operation of the workload (requests, connections, or stream
        // chunks), like `cpu_us_per_*`.
        let split = self
            .attribution
            .as_ref()
            .and_then(|a| a.split(cpu * 1e6 / ops));
        if let Some(split) = split {
            for (c, us) in split.per_category {
                put(&format!("cpu_{}_us_per_op", c.key()), us);
            }
            put("floor_us_per_op", split.floor);
            put("own_us_per_op", split.own);
        }
        let per = |n: u64| if n > 0 { cpu * 1e6 / n as f64 } else { 0.0 };
        match w {
            Workload::W4 => {
                let gb = r.stream.bytes as f64 / 1e9;
                put("gb_per_s", gb / secs);
                put("cpu_s_per_gb", if gb > 0.0 { cpu / gb } else { 0.0 });
            }
            Workload::W6 | Workload::W6Wide => {
                put("conn_per_s", r.churn.ops as f64 / secs);
                put("cpu_us_per_conn", per(r.churn.ops));
                put("p99_us", r.churn.quantile_us(0.99));
            }
            _ => {
                put("req_per_s", r.rr.ops as f64 / secs);
                put("cpu_us_per_req", per(r.rr.ops));
                put("p50_us", r.rr.quantile_us(0.5));
                put("p99_us", r.rr.quantile_us(0.99));
                put("p999_us", r.rr.quantile_us(0.999));
                if w == Workload::W8 {
                    put("gb_per_s", r.stream.bytes as f64 / 1e9 / secs);
                }
            }
        }
        let done = match w {
            Workload::W4 => r.stream.ops,
            Workload::W6 | Workload::W6Wide => r.churn.ops,
            Workload::W8 => r.rr.ops.min(r.stream.ops),
            _ => r.rr.ops,
        };
        if r.answered == 0 {
            return Err(io::Error::other(
                "the server answered no request at all (warm-up included)",
            ));
        }
        if done == 0 && require_window {
            return Err(io::Error::other(
                "nothing completed inside the measured window",
            ));
        }
        Ok(CellMetrics {
            values: v,
            machine: a.machine.split_until(&b.machine),
        })
    }
}

impl Probe for ServerProbe<'_> {
    fn window_start(&mut self) -> io::Result<()> {
        self.start = Some(self.sample()?);
        if let Some(d) = self.profile {
            let dir = std::env::temp_dir().join("zerorx-bench-profiles");
            let name = format!("echo-{}", self.server.pid());
            self.recording = Some(Recording::start(
                self.server.pid(),
                d.as_secs_f64(),
                &dir,
                &name,
            )?);
        }
        Ok(())
    }

    fn window_end(&mut self) -> io::Result<()> {
        self.end = Some(self.sample()?);
        if let Some(r) = self.recording.take() {
            self.attribution = Some(r.finish()?);
        }
        Ok(())
    }
}

/// W7: server memory per idle connection and wake-ups while idle.
fn idle_cell(server: &mut ServerProcess, cfg: &CellConfig) -> io::Result<CellMetrics> {
    let pid = server.pid();
    // One connection first, so code paths and allocator arenas every connection
    // needs are in the baseline, not charged to the idle ones.
    let warm = IdleConns::open(server.addr(), 1, 1)?;
    std::thread::sleep(cfg.idle_settle / 4);
    let (rss0, anon0) = procfs::rss_bytes(pid)?;
    let heap0 = server.stats()?.heap_bytes;
    let conns = IdleConns::open(server.addr(), cfg.idle_conns, 256)?;
    std::thread::sleep(cfg.idle_settle);
    let (rss1, anon1) = procfs::rss_bytes(pid)?;
    let heap1 = server.stats()?.heap_bytes;
    let machine0 = MachineCpu::now()?;
    let (cs0, t0) = (procfs::context_switches(pid)?, Instant::now());
    std::thread::sleep(cfg.measure);
    let (cs1, t1) = (procfs::context_switches(pid)?, Instant::now());
    let machine = machine0.split_until(&MachineCpu::now()?);
    let n = conns.len().max(1) as f64;
    let mut v = BTreeMap::new();
    v.insert("conns".into(), conns.len() as f64);
    v.insert("rss_per_conn".into(), rss1.saturating_sub(rss0) as f64 / n);
    v.insert(
        "anon_per_conn".into(),
        anon1.saturating_sub(anon0) as f64 / n,
    );
    if let (Some(a), Some(b)) = (heap0, heap1) {
        v.insert("heap_per_conn".into(), b.saturating_sub(a) as f64 / n);
    }
    v.insert(
        "wakeups_per_s".into(),
        cs1.saturating_sub(cs0) as f64 / (t1 - t0).as_secs_f64().max(1e-9),
    );
    drop(conns);
    drop(warm);
    Ok(CellMetrics { values: v, machine })
}
