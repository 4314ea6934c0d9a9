//! One run: start (or find) the server, drive the load, collect every figure, build
//! the report.

use crate::cli::{cpus, RunArgs, Scenario, StreamMode};
use crate::client::rpc::run_rpc_slot;
use crate::client::slot::run_slot;
use crate::client::stats::WorkerStats;
use crate::client::{LoadPlan, RunCtx};
use crate::embedded::EmbeddedServer;
use crate::errors::ErrorKind;
use crate::fabric::{self, run_fabric_slot};
use crate::faults::actions::Ctx;
use crate::faults::injector::run_injector;
use crate::faults::wire::WireKind;
use crate::faults::{self, FaultKind, FaultPlan, FaultSpec, FaultStats, KindCounts};
use crate::report::checks::{rpc_checks, server_checks, ClientCloses, ServerCheck};
use crate::report::verdict::{decide, REQUEST_KINDS};
use crate::report::{
    imbalance, shares, ConnectionFigures, FaultFigures, LatencySummary, LoadInfo, Report,
    RequestCounts, RssSection, ServerSection, ServerWorkerRow, TargetInfo, Throughput,
};
use crate::rss;
use crate::sampler::{Sampled, Sampler, SamplerConfig};
use crate::server::stats::{ModeInfo, ServerSnapshot};
use crate::wire::{Kind, PayloadSource};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zerorx::rpc::bench::BenchClient;
use zerorx::{JoinHandle, Runtime};

/// Why a run could not produce a report.
#[derive(Debug, PartialEq, Eq)]
pub enum RunError {
    /// The arguments do not make a run.
    Usage(String),
    /// The run could not start (server, runtime, files).
    Setup(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Usage(s) | RunError::Setup(s) => f.write_str(s),
        }
    }
}

/// The largest payload a fault action sends (slow readers), so the payload source
/// covers it.
const FAULT_PAYLOAD: usize = 64 * 1024;

/// What the `fabric` scenario loads, in reports.
fn fabric_target(provider: &str) -> String {
    format!("{provider} endpoint pairs inside the harness")
}

/// A run's settings, checked.
#[derive(Clone, Debug)]
pub struct RunPlan {
    /// Scenario.
    pub scenario: Scenario,
    /// The load every connection follows (its `addr` is set once the target is known).
    pub load: LoadPlan,
    /// Connections.
    pub connections: usize,
    /// Client workers.
    pub client_threads: usize,
    /// Embedded server workers.
    pub server_threads: usize,
    /// How long.
    pub duration: Option<Duration>,
    /// How many requests.
    pub requests: Option<u64>,
    /// Open-loop rate.
    pub rate: Option<f64>,
    /// Memory growth limit in KiB.
    pub rss_limit_kib: u64,
    /// Faults to inject.
    pub faults: Vec<FaultSpec>,
    /// How fault actions behave.
    pub fault_plan: FaultPlan,
    /// The `fabric` scenario's provider.
    pub fabric_provider: Arc<str>,
}

