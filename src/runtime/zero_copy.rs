//! Attaching a worker to its zero-copy pool, on the worker's own thread: register the
//! instance (owner) and export it to each importer, or import the owner's export, or
//! note which worker serves this one's receives (handover).

use super::pressure::Pressure;
use super::receive_mode::ZeroCopyTarget;
use super::receive_plan::ReceiveRole;
use super::worker::WorkerShared;
use super::zc_restart::ParkedRestart;
use crate::driver::Driver;
use io_uring::squeue;
use std::cell::Cell;
use std::io;
use std::os::fd::RawFd;
use std::rc::Rc;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::Duration;
use zcrx::{ExportedZcrx, PoolError, RxBuf, StatsHandle, ZcImport, ZcPool, ZcPoolConfig, ZcTarget};

/// How long an importer waits for its owner's export.
const EXPORT_WAIT: Duration = Duration::from_secs(30);

/// An owner's export on its way to an importer, or why there is none.
pub(crate) type ExportMsg = Result<ExportedZcrx, String>;

/// Where zero-copy pools are bound and how large they are (same for every worker).
#[derive(Clone, Debug)]
pub(crate) struct ZcSetup {
    pub(crate) target: ZeroCopyTarget,
    pub(crate) area_bytes: usize,
    /// How far an owned pool may grow (`Builder::zero_copy_pool_ceiling`).
    pub(crate) ceiling: Option<usize>,
    /// Restart receives the kernel may leave parked (`Builder::zero_copy_restarts`;
    /// `None`: where the kernel lacks zcrx events).
    pub(crate) restarts: Option<bool>,
    pub(crate) chunk_size: u32,
}

/// The zero-copy instance a worker's ring receives with.
#[derive(Debug)]
pub(crate) enum ZcRing {
    /// This worker registered the instance (and maintains its refill ring).
    Owner(ZcPool),
    /// Imported from the owning worker; chunks return through the owner.
    Import(ZcImport),
}

impl ZcRing {
    pub(crate) fn entry(&self, fd: RawFd, budget: u32) -> squeue::Entry {
        match self {
            ZcRing::Owner(p) => p.recv_zc(fd, budget),
            ZcRing::Import(i) => i.recv_zc(fd, budget),
        }
    }

    pub(crate) fn take(&self, res: i32, big_cqe: [u64; 2]) -> Result<RxBuf, PoolError> {
        match self {
            ZcRing::Owner(p) => p.take(res, big_cqe),
            ZcRing::Import(i) => i.take(res, big_cqe),
        }
    }

    /// The pool's live counters (the owner's, for an import).
    pub(crate) fn stats_handle(&self) -> StatsHandle {
        match self {
            ZcRing::Owner(p) => p.stats_handle(),
            ZcRing::Import(i) => i.stats_handle(),
        }
    }

    /// Which kernel instance this ring receives with.
    pub(crate) fn instance(&self) -> crate::runtime::ZcInstance {
        match self {
            ZcRing::Owner(p) => crate::runtime::ZcInstance {
                zcrx_id: p.zcrx_id(),
                area: p.area(),
                imported: false,
            },
            ZcRing::Import(i) => crate::runtime::ZcInstance {
                zcrx_id: i.zcrx_id(),
                area: i.area(),
                imported: true,
            },
        }
    }

    /// Owner only: adds an area of `bytes` (`ZcPool::add_area`); the chunk count after.
    pub(crate) fn add_area(&self, bytes: usize) -> Option<Result<u64, zcrx::PoolError>> {
        match self {
            ZcRing::Owner(p) => Some(p.add_area(bytes)),
            ZcRing::Import(_) => None,
        }
    }

    /// Handles an event CQE of the instance this worker registered (counted and
    /// re-armed by the pool). Importers are never sent events: the kernel posts them
    /// to the registering ring only.
    pub(crate) fn on_event(&self, res: i32) -> Option<zcrx::ZcEvent> {
        match self {
            ZcRing::Owner(p) => Some(p.on_event(res)),
            ZcRing::Import(_) => None,
        }
    }

    /// Owner only, once per loop turn: takes back chunks, publishes and flushes the
    /// refill ring.
    pub(crate) fn maintain(&self) {
        if let ZcRing::Owner(p) = self {
            p.maintain();
        }
    }
}

