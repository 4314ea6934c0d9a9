//! `zerorx-stress`: the stress harness (load, fault injection, reports).
//!
//! The harness drives the embedded RPC server and is built on the runtime; until those
//! land it only says so, and points at the kernel report, so nobody mistakes it for a
//! run that measured something.

use std::process::ExitCode;

fn main() -> ExitCode {
    eprintln!(
        "zerorx-stress: the stress harness is not built yet (it needs the runtime and the RPC \
         server). For what this machine can do, run: cargo run --release --bin zerorx -- doctor"
    );
    ExitCode::from(2)
}