/// Checks the arguments.
pub fn plan(a: &RunArgs) -> Result<RunPlan, RunError> {
    let usage = |s: &str| Err(RunError::Usage(s.to_owned()));
    if a.connections == 0 {
        return usage("--connections must be at least 1");
    }
    if a.depth == 0 {
        return usage("--depth must be at least 1");
    }
    if a.calls_per_conn == 0 {
        return usage("--calls-per-conn must be at least 1");
    }
    if a.requests == Some(0) {
        return usage("--requests must be at least 1");
    }
    if a.duration.is_some_and(|d| d.is_zero()) {
        return usage("--duration must be above zero");
    }
    if a.timeout.is_zero() {
        return usage("--timeout must be above zero");
    }
    if a.scenario == Scenario::Fabric && a.connect.is_some() {
        return usage(
            "--scenario fabric runs both endpoints in the harness; --connect does not apply",
        );
    }
    if a.scenario != Scenario::Fabric && a.fabric_provider != fabric::DEFAULT_PROVIDER {
        return usage("--fabric-provider applies to --scenario fabric only");
    }
    let providers = zerorx::fabric::Fabric::providers();
    if !providers.contains(&a.fabric_provider) {
        return Err(RunError::Usage(format!(
            "--fabric-provider {}: not in this build (it has: {}){}",
            a.fabric_provider,
            providers.join(", "),
            if cfg!(feature = "libfabric") {
                ""
            } else {
                "; libfabric providers need a build with --features libfabric"
            }
        )));
    }
    if a.scenario == Scenario::Fabric && a.faults.is_some() {
        return usage("--scenario fabric takes no --faults (they speak TCP frames to a server)");
    }
    let Ok(max_frame) = u32::try_from(a.max_frame) else {
        return usage("--max-frame must be below 4 GiB");
    };
    let default_sizes = match a.scenario {
        Scenario::Stream | Scenario::Rpc | Scenario::Fabric => vec![64, 16 * 1024],
        Scenario::Churn => vec![64],
    };
    let sizes = a.sizes.clone().unwrap_or(default_sizes);
    if sizes.is_empty() {
        return usage("--sizes needs at least one size");
    }
    if let Some(big) = sizes.iter().find(|&&s| s > max_frame as usize) {
        return Err(RunError::Usage(format!(
            "size {big} is over --max-frame {max_frame}"
        )));
    }
    let kinds = match a.mode {
        StreamMode::Echo => vec![Kind::Echo],
        StreamMode::Sink => vec![Kind::Sink],
        StreamMode::Mixed => vec![Kind::Echo, Kind::Sink],
    };
    let client_threads = a.client_threads.unwrap_or((cpus() / 2).max(1)).max(1);
    let server_threads = a.server_threads.unwrap_or(cpus()).max(1);
    let per_conn = (a.scenario == Scenario::Churn).then_some(a.calls_per_conn);
    let depth = match a.scenario {
        Scenario::Churn => a.depth.min(a.calls_per_conn as usize).max(1),
        Scenario::Stream | Scenario::Rpc | Scenario::Fabric => a.depth,
    };
    let pacing = a.rate.map(|r| {
        (
            Duration::from_secs_f64(a.connections as f64 / r),
            a.connections,
        )
    });
    let duration = match (a.duration, a.requests) {
        (None, None) => Some(Duration::from_secs(10)),
        (d, _) => d,
    };
    let faults = match &a.faults {
        Some(list) => faults::parse_list(list).map_err(RunError::Usage)?,
        None => Vec::new(),
    };
    if a.burst_conns == 0 {
        return usage("--burst-conns must be at least 1");
    }
    let max_size = sizes
        .iter()
        .copied()
        .max()
        .unwrap_or(0)
        .max(FAULT_PAYLOAD)
        .max(a.burst_size)
        .min(max_frame as usize);
    Ok(RunPlan {
        scenario: a.scenario,
        load: LoadPlan {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            sizes,
            kinds,
            depth,
            per_conn,
            pacing,
            timeout: a.timeout,
            max_frame,
            payloads: PayloadSource::new(max_size, a.seed),
        },
        connections: a.connections,
        client_threads,
        server_threads,
        duration,
        requests: a.requests,
        rate: a.rate,
        rss_limit_kib: a.rss_growth_limit as u64 / 1024,
        faults,
        fault_plan: FaultPlan {
            hold: a.fault_hold,
            burst_conns: a.burst_conns,
            burst_size: a.burst_size,
            max_frame,
            timeout: a.timeout,
        },
        fabric_provider: a.fabric_provider.as_str().into(),
    })
}

/// The server arguments for the embedded server.
pub(crate) fn server_args(a: &RunArgs, p: &RunPlan) -> Vec<String> {
    let service = match p.scenario {
        Scenario::Rpc => "rpc",
        Scenario::Stream | Scenario::Churn | Scenario::Fabric => "frames",
    };
    let mut v = vec![
        "--service".to_owned(),
        service.to_owned(),
        "--listen".to_owned(),
        "127.0.0.1:0".to_owned(),
        "--threads".to_owned(),
        p.server_threads.to_string(),
        "--max-frame".to_owned(),
        p.load.max_frame.to_string(),
    ];
    v.extend(["--receive-mode".to_owned(), a.receive_mode.to_arg()]);
    if let Some(n) = a.pool_buffers {
        v.extend(["--pool-buffers".to_owned(), n.to_string()]);
    }
    if let Some(n) = a.pool_buffer_size {
        v.extend(["--pool-buffer-size".to_owned(), n.to_string()]);
    }
    v
}

