//! Completion queues: `fi_cq_open`, reads in every entry format, error entries and
//! their text, blocking reads, and `fi_trywait`.

use super::enosys::{ENOSYS_CQ, ENOSYS_FID};
use super::fabric::domain_of;
use super::obj::{self, Obj};
use super::{guard, log};
use crate::codes;
use crate::cq::{CqStore, Entry, ReadOutcome};
use crate::domain::DomainShared;
use crate::errors;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use zerorx_libfabric_sys as fi;

#[repr(C)]
pub(super) struct Cq {
    fid: fi::fid_cq,
    pub store: Arc<CqStore>,
    format: fi::fi_cq_format,
    domain: Arc<DomainShared>,
}

// SAFETY: `fid_cq` is the first field and `CLASS` its class.
unsafe impl Obj for Cq {
    const CLASS: u32 = fi::FI_CLASS_CQ;
    const NAME: &'static str = "completion queue";
}

static CQ_FID_OPS: fi::fi_ops = fi::fi_ops {
    close: Some(cq_close),
    control: Some(cq_control),
    ..ENOSYS_FID
};
static CQ_OPS: fi::fi_ops_cq = fi::fi_ops_cq {
    read: Some(cq_read),
    readfrom: Some(cq_readfrom),
    readerr: Some(cq_readerr),
    sread: Some(cq_sread),
    sreadfrom: Some(cq_sreadfrom),
    signal: Some(cq_signal),
    strerror: Some(cq_strerror),
    ..ENOSYS_CQ
};

pub(super) unsafe extern "C" fn cq_open(
    domain: *mut fi::fid_domain,
    attr: *mut fi::fi_cq_attr,
    cq: *mut *mut fi::fid_cq,
    context: *mut c_void,
) -> c_int {
    guard("fi_cq_open", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let Some(d) = (unsafe { domain_of(domain) }) else {
            return log::refuse("fi_cq_open", fi::FI_EINVAL, "domain is not a zerorx domain");
        };
        if attr.is_null() || cq.is_null() {
            return log::refuse("fi_cq_open", fi::FI_EINVAL, "attr or cq is NULL");
        }
        // SAFETY: non-null attr from the application.
        let a = unsafe { &mut *attr };
        if a.format == fi::FI_CQ_FORMAT_UNSPEC {
            a.format = fi::FI_CQ_FORMAT_CONTEXT;
        }
        if a.format > fi::FI_CQ_FORMAT_TAGGED {
            return log::refuse("fi_cq_open", fi::FI_EINVAL, &format!("format {}", a.format));
        }
        let store = match a.wait_obj {
            fi::FI_WAIT_NONE | fi::FI_WAIT_UNSPEC | fi::FI_WAIT_MUTEX_COND | fi::FI_WAIT_YIELD => {
                CqStore::default()
            }
            fi::FI_WAIT_FD => match d.shared.readiness_fd() {
                Some(Ok(fd)) => CqStore::with_ring_fd(fd),
                Some(Err(e)) => {
                    return log::refuse("fi_cq_open", fi::FI_ENOSYS, &format!("FI_WAIT_FD: {e}"))
                }
                None => match CqStore::with_wait_fd() {
                    Ok(s) => s,
                    Err(e) => {
                        return log::refuse(
                            "fi_cq_open",
                            fi::FI_ENOMEM,
                            &format!("its wait fd: {e}"),
                        )
                    }
                },
            },
            other => {
                return log::refuse(
                    "fi_cq_open",
                    fi::FI_ENOSYS,
                    &format!(
                        "wait_obj {other}: zerorx CQs wait with FI_WAIT_NONE, FI_WAIT_UNSPEC, \
                         FI_WAIT_MUTEX_COND, FI_WAIT_YIELD or FI_WAIT_FD (no wait sets)"
                    ),
                )
            }
        };
        if a.flags & !fi::FI_AFFINITY != 0 {
            return log::refuse(
                "fi_cq_open",
                codes::EBADFLAGS,
                &format!("flags {:#x}", a.flags),
            );
        }
        d.shared.children.fetch_add(1, Ordering::AcqRel);
        let c = obj::into_fid(Cq {
            fid: fi::fid_cq {
                fid: obj::header::<Cq>(context, &CQ_FID_OPS),
                ops: obj::table(&CQ_OPS),
            },
            store: Arc::new(store),
            format: a.format,
            domain: d.shared.clone(),
        });
        // SAFETY: non-null (checked) and writable.
        unsafe { *cq = c as *mut fi::fid_cq };
        0
    })
}

