//! Endpoints: `fi_endpoint`, bind, enable, getname, cancel, and the message and
//! tagged data calls, each turned into one `SendArgs`/`RecvArgs` for `crate::ep`.

use super::av::Av;
use super::cq::Cq;
use super::enosys::{
    ENOSYS_ATOMIC, ENOSYS_CM, ENOSYS_COLLECTIVE, ENOSYS_EP, ENOSYS_FID, ENOSYS_MSG, ENOSYS_RMA,
    ENOSYS_TAGGED,
};
use super::fabric::domain_of;
use super::info::src_of;
use super::obj::{self, Obj};
use super::{guard, log};
use crate::addr;
use crate::attrs;
use crate::codes;
use crate::ep::{EpAttrs, EpShared, RecvArgs, Refusal, RmaArgs, SendArgs};
use crate::worker::RecvMode;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::raw::{c_int, c_void};
use std::sync::atomic::Ordering;
use zerorx_fabric::provider::ProbeAction;
use zerorx_libfabric_sys as fi;

#[repr(C)]
pub(super) struct Ep {
    fid: fi::fid_ep,
    shared: EpShared,
}

// SAFETY: `fid_ep` is the first field and `CLASS` its class.
unsafe impl Obj for Ep {
    const CLASS: u32 = fi::FI_CLASS_EP;
    const NAME: &'static str = "endpoint";
}

static EP_FID_OPS: fi::fi_ops = fi::fi_ops {
    close: Some(ep_close),
    bind: Some(ep_bind),
    control: Some(ep_control),
    ..ENOSYS_FID
};
static EP_OPS: fi::fi_ops_ep = fi::fi_ops_ep {
    cancel: Some(ep_cancel),
    getopt: Some(ep_getopt),
    setopt: Some(ep_setopt),
    rx_size_left: Some(rx_size_left),
    tx_size_left: Some(tx_size_left),
    ..ENOSYS_EP
};
static CM_OPS: fi::fi_ops_cm = fi::fi_ops_cm {
    getname: Some(getname),
    ..ENOSYS_CM
};
static MSG_OPS: fi::fi_ops_msg = fi::fi_ops_msg {
    recv: Some(recv),
    recvv: Some(recvv),
    recvmsg: Some(recvmsg),
    send: Some(send),
    sendv: Some(sendv),
    sendmsg: Some(sendmsg),
    inject: Some(inject),
    senddata: Some(senddata),
    injectdata: Some(injectdata),
    ..ENOSYS_MSG
};
static RMA_OPS: fi::fi_ops_rma = fi::fi_ops_rma {
    read: Some(rma_read),
    readv: Some(rma_readv),
    readmsg: Some(rma_readmsg),
    write: Some(rma_write),
    writev: Some(rma_writev),
    writemsg: Some(rma_writemsg),
    inject: Some(rma_inject),
    writedata: Some(rma_writedata),
    injectdata: Some(rma_injectdata),
    ..ENOSYS_RMA
};
static TAGGED_OPS: fi::fi_ops_tagged = fi::fi_ops_tagged {
    recv: Some(trecv),
    recvv: Some(trecvv),
    recvmsg: Some(trecvmsg),
    send: Some(tsend),
    sendv: Some(tsendv),
    sendmsg: Some(tsendmsg),
    inject: Some(tinject),
    senddata: Some(tsenddata),
    injectdata: Some(tinjectdata),
    ..ENOSYS_TAGGED
};

