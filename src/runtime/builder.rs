//! [`Builder`]: runtime configuration and startup.

use super::handle::Handle;
use super::worker::WorkerConfig;
use super::worker::{run_background, Core, WorkerShared};
use super::Runtime;
use crate::driver::ring::RingConfig;
use crate::wake::{Unparker, WakeMode};
use std::io;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use zcrx::CopyPoolConfig;

/// Configures and starts a [`Runtime`].
#[derive(Clone, Debug)]
pub struct Builder {
    threads: Option<usize>,
    ring_entries: u32,
    cq_entries: Option<u32>,
    pin_cpus: bool,
    wake: WakeMode,
    cqe32: bool,
    shutdown_timeout: Duration,
    copy_pool: Option<CopyPoolConfig>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            threads: None,
            ring_entries: 256,
            cq_entries: None,
            pin_cpus: false,
            wake: WakeMode::EventFd,
            cqe32: false,
            shutdown_timeout: Duration::from_secs(5),
            copy_pool: Some(CopyPoolConfig::default()),
        }
    }
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

impl Builder {
    /// A builder with the defaults: one worker per available CPU, 256 SQ entries, a CQ
    /// four times that, eventfd wake-ups, no pinning, 16-byte CQEs.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Number of workers, including worker 0 (the thread calling `block_on`); `n - 1`
    /// background threads are started by [`build`](Self::build).
    pub fn threads(&mut self, n: usize) -> &mut Self {
        self.threads = Some(n);
        self
    }

    /// SQ size of each ring (a power of two up to 32768).
    pub fn ring_entries(&mut self, n: u32) -> &mut Self {
        self.ring_entries = n;
        self
    }

    /// CQ size of each ring (at least `ring_entries`). Multishot ops post many CQEs per
    /// SQE, so the default is four times the SQ.
    pub fn cq_entries(&mut self, n: u32) -> &mut Self {
        self.cq_entries = Some(n);
        self
    }

    /// Pins background worker `i` to CPU `i % cpus`. Worker 0 is the caller's thread
    /// and is left alone. Off by default: on shared VMs pinning measured slower.
    pub fn pin_cpus(&mut self, pin: bool) -> &mut Self {
        self.pin_cpus = pin;
        self
    }

    /// How parked workers are woken from other threads.
    pub fn wake(&mut self, mode: WakeMode) -> &mut Self {
        self.wake = mode;
        self
    }

    /// Builds every ring with 32-byte CQEs (needed for zero-copy receive).
    pub fn cqe32(&mut self, on: bool) -> &mut Self {
        self.cqe32 = on;
        self
    }

    /// The receive pool each worker registers with its ring, which
    /// [`TcpStream::recv`](crate::net::TcpStream::recv) receives into (default:
    /// `CopyPoolConfig::default()`, 64 × 64 KiB). `None` registers no pool; `recv` then
    /// fails with `Unsupported` (`recv_into` still works).
    pub fn copy_pool(&mut self, config: Option<CopyPoolConfig>) -> &mut Self {
        self.copy_pool = config;
        self
    }

    /// How long dropping the runtime waits for in-flight ops to finish.
    pub fn shutdown_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// Starts the runtime: builds worker 0's ring on this thread and starts the other
    /// workers, each building its own ring. Any failure is returned; nothing is left
    /// running.
    pub fn build(&self) -> io::Result<Runtime> {
        let threads = match self.threads {
            Some(n) => n,
            None => std::thread::available_parallelism()?.get(),
        };
        if threads == 0 {
            return Err(invalid("threads must be at least 1".into()));
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
        let cfg = WorkerConfig {
            ring: RingConfig {
                sq_entries: self.ring_entries,
                cq_entries,
                cqe32: self.cqe32,
            },
            pool: self.copy_pool.clone(),
        };
        let workers = (0..threads)
            .map(|i| Ok(Arc::new(WorkerShared::new(i, Unparker::new(self.wake)?))))
            .collect::<io::Result<Vec<_>>>()?;
        let handle = Handle::new(workers.clone(), self.wake);
        let core0 = Rc::new(Core::new(workers[0].clone(), handle.clone(), &cfg)?);
        // Fail here, clearly, rather than with workers that can never be woken.
        let ring0 = core0.driver.borrow().ring_fd();
        workers[0].unparker().check(ring0)?;

        let mut rt = Runtime {
            handle: handle.clone(),
            core0,
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
            let cfg = cfg.clone();
            let pin = self.pin_cpus.then_some(index % cpus);
            let spawned = std::thread::Builder::new()
                .name(format!("zerorx-worker-{index}"))
                .spawn(move || {
                    if let Some(cpu) = pin {
                        if let Err(e) = pin_to_cpu(cpu) {
                            tracing::warn!(worker = index, cpu, error = %e, "pinning failed");
                        }
                    }
                    run_background(shared, h, cfg, tx)
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
