//! zerorx: a thread-per-core networking runtime built on io_uring zero-copy receive.

pub use zcrx;