pub(super) unsafe extern "C" fn endpoint_open(
    domain: *mut fi::fid_domain,
    info: *mut fi::fi_info,
    ep: *mut *mut fi::fid_ep,
    context: *mut c_void,
) -> c_int {
    guard("fi_endpoint", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let Some(d) = (unsafe { domain_of(domain) }) else {
            return log::refuse(
                "fi_endpoint",
                fi::FI_EINVAL,
                "domain is not a zerorx domain",
            );
        };
        if info.is_null() || ep.is_null() {
            return log::refuse("fi_endpoint", fi::FI_EINVAL, "info or ep is NULL");
        }
        // SAFETY: a valid fi_info from the application; attr pointers checked.
        let (i, tx, rx, epa) = unsafe {
            let i = &*info;
            (
                i,
                i.tx_attr.as_ref(),
                i.rx_attr.as_ref(),
                i.ep_attr.as_ref(),
            )
        };
        if let Some(e) = epa {
            if !matches!(e.type_, fi::FI_EP_RDM | fi::FI_EP_UNSPEC) {
                return log::refuse(
                    "fi_endpoint",
                    fi::FI_EINVAL,
                    "ep_attr->type is not FI_EP_RDM",
                );
            }
        }
        let pick = |v: usize, default: usize, max: usize| if v == 0 { default } else { v.min(max) };
        let attrs = EpAttrs {
            caps: i.caps,
            // SAFETY: `i` is valid (above).
            src: unsafe { src_of(i) }.unwrap_or(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)),
            tx_size: pick(
                tx.map_or(0, |t| t.size),
                attrs::QUEUE_SIZE,
                attrs::QUEUE_SIZE,
            ),
            rx_size: pick(
                rx.map_or(0, |r| r.size),
                attrs::QUEUE_SIZE,
                attrs::QUEUE_SIZE,
            ),
            max_msg: pick(
                epa.map_or(0, |e| e.max_msg_size),
                attrs::MAX_MSG,
                attrs::MAX_MSG,
            ),
            inject_size: pick(
                tx.map_or(0, |t| t.inject_size),
                attrs::INJECT_SIZE,
                attrs::INJECT_SIZE,
            ),
            tx_op_flags: tx.map_or(0, |t| t.op_flags),
            rx_op_flags: rx.map_or(0, |r| r.op_flags),
            rx_cq_data: (i.mode | rx.map_or(0, |r| r.mode)) & fi::FI_RX_CQ_DATA != 0,
        };
        d.shared.children.fetch_add(1, Ordering::AcqRel);
        let p = obj::into_fid(Ep {
            fid: fi::fid_ep {
                fid: obj::header::<Ep>(context, &EP_FID_OPS),
                ops: obj::table(&EP_OPS),
                cm: obj::table(&CM_OPS),
                msg: obj::table(&MSG_OPS),
                rma: obj::table(&RMA_OPS),
                tagged: obj::table(&TAGGED_OPS),
                atomic: obj::table(&ENOSYS_ATOMIC_TABLE),
                collective: obj::table(&ENOSYS_COLLECTIVE_TABLE),
            },
            shared: EpShared::new(d.shared.clone(), attrs),
        });
        // SAFETY: non-null (checked) and writable.
        unsafe { *ep = p as *mut fi::fid_ep };
        0
    })
}

static ENOSYS_ATOMIC_TABLE: fi::fi_ops_atomic = ENOSYS_ATOMIC;
static ENOSYS_COLLECTIVE_TABLE: fi::fi_ops_collective = ENOSYS_COLLECTIVE;

/// The endpoint behind `p`.
///
/// # Safety
/// As `obj::need`.
unsafe fn ep_of<'a>(p: *mut fi::fid, call: &str) -> Result<&'a Ep, isize> {
    // SAFETY: as `obj::need`.
    unsafe { obj::need::<Ep>(p, call) }.map_err(|e| e as isize)
}

fn answer(call: &str, r: Result<(), Refusal>) -> isize {
    match r {
        Ok(()) => 0,
        Err(Refusal { code, why }) => log::refuse(call, code, &why) as isize,
    }
}

unsafe extern "C" fn ep_close(fid: *mut fi::fid) -> c_int {
    guard("fi_close(ep)", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let e = match unsafe { ep_of(fid, "fi_close") } {
            Ok(e) => e,
            Err(c) => return c as c_int,
        };
        e.shared.close();
        e.shared.domain.children.fetch_sub(1, Ordering::AcqRel);
        // SAFETY: a live endpoint, not used after its close.
        unsafe { obj::free::<Ep>(fid) };
        0
    })
}

unsafe extern "C" fn ep_bind(fid: *mut fi::fid, bfid: *mut fi::fid, flags: u64) -> c_int {
    guard("fi_ep_bind", -codes::EOTHER, || {
        // SAFETY: the application passes live fids.
        let e = match unsafe { ep_of(fid, "fi_ep_bind") } {
            Ok(e) => e,
            Err(c) => return c as c_int,
        };
        if bfid.is_null() {
            return log::refuse("fi_ep_bind", fi::FI_EINVAL, "bfid is NULL");
        }
        // SAFETY: non-null live fid; its class picks what it is.
        let class = unsafe { (*bfid).fclass } as u32;
        let r = match class {
            // SAFETY: checked class, live fid.
            fi::FI_CLASS_CQ => match unsafe { obj::get::<Cq>(bfid) } {
                Some(c) => e.shared.bind_cq(c.store.clone(), flags),
                None => return log::refuse("fi_ep_bind", fi::FI_EINVAL, "not a zerorx CQ"),
            },
            // SAFETY: checked class, live fid.
            fi::FI_CLASS_AV => match unsafe { obj::get::<Av>(bfid) } {
                Some(a) => e.shared.bind_av(a.table.clone()),
                None => return log::refuse("fi_ep_bind", fi::FI_EINVAL, "not a zerorx AV"),
            },
            // SAFETY: checked class, live fid.
            fi::FI_CLASS_CNTR => match unsafe { obj::get::<super::cntr::Cntr>(bfid) } {
                Some(c) => e.shared.bind_cntr(c.counter.clone(), flags),
                None => return log::refuse("fi_ep_bind", fi::FI_EINVAL, "not a zerorx counter"),
            },
            // RDM endpoints report no events; an EQ binding has nothing to carry.
            fi::FI_CLASS_EQ => Ok(()),
            other => {
                return log::refuse(
                    "fi_ep_bind",
                    fi::FI_ENOSYS,
                    &format!("binding fid class {other} is not offered"),
                )
            }
        };
        answer("fi_ep_bind", r) as c_int
    })
}

