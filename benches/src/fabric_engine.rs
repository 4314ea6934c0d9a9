//! The pingpong and streaming engine shared by the `fabric_pingpong` example and the
//! `fabric` bench: both sides follow the same [`Plan`],
//! so no per-phase coordination is needed beyond the address exchange.

use std::time::{Duration, Instant};
use zerorx_fabric::{
    Access, Cap, Completion, CompletionQueue, Domain, DomainConfig, Endpoint, EndpointConfig,
    EpAddr, Fabric, Level, MemoryRegion, OpKind, PeerId, PostError, Requirements,
};

/// Every wait for a completion gives up after this long.
const WAIT: Duration = Duration::from_secs(30);
/// Sends in flight while streaming.
const WINDOW: usize = 16;
/// Receives kept posted while streaming (as many as sends in flight, so none arrives
/// unexpected).
const RECV_SLOTS: usize = WINDOW;

/// What both sides run, in order.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Pingpong sizes.
    pub pingpong: Vec<usize>,
    /// Round trips per pingpong size (after `warmup`).
    pub iters: usize,
    /// Round trips before timing starts.
    pub warmup: usize,
    /// Streaming sizes.
    pub stream: Vec<usize>,
    /// Bytes streamed per streaming size (at least `WINDOW` messages).
    pub stream_bytes: usize,
    /// Check the data of every pingpong round trip.
    pub check: bool,
}

impl Plan {
    fn stream_count(&self, size: usize) -> usize {
        (self.stream_bytes / size.max(1)).max(WINDOW)
    }

    fn max_size(&self) -> usize {
        self.pingpong
            .iter()
            .chain(&self.stream)
            .copied()
            .max()
            .unwrap_or(1)
            .max(1)
    }

    /// Receive memory: two pingpong slots, or one slot per posted streaming receive.
    fn recv_len(&self) -> usize {
        let ping = self.pingpong.iter().copied().max().unwrap_or(1) * 2;
        let stream = self.stream.iter().copied().max().unwrap_or(1) * RECV_SLOTS;
        ping.max(stream)
    }
}

/// One measured point.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// Message size.
    pub size: usize,
    /// Half a round trip (pingpong) or time per message (streaming), µs.
    pub usec: f64,
    /// Payload bytes per second one way, MB/s (10^6).
    pub mbps: f64,
}

/// Results of the client side.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Pingpong, per size.
    pub pingpong: Vec<Sample>,
    /// Streaming, per size.
    pub stream: Vec<Sample>,
}

/// One side: an endpoint, its queue, and a send and a receive region.
pub struct Node {
    _domain: Domain,
    /// The endpoint: its address goes to the peer over the control connection.
    pub ep: Endpoint,
    cq: CompletionQueue,
    send: MemoryRegion,
    recv: MemoryRegion,
    stream_level: Level,
}

type Error = Box<dyn std::error::Error>;

impl Node {
    /// Opens `provider` and registers regions large enough for `plan`. Inside a worker.
    pub fn open(provider: &str, plan: &Plan) -> Result<Node, Error> {
        let max = plan.max_size();
        let req = Requirements::new().max_msg_size(max);
        let fabric = Fabric::open(provider, &req)?;
        let stream_level = if fabric.discovery().supports(Cap::DeliveryComplete) {
            Level::Delivered
        } else {
            Level::Sent
        };
        let domain = fabric.domain(DomainConfig::default())?;
        let cfg = EndpointConfig {
            tx_depth: 64,
            rx_depth: 64,
            ..Default::default()
        };
        let cq = domain.completion_queue(cfg.tx_depth + cfg.rx_depth)?;
        let ep = domain.endpoint(&cq, cfg)?;
        let send = domain.register(max, Access::LOCAL)?;
        let recv = domain.register(plan.recv_len(), Access::LOCAL)?;
        Ok(Node {
            _domain: domain,
            ep,
            cq,
            send,
            recv,
            stream_level,
        })
    }

    /// This side's address, as bytes to hand to the other side.
    pub fn address(&self) -> Vec<u8> {
        self.ep.address().to_bytes()
    }

    /// Inserts the other side and waits until it is reachable.
    pub async fn connect(&self, addr: &[u8]) -> Result<PeerId, Error> {
        Ok(self.ep.connect(&EpAddr::from_bytes(addr)?).await?)
    }

    async fn next(&self) -> Result<Completion, String> {
        let c = zerorx::time::timeout(WAIT, self.cq.next())
            .await
            .map_err(|_| format!("no completion within {WAIT:?}"))?;
        match &c.status {
            Ok(()) => Ok(c),
            Err(e) => Err(format!("{:?} failed: {e}", c.kind)),
        }
    }

