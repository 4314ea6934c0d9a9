//! Counters (`fi_cntr_open`) and poll sets (`fi_poll_open`).

use super::cq::Cq;
use super::enosys::{ENOSYS_CNTR, ENOSYS_FID, ENOSYS_POLL};
use super::fabric::domain_of;
use super::obj::{self, Obj};
use super::{guard, log};
use crate::cntr::{Counter, WaitEnd};
use crate::codes;
use crate::domain::DomainShared;
use crate::poll::{PollSet, Source};
use std::os::raw::{c_int, c_void};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use zerorx_libfabric_sys as fi;

#[repr(C)]
pub(super) struct Cntr {
    fid: fi::fid_cntr,
    pub counter: Arc<Counter>,
    domain: Arc<DomainShared>,
}

// SAFETY: `fid_cntr` is the first field and `CLASS` its class.
unsafe impl Obj for Cntr {
    const CLASS: u32 = fi::FI_CLASS_CNTR;
    const NAME: &'static str = "counter";
}

static CNTR_FID_OPS: fi::fi_ops = fi::fi_ops {
    close: Some(cntr_close),
    ..ENOSYS_FID
};
static CNTR_OPS: fi::fi_ops_cntr = fi::fi_ops_cntr {
    read: Some(cntr_read),
    readerr: Some(cntr_readerr),
    add: Some(cntr_add),
    set: Some(cntr_set),
    wait: Some(cntr_wait),
    adderr: Some(cntr_adderr),
    seterr: Some(cntr_seterr),
    ..ENOSYS_CNTR
};

pub(super) unsafe extern "C" fn cntr_open(
    domain: *mut fi::fid_domain,
    attr: *mut fi::fi_cntr_attr,
    cntr: *mut *mut fi::fid_cntr,
    context: *mut c_void,
) -> c_int {
    guard("fi_cntr_open", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let Some(d) = (unsafe { domain_of(domain) }) else {
            return log::refuse(
                "fi_cntr_open",
                fi::FI_EINVAL,
                "domain is not a zerorx domain",
            );
        };
        if cntr.is_null() {
            return log::refuse("fi_cntr_open", fi::FI_EINVAL, "cntr is NULL");
        }
        // SAFETY: NULL (defaults) or a valid attr from the application.
        if let Some(a) = unsafe { attr.as_ref() } {
            if a.events != fi::FI_CNTR_EVENTS_COMP {
                return log::refuse(
                    "fi_cntr_open",
                    fi::FI_ENOSYS,
                    "events other than FI_CNTR_EVENTS_COMP",
                );
            }
            if !matches!(
                a.wait_obj,
                fi::FI_WAIT_NONE | fi::FI_WAIT_UNSPEC | fi::FI_WAIT_MUTEX_COND | fi::FI_WAIT_YIELD
            ) {
                return log::refuse(
                    "fi_cntr_open",
                    fi::FI_ENOSYS,
                    &format!("wait_obj {}: no wait fd or wait set yet", a.wait_obj),
                );
            }
            if a.flags != 0 {
                return log::refuse(
                    "fi_cntr_open",
                    codes::EBADFLAGS,
                    &format!("flags {:#x}", a.flags),
                );
            }
        }
        d.shared.children.fetch_add(1, Ordering::AcqRel);
        let p = obj::into_fid(Cntr {
            fid: fi::fid_cntr {
                fid: obj::header::<Cntr>(context, &CNTR_FID_OPS),
                ops: obj::table(&CNTR_OPS),
            },
            counter: Arc::new(Counter::default()),
            domain: d.shared.clone(),
        });
        // SAFETY: non-null (checked) and writable.
        unsafe { *cntr = p as *mut fi::fid_cntr };
        0
    })
}

unsafe extern "C" fn cntr_close(fid: *mut fi::fid) -> c_int {
    guard("fi_close(cntr)", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let c = match unsafe { obj::need::<Cntr>(fid, "fi_close") } {
            Ok(c) => c,
            Err(e) => return e,
        };
        if Arc::strong_count(&c.counter) > 1 {
            return log::refuse(
                "fi_close(cntr)",
                fi::FI_EBUSY,
                "an endpoint or poll set still uses it",
            );
        }
        c.domain.children.fetch_sub(1, Ordering::AcqRel);
        // SAFETY: a live counter, not used after its close.
        unsafe { obj::free::<Cntr>(fid) };
        0
    })
}

