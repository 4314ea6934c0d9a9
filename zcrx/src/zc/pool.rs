//! The per-ring zero-copy pool.

use super::decode::Decoder;
use super::refill::{Flusher, RefillRecycler};
use super::register::{self, Layout, Registered};
use super::share::ExportedZcrx;
use crate::abi;
use crate::core::{KernelCopyStats, PoolCore, ReturnNotifier};
use crate::error::PoolError;
use crate::features::ZcrxFeatures;
use crate::mem::Backing;
use crate::rxbuf::RxBuf;
use crate::shm::{KernelStats, RefillRing};
use crate::stats::PoolStatsSnapshot;
use crate::sys;
use io_uring::{opcode, squeue, types};
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::Ordering::Relaxed;

/// Which receive queue a zero-copy pool binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZcTarget {
    /// Hardware queue `queue` of the interface with index `ifindex`.
    Device {
        /// Interface index (`if_nametoindex`).
        ifindex: u32,
        /// Hardware receive queue.
        queue: u32,
    },
    /// Device-less instance (Linux 7.1+): the full user-side ABI on any TCP socket,
    /// every byte copied by the kernel. For testing and experimentation.
    NoDev,
}

/// Sizing of a [`ZcPool`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZcPoolConfig {
    /// The queue to bind.
    pub target: ZcTarget,
    /// Bytes of receive area (rounded up to whole chunks).
    pub area_bytes: usize,
    /// Chunk size wanted; anything above the page size needs Linux 7.0 and driver
    /// support, and falls back to the page size when refused.
    pub chunk_size: u32,
    /// Refill ring entries; 0 = one per chunk (so returns never wait). Rounded up to a
    /// power of two, at most 32768.
    pub rq_entries: u32,
    /// Memory backing of the area.
    pub backing: Backing,
    /// `user_data` for the instance's event CQEs. `Some` registers for both event types
    /// (`ZCRX_EVENT_ALLOC_FAIL`, `ZCRX_EVENT_COPY`) and for the kernel's copy
    /// statistics where the kernel has them ([`ZcrxFeatures::events`], Linux 7.2+);
    /// older kernels register as before. The ring's owner must hand each CQE carrying
    /// this `user_data` to [`ZcPool::on_event`], which re-arms it.
    pub event_user_data: Option<u64>,
}

impl ZcPoolConfig {
    /// A 4 MiB, page-chunked pool on `target`.
    pub fn new(target: ZcTarget) -> ZcPoolConfig {
        ZcPoolConfig {
            target,
            area_bytes: 4 << 20,
            chunk_size: sys::page_size() as u32,
            rq_entries: 0,
            backing: Backing::Anonymous,
            event_user_data: None,
        }
    }

