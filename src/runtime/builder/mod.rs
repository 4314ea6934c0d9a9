//! [`Builder`]: runtime configuration; the `ZERORX_*` environment applied to it
//! (`env`) and the startup of the workers (`start`) are its child modules.

mod env;
mod start;

use super::receive_mode::ReceiveMode;
use super::send_zero_copy::SendZeroCopy;
use super::tuning::Setting;
use super::Runtime;
use crate::wake::WakeMode;
use std::io;
use std::time::Duration;
use zcrx::CopyPoolConfig;

/// Configures and starts a [`Runtime`].
#[derive(Clone, Debug)]
pub struct Builder {
    threads: Option<usize>,
    ring_entries: u32,
    cq_entries: Option<u32>,
    pin_cpus: bool,
    wake: WakeMode,
    cqe32: bool,
    shutdown_timeout: Duration,
    receive_mode: ReceiveMode,
    pool_bytes: usize,
    zc_pool_ceiling: Option<usize>,
    zc_restarts: Option<bool>,
    chunk_size: u32,
    copy_pool: CopyPoolChoice,
    incremental: Option<bool>,
    recv_bundles: bool,
    wait_batch: Option<(u32, Duration)>,
    busy_poll: Option<(Duration, bool)>,
    zero_copy_sharing: ZeroCopySharing,
    udp_pool: Option<CopyPoolConfig>,
    recv_hold_limit: Option<u32>,
    recv_memory_limit: Option<usize>,
    recv_memory_wait: Duration,
    max_blocking_threads: usize,
    blocking_keep_alive: Duration,
    send_zc: SendZeroCopy,
    send_arena: usize,
    /// The tunable settings the code set explicitly (by `ZERORX_*` name): those the
    /// environment may not change.
    explicit: Vec<&'static str>,
}

/// How workers without a zero-copy pool of their own share one (fewer queues than
/// workers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ZeroCopySharing {
    /// Import the owner's instance into the worker's ring where the kernel can (Linux
    /// 6.19+), else hand over.
    #[default]
    Auto,
    /// Always serve the receives on the owner's ring and hand the buffers over.
    Handover,
}

/// How each worker's copy pool is sized.
#[derive(Clone, Debug, PartialEq, Eq)]
enum CopyPoolChoice {
    /// From `pool_size` and `chunk_size`.
    Sized,
    /// Exactly this (`Builder::copy_pool(Some(..))`).
    Explicit(CopyPoolConfig),
    /// No copy pool (`Builder::copy_pool(None)`).
    Off,
}

/// Bytes of receive pool per worker by default: 4 MiB stays warm in cache, which
/// measured ~10 % less CPU per byte on loopback than a 64 MiB pool.
const DEFAULT_POOL_BYTES: usize = 4 << 20;
/// Threads of the blocking pool at most, by default: blocking jobs mostly wait (on a
/// disk, a database, a lock), so many may run at once without many cores.
const DEFAULT_MAX_BLOCKING_THREADS: usize = 512;
/// Bytes of each worker's registered send arena by default: 64 chunks of 64 KiB,
/// registered (and pinned) only when the worker's first `RegisteredBuf` is made.
const DEFAULT_SEND_ARENA: usize = 4 << 20;
/// Bytes per pool buffer / chunk by default.
const DEFAULT_CHUNK_SIZE: u32 = 64 * 1024;
/// Datagram pool of each worker, registered when a UDP socket first receives from it:
/// 64 buffers of 2 KiB (an Ethernet-MTU datagram plus the kernel's header), 128 KiB.
const DEFAULT_UDP_POOL: CopyPoolConfig = CopyPoolConfig {
    buffers: 64,
    buffer_size: 2048,
    group_id: 1,
    backing: zcrx::Backing::Anonymous,
    incremental: false,
};

