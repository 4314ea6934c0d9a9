//! `zcrx`: the kernel interface for io_uring receive buffers.
//!
//! No async here. This crate detects what the kernel can do, and owns the memory the
//! kernel writes received bytes into:
//!
//! - [`abi`] and [`sys`]: the ZCRX, query and control ABI the `io-uring` crate lacks;
//! - [`features`]: the ZCRX capabilities the pools are configured with;
//! - [`probe`]: kernel feature detection, cached per process, with a named reason and a
//!   fix for everything that is missing;
//! - [`ZcPool`]: a ZCRX instance (area + refill ring) with export/import;
//! - [`CopyPool`]: a provided-buffer ring for multishot `recv` (copy mode);
//! - [`RxBuf`]: the handle both pools give out, bounded by the completion's length and
//!   returned to its pool when dropped, from any thread;
//! - [`steering`]: which receive queue a flow lands on (header/data split, RSS,
//!   ntuple rules read from the NIC; the Toeplitz hash; a port for a chosen queue).
//!
//! Kernel-shared memory (rings, areas) is read and written only in the private `shm`
//! module, which owns the acquire/release rules.

pub mod abi;
mod copy_pool;
mod core;
mod error;
pub mod features;
pub mod mem;
mod owner;
pub mod probe;
pub mod recv_end;
mod rxbuf;
mod shm;
mod stats;
pub mod steering;
pub mod sys;
mod zc;

pub use copy_pool::{CopyPool, CopyPoolConfig, StatsHandle};
pub use core::{AreaMemory, ReturnNotifier};
pub use error::PoolError;
pub use features::ZcrxFeatures;
pub use mem::Backing;
pub use recv_end::{RearmReason, RecvEnd, RecvFailure, RecvTracker};
pub use rxbuf::RxBuf;
pub use stats::{PoolStats, PoolStatsSnapshot};
pub use zc::{ExportedZcrx, ZcEvent, ZcImport, ZcPool, ZcPoolConfig, ZcTarget};
