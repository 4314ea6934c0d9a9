//! The `zerorx` command and what it serves, kept out of the libraries: `zerorx doctor`
//! prints the library's capability report ([`zerorx::doctor`]), `zerorx serve` runs
//! [`bench`](mod@bench), the reference Thrift service (`bench.thrift`) that the stress harness,
//! the benchmarks and the interop tests speak.
//!
//! - [`bench`](mod@bench): the service's types, handlers ([`bench::register`]), typed client
//!   ([`bench::BenchClient`]) and `zerorx serve` ([`bench::serve`]).
//! - [`doctor_args`]: the command line's grammar and `--require`.
//! - [`signals`]: termination signals over `zerorx::signal` (also used by the
//!   cross-language test server).

pub mod bench;
pub mod doctor_args;
pub mod signals;
