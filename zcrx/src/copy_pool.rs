//! The copy-mode pool: a provided-buffer ring over one area, filled by multishot
//! `recv` with buffer select. This is the fall-back when the NIC or kernel cannot do
//! ZCRX, and what loopback and virtio_net always use.

use crate::abi::cqe_flags;
use crate::core::{PoolCore, Recycler, Return, ReturnNotifier};
use crate::error::{registration_hint, PoolError};
use crate::mem::{Backing, Mapping};
use crate::rxbuf::RxBuf;
use crate::shm::{BufRing, BUF_RING_ENTRY_SIZE};
use crate::stats::{PoolStats, PoolStatsSnapshot};
use io_uring::{opcode, squeue, types, Submitter};
use std::marker::PhantomData;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// Sizing of a [`CopyPool`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyPoolConfig {
    /// Number of buffers: a power of two, at most 32768.
    pub buffers: u16,
    /// Bytes per buffer. Large buffers mean fewer completions per byte.
    pub buffer_size: u32,
    /// The buffer group id this pool registers as (unique per ring).
    pub group_id: u16,
    /// Memory backing of the area.
    pub backing: Backing,
    /// Incremental consumption (`IOU_PBUF_RING_INC`, Linux 6.12): a completion uses
    /// only the bytes it received and the kernel keeps filling the same buffer, so
    /// small receives from many sockets share one large buffer instead of taking one
    /// each. A buffer goes back to the kernel once the kernel is done with it *and*
    /// every [`RxBuf`] cut from it is dropped. Not combined with bundles. Default: on
    /// where the kernel has it ([`probe::incremental_buffers`](crate::probe::incremental_buffers)):
    /// without it every receive takes a whole buffer, so 64 connections sending 64 B
    /// messages empty a 64-buffer pool (measured: ~0.7 `ENOBUFS` per request).
    pub incremental: bool,
}

impl Default for CopyPoolConfig {
    /// 64 × 64 KiB: a 4 MiB pool stays warm in cache, which measured ~10 % less CPU per
    /// byte on loopback than a 64 MiB pool; consumed incrementally where the kernel can.
    fn default() -> Self {
        CopyPoolConfig {
            buffers: 64,
            buffer_size: 64 * 1024,
            group_id: 0,
            backing: Backing::Anonymous,
            incremental: crate::probe::incremental_buffers(),
        }
    }
}

impl CopyPoolConfig {
    fn validate(&self) -> Result<(), PoolError> {
        if self.buffers == 0 || !self.buffers.is_power_of_two() || self.buffers > 32768 {
            return Err(PoolError::InvalidConfig {
                field: "buffers",
                reason: format!(
                    "is {}; it must be a power of two from 1 to 32768",
                    self.buffers
                ),
            });
        }
        if self.buffer_size == 0 || self.buffer_size > 1 << 30 {
            return Err(PoolError::InvalidConfig {
                field: "buffer_size",
                reason: format!("is {}; it must be from 1 byte to 1 GiB", self.buffer_size),
            });
        }
        let total = self.buffers as u64 * self.buffer_size as u64;
        if total > 1 << 36 {
            return Err(PoolError::InvalidConfig {
                field: "buffers × buffer_size",
                reason: format!("is {total} bytes; the limit is 64 GiB"),
            });
        }
        Ok(())
    }
}

/// Owner-side state of the provided-buffer ring.
struct BufRingRecycler {
    ring: BufRing,
    /// Private tail: entries written, published or not.
    tail: u16,
    /// Tail value last made visible to the kernel.
    published: u16,
    mask: u16,
    buffer_size: u32,
    area_base: u64,
    /// Which buffer id sits at each ring slot: a bundle completion names only its first
    /// buffer; the rest are the slots after it.
    slot_bid: Box<[u16]>,
    /// The slot each buffer id was last placed at.
    slot_of_bid: Box<[u16]>,
    /// Incremental rings: which parts of each buffer are handed out.
    incremental: Option<Incremental>,
}

