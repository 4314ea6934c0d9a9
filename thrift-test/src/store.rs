//! The store example's handler: a key-value map that keeps the entries `put` decodes,
//! as any store, cache or session table does.
//!
//! Decoded `string`/`binary` fields are slices of the receive buffers. Kept as they
//! are, each entry holds its whole receive chunk: the pool runs dry and the worker
//! receives into ordinary memory until its receive memory limit (zerorx's
//! `Builder::receive_memory_limit`). Detached ([`Detach`]), each entry holds exactly
//! its own bytes. [`KeyValueStore::new`] takes both, so the example and its test can
//! show the difference.

use crate::generated::store::{Entry, KeyValue};
use std::collections::BTreeMap;
use std::future::{ready, Future};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use zerorx_thrift::bytes::Bytes;
use zerorx_thrift::{ApplicationException, Detach, Utf8Bytes};

/// Which `put`s the store keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// Every entry.
    All,
    /// Every `n`th `put` (the others are acknowledged and dropped).
    EveryNth(u64),
}

/// The store: its map and what it has kept.
#[derive(Debug)]
pub struct KeyValueStore {
    map: Mutex<BTreeMap<Utf8Bytes, Bytes>>,
    keep: Keep,
    detach: bool,
    puts: AtomicU64,
    kept_bytes: AtomicU64,
}

impl KeyValueStore {
    /// A store keeping what `keep` says, detaching each kept entry from the receive
    /// buffers when `detach` (the documented way; without it, for comparison).
    pub fn new(keep: Keep, detach: bool) -> KeyValueStore {
        KeyValueStore {
            map: Mutex::new(BTreeMap::new()),
            keep,
            detach,
            puts: AtomicU64::new(0),
            kept_bytes: AtomicU64::new(0),
        }
    }

    /// `put` calls served.
    pub fn puts(&self) -> u64 {
        self.puts.load(Relaxed)
    }

