//! The libfabric call that starts one operation (`fi_sendmsg`, `fi_tsendmsg`,
//! `fi_recvmsg`, `fi_trecvmsg`, `fi_writemsg`, `fi_readmsg`).

use super::ops::Record;
use super::region::LfRegion;
use super::res::EpRes;
use crate::provider::{PostRequest, RecvTarget};
use crate::{Level, MrSlice, RemoteKey};
use std::ffi::c_void;
use std::ptr;
use zerorx_libfabric_sys as fi;

/// The local descriptor of a slice's region (null when the provider needs none).
fn desc(slice: &MrSlice) -> *mut c_void {
    slice
        .provider_region()
        .as_any()
        .downcast_ref::<LfRegion>()
        .map_or(ptr::null_mut(), LfRegion::desc)
}

/// Start address of a slice.
fn addr(slice: &MrSlice) -> *mut u8 {
    // SAFETY: the slice lies inside its region (checked when it was made).
    unsafe { slice.memory().as_ptr().add(slice.offset()) }
}

/// Starts `rec`; returns libfabric's result (0, `-FI_EAGAIN`, or an error).
///
/// `dest` is the peer's address-vector index for transmits and a directed receive's
/// source (`FI_ADDR_UNSPEC` for any).
///
/// # Safety
/// `rec` (which holds the memory of the operation) must stay in the endpoint's table,
/// unmoved in what it points to, until libfabric reports the operation's completion or
/// the endpoint is closed.
pub(super) unsafe fn start(
    res: &EpRes,
    rec: &mut Record,
    ctx: *mut c_void,
    dest: fi::fi_addr_t,
) -> isize {
    let ep = res.ep();
    match &rec.req {
        PostRequest::Send {
            src,
            tag,
            imm,
            level,
            ..
        } => {
            let (base, mut d) = match rec.bounce.as_mut() {
                Some(copy) => (copy.as_mut_ptr(), ptr::null_mut()),
                None => (addr(src), desc(src)),
            };
            let mut iov = libc::iovec {
                iov_base: base.cast(),
                iov_len: src.len(),
            };
            let mut flags = 0;
            if imm.is_some() {
                flags |= fi::FI_REMOTE_CQ_DATA;
            }
            if *level == Level::Delivered {
                flags |= fi::FI_DELIVERY_COMPLETE;
            }
            let data = imm.unwrap_or(0);
            match tag {
                Some(tag) => {
                    let msg = fi::fi_msg_tagged {
                        msg_iov: (&mut iov as *mut libc::iovec).cast(),
                        desc: &mut d,
                        iov_count: 1,
                        addr: dest,
                        tag: *tag,
                        ignore: 0,
                        context: ctx,
                        data,
                    };
                    // SAFETY: msg and what it points to live for the call (libfabric
                    // copies them); the buffer lives until completion (caller's promise).
                    unsafe { fi::fi_tsendmsg(ep, &msg, flags) }
                }
                None => {
                    let msg = fi::fi_msg {
                        msg_iov: (&mut iov as *mut libc::iovec).cast(),
                        desc: &mut d,
                        iov_count: 1,
                        addr: dest,
                        context: ctx,
                        data,
                    };
                    // SAFETY: as above.
                    unsafe { fi::fi_sendmsg(ep, &msg, flags) }
                }
            }
        }
        PostRequest::Recv { target, tag, .. } => {
            let (base, len, mut d) = match target {
                RecvTarget::Buffer(dst) => (addr(dst), dst.len(), desc(dst)),
                RecvTarget::Lease { .. } => match rec.lease.as_mut() {
                    Some(buf) => (buf.as_mut_ptr(), buf.len(), ptr::null_mut()),
                    None => return -(fi::FI_EINVAL as isize),
                },
            };
            let mut iov = libc::iovec {
                iov_base: base.cast(),
                iov_len: len,
            };
            match tag {
                Some(t) => {
                    let msg = fi::fi_msg_tagged {
                        msg_iov: (&mut iov as *mut libc::iovec).cast(),
                        desc: &mut d,
                        iov_count: 1,
                        addr: dest,
                        tag: t.tag,
                        ignore: t.ignore,
                        context: ctx,
                        data: 0,
                    };
                    // SAFETY: as above; the receive buffer (region slice or the record's
                    // lease Vec, never resized while posted) lives until completion.
                    unsafe { fi::fi_trecvmsg(ep, &msg, 0) }
                }
                None => {
                    let msg = fi::fi_msg {
                        msg_iov: (&mut iov as *mut libc::iovec).cast(),
                        desc: &mut d,
                        iov_count: 1,
                        addr: dest,
                        context: ctx,
                        data: 0,
                    };
                    // SAFETY: as above.
                    unsafe { fi::fi_recvmsg(ep, &msg, 0) }
                }
            }
        }
        PostRequest::Write {
            src, key, offset, ..
        } => {
            // SAFETY: as above. Every RMA write asks for delivery-complete: only then
            // does a refusal at the target come back as an error instead of a silently
            // dropped connection (measured on tcp;ofi_rxm).
            unsafe {
                rma(ep, src, key, *offset, dest, ctx, |ep, msg| {
                    fi::fi_writemsg(ep, msg, fi::FI_DELIVERY_COMPLETE)
                })
            }
        }
        PostRequest::Read {
            dst, key, offset, ..
        } => {
            // SAFETY: as above.
            unsafe {
                rma(ep, dst, key, *offset, dest, ctx, |ep, msg| {
                    fi::fi_readmsg(ep, msg, 0)
                })
            }
        }
    }
}

/// Builds the one-iovec `fi_msg_rma` for `local` against `key` at `offset` and hands it
/// to `call` (`fi_writemsg` or `fi_readmsg`) while the iovec, descriptor and RMA iovec
/// it points to are alive.
///
/// # Safety
/// As for [`start`]: `local`'s memory stays valid until the operation completes.
unsafe fn rma(
    ep: *mut fi::fid_ep,
    local: &MrSlice,
    key: &RemoteKey,
    offset: u64,
    dest: fi::fi_addr_t,
    ctx: *mut c_void,
    call: impl FnOnce(*mut fi::fid_ep, *const fi::fi_msg_rma) -> isize,
) -> isize {
    let mut iov = libc::iovec {
        iov_base: addr(local).cast(),
        iov_len: local.len(),
    };
    let mut d = desc(local);
    let mut rma = fi::fi_rma_iov {
        addr: key.base.wrapping_add(offset),
        len: local.len(),
        key: key.key,
    };
    let msg = fi::fi_msg_rma {
        msg_iov: (&mut iov as *mut libc::iovec).cast(),
        desc: &mut d,
        iov_count: 1,
        addr: dest,
        rma_iov: &mut rma,
        rma_iov_count: 1,
        context: ctx,
        data: 0,
    };
    call(ep, &msg)
}