unsafe extern "C" fn ep_control(fid: *mut fi::fid, command: c_int, arg: *mut c_void) -> c_int {
    guard("fi_control(ep)", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let e = match unsafe { ep_of(fid, "fi_control") } {
            Ok(e) => e,
            Err(c) => return c as c_int,
        };
        match command as u32 {
            fi::FI_ENABLE => answer("fi_enable", e.shared.enable()) as c_int,
            fi::FI_GETOPSFLAG => {
                if arg.is_null() {
                    return log::refuse("fi_control", fi::FI_EINVAL, "FI_GETOPSFLAG arg is NULL");
                }
                // SAFETY: FI_GETOPSFLAG's argument is a u64 holding FI_TRANSMIT or FI_RECV.
                unsafe {
                    let f = &mut *(arg as *mut u64);
                    *f = if *f & fi::FI_RECV != 0 {
                        e.shared.attrs.rx_op_flags
                    } else {
                        e.shared.attrs.tx_op_flags
                    };
                }
                0
            }
            other => log::refuse("fi_control", fi::FI_ENOSYS, &format!("command {other}")),
        }
    })
}

unsafe extern "C" fn ep_cancel(fid: fi::fid_t, context: *mut c_void) -> isize {
    guard("fi_cancel", -(codes::EOTHER as isize), || {
        // SAFETY: the application passes a live fid.
        let e = match unsafe { ep_of(fid, "fi_cancel") } {
            Ok(e) => e,
            Err(c) => return c,
        };
        answer("fi_cancel", e.shared.cancel(context as usize))
    })
}

/// Whether `level`/`optname` name `FI_OPT_MIN_MULTI_RECV`, the one option offered.
fn min_multi_recv_opt(level: c_int, optname: c_int) -> bool {
    level as u32 == fi::FI_OPT_ENDPOINT && optname as u32 == fi::FI_OPT_MIN_MULTI_RECV
}

unsafe extern "C" fn ep_getopt(
    fid: fi::fid_t,
    level: c_int,
    optname: c_int,
    optval: *mut c_void,
    optlen: *mut usize,
) -> c_int {
    guard("fi_getopt", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let e = match unsafe { ep_of(fid, "fi_getopt") } {
            Ok(e) => e,
            Err(c) => return c as c_int,
        };
        if !min_multi_recv_opt(level, optname) {
            return log::refuse(
                "fi_getopt",
                fi::FI_ENOPROTOOPT,
                &format!("option {level}/{optname}"),
            );
        }
        if optval.is_null() || optlen.is_null() {
            return log::refuse("fi_getopt", fi::FI_EINVAL, "optval or optlen is NULL");
        }
        // SAFETY: `optlen` non-null; `optval` holds `*optlen` bytes.
        unsafe {
            if *optlen < std::mem::size_of::<usize>() {
                *optlen = std::mem::size_of::<usize>();
                return -codes::ETOOSMALL;
            }
            (optval as *mut usize).write_unaligned(e.shared.min_multi_recv());
            *optlen = std::mem::size_of::<usize>();
        }
        0
    })
}

unsafe extern "C" fn ep_setopt(
    fid: fi::fid_t,
    level: c_int,
    optname: c_int,
    optval: *const c_void,
    optlen: usize,
) -> c_int {
    guard("fi_setopt", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let e = match unsafe { ep_of(fid, "fi_setopt") } {
            Ok(e) => e,
            Err(c) => return c as c_int,
        };
        if !min_multi_recv_opt(level, optname) {
            return log::refuse(
                "fi_setopt",
                fi::FI_ENOPROTOOPT,
                &format!("option {level}/{optname}"),
            );
        }
        if optval.is_null() || optlen < std::mem::size_of::<usize>() {
            return log::refuse("fi_setopt", fi::FI_EINVAL, "optval must hold a size_t");
        }
        // SAFETY: a size_t at `optval` (checked length).
        let v = unsafe { (optval as *const usize).read_unaligned() };
        e.shared.set_min_multi_recv(v);
        0
    })
}

unsafe extern "C" fn tx_size_left(ep: *mut fi::fid_ep) -> isize {
    guard("fi_tx_size_left", -(codes::EOTHER as isize), || {
        // SAFETY: the application passes a live fid.
        match unsafe { ep_of(ep as *mut fi::fid, "fi_tx_size_left") } {
            Ok(e) => e.shared.tx_left() as isize,
            Err(c) => c,
        }
    })
}