    pub(crate) fn layout(&self, features: &ZcrxFeatures) -> Result<Layout, PoolError> {
        if !features.recv_zc {
            return Err(PoolError::Unsupported {
                what: "IORING_OP_RECV_ZC",
                needs: "Linux 6.15",
            });
        }
        let page = sys::page_size() as u32;
        if !self.chunk_size.is_power_of_two() || self.chunk_size < page {
            return Err(PoolError::InvalidConfig {
                field: "chunk_size",
                reason: format!(
                    "is {}; it must be a power of two of at least {page}",
                    self.chunk_size
                ),
            });
        }
        let (if_idx, if_rxq, flags, chunk) = match self.target {
            ZcTarget::Device { ifindex, queue } => {
                // Large chunks only where the kernel says it honours them.
                let chunk = if features.rx_page_size {
                    self.chunk_size
                } else {
                    page
                };
                (ifindex, queue, 0, chunk)
            }
            ZcTarget::NoDev if !features.nodev => {
                return Err(PoolError::Unsupported {
                    what: "device-less ZCRX (ZCRX_REG_NODEV)",
                    needs: "Linux 7.1",
                })
            }
            // Device-less instances reject chunks above a page.
            ZcTarget::NoDev => (0, 0, abi::ZCRX_REG_NODEV, page),
        };
        if self.area_bytes == 0 || self.area_bytes > 1 << 36 {
            return Err(PoolError::InvalidConfig {
                field: "area_bytes",
                reason: format!("is {}; it must be from 1 byte to 64 GiB", self.area_bytes),
            });
        }
        let area_bytes = self.area_bytes.next_multiple_of(self.chunk_size as usize);
        let chunks = (area_bytes / page as usize).max(1) as u64;
        let wanted = if self.rq_entries == 0 {
            chunks
        } else {
            self.rq_entries as u64
        };
        let rq_entries = wanted.next_power_of_two();
        if rq_entries > abi::RQ_MAX_ENTRIES as u64 {
            return Err(PoolError::InvalidConfig {
                field: "rq_entries",
                reason: format!(
                    "would be {rq_entries}; the kernel's limit is {} (set it explicitly for large areas)",
                    abi::RQ_MAX_ENTRIES
                ),
            });
        }
        Ok(Layout {
            if_idx,
            if_rxq,
            flags,
            area_bytes,
            chunk_size: chunk,
            rq_entries: rq_entries as u32,
            backing: self.backing,
            events: self.event_user_data.filter(|_| features.events),
        })
    }
}

/// A ZCRX instance registered with one ring, owned by that ring's thread.
///
/// Not `Send`: registration, flush and export must run on the ring's submitter thread
/// (the kernel answers `EEXIST` otherwise). Its [`RxBuf`]s are `Send`.
#[derive(Debug)]
pub struct ZcPool {
    decoder: Decoder,
    zcrx_id: u32,
    ring_fd: RawFd,
    features: ZcrxFeatures,
    nodev: bool,
    /// `user_data` of this instance's event CQEs, when registered with events.
    events: Option<u64>,
    /// How added areas are backed: as the first.
    backing: Backing,
    _owner_thread: PhantomData<*const ()>,
}

/// One zcrx event CQE, as [`ZcPool::on_event`] decoded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZcEvent {
    /// `ZCRX_EVENT_ALLOC_FAIL`: the NIC found no free chunk (packets may be dropped
    /// until chunks come back): a sign the pool is too small.
    AllocFail,
    /// `ZCRX_EVENT_COPY`: the kernel copied a fragment instead of placing it.
    Copy,
    /// An event type this build does not know (a newer kernel); not re-armed.
    Unknown(i32),
}

impl ZcPool {
    /// Registers a ZCRX instance on the ring `ring_fd`, which must have been created on
    /// this thread with `SINGLE_ISSUER | DEFER_TASKRUN` and `CQE32` (or `CQE_MIXED`).
    ///
    /// # Safety
    /// `ring_fd` must be an io_uring ring that is closed before this pool is dropped:
    /// the kernel writes into the pool's memory until then. The memory then stays
    /// mapped until the last [`RxBuf`] is gone.
    pub unsafe fn register(
        ring_fd: RawFd,
        features: &ZcrxFeatures,
        config: &ZcPoolConfig,
    ) -> Result<ZcPool, PoolError> {
        let layout = config.layout(features)?;
        // SAFETY: forwarded from this function's contract.
        let registered = unsafe { register::register(ring_fd, features, &layout)? };
        let nodev = config.target == ZcTarget::NoDev;
        let flusher: Option<Flusher> = if features.flush_rq {
            let zcrx_id = registered.answer.zcrx_id;
            Some(Box::new(move || {
                sys::zcrx_ctrl(ring_fd, &mut abi::ZcrxCtrl::flush_rq(zcrx_id))
            }))
        } else {
            None
        };
        // SAFETY: `registered` holds the region the kernel described.
        let mut pool =
            unsafe { Self::assemble(registered, ring_fd, features.clone(), nodev, flusher) };
        pool.backing = config.backing;
        Ok(pool)
    }

