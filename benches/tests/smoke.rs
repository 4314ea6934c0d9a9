//! Runs the echo, wake, HTTP, TLS and file benchmarks once, briefly (`--smoke`), so they
//! cannot rot: every server must answer every request of every workload correctly, every
//! wake-up round trip must complete, and every byte a file benchmark reads must be the
//! one it wrote. No speed is asserted. The echo benchmark runs a
//! second time with `--profile` (perf sampling each server's window), and a third
//! with the `zerorx-alt` server (`--alt-env`).
//!
//! This test binary is also the server child the echo and HTTP benchmarks start (they
//! re-execute themselves with `--serve KIND` and `--serve-http KIND`), hence
//! `harness = false`. The HTTP smoke needs `wrk` (scripts/test installs it).

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if zerorx_bench::http::is_server(&args) {
        std::process::exit(zerorx_bench::http::main_with_args(args));
    }
    if zerorx_bench::child::child_args(&args).is_some() {
        std::process::exit(zerorx_bench::echo::main_with_args(args));
    }
    let program = args.first().cloned().unwrap_or_default();
    let echo = zerorx_bench::echo::main_with_args(vec![program.clone(), "--smoke".into()]);
    let wake = zerorx_bench::wake::main_with_args(vec![program.clone(), "--smoke".into()]);
    let http = zerorx_bench::http::main_with_args(vec![program.clone(), "--smoke".into()]);
    let tls = zerorx_bench::tls::main_with_args(vec![program.clone(), "--smoke".into()]);
    let fs = zerorx_bench::fs::main_with_args(vec![program.clone(), "--smoke".into()]);
    let profile = zerorx_bench::echo::main_with_args(
        [
            program.as_str(),
            "--smoke",
            "--profile",
            "--servers",
            "zerorx,tokio-ct",
            "--workloads",
            "W2",
        ]
        .map(String::from)
        .to_vec(),
    );
    // A lever measured against zerorx in the same rounds (zerorx-alt, --alt-env).
    let alt = zerorx_bench::echo::main_with_args(
        [
            program.as_str(),
            "--smoke",
            "--servers",
            "zerorx,zerorx-alt",
            "--alt-env",
            "ZERORX_INCREMENTAL_BUFFERS=off",
            "--workloads",
            "W2",
        ]
        .map(String::from)
        .to_vec(),
    );
    let all = [echo, wake, http, tls, fs, profile, alt];
    let failed = all.iter().filter(|&&rc| rc != 0).count();
    println!("\nsmoke: {} passed, {failed} failed", all.len() - failed);
    std::process::exit(i32::from(failed > 0));
}
