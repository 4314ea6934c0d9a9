//! The load generator: `connections` TCP connections spread over client threads (a
//! current-thread tokio runtime each), every connection keeping `depth` framed binary
//! `echo` calls in flight (pipelined: replies are matched by seqid), the same for
//! every server.
//!
//! Requests are a shared pre-encoded argument struct plus a 20-byte head per call
//! (frame length, message header with its seqid), sent with one vectored write per
//! batch, so the client's cost per call stays small next to the server's.

use bytes::{Bytes, BytesMut};
use hdrhistogram::Histogram;
use std::collections::VecDeque;
use std::io::IoSlice;
use std::net::SocketAddr;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use zerorx_cli::bench::EchoArgs;
use zerorx_thrift::{
    encode_message, ApplicationException, DecodeLimits, MessageReader, MessageType, Protocol,
    Returns,
};

/// One client load.
#[derive(Clone, Copy, Debug)]
pub struct Load {
    /// TCP connections.
    pub connections: usize,
    /// Calls in flight per connection.
    pub depth: usize,
    /// `echo` payload bytes.
    pub payload: usize,
    /// Client threads the connections are spread over.
    pub threads: usize,
}

/// How much of each reply is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// Decode every reply and compare the payload byte for byte (smoke runs).
    Full,
    /// Check the header (reply, name, a seqid in flight) and the frame length (timed
    /// runs: comparing 64 KiB per reply would load the client).
    Header,
}

/// What a load measured between its warm-up end and its end.
#[derive(Debug)]
pub struct Outcome {
    /// Replies received for calls sent in the window.
    pub replies: u64,
    /// Call latency in nanoseconds (send to reply).
    pub latency: Histogram<u64>,
    /// CPU seconds the client threads used over the whole run.
    pub client_cpu_secs: f64,
    /// Why connections failed, if any did.
    pub errors: Vec<String>,
}

/// The encoded call, split where the seqid goes.
struct Template {
    /// Frame length, message header up to and including the seqid.
    head: Vec<u8>,
    /// The argument struct.
    tail: Bytes,
    /// Where in `head` the seqid is.
    seqid_at: usize,
    /// The whole frame length of the reply.
    reply_len: usize,
    payload: Bytes,
}

/// One whole `echo` call with a `payload`-byte argument (seqid 0) and the length of
/// its reply frame: the counted work's request.
pub fn echo_call(payload: usize) -> (Vec<u8>, usize) {
    let t = template(payload);
    let mut call = t.head.clone();
    call[t.seqid_at..t.seqid_at + 4].copy_from_slice(&0i32.to_be_bytes());
    call.extend_from_slice(&t.tail);
    (call, t.reply_len)
}

fn template(payload: usize) -> Template {
    let data = Bytes::from(
        (0..payload)
            .map(|i| (i * 31 % 251) as u8)
            .collect::<Vec<u8>>(),
    );
    let args = EchoArgs { data: data.clone() };
    let encode = |seqid| -> Vec<u8> {
        let segs = encode_message(
            Protocol::Binary,
            true,
            usize::MAX,
            b"echo",
            MessageType::Call,
            seqid,
            &args,
        )
        .expect("the echo call encodes");
        segs.iter().flat_map(|s| s.iter().copied()).collect()
    };
    // Frame length (4), version and type (4), name length (4), name, seqid (4).
    let head_len = 4 + 4 + 4 + 4 + 4;
    let seqid_at = head_len - 4;
    let probe = encode(0x1234_5678);
    assert_eq!(
        &probe[seqid_at..head_len],
        &0x1234_5678i32.to_be_bytes(),
        "seqid offset"
    );
    let reply = encode_message(
        Protocol::Binary,
        true,
        usize::MAX,
        b"echo",
        MessageType::Reply,
        0,
        &Returns(data.clone()),
    )
    .expect("the echo reply encodes");
    Template {
        head: probe[..head_len].to_vec(),
        tail: Bytes::copy_from_slice(&probe[head_len..]),
        seqid_at,
        reply_len: reply.iter().map(Bytes::len).sum(),
        payload: data,
    }
}

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("histogram bounds are valid")
}

