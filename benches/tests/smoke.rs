//! Runs both benchmarks once, briefly (`--smoke`), so they cannot rot: every server
//! must answer every request of every workload correctly, and every wake-up round
//! trip must complete. No speed is asserted.
//!
//! This test binary is also the server child the echo benchmark starts (it
//! re-executes itself with `--serve KIND`), hence `harness = false`.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if zerorx_bench::child::child_args(&args).is_some() {
        std::process::exit(zerorx_bench::echo::main_with_args(args));
    }
    let program = args.first().cloned().unwrap_or_default();
    let echo = zerorx_bench::echo::main_with_args(vec![program.clone(), "--smoke".into()]);
    let wake = zerorx_bench::wake::main_with_args(vec![program, "--smoke".into()]);
    let failed = usize::from(echo != 0) + usize::from(wake != 0);
    println!("\nsmoke: {} passed, {failed} failed", 2 - failed);
    std::process::exit(i32::from(failed > 0));
}