fn resolve(target: &str) -> Result<SocketAddr, RunError> {
    target
        .to_socket_addrs()
        .map_err(|e| RunError::Usage(format!("--connect {target}: {e}")))?
        .next()
        .ok_or_else(|| RunError::Usage(format!("--connect {target}: no address")))
}

/// Runs the load and returns its report.
pub fn run(a: &RunArgs) -> Result<Report, RunError> {
    let mut p = plan(a)?;
    let mut server = match &a.connect {
        _ if p.scenario == Scenario::Fabric => None,
        Some(t) => {
            p.load.addr = resolve(t)?;
            None
        }
        None => {
            let s = EmbeddedServer::start(&server_args(a, &p), Duration::from_secs(30))
                .map_err(RunError::Setup)?;
            p.load.addr = s.addr();
            Some(s)
        }
    };
    if !a.quiet {
        let who = match &server {
            None if p.scenario == Scenario::Fabric => fabric_target(&p.fabric_provider),
            Some(s) => format!(
                "embedded server pid {} ({} workers) on {}",
                s.pid(),
                s.threads(),
                s.addr()
            ),
            None => format!("server at {}", p.load.addr),
        };
        eprintln!(
            "zerorx-stress: scenario {}, {who}, {} connections on {} client workers",
            p.scenario.name(),
            p.connections,
            p.client_threads
        );
    }
    let rt = Runtime::builder()
        .threads(p.client_threads)
        .shutdown_timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| RunError::Setup(format!("cannot start the client runtime: {e}")))?;
    let workers: Vec<Arc<WorkerStats>> = (0..p.client_threads)
        .map(|_| Arc::new(WorkerStats::default()))
        .collect();
    let run_ctx = Arc::new(RunCtx::new(p.requests));
    let start = Instant::now();
    let sampler = Sampler::start(
        workers.clone(),
        SamplerConfig {
            progress: !a.quiet,
            server_pid: server.as_ref().map(EmbeddedServer::pid),
            hist: a.hist.clone(),
        },
        start,
    )
    .map_err(|e| RunError::Setup(format!("cannot start the sampler: {e}")))?;
    let mut notes = Vec::new();
    // An external Thrift server's `fire` count is read through `fired()` before and after.
    let external_rpc = a.connect.is_some() && p.scenario == Scenario::Rpc;
    let fired_before = if external_rpc {
        match rt.block_on(fired(&p.load)) {
            Ok(n) => Some(n),
            Err(e) => {
                notes.push(format!(
                    "cannot ask the server how many fire calls it processed: {e}"
                ));
                None
            }
        }
    } else {
        None
    };
    let fault_stats = Arc::new(FaultStats::default());
    let elapsed = rt.block_on(drive(
        &rt,
        &p,
        &workers,
        &fault_stats,
        &run_ctx,
        start,
        &mut server,
        &mut notes,
    ));
    let mut sampled = sampler.finish();
    if let Some(e) = sampled.hist_error.take() {
        notes.push(e);
    }
    let started_mode = match &server {
        None if p.scenario == Scenario::Fabric => {
            notes.push(
                "fabric latency is a round trip: A's send to A's receipt of B's answer".into(),
            );
            Some(ModeInfo {
                mode: "fabric".into(),
                reason: if &*p.fabric_provider == fabric::DEFAULT_PROVIDER {
                    format!(
                        "{} provider, lease receives from the harness workers' receive pools",
                        p.fabric_provider
                    )
                } else {
                    format!("{} provider, lease receives", p.fabric_provider)
                },
                tuning: Vec::new(),
            })
        }
        _ => server.as_ref().map(|s| s.receive_mode().clone()),
    };
    let target = TargetInfo {
        embedded: server.is_some(),
        addr: if p.scenario == Scenario::Fabric {
            fabric_target(&p.fabric_provider)
        } else {
            p.load.addr.to_string()
        },
        server_pid: server.as_ref().map(EmbeddedServer::pid),
        server_threads: server.as_ref().map(EmbeddedServer::threads),
    };
    let connects = workers
        .iter()
        .map(|w| w.connects.load(Relaxed))
        .sum::<u64>()
        + FaultKind::ALL
            .iter()
            .map(|&k| fault_stats.counts(k).connects)
            .sum::<u64>();
    let mut snapshot = None;
    if let Some(mut s) = server.take() {
        if s.exited().is_none() {
            let fires = workers.iter().map(|w| w.fires.load(Relaxed)).sum();
            match settled_stats(&rt, &mut s, connects, fires) {
                Ok((snap, note)) => {
                    snapshot = Some(snap);
                    notes.extend(note);
                }
                Err(e) => notes.push(format!("no server figures: {e}")),
            }
        }
        if let Err(e) = s.stop(Duration::from_secs(10)) {
            notes.push(e);
        }
    }
    let fires: u64 = workers.iter().map(|w| w.fires.load(Relaxed)).sum();
    let external_fired = fired_before.and_then(|before| {
        // Oneway calls may still be on their way: wait (a bounded time) for all of them.
        let counted = settle(&rt, FIRED_LIMIT, || {
            let now = rt.block_on(fired(&p.load))?;
            let processed = now.saturating_sub(before).max(0) as u64;
            let missing = fires.saturating_sub(processed);
            let open =
                (missing > 0).then(|| format!("{missing} of {fires} oneway calls not processed"));
            Ok((processed, open))
        });
        match counted {
            Ok((processed, note)) => {
                notes.extend(note);
                Some(processed)
            }
            Err(e) => {
                notes.push(format!(
                    "cannot ask the server how many fire calls it processed: {e}"
                ));
                None
            }
        }
    });
    if let Err(e) = rt.shutdown(Duration::from_secs(5)) {
        notes.push(format!("client runtime shutdown: {e}"));
    }
    let mut report = build_report(
        &p,
        Collected {
            target,
            started_mode,
            workers,
            faults: p
                .faults
                .iter()
                .map(|f| (*f, fault_stats.counts(f.kind)))
                .collect(),
            fault_samples: fault_stats.samples(),
            run: run_ctx,
            elapsed,
            sampled,
            server: snapshot,
            external_fired,
            notes,
        },
    );
    report.verdict = decide(&report);
    Ok(report)
}