unsafe extern "C" fn cq_close(fid: *mut fi::fid) -> c_int {
    guard("fi_close(cq)", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let c = match unsafe { obj::need::<Cq>(fid, "fi_close") } {
            Ok(c) => c,
            Err(e) => return e,
        };
        if Arc::strong_count(&c.store) > 1 {
            return log::refuse(
                "fi_close(cq)",
                fi::FI_EBUSY,
                "an endpoint is still bound to it",
            );
        }
        c.domain.children.fetch_sub(1, Ordering::AcqRel);
        // SAFETY: a live CQ, not used after its close.
        unsafe { obj::free::<Cq>(fid) };
        0
    })
}

/// `fi_control` on a CQ: `FI_GETWAIT` gives a `FI_WAIT_FD` CQ's fd.
unsafe extern "C" fn cq_control(fid: *mut fi::fid, command: c_int, arg: *mut c_void) -> c_int {
    guard("fi_control(cq)", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let c = match unsafe { obj::need::<Cq>(fid, "fi_control") } {
            Ok(c) => c,
            Err(e) => return e,
        };
        if command as u32 != fi::FI_GETWAIT {
            return log::refuse(
                "fi_control(cq)",
                fi::FI_ENOSYS,
                &format!("command {command}"),
            );
        }
        let Some(w) = &c.store.wait_fd else {
            return log::refuse(
                "fi_control(cq)",
                fi::FI_ENODATA,
                "FI_GETWAIT: the CQ was not opened with FI_WAIT_FD",
            );
        };
        if arg.is_null() {
            return log::refuse("fi_control(cq)", fi::FI_EINVAL, "FI_GETWAIT arg is NULL");
        }
        // SAFETY: FI_GETWAIT's argument for FI_WAIT_FD is an `int *`.
        unsafe { (arg as *mut c_int).write(w.fd()) };
        0
    })
}

/// Size of one entry of `format`.
fn entry_size(format: fi::fi_cq_format) -> usize {
    match format {
        fi::FI_CQ_FORMAT_MSG => std::mem::size_of::<fi::fi_cq_msg_entry>(),
        fi::FI_CQ_FORMAT_DATA => std::mem::size_of::<fi::fi_cq_data_entry>(),
        fi::FI_CQ_FORMAT_TAGGED => std::mem::size_of::<fi::fi_cq_tagged_entry>(),
        _ => std::mem::size_of::<fi::fi_cq_entry>(),
    }
}

/// Writes entry `e` at index `i` of the application's array in `format`.
///
/// # Safety
/// `buf` holds at least `i + 1` entries of `format`.
unsafe fn write_entry(buf: *mut c_void, i: usize, format: fi::fi_cq_format, e: &Entry) {
    let at = (buf as *mut u8).wrapping_add(i * entry_size(format));
    let tagged = fi::fi_cq_tagged_entry {
        op_context: e.context as *mut c_void,
        flags: e.flags,
        len: e.len,
        buf: e.buf as *mut c_void,
        data: e.data,
        tag: e.tag,
    };
    // Every format is a prefix of the tagged one (fi_eq.h), so its first bytes are
    // the entry; unaligned writes because the array is the application's.
    let n = entry_size(format);
    // SAFETY: `at` has room for one entry of `n` bytes by the contract, and `tagged`
    // is at least `n` bytes.
    unsafe { std::ptr::copy_nonoverlapping(&tagged as *const _ as *const u8, at, n) };
}

