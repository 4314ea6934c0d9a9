//! zerorx: a thread-per-core networking runtime built on io_uring zero-copy receive.
//!
//! - [`doctor`]: the `zerorx doctor` report of what the kernel and NICs can do.

pub mod doctor;
pub use zcrx;
