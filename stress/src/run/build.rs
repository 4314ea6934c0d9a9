//! The report built from everything a finished run collected.

use super::RunPlan;
use crate::cli::Scenario;
use crate::client::stats::WorkerStats;
use crate::client::RunCtx;
use crate::errors::ErrorKind;
use crate::faults::{FaultKind, FaultSpec, KindCounts};
use crate::report::checks::{rpc_checks, server_checks, CheckRule, ClientCloses, ServerCheck};
use crate::report::verdict::REQUEST_KINDS;
use crate::report::{
    imbalance, shares, ConnectionFigures, FaultFigures, LatencySummary, LoadInfo, Report,
    RequestCounts, RssSection, ServerSection, ServerWorkerRow, TargetInfo, Throughput,
};
use crate::rss;
use crate::sampler::Sampled;
use crate::server::stats::{ModeInfo, ServerSnapshot};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

/// Everything a finished run collected.
pub(super) struct Collected {
    pub(super) target: TargetInfo,
    pub(super) started_mode: Option<ModeInfo>,
    pub(super) workers: Vec<Arc<WorkerStats>>,
    pub(super) faults: Vec<(FaultSpec, KindCounts)>,
    pub(super) fault_samples: Vec<String>,
    pub(super) run: Arc<RunCtx>,
    pub(super) elapsed: Duration,
    pub(super) sampled: Sampled,
    pub(super) server: Option<ServerSnapshot>,
    /// `fire` calls an external Thrift server processed during the run.
    pub(super) external_fired: Option<u64>,
    pub(super) notes: Vec<String>,
}

pub(super) fn build_report(p: &RunPlan, c: Collected) -> Report {
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
            rule: CheckRule::Exact,
            ok: held == 0,
        });
        // Nor any ordinary memory the receives took while the pools were held.
        let overflow = s.overflow_held();
        checks.push(ServerCheck {
            what: "bytes received beside the pools still held after the run".into(),
            expected: 0,
            observed: overflow,
            rule: CheckRule::Exact,
            ok: overflow == 0,
        });
    }
    if let Some(n) = external_fired {
        let exact = !closes.inexact;
        checks.push(ServerCheck {
            what: "oneway fire calls processed (fired() delta)".into(),
            expected: fires,
            observed: n,
            rule: CheckRule::of(exact),
            ok: CheckRule::of(exact).holds(n, fires),
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
            let overflows: u64 = s.workers.iter().map(|w| w.runtime.recv_overflows).sum();
            notes.push(format!(
                "the server's receive pool ran dry {enobufs} times while its buffers were held \
                 ({overflows} receives went to ordinary memory meanwhile; try --pool-buffers / \
                 --pool-buffer-size)"
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
        scenario: p.scenario,
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