/// Reads up to `count` entries; the shared body of every read call.
///
/// # Safety
/// `buf` holds `count` entries of the CQ's format; `src` is NULL or holds `count`
/// addresses.
unsafe fn read(c: &Cq, buf: *mut c_void, count: usize, src: *mut fi::fi_addr_t) -> isize {
    if buf.is_null() && count > 0 {
        return log::refuse("fi_cq_read", fi::FI_EINVAL, "buf is NULL with count > 0") as isize;
    }
    let turned = c.domain.progress();
    let out = c.store.read(count, |i, e| {
        // SAFETY: `i < count` entries fit by the contract.
        unsafe { write_entry(buf, i, c.format, e) };
        if !src.is_null() {
            // SAFETY: as above for the address array.
            unsafe { *src.add(i) = e.src };
        }
    });
    match out {
        ReadOutcome::Read(n) => n as isize,
        ReadOutcome::ErrorNext => -(codes::EAVAIL as isize),
        ReadOutcome::Empty => {
            // A spinning reader on a busy machine would keep the worker that
            // produces its completions off the CPU (a reader that just turned the
            // ring itself has no worker to make room for).
            if !turned {
                std::thread::yield_now();
            }
            -(fi::FI_EAGAIN as isize)
        }
    }
}

unsafe extern "C" fn cq_read(cq: *mut fi::fid_cq, buf: *mut c_void, count: usize) -> isize {
    // SAFETY: pointers from the application, as `cq_readfrom`.
    unsafe { cq_readfrom(cq, buf, count, std::ptr::null_mut()) }
}

unsafe extern "C" fn cq_readfrom(
    cq: *mut fi::fid_cq,
    buf: *mut c_void,
    count: usize,
    src_addr: *mut fi::fi_addr_t,
) -> isize {
    guard("fi_cq_read", -(codes::EOTHER as isize), || {
        // SAFETY: the application passes a live fid.
        let c = match unsafe { obj::need::<Cq>(cq as *mut fi::fid, "fi_cq_read") } {
            Ok(c) => c,
            Err(e) => return e as isize,
        };
        // SAFETY: `buf`/`src_addr` sized for `count` by the fi_cq_read contract.
        unsafe { read(c, buf, count, src_addr) }
    })
}

unsafe extern "C" fn cq_sread(
    cq: *mut fi::fid_cq,
    buf: *mut c_void,
    count: usize,
    cond: *const c_void,
    timeout: c_int,
) -> isize {
    // SAFETY: as `cq_sreadfrom`.
    unsafe { cq_sreadfrom(cq, buf, count, std::ptr::null_mut(), cond, timeout) }
}

unsafe extern "C" fn cq_sreadfrom(
    cq: *mut fi::fid_cq,
    buf: *mut c_void,
    count: usize,
    src_addr: *mut fi::fi_addr_t,
    _cond: *const c_void,
    timeout: c_int,
) -> isize {
    guard("fi_cq_sread", -(codes::EOTHER as isize), || {
        // SAFETY: the application passes a live fid.
        let c = match unsafe { obj::need::<Cq>(cq as *mut fi::fid, "fi_cq_sread") } {
            Ok(c) => c,
            Err(e) => return e as isize,
        };
        let limit = (timeout >= 0).then(|| Duration::from_millis(timeout as u64));
        let ready = c.domain.wait_for(
            limit,
            || c.store.ready_or_signaled(),
            |l| Some(c.store.wait(l)),
        );
        if ready != Some(true) {
            return -(fi::FI_EAGAIN as isize);
        }
        // SAFETY: as `cq_readfrom`.
        unsafe { read(c, buf, count, src_addr) }
    })
}

