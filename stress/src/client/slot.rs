//! Connection slots: each keeps one connection going for the whole run (`stream`) or
//! opens, uses and closes connections in a loop (`churn`).

use super::conn::{drive, Ended};
use super::stats::WorkerStats;
use super::{LoadPlan, RunCtx};
use crate::errors::{ErrorKind, ErrorSample};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zerorx::net::TcpStream;

/// Consecutive failed connects after which the run is aborted.
const MAX_CONNECT_FAILURES: u32 = 8;

/// Records a failed connect; `true` (and the run is aborted) after too many in a row.
pub fn connect_failed(
    run: &RunCtx,
    stats: &WorkerStats,
    conn: u32,
    addr: std::net::SocketAddr,
    failures: u32,
    err: &str,
) -> bool {
    stats.record_error(ErrorSample {
        kind: ErrorKind::Connect,
        id: None,
        conn,
        detail: format!("connect to {addr}: {err}"),
    });
    if failures >= MAX_CONNECT_FAILURES {
        run.abort(format!(
            "cannot connect to {addr} ({failures} attempts in a row): {err}"
        ));
        return true;
    }
    false
}

/// Runs one slot until the run stops. `reconnect_always`: open a new connection after
/// each finished one (churn); otherwise only after a failure.
pub async fn run_slot(
    index: usize,
    plan: Arc<LoadPlan>,
    run: Arc<RunCtx>,
    stats: Arc<WorkerStats>,
    start: Instant,
) {
    let plan = Rc::new((*plan).clone());
    let mut pacer = plan.pacer(index, start);
    let mut failures = 0u32;
    while !run.stopping() && !run.budget_spent() {
        let conn = run.next_conn();
        let t0 = Instant::now();
        let stream = match TcpStream::connect_timeout(plan.addr, plan.timeout).await {
            Ok(s) => s,
            Err(e) => {
                failures += 1;
                if connect_failed(&run, &stats, conn, plan.addr, failures, &e.to_string()) {
                    return;
                }
                zerorx::sleep(Duration::from_millis(50 << failures.min(4))).await;
                continue;
            }
        };
        failures = 0;
        stats.record_connect(t0.elapsed());
        let _ = stream.set_nodelay(true);
        match drive(stream, conn, plan.clone(), &mut pacer, &run, stats.clone()).await {
            Ended::Stopped => return,
            Ended::Finished => {}
            Ended::Failed => zerorx::sleep(Duration::from_millis(20)).await,
        }
    }
}