impl Default for Builder {
    fn default() -> Self {
        Builder {
            threads: None,
            ring_entries: 256,
            cq_entries: None,
            pin_cpus: false,
            wake: WakeMode::EventFd,
            cqe32: false,
            shutdown_timeout: Duration::from_secs(5),
            receive_mode: ReceiveMode::Auto,
            pool_bytes: DEFAULT_POOL_BYTES,
            zc_pool_ceiling: None,
            zc_restarts: None,
            chunk_size: DEFAULT_CHUNK_SIZE,
            copy_pool: CopyPoolChoice::Sized,
            incremental: None,
            recv_bundles: false,
            wait_batch: None,
            busy_poll: None,
            zero_copy_sharing: ZeroCopySharing::Auto,
            udp_pool: Some(DEFAULT_UDP_POOL),
            recv_hold_limit: None,
            recv_memory_limit: None,
            recv_memory_wait: Duration::from_secs(2),
            max_blocking_threads: DEFAULT_MAX_BLOCKING_THREADS,
            blocking_keep_alive: Duration::from_secs(10),
            send_zc: SendZeroCopy::default(),
            send_arena: DEFAULT_SEND_ARENA,
            explicit: Vec::new(),
        }
    }
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// The default [`Builder::recv_hold_limit`]: an eighth of the copy pool (of
/// `pool_bytes` without one), at least one buffer, so eight streams whose tasks stopped
/// reading still leave the others some of the pool.
fn default_hold_limit(pool: Option<&CopyPoolConfig>, pool_bytes: usize, chunk: u32) -> u32 {
    let (total, buffer) = match pool {
        Some(p) => (
            p.buffers as u64 * p.buffer_size as u64,
            p.buffer_size as u64,
        ),
        None => (pool_bytes as u64, chunk as u64),
    };
    (total / 8).max(buffer).clamp(1, u32::MAX as u64) as u32
}

impl Builder {
    /// A builder with the defaults: one worker per available CPU, 256 SQ entries, a CQ
    /// four times that, eventfd wake-ups, no pinning, 16-byte CQEs.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Number of workers, including worker 0 (the thread calling `block_on`); `n - 1`
    /// background threads are started by [`build`](Self::build).
    pub fn threads(&mut self, n: usize) -> &mut Self {
        self.explicit.push("ZERORX_THREADS");
        self.threads = Some(n);
        self
    }

    /// SQ size of each ring (a power of two up to 32768).
    pub fn ring_entries(&mut self, n: u32) -> &mut Self {
        self.explicit.push("ZERORX_RING_ENTRIES");
        self.ring_entries = n;
        self
    }

    /// CQ size of each ring (at least `ring_entries`). Multishot ops post many CQEs per
    /// SQE, so the default is four times the SQ.
    pub fn cq_entries(&mut self, n: u32) -> &mut Self {
        self.explicit.push("ZERORX_CQ_ENTRIES");
        self.cq_entries = Some(n);
        self
    }

    /// Pins background worker `i` to CPU `i % cpus`. Worker 0 is the caller's thread
    /// and is left alone. Off by default: on shared VMs pinning measured slower.
    pub fn pin_cpus(&mut self, pin: bool) -> &mut Self {
        self.pin_cpus = pin;
        self
    }

    /// How parked workers are woken from other threads.
    pub fn wake(&mut self, mode: WakeMode) -> &mut Self {
        self.explicit.push("ZERORX_WAKE");
        self.wake = mode;
        self
    }

    /// Builds every ring with 32-byte CQEs (needed for zero-copy receive).
    pub fn cqe32(&mut self, on: bool) -> &mut Self {
        self.cqe32 = on;
        self
    }

    /// How received bytes reach the application: [`ReceiveMode::Auto`] (default),
    /// `ZeroCopy`, `DeviceLess` or `Copy`. See [`ReceiveMode`] for the NIC flow-steering
    /// zero-copy needs.
    pub fn receive_mode(&mut self, mode: ReceiveMode) -> &mut Self {
        self.explicit.push("ZERORX_RECEIVE_MODE");
        self.receive_mode = mode;
        self
    }

