//! The `fabric` scenario: message exchange over `zerorx_fabric`, both ends inside the
//! harness, with the default io_uring TCP provider or the one `--fabric-provider` names
//! (a libfabric provider in a `libfabric` build).
//!
//! Each slot (one per `--connections`) opens a pair of endpoints on its client worker,
//! A and B, sharing one completion queue. A sends the harness's verified frames
//! (`wire`: id and CRC in every message) to B, keeping `--depth` in flight; B answers
//! each one the way the stream server does (echo, or an ack carrying the CRC it
//! computed, or a reject) and A judges the answer with the same [`Ledger`] as the
//! `stream` scenario, so a lost, corrupted, duplicated or misrouted message is named by
//! its id. Latency is A's send to A's receive of the answer (a round trip). Every
//! operation that completes with an error is recorded by kind; its pair is then closed,
//! its messages in flight count as lost, and the slot opens a new pair.

use crate::client::ledger::{Judgement, Ledger};
use crate::client::stats::WorkerStats;
use crate::client::{LoadPlan, Pacer, RunCtx};
use crate::errors::{ErrorKind, ErrorSample};
use crate::wire::{reply, Frame, Header, Kind, Reject, HEADER_LEN};
use bytes::{Bytes, BytesMut};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zerorx_fabric::{
    Access, Completion, CompletionQueue, Domain, DomainConfig, Endpoint, EndpointConfig, Fabric,
    MemoryRegion, OpError, PeerId, PostError, Requirements,
};

/// The provider the scenario loads unless `--fabric-provider` names another.
pub const DEFAULT_PROVIDER: &str = "uring-tcp";

/// How long one wait for a completion lasts before the stop flag and deadlines are
/// looked at again.
const TICK: Duration = Duration::from_millis(100);

/// Consecutive failed pair set-ups after which the run is aborted.
const MAX_CONNECT_FAILURES: u32 = 8;

/// Which operation a completion belongs to: the high half of its context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// A's request send; the low half is its send slot.
    ASend = 1,
    /// A's receive of an answer.
    ARecv = 2,
    /// B's answer send; the low half is its send slot.
    BSend = 3,
    /// B's receive of a request.
    BRecv = 4,
}

impl Role {
    fn context(self, slot: usize) -> u64 {
        ((self as u64) << 32) | slot as u64
    }

    fn of(context: u64) -> Option<(Role, usize)> {
        let role = match context >> 32 {
            1 => Role::ASend,
            2 => Role::ARecv,
            3 => Role::BSend,
            4 => Role::BRecv,
            _ => return None,
        };
        Some((role, (context & 0xffff_ffff) as usize))
    }
}

/// Why a pair's work ended.
enum Ended {
    /// The run is stopping or its budget is spent; every answer came back.
    Stopped,
    /// Something failed (recorded in the worker's errors).
    Failed,
}

