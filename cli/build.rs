//! The reference service's types, handler trait and client, generated from
//! `src/bench/bench.thrift` the way any user of zerorx-thrift-build does it.

fn main() {
    if let Err(e) = zerorx_thrift_build::Builder::new()
        .file("src/bench/bench.thrift")
        .compile()
    {
        eprintln!("bench.thrift: {e}");
        std::process::exit(1);
    }
}