    /// How workers without a zero-copy pool of their own share one (default: import
    /// where the kernel can, else hand over).
    pub fn zero_copy_sharing(&mut self, sharing: ZeroCopySharing) -> &mut Self {
        self.zero_copy_sharing = sharing;
        self
    }

    /// Bytes of receive memory per worker (default 4 MiB): the copy pool's buffers and,
    /// in zero-copy mode, the area of each owned ZCRX pool. Small pools stay in cache.
    pub fn pool_size(&mut self, bytes: usize) -> &mut Self {
        self.explicit.push("ZERORX_POOL_SIZE");
        self.pool_bytes = bytes;
        self
    }

    /// Lets each zero-copy pool a worker owns grow from [`pool_size`](Self::pool_size)
    /// up to `bytes` (Linux 7.3, `ZCRX_CTRL_ADD_AREA`; `None`, the default, keeps it at
    /// its first size). The owner adds an area of `pool_size` bytes whenever the kernel
    /// reports the pool dry (`ZCRX_EVENT_ALLOC_FAIL`) or a quarter or less of its chunks
    /// are free, until the next area would pass the ceiling; receives that waited for
    /// chunks are woken, and workers importing the pool use the new area at once. On
    /// older kernels the pool keeps its first size (logged once). A ceiling below
    /// `pool_size` makes [`build`](Self::build) fail.
    pub fn zero_copy_pool_ceiling(&mut self, bytes: Option<usize>) -> &mut Self {
        self.zc_pool_ceiling = bytes;
        self
    }

    /// Whether workers restart zero-copy receives the kernel may have left parked:
    /// Linux 7.1 can leave a multishot RECV_ZC armed without a completion once its area
    /// ran dry, and chunks given back do not wake it, so a connection whose peer has
    /// filled its window stalls for good. Restarting cancels the worker's zero-copy
    /// receives when returns end a shortage (they arm again at once and take the
    /// queued data), counted in
    /// [`WorkerMetricsSnapshot::recv_zc_restarts`](crate::WorkerMetricsSnapshot::recv_zc_restarts).
    /// Default: on where the kernel lacks zcrx events (Linux 7.2 added them and ends
    /// such a receive with `ENOMEM`), which is what tells a 7.1 kernel.
    pub fn zero_copy_restarts(&mut self, on: bool) -> &mut Self {
        self.explicit.push("ZERORX_ZC_RESTARTS");
        self.zc_restarts = Some(on);
        self
    }

    /// Bytes per receive buffer (default 64 KiB). For zero-copy pools, sizes above the
    /// page size need Linux 7.0 and driver support and fall back to the page size.
    pub fn chunk_size(&mut self, bytes: u32) -> &mut Self {
        self.explicit.push("ZERORX_CHUNK_SIZE");
        self.chunk_size = bytes;
        self
    }

    /// Incremental buffer consumption in the copy pool (`IOU_PBUF_RING_INC`, Linux
    /// 6.12): a receive uses only the bytes it got, so small messages from many
    /// connections share one buffer. Default: on where the kernel has it. Forcing it on
    /// where the kernel lacks it makes `build()` fail with the kernel's error.
    pub fn incremental_buffers(&mut self, on: bool) -> &mut Self {
        self.explicit.push("ZERORX_INCREMENTAL_BUFFERS");
        self.incremental = Some(on);
        self
    }

    /// Arms copy receives as bundles (`IORING_RECVSEND_BUNDLE`, Linux 6.10): one
    /// completion covers several buffers. Ignored with incremental buffers, which
    /// already fill one buffer with many receives. Off by default.
    pub fn recv_bundles(&mut self, on: bool) -> &mut Self {
        self.explicit.push("ZERORX_RECV_BUNDLES");
        self.recv_bundles = on;
        self
    }

