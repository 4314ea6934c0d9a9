//! `cargo bench -p zerorx-bench --bench http -- [--rounds N] [--secs S] [--smoke]`:
//! hyper on zerorx vs hyper on tokio, loaded by `wrk`. `--help`-style usage on a bad
//! option.

fn main() {
    std::process::exit(zerorx_bench::http::main_with_args(
        std::env::args().collect(),
    ));
}
