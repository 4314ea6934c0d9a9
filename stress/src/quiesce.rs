//! A server at quiesce: waiting for it to let go of what a run gave it, and what it
//! holds at a moment. The soak and the hostile run sample their servers with these,
//! so both mean the same by "quiet" ([`ServerSnapshot::quiet`]) and by "chunks held"
//! ([`ServerSnapshot::buffers_held`]).

use crate::embedded::EmbeddedServer;
use crate::server::stats::ServerSnapshot;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};
use zerorx::runtime::RuntimeDump;

/// How long a server may take to answer for its counters or its dump.
const ASK: Duration = Duration::from_secs(10);

/// What a server holds at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerState {
    /// Open connections (the server's count).
    pub connections: u64,
    /// Open file descriptors.
    pub open_fds: u64,
    /// Unfinished tasks over every worker.
    pub tasks: u64,
    /// Receive-pool chunks held by the application or not yet returned.
    pub chunks_held: u64,
    /// Resident memory, in bytes.
    pub rss_bytes: u64,
}

impl ServerState {
    /// The state its counters and its dump, taken one after the other, show.
    pub fn of(stats: &ServerSnapshot, dump: &RuntimeDump) -> ServerState {
        ServerState {
            connections: stats.open_connections(),
            open_fds: dump.process.open_fds as u64,
            tasks: dump.workers.iter().map(|w| w.tasks as u64).sum(),
            chunks_held: stats.buffers_held(),
            rss_bytes: dump.process.rss_bytes.unwrap_or(0),
        }
    }
}

/// Samples `s`: its state, and the dump it came from (to name what is open).
pub fn sample(s: &mut EmbeddedServer) -> Result<(ServerState, RuntimeDump), String> {
    let stats = s.stats(ASK)?;
    let dump = s.dump(ASK)?;
    Ok((ServerState::of(&stats, &dump), dump))
}

/// How a wait for quiet went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quiesce {
    /// How long it waited.
    pub took: Duration,
    /// Whether the server became quiet within the limit.
    pub quiet: bool,
    /// What was open when the wait passed its note time (from the server's dump).
    pub open_at_note: Option<String>,
}

/// Waits until `s` is quiet or `limit` has passed; past `note_after`, names once what
/// is still open.
pub fn quiesce(
    s: &mut EmbeddedServer,
    limit: Duration,
    note_after: Option<Duration>,
) -> Result<Quiesce, String> {
    let start = Instant::now();
    let mut open_at_note = None;
    loop {
        let snap = s.stats(ASK)?;
        if snap.quiet() {
            return Ok(Quiesce {
                took: start.elapsed(),
                quiet: true,
                open_at_note,
            });
        }
        if start.elapsed() > limit {
            return Ok(Quiesce {
                took: start.elapsed(),
                quiet: false,
                open_at_note,
            });
        }
        if open_at_note.is_none() && note_after.is_some_and(|n| start.elapsed() > n) {
            let dump = s.dump(ASK)?;
            open_at_note = Some(crate::stuck::describe(&dump).unwrap_or_else(|| {
                format!(
                    "{} connections and {} receive buffers counted open, nothing in the dump",
                    snap.open_connections(),
                    snap.buffers_held()
                )
            }));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
