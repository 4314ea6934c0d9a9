//! Startup: the workers' threads, rings, pools and zero-copy links, from a resolved
//! [`Builder`].

use super::{default_hold_limit, invalid, Builder, ZeroCopySharing};
use crate::driver::ring::RingConfig;
use crate::runtime::handle::Handle;
use crate::runtime::receive_mode::{
    self, KernelProbe, ReceiveMode, ReceiveModeReport, ResolvedMode,
};
use crate::runtime::receive_plan::ReceiveRole;
use crate::runtime::rx_state::RecvMemory;
use crate::runtime::tuning::Setting;
use crate::runtime::worker::WorkerConfig;
use crate::runtime::worker::{run_background, Core, WorkerShared};
use crate::runtime::zero_copy::{ZcLinks, ZcSetup};
use crate::runtime::Runtime;
use crate::wake::Unparker;
use std::io;
use std::rc::Rc;
use std::sync::Arc;
use zcrx::CopyPoolConfig;

impl Builder {
    /// `build` with the environment already applied.
    pub(super) fn build_with(&self, tuning: Vec<Setting>) -> io::Result<Runtime> {
        let threads = match self.threads {
            Some(n) => n,
            None => std::thread::available_parallelism()?.get(),
        };
        if threads == 0 {
            return Err(invalid("threads must be at least 1".into()));
        }
        if self.max_blocking_threads == 0 || self.blocking_keep_alive.is_zero() {
            return Err(invalid(format!(
                "max_blocking_threads ({}) and blocking_keep_alive ({:?}) must be more than 0",
                self.max_blocking_threads, self.blocking_keep_alive
            )));
        }
        if self.ring_entries == 0 || self.ring_entries > 32768 {
            return Err(invalid(format!(
                "ring_entries must be in 1..=32768, got {}",
                self.ring_entries
            )));
        }
        let cq_entries = self.cq_entries.unwrap_or(self.ring_entries * 4);
        if cq_entries < self.ring_entries {
            return Err(invalid(format!(
                "cq_entries ({cq_entries}) must be at least ring_entries ({})",
                self.ring_entries
            )));
        }
        if let Some(ceiling) = self.zc_pool_ceiling {
            if ceiling < self.pool_bytes {
                return Err(invalid(format!(
                    "zero_copy_pool_ceiling ({ceiling} bytes) is below pool_size ({} bytes)",
                    self.pool_bytes
                )));
            }
        }
        let mut cfg = WorkerConfig {
            ring: RingConfig {
                sq_entries: self.ring_entries,
                cq_entries,
                cqe32: self.cqe32,
                wait_batch: self.wait_batch,
                busy_poll: self.busy_poll,
            },
            pool: self.copy_pool_config()?,
            role: ReceiveRole::Copy,
            recv_bundles: self.recv_bundles,
            recv_hold_limit: 0,
            recv_memory: RecvMemory::default(),
            zc: None,
            udp_pool: self.udp_pool.clone().map(|c| CopyPoolConfig {
                incremental: false,
                ..c
            }),
            send_zc: self.send_zc,
            send_arena: self.send_arena,
        };
        let report = receive_mode::resolve(
            &self.receive_mode,
            threads,
            &KernelProbe,
            self.zero_copy_sharing == ZeroCopySharing::Auto,
        )?;
        cfg.recv_hold_limit = self.recv_hold_limit.unwrap_or_else(|| {
            default_hold_limit(cfg.pool.as_ref(), self.pool_bytes, self.chunk_size)
        });
        cfg.recv_memory = self.recv_memory(cfg.pool.as_ref(), report.target.is_some())?;
        cfg.zc = report.target.clone().map(|target| ZcSetup {
            target,
            area_bytes: self.pool_bytes,
            ceiling: self.zc_pool_ceiling,
            restarts: self.zc_restarts,
            chunk_size: self.chunk_size,
        });
        let started = self.start(threads, &cfg, report.clone(), tuning.clone());
        let rt = match started {
            Err(e)
                if self.receive_mode == ReceiveMode::Auto
                    && report.mode == ResolvedMode::ZeroCopy =>
            {
                let fallback = receive_mode::copy_report(
                    &ReceiveMode::Auto,
                    threads,
                    format!("auto: the probe accepted zero-copy but the workers could not attach it: {e}"),
                );
                tracing::info!(mode = %fallback.mode, reason = %fallback.reason, "zerorx receive mode");
                return self.start(threads, &cfg, fallback, tuning);
            }
            other => other?,
        };
        let r = rt.handle().receive_mode();
        tracing::info!(mode = %r.mode, reason = %r.reason, "zerorx receive mode");
        Ok(rt)
    }

