//! The part of a pool shared by its owner and every buffer handle: memory, counters,
//! the cross-thread return queue, and the owner-only ring state.
//!
//! Ownership rule: the producer side of the kernel ring ([`Recycler`]) is touched only
//! on the thread that created the pool. A buffer dropped there goes straight back into
//! the ring's entries; a buffer dropped anywhere else is sent through a channel that
//! the owner drains in [`PoolCore::maintain`], so no other thread ever writes
//! kernel-shared memory.
//!
//! The core (and with it the mappings) lives until the pool handle *and* the last
//! buffer handle are gone.

use crate::mem::Mapping;
use crate::owner;
use crate::stats::{PoolStats, PoolStatsSnapshot};
use crossbeam_channel::{Receiver, Sender};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// One buffer coming back: the pool-specific token (buffer id or area offset) and the
/// length the completion reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Return {
    pub(crate) token: u64,
    pub(crate) len: u32,
}

/// The owner-only producer side of a pool's kernel ring.
pub(crate) trait Recycler: Send {
    /// Queues one returned buffer for the kernel (not yet published).
    fn recycle(&mut self, ret: Return, stats: &PoolStats);
    /// Publishes queued returns to the kernel; may make control calls (flush).
    fn publish(&mut self, stats: &PoolStats);
    /// Buffer ids of a bundle completion that starts with buffer `first` (provided-buffer
    /// rings only; others have no bundles).
    fn bundle_ids(&self, _first: u16, _count: usize) -> Vec<u16> {
        Vec::new()
    }
    /// Incremental provided-buffer rings: hands out the next `len` bytes of buffer `id`
    /// and returns where they start in it (`last`: the kernel moved past the buffer).
    /// `None` where parts are not tracked or the completion does not fit.
    fn take_part(&mut self, _id: u16, _len: u32, _last: bool) -> Option<u32> {
        None
    }
    /// Incremental provided-buffer rings: buffers out of the ring (kernel done with
    /// them, handles alive). `None` elsewhere.
    fn held(&self) -> Option<usize> {
        None
    }
}

/// Called after a buffer was dropped off the owner thread, so the owner can be woken
/// to take it back.
pub type ReturnNotifier = Arc<dyn Fn() + Send + Sync>;

/// State shared between a pool and its buffers.
pub(crate) struct PoolCore {
    owner: u64,
    /// True while the owner is inside a method that holds the recycler (owner thread
    /// only; atomic so the core can be `Sync`).
    busy: AtomicBool,
    recycler: UnsafeCell<Box<dyn Recycler>>,
    remote_tx: Sender<Return>,
    remote_rx: Receiver<Return>,
    notifier: OnceLock<ReturnNotifier>,
    pub(crate) stats: PoolStats,
    /// Where received bytes live.
    pub(crate) area: Mapping,
    /// The kernel ring's memory (provided-buffer ring or refill region). Kept for its
    /// lifetime only: the recycler holds pointers into it.
    _ring_mem: Mapping,
    /// The kernel's copy statistics, when it keeps them for this pool (ZCRX events,
    /// Linux 7.2+).
    kernel_stats: OnceLock<KernelCopyStats>,
    /// Areas added to a zero-copy instance after registration (`ZCRX_CTRL_ADD_AREA`,
    /// Linux 7.3), by area id; the table is allocated at the first addition. Entries
    /// are set once and never removed, so any thread may look one up without a lock,
    /// and every area lives until the last buffer (which holds the core) is gone.
    added_areas: OnceLock<Box<[OnceLock<AddedArea>]>>,
}

/// An area added after registration.
#[derive(Debug)]
pub(crate) struct AddedArea {
    /// What the kernel puts in the high bits of every offset into it (area id << 48).
    pub(crate) token: u64,
    pub(crate) mapping: Mapping,
}

/// The kernel's `zcrx_stats` block of a zero-copy pool.
#[derive(Debug)]
pub(crate) struct KernelCopyStats {
    pub(crate) block: crate::shm::KernelStats,
    /// A device instance: its copied bytes are exactly what the kernel counts (a
    /// device-less one copies every byte, which the pool knows without the kernel).
    pub(crate) device: bool,
}

// SAFETY: `recycler` is only accessed on the owner thread (checked against `owner` in
// every accessor) and never re-entrantly (`busy`); everything else is Sync.
unsafe impl Sync for PoolCore {}

