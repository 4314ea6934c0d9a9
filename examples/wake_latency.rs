//! spawn_on round-trip latency for both wake modes:
//! - foreign thread → worker 1 → foreign thread (eventfd write or SEND_MSG_RING syscall);
//! - worker 0 → worker 1 → worker 0 (eventfd write, or MSG_RING from worker 0's ring).
//!
//! `cargo run --release --example wake_latency [rounds]`. The target worker parks
//! between requests (each request waits for the previous reply), so every round trip
//! includes a real wake-up.

use std::time::{Duration, Instant};
use zerorx::{Runtime, WakeMode};

fn summary(name: &str, mut v: Vec<Duration>) {
    v.sort();
    let p = |q: f64| v[((v.len() as f64 * q) as usize).min(v.len() - 1)].as_secs_f64() * 1e6;
    println!(
        "{name:<34} n={:<6} p50={:>7.1}us p90={:>7.1}us p99={:>7.1}us",
        v.len(),
        p(0.5),
        p(0.9),
        p(0.99)
    );
}

fn main() -> std::io::Result<()> {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    for mode in [
        WakeMode::EventFd,
        WakeMode::MsgRing,
        WakeMode::EventFd,
        WakeMode::MsgRing,
    ] {
        let rt = Runtime::builder().threads(2).wake(mode).build()?;
        let h = rt.handle().clone();
        // Foreign thread round trips.
        let h2 = h.clone();
        let foreign = std::thread::spawn(move || {
            let mut lat = Vec::with_capacity(rounds);
            for _ in 0..rounds {
                let t = Instant::now();
                futures_executor::block_on(h2.spawn_on(1, async {})).expect("task");
                lat.push(t.elapsed());
            }
            lat
        })
        .join()
        .expect("foreign thread");
        // Worker 0 → worker 1 round trips.
        let h3 = h.clone();
        let worker = rt.block_on(async move {
            let mut lat = Vec::with_capacity(rounds);
            for _ in 0..rounds {
                let t = Instant::now();
                h3.spawn_on(1, async {}).await.expect("task");
                lat.push(t.elapsed());
            }
            lat
        });
        let m = h.metrics();
        summary(&format!("{mode:?} foreign->w1->foreign"), foreign);
        summary(&format!("{mode:?} w0->w1->w0"), worker);
        println!(
            "  wakeups sent/received: w0 {}/{}  w1 {}/{}",
            m[0].wakeups_sent, m[0].wakeups_received, m[1].wakeups_sent, m[1].wakeups_received
        );
    }
    Ok(())
}
