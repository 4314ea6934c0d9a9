//! Event queues: opened on the fabric (every libfabric program opens one), written
//! and read by the application; RDM endpoints post no events to them.

use super::enosys::{ENOSYS_EQ, ENOSYS_FID};
use super::fabric::fabric_of;
use super::obj::{self, Obj};
use super::{guard, log};
use crate::codes;
use crate::eq::{EqStore, Event};
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use zerorx_libfabric_sys as fi;

#[repr(C)]
pub(super) struct Eq {
    fid: fi::fid_eq,
    store: EqStore,
    fabric_children: Arc<AtomicUsize>,
}

// SAFETY: `fid_eq` is the first field and `CLASS` its class.
unsafe impl Obj for Eq {
    const CLASS: u32 = fi::FI_CLASS_EQ;
    const NAME: &'static str = "event queue";
}

static EQ_FID_OPS: fi::fi_ops = fi::fi_ops {
    close: Some(eq_close),
    ..ENOSYS_FID
};
static EQ_OPS: fi::fi_ops_eq = fi::fi_ops_eq {
    read: Some(eq_read),
    readerr: Some(eq_readerr),
    write: Some(eq_write),
    sread: Some(eq_sread),
    strerror: Some(eq_strerror),
    ..ENOSYS_EQ
};

pub(super) unsafe extern "C" fn eq_open(
    fabric: *mut fi::fid_fabric,
    attr: *mut fi::fi_eq_attr,
    eq: *mut *mut fi::fid_eq,
    context: *mut c_void,
) -> c_int {
    guard("fi_eq_open", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let Some(f) = (unsafe { fabric_of(fabric) }) else {
            return log::refuse("fi_eq_open", fi::FI_EINVAL, "fabric is not a zerorx fabric");
        };
        if attr.is_null() || eq.is_null() {
            return log::refuse("fi_eq_open", fi::FI_EINVAL, "attr or eq is NULL");
        }
        // SAFETY: non-null attr from the application.
        let a = unsafe { &*attr };
        if !matches!(
            a.wait_obj,
            fi::FI_WAIT_NONE | fi::FI_WAIT_UNSPEC | fi::FI_WAIT_MUTEX_COND
        ) {
            return log::refuse(
                "fi_eq_open",
                fi::FI_ENOSYS,
                &format!("wait_obj {}: no wait fd or wait set yet", a.wait_obj),
            );
        }
        f.children.fetch_add(1, Ordering::AcqRel);
        let p = obj::into_fid(Eq {
            fid: fi::fid_eq {
                fid: obj::header::<Eq>(context, &EQ_FID_OPS),
                ops: obj::table(&EQ_OPS),
            },
            store: EqStore::default(),
            fabric_children: f.children.clone(),
        });
        // SAFETY: non-null (checked) and writable.
        unsafe { *eq = p as *mut fi::fid_eq };
        0
    })
}

unsafe extern "C" fn eq_close(fid: *mut fi::fid) -> c_int {
    guard("fi_close(eq)", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let e = match unsafe { obj::need::<Eq>(fid, "fi_close") } {
            Ok(e) => e,
            Err(e) => return e,
        };
        e.fabric_children.fetch_sub(1, Ordering::AcqRel);
        // SAFETY: a live EQ, not used after its close.
        unsafe { obj::free::<Eq>(fid) };
        0
    })
}

unsafe extern "C" fn eq_write(
    eq: *mut fi::fid_eq,
    event: u32,
    buf: *const c_void,
    len: usize,
    flags: u64,
) -> isize {
    guard("fi_eq_write", -(codes::EOTHER as isize), || {
        // SAFETY: the application passes a live fid.
        let e = match unsafe { obj::need::<Eq>(eq as *mut fi::fid, "fi_eq_write") } {
            Ok(e) => e,
            Err(e) => return e as isize,
        };
        if buf.is_null() && len > 0 {
            return log::refuse("fi_eq_write", fi::FI_EINVAL, "buf is NULL with len > 0") as isize;
        }
        let bytes = if len == 0 {
            Vec::new()
        } else {
            // SAFETY: `len` bytes at `buf` by the contract.
            unsafe { std::slice::from_raw_parts(buf as *const u8, len) }.to_vec()
        };
        if flags != 0 {
            return log::refuse(
                "fi_eq_write",
                codes::EBADFLAGS,
                &format!("flags {flags:#x}"),
            ) as isize;
        }
        e.store.write(Event { event, bytes });
        len as isize
    })
}