unsafe extern "C" fn cq_readerr(
    cq: *mut fi::fid_cq,
    buf: *mut fi::fi_cq_err_entry,
    _flags: u64,
) -> isize {
    guard("fi_cq_readerr", -(codes::EOTHER as isize), || {
        // SAFETY: the application passes a live fid.
        let c = match unsafe { obj::need::<Cq>(cq as *mut fi::fid, "fi_cq_readerr") } {
            Ok(c) => c,
            Err(e) => return e as isize,
        };
        if buf.is_null() {
            return log::refuse("fi_cq_readerr", fi::FI_EINVAL, "buf is NULL") as isize;
        }
        let Some(e) = c.store.read_err() else {
            return -(fi::FI_EAGAIN as isize);
        };
        // SAFETY: a valid fi_cq_err_entry from the application (API >= 1.5: its
        // err_data/err_data_size say where it wants the error data, if anywhere).
        let out = unsafe { &mut *buf };
        out.op_context = e.entry.context as *mut c_void;
        out.flags = e.entry.flags;
        out.len = e.entry.len;
        out.buf = e.entry.buf as *mut c_void;
        out.data = e.entry.data;
        out.tag = e.entry.tag;
        out.olen = e.olen;
        out.err = e.err;
        out.prov_errno = e.prov_errno;
        // No error data: programs pass entries with `err_data`/`err_data_size` left
        // uninitialised (fabtests' rdm_tagged_peek does), and a provider that copies
        // into `err_data` then writes through a garbage pointer. The text is given by
        // `fi_cq_strerror` on this CQ instead (see `cq_strerror`).
        out.err_data_size = 0;
        let mut last = c.store.last_err.lock().unwrap_or_else(|p| p.into_inner());
        *last = Some(e);
        1
    })
}

unsafe extern "C" fn cq_signal(cq: *mut fi::fid_cq) -> c_int {
    guard("fi_cq_signal", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        match unsafe { obj::need::<Cq>(cq as *mut fi::fid, "fi_cq_signal") } {
            Ok(c) => {
                c.store.signal();
                c.domain.nudge();
                0
            }
            Err(e) => e,
        }
    })
}

/// The text of the error entry last read from this CQ when `prov_errno` is its
/// (it names the cause: the lengths of a truncation, the peer of a lost connection),
/// else what `prov_errno` means. The pointer stays valid until the next
/// `fi_cq_readerr` on the CQ; copied into `buf` when one is given.
unsafe extern "C" fn cq_strerror(
    cq: *mut fi::fid_cq,
    prov_errno: c_int,
    _err_data: *const c_void,
    buf: *mut c_char,
    len: usize,
) -> *const c_char {
    guard("fi_cq_strerror", c"zerorx: internal error".as_ptr(), || {
        // SAFETY: NULL or a live fid from the application.
        let last = unsafe { obj::get::<Cq>(cq as *mut fi::fid) }.and_then(|c| {
            let g = c.store.last_err.lock().unwrap_or_else(|p| p.into_inner());
            g.as_ref()
                .filter(|e| e.prov_errno == prov_errno)
                // The entry stays in `last_err` until the next readerr.
                .map(|e| e.text.as_ptr())
        });
        let text = last.unwrap_or_else(|| errors::describe(prov_errno).as_ptr());
        if !buf.is_null() && len > 0 {
            // SAFETY: `text` is NUL-terminated (ours); `buf` holds `len` bytes.
            unsafe {
                let n = libc::strlen(text).min(len - 1);
                std::ptr::copy_nonoverlapping(text, buf, n);
                *buf.add(n) = 0;
            }
            return buf as *const c_char;
        }
        text
    })
}

/// `fi_trywait`: arms each CQ's wait fd; 0 when every CQ given is empty (the
/// caller may block on the fds), else `-FI_EAGAIN` (read the entries first).
pub(super) unsafe extern "C" fn trywait(
    _fabric: *mut fi::fid_fabric,
    fids: *mut *mut fi::fid,
    count: c_int,
) -> c_int {
    guard("fi_trywait", -codes::EOTHER, || {
        if fids.is_null() || count < 0 {
            return log::refuse("fi_trywait", fi::FI_EINVAL, "fids is NULL or count < 0");
        }
        for i in 0..count as usize {
            // SAFETY: `count` fids by the contract, each live.
            let c = match unsafe { obj::need::<Cq>(*fids.add(i), "fi_trywait") } {
                Ok(c) => c,
                Err(e) => return e,
            };
            // A domain its own thread progresses: reset the ring's fd, then a last
            // turn, so whatever signals the fd after this is work that turn missed.
            c.store.drain_ring_fd();
            c.domain.progress();
            if !c.store.try_arm() {
                return -fi::FI_EAGAIN;
            }
        }
        0
    })
}
