//! The load generator: connections on the harness's own zerorx runtime, each with a
//! sender and a receiver task, a pipeline window and a ledger of requests in flight.

pub mod conn;
pub mod ledger;
pub mod rpc;
pub mod slot;
pub mod stats;
pub mod window;

use crate::wire::{Kind, PayloadSource};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The shape of the load every connection follows.
#[derive(Clone, Debug)]
pub struct LoadPlan {
    /// Where to connect.
    pub addr: SocketAddr,
    /// Payload sizes, cycled request by request.
    pub sizes: Vec<usize>,
    /// Request kinds, cycled after each round of sizes.
    pub kinds: Vec<Kind>,
    /// Requests in flight per connection.
    pub depth: usize,
    /// Requests per connection before it is closed (`churn`); `None`: until the end.
    pub per_conn: Option<u64>,
    /// Open loop: time between two requests of one connection, and the connection
    /// count (to stagger the connections' schedules).
    pub pacing: Option<(Duration, usize)>,
    /// How long a request may wait for its reply, and a connect for its answer.
    pub timeout: Duration,
    /// Largest reply payload accepted.
    pub max_frame: u32,
    /// Where payload bytes come from.
    pub payloads: PayloadSource,
}

impl LoadPlan {
    /// Payload size and kind of the `seq`-th request of a connection.
    pub fn request_shape(&self, seq: u64) -> (usize, Kind) {
        let n = self.sizes.len().max(1) as u64;
        let size = self.sizes.get((seq % n) as usize).copied().unwrap_or(0);
        let k = self.kinds.len().max(1) as u64;
        let kind = self
            .kinds
            .get(((seq / n) % k) as usize)
            .copied()
            .unwrap_or(Kind::Echo);
        (size, kind)
    }

    /// The open-loop schedule of connection slot `index`, starting at `start`.
    pub fn pacer(&self, index: usize, start: Instant) -> Option<Pacer> {
        self.pacing.map(|(interval, conns)| Pacer {
            next: start + interval.mul_f64(index as f64 / conns.max(1) as f64),
            interval,
        })
    }
}

/// When the next request of an open-loop connection is due.
#[derive(Clone, Copy, Debug)]
pub struct Pacer {
    next: Instant,
    interval: Duration,
}

impl Pacer {
    /// The next due time; the schedule moves on whether or not the sender kept up,
    /// which is what keeps coordinated omission out of the latencies.
    pub fn next_due(&mut self) -> Instant {
        let t = self.next;
        self.next += self.interval;
        t
    }
}

/// What all connections of a run share, across workers.
#[derive(Debug, Default)]
pub struct RunCtx {
    stop: AtomicBool,
    abort: Mutex<Option<String>>,
    budget: Option<u64>,
    issued: AtomicU64,
    next_conn: AtomicU32,
}

impl RunCtx {
    /// A run that sends at most `budget` requests (`None`: until stopped).
    pub fn new(budget: Option<u64>) -> RunCtx {
        RunCtx {
            budget,
            next_conn: AtomicU32::new(1),
            ..RunCtx::default()
        }
    }

    /// Asks every connection to finish its requests in flight and stop.
    pub fn stop(&self) {
        self.stop.store(true, Relaxed);
    }

    /// Whether the run is stopping.
    pub fn stopping(&self) -> bool {
        self.stop.load(Relaxed)
    }

    /// Stops the run because it cannot go on; the first reason is kept.
    pub fn abort(&self, why: String) {
        let mut a = self.abort.lock().unwrap_or_else(|e| e.into_inner());
        if a.is_none() {
            *a = Some(why);
        }
        drop(a);
        self.stop();
    }

    /// Why the run was aborted, if it was.
    pub fn aborted(&self) -> Option<String> {
        self.abort.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Takes the right to send one more request; `false` once the budget is spent.
    pub fn take_ticket(&self) -> bool {
        match self.budget {
            None => true,
            Some(b) => self.issued.fetch_add(1, Relaxed) < b,
        }
    }

    /// Whether the request budget is spent.
    pub fn budget_spent(&self) -> bool {
        self.budget.is_some_and(|b| self.issued.load(Relaxed) >= b)
    }

    /// A new connection number (never 0).
    pub fn next_conn(&self) -> u32 {
        self.next_conn.fetch_add(1, Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pacer_keeps_its_schedule_and_staggers_connections() {
        let plan = LoadPlan {
            addr: "127.0.0.1:1".parse().expect("addr"),
            sizes: vec![1, 2],
            kinds: vec![Kind::Echo, Kind::Sink],
            depth: 1,
            per_conn: None,
            pacing: Some((Duration::from_millis(10), 2)),
            timeout: Duration::from_secs(1),
            max_frame: 100,
            payloads: PayloadSource::new(8, 1),
        };
        let t0 = Instant::now();
        let mut a = plan.pacer(0, t0).expect("paced");
        let mut b = plan.pacer(1, t0).expect("paced");
        assert_eq!(a.next_due(), t0);
        assert_eq!(a.next_due(), t0 + Duration::from_millis(10));
        assert_eq!(b.next_due(), t0 + Duration::from_millis(5));
        let shapes: Vec<_> = (0..4).map(|s| plan.request_shape(s)).collect();
        assert_eq!(
            shapes,
            vec![
                (1, Kind::Echo),
                (2, Kind::Echo),
                (1, Kind::Sink),
                (2, Kind::Sink)
            ]
        );
    }

    #[test]
    fn budget_is_exact() {
        let run = RunCtx::new(Some(3));
        let got = (0..10).filter(|_| run.take_ticket()).count();
        assert_eq!(got, 3);
        assert!(run.budget_spent());
        run.abort("first".into());
        run.abort("second".into());
        assert_eq!(run.aborted().as_deref(), Some("first"));
        assert!(run.stopping());
    }
}