unsafe extern "C" fn rx_size_left(ep: *mut fi::fid_ep) -> isize {
    guard("fi_rx_size_left", -(codes::EOTHER as isize), || {
        // SAFETY: the application passes a live fid.
        match unsafe { ep_of(ep as *mut fi::fid, "fi_rx_size_left") } {
            Ok(e) => e.shared.rx_left() as isize,
            Err(c) => c,
        }
    })
}

unsafe extern "C" fn getname(fid: fi::fid_t, a: *mut c_void, addrlen: *mut usize) -> c_int {
    guard("fi_getname", -codes::EOTHER, || {
        // SAFETY: the application passes a live fid.
        let e = match unsafe { ep_of(fid, "fi_getname") } {
            Ok(e) => e,
            Err(c) => return c as c_int,
        };
        if addrlen.is_null() {
            return log::refuse("fi_getname", fi::FI_EINVAL, "addrlen is NULL");
        }
        let Some(local) = e.shared.local() else {
            return log::refuse(
                "fi_getname",
                codes::EOPBADSTATE,
                "the endpoint has no address before fi_enable",
            );
        };
        let bytes = addr::to_bytes(local);
        // SAFETY: `addrlen` non-null; `a` holds `*addrlen` bytes when non-null.
        unsafe {
            let room = *addrlen;
            *addrlen = bytes.len();
            if a.is_null() || room < bytes.len() {
                return -codes::ETOOSMALL;
            }
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), a as *mut u8, bytes.len());
        }
        0
    })
}

/// The one buffer of an iovec array (`iov_limit` is 1).
///
/// # Safety
/// `iov` holds `count` iovecs when non-null.
unsafe fn one_iov(iov: *const fi::iovec, count: usize) -> Result<(usize, usize), Refusal> {
    match count {
        0 => Ok((0, 0)),
        1 if !iov.is_null() => {
            // SAFETY: one iovec by the contract.
            let v = unsafe { &*iov };
            Ok((v.iov_base as usize, v.iov_len))
        }
        1 => Err(Refusal {
            code: fi::FI_EINVAL,
            why: "iov is NULL with count 1".into(),
        }),
        n => Err(Refusal {
            code: fi::FI_EINVAL,
            why: format!("iov count {n} is over iov_limit 1"),
        }),
    }
}

/// A copy of the application's bytes for an inject (at most `inject_size`).
///
/// # Safety
/// `buf` holds `len` bytes when `len > 0`.
unsafe fn inject_copy(a: &EpAttrs, buf: usize, len: usize) -> Result<Box<[u8]>, Refusal> {
    if len > a.inject_size {
        return Err(Refusal {
            code: fi::FI_EMSGSIZE,
            why: format!("len {len} is over inject_size {}", a.inject_size),
        });
    }
    if len == 0 || buf == 0 {
        return Ok(Box::default());
    }
    // SAFETY: `len` readable bytes by the contract.
    Ok(Box::from(unsafe {
        std::slice::from_raw_parts(buf as *const u8, len)
    }))
}

/// Runs a send built by `make` from the endpoint's attributes.
///
/// # Safety
/// `ep` is a live fid; the buffers named by the arguments are as the libfabric call
/// that made them says.
unsafe fn post_send(
    ep: *mut fi::fid_ep,
    call: &str,
    make: impl FnOnce(&EpAttrs) -> Result<SendArgs, Refusal>,
) -> isize {
    guard(call, -(codes::EOTHER as isize), || {
        // SAFETY: a live fid by the contract.
        let e = match unsafe { ep_of(ep as *mut fi::fid, call) } {
            Ok(e) => e,
            Err(c) => return c,
        };
        let r = make(&e.shared.attrs).and_then(|mut a| {
            if a.inject || a.flags & fi::FI_INJECT != 0 {
                // SAFETY: `len` bytes at `buf`, per the call.
                a.owned = Some(unsafe { inject_copy(&e.shared.attrs, a.buf, a.len) }?);
            }
            e.shared.send(a)
        });
        answer(call, r)
    })
}

/// Runs a receive built by `make`.
///
/// # Safety
/// As [`post_send`].
unsafe fn post_recv(
    ep: *mut fi::fid_ep,
    call: &str,
    make: impl FnOnce(&EpAttrs) -> Result<RecvArgs, Refusal>,
) -> isize {
    guard(call, -(codes::EOTHER as isize), || {
        // SAFETY: a live fid by the contract.
        let e = match unsafe { ep_of(ep as *mut fi::fid, call) } {
            Ok(e) => e,
            Err(c) => return c,
        };
        answer(call, make(&e.shared.attrs).and_then(|a| e.shared.recv(a)))
    })
}