    /// Builds the pool from registered memory (also used by the fake-kernel tests).
    ///
    /// # Safety
    /// `registered.answer` must describe `registered.region` (offsets inside it, entry
    /// array fitting), as the kernel's write-back does.
    pub(crate) unsafe fn assemble(
        registered: Registered,
        ring_fd: RawFd,
        features: ZcrxFeatures,
        nodev: bool,
        flusher: Option<Flusher>,
    ) -> ZcPool {
        let Registered {
            area,
            region,
            answer,
        } = registered;
        // SAFETY: forwarded from this function's contract; the region moves into the
        // core below, together with the recycler that points into it.
        let rq = unsafe {
            RefillRing::new(
                &region,
                answer.offsets.head,
                answer.offsets.tail,
                answer.offsets.rqes,
                answer.rq_entries,
            )
        };
        let recycler = RefillRecycler {
            rq,
            entries: answer.rq_entries,
            tail: 0,
            published: 0,
            pending: VecDeque::new(),
            flusher,
            flush_every_publish: nodev,
            unflushed: false,
            flush_warned: false,
        };
        let chunks = (area.len() / answer.chunk_size as usize) as u64;
        let kernel_stats = answer.stats_offset.map(|offset| KernelCopyStats {
            // SAFETY: the registration named this offset of this region as the stats
            // block and the kernel accepted it (aligned, after the entries, inside the
            // region); the region moves into the core below, which outlives the view.
            block: unsafe { KernelStats::new(&region, offset) },
            device: !nodev,
        });
        let core = PoolCore::new(Box::new(recycler), area, region, chunks);
        if let Some(k) = kernel_stats {
            core.set_kernel_stats(k);
        }
        ZcPool {
            decoder: Decoder {
                core,
                token: answer.token,
                chunk_size: answer.chunk_size as u64,
                zero_copy: !nodev,
            },
            zcrx_id: answer.zcrx_id,
            ring_fd,
            features,
            nodev,
            events: answer.events,
            backing: Backing::Anonymous,
            _owner_thread: PhantomData,
        }
    }

    /// The instance id in this ring (what `sqe->zcrx_ifq_idx` must carry).
    pub fn zcrx_id(&self) -> u32 {
        self.zcrx_id
    }

    /// Chunk size the kernel uses (page size unless large chunks were accepted).
    pub fn chunk_size(&self) -> u64 {
        self.decoder.chunk_size
    }

    /// The address range of the area the kernel receives into: distinct for every
    /// instance, shared with the rings that import it.
    pub fn area(&self) -> std::ops::Range<usize> {
        self.decoder.area()
    }

    /// The instance's first area, for registering it as send memory with a ring
    /// (received bytes sent on then name the registration).
    pub fn area_memory(&self) -> crate::AreaMemory {
        self.decoder.core.area_memory()
    }

    /// True for a device-less instance (all bytes copied).
    pub fn is_nodev(&self) -> bool {
        self.nodev
    }

    /// The `user_data` of this instance's event CQEs, when it was registered with
    /// events (the config asked and the kernel has them).
    pub fn event_user_data(&self) -> Option<u64> {
        self.events
    }

    /// Handles one event CQE (`res` is the event type): counts it and re-arms it, as
    /// the kernel posts each type once until re-armed. Owner thread only, like every
    /// control op. A refused re-arm is counted (`event_arm_errors`) and logged once.
    pub fn on_event(&self, res: i32) -> ZcEvent {
        let stats = &self.decoder.core.stats;
        let (event, counter) = match u32::try_from(res) {
            Ok(abi::ZCRX_EVENT_ALLOC_FAIL) => (ZcEvent::AllocFail, &stats.alloc_fail_events),
            Ok(abi::ZCRX_EVENT_COPY) => (ZcEvent::Copy, &stats.copy_events),
            _ => {
                tracing::warn!(res, "unknown zcrx event type; not re-armed");
                return ZcEvent::Unknown(res);
            }
        };
        counter.fetch_add(1, Relaxed);
        let mut ctrl = abi::ZcrxCtrl::arm_event(self.zcrx_id, res as u32);
        if let Err(e) = sys::zcrx_ctrl(self.ring_fd, &mut ctrl) {
            if stats.event_arm_errors.fetch_add(1, Relaxed) == 0 {
                tracing::warn!(error = %e, ?event, "re-arming a zcrx event failed; it will not fire again");
            }
        }
        event
    }

