//! The zero-copy pool: a ZCRX instance (area + refill ring) bound to one NIC receive
//! queue, or device-less (`ZCRX_REG_NODEV`, Linux 7.1+) for testing the same ABI on
//! loopback.
//!
//! - [`register`]: memory layout and `IORING_REGISTER_ZCRX_IFQ`, with the large-chunk
//!   fall-back;
//! - [`decode`]: RECV_ZC completions (CQE32) into [`RxBuf`](crate::RxBuf)s;
//! - [`refill`]: returning chunks through the refill ring, with a pending queue and
//!   `ZCRX_CTRL_FLUSH_RQ`;
//! - [`pool`]: the per-ring pool handle;
//! - [`share`]: export on the owner's ring, import on another ring.

mod decode;
mod pool;
mod refill;
pub(crate) mod register;
mod share;

pub use pool::{ZcEvent, ZcPool, ZcPoolConfig, ZcTarget};
pub use share::{ExportedZcrx, ZcImport};

#[cfg(test)]
mod tests;