fn plain_send(
    a: &EpAttrs,
    buf: *const c_void,
    len: usize,
    dest: u64,
    context: *mut c_void,
) -> SendArgs {
    SendArgs {
        buf: buf as usize,
        len,
        dest,
        tag: None,
        data: None,
        flags: a.tx_op_flags,
        context: context as usize,
        inject: false,
        owned: None,
    }
}

fn plain_recv(
    a: &EpAttrs,
    buf: *mut c_void,
    len: usize,
    src: fi::fi_addr_t,
    context: *mut c_void,
) -> RecvArgs {
    RecvArgs {
        buf: buf as usize,
        len,
        mode: RecvMode::Post,
        src,
        tag: None,
        flags: a.rx_op_flags,
        context: context as usize,
    }
}

/// What `fi_trecvmsg`'s flags make of the receive.
fn recv_mode(flags: u64) -> Result<RecvMode, Refusal> {
    let (peek, claim, discard) = (
        flags & fi::FI_PEEK != 0,
        flags & fi::FI_CLAIM != 0,
        flags & fi::FI_DISCARD != 0,
    );
    Ok(match (peek, claim, discard) {
        (false, false, false) => RecvMode::Post,
        (true, false, false) => RecvMode::Probe(ProbeAction::Peek),
        (true, true, false) => RecvMode::Probe(ProbeAction::Claim),
        (true, false, true) => RecvMode::Probe(ProbeAction::Discard),
        (false, true, d) => RecvMode::Claimed { discard: d },
        _ => {
            return Err(Refusal {
                code: fi::FI_EINVAL,
                why: "FI_DISCARD needs FI_PEEK or FI_CLAIM, and not both".into(),
            })
        }
    })
}

unsafe extern "C" fn send(
    ep: *mut fi::fid_ep,
    buf: *const c_void,
    len: usize,
    _desc: *mut c_void,
    dest: fi::fi_addr_t,
    context: *mut c_void,
) -> isize {
    // SAFETY: fi_send's arguments.
    unsafe {
        post_send(ep, "fi_send", |a| {
            Ok(plain_send(a, buf, len, dest, context))
        })
    }
}

unsafe extern "C" fn sendv(
    ep: *mut fi::fid_ep,
    iov: *const fi::iovec,
    _desc: *mut *mut c_void,
    count: usize,
    dest: fi::fi_addr_t,
    context: *mut c_void,
) -> isize {
    // SAFETY: fi_sendv's arguments.
    unsafe {
        post_send(ep, "fi_sendv", |a| {
            let (b, l) = one_iov(iov, count)?;
            Ok(plain_send(a, b as *const c_void, l, dest, context))
        })
    }
}

unsafe extern "C" fn sendmsg(ep: *mut fi::fid_ep, msg: *const fi::fi_msg, flags: u64) -> isize {
    // SAFETY: fi_sendmsg's arguments.
    unsafe {
        post_send(ep, "fi_sendmsg", |a| {
            let m = msg.as_ref().ok_or(Refusal {
                code: fi::FI_EINVAL,
                why: "msg is NULL".into(),
            })?;
            let (b, l) = one_iov(m.msg_iov, m.iov_count)?;
            let mut s = plain_send(a, b as *const c_void, l, m.addr, m.context);
            s.flags = flags;
            s.data = (flags & fi::FI_REMOTE_CQ_DATA != 0).then_some(m.data);
            Ok(s)
        })
    }
}

unsafe extern "C" fn inject(
    ep: *mut fi::fid_ep,
    buf: *const c_void,
    len: usize,
    dest: fi::fi_addr_t,
) -> isize {
    // SAFETY: fi_inject's arguments.
    unsafe {
        post_send(ep, "fi_inject", |a| {
            let mut s = plain_send(a, buf, len, dest, std::ptr::null_mut());
            s.inject = true;
            Ok(s)
        })
    }
}

unsafe extern "C" fn senddata(
    ep: *mut fi::fid_ep,
    buf: *const c_void,
    len: usize,
    _desc: *mut c_void,
    data: u64,
    dest: fi::fi_addr_t,
    context: *mut c_void,
) -> isize {
    // SAFETY: fi_senddata's arguments.
    unsafe {
        post_send(ep, "fi_senddata", |a| {
            let mut s = plain_send(a, buf, len, dest, context);
            s.data = Some(data);
            Ok(s)
        })
    }
}

unsafe extern "C" fn injectdata(
    ep: *mut fi::fid_ep,
    buf: *const c_void,
    len: usize,
    data: u64,
    dest: fi::fi_addr_t,
) -> isize {
    // SAFETY: fi_injectdata's arguments.
    unsafe {
        post_send(ep, "fi_injectdata", |a| {
            let mut s = plain_send(a, buf, len, dest, std::ptr::null_mut());
            s.inject = true;
            s.data = Some(data);
            Ok(s)
        })
    }
}