/// Runs slot `index` until the run stops: a pair of endpoints at a time, a new one
/// after a failure.
pub async fn run_fabric_slot(
    index: usize,
    provider: Arc<str>,
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
        let pair = match Pair::open(&provider, &plan).await {
            Ok(p) => p,
            Err(SetupError::Fatal(e)) => {
                run.abort(format!("cannot set up a {provider} endpoint pair: {e}"));
                return;
            }
            Err(SetupError::Connect(e)) => {
                failures += 1;
                stats.record_error(ErrorSample {
                    kind: ErrorKind::Connect,
                    id: None,
                    conn,
                    detail: format!("{provider} endpoint connect: {e}"),
                });
                if failures >= MAX_CONNECT_FAILURES {
                    run.abort(format!(
                        "cannot connect {provider} endpoints ({failures} attempts in a row): {e}"
                    ));
                    return;
                }
                zerorx::sleep(Duration::from_millis(50 << failures.min(4))).await;
                continue;
            }
        };
        failures = 0;
        stats.record_connect(t0.elapsed());
        let mut x = Exchange::new(&pair, conn, &plan, &stats);
        let ended = x.run(&mut pacer, &run).await;
        drop(x);
        // Closing the endpoints cancels what is still posted (receives, the last
        // send completions); nothing of this pair is looked at afterwards.
        drop(pair);
        match ended {
            Ended::Stopped => return,
            Ended::Failed => zerorx::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// Why a pair could not be set up.
enum SetupError {
    /// Opening the provider, a region or an endpoint failed: retrying cannot help.
    Fatal(String),
    /// The endpoints could not reach each other.
    Connect(String),
}

/// Two connected endpoints and their send memory. Field order is drop order: the
/// endpoints close (their provider lets go of posted memory) before the regions go.
struct Pair {
    a: Endpoint,
    b: Endpoint,
    cq: CompletionQueue,
    to_b: PeerId,
    to_a: PeerId,
    a_tx: MemoryRegion,
    b_tx: MemoryRegion,
    /// Bytes of one send slot: the largest message.
    slot_len: usize,
    depth: usize,
    _domain: Domain,
}

impl Pair {
    async fn open(provider: &str, plan: &LoadPlan) -> Result<Pair, SetupError> {
        let fatal = |e: &dyn std::fmt::Display| SetupError::Fatal(e.to_string());
        let max_size = plan.sizes.iter().copied().max().unwrap_or(0);
        let slot_len = HEADER_LEN + max_size;
        let depth = plan.depth.max(1);
        let fabric = Fabric::open(provider, &Requirements::new().max_msg_size(slot_len))
            .map_err(|e| fatal(&e))?;
        let domain = fabric
            .domain(DomainConfig::default())
            .map_err(|e| fatal(&e))?;
        let cfg = EndpointConfig {
            tx_depth: depth,
            rx_depth: depth,
            max_msg_size: Some(slot_len),
            connect_timeout: plan.timeout,
            ..EndpointConfig::default()
        };
        let cq = domain.completion_queue(4 * depth).map_err(|e| fatal(&e))?;
        let a = domain.endpoint(&cq, cfg.clone()).map_err(|e| fatal(&e))?;
        let b = domain.endpoint(&cq, cfg).map_err(|e| fatal(&e))?;
        let region = || domain.register(slot_len * depth, Access::LOCAL);
        let a_tx = region().map_err(|e| fatal(&e))?;
        let b_tx = region().map_err(|e| fatal(&e))?;
        let connect = |e: &dyn std::fmt::Display| SetupError::Connect(e.to_string());
        let to_b = a.connect(&b.address()).await.map_err(|e| connect(&e))?;
        let to_a = b.connect(&a.address()).await.map_err(|e| connect(&e))?;
        Ok(Pair {
            a,
            b,
            cq,
            to_b,
            to_a,
            a_tx,
            b_tx,
            slot_len,
            depth,
            _domain: domain,
        })
    }

    /// Copies `parts` into send slot `slot` of `region` and sends them from `from` to
    /// `peer` as one message.
    fn send(&self, role: Role, slot: usize, parts: &[&[u8]]) -> Result<usize, PostError> {
        let (ep, region, peer) = match role {
            Role::ASend => (&self.a, &self.a_tx, self.to_b),
            _ => (&self.b, &self.b_tx, self.to_a),
        };
        let at = slot * self.slot_len;
        let mut off = at;
        for p in parts {
            region.write(off, p)?;
            off += p.len();
        }
        let msg = region.slice(at..off)?;
        ep.send(peer, &msg).context(role.context(slot)).post()?;
        Ok(off - at)
    }

    /// Posts a lease receive on A or B.
    fn post_recv(&self, role: Role) -> Result<(), PostError> {
        let ep = if role == Role::ARecv {
            &self.a
        } else {
            &self.b
        };
        ep.recv_lease(self.slot_len)
            .context(role.context(0))
            .post()
            .map(drop)
    }
}

/// The error kind a failed operation counts as.
fn error_kind(role: Role, e: &OpError) -> ErrorKind {
    match (role, e) {
        (_, OpError::ConnectionLost { .. }) => ErrorKind::Reset,
        (_, OpError::Canceled) => ErrorKind::Closed,
        (Role::ASend | Role::BSend, _) => ErrorKind::Send,
        (Role::ARecv | Role::BRecv, _) => ErrorKind::Protocol,
    }
}

/// One received message (a lease's segments) as a frame, or why it is not one.
fn frame_of(segments: Vec<Bytes>, max_frame: u32) -> Result<Frame, String> {
    let assembled = segments.len() > 1;
    let bytes = match <[Bytes; 1]>::try_from(segments) {
        Ok([one]) => one,
        Err(many) => {
            let mut b = BytesMut::new();
            for s in many {
                b.extend_from_slice(&s);
            }
            b.freeze()
        }
    };
    let Some(head) = bytes.first_chunk::<HEADER_LEN>() else {
        return Err(format!(
            "a message of {} bytes is shorter than a frame header",
            bytes.len()
        ));
    };
    let header = Header::decode(head, max_frame).map_err(|e| e.to_string())?;
    if HEADER_LEN + header.len as usize != bytes.len() {
        return Err(format!(
            "a message of {} bytes carries a frame of {}",
            bytes.len(),
            HEADER_LEN + header.len as usize
        ));
    }
    Ok(Frame {
        header,
        bytes,
        assembled,
    })
}

/// The segments of a lease receive's message.
fn leased(c: Completion) -> Vec<Bytes> {
    c.lease.map(|l| l.into_segments()).unwrap_or_default()
}

/// B's answer to a request, as the stream server gives it.
fn answer(f: Frame) -> Bytes {
    let h = f.header;
    let computed = f.computed_crc();
    if computed != h.crc {
        return reply(Kind::Reject, h.conn, h.id, Reject::BadChecksum as u32);
    }
    match h.kind {
        Kind::Echo => f.bytes,
        Kind::Sink => reply(Kind::Ack, h.conn, h.id, computed),
        Kind::Ack | Kind::Reject => reply(Kind::Reject, h.conn, h.id, Reject::BadKind as u32),
    }
}

/// The state of one pair's exchange.
struct Exchange<'a> {
    p: &'a Pair,
    plan: &'a LoadPlan,
    stats: &'a WorkerStats,
    ledger: Ledger,
    /// Requests A may still put in flight.
    credits: usize,
    a_free: Vec<usize>,
    b_free: Vec<usize>,
    /// B's answers waiting for a send slot.
    b_queue: VecDeque<Bytes>,
    seq: u64,
    sending: bool,
    /// Open loop: when the request A is waiting to send was due.
    due: Option<Instant>,
}

impl<'a> Exchange<'a> {
    fn new(p: &'a Pair, conn: u32, plan: &'a LoadPlan, stats: &'a WorkerStats) -> Self {
        Exchange {
            p,
            plan,
            stats,
            ledger: Ledger::new(conn),
            credits: p.depth,
            a_free: (0..p.depth).collect(),
            b_free: (0..p.depth).collect(),
            b_queue: VecDeque::new(),
            seq: 0,
            sending: true,
            due: None,
        }
    }

    fn error(&self, kind: ErrorKind, id: Option<u64>, detail: String) {
        self.stats.record_error(ErrorSample {
            kind,
            id,
            conn: self.ledger.conn(),
            detail,
        });
    }

    /// The pair failed: every request in flight is lost.
    fn fail(&mut self, kind: ErrorKind, detail: &str) -> Ended {
        self.error(kind, None, detail.to_owned());
        for id in self.ledger.take_outstanding() {
            self.error(ErrorKind::Lost, Some(id), detail.to_owned());
        }
        Ended::Failed
    }

    async fn run(&mut self, pacer: &mut Option<Pacer>, run: &RunCtx) -> Ended {
        for _ in 0..self.p.depth {
            for role in [Role::ARecv, Role::BRecv] {
                if let Err(e) = self.p.post_recv(role) {
                    return self.fail(ErrorKind::Protocol, &format!("posting a receive: {e}"));
                }
            }
        }
        loop {
            if let Err(e) = self.send_requests(pacer, run) {
                return self.fail(ErrorKind::Send, &format!("posting a request: {e}"));
            }
            if !self.sending && self.ledger.outstanding() == 0 {
                return Ended::Stopped;
            }
            let wait = match self.due {
                Some(due) => due.saturating_duration_since(Instant::now()).min(TICK),
                None => TICK,
            };
            match zerorx::timeout(wait, self.p.cq.next()).await {
                Ok(c) => {
                    if let Err((kind, detail)) = self.complete(c) {
                        return self.fail(kind, &detail);
                    }
                }
                Err(_) => {
                    let oldest = self.ledger.oldest();
                    if oldest.is_some_and(|t| t.elapsed() > self.plan.timeout) {
                        let why = format!("no answer within {:?}", self.plan.timeout);
                        return self.fail(ErrorKind::Timeout, &why);
                    }
                }
            }
        }
    }

    /// Puts requests in flight while the window, a send slot and the schedule allow.
    fn send_requests(&mut self, pacer: &mut Option<Pacer>, run: &RunCtx) -> Result<(), PostError> {
        while self.sending && self.credits > 0 && !self.a_free.is_empty() {
            if run.stopping() {
                self.sending = false;
                break;
            }
            if let Some(p) = pacer.as_mut() {
                let due = *self.due.get_or_insert_with(|| p.next_due());
                if Instant::now() < due {
                    break;
                }
            }
            if !run.take_ticket() {
                self.sending = false;
                break;
            }
            let intended = self.due.take();
            let (header, payload) = self.ledger.issue(self.plan, self.seq, intended);
            self.seq += 1;
            let slot = self.a_free.pop().unwrap_or_default();
            self.credits -= 1;
            let n = self.p.send(Role::ASend, slot, &[&header, &payload])?;
            self.stats.record_sent(n as u64);
        }
        Ok(())
    }

    /// Handles one completion; `Err` ends the pair with that error.
    fn complete(&mut self, c: Completion) -> Result<(), (ErrorKind, String)> {
        let Some((role, slot)) = Role::of(c.context) else {
            return Err((
                ErrorKind::Protocol,
                format!("a completion with unknown context {:#x}", c.context),
            ));
        };
        if let Err(e) = &c.status {
            return Err((error_kind(role, e), format!("{role:?} completed with: {e}")));
        }
        let protocol = |e: String| (ErrorKind::Protocol, e);
        match role {
            Role::ASend => self.a_free.push(slot),
            Role::BSend => {
                self.b_free.push(slot);
                self.flush_answers().map_err(|e| (ErrorKind::Send, e))?;
            }
            Role::BRecv => {
                let f = frame_of(leased(c), self.plan.max_frame)
                    .map_err(|e| protocol(format!("B received {e}")))?;
                self.b_queue.push_back(answer(f));
                self.flush_answers().map_err(|e| (ErrorKind::Send, e))?;
                self.p
                    .post_recv(Role::BRecv)
                    .map_err(|e| protocol(format!("posting a receive: {e}")))?;
            }
            Role::ARecv => {
                let f = frame_of(leased(c), self.plan.max_frame)
                    .map_err(|e| protocol(format!("A received {e}")))?;
                match self.ledger.judge(&f) {
                    Judgement::Ok { intended, .. } => {
                        self.stats
                            .record_ok(intended.elapsed(), f.bytes.len() as u64);
                        self.credits += 1;
                    }
                    Judgement::Bad {
                        kind,
                        id,
                        detail,
                        resolved,
                    } => {
                        self.error(kind, id, detail);
                        if resolved {
                            self.credits += 1;
                        }
                    }
                }
                self.p
                    .post_recv(Role::ARecv)
                    .map_err(|e| protocol(format!("posting a receive: {e}")))?;
            }
        }
        Ok(())
    }

    /// Sends B's waiting answers while B has free send slots.
    fn flush_answers(&mut self) -> Result<(), String> {
        while !self.b_free.is_empty() {
            let Some(msg) = self.b_queue.pop_front() else {
                break;
            };
            let slot = self.b_free.pop().unwrap_or_default();
            self.p
                .send(Role::BSend, slot, &[&msg])
                .map_err(|e| format!("posting an answer: {e}"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{request, PayloadSource};

    #[test]
    fn contexts_round_trip() {
        for role in [Role::ASend, Role::ARecv, Role::BSend, Role::BRecv] {
            assert_eq!(Role::of(role.context(7)), Some((role, 7)));
        }
        assert_eq!(Role::of(0), None);
    }

    #[test]
    fn messages_that_are_not_one_frame_are_named() {
        let (h, _) = request(Kind::Echo, 1, 5, b"abcd");
        let whole = [h.clone(), Bytes::from_static(b"abcd")];
        let f = frame_of(whole.to_vec(), 1 << 20).expect("two segments make one frame");
        assert!(f.assembled && f.crc_ok() && f.header.id == 5);
        let short = frame_of(vec![h.slice(..10)], 1 << 20).expect_err("short");
        assert!(short.contains("shorter than a frame header"), "{short}");
        let cut = frame_of(vec![h.clone(), Bytes::from_static(b"ab")], 1 << 20).expect_err("cut");
        assert!(cut.contains("carries a frame of 36"), "{cut}");
        let big = frame_of(whole.to_vec(), 2).expect_err("over max");
        assert!(big.contains("over the limit"), "{big}");
    }

    #[test]
    fn answers_follow_the_stream_server() {
        let src = PayloadSource::new(64, 1);
        let p = src.payload(9, 40);
        let (h, crc) = request(Kind::Sink, 3, 9, &p);
        let mut whole = h.to_vec();
        whole.extend_from_slice(&p);
        let frame = |b: Vec<u8>| {
            let head: [u8; HEADER_LEN] = b[..HEADER_LEN].try_into().expect("32");
            Frame {
                header: Header::decode(&head, 1 << 20).expect("header"),
                bytes: Bytes::from(b),
                assembled: false,
            }
        };
        assert_eq!(answer(frame(whole.clone())), reply(Kind::Ack, 3, 9, crc));
        let mut bad = whole;
        bad[HEADER_LEN + 3] ^= 1;
        assert_eq!(
            answer(frame(bad)),
            reply(Kind::Reject, 3, 9, Reject::BadChecksum as u32)
        );
    }
}
