//! Sharing one ZCRX instance between rings (Linux 6.19+): export on the owner's
//! thread, import on the importer's thread.
//!
//! The importer receives into the owner's area and returns chunks to the owner's refill
//! ring through the owner's return queue (the kernel sees one single-producer ring).

use super::decode::Decoder;
use super::pool::recv_zc_entry;
use crate::abi::{self, ZcrxIfqReg};
use crate::error::PoolError;
use crate::features::ZcrxFeatures;
use crate::rxbuf::RxBuf;
use crate::sys;
use io_uring::squeue;
use std::marker::PhantomData;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// An exported instance on its way to an importing ring. `Send`, so it can travel to
/// the importer's thread; the fd it holds keeps the hardware queue bound, so it is
/// closed as soon as [`import`](Self::import) returns, or when this value is dropped.
#[derive(Debug)]
pub struct ExportedZcrx {
    fd: OwnedFd,
    decoder: Decoder,
}

impl ExportedZcrx {
    pub(crate) fn new(fd: OwnedFd, decoder: Decoder) -> ExportedZcrx {
        ExportedZcrx { fd, decoder }
    }

    /// The exported fd (for diagnostics; it closes with this value).
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Imports the instance into the ring `ring_fd` (created on this thread with the
    /// same flags a ZCRX ring needs). The exported fd is closed before this returns,
    /// whether the import worked or not.
    ///
    /// # Safety
    /// `ring_fd` must be an io_uring ring closed before the returned import is dropped.
    pub unsafe fn import(
        self,
        ring_fd: RawFd,
        features: &ZcrxFeatures,
    ) -> Result<ZcImport, PoolError> {
        let ExportedZcrx { fd, decoder } = self;
        if !features.import {
            return Err(PoolError::Unsupported {
                what: "ZCRX import (ZCRX_REG_IMPORT)",
                needs: "Linux 6.19",
            });
        }
        let mut reg = ZcrxIfqReg {
            if_idx: fd.as_raw_fd() as u32,
            flags: abi::ZCRX_REG_IMPORT,
            ..Default::default()
        };
        // SAFETY: `reg` is writable; the shared memory is kept alive by `decoder.core`,
        // which the import holds for as long as the caller keeps the ring open.
        let result = unsafe { sys::register_zcrx_ifq(ring_fd, &mut reg) };
        drop(fd);
        result.map_err(|source| PoolError::Kernel {
            op: "importing the ZCRX instance",
            hint: crate::error::registration_hint(&source),
            source,
        })?;
        Ok(ZcImport {
            decoder,
            zcrx_id: reg.zcrx_id,
            _owner_thread: PhantomData,
        })
    }
}

/// An imported instance: receive on this ring, return to the exporting pool.
#[derive(Debug)]
pub struct ZcImport {
    decoder: Decoder,
    zcrx_id: u32,
    _owner_thread: PhantomData<*const ()>,
}

impl ZcImport {
    /// The instance id in the importing ring.
    pub fn zcrx_id(&self) -> u32 {
        self.zcrx_id
    }

    /// A multishot RECV_ZC on this ring; see [`ZcPool::recv_zc`](super::ZcPool::recv_zc).
    pub fn recv_zc(&self, fd: RawFd, budget: u32) -> squeue::Entry {
        recv_zc_entry(fd, budget, self.zcrx_id)
    }

    /// Decodes a data completion of this ring.
    pub fn take(&self, res: i32, big_cqe: [u64; 2]) -> Result<RxBuf, PoolError> {
        self.decoder.take(res, big_cqe)
    }

    /// Counters of the exporting pool.
    pub fn stats(&self) -> crate::PoolStatsSnapshot {
        self.decoder.core.snapshot()
    }

    /// The exporting pool's live counters, to read from other threads.
    pub fn stats_handle(&self) -> crate::StatsHandle {
        crate::StatsHandle::new(self.decoder.core.clone())
    }

    /// Chunk size of the exporting pool.
    pub fn chunk_size(&self) -> u64 {
        self.decoder.chunk_size
    }

    /// The address range of the exporting pool's area (the same range its owner
    /// reports).
    pub fn area(&self) -> std::ops::Range<usize> {
        self.decoder.area()
    }
}