/// Per-buffer state of an incrementally consumed ring (owner thread only).
struct Incremental {
    /// Bytes the kernel has filled since the buffer was last offered: the next
    /// completion naming the buffer starts here.
    filled: Box<[u32]>,
    /// Live [`RxBuf`]s cut from the buffer.
    handles: Box<[u32]>,
    /// The kernel moved past the buffer (a completion without `F_BUF_MORE`).
    kernel_done: Box<[bool]>,
    /// Buffers out of the ring: kernel done, handles still alive.
    held: usize,
}

impl BufRingRecycler {
    fn place(&mut self, bid: u16) {
        let slot = self.tail & self.mask;
        self.ring.write(
            self.tail,
            self.area_base + bid as u64 * self.buffer_size as u64,
            self.buffer_size,
            bid,
        );
        self.slot_bid[slot as usize] = bid;
        self.slot_of_bid[bid as usize] = slot;
        self.tail = self.tail.wrapping_add(1);
    }
}

impl Recycler for BufRingRecycler {
    fn recycle(&mut self, ret: Return, _stats: &PoolStats) {
        let bid = ret.token as u16;
        if let Some(inc) = self.incremental.as_mut() {
            let i = bid as usize;
            inc.handles[i] = inc.handles[i].saturating_sub(1);
            if inc.handles[i] > 0 || !inc.kernel_done[i] {
                // Still being filled by the kernel, or other parts still held.
                return;
            }
            inc.kernel_done[i] = false;
            inc.filled[i] = 0;
            inc.held -= 1;
        }
        self.place(bid);
    }

    fn take_part(&mut self, id: u16, len: u32, last: bool) -> Option<u32> {
        let size = self.buffer_size;
        let inc = self.incremental.as_mut()?;
        let i = id as usize;
        let start = inc.filled[i];
        if inc.kernel_done[i] || start as u64 + len as u64 > size as u64 {
            return None;
        }
        inc.filled[i] = start + len;
        inc.handles[i] += 1;
        if last {
            inc.kernel_done[i] = true;
            inc.held += 1;
        }
        Some(start)
    }

    fn held(&self) -> Option<usize> {
        self.incremental.as_ref().map(|inc| inc.held)
    }

    fn bundle_ids(&self, first: u16, count: usize) -> Vec<u16> {
        let start = self.slot_of_bid[first as usize];
        (0..count)
            .map(|i| self.slot_bid[(start.wrapping_add(i as u16) & self.mask) as usize])
            .collect()
    }

    fn publish(&mut self, stats: &PoolStats) {
        if self.tail != self.published {
            stats.returned(self.tail.wrapping_sub(self.published) as u64);
            self.ring.publish(self.tail);
            self.published = self.tail;
        }
    }
}

/// A provided-buffer ring pool registered with one io_uring ring.
///
/// Not `Send`: it lives on the thread that owns the ring. The [`RxBuf`]s it hands out
/// are `Send` and come back from any thread.
#[derive(Debug)]
pub struct CopyPool {
    core: Arc<PoolCore>,
    group_id: u16,
    buffers: u16,
    buffer_size: u32,
    incremental: bool,
    _owner_thread: PhantomData<*const ()>,
}