    /// Waits until `recvs` receives (and any sends) completed; returns the sends seen.
    async fn wait_recvs(&self, mut recvs: usize) -> Result<usize, String> {
        let mut sends = 0;
        while recvs > 0 {
            match self.next().await?.kind {
                OpKind::Recv => recvs -= 1,
                _ => sends += 1,
            }
        }
        Ok(sends)
    }

    fn post_recv(&self, slot: usize, size: usize) -> Result<(), String> {
        let s = self
            .recv
            .slice(slot * size..(slot + 1) * size)
            .map_err(|e| e.to_string())?;
        self.ep.recv(&s).post().map(drop).map_err(|e| e.to_string())
    }

    fn post_send(
        &self,
        peer: PeerId,
        region: &MemoryRegion,
        at: usize,
        size: usize,
        level: Level,
    ) -> Result<(), PostError> {
        let s = region.slice(at..at + size)?;
        self.ep.send(peer, &s).level(level).post().map(drop)
    }

    /// Drains completions of sends until `pending` is zero.
    async fn drain_sends(&self, mut pending: usize) -> Result<(), String> {
        while pending > 0 {
            self.next().await?;
            pending -= 1;
        }
        Ok(())
    }
}

fn pattern(seed: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(31) ^ seed.wrapping_mul(131)) as u8)
        .collect()
}

/// The side that measures.
pub async fn client(node: &Node, peer: PeerId, plan: &Plan) -> Result<Report, String> {
    let mut report = Report::default();
    for &size in &plan.pingpong {
        let mut start = Instant::now();
        for i in 0..plan.warmup + plan.iters {
            if i == plan.warmup {
                start = Instant::now();
            }
            let check = plan.check || i == 0 || i + 1 == plan.warmup + plan.iters;
            if check {
                node.send
                    .write(0, &pattern(i, size))
                    .map_err(|e| e.to_string())?;
            }
            node.post_recv(0, size)?;
            node.post_send(peer, &node.send, 0, size, Level::Sent)
                .map_err(|e| e.to_string())?;
            let sends = node.wait_recvs(1).await?;
            node.drain_sends(1 - sends.min(1)).await?;
            if check && node.recv.to_vec(0..size).map_err(|e| e.to_string())? != pattern(i, size) {
                return Err(format!("pingpong data mismatch at {size} B, round {i}"));
            }
        }
        let usec = start.elapsed().as_secs_f64() * 1e6 / (2 * plan.iters.max(1)) as f64;
        report.pingpong.push(Sample {
            size,
            usec,
            mbps: size as f64 / usec,
        });
    }
    for &size in &plan.stream {
        let count = plan.stream_count(size);
        node.post_recv(0, 1)?;
        let start = Instant::now();
        let (mut posted, mut done, mut got_ack) = (0, 0, false);
        while done < count || !got_ack {
            while posted < count && posted - done < WINDOW {
                // Delivered: the window then bounds what the receiver holds, so every
                // message meets a posted receive instead of the unexpected queue.
                node.post_send(peer, &node.send, 0, size, node.stream_level)
                    .map_err(|e| e.to_string())?;
                posted += 1;
            }
            match node.next().await?.kind {
                OpKind::Recv => got_ack = true,
                _ => done += 1,
            }
        }
        let secs = start.elapsed().as_secs_f64();
        report.stream.push(Sample {
            size,
            usec: secs * 1e6 / count as f64,
            mbps: (size * count) as f64 / secs / 1e6,
        });
    }
    Ok(report)
}

/// The side that answers.
pub async fn server(node: &Node, peer: PeerId, plan: &Plan) -> Result<(), String> {
    for &size in &plan.pingpong {
        let rounds = plan.warmup + plan.iters;
        let mut unsent = 0;
        node.post_recv(0, size)?;
        for i in 0..rounds {
            let slot = i % 2;
            unsent -= node.wait_recvs(1).await?.min(unsent);
            if i + 1 < rounds {
                node.post_recv(1 - slot, size)?;
            }
            node.post_send(peer, &node.recv, slot * size, size, Level::Sent)
                .map_err(|e| e.to_string())?;
            unsent += 1;
        }
        node.drain_sends(unsent).await?;
    }
    for &size in &plan.stream {
        let count = plan.stream_count(size);
        for slot in 0..RECV_SLOTS.min(count) {
            node.post_recv(slot, size)?;
        }
        let (mut received, mut posted) = (0, RECV_SLOTS.min(count));
        while received < count {
            let c = node.next().await?;
            if c.kind == OpKind::Recv {
                received += 1;
                if posted < count {
                    node.post_recv(posted % RECV_SLOTS, size)?;
                    posted += 1;
                }
            }
        }
        node.post_send(peer, &node.send, 0, 1, Level::Sent)
            .map_err(|e| e.to_string())?;
        node.drain_sends(1).await?;
    }
    Ok(())
}
