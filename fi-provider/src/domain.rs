//! A domain as application threads see it: the channel to its worker thread
//! ([`crate::worker`]), the thread itself, and counts that keep `fi_close` from
//! pulling the domain from under objects still open in it.

use crate::worker::{self, Cmd};
use futures_channel::mpsc::{unbounded, UnboundedSender};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

pub(crate) struct DomainShared {
    cmds: UnboundedSender<Cmd>,
    thread: Mutex<Option<JoinHandle<()>>>,
    next_id: AtomicU64,
    /// Endpoints, CQs, AVs, EQs and MRs open in the domain.
    pub children: AtomicUsize,
}

impl DomainShared {
    /// Starts the worker thread and waits until its runtime and zerorx-fabric
    /// domain are up, or returns why they are not.
    pub(crate) fn start() -> Result<Arc<DomainShared>, String> {
        let (tx, rx) = unbounded();
        let (ready_tx, ready_rx) = sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("zerorx-fi-domain".into())
            .spawn(move || worker::run(rx, ready_tx))
            .map_err(|e| format!("spawning the domain's worker thread: {e}"))?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Arc::new(DomainShared {
                cmds: tx,
                thread: Mutex::new(Some(thread)),
                next_id: AtomicU64::new(1),
                children: AtomicUsize::new(0),
            })),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err("the domain's worker thread ended while starting".into())
            }
        }
    }

    pub(crate) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Hands `cmd` to the worker; false when the worker is gone.
    pub(crate) fn send(&self, cmd: Cmd) -> bool {
        self.cmds.unbounded_send(cmd).is_ok()
    }

    /// Sends the command `make` builds around a reply channel and waits for the reply.
    pub(crate) fn call<T>(&self, make: impl FnOnce(SyncSender<T>) -> Cmd) -> Result<T, String> {
        let (tx, rx) = sync_channel(1);
        if !self.send(make(tx)) {
            return Err("the domain's worker thread is gone".into());
        }
        rx.recv()
            .map_err(|_| "the domain's worker thread dropped the request".into())
    }

    /// Registers `[ptr, ptr+len)` on the worker for remote `access` under `key`.
    pub(crate) fn register(
        &self,
        ptr: usize,
        len: usize,
        access: zerorx_fabric::Access,
        key: u64,
    ) -> Result<(), String> {
        self.call(|reply| Cmd::RegMr {
            ptr,
            len,
            access,
            key,
            reply,
        })?
    }

    /// Deregisters what `register` registered under `key`.
    pub(crate) fn deregister(&self, key: u64) {
        let _ = self.call(|reply| Cmd::CloseMr { key, reply });
    }

    /// Stops the worker (it closes every endpoint left) and waits for it.
    pub(crate) fn stop(&self) {
        self.cmds.close_channel();
        let t = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(t) = t {
            let _ = t.join();
        }
    }
}

impl Drop for DomainShared {
    fn drop(&mut self) {
        self.stop();
    }
}
