//! The `Bench` service's handlers, doing what `bench.thrift` says.

use super::generated::zerorx_bench::bench::FailException;
use super::generated::zerorx_bench::{Bench, BenchServer, Overloaded, Payload};
use bytes::Bytes;
use std::future::Future;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use zerorx_thrift::server::ServerBuilder;
use zerorx_thrift::{ApplicationException, HandlerError, Utf8Bytes};

/// State shared by the handlers on every worker.
#[derive(Debug, Default)]
pub struct BenchState {
    fired: AtomicI64,
}

impl BenchState {
    /// `fire` calls processed so far.
    pub fn fired(&self) -> i64 {
        self.fired.load(Ordering::Relaxed)
    }
}

/// The `retry_after_ms` every `fail` throws.
pub const RETRY_AFTER_MS: i32 = 7;

/// The reference handlers of [`Bench`].
#[derive(Debug, Default)]
pub struct BenchHandlers {
    state: Arc<BenchState>,
}

impl BenchHandlers {
    /// Handlers counting `fire` calls in `state`.
    pub fn new(state: Arc<BenchState>) -> BenchHandlers {
        BenchHandlers { state }
    }
}

type Reply<T> = Result<T, ApplicationException>;

impl Bench for BenchHandlers {
    fn echo(&self, data: Bytes) -> impl Future<Output = Reply<Bytes>> + use<> {
        async move { Ok(data) }
    }

    fn roundtrip(&self, p: Payload) -> impl Future<Output = Reply<Payload>> + use<> {
        async move { Ok(p) }
    }

    fn add(&self, a: i64, b: i64) -> impl Future<Output = Reply<i64>> + use<> {
        async move { Ok(a.wrapping_add(b)) }
    }

    fn sum(&self, values: Vec<i64>) -> impl Future<Output = Reply<i64>> + use<> {
        async move { Ok(values.iter().fold(0i64, |s, v| s.wrapping_add(*v))) }
    }

    fn sleep_ms(&self, ms: i32) -> impl Future<Output = Reply<()>> + use<> {
        async move {
            // A negative duration sleeps for no time.
            zerorx::time::sleep(Duration::from_millis(ms.max(0) as u64)).await;
            Ok(())
        }
    }

    fn fire(&self, _data: Bytes) -> impl Future<Output = ()> + use<> {
        self.state.fired.fetch_add(1, Ordering::Relaxed);
        async {}
    }

    fn fired(&self) -> impl Future<Output = Reply<i64>> + use<> {
        let n = self.state.fired();
        async move { Ok(n) }
    }

    fn fail(
        &self,
        reason: Utf8Bytes,
    ) -> impl Future<Output = Result<(), HandlerError<FailException>>> + use<> {
        async move {
            Err(Overloaded {
                reason,
                retry_after_ms: RETRY_AFTER_MS,
            }
            .into())
        }
    }
}

/// Adds the `Bench` methods to `builder`, sharing `state`.
pub fn register(builder: ServerBuilder, state: Arc<BenchState>) -> ServerBuilder {
    builder.service(BenchServer::new(BenchHandlers::new(state)))
}