impl CopyPool {
    /// Maps the area and the ring, offers every buffer, and registers the ring as
    /// buffer group `config.group_id` of the ring behind `submitter`.
    ///
    /// # Safety
    /// The pool's memory must not be unmapped while the kernel may write into it: the
    /// ring must be closed (or the group unregistered) before the pool is dropped. The
    /// pool keeps its memory alive afterwards for as long as any [`RxBuf`] exists.
    pub unsafe fn register(
        submitter: &Submitter<'_>,
        config: &CopyPoolConfig,
    ) -> Result<CopyPool, PoolError> {
        config.validate()?;
        let n = config.buffers;
        let area = Mapping::new(n as usize * config.buffer_size as usize, config.backing)
            .map_err(PoolError::Memory)?;
        let ring_mem = Mapping::new(n as usize * BUF_RING_ENTRY_SIZE, Backing::Anonymous)
            .map_err(PoolError::Memory)?;
        // SAFETY: `ring_mem` holds `n` entries, `n` is a power of two (validated), and
        // the mapping moves into the core together with the recycler.
        let ring = unsafe { BufRing::new(&ring_mem, n) };
        let mut recycler = BufRingRecycler {
            ring,
            tail: 0,
            published: 0,
            mask: n - 1,
            buffer_size: config.buffer_size,
            area_base: area.as_ptr() as u64,
            slot_bid: vec![0; n as usize].into_boxed_slice(),
            slot_of_bid: vec![0; n as usize].into_boxed_slice(),
            incremental: config.incremental.then(|| Incremental {
                filled: vec![0; n as usize].into_boxed_slice(),
                handles: vec![0; n as usize].into_boxed_slice(),
                kernel_done: vec![false; n as usize].into_boxed_slice(),
                held: 0,
            }),
        };
        for bid in 0..n {
            recycler.place(bid);
        }
        let stats = PoolStats::default();
        recycler.publish(&stats);
        let flags = if config.incremental {
            crate::abi::IOU_PBUF_RING_INC
        } else {
            0
        };
        // SAFETY: the ring memory stays mapped for the core's life, which the caller
        // extends past the ring's (this function's contract).
        unsafe {
            submitter.register_buf_ring_with_flags(
                ring_mem.as_ptr() as u64,
                n,
                config.group_id,
                flags,
            )
        }
        .map_err(|source| PoolError::Kernel {
            op: if config.incremental {
                "registering the incremental provided-buffer ring (IOU_PBUF_RING_INC, Linux 6.12)"
            } else {
                "registering the provided-buffer ring"
            },
            hint: registration_hint(&source),
            source,
        })?;
        Ok(CopyPool {
            core: PoolCore::new(Box::new(recycler), area, ring_mem, n as u64),
            group_id: config.group_id,
            buffers: n,
            buffer_size: config.buffer_size,
            incremental: config.incremental,
            _owner_thread: PhantomData,
        })
    }

    /// The buffer group id to select buffers from.
    pub fn group_id(&self) -> u16 {
        self.group_id
    }

    /// The pool's area, for registering it as send memory with a ring (a proxy's
    /// sends of received buffers then name the registration).
    pub fn area_memory(&self) -> crate::AreaMemory {
        self.core.area_memory()
    }

    /// Bytes per buffer.
    pub fn buffer_size(&self) -> u32 {
        self.buffer_size
    }

    /// Whether buffers are consumed incrementally (`IOU_PBUF_RING_INC`).
    pub fn is_incremental(&self) -> bool {
        self.incremental
    }

    /// A multishot `recv` on `fd` drawing from this pool: one completion per buffer
    /// filled, until it ends (no `F_MORE`).
    pub fn recv_multishot(&self, fd: RawFd) -> squeue::Entry {
        opcode::RecvMulti::new(types::Fd(fd), self.group_id).build()
    }

    /// A multishot bundle `recv` (Linux 6.10+, `IORING_FEAT_RECVSEND_BUNDLE`): one
    /// completion may cover several consecutive buffers; decode with
    /// [`take_bundle`](Self::take_bundle).
    pub fn recv_multishot_bundle(&self, fd: RawFd) -> squeue::Entry {
        opcode::RecvMultiBundle::new(types::Fd(fd), self.group_id).build()
    }