/// The counter behind `p`, or 0-valued refusal handling by the caller.
///
/// # Safety
/// As `obj::need`.
unsafe fn counter<'a>(p: *mut fi::fid_cntr, call: &str) -> Result<&'a Counter, c_int> {
    // SAFETY: as `obj::need`.
    unsafe { obj::need::<Cntr>(p as *mut fi::fid, call) }.map(|c| &*c.counter)
}

/// The counter behind `p`, after a turn of its domain if this thread drives it
/// (manual progress: reading is how the application progresses).
///
/// # Safety
/// As `obj::need`.
unsafe fn progressed<'a>(p: *mut fi::fid_cntr, call: &str) -> Result<&'a Counter, c_int> {
    // SAFETY: as `obj::need`.
    let c = unsafe { obj::need::<Cntr>(p as *mut fi::fid, call) }?;
    c.domain.progress();
    Ok(&*c.counter)
}

unsafe extern "C" fn cntr_read(cntr: *mut fi::fid_cntr) -> u64 {
    guard("fi_cntr_read", 0, || {
        // SAFETY: a live fid from the application.
        unsafe { progressed(cntr, "fi_cntr_read") }.map_or(0, Counter::read)
    })
}

unsafe extern "C" fn cntr_readerr(cntr: *mut fi::fid_cntr) -> u64 {
    guard("fi_cntr_readerr", 0, || {
        // SAFETY: a live fid from the application.
        unsafe { progressed(cntr, "fi_cntr_readerr") }.map_or(0, Counter::read_err)
    })
}

/// Runs `f` on the counter; 0, or the refusal.
///
/// # Safety
/// As `obj::need`.
unsafe fn apply(cntr: *mut fi::fid_cntr, call: &str, f: impl FnOnce(&Counter)) -> c_int {
    guard(call, -codes::EOTHER, || {
        // SAFETY: as `obj::need`.
        match unsafe { counter(cntr, call) } {
            Ok(c) => {
                f(c);
                0
            }
            Err(e) => e,
        }
    })
}

unsafe extern "C" fn cntr_add(cntr: *mut fi::fid_cntr, value: u64) -> c_int {
    // SAFETY: a live fid from the application.
    unsafe { apply(cntr, "fi_cntr_add", |c| c.add(value)) }
}

unsafe extern "C" fn cntr_set(cntr: *mut fi::fid_cntr, value: u64) -> c_int {
    // SAFETY: a live fid from the application.
    unsafe { apply(cntr, "fi_cntr_set", |c| c.set(value)) }
}

unsafe extern "C" fn cntr_adderr(cntr: *mut fi::fid_cntr, value: u64) -> c_int {
    // SAFETY: a live fid from the application.
    unsafe { apply(cntr, "fi_cntr_adderr", |c| c.add_err(value)) }
}

unsafe extern "C" fn cntr_seterr(cntr: *mut fi::fid_cntr, value: u64) -> c_int {
    // SAFETY: a live fid from the application.
    unsafe { apply(cntr, "fi_cntr_seterr", |c| c.set_err(value)) }
}

unsafe extern "C" fn cntr_wait(cntr: *mut fi::fid_cntr, threshold: u64, timeout: c_int) -> c_int {
    guard("fi_cntr_wait", -codes::EOTHER, || {
        // SAFETY: a live fid from the application.
        let c = match unsafe { obj::need::<Cntr>(cntr as *mut fi::fid, "fi_cntr_wait") } {
            Ok(c) => c,
            Err(e) => return e,
        };
        let limit = (timeout >= 0).then(|| Duration::from_millis(timeout as u64));
        let errors = c.counter.read_err();
        let end = c.domain.wait_for(
            limit,
            || c.counter.check(threshold, errors),
            |l| Some(c.counter.wait(threshold, l)),
        );
        match end.unwrap_or(WaitEnd::TimedOut) {
            WaitEnd::Reached => 0,
            WaitEnd::Errors => -codes::EAVAIL,
            WaitEnd::TimedOut => -fi::FI_ETIMEDOUT,
        }
    })
}

#[repr(C)]
pub(super) struct Poll {
    fid: fi::fid_poll,
    set: PollSet,
    domain: Arc<DomainShared>,
}

// SAFETY: `fid_poll` is the first field and `CLASS` its class.
unsafe impl Obj for Poll {
    const CLASS: u32 = fi::FI_CLASS_POLL;
    const NAME: &'static str = "poll set";
}