/// Asks a Thrift server how many `fire` calls it has processed.
async fn fired(load: &LoadPlan) -> Result<i64, String> {
    let c = BenchClient::connect(load.addr, crate::client::rpc::client_config(load))
        .await
        .map_err(|e| e.to_string())?;
    c.fired().await.map_err(|e| e.to_string())
}

/// How long the server may take to see every connection end. It normally takes
/// milliseconds; the bound only keeps a run from hanging on a connection that never
/// closes (the note then names it), with room for a loaded machine.
const SETTLE_LIMIT: Duration = Duration::from_secs(10);

/// How long an external server may take to process the oneway calls still on their
/// way when the run ends (they need no connection to close, only to be read).
const FIRED_LIMIT: Duration = Duration::from_secs(3);

/// The server's figures once it has seen every connection the harness opened end
/// (closes reach it a moment after the harness is done), or after [`SETTLE_LIMIT`];
/// with a note when that took long or never happened, saying what was still open.
fn settled_stats(
    rt: &Runtime,
    s: &mut EmbeddedServer,
    connects: u64,
    fires: u64,
) -> Result<(ServerSnapshot, Option<String>), String> {
    let mut settled = false;
    let (snap, note) = settle(rt, SETTLE_LIMIT, || {
        let snap = s.stats(Duration::from_secs(5))?;
        let held = snap.buffers_held();
        let open = match &snap.rpc {
            Some(r) => {
                let active = r.get("connections_active");
                let unfired = fires.saturating_sub(r.fired.max(0) as u64);
                (active > 0 || unfired > 0 || held > 0).then(|| {
                    format!(
                        "{active} connections still open, {unfired} oneway calls not processed, \
                         {held} receive buffers not back in their pools"
                    )
                })
            }
            None => {
                let t = snap.totals();
                let unseen = connects.saturating_sub(t.accepted + t.aborted_before_accept);
                (t.open > 0 || unseen > 0 || held > 0).then(|| {
                    format!(
                        "{} connections still open ({} of them waiting for a send to finish), \
                         {unseen} of the harness's connections not seen, \
                         {held} receive buffers not back in their pools",
                        t.open, t.sending
                    )
                })
            }
        };
        settled = open.is_none();
        Ok((snap, open))
    })?;
    if settled {
        return Ok((snap, note));
    }
    // Name what is still open, from the server's own state.
    let named = match s.dump(Duration::from_secs(5)) {
        Ok(dump) => crate::stuck::describe(&dump),
        Err(e) => Some(format!("no state dump from the server: {e}")),
    };
    let note = match (note, named) {
        (Some(n), Some(d)) => Some(format!("{n}; {d}")),
        (n, d) => n.or(d),
    };
    Ok((snap, note))
}

