//! Shared pieces of zerorx's fuzz targets: the checks each target runs on one input,
//! an allocator that fails any allocation larger than the input could justify, and
//! the seed corpus (valid encodings of the bench.thrift messages).
//!
//! The targets (`fuzz_targets/`) are thin: each calls one function of [`checks`].
//! Build and run them with `fuzz/run` (stable toolchain, no cargo-fuzz needed) or with
//! `cargo +nightly fuzz run TARGET` (adds AddressSanitizer).

pub mod alloc_guard;
pub mod checks;
pub mod seeds;