    /// When a worker blocks, wait for up to `events` completions, but return with
    /// fewer once `max_delay` has passed since the first (`IORING_FEAT_MIN_TIMEOUT`,
    /// Linux 6.12): fewer wake-ups under moderate load, at up to `max_delay` of added
    /// latency. Off by default; `build()` fails on kernels without it.
    pub fn completion_batch(&mut self, events: u32, max_delay: Duration) -> &mut Self {
        self.explicit.push("ZERORX_COMPLETION_BATCH");
        self.wait_batch = Some((events, max_delay));
        self
    }

    /// NAPI busy polling (`IORING_REGISTER_NAPI`, Linux 6.9+ with
    /// `CONFIG_NET_RX_BUSY_POLL`): when a worker waits, the kernel polls the NIC queues
    /// of the sockets it receives on for up to `timeout` before sleeping, trading CPU
    /// for latency; `prefer` also defers the NIC's interrupts while busy polling. Off by
    /// default; `build()` fails with the kernel's refusal named when it is not
    /// available. Whether it is on shows in [`Handle::ring_flags`](crate::Handle::ring_flags).
    pub fn busy_poll(&mut self, timeout: Duration, prefer: bool) -> &mut Self {
        self.explicit.push("ZERORX_BUSY_POLL");
        self.busy_poll = Some((timeout, prefer));
        self
    }

    /// The pool [`UdpSocket::recv_pooled`](crate::net::UdpSocket::recv_pooled)
    /// receives datagrams into, registered by each worker at first use (default 64 ×
    /// 2 KiB; larger datagrams arrive truncated and say so). Its `group_id` must differ
    /// from the copy pool's (0); `incremental` is ignored (datagrams take whole
    /// buffers). `None`: no pooled datagram receives.
    pub fn udp_pool(&mut self, config: Option<CopyPoolConfig>) -> &mut Self {
        self.udp_pool = config;
        self
    }

    /// Bytes of receive pool one stream may fill before its task takes them (default:
    /// an eighth of the worker's pool, at least one buffer; `0`: no limit). A stream
    /// whose task stops calling `recv` (e.g. while it waits to send to a peer that does
    /// not read) has its multishot receive stopped once it holds more than this and
    /// armed again when the task has taken everything: the rest waits in the socket
    /// and TCP slows that one peer down, instead of the stream draining the pool the
    /// worker's other streams receive into. Buffers of a non-incremental pool count
    /// whole. Where it can (Linux 6.17) the kernel ends each receive after this many
    /// bytes (so a stream whose task keeps up re-arms once per that many bytes);
    /// elsewhere the receive is cancelled when a completion crosses the limit, and may
    /// overshoot by what the kernel delivered meanwhile. Counted in
    /// [`RearmCounts::budget`](crate::RearmCounts::budget).
    pub fn recv_hold_limit(&mut self, bytes: u32) -> &mut Self {
        self.recv_hold_limit = Some(bytes);
        self
    }

    /// When queued sends go out zero-copy (default: [`SendZeroCopy::Auto`] above
    /// 16 KiB, so a socket on which the kernel copies anyway stops after one). Queued
    /// sends are those of [`Connection::queue_send`](crate::net::Connection::queue_send),
    /// which the Thrift server's replies use.
    pub fn send_zero_copy(&mut self, policy: SendZeroCopy) -> &mut Self {
        self.explicit.push("ZERORX_SEND_ZC");
        self.send_zc = policy;
        self
    }

    /// Bytes of each worker's registered send arena (default 4 MiB; `0`: none), the
    /// memory [`RegisteredBuf`](crate::runtime::RegisteredBuf)s come from: registered
    /// with the ring when the worker's first one is made, in whole
    /// [`REGISTERED_CHUNK`](crate::runtime::REGISTERED_CHUNK)s (at least one).
    pub fn send_arena(&mut self, bytes: usize) -> &mut Self {
        self.explicit.push("ZERORX_SEND_ARENA");
        self.send_arena = bytes;
        self
    }

