//! Address vectors: `fi_av_open`, insert (addresses or node/service), remove,
//! lookup and the text form.

use super::enosys::{ENOSYS_AV, ENOSYS_FID};
use super::fabric::domain_of;
use super::obj::{self, Obj};
use super::{c_str, guard, log};
use crate::addr;
use crate::av::AddressVector;
use crate::codes;
use crate::domain::DomainShared;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use zerorx_libfabric_sys as fi;

#[repr(C)]
pub(super) struct Av {
    fid: fi::fid_av,
    pub table: Arc<AddressVector>,
    domain: Arc<DomainShared>,
}

// SAFETY: `fid_av` is the first field and `CLASS` its class.
unsafe impl Obj for Av {
    const CLASS: u32 = fi::FI_CLASS_AV;
    const NAME: &'static str = "address vector";
}

static AV_FID_OPS: fi::fi_ops = fi::fi_ops {
    close: Some(av_close),
    ..ENOSYS_FID
};
static AV_OPS: fi::fi_ops_av = fi::fi_ops_av {
    insert: Some(av_insert),
    insertsvc: Some(av_insertsvc),
    remove: Some(av_remove),
    lookup: Some(av_lookup),
    straddr: Some(av_straddr),
    ..ENOSYS_AV
};

pub(super) unsafe extern "C" fn av_open(
    domain: *mut fi::fid_domain,
    attr: *mut fi::fi_av_attr,
    av: *mut *mut fi::fid_av,
    context: *mut c_void,
) -> c_int {
    guard("fi_av_open", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let Some(d) = (unsafe { domain_of(domain) }) else {
            return log::refuse("fi_av_open", fi::FI_EINVAL, "domain is not a zerorx domain");
        };
        if attr.is_null() || av.is_null() {
            return log::refuse("fi_av_open", fi::FI_EINVAL, "attr or av is NULL");
        }
        // SAFETY: non-null attr from the application.
        let a = unsafe { &mut *attr };
        if !matches!(a.type_, fi::FI_AV_UNSPEC | fi::FI_AV_MAP | fi::FI_AV_TABLE) {
            return log::refuse("fi_av_open", fi::FI_EINVAL, &format!("type {}", a.type_));
        }
        if a.type_ == fi::FI_AV_UNSPEC {
            a.type_ = fi::FI_AV_TABLE;
        }
        if !a.name.is_null() || a.flags & (fi::FI_EVENT | fi::FI_READ | fi::FI_SYMMETRIC) != 0 {
            return log::refuse(
                "fi_av_open",
                fi::FI_ENOSYS,
                "named (shared) AVs and FI_EVENT / FI_READ / FI_SYMMETRIC are not offered",
            );
        }
        if a.rx_ctx_bits != 0 {
            return log::refuse(
                "fi_av_open",
                fi::FI_EINVAL,
                "rx_ctx_bits: no scalable endpoints",
            );
        }
        d.shared.children.fetch_add(1, Ordering::AcqRel);
        let p = obj::into_fid(Av {
            fid: fi::fid_av {
                fid: obj::header::<Av>(context, &AV_FID_OPS),
                ops: obj::table(&AV_OPS),
            },
            table: Arc::new(AddressVector::default()),
            domain: d.shared.clone(),
        });
        // SAFETY: non-null (checked) and writable.
        unsafe { *av = p as *mut fi::fid_av };
        0
    })
}

unsafe extern "C" fn av_close(fid: *mut fi::fid) -> c_int {
    guard("fi_close(av)", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let a = match unsafe { obj::need::<Av>(fid, "fi_close") } {
            Ok(a) => a,
            Err(e) => return e,
        };
        if Arc::strong_count(&a.table) > 1 {
            return log::refuse(
                "fi_close(av)",
                fi::FI_EBUSY,
                "an endpoint is still bound to it",
            );
        }
        a.domain.children.fetch_sub(1, Ordering::AcqRel);
        // SAFETY: a live AV, not used after its close.
        unsafe { obj::free::<Av>(fid) };
        0
    })
}

/// Inserts `addrs`, writing each one's `fi_addr_t` (or `FI_ADDR_NOTAVAIL`) to `out`
/// when given; returns how many went in.
///
/// # Safety
/// `out` is NULL or holds `addrs.len()` entries.
unsafe fn insert_all(
    a: &Av,
    addrs: &[Option<std::net::SocketAddrV4>],
    out: *mut fi::fi_addr_t,
) -> c_int {
    let mut n = 0;
    for (i, one) in addrs.iter().enumerate() {
        let id = match one {
            Some(sa) => {
                n += 1;
                a.table.insert(&[*sa])[0]
            }
            None => {
                log::warn(&format!(
                    "fi_av_insert: address {i} is not an IPv4 sockaddr_in"
                ));
                fi::FI_ADDR_NOTAVAIL
            }
        };
        if !out.is_null() {
            // SAFETY: `out` holds `addrs.len()` entries by the contract.
            unsafe { *out.add(i) = id };
        }
    }
    n
}

