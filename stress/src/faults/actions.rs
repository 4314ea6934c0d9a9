//! The fault actions: each opens its own connection, misbehaves in one way (in the
//! server's language, see [`super::wire`]), and checks how the server reacted. Every
//! wait is bounded by the plan's timeout.

use super::wire::{Reply, Wire, WireKind};
use super::{FaultKind, FaultPlan, FaultStats, Outcome};
use crate::client::{LoadPlan, RunCtx};
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
    /// The language the server speaks.
    pub wire: WireKind,
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
    wire: Wire,
}

async fn connect(cx: &Ctx, kind: FaultKind) -> Step<Conn> {
    let stream = TcpStream::connect_timeout(cx.load.addr, cx.plan.timeout)
        .await
        .map_err(|e| Outcome::NotInjected(format!("connect to {}: {e}", cx.load.addr)))?;
    cx.stats.connected(kind);
    let _ = stream.set_nodelay(true);
    Ok(Conn {
        stream,
        wire: Wire::new(cx.wire, cx.run.next_conn(), cx.load.max_frame),
    })
}

impl Conn {
    /// Sends a correct echo request; its id.
    async fn send_good(&mut self, cx: &Ctx, size: usize) -> Step<u64> {
        let (segs, id) = self.wire.good(&cx.load, size);
        self.send(&segs).await?;
        Ok(id)
    }

    async fn send(&self, bufs: &[Bytes]) -> Step<()> {
        self.stream
            .send_vectored(bufs)
            .await
            .map_err(|e| unexpected(format!("send failed: {e}")))
    }

    async fn half_close(&self) -> Step<()> {
        self.stream
            .shutdown(std::net::Shutdown::Write)
            .await
            .map_err(|e| unexpected(format!("shutdown: {e}")))
    }

    /// Reads until `n` replies arrived.
    async fn replies(&mut self, n: usize, deadline: Instant) -> Step<Vec<Reply>> {
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
            got.extend(
                self.wire
                    .replies(buf.into_bytes())
                    .map_err(|e| unexpected(format!("reply stream: {e}")))?,
            );
        }
        Ok(got)
    }

    /// Waits for the server to close the connection; it may refuse requests on the way
    /// (a Thrift server names a broken request in an exception before closing), but
    /// must send nothing else.
    async fn expect_close(&mut self, deadline: Instant, after: &str) -> Step<()> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match zerorx::timeout(left, self.stream.recv()).await {
                Err(_) => {
                    return Err(unexpected(format!(
                        "the server kept the connection open after {after}"
                    )))
                }
                Ok(Ok(Some(b))) => {
                    let got = self.wire.replies(b.into_bytes()).unwrap_or_default();
                    if let Some(r) = got.iter().find(|r| !matches!(r, Reply::Refused(_))) {
                        return Err(unexpected(format!("after {after} the server sent {r:?}")));
                    }
                }
                Ok(Ok(None)) | Ok(Err(_)) => return Ok(()),
            }
        }
    }

    /// Closes with a reset (RST) instead of a FIN.
    fn reset(self) {
        let _ = self.stream.socket().set_linger(Some(Duration::ZERO));
    }
}

fn all_ok(rs: &[Reply]) -> Step<()> {
    match rs.iter().find(|r| !matches!(r, Reply::Ok(_))) {
        Some(r) => Err(unexpected(format!("a reply was {r:?}"))),
        None => Ok(()),
    }
}

fn deadline(cx: &Ctx) -> Instant {
    Instant::now() + cx.plan.timeout
}

fn small(cx: &Ctx) -> usize {
    cx.load.sizes.first().copied().unwrap_or(64)
}

async fn reset(cx: &Ctx) -> Step<Outcome> {
    let mut c = connect(cx, FaultKind::Reset).await?;
    let segs = c.wire.cut(&cx.load, 8192);
    c.send(&segs).await?;
    c.reset();
    Ok(Outcome::AsExpected)
}

async fn half_close(cx: &Ctx) -> Step<Outcome> {
    let mut c = connect(cx, FaultKind::HalfClose).await?;
    for _ in 0..4 {
        c.send_good(cx, small(cx)).await?;
    }
    c.half_close().await?;
    let end = deadline(cx);
    all_ok(&c.replies(4, end).await?)?;
    c.expect_close(end, "answering a half-closed connection")
        .await?;
    Ok(Outcome::AsExpected)
}

async fn slow_read(cx: &Ctx) -> Step<Outcome> {
    let mut c = connect(cx, FaultKind::SlowRead).await?;
    let size = (64 * 1024).min(cx.load.max_frame as usize / 2);
    let mut sent = 0;
    loop {
        if sent >= SLOW_READ_LIMIT {
            return Err(Outcome::NotInjected(format!(
                "the server took {} MiB without its replies being read",
                sent >> 20
            )));
        }
        let (segs, _) = c.wire.good(&cx.load, size);
        let n: usize = segs.iter().map(Bytes::len).sum();
        match zerorx::timeout(SEND_STALL, c.stream.send_vectored(&segs)).await {
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
    all_ok(&c.replies(1, end).await?)?;
    let garbage = c.wire.garbage();
    c.send(&[garbage]).await?;
    c.expect_close(end, "a malformed frame").await?;
    Ok(Outcome::AsExpected)
}

async fn oversized(cx: &Ctx) -> Step<Outcome> {
    let mut c = connect(cx, FaultKind::Oversized).await?;
    let Some(header) = c.wire.oversized(cx.plan.max_frame) else {
        return Err(Outcome::NotInjected(
            "the frame limit is the largest length".into(),
        ));
    };
    c.send(&[header]).await?;
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
    let (segs, bad) = c.wire.corrupt(&cx.load, small(cx));
    c.send(&segs).await?;
    let end = deadline(cx);
    if cx.wire == WireKind::Thrift {
        // Not valid Thrift: the server names the request in an exception, then closes.
        c.expect_close(end, "a request that is not valid Thrift")
            .await?;
        return Ok(Outcome::AsExpected);
    }
    let good = c.send_good(cx, small(cx)).await?;
    c.half_close().await?;
    let rs = c.replies(2, end).await?;
    if !rs.contains(&Reply::Refused(bad)) {
        return Err(unexpected(format!(
            "request {bad:#x} with a wrong CRC was not rejected: {rs:?}"
        )));
    }
    if !rs.contains(&Reply::Ok(good)) {
        return Err(unexpected(format!(
            "the correct request {good:#x} after a rejected one was not answered: {rs:?}"
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
    let size = cx.plan.burst_size.min(cx.load.max_frame as usize / 2);
    let end = deadline(cx);
    // Every connection sends at once, then reads its own reply: no connection waits
    // for another.
    let mut tasks = Vec::with_capacity(conns.len());
    for mut c in conns {
        let (segs, _) = c.wire.good(&cx.load, size);
        tasks.push(zerorx::spawn(async move {
            c.send(&segs).await?;
            c.half_close().await?;
            all_ok(&c.replies(1, end).await?)?;
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
