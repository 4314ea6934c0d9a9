//! The fault actions: each opens its own connection, misbehaves in one way, and checks
//! how the server reacted. Every wait is bounded by the plan's timeout.

use super::{FaultKind, FaultPlan, FaultStats, Outcome};
use crate::client::ledger::{Judgement, Ledger, Pending};
use crate::client::{LoadPlan, RunCtx};
use crate::framer::Framer;
use crate::wire::{request, Header, Kind};
use bytes::Bytes;
use std::rc::Rc;
use std::time::{Duration, Instant};
use zerorx::net::TcpStream;

/// Most bytes a slow reader sends while trying to fill the pipe.
const SLOW_READ_LIMIT: usize = 256 << 20;
/// A send that takes longer than this means the server stopped reading.
const SEND_STALL: Duration = Duration::from_millis(200);

/// What every action needs.
#[derive(Clone, Debug)]
pub struct Ctx {
    /// The load (address, payload bytes, request sizes).
    pub load: std::sync::Arc<LoadPlan>,
    /// Fault settings.
    pub plan: std::sync::Arc<FaultPlan>,
    /// The run (connection numbers, stop flag).
    pub run: std::sync::Arc<RunCtx>,
    /// Where outcomes go.
    pub stats: std::sync::Arc<FaultStats>,
}

/// Runs one action of `kind`.
pub async fn act(kind: FaultKind, cx: Rc<Ctx>) -> Outcome {
    let r = match kind {
        FaultKind::Reset => reset(&cx).await,
        FaultKind::HalfClose => half_close(&cx).await,
        FaultKind::SlowRead => slow_read(&cx).await,
        FaultKind::Malformed => malformed(&cx).await,
        FaultKind::Oversized => oversized(&cx).await,
        FaultKind::Idle => idle(&cx).await,
        FaultKind::Burst => burst(&cx).await,
        FaultKind::Corrupt => corrupt(&cx).await,
    };
    r.unwrap_or_else(|o| o)
}

type Step<T> = Result<T, Outcome>;

fn unexpected(s: String) -> Outcome {
    Outcome::Unexpected(s)
}

/// One fault connection and the requests it sent.
struct Conn {
    stream: TcpStream,
    ledger: Ledger,
    framer: Framer,
}

async fn connect(cx: &Ctx, kind: FaultKind) -> Step<Conn> {
    let stream = TcpStream::connect_timeout(cx.load.addr, cx.plan.timeout)
        .await
        .map_err(|e| Outcome::NotInjected(format!("connect to {}: {e}", cx.load.addr)))?;
    cx.stats.connected(kind);
    let _ = stream.set_nodelay(true);
    Ok(Conn {
        stream,
        ledger: Ledger::new(cx.run.next_conn()),
        framer: Framer::new(cx.load.max_frame),
    })
}

impl Conn {
    /// A well-formed echo request of `size` bytes: (header, payload, id, crc).
    fn request(&mut self, cx: &Ctx, size: usize) -> (Bytes, Bytes, u64, u32) {
        let id = self.ledger.next_id();
        let payload = cx.load.payloads.payload(id, size);
        let (header, crc) = request(Kind::Echo, self.ledger.conn(), id, &payload);
        (header, payload, id, crc)
    }

    fn remember(&mut self, id: u64, len: usize, crc: u32) {
        self.ledger.sent(
            id,
            Pending {
                intended: Instant::now(),
                kind: Kind::Echo,
                len: len as u32,
                crc,
            },
        );
    }

    /// Sends a correct echo request and remembers it.
    async fn send_good(&mut self, cx: &Ctx, size: usize) -> Step<u64> {
        let (h, p, id, crc) = self.request(cx, size);
        self.remember(id, p.len(), crc);
        self.send(&[h, p]).await?;
        Ok(id)
    }

    async fn send(&self, bufs: &[Bytes]) -> Step<()> {
        self.stream
            .send_vectored(bufs)
            .await
            .map_err(|e| unexpected(format!("send failed: {e}")))
    }

