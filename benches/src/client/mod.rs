//! The load generator: one client, the same for every server.
//!
//! It runs on one thread with its own plain io_uring ring (not zerorx, tokio or monoio,
//! so it favours none of them) and batches: every loop turn reaps all completions and
//! submits all new sends and receives with one `io_uring_enter`. That keeps its CPU per
//! request well below the servers', so on a 2-CPU machine the server, not the client,
//! sets the pace; every cell reports both sides' CPU use so this can be checked.
//!
//! Every byte that comes back is checked: request/response payloads carry a sequence
//! number and must return unchanged, streams carry a position-dependent pattern.

mod arrivals;
mod churn;
mod engine;
mod idle;
mod pattern;
mod plan;

pub use engine::Engine;
pub use idle::IdleConns;
pub use plan::{EngineResult, Pause, Plan, Probe, Role, Tally};
