//! Fabric, domain and memory-registration objects.

use super::enosys::{ENOSYS_DOMAIN, ENOSYS_FABRIC, ENOSYS_FID, ENOSYS_MR};
use super::obj::{self, Obj};
use super::{av, c_str, cntr, cq, ep, eq, guard, log};
use crate::attrs;
use crate::codes;
use crate::domain::DomainShared;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use zerorx_fabric::Access;
use zerorx_libfabric_sys as fi;

#[repr(C)]
pub(super) struct Fabric {
    fid: fi::fid_fabric,
    /// Domains and EQs open in it.
    pub children: Arc<AtomicUsize>,
}

// SAFETY: `fid_fabric` is the first field and `CLASS` its class.
unsafe impl Obj for Fabric {
    const CLASS: u32 = fi::FI_CLASS_FABRIC;
    const NAME: &'static str = "fabric";
}

static FABRIC_FID_OPS: fi::fi_ops = fi::fi_ops {
    close: Some(fabric_close),
    ..ENOSYS_FID
};
static FABRIC_OPS: fi::fi_ops_fabric = fi::fi_ops_fabric {
    domain: Some(domain_open),
    eq_open: Some(eq::eq_open),
    trywait: Some(cq::trywait),
    ..ENOSYS_FABRIC
};

/// The `fabric` of our `fi_provider` (`fi_fabric`).
pub(super) unsafe extern "C" fn fabric_open(
    attr: *mut fi::fi_fabric_attr,
    fabric: *mut *mut fi::fid_fabric,
    context: *mut c_void,
) -> c_int {
    guard("fi_fabric", -codes::EOTHER, || {
        if attr.is_null() || fabric.is_null() {
            return log::refuse("fi_fabric", fi::FI_EINVAL, "attr or fabric is NULL");
        }
        // SAFETY: non-null; libfabric passes the attr of an fi_info we returned.
        let name = unsafe { c_str((*attr).name) };
        if name.is_some_and(|n| n != attrs::NAME) {
            return log::refuse("fi_fabric", fi::FI_EINVAL, "attr->name is not \"zerorx\"");
        }
        let f = obj::into_fid(Fabric {
            fid: fi::fid_fabric {
                fid: obj::header::<Fabric>(context, &FABRIC_FID_OPS),
                ops: obj::table(&FABRIC_OPS),
                api_version: attrs::API,
            },
            children: Arc::new(AtomicUsize::new(0)),
        });
        // SAFETY: `fabric` is non-null (checked) and writable.
        unsafe { *fabric = f as *mut fi::fid_fabric };
        0
    })
}

unsafe extern "C" fn fabric_close(fid: *mut fi::fid) -> c_int {
    guard("fi_close(fabric)", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let Some(f) = (unsafe { obj::get::<Fabric>(fid) }) else {
            return log::refuse("fi_close", fi::FI_EINVAL, "not a zerorx fabric");
        };
        let n = f.children.load(Ordering::Acquire);
        if n > 0 {
            return log::refuse(
                "fi_close(fabric)",
                fi::FI_EBUSY,
                &format!("{n} domains or EQs are still open in it"),
            );
        }
        // SAFETY: a live fabric, not used after its close.
        unsafe { obj::free::<Fabric>(fid) };
        0
    })
}

#[repr(C)]
pub(super) struct Domain {
    fid: fi::fid_domain,
    pub shared: Arc<DomainShared>,
    fabric_children: Arc<AtomicUsize>,
}

// SAFETY: `fid_domain` is the first field and `CLASS` its class.
unsafe impl Obj for Domain {
    const CLASS: u32 = fi::FI_CLASS_DOMAIN;
    const NAME: &'static str = "domain";
}

static DOMAIN_FID_OPS: fi::fi_ops = fi::fi_ops {
    close: Some(domain_close),
    ..ENOSYS_FID
};
static DOMAIN_OPS: fi::fi_ops_domain = fi::fi_ops_domain {
    av_open: Some(av::av_open),
    cq_open: Some(cq::cq_open),
    endpoint: Some(ep::endpoint_open),
    cntr_open: Some(cntr::cntr_open),
    poll_open: Some(cntr::poll_open),
    ..ENOSYS_DOMAIN
};
static MR_OPS: fi::fi_ops_mr = fi::fi_ops_mr {
    reg: Some(mr_reg),
    regv: Some(mr_regv),
    regattr: Some(mr_regattr),
    ..ENOSYS_MR
};

