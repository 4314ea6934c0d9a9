//! `cargo bench -p zerorx-bench --bench wake -- [--rounds N] [--trips N] [--smoke]`:
//! `spawn_on` round trips woken by eventfd vs `IORING_OP_MSG_RING`.

fn main() {
    std::process::exit(zerorx_bench::wake::main_with_args(
        std::env::args().collect(),
    ));
}
