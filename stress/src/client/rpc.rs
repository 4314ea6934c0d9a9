//! The `rpc` scenario's connections: a `zerorx_thrift` client per connection with
//! `depth` callers sharing it (pipelined), cycling through the mix echo (each size),
//! roundtrip, add and oneway fire. Every call carries the request id in its arguments
//! and every result is checked against what was sent.

use super::stats::WorkerStats;
use super::{LoadPlan, Pacer, RunCtx};
use crate::errors::{ErrorKind, ErrorSample};
use bytes::{BufMut, Bytes, BytesMut};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zerorx_cli::bench::{BenchClient, Payload};
use zerorx_thrift::{Client, ClientConfig, ClientError, Protocol};

/// One call of the mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// `echo` of this many bytes.
    Echo(usize),
    /// `roundtrip` of a `Payload`.
    Roundtrip,
    /// `add`.
    Add,
    /// oneway `fire`.
    Fire,
}

/// The `seq`-th call of a connection: one echo per size, then roundtrip, add, fire.
pub fn call_for(sizes: &[usize], seq: u64) -> Call {
    let n = sizes.len() as u64;
    match seq % (n + 3) {
        i if i < n => Call::Echo(sizes[i as usize]),
        i if i == n => Call::Roundtrip,
        i if i == n + 1 => Call::Add,
        _ => Call::Fire,
    }
}

/// The client settings for a load plan.
pub fn client_config(plan: &LoadPlan) -> ClientConfig {
    ClientConfig {
        protocol: Protocol::Binary,
        call_timeout: Some(plan.timeout),
        connect_timeout: plan.timeout,
        reconnect: false,
        write_timeout: Some(plan.timeout),
        max_frame: plan.max_frame as usize,
        ..ClientConfig::default()
    }
}

/// `echo` data for request `id`: the id, then payload bytes.
pub fn echo_data(plan: &LoadPlan, id: u64, size: usize) -> Bytes {
    let mut b = BytesMut::with_capacity(size.max(8));
    b.put_u64(id);
    b.extend_from_slice(&plan.payloads.payload(id, size.saturating_sub(8)));
    b.freeze()
}

fn roundtrip_payload(plan: &LoadPlan, id: u64, seq: u64) -> Payload {
    Payload {
        id: id as i64,
        data: plan.payloads.payload(id, 48),
        meta: seq
            .is_multiple_of(2)
            .then(|| BTreeMap::from([("id".into(), format!("{id:x}").as_str().into())])),
        tags: vec![seq as i32, (id >> 32) as i32, 7],
    }
}

/// What a wrong result says about where it came from.
fn wrong(conn: u32, id: u64, got_id: Option<u64>, what: &str) -> (ErrorKind, String) {
    match got_id {
        Some(other) if other != id && (other >> 32) as u32 != conn => (
            ErrorKind::Misrouted,
            format!("{what}: the result of id {other:#x} (conn {})", other >> 32),
        ),
        Some(other) if other != id => (
            ErrorKind::Corrupted,
            format!("{what}: the result of id {other:#x} of this connection"),
        ),
        _ => (ErrorKind::Corrupted, format!("{what}: wrong result")),
    }
}

/// State the callers of one connection share.
struct Conn {
    bench: BenchClient,
    conn: u32,
    next_seq: Cell<u64>,
    pacer: RefCell<Option<Pacer>>,
    failed: Cell<bool>,
    sent: Cell<u64>,
}

/// Why a connection's work ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ended {
    Stopped,
    Failed,
}

/// Keeps one Thrift connection busy until the run stops, reconnecting after a failure.
pub async fn run_rpc_slot(
    index: usize,
    plan: Arc<LoadPlan>,
    run: Arc<RunCtx>,
    stats: Arc<WorkerStats>,
    start: Instant,
) {
    let plan = Rc::new((*plan).clone());
    let pacer = plan.pacer(index, start);
    let mut failures = 0u32;
    while !run.stopping() && !run.budget_spent() {
        let conn = run.next_conn();
        let t0 = Instant::now();
        let client = match Client::connect(plan.addr, client_config(&plan)).await {
            Ok(c) => c,
            Err(e) => {
                failures += 1;
                if super::slot::connect_failed(
                    &run,
                    &stats,
                    conn,
                    plan.addr,
                    failures,
                    &e.to_string(),
                ) {
                    return;
                }
                zerorx::sleep(Duration::from_millis(50 << failures.min(4))).await;
                continue;
            }
        };
        failures = 0;
        stats.record_connect(t0.elapsed());
        let c = Rc::new(Conn {
            bench: BenchClient::new(client),
            conn,
            next_seq: Cell::new(0),
            pacer: RefCell::new(pacer),
            failed: Cell::new(false),
            sent: Cell::new(0),
        });
        let callers: Vec<_> = (0..plan.depth.max(1))
            .map(|_| zerorx::spawn(caller(c.clone(), plan.clone(), run.clone(), stats.clone())))
            .collect();
        for t in callers {
            let _ = t.await;
        }
        let unmatched = c.bench.client().stats().unmatched_replies;
        if unmatched > 0 {
            stats.record_error(ErrorSample {
                kind: ErrorKind::Duplicate,
                id: None,
                conn,
                detail: format!("{unmatched} replies matched no call in flight (late or repeated)"),
            });
        }
        let ended = if c.failed.get() {
            Ended::Failed
        } else {
            Ended::Stopped
        };
        if ended == Ended::Stopped {
            let closed = if c.sent.get() > 0 {
                &stats.closed_clean
            } else {
                &stats.closed_silent
            };
            closed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return;
        }
        zerorx::sleep(Duration::from_millis(20)).await;
    }
}