    /// Reads until `n` replies were judged; all must be correct.
    async fn expect_replies(&mut self, n: usize, deadline: Instant) -> Step<Vec<Judgement>> {
        let mut got = Vec::new();
        while got.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            let buf = match zerorx::timeout(left, self.stream.recv()).await {
                Err(_) => {
                    return Err(unexpected(format!(
                        "{} of {n} replies within the timeout",
                        got.len()
                    )))
                }
                Ok(Ok(Some(b))) => b,
                Ok(Ok(None)) => {
                    return Err(unexpected(format!(
                        "server closed after {} of {n} replies",
                        got.len()
                    )))
                }
                Ok(Err(e)) => return Err(unexpected(format!("receive failed: {e}"))),
            };
            self.framer.push(buf.into_bytes());
            loop {
                match self.framer.next_frame() {
                    Ok(Some(f)) => got.push(self.ledger.judge(&f)),
                    Ok(None) => break,
                    Err(e) => return Err(unexpected(format!("reply stream: {e}"))),
                }
            }
        }
        Ok(got)
    }

    /// Waits for the server to close the connection without sending anything more.
    async fn expect_close(&self, deadline: Instant, after: &str) -> Step<()> {
        let left = deadline.saturating_duration_since(Instant::now());
        match zerorx::timeout(left, self.stream.recv()).await {
            Err(_) => Err(unexpected(format!(
                "the server kept the connection open after {after}"
            ))),
            Ok(Ok(Some(b))) => Err(unexpected(format!(
                "the server sent {} bytes after {after}",
                b.len()
            ))),
            Ok(Ok(None)) | Ok(Err(_)) => Ok(()),
        }
    }

    /// Closes with a reset (RST) instead of a FIN.
    fn reset(self) {
        let _ = self.stream.socket().set_linger(Some(Duration::ZERO));
    }
}

fn all_ok(js: &[Judgement]) -> Step<()> {
    for j in js {
        if let Judgement::Bad {
            kind, id, detail, ..
        } = j
        {
            let id = id.map_or_else(|| "?".to_owned(), |i| format!("{i:#x}"));
            return Err(unexpected(format!("reply to id {id} was {kind}: {detail}")));
        }
    }
    Ok(())
}

fn deadline(cx: &Ctx) -> Instant {
    Instant::now() + cx.plan.timeout
}

fn small(cx: &Ctx) -> usize {
    cx.load.sizes.first().copied().unwrap_or(64)
}

async fn reset(cx: &Ctx) -> Step<Outcome> {
    let mut c = connect(cx, FaultKind::Reset).await?;
    let size = 8192;
    let (h, p, _, _) = c.request(cx, size);
    c.send(&[h, p.slice(..size / 2)]).await?;
    c.reset();
    Ok(Outcome::AsExpected)
}

async fn half_close(cx: &Ctx) -> Step<Outcome> {
    let mut c = connect(cx, FaultKind::HalfClose).await?;
    for _ in 0..4 {
        c.send_good(cx, small(cx)).await?;
    }
    c.stream
        .shutdown(std::net::Shutdown::Write)
        .await
        .map_err(|e| unexpected(format!("shutdown: {e}")))?;
    let end = deadline(cx);
    all_ok(&c.expect_replies(4, end).await?)?;
    c.expect_close(end, "answering a half-closed connection")
        .await?;
    Ok(Outcome::AsExpected)
}

async fn slow_read(cx: &Ctx) -> Step<Outcome> {
    let mut c = connect(cx, FaultKind::SlowRead).await?;
    let size = 64 * 1024;
    let mut sent = 0;
    loop {
        if sent >= SLOW_READ_LIMIT {
            return Err(Outcome::NotInjected(format!(
                "the server took {} MiB without its replies being read",
                sent >> 20
            )));
        }
        let (h, p, _, _) = c.request(cx, size.min(cx.load.max_frame as usize));
        let n = h.len() + p.len();
        match zerorx::timeout(SEND_STALL, c.stream.send_vectored(&[h, p])).await {
            Ok(Ok(())) => sent += n,
            Ok(Err(e)) => return Err(Outcome::NotInjected(format!("send failed: {e}"))),
            // The server stopped reading: it is stuck sending to us.
            Err(_) => break,
        }
    }
    hold(cx).await;
    c.reset();
    Ok(Outcome::AsExpected)
}

async fn hold(cx: &Ctx) {
    let until = Instant::now() + cx.plan.hold;
    while Instant::now() < until && !cx.run.stopping() {
        zerorx::sleep(
            until
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(100)),
        )
        .await;
    }
}

