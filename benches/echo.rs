//! `cargo bench -p zerorx-bench --bench echo -- [--quick | --smoke | --help]`: zerorx
//! vs tokio vs monoio echo servers, workloads W1–W8, interleaved rounds, ratios.

fn main() {
    std::process::exit(zerorx_bench::echo::main_with_args(
        std::env::args().collect(),
    ));
}