/// Copies an event's bytes into the application's buffer; its length, or
/// `-FI_ETOOSMALL` when it does not fit.
///
/// # Safety
/// `buf` holds `len` bytes when non-null; `event` is NULL or writable.
unsafe fn deliver(ev: &Event, event: *mut u32, buf: *mut c_void, len: usize) -> isize {
    if ev.bytes.len() > len || (buf.is_null() && !ev.bytes.is_empty()) {
        return -(codes::ETOOSMALL as isize);
    }
    // SAFETY: room checked above; `event` NULL or writable by the contract.
    unsafe {
        if !ev.bytes.is_empty() {
            std::ptr::copy_nonoverlapping(ev.bytes.as_ptr(), buf as *mut u8, ev.bytes.len());
        }
        if !event.is_null() {
            *event = ev.event;
        }
    }
    ev.bytes.len() as isize
}

/// The shared body of `fi_eq_read` and `fi_eq_sread`.
///
/// # Safety
/// As [`deliver`].
unsafe fn read(
    eq: *mut fi::fid_eq,
    event: *mut u32,
    buf: *mut c_void,
    len: usize,
    flags: u64,
    wait: Option<Option<Duration>>,
) -> isize {
    // SAFETY: the application passes a live fid.
    let e = match unsafe { obj::need::<Eq>(eq as *mut fi::fid, "fi_eq_read") } {
        Ok(e) => e,
        Err(e) => return e as isize,
    };
    match e.store.read(flags & fi::FI_PEEK != 0, wait) {
        // SAFETY: buffers as the caller passed them.
        Some(ev) => unsafe { deliver(&ev, event, buf, len) },
        None => -(fi::FI_EAGAIN as isize),
    }
}

unsafe extern "C" fn eq_read(
    eq: *mut fi::fid_eq,
    event: *mut u32,
    buf: *mut c_void,
    len: usize,
    flags: u64,
) -> isize {
    guard("fi_eq_read", -(codes::EOTHER as isize), || {
        // SAFETY: arguments from the application, per fi_eq_read.
        unsafe { read(eq, event, buf, len, flags, None) }
    })
}

unsafe extern "C" fn eq_sread(
    eq: *mut fi::fid_eq,
    event: *mut u32,
    buf: *mut c_void,
    len: usize,
    timeout: c_int,
    flags: u64,
) -> isize {
    guard("fi_eq_sread", -(codes::EOTHER as isize), || {
        let limit = (timeout >= 0).then(|| Duration::from_millis(timeout as u64));
        // SAFETY: arguments from the application, per fi_eq_sread.
        unsafe { read(eq, event, buf, len, flags, Some(limit)) }
    })
}

/// No error events exist (see `crate::eq`): always `-FI_EAGAIN`.
unsafe extern "C" fn eq_readerr(
    eq: *mut fi::fid_eq,
    _buf: *mut fi::fi_eq_err_entry,
    _flags: u64,
) -> isize {
    guard("fi_eq_readerr", -(codes::EOTHER as isize), || {
        // SAFETY: the application passes a live fid.
        match unsafe { obj::need::<Eq>(eq as *mut fi::fid, "fi_eq_readerr") } {
            Ok(_) => -(fi::FI_EAGAIN as isize),
            Err(e) => e as isize,
        }
    })
}

unsafe extern "C" fn eq_strerror(
    _eq: *mut fi::fid_eq,
    _prov_errno: c_int,
    _err_data: *const c_void,
    buf: *mut c_char,
    len: usize,
) -> *const c_char {
    let text = c"zerorx: event queue error";
    if !buf.is_null() && len > 0 {
        let b = text.to_bytes();
        let n = b.len().min(len - 1);
        // SAFETY: `buf` holds `len` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(b.as_ptr(), buf as *mut u8, n);
            *buf.add(n) = 0;
        }
        return buf;
    }
    text.as_ptr()
}