struct ConnOutcome {
    replies: u64,
    latency: Histogram<u64>,
    error: Option<String>,
}

/// A load in progress.
pub struct Running {
    results: mpsc::Receiver<(f64, Vec<ConnOutcome>)>,
    threads: usize,
}

/// Starts `load` against `addr`: calls go out from now until `end`; those sent from
/// `warm_end` on are measured.
pub fn start(
    addr: SocketAddr,
    load: Load,
    check: Check,
    warm_end: Instant,
    end: Instant,
) -> Running {
    let t = Arc::new(template(load.payload));
    let threads = load.threads.clamp(1, load.connections.max(1));
    let (tx, rx) = mpsc::channel();
    for i in 0..threads {
        let conns = load.connections / threads + usize::from(i < load.connections % threads);
        let (t, tx) = (t.clone(), tx.clone());
        std::thread::Builder::new()
            .name(format!("rpc-load-{i}"))
            .spawn(move || {
                let cpu = zerorx_bench::procfs::thread_cpu();
                let outcomes = match tokio::runtime::Builder::new_current_thread()
                    .enable_io()
                    .build()
                {
                    Ok(rt) => rt.block_on(async {
                        let tasks: Vec<_> = (0..conns)
                            .map(|_| {
                                let c =
                                    connection(addr, t.clone(), load.depth, check, warm_end, end);
                                tokio::spawn(c)
                            })
                            .collect();
                        let mut out = Vec::new();
                        for task in tasks {
                            out.push(task.await.unwrap_or_else(|e| ConnOutcome {
                                replies: 0,
                                latency: new_histogram(),
                                error: Some(format!("connection task: {e}")),
                            }));
                        }
                        out
                    }),
                    Err(e) => vec![ConnOutcome {
                        replies: 0,
                        latency: new_histogram(),
                        error: Some(format!("client runtime: {e}")),
                    }],
                };
                let cpu = (zerorx_bench::procfs::thread_cpu() - cpu).as_secs_f64();
                let _ = tx.send((cpu, outcomes));
            })
            .expect("spawn a load thread");
    }
    Running {
        results: rx,
        threads,
    }
}

impl Running {
    /// Waits for every connection to finish, at most until `deadline`; `None` when it
    /// passed first (the caller then stops the server, which ends the connections,
    /// and calls this again).
    pub fn finish(&mut self, deadline: Instant) -> Option<Outcome> {
        let mut out = Outcome {
            replies: 0,
            latency: new_histogram(),
            client_cpu_secs: 0.0,
            errors: Vec::new(),
        };
        while self.threads > 0 {
            let wait = deadline.saturating_duration_since(Instant::now());
            let (cpu, conns) = self.results.recv_timeout(wait).ok()?;
            self.threads -= 1;
            out.client_cpu_secs += cpu;
            for c in conns {
                out.replies += c.replies;
                // Both histograms share bounds, so adding cannot fail.
                let _ = out.latency.add(&c.latency);
                out.errors.extend(c.error);
            }
        }
        out.errors.sort();
        out.errors.dedup();
        Some(out)
    }
}

/// One connection's calls. Errors end the connection and are reported.
async fn connection(
    addr: SocketAddr,
    t: Arc<Template>,
    depth: usize,
    check: Check,
    warm_end: Instant,
    end: Instant,
) -> ConnOutcome {
    let mut out = ConnOutcome {
        replies: 0,
        latency: new_histogram(),
        error: None,
    };
    if let Err(e) = calls(addr, &t, depth.max(1), check, warm_end, end, &mut out).await {
        out.error = Some(e);
    }
    out
}