async fn malformed(cx: &Ctx) -> Step<Outcome> {
    let mut c = connect(cx, FaultKind::Malformed).await?;
    c.send_good(cx, small(cx)).await?;
    let end = deadline(cx);
    all_ok(&c.expect_replies(1, end).await?)?;
    c.send(&[Bytes::from_static(b"GARBAGE!GARBAGE!GARBAGE!GARBAGE!")])
        .await?;
    c.expect_close(end, "a malformed frame").await?;
    Ok(Outcome::AsExpected)
}

async fn oversized(cx: &Ctx) -> Step<Outcome> {
    let mut c = connect(cx, FaultKind::Oversized).await?;
    let Some(len) = cx.plan.max_frame.checked_add(1) else {
        return Err(Outcome::NotInjected(
            "the frame limit is the largest length".into(),
        ));
    };
    let h = Header {
        kind: Kind::Echo,
        conn: c.ledger.conn(),
        len,
        id: c.ledger.next_id(),
        crc: 0,
        aux: 0,
    };
    let (bytes, _) = h.encode(&[]);
    c.send(&[Bytes::copy_from_slice(&bytes)]).await?;
    c.expect_close(deadline(cx), "a frame over the limit")
        .await?;
    Ok(Outcome::AsExpected)
}

async fn idle(cx: &Ctx) -> Step<Outcome> {
    let c = connect(cx, FaultKind::Idle).await?;
    hold(cx).await;
    drop(c);
    Ok(Outcome::AsExpected)
}

async fn corrupt(cx: &Ctx) -> Step<Outcome> {
    let mut c = connect(cx, FaultKind::Corrupt).await?;
    let (h, p, id, crc) = c.request(cx, small(cx).max(1));
    c.remember(id, p.len(), crc);
    let mut bad = p.to_vec();
    bad[0] ^= 0x01;
    c.send(&[h, Bytes::from(bad)]).await?;
    let good = c.send_good(cx, small(cx)).await?;
    c.stream
        .shutdown(std::net::Shutdown::Write)
        .await
        .map_err(|e| unexpected(format!("shutdown: {e}")))?;
    let end = deadline(cx);
    let js = c.expect_replies(2, end).await?;
    let rejected = js.iter().any(|j| {
        matches!(j, Judgement::Bad { kind: crate::errors::ErrorKind::Rejected, id: Some(i), .. } if *i == id)
    });
    if !rejected {
        return Err(unexpected(format!(
            "request {id:#x} with a wrong CRC was not rejected: {js:?}"
        )));
    }
    let answered = js
        .iter()
        .any(|j| matches!(j, Judgement::Ok { id: i, .. } if *i == good));
    if !answered {
        return Err(unexpected(format!(
            "the correct request {good:#x} after a rejected one was not answered: {js:?}"
        )));
    }
    c.expect_close(end, "answering a half-closed connection")
        .await?;
    Ok(Outcome::AsExpected)
}

async fn burst(cx: &Ctx) -> Step<Outcome> {
    let mut conns = Vec::with_capacity(cx.plan.burst_conns);
    for _ in 0..cx.plan.burst_conns {
        conns.push(connect(cx, FaultKind::Burst).await?);
    }
    let size = cx.plan.burst_size.min(cx.load.max_frame as usize);
    let end = deadline(cx);
    // Every connection sends at once; the replies are read only after all sent.
    let mut sent = Vec::with_capacity(conns.len());
    for mut c in conns {
        let (h, p, id, crc) = c.request(cx, size);
        c.remember(id, p.len(), crc);
        sent.push(zerorx::spawn(async move {
            c.send(&[h, p]).await?;
            Ok::<Conn, Outcome>(c)
        }));
    }
    let mut tasks = Vec::with_capacity(sent.len());
    for s in sent {
        let c = s
            .await
            .map_err(|e| unexpected(format!("burst task: {e:?}")))??;
        tasks.push(zerorx::spawn(async move {
            let mut c = c;
            c.stream
                .shutdown(std::net::Shutdown::Write)
                .await
                .map_err(|e| unexpected(format!("shutdown: {e}")))?;
            all_ok(&c.expect_replies(1, end).await?)?;
            c.expect_close(end, "answering a half-closed connection")
                .await
        }));
    }
    for t in tasks {
        t.await
            .map_err(|e| unexpected(format!("burst task: {e:?}")))??;
    }
    Ok(Outcome::AsExpected)
}
