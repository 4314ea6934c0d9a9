//! The `Bench` service on volo-thrift, for zerorx's RPC benchmark: handlers doing
//! what bench.thrift says (as zerorx's and the tokio peer's do), served by volo's
//! default server (TTHeader/framed detection) on a tokio runtime with the same
//! number of worker threads as the other servers.
//!
//! usage: volo-bench-server PORT THREADS

mod gen {
    include!(concat!(env!("OUT_DIR"), "/bench_gen.rs"));
}

use gen::bench_gen::zerorx_bench::{Bench, BenchFailException, BenchServer, Overloaded, Payload};
use pilota::{Bytes, FastStr};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;
use volo_thrift::{MaybeException, ServerError};

#[derive(Default)]
struct Handlers {
    fired: AtomicI64,
}

impl Bench for Handlers {
    async fn echo(&self, data: Bytes) -> Result<Bytes, ServerError> {
        Ok(data)
    }

    async fn roundtrip(&self, p: Payload) -> Result<Payload, ServerError> {
        Ok(p)
    }

    async fn add(&self, a: i64, b: i64) -> Result<i64, ServerError> {
        Ok(a.wrapping_add(b))
    }

    async fn sum(&self, values: Vec<i64>) -> Result<i64, ServerError> {
        Ok(values.iter().fold(0i64, |s, v| s.wrapping_add(*v)))
    }

    async fn sleep_ms(&self, ms: i32) -> Result<(), ServerError> {
        tokio::time::sleep(Duration::from_millis(ms.max(0) as u64)).await;
        Ok(())
    }

    async fn fire(&self, _data: Bytes) -> Result<(), ServerError> {
        self.fired.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    async fn fired(&self) -> Result<i64, ServerError> {
        Ok(self.fired.load(Ordering::Relaxed))
    }

    async fn fail(
        &self,
        reason: FastStr,
    ) -> Result<MaybeException<(), BenchFailException>, ServerError> {
        Ok(MaybeException::Exception(BenchFailException::O(Overloaded {
            reason: Some(reason),
            retry_after_ms: Some(7),
        })))
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(port), Some(threads)) = (
        args.get(1).and_then(|p| p.parse::<u16>().ok()),
        args.get(2).and_then(|t| t.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: volo-bench-server PORT THREADS");
        std::process::exit(2);
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build()
        .expect("tokio runtime");
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    rt.block_on(async move {
        if let Err(e) = BenchServer::new(Handlers::default())
            .run(volo::net::Address::from(addr))
            .await
        {
            eprintln!("volo-bench-server: {e}");
            std::process::exit(1);
        }
    });
}