/// An owned pool that may grow by adding areas (Linux 7.3) up to a ceiling.
pub(crate) struct Growth {
    /// Bytes per added area: the first area's size.
    step: usize,
    ceiling: usize,
    /// Bytes the pool has now.
    size: Cell<usize>,
    /// The kernel refused an addition: no more tries.
    stopped: Cell<bool>,
}

impl Growth {
    /// The pool's free share is at the pressure mark holders let go at.
    fn low(ring: &ZcRing) -> bool {
        let s = ring.stats_handle().snapshot();
        Pressure {
            available: s.chunks_total.saturating_sub(s.in_use + s.returns_pending) as usize,
            total: s.chunks_total as usize,
        }
        .is_low()
    }

    /// Adds an area when `dry` (the kernel said so) or the pool is low, and the next
    /// area fits under the ceiling. Returns whether the pool grew; a refused addition
    /// stops growth for good, with one log line.
    pub(crate) fn grow_if_needed(&self, ring: &ZcRing, dry: bool, worker: usize) -> bool {
        let size = self.size.get();
        if self.stopped.get() || size + self.step > self.ceiling || !(dry || Self::low(ring)) {
            return false;
        }
        match ring.add_area(self.step) {
            Some(Ok(chunks)) => {
                self.size.set(size + self.step);
                tracing::info!(
                    worker,
                    bytes = size + self.step,
                    chunks,
                    "zero-copy pool grew"
                );
                true
            }
            Some(Err(e)) => {
                tracing::warn!(worker, error = %e, "adding an area to the zero-copy pool failed; it stays at {size} bytes");
                self.stopped.set(true);
                false
            }
            None => false,
        }
    }
}

/// The per-worker wiring between owners and importers (not `Clone`: channel ends).
#[derive(Default)]
pub(crate) struct ZcLinks {
    /// Owner: one export per importer.
    pub(crate) export_to: Vec<(usize, Sender<ExportMsg>)>,
    /// Importer: where the owner's export arrives.
    pub(crate) import_from: Option<Receiver<ExportMsg>>,
    /// Owner: importers to wake when chunks go back to the kernel.
    pub(crate) importers: Vec<Arc<WorkerShared>>,
}

/// What a worker receives zero-copy with.
pub(crate) enum ZcWorker {
    /// Copy mode.
    None,
    /// RECV_ZC on this worker's ring.
    Local {
        ring: Rc<ZcRing>,
        /// Owner with a ceiling on a kernel that can add areas.
        growth: Option<Growth>,
        /// Owner: importing workers to unpark when chunks return.
        importers: Vec<Arc<WorkerShared>>,
        /// Device-less instance: loopback flows are received zero-copy too.
        loopback: bool,
        /// A kernel without zcrx events (Linux 7.1), which can leave a receive parked
        /// on a dry area: restarts them ([`ParkedRestart`]).
        restart: Option<ParkedRestart>,
    },
    /// Receives run on `owner`'s ring and are handed over.
    Handover { owner: usize, loopback: bool },
}

fn zc_error(worker: usize, what: &str, e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("worker {worker}: {what}: {e}"))
}

