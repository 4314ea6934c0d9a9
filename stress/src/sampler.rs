//! The sampler thread: once a second it collects the workers' latency intervals,
//! prints the live progress line, adds a point to the timeline and an interval to the
//! histogram log; several times a second it samples resident memory.

use crate::client::stats::{new_histogram, WorkerStats};
use crate::rss::rss_kib;
use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

/// How often memory is sampled.
const RSS_EVERY: Duration = Duration::from_millis(200);
/// How often the progress line and the timeline advance.
const TICK: Duration = Duration::from_secs(1);

/// One second of the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimelinePoint {
    /// End of the interval, seconds since the start.
    pub t_s: f64,
    /// Correct replies per second in the interval.
    pub req_per_s: f64,
    /// Megabytes per second sent plus received in the interval.
    pub mb_per_s: f64,
    /// Errors in the interval.
    pub errors: u64,
    /// Median latency in the interval, microseconds.
    pub p50_us: f64,
    /// 99th percentile latency in the interval, microseconds.
    pub p99_us: f64,
}

/// What the sampler collected.
#[derive(Debug)]
pub struct Sampled {
    /// Every latency of the run.
    pub latency: Histogram<u64>,
    /// Per second.
    pub timeline: Vec<TimelinePoint>,
    /// Harness memory samples.
    pub rss_harness: Vec<(f64, u64)>,
    /// Server memory samples (embedded server only).
    pub rss_server: Vec<(f64, u64)>,
    /// Why the histogram log could not be written, if it could not.
    pub hist_error: Option<String>,
}

/// Sampler settings.
#[derive(Clone, Debug)]
pub struct SamplerConfig {
    /// Print the progress line.
    pub progress: bool,
    /// The server's process id, for its memory.
    pub server_pid: Option<u32>,
    /// Write interval histograms here (HdrHistogram log format).
    pub hist: Option<PathBuf>,
}

/// The running sampler.
#[derive(Debug)]
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Sampled>,
}

impl Sampler {
    /// Starts sampling `workers` from `start`.
    pub fn start(
        workers: Vec<Arc<WorkerStats>>,
        cfg: SamplerConfig,
        start: Instant,
    ) -> std::io::Result<Sampler> {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("sampler".into())
            .spawn(move || run(&workers, &cfg, start, &s))?;
        Ok(Sampler { stop, thread })
    }

    /// Stops and returns what was collected (the last partial interval included).
    pub fn finish(self) -> Sampled {
        self.stop.store(true, Ordering::SeqCst);
        match self.thread.join() {
            Ok(s) => s,
            Err(_) => Sampled {
                latency: new_histogram(),
                timeline: Vec::new(),
                rss_harness: Vec::new(),
                rss_server: Vec::new(),
                hist_error: Some("the sampler thread panicked".into()),
            },
        }
    }
}

fn run(
    workers: &[Arc<WorkerStats>],
    cfg: &SamplerConfig,
    start: Instant,
    stop: &AtomicBool,
) -> Sampled {
    let mut out = Sampled {
        latency: new_histogram(),
        timeline: Vec::new(),
        rss_harness: Vec::new(),
        rss_server: Vec::new(),
        hist_error: None,
    };
    let mut log_file = match cfg.hist.as_ref().map(std::fs::File::create).transpose() {
        Ok(f) => f.map(std::io::BufWriter::new),
        Err(e) => {
            out.hist_error = Some(format!("cannot create the histogram log: {e}"));
            None
        }
    };
    let mut serializer = V2DeflateSerializer::new();
    let base = SystemTime::now();
    let mut log = match log_file.as_mut() {
        Some(f) => match IntervalLogWriterBuilder::new()
            .add_comment("zerorx-stress latency, nanoseconds")
            .with_start_time(base)
            .with_base_time(base)
            .with_max_value_divisor(1e6)
            .begin_log_with(f, &mut serializer)
        {
            Ok(w) => Some(w),
            Err(e) => {
                out.hist_error = Some(format!("cannot write the histogram log: {e}"));
                None
            }
        },
        None => None,
    };
    let tty = std::io::stderr().is_terminal();
    let me = std::process::id();
    let mut last_tick = start;
    let (mut last_ok, mut last_bytes, mut last_err) = (0u64, 0u64, 0u64);
    let mut interval = new_histogram();
    loop {
        let stopping = stop.load(Ordering::SeqCst);
        let now = Instant::now();
        let t = now.duration_since(start).as_secs_f64();
        if let Some(k) = rss_kib(me) {
            out.rss_harness.push((t, k));
        }
        if let Some(k) = cfg.server_pid.and_then(rss_kib) {
            out.rss_server.push((t, k));
        }
        if stopping || now.duration_since(last_tick) >= TICK {
            for w in workers {
                w.drain_interval(&mut interval);
            }
            let dt = now.duration_since(last_tick).as_secs_f64().max(1e-9);
            let ok: u64 = workers.iter().map(|w| w.ok.load(Ordering::Relaxed)).sum();
            let bytes: u64 = workers
                .iter()
                .map(|w| w.bytes_in.load(Ordering::Relaxed) + w.bytes_out.load(Ordering::Relaxed))
                .sum();
            let errors: u64 = workers.iter().map(|w| w.error_total()).sum();
            let _ = out.latency.add(&interval);
            let point = TimelinePoint {
                t_s: t,
                req_per_s: (ok - last_ok) as f64 / dt,
                mb_per_s: (bytes - last_bytes) as f64 / dt / 1e6,
                errors: errors - last_err,
                p50_us: interval.value_at_quantile(0.5) as f64 / 1e3,
                p99_us: interval.value_at_quantile(0.99) as f64 / 1e3,
            };
            if let Some(w) = log.as_mut() {
                let from = last_tick.duration_since(start);
                if let Err(e) =
                    w.write_histogram(&interval, from, now.duration_since(last_tick), None)
                {
                    out.hist_error = Some(format!("cannot write the histogram log: {e}"));
                    log = None;
                }
            }
            if cfg.progress && (!stopping || dt > 0.5) {
                let p99 = out.latency.value_at_quantile(0.99) as f64 / 1e3;
                let line = format!(
                    "[{t:6.1}s] {:>10.0} req/s {:>9.1} MB/s both ways   errors {errors:<6} p99 so far {}",
                    point.req_per_s,
                    point.mb_per_s,
                    crate::report::text::us(p99)
                );
                let mut err = std::io::stderr().lock();
                let _ = if tty {
                    write!(err, "\r\x1b[2K{line}")
                } else {
                    writeln!(err, "{line}")
                };
            }
            // A short last interval (the drain after the stop) would read as a drop.
            if dt > 0.5 || out.timeline.is_empty() {
                out.timeline.push(point);
            }
            interval.reset();
            last_tick = now;
            (last_ok, last_bytes, last_err) = (ok, bytes, errors);
        }
        if stopping {
            break;
        }
        std::thread::sleep(RSS_EVERY);
    }
    if cfg.progress && tty {
        eprintln!();
    }
    drop(log);
    if let Some(f) = log_file.as_mut() {
        if let Err(e) = f.flush() {
            out.hist_error = Some(format!("cannot write the histogram log: {e}"));
        }
    }
    out
}