async fn calls(
    addr: SocketAddr,
    t: &Template,
    depth: usize,
    check: Check,
    warm_end: Instant,
    end: Instant,
    out: &mut ConnOutcome,
) -> Result<(), String> {
    let mut stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    stream
        .set_nodelay(true)
        .map_err(|e| format!("nodelay: {e}"))?;
    let mut next_seqid: i32 = 0;
    let mut in_flight: VecDeque<(i32, Instant)> = VecDeque::with_capacity(depth);
    let mut heads: Vec<u8> = Vec::with_capacity(depth * t.head.len());
    let mut input = BytesMut::with_capacity(2 * t.reply_len.max(4096));
    let mut to_send = depth;
    loop {
        if to_send > 0 {
            send(
                &mut stream,
                t,
                to_send,
                &mut next_seqid,
                &mut heads,
                &mut in_flight,
            )
            .await?;
            to_send = 0;
        }
        if in_flight.is_empty() {
            return Ok(());
        }
        if input.capacity() - input.len() < t.reply_len.min(64 * 1024) {
            input.reserve(2 * t.reply_len.max(4096));
        }
        let n = stream
            .read_buf(&mut input)
            .await
            .map_err(|e| format!("read: {e}"))?;
        if n == 0 {
            return Err(format!(
                "server closed with {} calls in flight",
                in_flight.len()
            ));
        }
        let now = Instant::now();
        while input.len() >= 4 {
            let len = u32::from_be_bytes([input[0], input[1], input[2], input[3]]) as usize;
            if input.len() < 4 + len {
                break;
            }
            let frame = input.split_to(4 + len).freeze();
            let seqid = check_reply(t, check, frame)?;
            let at = match in_flight.front() {
                Some((s, _)) if *s == seqid => 0,
                _ => in_flight
                    .iter()
                    .position(|(s, _)| *s == seqid)
                    .ok_or_else(|| format!("reply with seqid {seqid}, which is not in flight"))?,
            };
            let (_, sent) = in_flight.remove(at).unwrap_or((seqid, now));
            if sent >= warm_end && now <= end {
                out.replies += 1;
                let ns = now
                    .duration_since(sent)
                    .as_nanos()
                    .min(u128::from(u64::MAX)) as u64;
                out.latency.saturating_record(ns.max(1));
            }
            if now < end {
                to_send += 1;
            }
        }
    }
}

async fn send(
    stream: &mut TcpStream,
    t: &Template,
    count: usize,
    next_seqid: &mut i32,
    heads: &mut Vec<u8>,
    in_flight: &mut VecDeque<(i32, Instant)>,
) -> Result<(), String> {
    heads.clear();
    let now = Instant::now();
    for _ in 0..count {
        let at = heads.len();
        heads.extend_from_slice(&t.head);
        heads[at + t.seqid_at..at + t.seqid_at + 4].copy_from_slice(&next_seqid.to_be_bytes());
        in_flight.push_back((*next_seqid, now));
        *next_seqid = next_seqid.wrapping_add(1);
    }
    let mut slices: Vec<IoSlice<'_>> = heads
        .chunks(t.head.len())
        .flat_map(|h| [IoSlice::new(h), IoSlice::new(&t.tail)])
        .collect();
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        let n = stream
            .write_vectored(rest)
            .await
            .map_err(|e| format!("write: {e}"))?;
        if n == 0 {
            return Err("write: connection closed".into());
        }
        IoSlice::advance_slices(&mut rest, n);
    }
    Ok(())
}

/// Checks one reply frame (with its length prefix) and returns its seqid.
fn check_reply(t: &Template, check: Check, frame: Bytes) -> Result<i32, String> {
    let mut r = MessageReader::new(Protocol::Binary, frame.slice(4..), DecodeLimits::default());
    let h = r
        .read_header()
        .map_err(|e| format!("bad reply header: {e}"))?;
    if h.kind == MessageType::Exception {
        let e = r
            .decode::<ApplicationException>()
            .map_err(|e| format!("bad exception reply: {e}"))?;
        return Err(format!("server answered with {e}"));
    }
    if h.kind != MessageType::Reply || &h.name[..] != b"echo" {
        return Err(format!("unexpected {:?} {:?}", h.kind, h.name));
    }
    if frame.len() != t.reply_len {
        return Err(format!(
            "reply of {} bytes, expected {}",
            frame.len(),
            t.reply_len
        ));
    }
    if check == Check::Full {
        let Returns(data) = r
            .decode::<Returns<Bytes>>()
            .map_err(|e| format!("bad echo result: {e}"))?;
        if data != t.payload {
            return Err(format!("echo returned {} different bytes", data.len()));
        }
    }
    Ok(h.seqid)
}

/// How long a load with this shape may take past its end before it is stopped.
pub const GRACE: Duration = Duration::from_secs(10);