/// Polls `probe` (a value, and what is still open: `None` once nothing is) until
/// nothing is open or `limit` has passed; the last value, with a note when that took
/// over 2 s or never happened.
///
/// The harness's runtime keeps turning while it waits: its worker 0 is this thread,
/// and the closes of its last connections may still be on their way through it (a
/// fault connection closes only once the cancel of its stalled send has completed).
/// A runtime nobody drives would leave the server waiting on a peer that never goes.
fn settle<T>(
    rt: &Runtime,
    limit: Duration,
    mut probe: impl FnMut() -> Result<(T, Option<String>), String>,
) -> Result<(T, Option<String>), String> {
    let start = Instant::now();
    loop {
        let (value, open) = probe()?;
        let waited = start.elapsed();
        match open {
            None if waited < Duration::from_secs(2) => return Ok((value, None)),
            None => {
                let note = format!(
                    "the server took {:.1} s after the run to settle",
                    waited.as_secs_f64()
                );
                return Ok((value, Some(note)));
            }
            Some(what) if waited >= limit => {
                let note = format!(
                    "server figures taken {} s after the run with {what}",
                    limit.as_secs()
                );
                return Ok((value, Some(note)));
            }
            Some(_) => rt.block_on(zerorx::sleep(Duration::from_millis(20))),
        }
    }
}

/// Starts the connection slots and watches the run until every slot has finished.
/// Returns the time from the start to the last reply.
#[allow(clippy::too_many_arguments)]
async fn drive(
    rt: &Runtime,
    p: &RunPlan,
    workers: &[Arc<WorkerStats>],
    fault_stats: &Arc<FaultStats>,
    run: &Arc<RunCtx>,
    start: Instant,
    server: &mut Option<EmbeddedServer>,
    notes: &mut Vec<String>,
) -> Duration {
    let plan = Arc::new(p.load.clone());
    let handle = rt.handle();
    let slots: Vec<JoinHandle<()>> = (0..p.connections)
        .map(|i| {
            let w = i % p.client_threads;
            let (plan, run, stats) = (plan.clone(), run.clone(), workers[w].clone());
            match p.scenario {
                Scenario::Rpc => {
                    handle.spawn_on_with(w, move || run_rpc_slot(i, plan, run, stats, start))
                }
                Scenario::Stream | Scenario::Churn => {
                    handle.spawn_on_with(w, move || run_slot(i, plan, run, stats, start))
                }
                Scenario::Fabric => {
                    let provider = p.fabric_provider.clone();
                    handle.spawn_on_with(w, move || {
                        run_fabric_slot(i, provider, plan, run, stats, start)
                    })
                }
            }
        })
        .collect();
    let fault_plan = Arc::new(p.fault_plan.clone());
    let injectors: Vec<JoinHandle<()>> = p
        .faults
        .iter()
        .enumerate()
        .map(|(i, &spec)| {
            let cx = Ctx {
                load: plan.clone(),
                plan: fault_plan.clone(),
                run: run.clone(),
                stats: fault_stats.clone(),
                wire: match p.scenario {
                    Scenario::Rpc => WireKind::Thrift,
                    Scenario::Stream | Scenario::Churn | Scenario::Fabric => WireKind::Frames,
                },
            };
            handle.spawn_on_with(i % p.client_threads, move || run_injector(spec, cx))
        })
        .collect();
    let mut stopped_at: Option<Instant> = None;
    // After the stop, connections get the reply timeout to drain, and fault actions
    // their hold time and a second timeout on top.
    let drain = p.load.timeout * 2 + p.fault_plan.hold + Duration::from_secs(2);
    let all = || slots.iter().chain(&injectors);
    loop {
        if all().all(JoinHandle::is_finished) {
            break;
        }
        if slots.iter().all(JoinHandle::is_finished) {
            // The request budget is spent: the faults stop with the load.
            run.stop();
        }
        if let Some(how) = server.as_mut().and_then(EmbeddedServer::exited) {
            run.abort(format!("the embedded server {how} during the run"));
        }
        if p.duration.is_some_and(|d| start.elapsed() >= d) {
            run.stop();
        }
        if run.stopping() {
            let at = *stopped_at.get_or_insert_with(Instant::now);
            if at.elapsed() > drain {
                let stuck = all().filter(|s| !s.is_finished()).count();
                notes.push(format!(
                    "{stuck} connection or fault tasks had not finished {drain:?} after the stop and were cancelled"
                ));
                run.abort(format!("{stuck} tasks hung after the stop"));
                for s in all() {
                    s.abort();
                }
                break;
            }
        }
        zerorx::sleep(Duration::from_millis(20)).await;
    }
    let elapsed = start.elapsed();
    for s in slots.into_iter().chain(injectors) {
        if let Err(e) = s.await {
            if e.is_panic() {
                run.abort(format!(
                    "a connection task panicked: {}",
                    e.panic_message().unwrap_or("(no message)")
                ));
            }
        }
    }
    elapsed
}