    /// A multishot RECV_ZC on TCP socket `fd` with a byte budget (`0` = unlimited).
    /// Completions are 32-byte CQEs; decode data ones with [`take`](Self::take).
    pub fn recv_zc(&self, fd: RawFd, budget: u32) -> squeue::Entry {
        recv_zc_entry(fd, budget, self.zcrx_id)
    }

    /// A data completion (`res > 0`; `big_cqe` = the CQE's upper 16 bytes) as the
    /// buffer holding exactly `res` bytes.
    pub fn take(&self, res: i32, big_cqe: [u64; 2]) -> Result<RxBuf, PoolError> {
        self.decoder.take(res, big_cqe)
    }

    /// Owner thread, once per loop turn: takes back chunks dropped elsewhere (including
    /// on importing rings), writes refill entries up to the free space, publishes the
    /// tail once, and flushes when returns are waiting (always, when device-less).
    pub fn maintain(&self) -> usize {
        self.decoder.core.maintain().unwrap_or(0)
    }

    /// Adds an area of `bytes` (rounded up to whole chunks) to the instance with
    /// `ZCRX_CTRL_ADD_AREA` (Linux 7.3): the kernel receives into it at once, with the
    /// instance's chunk size; completions name it by its area id, returns go back to
    /// it, and rings that imported the instance see it too. Owner thread only. Areas
    /// are never removed: each is unmapped with the pool, after the last buffer.
    /// Returns the pool's chunk count after the addition.
    pub fn add_area(&self, bytes: usize) -> Result<u64, PoolError> {
        if !self.features.add_area {
            return Err(PoolError::Unsupported {
                what: "adding areas to a ZCRX instance (ZCRX_CTRL_ADD_AREA)",
                needs: "Linux 7.3",
            });
        }
        let chunk = self.decoder.chunk_size as usize;
        if bytes == 0 || bytes > 1 << 36 {
            return Err(PoolError::InvalidConfig {
                field: "area bytes",
                reason: format!("is {bytes}; it must be from 1 byte to 64 GiB"),
            });
        }
        // The kernel names the new area `nr_areas << 48` (the first area is 0) and
        // receives into it as soon as the call returns, possibly on an importing ring's
        // thread before this one goes on: so the area goes into the table under that
        // name first. A slot an earlier, refused attempt filled is used again.
        let core = &self.decoder.core;
        let id = 1 + core.stats.areas_added.load(Relaxed);
        if id >= u64::from(abi::ZCRX_MAX_AREAS) {
            return Err(PoolError::InvalidConfig {
                field: "areas",
                reason: format!(
                    "the instance has its {} areas, the kernel's limit",
                    abi::ZCRX_MAX_AREAS
                ),
            });
        }
        let token = id << abi::IORING_ZCRX_AREA_SHIFT;
        if core.added_area(token).is_none() {
            let mapping = crate::mem::Mapping::new(bytes.next_multiple_of(chunk), self.backing)
                .map_err(PoolError::Memory)?;
            if core
                .add_area(crate::core::AddedArea { token, mapping })
                .is_err()
            {
                return Err(PoolError::BadCompletion(format!(
                    "area slot {id} is out of range"
                )));
            }
        }
        let mapping = core
            .added_area(token)
            .ok_or_else(|| PoolError::BadCompletion(format!("area slot {id} is empty")))?;
        let mut area_reg = abi::ZcrxAreaReg {
            addr: mapping.as_ptr() as u64,
            len: mapping.len() as u64,
            ..Default::default()
        };
        let mut ctrl =
            abi::ZcrxCtrl::add_area(self.zcrx_id, &mut area_reg as *mut abi::ZcrxAreaReg as u64);
        // The kernel pins the mapping (kept in the table until the pool's core drops,
        // after the last buffer) and writes the token into `area_reg`, also when it then
        // fails: the token counts only on success.
        sys::zcrx_ctrl(self.ring_fd, &mut ctrl).map_err(|source| PoolError::Kernel {
            op: "adding an area to the ZCRX instance",
            hint: match source.raw_os_error() {
                Some(libc::EINVAL) => {
                    "the instance has its 1024 areas, or mixes dmabuf and user memory".into()
                }
                Some(libc::EFAULT) => {
                    "the device of the instance is gone, or the memory cannot be pinned".into()
                }
                _ => crate::error::registration_hint(&source),
            },
            source,
        })?;
        if area_reg.rq_area_token != token {
            return Err(PoolError::BadCompletion(format!(
                "the kernel named the new area {:#x}, not {token:#x}: its completions cannot be decoded",
                area_reg.rq_area_token
            )));
        }
        let chunks = (mapping.len() / chunk) as u64;
        core.stats.areas_added.fetch_add(1, Relaxed);
        Ok(core.stats.chunks_total.fetch_add(chunks, Relaxed) + chunks)
    }

