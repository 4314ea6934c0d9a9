//! What a run of the client asks for ([`Plan`], one [`Role`] per connection) and what it
//! returns ([`EngineResult`], a [`Tally`] per kind of connection).

use hdrhistogram::Histogram;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

/// What one connection (or churn slot) does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Role {
    /// Closed loop: send `size` bytes, read the `size`-byte echo, repeat at once.
    Closed {
        /// Request (and response) size in bytes.
        size: usize,
    },
    /// Open loop: requests arrive on a shared Poisson schedule ([`Plan::open_rate`]);
    /// latency counts from the scheduled time, so queueing behind a slow response is
    /// included (no coordinated omission).
    Open {
        /// Request size in bytes.
        size: usize,
    },
    /// Full-duplex stream: keep a `chunk`-byte send and a `chunk`-byte receive in
    /// flight at all times.
    Stream {
        /// Bytes per send and per receive.
        chunk: usize,
        /// Stop reading for a while, periodically (a slow consumer).
        pause: Option<Pause>,
    },
    /// Connect, one request of `size` bytes, close; repeat.
    Churn {
        /// Request size in bytes.
        size: usize,
    },
}

/// A reader that stops reading for `stopped` at the end of every `period`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pause {
    /// Length of one cycle.
    pub period: Duration,
    /// How long reading stops in each cycle.
    pub stopped: Duration,
}

/// One run of the client.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The server.
    pub addr: SocketAddr,
    /// One entry per connection or churn slot.
    pub roles: Vec<Role>,
    /// Run before the measured window, not counted.
    pub warmup: Duration,
    /// The measured window.
    pub measure: Duration,
    /// Requests per second over all [`Role::Open`] connections together.
    pub open_rate: f64,
    /// End the window early once this many requests or churn cycles completed in it
    /// (fixed work instead of fixed time, for whole-process comparisons).
    pub max_ops: Option<u64>,
}

/// Called at the edges of the measured window, to read the server's counters there.
pub trait Probe {
    /// The window starts now.
    fn window_start(&mut self) -> io::Result<()>;
    /// The window ends now.
    fn window_end(&mut self) -> io::Result<()>;
}

/// What a group of connections did inside the window.
#[derive(Clone, Debug)]
pub struct Tally {
    /// Requests (or connections, for churn) completed.
    pub ops: u64,
    /// Payload bytes received back.
    pub bytes: u64,
    /// Latency of each completed request, in nanoseconds.
    pub latency: Histogram<u64>,
}

impl Tally {
    pub(super) fn new() -> io::Result<Tally> {
        Ok(Tally {
            ops: 0,
            bytes: 0,
            latency: Histogram::new_with_bounds(1, 60_000_000_000, 3)
                .map_err(|e| io::Error::other(format!("histogram: {e}")))?,
        })
    }

    /// A latency quantile in microseconds (0 when nothing completed).
    pub fn quantile_us(&self, q: f64) -> f64 {
        if self.latency.is_empty() {
            0.0
        } else {
            self.latency.value_at_quantile(q) as f64 / 1e3
        }
    }
}

/// The outcome of [`Engine::run`](super::engine::Engine::run).
#[derive(Clone, Debug)]
pub struct EngineResult {
    /// Length of the measured window.
    pub window: Duration,
    /// Closed- and open-loop request/response connections.
    pub rr: Tally,
    /// Stream connections.
    pub stream: Tally,
    /// Churn slots (one op = one connection opened, used and closed).
    pub churn: Tally,
    /// CPU the client thread used inside the window.
    pub client_cpu: Duration,
    /// Requests, churn cycles and stream receives that completed correctly over the
    /// whole run, warm-up included.
    pub answered: u64,
}