    /// Each worker's receive memory: the limit, and what of it overflow receives may
    /// use beside the pools (`pool`, and with `zero_copy` an area of `pool_size`, or as
    /// much as its growth ceiling lets it reach: growth is within the same limit).
    fn recv_memory(
        &self,
        pool: Option<&CopyPoolConfig>,
        zero_copy: bool,
    ) -> io::Result<RecvMemory> {
        let copy = pool.map_or(0, |p| p.buffers as u64 * p.buffer_size as u64);
        let zc = match zero_copy {
            false => 0,
            true => self.zc_pool_ceiling.unwrap_or(0).max(self.pool_bytes) as u64,
        };
        let pools = copy + zc;
        let limit = self
            .recv_memory_limit
            .unwrap_or_else(|| self.default_memory_limit()) as u64;
        if limit < pools {
            return Err(invalid(format!(
                "receive_memory_limit ({limit} bytes) is below the receive pools it must hold \
                 ({pools} bytes: copy pool {copy}, zero-copy area {zc} up to its growth \
                 ceiling)"
            )));
        }
        Ok(RecvMemory {
            limit,
            overflow: limit - pools,
            wait: self.recv_memory_wait,
        })
    }

    /// Starts `threads` workers with the resolved receive mode.
    fn start(
        &self,
        threads: usize,
        cfg: &WorkerConfig,
        receive: ReceiveModeReport,
        tuning: Vec<Setting>,
    ) -> io::Result<Runtime> {
        // Task wakers kept in the op slab take one word, not a box.
        crate::driver::slim_waker::recognise_task_wakers(crate::executor::task::waker_vtable());
        let roles = receive.roles.clone();
        let workers = (0..threads)
            .map(|i| Ok(Arc::new(WorkerShared::new(i, Unparker::new(self.wake)?))))
            .collect::<io::Result<Vec<_>>>()?;
        let blocking = crate::blocking::BlockingPool::new(self.blocking_config());
        let handle = Handle::new(workers.clone(), self.wake, receive, tuning, blocking);
        // Each importer gets its owner's export over a channel of its own.
        let mut links: Vec<ZcLinks> = (0..threads).map(|_| ZcLinks::default()).collect();
        for (i, role) in roles.iter().enumerate() {
            if let ReceiveRole::Import { owner } = *role {
                let (tx, rx) = std::sync::mpsc::channel();
                links[owner].export_to.push((i, tx));
                links[owner].importers.push(workers[i].clone());
                links[i].import_from = Some(rx);
            }
        }
        let mut links = links.into_iter();
        let cfg0 = cfg.for_worker(roles[0]);
        let core0 = Rc::new(Core::new(
            workers[0].clone(),
            handle.clone(),
            &cfg0,
            links.next().unwrap_or_default(),
        )?);
        // Fail here, clearly, rather than with workers that can never be woken.
        let ring0 = core0.driver.borrow().ring_fd();
        workers[0].unparker().check(ring0)?;

        let mut rt = Runtime {
            handle: handle.clone(),
            core0,
            entered: Default::default(),
            turning: Default::default(),
            readiness: Default::default(),
            threads: Vec::with_capacity(threads - 1),
            shutdown_timeout: self.shutdown_timeout,
            closed: false,
        };
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut ready = Vec::with_capacity(threads - 1);
        for shared in workers.iter().skip(1).cloned() {
            let index = shared.index;
            let (tx, rx) = std::sync::mpsc::channel();
            let h = handle.clone();
            let cfg = cfg.for_worker(roles[index]);
            let link = links.next().unwrap_or_default();
            let pin = self.pin_cpus.then_some(index % cpus);
            let spawned = std::thread::Builder::new()
                .name(format!("zerorx-worker-{index}"))
                .spawn(move || {
                    if let Some(cpu) = pin {
                        if let Err(e) = pin_to_cpu(cpu) {
                            tracing::warn!(worker = index, cpu, error = %e, "pinning failed");
                        }
                    }
                    run_background(shared, h, cfg, link, tx)
                });
            match spawned {
                Ok(t) => rt.threads.push((index, t)),
                Err(e) => {
                    // Dropping `rt` stops the workers already started.
                    return Err(io::Error::new(
                        e.kind(),
                        format!("spawning worker thread {index}: {e}"),
                    ));
                }
            }
            ready.push((index, rx));
        }
        for (index, rx) in ready {
            match rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("worker {index} failed to start: {e}"),
                    ))
                }
                Err(_) => return Err(io::Error::other(format!("worker {index} died at start"))),
            }
        }
        tracing::debug!(threads, wake = ?self.wake, "runtime started");
        Ok(rt)
    }
}

fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    // SAFETY: `cpu_set_t` is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes one bit inside `set`, `cpu` is below the set size for any
    // CPU count this machine reports.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 is the calling thread; `set` is a valid, initialised cpu set.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