unsafe extern "C" fn domain_open(
    fabric: *mut fi::fid_fabric,
    info: *mut fi::fi_info,
    domain: *mut *mut fi::fid_domain,
    context: *mut c_void,
) -> c_int {
    guard("fi_domain", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let Some(f) = (unsafe { obj::get::<Fabric>(fabric as *mut fi::fid) }) else {
            return log::refuse("fi_domain", fi::FI_EINVAL, "fabric is not a zerorx fabric");
        };
        if info.is_null() || domain.is_null() {
            return log::refuse("fi_domain", fi::FI_EINVAL, "info or domain is NULL");
        }
        // SAFETY: non-null fi_info from the application; attr pointers checked.
        let name = unsafe { (*info).domain_attr.as_ref().and_then(|d| c_str(d.name)) };
        if name.is_some_and(|n| n != attrs::NAME) {
            return log::refuse(
                "fi_domain",
                fi::FI_EINVAL,
                "info->domain_attr->name is not \"zerorx\"",
            );
        }
        // SAFETY: as above.
        let progress = attrs::progress_of(unsafe { (*info).domain_attr.as_ref() });
        log::info(&format!("fi_domain: {progress}"));
        let shared = match DomainShared::start(progress) {
            Ok(s) => s,
            Err(e) => return log::refuse("fi_domain", codes::EOTHER, &e),
        };
        f.children.fetch_add(1, Ordering::AcqRel);
        let d = obj::into_fid(Domain {
            fid: fi::fid_domain {
                fid: obj::header::<Domain>(context, &DOMAIN_FID_OPS),
                ops: obj::table(&DOMAIN_OPS),
                mr: obj::table(&MR_OPS),
            },
            shared,
            fabric_children: f.children.clone(),
        });
        // SAFETY: non-null (checked) and writable.
        unsafe { *domain = d as *mut fi::fid_domain };
        0
    })
}

unsafe extern "C" fn domain_close(fid: *mut fi::fid) -> c_int {
    guard("fi_close(domain)", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let Some(d) = (unsafe { obj::get::<Domain>(fid) }) else {
            return log::refuse("fi_close", fi::FI_EINVAL, "not a zerorx domain");
        };
        let n = d.shared.children.load(Ordering::Acquire);
        if n > 0 {
            return log::refuse(
                "fi_close(domain)",
                fi::FI_EBUSY,
                &format!("{n} endpoints, CQs, AVs or MRs are still open in it"),
            );
        }
        d.shared.stop();
        d.fabric_children.fetch_sub(1, Ordering::AcqRel);
        // SAFETY: a live domain, not used after its close.
        unsafe { obj::free::<Domain>(fid) };
        0
    })
}

/// A memory registration. Local posts need none (`mr_mode` 0: any buffer may be
/// posted); one with remote access registers the memory on the domain's worker under
/// the application's key (no `FI_MR_PROV_KEY`), which peers present for RMA.
#[repr(C)]
pub(super) struct Mr {
    fid: fi::fid_mr,
    domain: Arc<DomainShared>,
    /// Registered on the worker (remote access): deregistered at close.
    remote: bool,
}

// SAFETY: `fid_mr` is the first field and `CLASS` its class.
unsafe impl Obj for Mr {
    const CLASS: u32 = fi::FI_CLASS_MR;
    const NAME: &'static str = "memory region";
}

static MR_FID_OPS: fi::fi_ops = fi::fi_ops {
    close: Some(mr_close),
    ..ENOSYS_FID
};

