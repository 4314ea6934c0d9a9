//! Drives one established connection: a sender that keeps the pipeline window full
//! (or follows the open-loop schedule) and a receiver that judges every reply.

use super::ledger::{Judgement, Ledger};
use super::stats::WorkerStats;
use super::window::Window;
use super::{LoadPlan, Pacer, RunCtx};
use crate::errors::{ErrorKind, ErrorSample};
use crate::framer::Framer;
use crate::wire::HEADER_LEN;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zerorx::net::TcpStream;

/// How long one wait lasts before the stop flag and deadlines are looked at again.
const TICK: Duration = Duration::from_millis(100);

/// Why a connection's work ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// The run is stopping or its request budget is spent; every reply came back.
    Stopped,
    /// The connection sent its `per_conn` requests and got every reply.
    Finished,
    /// Something failed (recorded in the worker's errors).
    Failed,
}

/// State the two tasks of one connection share.
struct Shared {
    stream: TcpStream,
    ledger: RefCell<Ledger>,
    window: Window,
    sender_done: Cell<bool>,
    failed: Cell<bool>,
}

impl Shared {
    fn error(&self, stats: &WorkerStats, kind: ErrorKind, id: Option<u64>, detail: String) {
        stats.record_error(ErrorSample {
            kind,
            id,
            conn: self.ledger.borrow().conn(),
            detail,
        });
    }

    /// The connection failed: every request in flight is lost.
    fn fail(&self, stats: &WorkerStats, kind: ErrorKind, detail: &str) {
        self.failed.set(true);
        self.error(stats, kind, None, detail.to_owned());
        let lost = self.ledger.borrow_mut().take_outstanding();
        for id in lost {
            self.error(stats, ErrorKind::Lost, Some(id), detail.to_owned());
        }
        self.window.close();
        // Unblocks a send waiting on a peer that stopped reading.
        let _ = self.stream.socket().shutdown(std::net::Shutdown::Both);
    }
}

/// Runs connection `conn` until the run stops, its `per_conn` requests are answered,
/// or it fails. Every outcome is recorded in `stats`.
pub async fn drive(
    stream: TcpStream,
    conn: u32,
    plan: Rc<LoadPlan>,
    pacer: &mut Option<Pacer>,
    run: &RunCtx,
    stats: Arc<WorkerStats>,
) -> Ended {
    let shared = Rc::new(Shared {
        stream,
        ledger: RefCell::new(Ledger::new(conn)),
        window: Window::new(plan.depth.max(1)),
        sender_done: Cell::new(false),
        failed: Cell::new(false),
    });
    let receiver = zerorx::spawn(receive(shared.clone(), plan.clone(), stats.clone()));
    let (finished, sent) = send(&shared, &plan, pacer, run, &stats).await;
    shared.sender_done.set(true);
    if !shared.failed.get() {
        // Half-close: the server sees the end of requests, answers what is left and
        // closes, which ends the receiver.
        let _ = shared.stream.shutdown(std::net::Shutdown::Write).await;
    }
    let _ = receiver.await;
    if !shared.failed.get() {
        let closed = if sent > 0 {
            &stats.closed_clean
        } else {
            &stats.closed_silent
        };
        closed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    if shared.failed.get() {
        Ended::Failed
    } else if finished {
        Ended::Finished
    } else {
        Ended::Stopped
    }
}

/// Sends requests; `true` if the connection sent all its `per_conn` requests, and how
/// many it sent.
async fn send(
    sh: &Shared,
    plan: &LoadPlan,
    pacer: &mut Option<Pacer>,
    run: &RunCtx,
    stats: &WorkerStats,
) -> (bool, u64) {
    let mut seq: u64 = 0;
    loop {
        if plan.per_conn.is_some_and(|n| seq >= n) {
            return (true, seq);
        }
        if run.stopping() || sh.window.is_closed() || !run.take_ticket() {
            return (false, seq);
        }
        let intended = match pacer.as_mut() {
            Some(p) => {
                let due = p.next_due();
                while Instant::now() < due {
                    if run.stopping() {
                        return (false, seq);
                    }
                    zerorx::sleep_until(due.min(Instant::now() + TICK)).await;
                }
                Some(due)
            }
            None => None,
        };
        if !sh.window.acquire().await {
            return (false, seq);
        }
        let (header, payload) = sh.ledger.borrow_mut().issue(plan, seq, intended);
        seq += 1;
        let bytes = (HEADER_LEN + payload.len()) as u64;
        if let Err(e) = sh.stream.send_vectored(&[header, payload]).await {
            if !sh.failed.get() {
                sh.fail(stats, ErrorKind::Send, &format!("send failed: {e}"));
            }
            return (false, seq);
        }
        stats.record_sent(bytes);
    }
}

/// Receives and judges replies until every request is answered after the sender is
/// done, or the connection fails.
async fn receive(sh: Rc<Shared>, plan: Rc<LoadPlan>, stats: Arc<WorkerStats>) {
    let stats = &*stats;
    let mut framer = Framer::new(plan.max_frame);
    loop {
        if sh.failed.get() {
            return;
        }
        if sh.sender_done.get() && sh.ledger.borrow().outstanding() == 0 {
            return;
        }
        let got = match zerorx::timeout(TICK, sh.stream.recv()).await {
            Ok(got) => got,
            Err(_) => {
                let oldest = sh.ledger.borrow().oldest();
                if oldest.is_some_and(|t| t.elapsed() > plan.timeout) {
                    sh.fail(
                        stats,
                        ErrorKind::Timeout,
                        &format!("no reply within {:?}", plan.timeout),
                    );
                    return;
                }
                continue;
            }
        };
        let buf = match got {
            Ok(Some(buf)) => buf,
            Ok(None) => {
                let pending = sh.ledger.borrow().outstanding();
                if pending > 0 || !sh.sender_done.get() {
                    sh.fail(
                        stats,
                        ErrorKind::Closed,
                        &format!("server closed the connection with {pending} requests in flight"),
                    );
                }
                return;
            }
            Err(e) => {
                sh.fail(stats, ErrorKind::Reset, &format!("receive failed: {e}"));
                return;
            }
        };
        framer.push(buf.into_bytes());
        loop {
            let frame = match framer.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(e) => {
                    sh.fail(stats, ErrorKind::Protocol, &format!("reply stream: {e}"));
                    return;
                }
            };
            let judged = sh.ledger.borrow_mut().judge(&frame);
            match judged {
                Judgement::Ok { intended, .. } => {
                    stats.record_ok(intended.elapsed(), frame.bytes.len() as u64);
                    sh.window.release(1);
                }
                Judgement::Bad {
                    kind,
                    id,
                    detail,
                    resolved,
                } => {
                    sh.error(stats, kind, id, detail);
                    if resolved {
                        sh.window.release(1);
                    }
                }
            }
        }
    }
}