    /// Entries kept.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Key and value bytes kept (replaced entries not counted twice).
    pub fn kept_bytes(&self) -> u64 {
        self.kept_bytes.load(Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<Utf8Bytes, Bytes>> {
        // A handler panicking mid-insert leaves a map that is still a map.
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl KeyValue for KeyValueStore {
    fn put(&self, entry: Entry) -> impl Future<Output = Result<(), ApplicationException>> + use<> {
        let n = self.puts.fetch_add(1, Relaxed) + 1;
        let keep = match self.keep {
            Keep::All => true,
            Keep::EveryNth(every) => n.is_multiple_of(every.max(1)),
        };
        if keep {
            let entry = if self.detach { entry.detach() } else { entry };
            let key_len = entry.key.len() as u64;
            self.kept_bytes
                .fetch_add(key_len + entry.value.len() as u64, Relaxed);
            if let Some(old) = self.lock().insert(entry.key, entry.value) {
                self.kept_bytes
                    .fetch_sub(key_len + old.len() as u64, Relaxed);
            }
        }
        ready(Ok(()))
    }

    fn get(
        &self,
        key: Utf8Bytes,
    ) -> impl Future<Output = Result<Bytes, ApplicationException>> + use<> {
        ready(Ok(self.lock().get(&key).cloned().unwrap_or_default()))
    }

    fn scan(
        &self,
        start: Utf8Bytes,
        limit: i32,
    ) -> impl Future<Output = Result<Vec<Entry>, ApplicationException>> + use<> {
        let entries = self
            .lock()
            .range(start..)
            .take(limit.max(0) as usize)
            .map(|(key, value)| Entry {
                key: key.clone(),
                value: value.clone(),
            })
            .collect();
        ready(Ok(entries))
    }
}

/// One run of the store example: a one-worker server and a client pipelining `put`s
/// over one connection.
#[derive(Clone, Debug)]
pub struct PutRun {
    /// `put` calls to make.
    pub puts: u64,
    /// Calls in flight at once.
    pub depth: usize,
    /// Bytes of each value (keys are `key-` and 12 digits).
    pub value_len: usize,
    /// Which entries the store keeps.
    pub keep: Keep,
    /// Whether the store detaches what it keeps.
    pub detach: bool,
    /// The server worker's receive memory limit (`None`: the default).
    pub memory_limit: Option<usize>,
}

/// What a [`PutRun`] did.
#[derive(Clone, Debug)]
pub struct PutReport {
    /// Calls answered.
    pub answered: u64,
    /// Callers whose call failed (each stops at its first failure).
    pub failed: u64,
    /// The first failure.
    pub first_error: Option<String>,
    /// Entries the store kept.
    pub kept_entries: usize,
    /// Their key and value bytes.
    pub kept_bytes: u64,
    /// The process's resident memory before the server started.
    pub rss_before: u64,
    /// The same after the run, with everything kept still alive.
    pub rss_after: u64,
    /// The server worker's receives into ordinary memory (its pool held).
    pub overflow_receives: u64,
    /// Bytes those receives still hold.
    pub overflow_held: u64,
    /// Receives that failed at the receive memory limit.
    pub memory_refusals: u64,
    /// Connections the server closed at the receive memory limit.
    pub receive_memory_closes: u64,
    /// Wall time of the puts.
    pub elapsed: std::time::Duration,
}

/// Resident bytes of this process (`VmRSS`), 0 where /proc does not say.
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Runs the store example: serves `run.puts` puts and reports what was kept, what
/// memory it took and how the server's receives fared. A call that fails ends its
/// caller (the rest go on), so a server at its limit shows as failures, never a hang.
pub fn run_puts(run: &PutRun) -> std::io::Result<PutReport> {
    use crate::generated::store::{KeyValueClient, KeyValueServer};
    use std::rc::Rc;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    let rss_before = rss_bytes();
    let mut b = zerorx::Runtime::builder();
    b.threads(1);
    if let Some(limit) = run.memory_limit {
        b.receive_memory_limit(limit);
    }
    let rt = b.build()?;
    let store = Arc::new(KeyValueStore::new(run.keep, run.detach));
    let server = zerorx_thrift::Server::builder()
        .service(KeyValueServer::from_arc(store.clone()))
        .addr("127.0.0.1:0".parse().expect("loopback address"))
        .start(rt.handle())?;
    let addr = server.local_addr();
    let value_len = run.value_len;
    let (puts, depth) = (run.puts, run.depth.max(1));
    let started = Instant::now();
    let outcome = rt.block_on(async move {
        let config = zerorx_thrift::ClientConfig {
            call_timeout: Some(Duration::from_secs(10)),
            ..Default::default()
        };
        let client = KeyValueClient::connect(addr, config)
            .await
            .map_err(|e| e.to_string())?;
        let next = Rc::new(std::cell::Cell::new(0u64));
        let callers: Vec<_> = (0..depth)
            .map(|_| {
                let (client, next) = (client.clone(), next.clone());
                zerorx::spawn(async move {
                    let (mut answered, mut error) = (0u64, None);
                    loop {
                        let i = next.get();
                        if i >= puts {
                            break;
                        }
                        next.set(i + 1);
                        let entry = Entry {
                            key: format!("key-{i:012}").into(),
                            value: Bytes::from(vec![(i % 251) as u8; value_len]),
                        };
                        match client.put(entry).await {
                            Ok(()) => answered += 1,
                            Err(e) => {
                                error = Some(format!("put {i}: {e}"));
                                break;
                            }
                        }
                    }
                    (answered, error)
                })
            })
            .collect();
        let (mut answered, mut failed, mut first) = (0, 0, None);
        for c in callers {
            let (a, e) = c.await.map_err(|e| format!("caller: {e:?}"))?;
            answered += a;
            if let Some(e) = e {
                failed += 1;
                first.get_or_insert(e);
            }
        }
        Ok::<_, String>((answered, failed, first))
    });
    let elapsed = started.elapsed();
    let (answered, failed, first_error) = outcome.map_err(std::io::Error::other)?;
    let metrics = rt.handle().metrics()[0];
    let pool = rt.handle().pool_stats()[0].unwrap_or_default();
    let report = PutReport {
        answered,
        failed,
        first_error,
        kept_entries: store.len(),
        kept_bytes: store.kept_bytes(),
        rss_before,
        rss_after: rss_bytes(),
        overflow_receives: metrics.recv_overflows,
        overflow_held: pool.overflow_held,
        memory_refusals: metrics.recv_memory_refusals,
        receive_memory_closes: server.stats().receive_memory_closes,
        elapsed,
    };
    server.shutdown_handle().shutdown(Duration::from_secs(1));
    rt.block_on(server.stopped())?;
    Ok(report)
}