/// The one registration every `fi_mr_reg*` comes down to.
///
/// # Safety
/// `fid` is a live fid; `mr` is NULL or writable; `[buf, buf+len)` is the
/// application's memory, valid until the MR's close (libfabric's contract).
#[allow(clippy::too_many_arguments)]
unsafe fn register(
    call: &str,
    fid: *mut fi::fid,
    buf: *const c_void,
    len: usize,
    access: u64,
    requested_key: u64,
    flags: u64,
    mr: *mut *mut fi::fid_mr,
    context: *mut c_void,
) -> c_int {
    // SAFETY: the application passes a live fid.
    let d = match unsafe { obj::need::<Domain>(fid, call) } {
        Ok(d) => d,
        Err(e) => return e,
    };
    if mr.is_null() {
        return log::refuse(call, fi::FI_EINVAL, "mr is NULL");
    }
    if buf.is_null() && len > 0 {
        return log::refuse(call, fi::FI_EINVAL, "buf is NULL with len > 0");
    }
    if flags != 0 {
        return log::refuse(call, codes::EBADFLAGS, &format!("flags {flags:#x}"));
    }
    let mut remote = Access::empty();
    if access & fi::FI_REMOTE_READ != 0 {
        remote = remote | Access::REMOTE_READ;
    }
    if access & fi::FI_REMOTE_WRITE != 0 {
        remote = remote | Access::REMOTE_WRITE;
    }
    let is_remote = remote != Access::empty();
    if is_remote {
        if len == 0 {
            return log::refuse(call, fi::FI_EINVAL, "remote access to 0 bytes");
        }
        if let Err(e) = d.shared.register(buf as usize, len, remote, requested_key) {
            let code = if e.contains("already granted") {
                fi::FI_ENOKEY as i32
            } else {
                codes::EOTHER
            };
            return log::refuse(call, code, &format!("key {requested_key:#x}: {e}"));
        }
    }
    d.shared.children.fetch_add(1, Ordering::AcqRel);
    let m = obj::into_fid(Mr {
        fid: fi::fid_mr {
            fid: obj::header::<Mr>(context, &MR_FID_OPS),
            mem_desc: std::ptr::null_mut(),
            key: requested_key,
        },
        domain: d.shared.clone(),
        remote: is_remote,
    });
    // SAFETY: non-null (checked) and writable.
    unsafe { *mr = m as *mut fi::fid_mr };
    0
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn mr_reg(
    fid: *mut fi::fid,
    buf: *const c_void,
    len: usize,
    access: u64,
    _offset: u64,
    requested_key: u64,
    flags: u64,
    mr: *mut *mut fi::fid_mr,
    context: *mut c_void,
) -> c_int {
    guard("fi_mr_reg", -codes::EOTHER, || {
        // SAFETY: fi_mr_reg's arguments.
        unsafe {
            register(
                "fi_mr_reg",
                fid,
                buf,
                len,
                access,
                requested_key,
                flags,
                mr,
                context,
            )
        }
    })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn mr_regv(
    fid: *mut fi::fid,
    iov: *const fi::iovec,
    count: usize,
    access: u64,
    _offset: u64,
    requested_key: u64,
    flags: u64,
    mr: *mut *mut fi::fid_mr,
    context: *mut c_void,
) -> c_int {
    guard("fi_mr_regv", -codes::EOTHER, || {
        if count != 1 || iov.is_null() {
            return log::refuse("fi_mr_regv", fi::FI_EINVAL, "one iovec (mr_iov_limit is 1)");
        }
        // SAFETY: one iovec (checked), then fi_mr_regv's arguments.
        unsafe {
            let v = &*iov;
            register(
                "fi_mr_regv",
                fid,
                v.iov_base,
                v.iov_len,
                access,
                requested_key,
                flags,
                mr,
                context,
            )
        }
    })
}

unsafe extern "C" fn mr_regattr(
    fid: *mut fi::fid,
    attr: *const fi::fi_mr_attr,
    flags: u64,
    mr: *mut *mut fi::fid_mr,
) -> c_int {
    guard("fi_mr_regattr", -codes::EOTHER, || {
        // SAFETY: NULL or a valid attr from the application.
        let Some(a) = (unsafe { attr.as_ref() }) else {
            return log::refuse("fi_mr_regattr", fi::FI_EINVAL, "attr is NULL");
        };
        if a.iov_count != 1 || a.mr_iov.is_null() {
            return log::refuse(
                "fi_mr_regattr",
                fi::FI_EINVAL,
                "one iovec (mr_iov_limit is 1)",
            );
        }
        if a.iface != fi::FI_HMEM_SYSTEM {
            return log::refuse(
                "fi_mr_regattr",
                fi::FI_ENOSYS,
                "device memory (FI_HMEM) is not offered",
            );
        }
        // SAFETY: one iovec (checked), then the attr's fields.
        unsafe {
            let v = &*a.mr_iov;
            register(
                "fi_mr_regattr",
                fid,
                v.iov_base,
                v.iov_len,
                a.access,
                a.requested_key,
                flags,
                mr,
                a.context,
            )
        }
    })
}

unsafe extern "C" fn mr_close(fid: *mut fi::fid) -> c_int {
    guard("fi_close(mr)", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let m = match unsafe { obj::need::<Mr>(fid, "fi_close") } {
            Ok(m) => m,
            Err(e) => return e,
        };
        if m.remote {
            m.domain.deregister(m.fid.key);
        }
        m.domain.children.fetch_sub(1, Ordering::AcqRel);
        // SAFETY: a live MR, not used after its close.
        unsafe { obj::free::<Mr>(fid) };
        0
    })
}

/// The domain behind `fid` (for objects opened in it).
///
/// # Safety
/// As `obj::get`.
pub(super) unsafe fn domain_of<'a>(fid: *mut fi::fid_domain) -> Option<&'a Domain> {
    // SAFETY: as `obj::get`.
    unsafe { obj::get::<Domain>(fid as *mut fi::fid) }
}

/// The fabric behind `fid` (for EQs).
///
/// # Safety
/// As `obj::get`.
pub(super) unsafe fn fabric_of<'a>(fid: *mut fi::fid_fabric) -> Option<&'a Fabric> {
    // SAFETY: as `obj::get`.
    unsafe { obj::get::<Fabric>(fid as *mut fi::fid) }
}