/// Everything a finished run collected.
struct Collected {
    target: TargetInfo,
    started_mode: Option<ModeInfo>,
    workers: Vec<Arc<WorkerStats>>,
    faults: Vec<(FaultSpec, KindCounts)>,
    fault_samples: Vec<String>,
    run: Arc<RunCtx>,
    elapsed: Duration,
    sampled: Sampled,
    server: Option<ServerSnapshot>,
    /// `fire` calls an external Thrift server processed during the run.
    external_fired: Option<u64>,
    notes: Vec<String>,
}

fn build_report(p: &RunPlan, c: Collected) -> Report {
    let Collected {
        target,
        started_mode,
        workers,
        faults,
        fault_samples,
        run,
        elapsed,
        sampled,
        server,
        external_fired,
        mut notes,
    } = c;
    let workers = &workers[..];
    let secs = elapsed.as_secs_f64().max(1e-9);
    let sum = |f: fn(&WorkerStats) -> u64| workers.iter().map(|w| f(w)).sum::<u64>();
    let ok = sum(|w| w.ok.load(Relaxed));
    let sent = sum(|w| w.sent.load(Relaxed));
    let mut errors = std::collections::BTreeMap::new();
    for k in ErrorKind::ALL {
        let n: u64 = workers.iter().map(|w| w.errors(k)).sum();
        if n > 0 {
            errors.insert(k.name().to_owned(), n);
        }
    }
    let failed: u64 = REQUEST_KINDS
        .iter()
        .map(|k| errors.get(k.name()).copied().unwrap_or(0))
        .sum();
    let mut samples: Vec<_> = workers.iter().flat_map(|w| w.samples()).collect();
    samples.sort_by_key(|s| (s.kind, s.conn, s.id));
    let mut connect = crate::client::stats::new_histogram();
    for w in workers {
        let _ = connect.add(w.connect_histogram());
    }
    let opened = sum(|w| w.connects.load(Relaxed));
    let client_counts: Vec<u64> = workers.iter().map(|w| w.ok.load(Relaxed)).collect();
    let receive_mode = match (&server, started_mode) {
        (Some(s), _) => s.receive_mode.clone(),
        (None, Some(m)) => m,
        (None, None) => ModeInfo {
            mode: "unknown".into(),
            reason: "external server: the harness cannot see how it receives".into(),
            tuning: Vec::new(),
        },
    };
    let fault_figures: Vec<FaultFigures> = faults
        .iter()
        .map(|(spec, counts)| FaultFigures {
            kind: spec.kind,
            rate_per_s: spec.rate,
            expectation: spec.kind.expectation().to_owned(),
            counts: *counts,
        })
        .collect();
    let conn_failures = ErrorKind::ALL
        .iter()
        .filter(|k| !REQUEST_KINDS.contains(k))
        .any(|k| errors.contains_key(k.name()));
    let fault_trouble = faults
        .iter()
        .any(|(_, c)| c.unexpected > 0 || c.not_injected > 0);
    let closes = ClientCloses {
        clean: sum(|w| w.closed_clean.load(Relaxed)),
        silent: sum(|w| w.closed_silent.load(Relaxed)),
        connects: opened + faults.iter().map(|(_, c)| c.connects).sum::<u64>(),
        inexact: conn_failures || fault_trouble || run.aborted().is_some(),
    };
    let kind_counts: Vec<(FaultKind, KindCounts)> =
        faults.iter().map(|(f, c)| (f.kind, *c)).collect();
    let fires = sum(|w| w.fires.load(Relaxed));
    let checks = server
        .as_ref()
        .map(|s| match &s.rpc {
            Some(rpc) => rpc_checks(rpc, &closes, &kind_counts, fires),
            None => server_checks(
                &s.totals(),
                &closes,
                &kind_counts,
                p.fault_plan.burst_conns as u64,
            ),
        })
        .unwrap_or_default();
    let mut checks = checks;
    if let Some(s) = &server {
        // Once every connection has ended, every receive buffer must be back: one
        // still held is a connection task that never finished, or a leak.
        let held = s.buffers_held();
        checks.push(ServerCheck {
            what: "receive buffers held after the run".into(),
            expected: 0,
            observed: held,
            rule: "exact".into(),
            ok: held == 0,
        });
    }
    if let Some(n) = external_fired {
        let exact = !closes.inexact;
        checks.push(ServerCheck {
            what: "oneway fire calls processed (fired() delta)".into(),
            expected: fires,
            observed: n,
            rule: if exact { "exact" } else { "at most" }.into(),
            ok: if exact { n == fires } else { n <= fires },
        });
        notes.push(
            "the fire count comes from the server's fired(): exact only if no other client \
             fires at the same time"
                .into(),
        );
    }
    if closes.inexact && server.is_some() {
        notes.push(
            "some connections failed or faults went wrong, so the server's counts are checked \
             as upper bounds only"
                .into(),
        );
    }
    let server_section = server.map(|s| {
        let (counts, share_of): (Vec<u64>, &str) = if s.rpc.is_some() {
            let c = s
                .workers
                .iter()
                .map(|w| w.pool.map_or(0, |p| p.completions))
                .collect();
            (c, "receive completions")
        } else {
            (
                s.workers.iter().map(|w| w.counters.requests).collect(),
                "requests",
            )
        };
        let sh = shares(&counts);
        let imb = imbalance(&sh);
        let leaked: u64 = s.workers.iter().map(|w| w.runtime.leaked_ops).sum();
        if leaked > 0 {
            notes.push(format!("the server runtime leaked {leaked} operations"));
        }
        let enobufs: u64 = s
            .workers
            .iter()
            .filter_map(|w| w.pool.map(|p| p.enobufs))
            .sum();
        if enobufs > 0 {
            notes.push(format!(
                "the server's receive pool ran dry {enobufs} times (receives waited for buffers; \
                 try --pool-buffers / --pool-buffer-size)"
            ));
        }
        ServerSection {
            share_of: share_of.to_owned(),
            rpc: s.rpc.clone(),
            totals: s.totals(),
            shares: sh,
            imbalance: imb,
            workers: s
                .workers
                .iter()
                .map(|w| ServerWorkerRow {
                    worker: w.worker,
                    counters: w.counters,
                    runtime: w.runtime,
                    pool: w.pool,
                    zc_pool: w.zc_pool,
                })
                .collect(),
        }
    });
    let open_loop = p.rate.is_some();
    Report {
        tool: format!("zerorx-stress {}", env!("CARGO_PKG_VERSION")),
        scenario: p.scenario.name().to_owned(),
        target,
        load: LoadInfo {
            connections: p.connections,
            client_threads: p.client_threads,
            depth: p.load.depth,
            sizes: p.load.sizes.clone(),
            kinds: match p.scenario {
                Scenario::Rpc => ["echo", "roundtrip", "add", "fire"]
                    .map(String::from)
                    .to_vec(),
                Scenario::Stream | Scenario::Churn | Scenario::Fabric => p
                    .load
                    .kinds
                    .iter()
                    .map(|k| format!("{k:?}").to_lowercase())
                    .collect(),
            },
            rate_per_s: p.rate,
            per_conn: p.load.per_conn,
            duration_s: p.duration.map(|d| d.as_secs_f64()),
            requests: p.requests,
            timeout_s: p.load.timeout.as_secs_f64(),
        },
        receive_mode,
        elapsed_s: secs,
        requests: RequestCounts {
            sent,
            ok,
            oneway: fires,
            failed,
        },
        throughput: Throughput {
            req_per_s: ok as f64 / secs,
            mb_per_s_sent: sum(|w| w.bytes_out.load(Relaxed)) as f64 / secs / 1e6,
            mb_per_s_received: sum(|w| w.bytes_in.load(Relaxed)) as f64 / secs / 1e6,
        },
        latency: LatencySummary::from_histogram(&sampled.latency, open_loop),
        connections: ConnectionFigures {
            opened,
            per_s: opened as f64 / secs,
            connect: LatencySummary::from_histogram(&connect, false),
        },
        errors,
        error_samples: samples,
        client_workers: shares(&client_counts),
        server: server_section,
        rss: RssSection {
            harness: rss::judge(sampled.rss_harness, p.rss_limit_kib),
            server: (!sampled.rss_server.is_empty())
                .then(|| rss::judge(sampled.rss_server, p.rss_limit_kib)),
        },
        timeline: sampled.timeline,
        faults: fault_figures,
        fault_samples,
        server_checks: checks,
        aborted: run.aborted(),
        notes,
        verdict: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::settle;
    use std::io::Read;
    use std::net::TcpListener;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::sync::Arc;
    use std::time::{Duration, Instant};
    use zerorx::Runtime;

    #[test]
    fn settling_drives_the_harness_runtime_so_its_last_closes_reach_the_server() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let closed = Arc::new(AtomicBool::new(false));
        let seen = closed.clone();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().expect("accept");
            s.set_read_timeout(Some(Duration::from_secs(20)))
                .expect("timeout");
            let mut buf = [0u8; 64];
            // End of stream is the harness's close.
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 {
                    seen.store(true, SeqCst);
                    break;
                }
            }
        });
        let rt = Runtime::builder().threads(1).build().expect("runtime");
        rt.block_on(async move {
            let stream = zerorx::net::TcpStream::connect(addr)
                .await
                .expect("connect");
            // The stream closes from a task still waiting when `block_on` returns, as a
            // fault connection's close waits for the cancel of its stalled send.
            drop(zerorx::spawn(async move {
                zerorx::sleep(Duration::from_millis(100)).await;
                drop(stream);
            }));
        });
        let started = Instant::now();
        let ((), note) = settle(&rt, Duration::from_secs(15), || {
            let open = !closed.load(SeqCst);
            Ok(((), open.then(|| "1 connection still open".to_owned())))
        })
        .expect("settle");
        assert!(closed.load(SeqCst), "the close never reached the server");
        assert_eq!(note, None, "settled after {:?}", started.elapsed());
        server.join().expect("server thread");
    }

    #[test]
    fn a_server_that_never_settles_is_named_in_a_note() {
        let rt = Runtime::builder().threads(1).build().expect("runtime");
        let mut probes = 0;
        let (value, note) = settle(&rt, Duration::from_millis(200), || {
            probes += 1;
            Ok((probes, Some("2 connections still open".to_owned())))
        })
        .expect("settle");
        let note = note.expect("a note");
        assert!(note.contains("2 connections still open"), "{note}");
        assert!(value > 1, "probed {value} times");
        let err = settle::<()>(&rt, Duration::from_secs(1), || Err("no stats".into()));
        assert_eq!(err.unwrap_err(), "no stats");
    }
}