/// A pool's first area as memory a sender may register with its own ring
/// (`IORING_REGISTER_BUFFERS2`), so that sends of received bytes name the
/// registration: [`CopyPool::area_memory`](crate::CopyPool::area_memory),
/// [`ZcPool::area_memory`](crate::ZcPool::area_memory). Areas a zero-copy instance
/// adds later are not in it.
#[derive(Clone, Debug)]
pub struct AreaMemory {
    /// The area's addresses.
    pub range: std::ops::Range<usize>,
    /// Upgrades exactly while the area is mapped (the pool's core, which every
    /// [`RxBuf`](crate::RxBuf) of it holds).
    pub alive: std::sync::Weak<dyn std::any::Any + Send + Sync>,
}

impl PoolCore {
    pub(crate) fn new(
        recycler: Box<dyn Recycler>,
        area: Mapping,
        ring_mem: Mapping,
        chunks: u64,
    ) -> Arc<PoolCore> {
        let (remote_tx, remote_rx) = crossbeam_channel::unbounded();
        let stats = PoolStats::default();
        stats.chunks_total.store(chunks, Ordering::Relaxed);
        Arc::new(PoolCore {
            owner: owner::current(),
            busy: AtomicBool::new(false),
            recycler: UnsafeCell::new(recycler),
            remote_tx,
            remote_rx,
            notifier: OnceLock::new(),
            stats,
            area,
            _ring_mem: ring_mem,
            kernel_stats: OnceLock::new(),
            added_areas: OnceLock::new(),
        })
    }

    /// The first area, for a sender to register (see [`AreaMemory`]).
    pub(crate) fn area_memory(self: &Arc<Self>) -> AreaMemory {
        let start = self.area.as_ptr() as usize;
        let alive: std::sync::Weak<dyn std::any::Any + Send + Sync> = Arc::downgrade(self) as _;
        AreaMemory {
            range: start..start + self.area.len(),
            alive,
        }
    }

    /// The added area the kernel names by `token` (the high bits of an offset).
    pub(crate) fn added_area(&self, token: u64) -> Option<&Mapping> {
        let id = (token >> crate::abi::IORING_ZCRX_AREA_SHIFT) as usize;
        let area = self.added_areas.get()?.get(id)?.get()?;
        (area.token == token).then_some(&area.mapping)
    }

    /// Records an area the kernel accepted under `token`. Owner thread only (the one
    /// that made the control call); a token that is out of range or taken gives the
    /// mapping back.
    pub(crate) fn add_area(&self, area: AddedArea) -> Result<(), AddedArea> {
        let id = (area.token >> crate::abi::IORING_ZCRX_AREA_SHIFT) as usize;
        let table = self.added_areas.get_or_init(|| {
            (0..crate::abi::ZCRX_MAX_AREAS)
                .map(|_| OnceLock::new())
                .collect()
        });
        match table.get(id) {
            Some(slot) => slot.set(area),
            None => Err(area),
        }
    }

    /// The mapping (first or added) that holds `ptr`.
    pub(crate) fn area_holding(&self, ptr: usize) -> Option<&Mapping> {
        let holds = |m: &Mapping| {
            let base = m.as_ptr() as usize;
            ptr >= base && ptr < base + m.len()
        };
        if holds(&self.area) {
            return Some(&self.area);
        }
        self.added_areas
            .get()?
            .iter()
            .filter_map(|slot| slot.get())
            .map(|a| &a.mapping)
            .find(|m| holds(m))
    }

    /// Attaches the kernel's stats block (once, at assembly).
    pub(crate) fn set_kernel_stats(&self, stats: KernelCopyStats) {
        let _ = self.kernel_stats.set(stats);
    }

    /// Every counter, with the kernel's copy figures where it keeps them: for a device
    /// instance the copied / zero-copy split then comes from the kernel's count instead
    /// of from the instance's kind.
    pub(crate) fn snapshot(&self) -> PoolStatsSnapshot {
        let mut s = self.stats.snapshot();
        if let Some(k) = self.kernel_stats.get() {
            let z = k.block.read();
            s.kernel_copy_count = z.copy_count;
            s.kernel_copy_bytes = z.copy_bytes;
            if k.device {
                s.copied_bytes = z.copy_bytes.min(s.bytes);
                s.zero_copy_bytes = s.bytes - s.copied_bytes;
            }
        }
        s
    }