    /// Turns a data completion (`res > 0` with a buffer) into the buffer holding exactly
    /// `res` bytes.
    ///
    /// Call it for every data completion, in the order the completions were reaped: in
    /// an incremental pool a completion's bytes start where the previous completion
    /// naming the same buffer (from any socket) ended.
    pub fn take(&self, res: i32, flags: u32) -> Result<RxBuf, PoolError> {
        let bid = self.check(res, flags)?;
        if res as u32 > self.buffer_size {
            return Err(PoolError::BadCompletion(format!(
                "{res} bytes in one {}-byte buffer (a bundle completion needs take_bundle)",
                self.buffer_size
            )));
        }
        if !self.incremental {
            return Ok(self.hand_out(bid, 0, res as u32));
        }
        // The kernel filled the buffer from where the previous completion naming it
        // ended; without `F_BUF_MORE` it has moved on to the next buffer.
        let last = flags & cqe_flags::BUF_MORE == 0;
        let start = self.core.take_part(bid, res as u32, last).ok_or_else(|| {
            PoolError::BadCompletion(format!(
                "{res} more bytes do not fit buffer {bid} of {} bytes (or it was \
                     already finished, or this is not the owner thread)",
                self.buffer_size
            ))
        })?;
        Ok(self.hand_out(bid, start, res as u32))
    }

    /// Decodes a bundle completion into its buffers, in byte order, each holding its
    /// share of `res`; calls `each` once per buffer and returns how many there were.
    ///
    /// Runs eagerly: the ring slots that name the later buffers are only stable until
    /// the next returns are published.
    pub fn take_bundle(
        &self,
        res: i32,
        flags: u32,
        mut each: impl FnMut(RxBuf),
    ) -> Result<usize, PoolError> {
        let first = self.check(res, flags)?;
        if self.incremental {
            return Err(PoolError::BadCompletion(
                "bundle completion on an incremental pool (bundles are not armed there)".into(),
            ));
        }
        let size = self.buffer_size as usize;
        let count = (res as usize).div_ceil(size);
        if count > self.buffers as usize {
            return Err(PoolError::BadCompletion(format!(
                "{res} bytes span {count} buffers but the pool has {}",
                self.buffers
            )));
        }
        let bids = self.core.bundle_ids(first, count).ok_or_else(|| {
            PoolError::BadCompletion("bundle decoded off the owner thread".into())
        })?;
        let mut left = res as usize;
        for bid in bids {
            let len = left.min(size);
            left -= len;
            each(self.hand_out(bid, 0, len as u32));
        }
        Ok(count)
    }

    fn check(&self, res: i32, flags: u32) -> Result<u16, PoolError> {
        if res <= 0 {
            return Err(PoolError::BadCompletion(format!(
                "result {res} carries no data"
            )));
        }
        if flags & cqe_flags::BUFFER == 0 {
            return Err(PoolError::BadCompletion(format!(
                "flags {flags:#x} name no buffer"
            )));
        }
        let bid = (flags >> cqe_flags::BUFFER_SHIFT) as u16;
        if bid >= self.buffers {
            return Err(PoolError::BadCompletion(format!(
                "buffer id {bid} out of range (pool has {})",
                self.buffers
            )));
        }
        Ok(bid)
    }

    fn hand_out(&self, bid: u16, start: u32, len: u32) -> RxBuf {
        // Only the owner thread decodes (the pool is not `Send`).
        self.core.stats.handed_out_by_owner(len as u64);
        let offset = bid as usize * self.buffer_size as usize + start as usize;
        // SAFETY: `bid < buffers` and `start + len <= buffer_size` (checked by the
        // callers), so the range is inside the area; the kernel reported these `len`
        // bytes in buffer `bid`, and the buffer is not offered again until this handle
        // (and, when incremental, every other part of it) is dropped.
        unsafe {
            RxBuf::new(
                self.core.clone(),
                self.core.area.as_ptr().add(offset),
                len,
                bid as u64,
            )
        }
    }

    /// Owner thread, once per loop turn (before waiting in the kernel): takes back the
    /// buffers dropped on other threads and publishes all returns with one tail store.
    /// Returns how many buffers came back from other threads.
    pub fn maintain(&self) -> usize {
        self.core.maintain().unwrap_or(0)
    }

