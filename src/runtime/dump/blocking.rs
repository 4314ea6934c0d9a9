//! The blocking pool's part of the dump: its threads and its jobs.

use crate::blocking::{JobState, PoolState};
use serde::{Deserialize, Serialize};
use std::fmt::{self, Display, Formatter};
use std::time::Instant;

/// The runtime's blocking pool ([`spawn_blocking`](crate::spawn_blocking)).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BlockingDump {
    /// Threads the pool has now (running a job or idle).
    pub threads: usize,
    /// Of those, threads waiting for a job.
    pub idle: usize,
    /// The most threads it may start ([`Builder::max_blocking_threads`](crate::Builder::max_blocking_threads)).
    pub max_threads: usize,
    /// Jobs running, oldest first.
    pub running: Vec<BlockingJobDump>,
    /// Jobs waiting for a thread, oldest first.
    pub queued: Vec<BlockingJobDump>,
}

/// One blocking job.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BlockingJobDump {
    /// The type of its closure (where it was written).
    pub name: String,
    /// Milliseconds since it started (running) or was queued.
    pub age_ms: u64,
}

impl BlockingDump {
    pub(crate) fn from_state(s: PoolState) -> BlockingDump {
        let now = Instant::now();
        let jobs = |list: Vec<JobState>| {
            list.into_iter()
                .map(|j| BlockingJobDump {
                    name: j.name.to_owned(),
                    age_ms: now.saturating_duration_since(j.since).as_millis() as u64,
                })
                .collect()
        };
        BlockingDump {
            threads: s.threads,
            idle: s.idle,
            max_threads: s.max_threads,
            running: jobs(s.running),
            queued: jobs(s.queued),
        }
    }
}

impl Display for BlockingDump {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "blocking pool: {} threads ({} idle, at most {}), {} jobs running, {} queued",
            self.threads,
            self.idle,
            self.max_threads,
            self.running.len(),
            self.queued.len()
        )?;
        for (what, list) in [("running", &self.running), ("queued", &self.queued)] {
            for j in list {
                writeln!(f, "  {what} {:.2} s: {}", j.age_ms as f64 / 1000.0, j.name)?;
            }
        }
        Ok(())
    }
}
