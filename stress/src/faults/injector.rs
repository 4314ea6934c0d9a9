//! Starts fault actions of one kind at a steady rate until the run stops.

use super::actions::{act, Ctx};
use super::FaultSpec;
use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Most actions of one kind running at once (one burst at a time); beyond it an
/// injection is skipped and counted, which itself says the server is slow to react.
fn cap(spec: &FaultSpec) -> usize {
    match spec.kind {
        super::FaultKind::Burst => 1,
        _ => 32,
    }
}

/// Injects `spec.kind` every `1 / spec.rate` seconds, then waits for the actions still
/// running.
pub async fn run_injector(spec: FaultSpec, cx: Ctx) {
    let cx = Rc::new(cx);
    let interval = Duration::from_secs_f64(1.0 / spec.rate);
    let mut next = Instant::now() + interval / 2;
    let running = Rc::new(Cell::new(0usize));
    let mut tasks = Vec::new();
    loop {
        while Instant::now() < next && !cx.run.stopping() {
            let left = next.saturating_duration_since(Instant::now());
            zerorx::sleep(left.min(Duration::from_millis(100))).await;
        }
        if cx.run.stopping() {
            break;
        }
        next += interval;
        if running.get() >= cap(&spec) {
            cx.stats.skipped(spec.kind);
            continue;
        }
        running.set(running.get() + 1);
        cx.stats.attempted(spec.kind);
        let (cx2, running2) = (cx.clone(), running.clone());
        tasks.push(zerorx::spawn(async move {
            let outcome = act(spec.kind, cx2.clone()).await;
            cx2.stats.finished(spec.kind, outcome);
            running2.set(running2.get() - 1);
        }));
        tasks.retain(|t| !t.is_finished());
    }
    for t in tasks {
        let _ = t.await;
    }
}
