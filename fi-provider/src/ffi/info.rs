//! `fi_getinfo` for this provider: hints copied out of C, answered by `attrs`, the
//! answer copied into a libfabric-allocated `fi_info`.

use super::{c_str, guard, log};
use crate::addr;
use crate::attrs::{self, Hints, Offer};
use crate::codes;
use std::os::raw::{c_char, c_int, c_void};
use zerorx_libfabric_sys as fi;

/// The `getinfo` of our `fi_provider`.
pub(super) unsafe extern "C" fn getinfo(
    version: u32,
    node: *const c_char,
    service: *const c_char,
    flags: u64,
    hints: *const fi::fi_info,
    info: *mut *mut fi::fi_info,
) -> c_int {
    guard("fi_getinfo", -codes::EOTHER, || {
        if info.is_null() {
            return log::refuse("fi_getinfo", fi::FI_EINVAL, "info is NULL");
        }
        // SAFETY: libfabric passes NULL or valid strings and hints for the call.
        let (node, service, h) = unsafe { (c_str(node), c_str(service), read_hints(hints)) };
        let offer = match attrs::offer(version, node, service, flags & fi::FI_SOURCE != 0, &h) {
            Ok(o) => o,
            Err(why) => {
                log::info(&format!("fi_getinfo: nothing offered: {why}"));
                return -fi::FI_ENODATA;
            }
        };
        match build(&offer) {
            Some(p) => {
                // SAFETY: `info` is non-null (checked) and writable per fi_getinfo.
                unsafe { *info = p };
                0
            }
            None => log::refuse("fi_getinfo", fi::FI_ENOMEM, "out of memory"),
        }
    })
}

/// Copies what `attrs` needs out of the hints.
///
/// # Safety
/// `h` is NULL or a valid `fi_info` whose attribute pointers are NULL or valid.
unsafe fn read_hints(h: *const fi::fi_info) -> Hints {
    let mut out = Hints::default();
    if h.is_null() {
        return out;
    }
    // SAFETY: valid by the contract; every pointer read below is checked for NULL.
    unsafe {
        let h = &*h;
        out.caps = h.caps;
        out.mode = h.mode;
        out.addr_format = h.addr_format;
        out.tx = h.tx_attr.as_ref().copied();
        out.rx = h.rx_attr.as_ref().copied();
        out.ep = h.ep_attr.as_ref().copied();
        out.domain = h.domain_attr.as_ref().copied();
        let name_ok = |p: *const c_char| p.is_null() || c_str(p) == Some(attrs::NAME);
        if let Some(d) = h.domain_attr.as_ref() {
            out.other_name |= !name_ok(d.name);
        }
        if let Some(f) = h.fabric_attr.as_ref() {
            out.other_name |= !name_ok(f.name);
        }
        for (p, len, slot) in [
            (h.src_addr, h.src_addrlen, &mut out.src),
            (h.dest_addr, h.dest_addrlen, &mut out.dest),
        ] {
            if p.is_null() || len == 0 {
                continue;
            }
            let bytes = std::slice::from_raw_parts(p as *const u8, len);
            match addr::from_bytes(bytes) {
                Some(a) => *slot = Some(a),
                None => out.foreign_addr = true,
            }
        }
    }
    out
}

/// A `fi_info` libfabric can free (`fi_freeinfo`) holding `o`.
fn build(o: &Offer) -> Option<*mut fi::fi_info> {
    // SAFETY: `fi_dupinfo(NULL)` allocates a zeroed `fi_info` with every attribute
    // struct allocated; all pointers written below are then owned by it and freed
    // by `fi_freeinfo` with libc's `free` (hence `malloc`/`strdup`).
    unsafe {
        let info = fi::fi_dupinfo(std::ptr::null());
        if info.is_null() {
            return None;
        }
        let i = &mut *info;
        if i.tx_attr.is_null()
            || i.rx_attr.is_null()
            || i.ep_attr.is_null()
            || i.domain_attr.is_null()
            || i.fabric_attr.is_null()
        {
            fi::fi_freeinfo(info);
            return None;
        }
        i.caps = o.caps;
        i.mode = o.mode;
        i.addr_format = fi::FI_SOCKADDR_IN;
        *i.tx_attr = o.tx;
        *i.rx_attr = o.rx;
        *i.ep_attr = o.ep;
        *i.domain_attr = o.domain;
        (*i.domain_attr).name = libc::strdup(c"zerorx".as_ptr());
        (*i.fabric_attr).name = libc::strdup(c"zerorx".as_ptr());
        (*i.fabric_attr).prov_version = attrs::VERSION;
        i.src_addr = malloc_addr(o.src);
        i.src_addrlen = addr::SOCKADDR_IN_LEN;
        if let Some(d) = o.dest {
            i.dest_addr = malloc_addr(d);
            i.dest_addrlen = addr::SOCKADDR_IN_LEN;
        }
        if (*i.domain_attr).name.is_null()
            || (*i.fabric_attr).name.is_null()
            || i.src_addr.is_null()
        {
            fi::fi_freeinfo(info);
            return None;
        }
        Some(info)
    }
}

/// A `malloc`ed `sockaddr_in`.
fn malloc_addr(a: std::net::SocketAddrV4) -> *mut c_void {
    let bytes = addr::to_bytes(a);
    // SAFETY: a fresh allocation of the copied length, checked for NULL.
    unsafe {
        let p = libc::malloc(bytes.len());
        if !p.is_null() {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), p as *mut u8, bytes.len());
        }
        p
    }
}

/// The source address an `fi_info` names (`fi_endpoint` binds there).
///
/// # Safety
/// `info` is a valid `fi_info`.
pub(super) unsafe fn src_of(info: &fi::fi_info) -> Option<std::net::SocketAddrV4> {
    if info.src_addr.is_null() || info.src_addrlen < addr::SOCKADDR_IN_LEN {
        return None;
    }
    // SAFETY: `src_addrlen` bytes at `src_addr`, per `fi_info`.
    let b = unsafe { std::slice::from_raw_parts(info.src_addr as *const u8, info.src_addrlen) };
    addr::from_bytes(b)
}
