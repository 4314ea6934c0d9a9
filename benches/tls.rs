//! `cargo bench -p zerorx-bench --bench tls -- [--rounds N] [--mib M] [--smoke]`:
//! futures-rustls over `compat()` against rustls driven by the receive buffers.

fn main() {
    std::process::exit(zerorx_bench::tls::main_with_args(
        std::env::args().collect(),
    ));
}