    /// The most memory one worker's receives may hold (default: twice
    /// [`pool_size`](Self::pool_size), at least 64 MiB): its pools (the copy pool and
    /// the first area of a zero-copy pool it owns) and the ordinary memory it receives
    /// into while the application holds the pools' buffers.
    ///
    /// Received buffers that the application keeps (a decoded field it stores, a frame
    /// queued behind a slow peer) keep their pool chunks from the kernel. When a
    /// stream's receive finds the pool dry, it does not wait for buffers that may never
    /// come back: it receives into a heap buffer instead (the same [`RxBuf`](zcrx::RxBuf),
    /// freed when dropped; counted in [`WorkerMetricsSnapshot::recv_overflows`](crate::WorkerMetricsSnapshot::recv_overflows)
    /// and the pool's `overflow_*` figures; a warning names the pinning). Once that
    /// memory reaches the limit, the receive waits for buffers or room for
    /// [`receive_memory_wait`](Self::receive_memory_wait) and then fails with
    /// `OutOfMemory` naming the limit, so the connection ends with a reason instead of
    /// hanging. A limit below the pools makes [`build`](Self::build) fail; a limit
    /// equal to them receives only into the pools.
    pub fn receive_memory_limit(&mut self, bytes: usize) -> &mut Self {
        self.explicit.push("ZERORX_RECV_MEMORY_LIMIT");
        self.recv_memory_limit = Some(bytes);
        self
    }

    /// How long a receive waits at the [receive memory
    /// limit](Self::receive_memory_limit) for buffers or room to come back before it
    /// fails with `OutOfMemory` (default 2 s).
    pub fn receive_memory_wait(&mut self, wait: Duration) -> &mut Self {
        self.recv_memory_wait = wait;
        self
    }

    /// The most threads the runtime's blocking pool runs at once (default 512); jobs
    /// of [`spawn_blocking`](crate::spawn_blocking) beyond them wait in its queue. One
    /// pool serves all workers; threads start as jobs need them.
    pub fn max_blocking_threads(&mut self, n: usize) -> &mut Self {
        self.explicit.push("ZERORX_MAX_BLOCKING_THREADS");
        self.max_blocking_threads = n;
        self
    }

    /// How long a blocking-pool thread with nothing to do waits for a job before it
    /// leaves (default 10 s).
    pub fn blocking_keep_alive(&mut self, idle: Duration) -> &mut Self {
        self.explicit.push("ZERORX_BLOCKING_KEEP_ALIVE");
        self.blocking_keep_alive = idle;
        self
    }

    /// The blocking pool's limits.
    pub(crate) fn blocking_config(&self) -> crate::blocking::BlockingConfig {
        crate::blocking::BlockingConfig {
            max_threads: self.max_blocking_threads,
            keep_alive: self.blocking_keep_alive,
        }
    }

    /// The default [`receive_memory_limit`](Self::receive_memory_limit).
    fn default_memory_limit(&self) -> usize {
        self.pool_bytes.saturating_mul(2).max(64 << 20)
    }

    /// Sets each worker's copy pool exactly, overriding [`pool_size`](Self::pool_size)
    /// and [`chunk_size`](Self::chunk_size) for it. `None` registers no copy pool; copy
    /// receives then fail with `Unsupported` (`recv_into` still works).
    pub fn copy_pool(&mut self, config: Option<CopyPoolConfig>) -> &mut Self {
        self.copy_pool = match config {
            Some(c) => CopyPoolChoice::Explicit(c),
            None => CopyPoolChoice::Off,
        };
        self
    }

