//! shm peers in the same process, and shm peers that died.
//!
//! libfabric 1.17's shm provider maps a peer endpoint of the same process by pointing at
//! that endpoint's own region, so sending to it after it was closed touches unmapped
//! memory (measured: a segfault in `fi_sendmsg`). zerorx therefore keeps a closed shm
//! endpoint open, unprogressed ("parked"), for as long as another endpoint of the
//! process has it in its address vector, and tells those endpoints the peer is gone; the
//! last one to let go closes it, from whichever thread that is. A peer in another process
//! that died is noticed from its process id (part of the shm name) while operations to it
//! wait.

use super::res::EpRes;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// One shm endpoint of this process.
struct Entry {
    /// Set when the endpoint was closed.
    closed: Arc<AtomicBool>,
    /// Address vectors of this process holding its address.
    refs: usize,
    /// The libfabric objects of a closed endpoint still referenced.
    parked: Option<EpRes>,
}

/// Every shm endpoint of this process, by address.
static ENDPOINTS: Mutex<Option<HashMap<Vec<u8>, Entry>>> = Mutex::new(None);

/// Bumped whenever an shm endpoint of this process closes, so endpoints look at their
/// peers only when something changed.
static CLOSINGS: AtomicU64 = AtomicU64::new(0);

fn table() -> MutexGuard<'static, Option<HashMap<Vec<u8>, Entry>>> {
    // A panic while holding the lock leaves the map consistent (every update is one
    // insert/remove/field store), so a poisoned lock is still usable.
    ENDPOINTS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Records a new shm endpoint of this process.
pub(super) fn opened(addr: &[u8]) {
    table().get_or_insert_with(HashMap::new).insert(
        addr.to_vec(),
        Entry {
            closed: Arc::new(AtomicBool::new(false)),
            refs: 0,
            parked: None,
        },
    );
}

/// An address vector of this process now holds `addr`: if it is an shm endpoint of this
/// process, returns the flag that says it closed (kept open while referenced).
pub(super) fn attach(addr: &[u8]) -> Option<Arc<AtomicBool>> {
    let mut t = table();
    let e = t.as_mut()?.get_mut(addr)?;
    e.refs += 1;
    Some(e.closed.clone())
}

/// An address vector of this process let go of `addr` (a peer removed, or its endpoint
/// closed); closes a parked endpoint nobody references any more.
pub(super) fn detach(addr: &[u8]) {
    let parked = {
        let mut t = table();
        let Some(map) = t.as_mut() else { return };
        let Some(e) = map.get_mut(addr) else { return };
        e.refs = e.refs.saturating_sub(1);
        if e.refs == 0 && e.parked.is_some() {
            map.remove(addr).and_then(|e| e.parked)
        } else {
            None
        }
    };
    // fi_close outside the lock: it may take a while.
    drop(parked);
}

/// The endpoint at `addr` closes: its objects are closed now if no address vector of the
/// process holds it, else parked until the last one lets go.
pub(super) fn closed(addr: &[u8], res: EpRes) {
    let now = {
        let mut t = table();
        match t.as_mut().and_then(|m| m.get_mut(addr)) {
            Some(e) if e.refs > 0 => {
                e.closed.store(true, Ordering::Release);
                e.parked = Some(res);
                None
            }
            _ => {
                if let Some(m) = t.as_mut() {
                    m.remove(addr);
                }
                Some(res)
            }
        }
    };
    CLOSINGS.fetch_add(1, Ordering::Release);
    drop(now);
}

/// A counter that changes whenever an shm endpoint of this process closed.
pub(super) fn closings() -> u64 {
    CLOSINGS.load(Ordering::Acquire)
}

/// The process id in an shm endpoint name (`fi_shm://<pid>:<n>:<m>`), if it has one.
pub(super) fn pid_of(addr: &[u8]) -> Option<i32> {
    let s = std::str::from_utf8(addr).ok()?;
    let rest = s.split_once("://")?.1;
    let pid = rest.split(':').next()?;
    pid.trim_end_matches('\0').parse().ok().filter(|&p| p > 0)
}

/// Whether process `pid` exists (a process of another user counts as alive).
pub(super) fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pids_come_from_shm_names() {
        assert_eq!(pid_of(b"fi_shm://14822:0:1\0"), Some(14822));
        assert_eq!(pid_of(b"fi_shm://abc:0\0"), None);
        assert_eq!(pid_of(&[2, 0, 1, 2]), None);
        assert!(alive(std::process::id() as i32));
        // pid_max is at most 2^22: this one cannot exist.
        assert!(!alive(i32::MAX));
    }

    #[test]
    fn attach_only_endpoints_of_this_process() {
        let a = b"fi_shm://test-local:1:0\0".to_vec();
        opened(&a);
        let flag = attach(&a).expect("a local endpoint");
        assert!(!flag.load(Ordering::Acquire));
        assert!(attach(b"fi_shm://elsewhere:0:0\0").is_none());
        detach(&a);
        detach(&a);
        assert!(table().as_ref().is_some_and(|m| m.contains_key(&a)));
        table().as_mut().map(|m| m.remove(&a));
    }
}
