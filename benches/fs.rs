//! `cargo bench -p zerorx-bench --bench fs -- [--rounds N] [--size BYTES] [--reads N] [--dir PATH ...] [--smoke]`:
//! `zerorx::fs` against `tokio::fs` and `std::fs` (see `zerorx_bench::fs`).

fn main() {
    std::process::exit(zerorx_bench::fs::main_with_args(std::env::args().collect()));
}
