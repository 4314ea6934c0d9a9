//! Cost of the executor and driver hot paths, single worker:
//! - spawn + await of trivial local tasks;
//! - spawn_on from a foreign thread, in batches, awaited on that thread;
//! - NOP ops through the driver (push, one enter per batch, dispatch, wake).
//!
//! `cargo run --release --example spawn_bench`

use std::time::Instant;
use zerorx::bench_support::{Op, OpCode};
use zerorx::{spawn, Runtime};

struct Nop;

// SAFETY: a NOP references no memory and no fd.
unsafe impl OpCode for Nop {
    fn create_entry(&mut self) -> io_uring::squeue::Entry {
        io_uring::opcode::Nop::new().build()
    }
}

fn main() -> std::io::Result<()> {
    let rt = Runtime::builder().threads(2).build()?;
    let n = 1_000_000u64;
    let t = Instant::now();
    let sum = rt.block_on(async move {
        let mut sum = 0;
        for chunk in 0..(n / 1000) {
            let hs: Vec<_> = (0..1000)
                .map(|i| spawn(async move { chunk * 1000 + i }))
                .collect();
            for h in hs {
                sum += h.await.unwrap_or(0);
            }
        }
        sum
    });
    assert_eq!(sum, n * (n - 1) / 2);
    println!(
        "local spawn+await:      {:>7.0} ns/task",
        t.elapsed().as_nanos() as f64 / n as f64
    );

    let h = rt.handle().clone();
    let m = 200_000u64;
    let t = Instant::now();
    let done = std::thread::spawn(move || {
        let hs: Vec<_> = (0..m).map(|i| h.spawn_on(1, async move { i })).collect();
        let mut s = 0;
        for j in hs {
            // Cheap wait: the results are in long before we get here for most tasks.
            while !j.is_finished() {
                std::thread::yield_now();
            }
            s += futures_lite_poll(j);
        }
        s
    })
    .join()
    .expect("spawner");
    assert_eq!(done, m * (m - 1) / 2);
    println!(
        "spawn_on (foreign):     {:>7.0} ns/task",
        t.elapsed().as_nanos() as f64 / m as f64
    );

    let ops = 1_000_000u64;
    let t = Instant::now();
    rt.block_on(async move {
        for _ in 0..(ops / 256) {
            let batch: Vec<_> = (0..256)
                .map(|_| Op::submit(Nop))
                .collect::<Result<_, _>>()?;
            for op in batch {
                op.await?;
            }
        }
        Ok::<_, std::io::Error>(())
    })?;
    println!(
        "NOP op (batches of 256): {:>6.0} ns/op",
        t.elapsed().as_nanos() as f64 / ops as f64
    );
    let w = &rt.handle().metrics()[0];
    println!(
        "worker 0: {} enters, {} SQEs, {} CQEs",
        w.enter_calls, w.sqes_submitted, w.cqes
    );
    Ok(())
}

/// Takes the value of a finished JoinHandle without an executor.
fn futures_lite_poll(j: zerorx::JoinHandle<u64>) -> u64 {
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let mut j = std::pin::pin!(j);
    match j.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(v) => v.unwrap_or(0),
        std::task::Poll::Pending => 0,
    }
}

use std::future::Future;