    /// The copy pool each worker will register, as configured now.
    pub fn copy_pool_config(&self) -> io::Result<Option<CopyPoolConfig>> {
        match &self.copy_pool {
            CopyPoolChoice::Off => Ok(None),
            CopyPoolChoice::Explicit(c) => Ok(Some(c.clone())),
            CopyPoolChoice::Sized => {
                if self.chunk_size == 0 || self.pool_bytes < self.chunk_size as usize {
                    return Err(invalid(format!(
                        "pool_size ({} bytes) must hold at least one chunk of chunk_size ({} \
                         bytes), and chunk_size must not be 0",
                        self.pool_bytes, self.chunk_size
                    )));
                }
                // A provided-buffer ring has a power-of-two number of entries.
                let n = (self.pool_bytes / self.chunk_size as usize).min(32768);
                let buffers = 1u16 << (usize::BITS - 1 - n.leading_zeros());
                let incremental = match self.incremental {
                    Some(on) => on,
                    None => zcrx::probe::incremental_buffers(),
                };
                Ok(Some(CopyPoolConfig {
                    buffers,
                    buffer_size: self.chunk_size,
                    incremental,
                    ..CopyPoolConfig::default()
                }))
            }
        }
    }

    /// How long dropping the runtime waits for in-flight ops to finish.
    pub fn shutdown_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// Starts the runtime: builds worker 0's ring on this thread and starts the other
    /// workers, each building its own ring. Any failure is returned; nothing is left
    /// running.
    pub fn build(&self) -> io::Result<Runtime> {
        let (resolved, tuning) = self.resolve(&|v| std::env::var(v).ok())?;
        resolved.build_with(tuning)
    }

    /// The value each tunable setting would take in this environment, and where it
    /// comes from (the code's explicit setting, a `ZERORX_*` variable, or the
    /// default); an unparsable variable is an error naming it. The same values
    /// [`build`](Self::build) uses; [`Handle::tuning`](crate::Handle::tuning) reports them for a running
    /// runtime.
    pub fn tuning(&self) -> io::Result<Vec<Setting>> {
        self.resolve(&|v| std::env::var(v).ok()).map(|(_, t)| t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::tuning::{self, Source};

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |v| {
            pairs
                .iter()
                .find(|(k, _)| *k == v)
                .map(|(_, x)| x.to_string())
        }
    }

    fn source_of<'a>(settings: &'a [Setting], name: &str) -> (&'a str, Source) {
        let s = settings
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("{name} missing from {settings:?}"));
        (s.value.as_str(), s.source)
    }

    #[test]
    fn the_code_wins_then_the_environment_then_the_default() {
        let mut b = Builder::new();
        b.threads(2);
        let (resolved, t) = b
            .resolve(&env(&[
                ("ZERORX_THREADS", "3"),
                ("ZERORX_WAKE", "msg-ring"),
                ("ZERORX_POOL_SIZE", "8M"),
                ("ZERORX_BUSY_POLL", "50us,prefer"),
                ("ZERORX_RECEIVE_MODE", " "),
                ("ZERORX_INCREMENTAL_BUFFERS", "off"),
                ("ZERORX_RECV_BUNDLES", "on"),
                ("ZERORX_COMPLETION_BATCH", "16,50us"),
                ("ZERORX_RECV_MEMORY_LIMIT", "128M"),
                ("ZERORX_MAX_BLOCKING_THREADS", "8"),
                ("ZERORX_BLOCKING_KEEP_ALIVE", "500ms"),
                ("ZERORX_SEND_ZC", "always,4K"),
            ]))
            .expect("valid");
        assert_eq!(
            source_of(&t, "receive_memory_limit"),
            ("134217728", Source::Environment)
        );
        assert_eq!(resolved.recv_memory_limit, Some(128 << 20));
        assert_eq!(
            source_of(&t, "max_blocking_threads"),
            ("8", Source::Environment)
        );
        assert_eq!(
            source_of(&t, "blocking_keep_alive"),
            ("500ms", Source::Environment)
        );
        assert_eq!(resolved.blocking_keep_alive, Duration::from_millis(500));
        assert_eq!(
            source_of(&t, "send_zero_copy"),
            ("always,4096", Source::Environment)
        );
        assert_eq!(resolved.send_zc, SendZeroCopy::Always { threshold: 4096 });
        assert_eq!(
            source_of(&t, "incremental_buffers"),
            ("off", Source::Environment)
        );
        assert_eq!(source_of(&t, "recv_bundles"), ("on", Source::Environment));
        assert_eq!(
            source_of(&t, "completion_batch"),
            ("16,50µs", Source::Environment)
        );
        assert_eq!(resolved.incremental, Some(false));
        assert!(resolved.recv_bundles);
        assert_eq!(resolved.wait_batch, Some((16, Duration::from_micros(50))));
        assert_eq!(t.len(), tuning::VARIABLES.len());
        assert_eq!(source_of(&t, "threads"), ("2", Source::Code));
        assert_eq!(source_of(&t, "wake"), ("msg-ring", Source::Environment));
        assert_eq!(source_of(&t, "pool_size"), ("8388608", Source::Environment));
        assert_eq!(
            source_of(&t, "busy_poll"),
            ("50µs,prefer", Source::Environment)
        );
        assert_eq!(
            source_of(&t, "receive_mode"),
            ("auto", Source::Default),
            "blank is unset"
        );
        assert_eq!(source_of(&t, "ring_entries"), ("256", Source::Default));
        assert_eq!(resolved.threads, Some(2));
        assert_eq!(resolved.wake, WakeMode::MsgRing);
        assert_eq!(resolved.pool_bytes, 8 << 20);
        assert_eq!(resolved.busy_poll, Some((Duration::from_micros(50), true)));
    }

