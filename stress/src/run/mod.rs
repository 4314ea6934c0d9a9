//! One run: start (or find) the server, drive the load, collect every figure, build
//! the report.
//!
//! [`plan`] checks the arguments, [`run`] starts the server and drives the load
//! (`drive`), `settle` waits for the server to see every connection end, and `build`
//! turns what was collected into the report.

mod build;
mod plan;
mod settle;

use build::{build_report, Collected};
pub(crate) use plan::server_args;
pub use plan::{plan, RunPlan};
use settle::{settle, settled_stats, FIRED_LIMIT};

use crate::cli::{RunArgs, Scenario};
use crate::client::rpc::run_rpc_slot;
use crate::client::slot::run_slot;
use crate::client::stats::WorkerStats;
use crate::client::{LoadPlan, RunCtx};
use crate::embedded::EmbeddedServer;
use crate::fabric::{self, run_fabric_slot};
use crate::faults::actions::Ctx;
use crate::faults::injector::run_injector;
use crate::faults::wire::WireKind;
use crate::faults::{FaultKind, FaultStats};
use crate::report::verdict::decide;
use crate::report::{Report, TargetInfo};
use crate::sampler::{Sampler, SamplerConfig};
use crate::server::stats::ModeInfo;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zerorx::{JoinHandle, Runtime};
use zerorx_cli::bench::BenchClient;

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

/// What the `fabric` scenario loads, in reports.
fn fabric_target(provider: &str) -> String {
    format!("{provider} endpoint pairs inside the harness")
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