    /// Buffers the kernel can fill right now (offered and not yet used), as far as the
    /// pool knows: all buffers minus those held by the application or waiting to return.
    pub fn available(&self) -> usize {
        if self.incremental {
            // Handles are parts of buffers here; the recycler counts whole buffers.
            return self
                .core
                .held()
                .map_or(0, |held| (self.buffers as usize).saturating_sub(held));
        }
        // Called every loop turn: read the three counters it needs, not a snapshot.
        let s = &self.core.stats;
        let out = s.in_use.load(Relaxed) + s.returns_pending.load(Relaxed);
        s.chunks_total.load(Relaxed).saturating_sub(out) as usize
    }

    /// Wraps bytes received into ordinary memory `data` (a plain `recv` made because
    /// this pool was dry while the application held its buffers) in an [`RxBuf`]: the
    /// same handle as a pooled buffer, counted in this pool's `overflow_*` figures and
    /// freed (not returned) when the last handle drops. Returns `None` for empty data.
    pub fn overflow_buf(&self, data: Vec<u8>) -> Option<RxBuf> {
        (!data.is_empty()).then(|| RxBuf::overflow(self.core.clone(), data))
    }

    /// Bytes of ordinary memory that overflow receives hold now (see
    /// [`overflow_buf`](Self::overflow_buf)); one load.
    pub fn overflow_held(&self) -> u64 {
        self.core.stats.overflow_held.load(Relaxed)
    }

    /// Installs the callback run when a buffer is dropped off the owner thread (to wake
    /// the owner). Only the first call takes effect; returns whether this one did.
    pub fn set_return_notifier(&self, notify: ReturnNotifier) -> bool {
        self.core.set_notifier(notify)
    }

    /// Counters of this pool.
    pub fn stats(&self) -> PoolStatsSnapshot {
        self.core.snapshot()
    }

    /// The live counters, to read from other threads.
    pub fn stats_handle(&self) -> StatsHandle {
        StatsHandle::new(self.core.clone())
    }
}

/// A cloneable, `Send` view of a pool's counters that keeps the pool memory alive.
#[derive(Debug, Clone)]
pub struct StatsHandle(Arc<PoolCore>);

impl StatsHandle {
    pub(crate) fn new(core: Arc<PoolCore>) -> StatsHandle {
        StatsHandle(core)
    }

    /// Copies every counter.
    pub fn snapshot(&self) -> PoolStatsSnapshot {
        self.0.snapshot()
    }

    /// Ring entries made visible to the kernel so far (see
    /// [`PoolStatsSnapshot::returned_to_kernel`]); one load.
    pub fn returned_to_kernel(&self) -> u64 {
        self.0
            .stats
            .returned_to_kernel
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Chunks the kernel has been given to receive into so far: the pool's chunks
    /// (those it started with and every added area's) plus every return. It grows
    /// whenever the kernel gets a chunk, by a return or by growth, so a receive that
    /// waited for chunks compares it against the value it failed at.
    pub fn chunks_given_to_kernel(&self) -> u64 {
        let s = &self.0.stats;
        s.returned_to_kernel
            .load(std::sync::atomic::Ordering::Relaxed)
            .wrapping_add(s.chunks_total.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// [`PoolStatsSnapshot::low_passes`] alone: one load, for a check every loop turn.
    pub fn low_passes(&self) -> u64 {
        self.0
            .stats
            .low_passes
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Counts a terminal receive result (`-ENOBUFS`, `-ENOSPC`, `-ENOMEM`, `-EFAULT`).
    pub fn record_errno(&self, errno: i32) {
        self.0.stats.record_errno(errno)
    }

    /// Counts a receive re-armed after a recoverable end.
    pub fn record_rearm(&self) {
        self.0.stats.record_rearm()
    }
}