    /// Runs `f` with the recycler if called on the owner thread and not re-entered.
    fn with_recycler<R>(&self, f: impl FnOnce(&mut dyn Recycler, &PoolStats) -> R) -> Option<R> {
        // `busy` is only ever touched on the owner thread (after this check), so plain
        // loads and stores suffice: no read-modify-write on the per-buffer path.
        if owner::current() != self.owner || self.busy.load(Ordering::Relaxed) {
            return None;
        }
        self.busy.store(true, Ordering::Relaxed);
        // SAFETY: we are on the owner thread (the only one that touches `recycler`) and
        // `busy` was false, so no other borrow of it exists on this thread either.
        let r = f(unsafe { &mut **self.recycler.get() }, &self.stats);
        self.busy.store(false, Ordering::Relaxed);
        Some(r)
    }

    /// Takes a buffer back from any thread.
    pub(crate) fn give_back(&self, ret: Return) {
        self.stats.in_use.fetch_sub(1, Ordering::Relaxed);
        if self
            .with_recycler(|r, stats| r.recycle(ret, stats))
            .is_some()
        {
            return;
        }
        self.stats.returns_pending.fetch_add(1, Ordering::Relaxed);
        self.stats.remote_returns.fetch_add(1, Ordering::Relaxed);
        // The receiver lives in this same core, so the send cannot fail.
        let _ = self.remote_tx.send(ret);
        if let Some(notify) = self.notifier.get() {
            notify();
        }
    }

    /// Counts `len` bytes received into ordinary memory beside the pool
    /// ([`RxBuf::overflow`](crate::RxBuf)).
    pub(crate) fn overflow_taken(&self, len: u64) {
        self.stats.overflow_receives.fetch_add(1, Ordering::Relaxed);
        self.stats.overflow_bytes.fetch_add(len, Ordering::Relaxed);
        self.stats.overflow_held.fetch_add(len, Ordering::Relaxed);
    }

    /// Counts overflow bytes freed, on any thread; off the owner thread the owner is
    /// woken, since receives waiting for room under a memory limit may go on now.
    pub(crate) fn overflow_released(&self, len: u64) {
        self.stats.overflow_held.fetch_sub(len, Ordering::Relaxed);
        if owner::current() != self.owner {
            if let Some(notify) = self.notifier.get() {
                notify();
            }
        }
    }

    /// Owner thread, once per loop turn: takes back buffers dropped elsewhere and
    /// publishes every queued return with one release store. Returns how many remote
    /// returns were taken back; `None` off the owner thread.
    pub(crate) fn maintain(&self) -> Option<usize> {
        self.with_recycler(|r, stats| {
            let mut n = 0;
            // `give_back` counts a remote return before it sends it, and only this
            // thread takes them off, so zero means the channel is empty or its send
            // is about to be followed by the notifier's wake-up: the channel's own
            // check cost ~50 instructions a turn (counted), this load one.
            if stats.returns_pending.load(Ordering::Relaxed) > 0 {
                while let Ok(ret) = self.remote_rx.try_recv() {
                    stats.returns_pending.fetch_sub(1, Ordering::Relaxed);
                    r.recycle(ret, stats);
                    n += 1;
                }
            }
            r.publish(stats);
            n
        })
    }

    /// Buffer ids of a bundle (owner thread only).
    pub(crate) fn bundle_ids(&self, first: u16, count: usize) -> Option<Vec<u16>> {
        self.with_recycler(|r, _| r.bundle_ids(first, count))
            .filter(|ids| ids.len() == count)
    }

    /// See [`Recycler::take_part`] (owner thread only).
    pub(crate) fn take_part(&self, id: u16, len: u32, last: bool) -> Option<u32> {
        self.with_recycler(|r, _| r.take_part(id, len, last))
            .flatten()
    }

    /// See [`Recycler::held`] (owner thread only).
    pub(crate) fn held(&self) -> Option<usize> {
        self.with_recycler(|r, _| r.held()).flatten()
    }

    /// Installs the notifier once; later calls are ignored and return false.
    pub(crate) fn set_notifier(&self, notify: ReturnNotifier) -> bool {
        self.notifier.set(notify).is_ok()
    }
}

impl std::fmt::Debug for PoolCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolCore")
            .field("owner", &self.owner)
            .field("stats", &self.snapshot())
            .finish_non_exhaustive()
    }
}