unsafe extern "C" fn av_insert(
    av: *mut fi::fid_av,
    addr: *const c_void,
    count: usize,
    fi_addr: *mut fi::fi_addr_t,
    flags: u64,
    _context: *mut c_void,
) -> c_int {
    guard("fi_av_insert", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let a = match unsafe { obj::need::<Av>(av as *mut fi::fid, "fi_av_insert") } {
            Ok(a) => a,
            Err(e) => return e,
        };
        if flags != 0 {
            return log::refuse(
                "fi_av_insert",
                codes::EBADFLAGS,
                &format!("flags {flags:#x}"),
            );
        }
        if addr.is_null() && count > 0 {
            return log::refuse("fi_av_insert", fi::FI_EINVAL, "addr is NULL with count > 0");
        }
        let Some(total) = count.checked_mul(addr::SOCKADDR_IN_LEN) else {
            return log::refuse("fi_av_insert", fi::FI_EINVAL, "count is too large");
        };
        let bytes: &[u8] = if count == 0 {
            &[]
        } else {
            // SAFETY: `count` packed addresses of this AV's format (FI_SOCKADDR_IN).
            unsafe { std::slice::from_raw_parts(addr as *const u8, total) }
        };
        let parsed: Vec<_> = bytes
            .chunks_exact(addr::SOCKADDR_IN_LEN)
            .map(addr::from_bytes)
            .collect();
        // SAFETY: `fi_addr` is NULL or holds `count` entries.
        unsafe { insert_all(a, &parsed, fi_addr) }
    })
}

unsafe extern "C" fn av_insertsvc(
    av: *mut fi::fid_av,
    node: *const c_char,
    service: *const c_char,
    fi_addr: *mut fi::fi_addr_t,
    flags: u64,
    _context: *mut c_void,
) -> c_int {
    guard("fi_av_insertsvc", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let a = match unsafe { obj::need::<Av>(av as *mut fi::fid, "fi_av_insertsvc") } {
            Ok(a) => a,
            Err(e) => return e,
        };
        if flags != 0 {
            return log::refuse(
                "fi_av_insertsvc",
                codes::EBADFLAGS,
                &format!("flags {flags:#x}"),
            );
        }
        // SAFETY: NULL or NUL-terminated strings from the application.
        let (node, service) = unsafe { (c_str(node), c_str(service)) };
        if node.is_none() || service.is_none() {
            return log::refuse(
                "fi_av_insertsvc",
                fi::FI_EINVAL,
                "node and service are needed",
            );
        }
        match addr::resolve(node, service) {
            // SAFETY: `fi_addr` is NULL or holds one entry.
            Ok(sa) => unsafe { insert_all(a, &[Some(sa)], fi_addr) },
            Err(why) => log::refuse("fi_av_insertsvc", fi::FI_EINVAL, &why),
        }
    })
}

unsafe extern "C" fn av_remove(
    av: *mut fi::fid_av,
    fi_addr: *mut fi::fi_addr_t,
    count: usize,
    _flags: u64,
) -> c_int {
    guard("fi_av_remove", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let a = match unsafe { obj::need::<Av>(av as *mut fi::fid, "fi_av_remove") } {
            Ok(a) => a,
            Err(e) => return e,
        };
        if fi_addr.is_null() && count > 0 {
            return log::refuse(
                "fi_av_remove",
                fi::FI_EINVAL,
                "fi_addr is NULL with count > 0",
            );
        }
        let mut missing = 0;
        for i in 0..count {
            // SAFETY: `count` entries by the contract.
            let id = unsafe { *fi_addr.add(i) };
            if !a.table.remove(id) {
                missing += 1;
            }
        }
        if missing > 0 {
            return log::refuse(
                "fi_av_remove",
                fi::FI_EINVAL,
                &format!("{missing} of {count} fi_addr were not in the AV"),
            );
        }
        0
    })
}

unsafe extern "C" fn av_lookup(
    av: *mut fi::fid_av,
    fi_addr: fi::fi_addr_t,
    addr: *mut c_void,
    addrlen: *mut usize,
) -> c_int {
    guard("fi_av_lookup", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let a = match unsafe { obj::need::<Av>(av as *mut fi::fid, "fi_av_lookup") } {
            Ok(a) => a,
            Err(e) => return e,
        };
        if addrlen.is_null() {
            return log::refuse("fi_av_lookup", fi::FI_EINVAL, "addrlen is NULL");
        }
        let Some(sa) = a.table.lookup(fi_addr) else {
            return log::refuse(
                "fi_av_lookup",
                fi::FI_EINVAL,
                &format!("fi_addr {fi_addr} is not in the AV"),
            );
        };
        let bytes = addr::to_bytes(sa);
        // SAFETY: `addrlen` non-null; `addr` holds `*addrlen` bytes when non-null.
        unsafe {
            let room = *addrlen;
            if !addr.is_null() {
                std::ptr::copy_nonoverlapping(
                    bytes.as_ptr(),
                    addr as *mut u8,
                    room.min(bytes.len()),
                );
            }
            *addrlen = bytes.len();
        }
        0
    })
}

unsafe extern "C" fn av_straddr(
    _av: *mut fi::fid_av,
    addr: *const c_void,
    buf: *mut c_char,
    len: *mut usize,
) -> *const c_char {
    guard("fi_av_straddr", std::ptr::null(), || {
        if addr.is_null() || buf.is_null() || len.is_null() {
            log::refuse("fi_av_straddr", fi::FI_EINVAL, "addr, buf or len is NULL");
            return std::ptr::null();
        }
        // SAFETY: an address of this AV's format (16 bytes) from the application.
        let bytes = unsafe { std::slice::from_raw_parts(addr as *const u8, addr::SOCKADDR_IN_LEN) };
        let text = match addr::from_bytes(bytes) {
            Some(sa) => addr::to_text(sa),
            None => "fi_addr_format_unknown".to_string(),
        };
        // SAFETY: `buf` holds `*len` bytes; the text is copied with a NUL, truncated
        // to fit, and `*len` set to what the whole text needs (libfabric's rule).
        unsafe {
            let room = *len;
            if room > 0 {
                let n = text.len().min(room - 1);
                std::ptr::copy_nonoverlapping(text.as_ptr(), buf as *mut u8, n);
                *buf.add(n) = 0;
            }
            *len = text.len() + 1;
        }
        buf as *const c_char
    })
}
