//! The command line.

use crate::parse;
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// zerorx-stress: drives a server with load and faults, checks every reply, and reports
/// throughput, latency, errors, balance, receive-pool figures and memory.
#[derive(Debug, Parser)]
#[command(
    name = "zerorx-stress",
    version,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// Run a server instead of a load.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The load (when no subcommand is given).
    #[command(flatten)]
    pub run: RunArgs,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the harness's stream server on its own (load it with --connect from
    /// another process or machine).
    Serve(ServeArgs),
}

/// What to load. In JSON reports, by its [`name`](Self::name).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scenario {
    /// Thrift `Bench` calls (bench.thrift): echo 64 B and 16 KiB, roundtrip, add,
    /// oneway fire, pipelined on each connection.
    #[default]
    Rpc,
    /// Raw TCP through the runtime: long-lived connections, pipelined verified frames.
    Stream,
    /// Connect, call, close, in a loop.
    Churn,
    /// `zerorx_fabric` messages between endpoint pairs in the harness (the
    /// `--fabric-provider`, uring-tcp by default): one pair per connection, verified
    /// frames echoed or acked.
    Fabric,
}

impl Scenario {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Rpc => "rpc",
            Scenario::Stream => "stream",
            Scenario::Churn => "churn",
            Scenario::Fabric => "fabric",
        }
    }
}

impl std::fmt::Display for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `pad`, so report columns can set a width.
        f.pad(self.name())
    }
}

/// What a stream request asks the server to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StreamMode {
    /// Send the request back (bytes both ways).
    Echo,
    /// Consume it and answer with its checksum (bytes one way).
    Sink,
    /// Alternate echo and sink.
    Mixed,
}