    #[test]
    fn a_bad_variable_fails_the_build_with_its_name() {
        for (pairs, variable) in [
            (&[("ZERORX_POOL_SIZE", "lots")][..], "ZERORX_POOL_SIZE"),
            (&[("ZERORX_THREADS", "0")][..], "ZERORX_THREADS"),
            (&[("ZERORX_CHUNK_SIZE", "8G")][..], "ZERORX_CHUNK_SIZE"),
            (
                &[("ZERORX_COMPLETION_BATCH", "16")][..],
                "ZERORX_COMPLETION_BATCH",
            ),
            (
                &[("ZERORX_INCREMENTAL_BUFFERS", "yes")][..],
                "ZERORX_INCREMENTAL_BUFFERS",
            ),
            (
                &[("ZERORX_RECEIVE_MODE", "zerocopy")][..],
                "ZERORX_RECEIVE_MODE",
            ),
            (
                &[("ZERORX_RECV_MEMORY_LIMIT", "plenty")][..],
                "ZERORX_RECV_MEMORY_LIMIT",
            ),
            (
                &[("ZERORX_MAX_BLOCKING_THREADS", "0")][..],
                "ZERORX_MAX_BLOCKING_THREADS",
            ),
            (
                &[("ZERORX_BLOCKING_KEEP_ALIVE", "soon")][..],
                "ZERORX_BLOCKING_KEEP_ALIVE",
            ),
            (&[("ZERORX_SEND_ZC", "sometimes")][..], "ZERORX_SEND_ZC"),
        ] {
            let pairs: &'static [(&'static str, &'static str)] = pairs;
            let err = Builder::new().resolve(&env(pairs)).expect_err(variable);
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
            assert!(err.to_string().contains(variable), "{err}");
        }
        // The same value set in code is not the environment's business.
        let mut b = Builder::new();
        b.pool_size(1 << 20);
        let (_, t) = b
            .resolve(&env(&[("ZERORX_POOL_SIZE", "lots")]))
            .expect("the code's value wins; the bad variable is never read");
        assert_eq!(source_of(&t, "pool_size"), ("1048576", Source::Code));
    }

    #[test]
    fn a_runtime_reports_the_values_it_was_built_with() {
        let mut b = Builder::new();
        b.threads(1).ring_entries(64);
        let rt = b.build().expect("runtime");
        let t = rt.handle().tuning();
        assert_eq!(source_of(t, "threads"), ("1", Source::Code));
        assert_eq!(source_of(t, "ring_entries"), ("64", Source::Code));
        assert_eq!(source_of(t, "cq_entries").0, "4 × ring_entries");
    }
}
