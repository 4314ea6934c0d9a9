//! Waiting for the server to see every connection of a run end, and naming what
//! is still open when it does not.

use crate::embedded::EmbeddedServer;
use crate::server::stats::ServerSnapshot;
use std::time::{Duration, Instant};
use zerorx::Runtime;

/// How long the server may take to see every connection end. It normally takes
/// milliseconds; the bound only keeps a run from hanging on a connection that never
/// closes (the note then names it), with room for a loaded machine.
const SETTLE_LIMIT: Duration = Duration::from_secs(10);

/// How long an external server may take to process the oneway calls still on their
/// way when the run ends (they need no connection to close, only to be read).
pub(super) const FIRED_LIMIT: Duration = Duration::from_secs(3);

/// The server's figures once it has seen every connection the harness opened end
/// (closes reach it a moment after the harness is done), or after [`SETTLE_LIMIT`];
/// with a note when that took long or never happened, saying what was still open.
pub(super) fn settled_stats(
    rt: &Runtime,
    s: &mut EmbeddedServer,
    connects: u64,
    fires: u64,
) -> Result<(ServerSnapshot, Option<String>), String> {
    let mut settled = false;
    let (snap, note) = settle(rt, SETTLE_LIMIT, || {
        let snap = s.stats(Duration::from_secs(5))?;
        let held = snap.buffers_held();
        let open = match &snap.rpc {
            Some(r) => {
                let active = r.counters.connections_active;
                let unfired = fires.saturating_sub(r.fired.max(0) as u64);
                (active > 0 || unfired > 0 || held > 0).then(|| {
                    format!(
                        "{active} connections still open, {unfired} oneway calls not processed, \
                         {held} receive buffers not back in their pools"
                    )
                })
            }
            None => {
                let t = snap.totals();
                let unseen = connects.saturating_sub(t.accepted + t.aborted_before_accept);
                (t.open > 0 || unseen > 0 || held > 0).then(|| {
                    format!(
                        "{} connections still open ({} of them waiting for a send to finish), \
                         {unseen} of the harness's connections not seen, \
                         {held} receive buffers not back in their pools",
                        t.open, t.sending
                    )
                })
            }
        };
        settled = open.is_none();
        Ok((snap, open))
    })?;
    if settled {
        return Ok((snap, note));
    }
    // Name what is still open, from the server's own state.
    let named = match s.dump(Duration::from_secs(5)) {
        Ok(dump) => crate::stuck::describe(&dump),
        Err(e) => Some(format!("no state dump from the server: {e}")),
    };
    let note = match (note, named) {
        (Some(n), Some(d)) => Some(format!("{n}; {d}")),
        (n, d) => n.or(d),
    };
    Ok((snap, note))
}

/// Polls `probe` (a value, and what is still open: `None` once nothing is) until
/// nothing is open or `limit` has passed; the last value, with a note when that took
/// over 2 s or never happened.
///
/// The harness's runtime keeps turning while it waits: its worker 0 is this thread,
/// and the closes of its last connections may still be on their way through it (a
/// fault connection closes only once the cancel of its stalled send has completed).
/// A runtime nobody drives would leave the server waiting on a peer that never goes.
pub(super) fn settle<T>(
    rt: &Runtime,
    limit: Duration,
    mut probe: impl FnMut() -> Result<(T, Option<String>), String>,
) -> Result<(T, Option<String>), String> {
    let start = Instant::now();
    loop {
        let (value, open) = probe()?;
        let waited = start.elapsed();
        match open {
            None if waited < Duration::from_secs(2) => return Ok((value, None)),
            None => {
                let note = format!(
                    "the server took {:.1} s after the run to settle",
                    waited.as_secs_f64()
                );
                return Ok((value, Some(note)));
            }
            Some(what) if waited >= limit => {
                let note = format!(
                    "server figures taken {} s after the run with {what}",
                    limit.as_secs()
                );
                return Ok((value, Some(note)));
            }
            Some(_) => rt.block_on(zerorx::sleep(Duration::from_millis(20))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::settle;
    use std::io::Read;
    use std::net::TcpListener;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::sync::Arc;
    use std::time::{Duration, Instant};
    use zerorx::Runtime;

    #[test]
    fn settling_drives_the_harness_runtime_so_its_last_closes_reach_the_server() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let closed = Arc::new(AtomicBool::new(false));
        let seen = closed.clone();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().expect("accept");
            s.set_read_timeout(Some(Duration::from_secs(20)))
                .expect("timeout");
            let mut buf = [0u8; 64];
            // End of stream is the harness's close.
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 {
                    seen.store(true, SeqCst);
                    break;
                }
            }
        });
        let rt = Runtime::builder().threads(1).build().expect("runtime");
        rt.block_on(async move {
            let stream = zerorx::net::TcpStream::connect(addr)
                .await
                .expect("connect");
            // The stream closes from a task still waiting when `block_on` returns, as a
            // fault connection's close waits for the cancel of its stalled send.
            drop(zerorx::spawn(async move {
                zerorx::sleep(Duration::from_millis(100)).await;
                drop(stream);
            }));
        });
        let started = Instant::now();
        let ((), note) = settle(&rt, Duration::from_secs(15), || {
            let open = !closed.load(SeqCst);
            Ok(((), open.then(|| "1 connection still open".to_owned())))
        })
        .expect("settle");
        assert!(closed.load(SeqCst), "the close never reached the server");
        assert_eq!(note, None, "settled after {:?}", started.elapsed());
        server.join().expect("server thread");
    }

    #[test]
    fn a_server_that_never_settles_is_named_in_a_note() {
        let rt = Runtime::builder().threads(1).build().expect("runtime");
        let mut probes = 0;
        let (value, note) = settle(&rt, Duration::from_millis(200), || {
            probes += 1;
            Ok((probes, Some("2 connections still open".to_owned())))
        })
        .expect("settle");
        let note = note.expect("a note");
        assert!(note.contains("2 connections still open"), "{note}");
        assert!(value > 1, "probed {value} times");
        let err = settle::<()>(&rt, Duration::from_secs(1), || Err("no stats".into()));
        assert_eq!(err.unwrap_err(), "no stats");
    }
}
