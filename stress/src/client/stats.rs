//! Live figures of one client worker, written by its connections and read once per
//! tick by the sampler thread.

use crate::errors::{ErrorKind, ErrorSample};
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// Highest latency a histogram records (longer ones are clamped to it).
pub const MAX_LATENCY: Duration = Duration::from_secs(60);

/// Error samples kept per worker; counts stay exact beyond it.
const MAX_SAMPLES: usize = 1000;

/// A latency histogram in nanoseconds, 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    match Histogram::new_with_bounds(1, MAX_LATENCY.as_nanos() as u64, 3) {
        Ok(h) => h,
        // The bounds are constants that hdrhistogram accepts.
        Err(e) => unreachable!("histogram bounds: {e}"),
    }
}

/// Locks, recovering from a poisoned lock (a panicking connection must not hide the
/// figures of the others).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One client worker's counters and histograms.
#[derive(Debug)]
pub struct WorkerStats {
    /// Requests sent.
    pub sent: AtomicU64,
    /// Replies judged correct.
    pub ok: AtomicU64,
    /// Bytes sent (frames, headers included).
    pub bytes_out: AtomicU64,
    /// Bytes of correct replies.
    pub bytes_in: AtomicU64,
    /// Oneway requests sent (no reply; the server's count is checked at the end).
    pub fires: AtomicU64,
    /// Connections established.
    pub connects: AtomicU64,
    /// Connections closed by the harness after at least one request.
    pub closed_clean: AtomicU64,
    /// Connections closed by the harness without sending anything.
    pub closed_silent: AtomicU64,
    errors: [AtomicU64; ErrorKind::ALL.len()],
    /// Latency of correct replies since the last tick.
    interval: Mutex<Histogram<u64>>,
    /// Connect latency since the start.
    connect: Mutex<Histogram<u64>>,
    samples: Mutex<Vec<ErrorSample>>,
}

impl Default for WorkerStats {
    fn default() -> Self {
        WorkerStats {
            sent: AtomicU64::new(0),
            ok: AtomicU64::new(0),
            bytes_out: AtomicU64::new(0),
            bytes_in: AtomicU64::new(0),
            fires: AtomicU64::new(0),
            connects: AtomicU64::new(0),
            closed_clean: AtomicU64::new(0),
            closed_silent: AtomicU64::new(0),
            errors: Default::default(),
            interval: Mutex::new(new_histogram()),
            connect: Mutex::new(new_histogram()),
            samples: Mutex::new(Vec::new()),
        }
    }
}

fn nanos(d: Duration) -> u64 {
    d.as_nanos().clamp(1, MAX_LATENCY.as_nanos()) as u64
}

impl WorkerStats {
    /// Records a correct reply.
    pub fn record_ok(&self, latency: Duration, bytes: u64) {
        self.ok.fetch_add(1, Relaxed);
        self.bytes_in.fetch_add(bytes, Relaxed);
        lock(&self.interval).saturating_record(nanos(latency));
    }

    /// Records a sent request.
    pub fn record_sent(&self, bytes: u64) {
        self.sent.fetch_add(1, Relaxed);
        self.bytes_out.fetch_add(bytes, Relaxed);
    }

    /// Records an established connection and how long it took.
    pub fn record_connect(&self, took: Duration) {
        self.connects.fetch_add(1, Relaxed);
        lock(&self.connect).saturating_record(nanos(took));
    }

    /// Records a failure.
    pub fn record_error(&self, sample: ErrorSample) {
        self.errors[sample.kind.index()].fetch_add(1, Relaxed);
        let mut s = lock(&self.samples);
        if s.len() < MAX_SAMPLES {
            s.push(sample);
        }
    }

    /// Errors of `kind` so far.
    pub fn errors(&self, kind: ErrorKind) -> u64 {
        self.errors[kind.index()].load(Relaxed)
    }

    /// All errors so far.
    pub fn error_total(&self) -> u64 {
        self.errors.iter().map(|e| e.load(Relaxed)).sum()
    }

    /// Adds the latencies recorded since the last call to `into` and starts a new
    /// interval.
    pub fn drain_interval(&self, into: &mut Histogram<u64>) {
        let mut h = lock(&self.interval);
        // Same bounds on both sides, so adding cannot fail.
        let _ = into.add(&*h);
        h.reset();
    }

    /// A copy of the connect-latency histogram.
    pub fn connect_histogram(&self) -> Histogram<u64> {
        lock(&self.connect).clone()
    }

    /// The error samples kept.
    pub fn samples(&self) -> Vec<ErrorSample> {
        lock(&self.samples).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_drains_and_restarts() {
        let w = WorkerStats::default();
        w.record_ok(Duration::from_micros(100), 10);
        w.record_ok(Duration::from_secs(3600), 10);
        let mut h = new_histogram();
        w.drain_interval(&mut h);
        assert_eq!(h.len(), 2);
        assert!(h.max() >= MAX_LATENCY.as_nanos() as u64 - 1_000_000_000);
        let mut h2 = new_histogram();
        w.drain_interval(&mut h2);
        assert_eq!(h2.len(), 0);
        assert_eq!(w.ok.load(Relaxed), 2);
    }

    #[test]
    fn samples_are_capped_but_counts_are_exact() {
        let w = WorkerStats::default();
        for i in 0..(MAX_SAMPLES as u64 + 10) {
            w.record_error(ErrorSample {
                kind: ErrorKind::Lost,
                id: Some(i),
                conn: 1,
                detail: String::new(),
            });
        }
        assert_eq!(w.errors(ErrorKind::Lost), MAX_SAMPLES as u64 + 10);
        assert_eq!(w.samples().len(), MAX_SAMPLES);
    }
}