/// One caller: calls one at a time until the run stops or the connection fails.
async fn caller(c: Rc<Conn>, plan: Rc<LoadPlan>, run: Arc<RunCtx>, stats: Arc<WorkerStats>) {
    loop {
        if run.stopping() || c.failed.get() || !run.take_ticket() {
            return;
        }
        let due = {
            let mut p = c.pacer.borrow_mut();
            p.as_mut().map(Pacer::next_due)
        };
        if let Some(due) = due {
            while Instant::now() < due {
                if run.stopping() {
                    return;
                }
                zerorx::sleep_until(due.min(Instant::now() + Duration::from_millis(100))).await;
            }
        }
        let seq = c.next_seq.get();
        c.next_seq.set(seq + 1);
        let id = (u64::from(c.conn) << 32) | seq;
        let intended = due.unwrap_or_else(Instant::now);
        c.sent.set(c.sent.get() + 1);
        let outcome = one_call(&c, &plan, &stats, id, seq).await;
        match outcome {
            Ok(Some(bytes)) => stats.record_ok(intended.elapsed(), bytes),
            Ok(None) => {}
            Err((kind, detail, fatal)) => {
                stats.record_error(ErrorSample {
                    kind,
                    id: Some(id),
                    conn: c.conn,
                    detail: detail.clone(),
                });
                if fatal && !c.failed.replace(true) {
                    stats.record_error(ErrorSample {
                        kind: ErrorKind::Closed,
                        id: None,
                        conn: c.conn,
                        detail,
                    });
                }
            }
        }
    }
}

/// A failed call: its kind, details, and whether the connection is gone.
type CallError = (ErrorKind, String, bool);

fn client_error(e: ClientError) -> CallError {
    match e {
        ClientError::Timeout => (ErrorKind::Lost, "no reply within the timeout".into(), false),
        ClientError::Closed(why) => (ErrorKind::Lost, format!("connection lost: {why}"), true),
        ClientError::Connect(e) => (ErrorKind::Connect, format!("reconnect: {e}"), true),
        ClientError::Application(e) => (ErrorKind::ServerError, e.to_string(), false),
        ClientError::Decode(e) => (
            ErrorKind::Corrupted,
            format!("reply not decodable: {e}"),
            false,
        ),
        other => (ErrorKind::Corrupted, other.to_string(), false),
    }
}

/// Makes call `seq` (id `id`); `Some(bytes)` of a checked reply, `None` for a oneway.
async fn one_call(
    c: &Conn,
    plan: &LoadPlan,
    stats: &WorkerStats,
    id: u64,
    seq: u64,
) -> Result<Option<u64>, CallError> {
    match call_for(&plan.sizes, seq) {
        Call::Echo(size) => {
            let data = echo_data(plan, id, size);
            stats.record_sent(data.len() as u64);
            let got = c.bench.echo(data.clone()).await.map_err(client_error)?;
            if got == data {
                return Ok(Some(got.len() as u64));
            }
            let got_id =
                (got.len() >= 8).then(|| u64::from_be_bytes(got[..8].try_into().unwrap_or([0; 8])));
            let (kind, detail) =
                wrong(c.conn, id, got_id, &format!("echo of {} bytes", data.len()));
            Err((kind, detail, false))
        }
        Call::Roundtrip => {
            let p = roundtrip_payload(plan, id, seq);
            stats.record_sent(p.data.len() as u64 + 32);
            let got = c.bench.roundtrip(p.clone()).await.map_err(client_error)?;
            if got == p {
                return Ok(Some(got.data.len() as u64 + 32));
            }
            let (kind, detail) = wrong(c.conn, id, Some(got.id as u64), "roundtrip");
            Err((kind, detail, false))
        }
        Call::Add => {
            let (a, b) = (id as i64, (seq.wrapping_mul(7919) as i64).wrapping_neg());
            stats.record_sent(16);
            let got = c.bench.add(a, b).await.map_err(client_error)?;
            if got == a.wrapping_add(b) {
                return Ok(Some(8));
            }
            let got_id = got.wrapping_sub(b) as u64;
            let (kind, detail) = wrong(c.conn, id, Some(got_id), &format!("add({a}, {b}) = {got}"));
            Err((kind, detail, false))
        }
        Call::Fire => {
            let data = echo_data(plan, id, 16);
            stats.record_sent(data.len() as u64);
            c.bench.fire(data).await.map_err(client_error)?;
            stats
                .fires
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_cycles_every_call() {
        let calls: Vec<Call> = (0..6).map(|s| call_for(&[64, 16384], s)).collect();
        assert_eq!(
            calls,
            vec![
                Call::Echo(64),
                Call::Echo(16384),
                Call::Roundtrip,
                Call::Add,
                Call::Fire,
                Call::Echo(64)
            ]
        );
    }

    #[test]
    fn wrong_results_name_where_they_came_from() {
        let conn = 3;
        let id = (3u64 << 32) | 9;
        assert_eq!(
            wrong(conn, id, Some((5 << 32) | 1), "x").0,
            ErrorKind::Misrouted
        );
        assert_eq!(
            wrong(conn, id, Some((3 << 32) | 1), "x").0,
            ErrorKind::Corrupted
        );
        assert_eq!(wrong(conn, id, Some(id), "x").0, ErrorKind::Corrupted);
        assert_eq!(wrong(conn, id, None, "x").0, ErrorKind::Corrupted);
    }
}
