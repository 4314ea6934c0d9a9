//! The arguments checked into a [`RunPlan`], and the embedded server's arguments.

use super::RunError;
use crate::cli::{cpus, RunArgs, Scenario, StreamMode};
use crate::client::LoadPlan;
use crate::fabric::{self};
use crate::faults::{self, FaultPlan, FaultSpec};
use crate::wire::{Kind, PayloadSource};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// The largest payload a fault action sends (slow readers), so the payload source
/// covers it.
pub(super) const FAULT_PAYLOAD: usize = 64 * 1024;

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
    let providers = zerorx_fabric::Fabric::providers();
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