static POLL_FID_OPS: fi::fi_ops = fi::fi_ops {
    close: Some(poll_close),
    ..ENOSYS_FID
};
static POLL_OPS: fi::fi_ops_poll = fi::fi_ops_poll {
    poll: Some(poll),
    poll_add: Some(poll_add),
    poll_del: Some(poll_del),
    ..ENOSYS_POLL
};

pub(super) unsafe extern "C" fn poll_open(
    domain: *mut fi::fid_domain,
    _attr: *mut fi::fi_poll_attr,
    pollset: *mut *mut fi::fid_poll,
) -> c_int {
    guard("fi_poll_open", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let Some(d) = (unsafe { domain_of(domain) }) else {
            return log::refuse(
                "fi_poll_open",
                fi::FI_EINVAL,
                "domain is not a zerorx domain",
            );
        };
        if pollset.is_null() {
            return log::refuse("fi_poll_open", fi::FI_EINVAL, "pollset is NULL");
        }
        d.shared.children.fetch_add(1, Ordering::AcqRel);
        let p = obj::into_fid(Poll {
            fid: fi::fid_poll {
                fid: obj::header::<Poll>(std::ptr::null_mut(), &POLL_FID_OPS),
                ops: obj::table(&POLL_OPS),
            },
            set: PollSet::default(),
            domain: d.shared.clone(),
        });
        // SAFETY: non-null (checked) and writable.
        unsafe { *pollset = p as *mut fi::fid_poll };
        0
    })
}

unsafe extern "C" fn poll_close(fid: *mut fi::fid) -> c_int {
    guard("fi_close(poll)", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let p = match unsafe { obj::need::<Poll>(fid, "fi_close") } {
            Ok(p) => p,
            Err(e) => return e,
        };
        p.domain.children.fetch_sub(1, Ordering::AcqRel);
        // SAFETY: a live poll set, not used after its close.
        unsafe { obj::free::<Poll>(fid) };
        0
    })
}

unsafe extern "C" fn poll_add(
    pollset: *mut fi::fid_poll,
    event: *mut fi::fid,
    _flags: u64,
) -> c_int {
    guard("fi_poll_add", -codes::EOTHER, || {
        // SAFETY: live fids from the application.
        let p = match unsafe { obj::need::<Poll>(pollset as *mut fi::fid, "fi_poll_add") } {
            Ok(p) => p,
            Err(e) => return e,
        };
        // SAFETY: as above; each kind is checked by its class.
        let source = unsafe {
            if let Some(c) = obj::get::<Cq>(event) {
                Source::Cq(c.store.clone())
            } else if let Some(c) = obj::get::<Cntr>(event) {
                Source::Counter(c.counter.clone())
            } else {
                return log::refuse(
                    "fi_poll_add",
                    fi::FI_EINVAL,
                    "only CQs and counters can be polled",
                );
            }
        };
        // SAFETY: `event` is a live fid (checked above).
        let context = unsafe { (*event).context } as usize;
        p.set.add(event as usize, context, source);
        0
    })
}

unsafe extern "C" fn poll_del(
    pollset: *mut fi::fid_poll,
    event: *mut fi::fid,
    _flags: u64,
) -> c_int {
    guard("fi_poll_del", -codes::EOTHER, || {
        // SAFETY: a live fid from the application.
        let p = match unsafe { obj::need::<Poll>(pollset as *mut fi::fid, "fi_poll_del") } {
            Ok(p) => p,
            Err(e) => return e,
        };
        if p.set.remove(event as usize) {
            0
        } else {
            log::refuse(
                "fi_poll_del",
                fi::FI_EINVAL,
                "the fid is not in the poll set",
            )
        }
    })
}

unsafe extern "C" fn poll(
    pollset: *mut fi::fid_poll,
    context: *mut *mut c_void,
    count: c_int,
) -> c_int {
    guard("fi_poll", -codes::EOTHER, || {
        // SAFETY: a live fid from the application.
        let p = match unsafe { obj::need::<Poll>(pollset as *mut fi::fid, "fi_poll") } {
            Ok(p) => p,
            Err(e) => return e,
        };
        if context.is_null() || count < 0 {
            return log::refuse("fi_poll", fi::FI_EINVAL, "context is NULL or count < 0");
        }
        p.domain.progress();
        let ready = p.set.poll(count as usize);
        for (i, c) in ready.iter().enumerate() {
            // SAFETY: `count` slots by the contract, and `ready` has at most that many.
            unsafe { *context.add(i) = *c as *mut c_void };
        }
        ready.len() as c_int
    })
}