    /// Exports the instance so another ring (another thread) can import it
    /// (Linux 6.19+). The fd inside is closed when the export is imported or dropped.
    pub fn export(&self) -> Result<ExportedZcrx, PoolError> {
        if !self.features.export {
            return Err(PoolError::Unsupported {
                what: "ZCRX export (ZCRX_CTRL_EXPORT)",
                needs: "Linux 6.19",
            });
        }
        let mut ctrl = abi::ZcrxCtrl::export(self.zcrx_id);
        sys::zcrx_ctrl(self.ring_fd, &mut ctrl).map_err(|source| PoolError::Kernel {
            op: "exporting the ZCRX instance",
            hint: "export must run on the ring's submitter thread".into(),
            source,
        })?;
        // SAFETY: on success the kernel wrote a new O_CLOEXEC fd that nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(ctrl.exported_fd() as RawFd) };
        Ok(ExportedZcrx::new(fd, self.decoder.clone()))
    }

    /// Installs the callback run when a buffer is dropped off the owner thread. Only
    /// the first call takes effect; returns whether this one did.
    pub fn set_return_notifier(&self, notify: ReturnNotifier) -> bool {
        self.decoder.core.set_notifier(notify)
    }

    /// Counters of this pool (shared with every importing ring).
    pub fn stats(&self) -> PoolStatsSnapshot {
        self.decoder.core.snapshot()
    }

    /// The live counters, to read from other threads.
    pub fn stats_handle(&self) -> crate::StatsHandle {
        crate::StatsHandle::new(self.decoder.core.clone())
    }
}

#[cfg(test)]
impl ZcPool {
    pub(crate) fn decoder_core(&self) -> &crate::core::PoolCore {
        &self.decoder.core
    }

    pub(crate) fn decoder_clone(&self) -> Decoder {
        self.decoder.clone()
    }

    pub(crate) fn core_weak(&self) -> std::sync::Weak<crate::core::PoolCore> {
        std::sync::Arc::downgrade(&self.decoder.core)
    }
}

/// The RECV_ZC SQE: multishot always, `zcrx_ifq_idx` always set explicitly.
pub(crate) fn recv_zc_entry(fd: RawFd, budget: u32, zcrx_id: u32) -> squeue::Entry {
    opcode::RecvZc::new(types::Fd(fd), budget)
        .ifq(zcrx_id)
        .build()
}
