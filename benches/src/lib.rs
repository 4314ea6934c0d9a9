//! Benchmarks of zerorx against tokio and monoio, measured in the same run.
//!
//! - `echo` ([`echo`]): workloads W1–W8 of `performance.md` against echo servers of
//!   zerorx, tokio (current-thread and multi-thread) and monoio, each server in a
//!   child process of its own, the same io_uring client for all, rounds interleaved.
//! - `wake` ([`wake`]): `spawn_on` round trips with eventfd vs MSG_RING wake-ups.
//! - [`frame_echo`]: the RPC benchmark's reference server that does no Thrift work.
//!
//! `cargo bench -p zerorx-bench --bench echo -- --help` lists the options; `--smoke`
//! runs everything briefly and is what `cargo test` runs (`tests/smoke.rs`).

pub mod child;
pub mod client;
pub mod count;
pub mod cpu_rounds;
pub mod echo;
pub mod fabric_engine;
pub mod frame_echo;
pub mod fs;
pub mod http;
pub mod procfs;
pub mod profile;
pub mod report;
pub mod servers;
pub mod tls;
pub mod wake;
pub mod workloads;

/// A benchmark binary's `main` over its option parser and its run: 2 for bad
/// arguments (the parser's message printed), 1 when the run fails, else 0.
pub fn main_with<O, R, E: std::fmt::Display>(
    args: &[String],
    name: &str,
    parse: impl FnOnce(&[String]) -> Result<O, String>,
    run: impl FnOnce(&O) -> Result<R, E>,
) -> i32 {
    let opts = match parse(&args[1.min(args.len())..]) {
        Ok(o) => o,
        Err(msg) => {
            eprintln!("{msg}");
            return 2;
        }
    };
    match run(&opts) {
        Ok(_) => 0,
        Err(e) => {
            eprintln!("{name} benchmark failed: {e}");
            1
        }
    }
}

/// A port free on 127.0.0.1 now (a server started next binds it).
pub fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("bind 127.0.0.1:0: {e}"))
}

/// Parses `--alt-env`'s value, `ZERORX_NAME=VALUE` pairs separated by spaces: the
/// environment a benchmark's `zerorx-alt` server runs with.
pub fn parse_alt_env(value: &str) -> Result<Vec<(String, String)>, String> {
    value
        .split_whitespace()
        .map(|pair| {
            pair.split_once('=')
                .filter(|(k, _)| k.starts_with("ZERORX_"))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .ok_or_else(|| format!("--alt-env: expected ZERORX_NAME=VALUE, got {pair:?}"))
        })
        .collect()
}
