//! zerorx: a thread-per-core networking runtime built on io_uring zero-copy receive.
//!
//! - [`doctor`]: the `zerorx doctor` report of what the kernel and NICs can do.
//! - [`runtime`]: receive modes, tuning, the state dump ([`Handle::dump`]).
//! - [`net`]: TCP, UDP and Unix domain sockets (a stream of either kind is a
//!   [`net::Connection`]); [`net::FrameReader`] cuts length-prefixed frames out of
//!   the received buffers as [`net::BytesChain`]s (no copy), [`net::RecvStream`] is a
//!   `Stream` of buffers and [`net::Compat`] speaks futures-io `AsyncRead`/`AsyncWrite`;
//!   [`net::TcpStream::connect`] takes names too.
//! - [`spawn_blocking`]: blocking work on the runtime's bounded thread pool.
//! - [`signal`]: `ctrl_c()` and signal streams on any worker's ring.
//! - [`fs`]: files over the ring.
//!
//! Each worker thread owns one ring, a local task queue and a timer heap; tasks never
//! migrate. See `DESIGN.md` for the op lifecycle and who owns what memory.
//!
//! The roles above the runtime are crates of their own that use only this public API:
//! `zerorx-thrift` (Apache Thrift server and client), `zerorx-fabric` (the RDMA-style
//! message API) and `zerorx-cli` (the `zerorx` command and its reference service).
//!
//! ```no_run
//! let rt = zerorx::Runtime::builder().threads(2).build()?;
//! let out = rt.block_on(async {
//!     let h = zerorx::spawn(async { 40 + 2 });
//!     zerorx::time::sleep(std::time::Duration::from_millis(1)).await;
//!     h.await
//! });
//! assert_eq!(out.ok(), Some(42));
//! # Ok::<(), std::io::Error>(())
//! ```

pub(crate) mod blocking;
pub mod doctor;
pub(crate) mod driver;
pub(crate) mod executor;
pub mod fs;
#[cfg(feature = "hyper")]
pub mod hyper;
pub(crate) mod metrics;
pub mod net;
pub(crate) mod ops;
pub mod runtime;
pub mod signal;
pub(crate) mod thread_slot;
pub mod time;
#[cfg(feature = "rustls")]
pub mod tls;
pub(crate) mod wake;

pub use executor::{spawn, yield_now, JoinError, JoinHandle};
pub use metrics::{RearmCounts, WorkerMetricsSnapshot};
pub use runtime::{spawn_blocking, Builder, Handle, ReceiveMode, Runtime, SendZeroCopy};
pub use time::{sleep, sleep_until, timeout};
pub use wake::WakeMode;
pub use zcrx;
/// Runs `async fn main` on a zerorx runtime: `#[zerorx::main]`, or with arguments
/// `#[zerorx::main(threads = 2, receive_mode = "copy")]` (any `ZERORX_RECEIVE_MODE`
/// text). The environment's `ZERORX_*` settings apply to what the arguments leave unset.
///
/// ```no_run
/// #[zerorx::main(threads = 2)]
/// async fn main() -> std::io::Result<()> {
///     let listener = zerorx::net::TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
///     println!("listening on {}", listener.local_addr()?);
///     Ok(())
/// }
/// ```
pub use zerorx_macros::main;
/// Runs an `async fn` test on a runtime of its own, one worker unless `threads = N`:
/// `#[zerorx::test]`, `#[zerorx::test(threads = 2, receive_mode = "copy")]`.
pub use zerorx_macros::test;

/// The driver's op interface, for the `spawn_bench` example that times raw ops
/// through the ring. Not a stable API: it changes with the driver.
#[doc(hidden)]
pub mod bench_support {
    pub use crate::driver::OpCode;
    pub use crate::runtime::op::Op;
}