/// Attaches worker `shared.index` in `role`; runs on the worker's thread after its
/// ring exists.
pub(crate) fn attach(
    role: ReceiveRole,
    setup: Option<&ZcSetup>,
    links: ZcLinks,
    driver: &mut Driver,
    shared: &Arc<WorkerShared>,
) -> io::Result<ZcWorker> {
    let index = shared.index;
    let (setup, loopback) = match (role, setup) {
        (ReceiveRole::Copy, _) => return Ok(ZcWorker::None),
        (_, None) => {
            return Err(zc_error(
                index,
                "zero-copy role without a target",
                format!("{role}"),
            ))
        }
        (_, Some(s)) => (s, matches!(s.target, ZeroCopyTarget::DeviceLess { .. })),
    };
    if let ReceiveRole::Handover { owner } = role {
        return Ok(ZcWorker::Handover { owner, loopback });
    }
    if !driver.ring_flags().defer_taskrun || !driver.ring_flags().cqe32 {
        return Err(zc_error(
            index,
            "zero-copy receive needs a ring with DEFER_TASKRUN and CQE32",
            format!("this ring has {:?}", driver.ring_flags()),
        ));
    }
    let features = zcrx::probe::capabilities().zcrx.clone();
    let ring = match role {
        ReceiveRole::Owner { instance } => {
            let target = match &setup.target {
                ZeroCopyTarget::Device {
                    ifindex, queues, ..
                } => ZcTarget::Device {
                    ifindex: *ifindex,
                    queue: queues[instance],
                },
                ZeroCopyTarget::DeviceLess { .. } => ZcTarget::NoDev,
            };
            let config = ZcPoolConfig {
                area_bytes: setup.area_bytes,
                chunk_size: setup.chunk_size,
                // Events (Linux 7.2+) come back as CQEs the driver routes to this pool.
                event_user_data: Some(crate::driver::slab::reserved::ZCRX_EVENT),
                ..ZcPoolConfig::new(target)
            };
            let _span = tracing::info_span!("zerorx_zc_pool", worker = index, ?target).entered();
            // SAFETY: the pool ends up in `Core::zc`, declared after `Core::driver`, so
            // the ring is closed before the pool drops; ops hold clones and are freed
            // only after their final completion, or leaked with their clone.
            let pool = unsafe { ZcPool::register(driver.ring_fd(), &features, &config) }
                .map_err(|e| zc_error(index, "registering the zero-copy pool", e))?;
            let weak = Arc::downgrade(shared);
            pool.set_return_notifier(Arc::new(move || {
                if let Some(shared) = weak.upgrade() {
                    shared.unpark();
                }
            }));
            tracing::info!(
                zcrx_id = pool.zcrx_id(),
                chunk = pool.chunk_size(),
                area = setup.area_bytes,
                importers = links.export_to.len(),
                "zero-copy pool registered"
            );
            for (importer, tx) in links.export_to {
                let export = pool.export().map_err(|e| e.to_string());
                if let Err(e) = &export {
                    tracing::error!(importer, error = %e, "exporting the zero-copy pool failed");
                }
                // A dropped receiver means the importer already failed; build() reports it.
                let _ = tx.send(export);
            }
            ZcRing::Owner(pool)
        }
        ReceiveRole::Import { owner } => {
            let rx = links.import_from.ok_or_else(|| {
                zc_error(
                    index,
                    "importer without a channel from",
                    format!("worker {owner}"),
                )
            })?;
            let export = rx
                .recv_timeout(EXPORT_WAIT)
                .map_err(|e| zc_error(index, &format!("no export from worker {owner}"), e))?
                .map_err(|e| zc_error(index, &format!("worker {owner} could not export"), e))?;
            // SAFETY: as for the owner: `Core::zc` drops after the ring is closed.
            let import = unsafe { export.import(driver.ring_fd(), &features) }
                .map_err(|e| zc_error(index, &format!("importing worker {owner}'s pool"), e))?;
            tracing::info!(
                worker = index,
                owner,
                zcrx_id = import.zcrx_id(),
                "zero-copy pool imported"
            );
            ZcRing::Import(import)
        }
        ReceiveRole::Copy | ReceiveRole::Handover { .. } => return Ok(ZcWorker::None),
    };
    let _ = shared.zc_pool_stats.set(ring.stats_handle());
    let _ = shared.zc_instance.set(ring.instance());
    let growth = match (&ring, setup.ceiling) {
        (ZcRing::Owner(_), Some(ceiling)) if ceiling > setup.area_bytes => {
            if features.add_area {
                Some(Growth {
                    step: setup.area_bytes,
                    ceiling,
                    size: Cell::new(setup.area_bytes),
                    stopped: Cell::new(false),
                })
            } else {
                // Once per pool, here: growth is never tried later, so nothing else
                // would say why a pool with a ceiling stays at its first size.
                tracing::info!(
                    worker = index,
                    "the zero-copy pool cannot grow to its ceiling of {ceiling} bytes: kernel {} lacks ZCRX_CTRL_ADD_AREA (Linux 7.3+); it stays at {} bytes",
                    zcrx::probe::capabilities().kernel_release,
                    setup.area_bytes
                );
                None
            }
        }
        _ => None,
    };
    // Whether this kernel can leave a receive parked is told by what it lacks: the
    // line that fixed it (7.2) is the one that added zcrx events.
    let restart = setup
        .restarts
        .unwrap_or(!features.events)
        .then(ParkedRestart::default);
    Ok(ZcWorker::Local {
        ring: Rc::new(ring),
        growth,
        importers: links.importers,
        loopback,
        restart,
    })
}
