//! The `Bench` service's handlers, doing what `bench.thrift` says.

use super::types::{
    AddArgs, EchoArgs, FailArgs, FailResult, FireArgs, FiredArgs, Overloaded, RoundtripArgs,
    SleepMsArgs, SumArgs,
};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use zerorx_thrift::server::ServerBuilder;
use zerorx_thrift::{Returns, Void};

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

/// Adds the `Bench` methods to `builder`, sharing `state`.
pub fn register(builder: ServerBuilder, state: Arc<BenchState>) -> ServerBuilder {
    let fire_state = state.clone();
    builder
        .method("echo", |a: EchoArgs| async move { Ok(Returns(a.data)) })
        .method(
            "roundtrip",
            |a: RoundtripArgs| async move { Ok(Returns(a.p)) },
        )
        .method("add", |a: AddArgs| async move {
            Ok(Returns(a.a.wrapping_add(a.b)))
        })
        .method("sum", |a: SumArgs| async move {
            Ok(Returns(
                a.values.iter().fold(0i64, |s, v| s.wrapping_add(*v)),
            ))
        })
        .method("sleep_ms", |a: SleepMsArgs| async move {
            // A negative duration sleeps for no time.
            zerorx::time::sleep(Duration::from_millis(a.ms.max(0) as u64)).await;
            Ok(Void)
        })
        .oneway("fire", move |_: FireArgs| {
            fire_state.fired.fetch_add(1, Ordering::Relaxed);
            async {}
        })
        .method("fired", move |_: FiredArgs| {
            let n = state.fired();
            async move { Ok(Returns(n)) }
        })
        .method("fail", |a: FailArgs| async move {
            Ok(FailResult::Overloaded(Overloaded {
                reason: a.reason,
                retry_after_ms: RETRY_AFTER_MS,
            }))
        })
}
