//! `zcrx`: the kernel interface for io_uring receive buffers.
//!
//! No async here. This crate detects what the kernel can do, and owns the memory the
//! kernel writes received bytes into:
//!
//! - [`abi`] and [`sys`]: the ZCRX, query and control ABI the `io-uring` crate lacks;
//! - [`features`]: the ZCRX capabilities the pools are configured with;
//! - [`probe`]: kernel feature detection, cached per process, with a named reason and a
//!   fix for everything that is missing.

pub mod abi;
pub mod features;
pub mod probe;
pub mod sys;

pub use features::ZcrxFeatures;
