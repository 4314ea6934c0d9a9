//! The store example as a test: a handler that keeps what it decodes serves every
//! `put`, keeping all entries or every 64th, with the kept entries detached; and one
//! that keeps the decoded slices as they are is never a silent hang: it is served
//! beside its pinned pool, within the receive memory limit, and at the limit either
//! closed with the reason counted or still served.

use zerorx_thrift_test::store::{run_puts, Keep, PutReport, PutRun};

/// One run at a time: each reads the process's RSS.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run(puts: u64, keep: Keep, detach: bool, memory_limit: Option<usize>) -> PutReport {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    run_puts(&PutRun {
        puts,
        depth: 32,
        value_len: 100,
        keep,
        detach,
        memory_limit,
    })
    .expect("the store example runs")
}

/// Debug builds are slow: enough puts to pin the 4 MiB pool many times over.
const PUTS: u64 = 120_000;

fn served_within_memory(keep: Keep, kept: usize) {
    let r = run(PUTS, keep, true, None);
    assert_eq!((r.answered, r.failed), (PUTS, 0), "{r:?}");
    assert_eq!(r.kept_entries, kept, "{r:?}");
    assert_eq!(
        r.kept_bytes,
        kept as u64 * 116,
        "16-byte keys, 100-byte values"
    );
    assert_eq!(
        (r.memory_refusals, r.receive_memory_closes),
        (0, 0),
        "{r:?}"
    );
    assert_eq!(
        r.overflow_held, 0,
        "detached entries hold no receive memory: {r:?}"
    );
    // What the process grew by is the map and its entries, not pinned receive
    // chunks: 120k entries pinning a 64 KiB chunk each would be 7 GiB.
    let grown = r.rss_after.saturating_sub(r.rss_before);
    assert!(
        grown < 5 * r.kept_bytes + (48 << 20),
        "RSS grew {grown} bytes for {} kept: {r:?}",
        r.kept_bytes
    );
}

#[test]
fn a_store_keeping_every_detached_entry_serves_every_put() {
    served_within_memory(Keep::All, PUTS as usize);
}

#[test]
fn a_store_keeping_every_64th_detached_entry_serves_every_put() {
    served_within_memory(Keep::EveryNth(64), (PUTS / 64) as usize);
}

#[test]
fn a_store_keeping_slices_is_served_beside_its_pool_within_its_limit() {
    // Within a generous limit: every put served, the pinned pool bypassed.
    let r = run(40_000, Keep::All, false, Some(256 << 20));
    assert_eq!((r.answered, r.failed), (40_000, 0), "{r:?}");
    assert!(r.overflow_receives > 0 && r.overflow_held > 0, "{r:?}");
    // A limit of the pool and 1 MiB: never a hang, never past the limit. Either the
    // connection is closed at it with the reason counted, or (when the receives beside
    // the pool have shrunk to the room left, so requests span them and the server
    // copies each once) every put is still served. Which one depends on timing; the
    // refusal itself is tested deterministically in zerorx's tests/pool_pressure.rs.
    let allowance = 1u64 << 20;
    let started = std::time::Instant::now();
    let r = run(
        200_000,
        Keep::All,
        false,
        Some((4 << 20) + allowance as usize),
    );
    assert!(r.overflow_held <= allowance, "{r:?}");
    let closed = r.failed > 0 && r.memory_refusals >= 1 && r.receive_memory_closes >= 1;
    let served = r.answered == 200_000 && r.failed == 0;
    assert!(closed || served, "{r:?}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(90),
        "{r:?}"
    );
}