unsafe extern "C" fn recv(
    ep: *mut fi::fid_ep,
    buf: *mut c_void,
    len: usize,
    _desc: *mut c_void,
    src: fi::fi_addr_t,
    context: *mut c_void,
) -> isize {
    // SAFETY: fi_recv's arguments.
    unsafe { post_recv(ep, "fi_recv", |a| Ok(plain_recv(a, buf, len, src, context))) }
}

unsafe extern "C" fn recvv(
    ep: *mut fi::fid_ep,
    iov: *const fi::iovec,
    _desc: *mut *mut c_void,
    count: usize,
    src: fi::fi_addr_t,
    context: *mut c_void,
) -> isize {
    // SAFETY: fi_recvv's arguments.
    unsafe {
        post_recv(ep, "fi_recvv", |a| {
            let (b, l) = one_iov(iov, count)?;
            Ok(plain_recv(a, b as *mut c_void, l, src, context))
        })
    }
}

unsafe extern "C" fn recvmsg(ep: *mut fi::fid_ep, msg: *const fi::fi_msg, flags: u64) -> isize {
    // SAFETY: fi_recvmsg's arguments.
    unsafe {
        post_recv(ep, "fi_recvmsg", |a| {
            let m = msg.as_ref().ok_or(Refusal {
                code: fi::FI_EINVAL,
                why: "msg is NULL".into(),
            })?;
            let (b, l) = one_iov(m.msg_iov, m.iov_count)?;
            let mut r = plain_recv(a, b as *mut c_void, l, m.addr, m.context);
            r.flags = flags;
            Ok(r)
        })
    }
}

unsafe extern "C" fn tsend(
    ep: *mut fi::fid_ep,
    buf: *const c_void,
    len: usize,
    _desc: *mut c_void,
    dest: fi::fi_addr_t,
    tag: u64,
    context: *mut c_void,
) -> isize {
    // SAFETY: fi_tsend's arguments.
    unsafe {
        post_send(ep, "fi_tsend", |a| {
            let mut s = plain_send(a, buf, len, dest, context);
            s.tag = Some(tag);
            Ok(s)
        })
    }
}

unsafe extern "C" fn tsendv(
    ep: *mut fi::fid_ep,
    iov: *const fi::iovec,
    _desc: *mut *mut c_void,
    count: usize,
    dest: fi::fi_addr_t,
    tag: u64,
    context: *mut c_void,
) -> isize {
    // SAFETY: fi_tsendv's arguments.
    unsafe {
        post_send(ep, "fi_tsendv", |a| {
            let (b, l) = one_iov(iov, count)?;
            let mut s = plain_send(a, b as *const c_void, l, dest, context);
            s.tag = Some(tag);
            Ok(s)
        })
    }
}

unsafe extern "C" fn tsendmsg(
    ep: *mut fi::fid_ep,
    msg: *const fi::fi_msg_tagged,
    flags: u64,
) -> isize {
    // SAFETY: fi_tsendmsg's arguments.
    unsafe {
        post_send(ep, "fi_tsendmsg", |a| {
            let m = msg.as_ref().ok_or(Refusal {
                code: fi::FI_EINVAL,
                why: "msg is NULL".into(),
            })?;
            let (b, l) = one_iov(m.msg_iov, m.iov_count)?;
            let mut s = plain_send(a, b as *const c_void, l, m.addr, m.context);
            s.flags = flags;
            s.tag = Some(m.tag);
            s.data = (flags & fi::FI_REMOTE_CQ_DATA != 0).then_some(m.data);
            Ok(s)
        })
    }
}

unsafe extern "C" fn tinject(
    ep: *mut fi::fid_ep,
    buf: *const c_void,
    len: usize,
    dest: fi::fi_addr_t,
    tag: u64,
) -> isize {
    // SAFETY: fi_tinject's arguments.
    unsafe {
        post_send(ep, "fi_tinject", |a| {
            let mut s = plain_send(a, buf, len, dest, std::ptr::null_mut());
            s.inject = true;
            s.tag = Some(tag);
            Ok(s)
        })
    }
}

unsafe extern "C" fn tsenddata(
    ep: *mut fi::fid_ep,
    buf: *const c_void,
    len: usize,
    _desc: *mut c_void,
    data: u64,
    dest: fi::fi_addr_t,
    tag: u64,
    context: *mut c_void,
) -> isize {
    // SAFETY: fi_tsenddata's arguments.
    unsafe {
        post_send(ep, "fi_tsenddata", |a| {
            let mut s = plain_send(a, buf, len, dest, context);
            s.tag = Some(tag);
            s.data = Some(data);
            Ok(s)
        })
    }
}

