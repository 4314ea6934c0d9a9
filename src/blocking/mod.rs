//! The runtime's pool of threads for blocking work ([`spawn_blocking`](crate::spawn_blocking)):
//! a queue of jobs, threads started as jobs need them up to a limit, idle threads
//! leaving after a while, and a shutdown that waits for running jobs up to a deadline
//! and names what it abandoned.
//!
//! Written here rather than taken from a crate: the pool belongs to one runtime (its
//! limits come from the runtime's builder and environment, its state shows in the
//! runtime's dump, its shutdown is part of the runtime's), where the blocking-pool
//! crates keep one process-wide pool configured by their own variables. It knows
//! nothing of workers or tasks: a job is a boxed closure.

mod pool;

pub(crate) use pool::{BlockingConfig, BlockingPool, JobState, PoolState};
