//! The reference service every RPC test, benchmark and stress run speaks: `Bench`
//! from `bench.thrift` (kept next to this file), implemented by hand.
//!
//! - [`register`]: its handlers on a [`ServerBuilder`](zerorx_thrift::server::ServerBuilder).
//! - [`BenchClient`]: its typed client.
//! - [`serve`]: `zerorx serve`.

mod client;
pub mod serve;
mod service;
mod types;

pub use client::{BenchClient, FailError};
pub use service::{register, BenchState, RETRY_AFTER_MS};
pub use types::{
    AddArgs, EchoArgs, FailArgs, FailResult, FireArgs, FiredArgs, Overloaded, Payload,
    RoundtripArgs, SleepMsArgs, SumArgs,
};

/// The IDL, as shipped with the crate.
pub const IDL: &str = include_str!("bench.thrift");

#[cfg(test)]
mod tests {
    #[test]
    fn the_idl_declares_every_method_served() {
        for method in [
            "echo",
            "roundtrip",
            "add",
            "sum",
            "sleep_ms",
            "fire",
            "fired",
            "fail",
        ] {
            assert!(
                super::IDL.contains(&format!(" {method}(")),
                "{method} missing from bench.thrift"
            );
        }
    }
}