unsafe extern "C" fn tinjectdata(
    ep: *mut fi::fid_ep,
    buf: *const c_void,
    len: usize,
    data: u64,
    dest: fi::fi_addr_t,
    tag: u64,
) -> isize {
    // SAFETY: fi_tinjectdata's arguments.
    unsafe {
        post_send(ep, "fi_tinjectdata", |a| {
            let mut s = plain_send(a, buf, len, dest, std::ptr::null_mut());
            s.inject = true;
            s.tag = Some(tag);
            s.data = Some(data);
            Ok(s)
        })
    }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn trecv(
    ep: *mut fi::fid_ep,
    buf: *mut c_void,
    len: usize,
    _desc: *mut c_void,
    src: fi::fi_addr_t,
    tag: u64,
    ignore: u64,
    context: *mut c_void,
) -> isize {
    // SAFETY: fi_trecv's arguments.
    unsafe {
        post_recv(ep, "fi_trecv", |a| {
            let mut r = plain_recv(a, buf, len, src, context);
            r.tag = Some((tag, ignore));
            Ok(r)
        })
    }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn trecvv(
    ep: *mut fi::fid_ep,
    iov: *const fi::iovec,
    _desc: *mut *mut c_void,
    count: usize,
    src: fi::fi_addr_t,
    tag: u64,
    ignore: u64,
    context: *mut c_void,
) -> isize {
    // SAFETY: fi_trecvv's arguments.
    unsafe {
        post_recv(ep, "fi_trecvv", |a| {
            let (b, l) = one_iov(iov, count)?;
            let mut r = plain_recv(a, b as *mut c_void, l, src, context);
            r.tag = Some((tag, ignore));
            Ok(r)
        })
    }
}

unsafe extern "C" fn trecvmsg(
    ep: *mut fi::fid_ep,
    msg: *const fi::fi_msg_tagged,
    flags: u64,
) -> isize {
    // SAFETY: fi_trecvmsg's arguments.
    unsafe {
        post_recv(ep, "fi_trecvmsg", |a| {
            let m = msg.as_ref().ok_or(Refusal {
                code: fi::FI_EINVAL,
                why: "msg is NULL".into(),
            })?;
            let (b, l) = one_iov(m.msg_iov, m.iov_count)?;
            let mut r = plain_recv(a, b as *mut c_void, l, m.addr, m.context);
            r.flags = flags;
            r.tag = Some((m.tag, m.ignore));
            r.mode = recv_mode(flags)?;
            Ok(r)
        })
    }
}

/// Runs an RMA built by `make`.
///
/// # Safety
/// As [`post_send`].
unsafe fn post_rma(
    ep: *mut fi::fid_ep,
    call: &str,
    make: impl FnOnce(&EpAttrs) -> Result<RmaArgs, Refusal>,
) -> isize {
    guard(call, -(codes::EOTHER as isize), || {
        // SAFETY: a live fid by the contract.
        let e = match unsafe { ep_of(ep as *mut fi::fid, call) } {
            Ok(e) => e,
            Err(c) => return c,
        };
        let r = make(&e.shared.attrs).and_then(|mut a| {
            if a.write && (a.inject || a.flags & fi::FI_INJECT != 0) {
                // SAFETY: `len` bytes at `buf`, per the call.
                a.owned = Some(unsafe { inject_copy(&e.shared.attrs, a.buf, a.len) }?);
            }
            e.shared.rma(a)
        });
        answer(call, r)
    })
}

#[allow(clippy::too_many_arguments)]
fn rma_args(
    a: &EpAttrs,
    write: bool,
    buf: usize,
    len: usize,
    dest: fi::fi_addr_t,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> RmaArgs {
    RmaArgs {
        write,
        buf,
        len,
        dest,
        addr,
        key,
        data: None,
        flags: a.tx_op_flags,
        context: context as usize,
        inject: false,
        owned: None,
    }
}

/// The one target range of an `fi_msg_rma` (`rma_iov_limit` is 1).
///
/// # Safety
/// `m` is a valid `fi_msg_rma` whose arrays hold their counts.
unsafe fn from_msg_rma(
    a: &EpAttrs,
    write: bool,
    m: *const fi::fi_msg_rma,
    flags: u64,
) -> Result<RmaArgs, Refusal> {
    // SAFETY: per the contract.
    let m = unsafe { m.as_ref() }.ok_or(Refusal {
        code: fi::FI_EINVAL,
        why: "msg is NULL".into(),
    })?;
    // SAFETY: `msg_iov` holds `iov_count` entries.
    let (b, l) = unsafe { one_iov(m.msg_iov, m.iov_count) }?;
    if m.rma_iov_count != 1 || m.rma_iov.is_null() {
        return Err(Refusal {
            code: fi::FI_EINVAL,
            why: format!("rma_iov_count {} (rma_iov_limit is 1)", m.rma_iov_count),
        });
    }
    // SAFETY: one fi_rma_iov (checked non-null, count 1).
    let r = unsafe { &*m.rma_iov };
    if r.len < l {
        return Err(Refusal {
            code: fi::FI_EINVAL,
            why: format!("rma_iov len {} is less than the local {l} bytes", r.len),
        });
    }
    let mut x = rma_args(a, write, b, l, m.addr, r.addr, r.key, m.context);
    x.flags = flags;
    x.data = (write && flags & fi::FI_REMOTE_CQ_DATA != 0).then_some(m.data);
    Ok(x)
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn rma_read(
    ep: *mut fi::fid_ep,
    buf: *mut c_void,
    len: usize,
    _desc: *mut c_void,
    src: fi::fi_addr_t,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> isize {
    // SAFETY: fi_read's arguments.
    unsafe {
        post_rma(ep, "fi_read", |a| {
            Ok(rma_args(
                a,
                false,
                buf as usize,
                len,
                src,
                addr,
                key,
                context,
            ))
        })
    }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn rma_readv(
    ep: *mut fi::fid_ep,
    iov: *const fi::iovec,
    _desc: *mut *mut c_void,
    count: usize,
    src: fi::fi_addr_t,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> isize {
    // SAFETY: fi_readv's arguments.
    unsafe {
        post_rma(ep, "fi_readv", |a| {
            let (b, l) = one_iov(iov, count)?;
            Ok(rma_args(a, false, b, l, src, addr, key, context))
        })
    }
}

unsafe extern "C" fn rma_readmsg(
    ep: *mut fi::fid_ep,
    msg: *const fi::fi_msg_rma,
    flags: u64,
) -> isize {
    // SAFETY: fi_readmsg's arguments.
    unsafe { post_rma(ep, "fi_readmsg", |a| from_msg_rma(a, false, msg, flags)) }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn rma_write(
    ep: *mut fi::fid_ep,
    buf: *const c_void,
    len: usize,
    _desc: *mut c_void,
    dest: fi::fi_addr_t,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> isize {
    // SAFETY: fi_write's arguments.
    unsafe {
        post_rma(ep, "fi_write", |a| {
            Ok(rma_args(
                a,
                true,
                buf as usize,
                len,
                dest,
                addr,
                key,
                context,
            ))
        })
    }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn rma_writev(
    ep: *mut fi::fid_ep,
    iov: *const fi::iovec,
    _desc: *mut *mut c_void,
    count: usize,
    dest: fi::fi_addr_t,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> isize {
    // SAFETY: fi_writev's arguments.
    unsafe {
        post_rma(ep, "fi_writev", |a| {
            let (b, l) = one_iov(iov, count)?;
            Ok(rma_args(a, true, b, l, dest, addr, key, context))
        })
    }
}

unsafe extern "C" fn rma_writemsg(
    ep: *mut fi::fid_ep,
    msg: *const fi::fi_msg_rma,
    flags: u64,
) -> isize {
    // SAFETY: fi_writemsg's arguments.
    unsafe { post_rma(ep, "fi_writemsg", |a| from_msg_rma(a, true, msg, flags)) }
}

unsafe extern "C" fn rma_inject(
    ep: *mut fi::fid_ep,
    buf: *const c_void,
    len: usize,
    dest: fi::fi_addr_t,
    addr: u64,
    key: u64,
) -> isize {
    // SAFETY: fi_inject_write's arguments.
    unsafe {
        post_rma(ep, "fi_inject_write", |a| {
            let mut x = rma_args(
                a,
                true,
                buf as usize,
                len,
                dest,
                addr,
                key,
                std::ptr::null_mut(),
            );
            x.inject = true;
            Ok(x)
        })
    }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn rma_writedata(
    ep: *mut fi::fid_ep,
    buf: *const c_void,
    len: usize,
    _desc: *mut c_void,
    data: u64,
    dest: fi::fi_addr_t,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> isize {
    // SAFETY: fi_writedata's arguments.
    unsafe {
        post_rma(ep, "fi_writedata", |a| {
            let mut x = rma_args(a, true, buf as usize, len, dest, addr, key, context);
            x.data = Some(data);
            Ok(x)
        })
    }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn rma_injectdata(
    ep: *mut fi::fid_ep,
    buf: *const c_void,
    len: usize,
    data: u64,
    dest: fi::fi_addr_t,
    addr: u64,
    key: u64,
) -> isize {
    // SAFETY: fi_inject_writedata's arguments.
    unsafe {
        post_rma(ep, "fi_inject_writedata", |a| {
            let mut x = rma_args(
                a,
                true,
                buf as usize,
                len,
                dest,
                addr,
                key,
                std::ptr::null_mut(),
            );
            x.inject = true;
            x.data = Some(data);
            Ok(x)
        })
    }
}
