//! `zerorx-stress`: the zerorx stress harness.
//!
//! It starts a server (its own, as a child process) or loads one given with
//! `--connect`, drives it with a load of verified requests, and reports throughput,
//! latency percentiles, every wrong or missing reply by id, per-worker balance, the
//! server's receive-pool figures and the memory of both processes, ending in a
//! one-line verdict. See the README for a sample report.

pub mod cli;
pub mod client;
pub mod embedded;
pub mod errors;
pub mod fabric;
pub mod faults;
pub mod framer;
pub mod hostile;
pub mod parse;
pub mod quiesce;
pub mod report;
pub mod rss;
pub mod run;
pub mod sampler;
pub mod server;
pub mod soak;
pub mod stuck;
pub mod wire;