/// The load and the report.
#[derive(Clone, Debug, Args)]
pub struct RunArgs {
    /// What to run.
    #[arg(short, long, value_enum, default_value = "rpc")]
    pub scenario: Scenario,
    /// Load a server that is already running instead of starting one.
    #[arg(long, value_name = "HOST:PORT")]
    pub connect: Option<String>,
    /// Concurrent connections.
    #[arg(short, long, default_value_t = 32)]
    pub connections: usize,
    /// Client worker threads (default: half the CPUs, at least 1).
    #[arg(long)]
    pub client_threads: Option<usize>,
    /// Embedded server worker threads (default: every CPU).
    #[arg(long)]
    pub server_threads: Option<usize>,
    /// How long to load (default 10s unless --requests is given).
    #[arg(short, long, value_parser = parse::duration)]
    pub duration: Option<Duration>,
    /// Stop after this many requests.
    #[arg(short = 'n', long)]
    pub requests: Option<u64>,
    /// The `fabric` scenario's provider: `uring-tcp`, or a libfabric one
    /// (`libfabric:tcp;ofi_rxm`, `libfabric:shm`, as the error for an unknown name
    /// lists) in a build with `--features libfabric`.
    #[arg(long, value_name = "NAME", default_value = crate::fabric::DEFAULT_PROVIDER)]
    pub fabric_provider: String,
    /// Payload sizes, cycled (default: stream and fabric 64,16K; churn 64; rpc: the mix's
    /// own).
    #[arg(long, value_delimiter = ',', value_parser = parse::size)]
    pub sizes: Option<Vec<usize>>,
    /// Requests in flight per connection (pipelining).
    #[arg(long, default_value_t = 4)]
    pub depth: usize,
    /// Open loop: send at this total rate (e.g. 20000/s); latency then counts from the
    /// time each request was due, so a stalled server cannot hide its queue.
    #[arg(long, value_parser = parse::rate)]
    pub rate: Option<f64>,
    /// What stream requests ask for.
    #[arg(long, value_enum, default_value = "echo")]
    pub mode: StreamMode,
    /// Churn: requests per connection before it is closed.
    #[arg(long, default_value_t = 1)]
    pub calls_per_conn: u64,
    /// How long a reply may take before its connection is given up.
    #[arg(long, value_parser = parse::duration, default_value = "5s")]
    pub timeout: Duration,
    /// Largest payload (the embedded server refuses bigger frames).
    #[arg(long, value_parser = parse::size, default_value = "16M")]
    pub max_frame: usize,
    /// Embedded server: how it receives (auto, copy, device-less:N,
    /// zero-copy:IF:Q[,Q...]); the report says which mode ran and the bytes each
    /// receive path took.
    #[arg(long, value_name = "MODE", default_value = "auto")]
    pub receive_mode: zerorx::ReceiveMode,
    /// Embedded server: receive buffers per worker.
    #[arg(long)]
    pub pool_buffers: Option<u16>,
    /// Embedded server: size of each receive buffer.
    #[arg(long, value_parser = parse::size)]
    pub pool_buffer_size: Option<usize>,
    /// Faults to inject alongside the load, each with a rate: e.g.
    /// `reset:2/s,slowread:0.5/s,idle:5/s` or `all:1/s`. Kinds: reset, halfclose,
    /// slowread, malformed, oversized, idle, burst, corrupt.
    #[arg(long, value_name = "LIST")]
    pub faults: Option<String>,
    /// How long idle and slow-reading fault connections hold on.
    #[arg(long, value_parser = parse::duration, default_value = "1s")]
    pub fault_hold: Duration,
    /// Connections in one burst.
    #[arg(long, default_value_t = 128)]
    pub burst_conns: usize,
    /// Request size of a burst connection.
    #[arg(long, value_parser = parse::size, default_value = "60K")]
    pub burst_size: usize,
    /// Memory growth (after start-up) beyond which the run fails.
    #[arg(long, value_parser = parse::size, default_value = "64M")]
    pub rss_growth_limit: usize,
    /// Soak instead of one run: for this long, rpc, stream and churn in turn (one
    /// interval each) with every fault kind, against one long-lived server per
    /// service, each sampled at quiesce after every interval (open fds, tasks, pool
    /// chunks held, RSS) and checked to stay flat.
    #[arg(long, value_parser = parse::duration, value_name = "DURATION")]
    pub soak: Option<Duration>,
    /// The soak's interval (one scenario's load, then a sample of the servers).
    #[arg(long, value_parser = parse::duration, default_value = "10s")]
    pub soak_interval: Duration,
    /// Injections per second of each fault kind during a soak (unless --faults says
    /// otherwise).
    #[arg(long, default_value_t = 20.0)]
    pub soak_fault_rate: f64,
    /// Memory under hostile load instead of one run: --slowloris and --never-read
    /// connections against the embedded Thrift server, the rpc load beside them, then
    /// the server's idle and write timeouts (--hostile-timeout) must reclaim
    /// everything.
    #[arg(long)]
    pub hostile: bool,
    /// With --hostile: connections that send one byte of a frame header and stop.
    #[arg(long, default_value_t = 10_000)]
    pub slowloris: usize,
    /// With --hostile: connections that send echo requests and never read a reply.
    #[arg(long, default_value_t = 16)]
    pub never_read: usize,
    /// With --hostile: the server's idle and write timeouts (longer than each load
    /// phase's --duration, 3s by default with --hostile).
    #[arg(long, value_parser = parse::duration, default_value = "5s")]
    pub hostile_timeout: Duration,
    /// Write the full report as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the latency histogram, one interval per second (HdrHistogram log format).
    #[arg(long, value_name = "FILE")]
    pub hist: Option<PathBuf>,
    /// Draw the latency percentile curve and throughput over time (SVG).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Compare two JSON reports side by side (with --plot: draw both) instead of running.
    #[arg(long, num_args = 2, value_names = ["A.json", "B.json"])]
    pub compare: Option<Vec<PathBuf>>,
    /// No progress line.
    #[arg(short, long)]
    pub quiet: bool,
    /// Seed of the payload bytes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// What the standalone server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ServiceArg {
    /// The harness's frames (for --scenario stream / churn).
    Frames,
    /// Thrift bench.thrift (for --scenario rpc).
    Rpc,
}

/// The standalone server.
#[derive(Clone, Debug, Args)]
pub struct ServeArgs {
    /// What to serve.
    #[arg(long, value_enum, default_value = "frames")]
    pub service: ServiceArg,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:7420")]
    pub listen: std::net::SocketAddr,
    /// Worker threads (default: every CPU).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Largest request payload.
    #[arg(long, value_parser = parse::size, default_value = "16M")]
    pub max_frame: usize,
    /// Close connections idle this long.
    #[arg(long, value_parser = parse::duration)]
    pub idle_timeout: Option<Duration>,
    /// Thrift: close a connection whose send makes no progress this long (a client
    /// that does not read its replies; the server's default is 30 s).
    #[arg(long, value_parser = parse::duration)]
    pub write_timeout: Option<Duration>,
    /// How received bytes reach the server: auto, copy, device-less:N (N device-less
    /// ZCRX instances, Linux 7.1+), or zero-copy:IF:Q[,Q...].
    #[arg(long, value_name = "MODE", default_value = "auto")]
    pub receive_mode: zerorx::ReceiveMode,
    /// Receive buffers per worker.
    #[arg(long)]
    pub pool_buffers: Option<u16>,
    /// Size of each receive buffer.
    #[arg(long, value_parser = parse::size)]
    pub pool_buffer_size: Option<usize>,
    /// Stop after this long.
    #[arg(long, value_parser = parse::duration)]
    pub duration: Option<Duration>,
    /// Take `stats` commands on stdin and exit when it closes (used by the harness).
    #[arg(long, hide = true)]
    pub control: bool,
}

/// Every CPU the process may use.
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
