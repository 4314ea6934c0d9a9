//! Asking libfabric for a provider (`fi_getinfo` with the hints zerorx needs), and the
//! per-provider policy that follows from what libfabric 1.17 was measured to do here.

use super::errors;
use crate::FabricError;
use std::ffi::{CStr, CString};
use std::ptr::{self, NonNull};
use std::sync::Once;
use zerorx_libfabric_sys as fi;

/// What zerorx does with one libfabric provider, and why.
#[derive(Debug)]
pub(super) struct Profile {
    /// libfabric's provider name (`fabric_attr->prov_name`).
    pub(super) prov: &'static str,
    /// `node` for `fi_getinfo` (with `FI_SOURCE`): where endpoints bind.
    node: Option<&'static CStr>,
    /// `Err(reason)` when tagged messages are not offered on this provider.
    pub(super) tagged: Result<(), &'static str>,
    /// `Err(reason)` when RMA is not offered on this provider.
    pub(super) rma: Result<(), &'static str>,
    /// `Err(reason)` when `FI_DELIVERY_COMPLETE` sends do not mean delivered.
    pub(super) send_delivery: Result<(), &'static str>,
    /// Why the target does not validate RMA on its own terms.
    pub(super) target_validation: &'static str,
    /// Hold later operations to a peer until its outstanding RMAs completed (a refused
    /// RMA makes rxm drop the connection, and sends already queued behind it vanish).
    pub(super) rma_fence: bool,
    /// Sends longer than this (and than the inject size) are copied aside and complete
    /// at once, because the provider completes them only once the receiver took the
    /// data (`None`: never).
    pub(super) detach_above: Option<DetachAbove>,
    /// Endpoints of one process share memory: closing one must wait until no other
    /// references it ([`super::local`]), and dead peer processes are found by pid.
    pub(super) local_peers: bool,
}

/// From which length a provider completes sends only once the receiver took the data.
#[derive(Debug, Clone, Copy)]
pub(super) enum DetachAbove {
    /// The provider's inject size (shm: larger messages are copied out by the receiver).
    InjectSize,
    /// rxm's SAR limit (larger messages use rendezvous: the receiver pulls the data);
    /// `FI_OFI_RXM_SAR_LIMIT` when the user set it, else libfabric's default.
    RxmSarLimit,
}

impl DetachAbove {
    /// The length in bytes, given the provider's inject size.
    pub(super) fn bytes(self, inject_size: usize) -> usize {
        let n = match self {
            DetachAbove::InjectSize => 0,
            DetachAbove::RxmSarLimit => std::env::var("FI_OFI_RXM_SAR_LIMIT")
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(RXM_DEFAULT_SAR_LIMIT),
        };
        n.max(inject_size)
    }
}

/// rxm's default `sar_limit` in libfabric 1.17 (`fi_info -e`).
const RXM_DEFAULT_SAR_LIMIT: usize = 128 << 10;

/// The providers zerorx targets: `tcp;ofi_rxm` (RDM over TCP) first, `shm` for the same
/// host.
pub(super) static PROFILES: [Profile; 2] = [
    Profile {
        prov: "tcp;ofi_rxm",
        node: Some(c"127.0.0.1"),
        tagged: Ok(()),
        rma: Ok(()),
        send_delivery: Err(
            "tcp;ofi_rxm in libfabric 1.17 completes FI_DELIVERY_COMPLETE sends when they \
             leave (measured: such a send to a closed endpoint reported success)",
        ),
        target_validation: "tcp;ofi_rxm refuses an unknown or revoked key (reported as \
             RemoteAccess) but then drops the connection and messages the target had in \
             flight to this side can be lost; it cannot tell a forged key from a revoked one",
        rma_fence: true,
        detach_above: Some(DetachAbove::RxmSarLimit),
        local_peers: false,
    },
    Profile {
        prov: "shm",
        node: None,
        tagged: Err(
            "shm in libfabric 1.17 matches a tagged receive posted after the message arrived \
             with a stale ignore mask (measured: a receive for tag 0x3001 with no ignore bits \
             took a message tagged 0x3000); use tcp;ofi_rxm or uring-tcp for tags",
        ),
        rma: Err(
            "shm in libfabric 1.17 does not check RMA keys the API's way: with \
             delivery-complete an unknown key hangs both endpoints, without it the target \
             memory is written unchecked (measured); use tcp;ofi_rxm or uring-tcp for RMA",
        ),
        send_delivery: Ok(()),
        target_validation: "shm in libfabric 1.17 offers no RMA here (see rma-write)",
        rma_fence: false,
        detach_above: Some(DetachAbove::InjectSize),
        local_peers: true,
    },
];

/// rxm parameters zerorx sets (unless the user set them) before libfabric reads them.
///
/// `FI_OFI_RXM_ENABLE_DYN_RBUF=0`: with dynamic receive buffers on (1.17's default) a
/// receive shorter than the message tears the rxm connection down and the messages
/// after it vanish while their senders see success (measured); with them off,
/// truncation is an ordinary `FI_ETRUNC` with the overflow length and the connection
/// survives.
const RXM_PARAMS: [(&str, &str); 1] = [("FI_OFI_RXM_ENABLE_DYN_RBUF", "0")];

/// Applies [`RXM_PARAMS`] once, before the first `fi_getinfo`.
fn set_rxm_params() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for (name, value) in RXM_PARAMS {
            if std::env::var_os(name).is_none() {
                // libfabric reads its parameters with getenv when it first initialises,
                // in the fi_getinfo right after this; std serialises set_var against other
                // std::env users, and zerorx makes no libfabric call before it.
                std::env::set_var(name, value);
            }
        }
    });
}

/// Data-path capabilities asked of every provider.
pub(super) const CAPS: u64 = fi::FI_MSG
    | fi::FI_TAGGED
    | fi::FI_RMA
    | fi::FI_READ
    | fi::FI_WRITE
    | fi::FI_REMOTE_READ
    | fi::FI_REMOTE_WRITE
    | fi::FI_SEND
    | fi::FI_RECV
    | fi::FI_SOURCE
    | fi::FI_DIRECTED_RECV;

/// Capabilities without which the provider is not offered at all.
const REQUIRED_CAPS: u64 = fi::FI_MSG | fi::FI_TAGGED | fi::FI_SEND | fi::FI_RECV;

/// An `fi_info` list owned by zerorx, freed on drop.
pub(super) struct Info(NonNull<fi::fi_info>);

impl Info {
    /// The first entry (the one used).
    pub(super) fn first(&self) -> &fi::fi_info {
        // SAFETY: the list is non-empty (checked when made) and lives as long as self.
        unsafe { self.0.as_ref() }
    }

    /// The first entry for `fi_fabric`/`fi_domain`/`fi_endpoint`, which take `*mut`.
    pub(super) fn as_mut_ptr(&self) -> *mut fi::fi_info {
        self.0.as_ptr()
    }

    /// A copy of the first entry alone (`fi_dupinfo`), to adjust per endpoint.
    pub(super) fn dup_first(&self, provider: &str) -> Result<Info, FabricError> {
        // SAFETY: the entry is valid; fi_dupinfo deep-copies it (not its `next`).
        let p = unsafe { fi::fi_dupinfo(self.0.as_ptr()) };
        NonNull::new(p)
            .map(Info)
            .ok_or_else(|| errors::call_failed(provider, "fi_dupinfo", -i64::from(fi::FI_ENOMEM)))
    }

    /// Sets the transmit and receive queue sizes of this entry.
    pub(super) fn set_queue_sizes(&mut self, tx: usize, rx: usize) {
        // SAFETY: the attr structs of an fi_info from fi_getinfo/fi_dupinfo are allocated
        // and owned by the list; this is the only reference to them.
        unsafe {
            let info = self.0.as_mut();
            if !info.tx_attr.is_null() {
                (*info.tx_attr).size = tx;
            }
            if !info.rx_attr.is_null() {
                (*info.rx_attr).size = rx;
            }
        }
    }

    /// Replaces the source address endpoints bind to (`src_addr`, malloc'd because
    /// `fi_freeinfo` frees it).
    pub(super) fn set_src_addr(&mut self, addr: &[u8], format: u32) -> Result<(), FabricError> {
        // SAFETY: malloc of addr.len() bytes; checked for null below.
        let p = unsafe { libc::malloc(addr.len()) };
        if p.is_null() {
            return Err(FabricError::Io {
                call: "malloc",
                code: libc::ENOMEM,
                text: "out of memory for the endpoint's source address".into(),
            });
        }
        // SAFETY: p has addr.len() bytes; the old src_addr (if any) was allocated by
        // libfabric with malloc and is owned by this entry, so it is freed once here.
        unsafe {
            ptr::copy_nonoverlapping(addr.as_ptr(), p.cast::<u8>(), addr.len());
            let info = self.0.as_mut();
            libc::free(info.src_addr);
            info.src_addr = p;
            info.src_addrlen = addr.len();
            info.addr_format = format;
        }
        Ok(())
    }
}

impl Drop for Info {
    fn drop(&mut self) {
        // SAFETY: the list came from fi_getinfo or fi_dupinfo and is freed once, here.
        unsafe { fi::fi_freeinfo(self.0.as_ptr()) }
    }
}

/// `fi_getinfo` for an RDM endpoint of `profile`'s provider with zerorx's hints.
///
/// Hints: the data-path capabilities above, `mode` 0 (zerorx hands libfabric no
/// `fi_context` memory: the op context is an index), and the `mr_mode` bits zerorx can
/// honour (local registration, virtual addresses, allocated memory, provider keys).
pub(super) fn getinfo(profile: &Profile) -> Result<Info, FabricError> {
    set_rxm_params();
    let prov = CString::new(profile.prov).map_err(|_| {
        FabricError::invalid("provider", profile.prov, "a provider name has no NUL byte")
    })?;
    // SAFETY: fi_allocinfo returns a zeroed fi_info with every attr struct allocated, or
    // null (checked).
    let hints = unsafe { fi::fi_allocinfo() };
    let Some(hints) = NonNull::new(hints) else {
        return Err(errors::call_failed(
            profile.prov,
            "fi_allocinfo",
            -i64::from(fi::FI_ENOMEM),
        ));
    };
    let hints = Info(hints);
    let mr_mode = fi::FI_MR_LOCAL | fi::FI_MR_VIRT_ADDR | fi::FI_MR_ALLOCATED | fi::FI_MR_PROV_KEY;
    // SAFETY: every attr pointer of an fi_allocinfo result is valid; prov_name must come
    // from malloc because fi_freeinfo frees it, hence strdup.
    unsafe {
        let h = hints.0.as_ptr();
        (*h).caps = CAPS;
        (*h).mode = 0;
        (*(*h).ep_attr).type_ = fi::FI_EP_RDM;
        (*(*h).domain_attr).mr_mode = mr_mode as i32;
        (*(*h).domain_attr).threading = fi::FI_THREAD_SAFE;
        (*(*h).tx_attr).msg_order = fi::FI_ORDER_SAS;
        (*(*h).rx_attr).msg_order = fi::FI_ORDER_SAS;
        (*(*h).fabric_attr).prov_name = libc::strdup(prov.as_ptr());
    }
    let (node, flags) = match profile.node {
        Some(n) => (n.as_ptr(), fi::FI_SOURCE),
        None => (ptr::null(), 0),
    };
    let mut out = ptr::null_mut();
    // SAFETY: hints is a valid fi_info, node null or NUL-terminated, out an out-pointer.
    let rc = unsafe {
        fi::fi_getinfo(
            fi::FI_HEADER_VERSION,
            node,
            ptr::null(),
            flags,
            hints.0.as_ptr(),
            &mut out,
        )
    };
    errors::check(profile.prov, "fi_getinfo", rc)?;
    let info = NonNull::new(out).map(Info).ok_or_else(|| {
        errors::call_failed(profile.prov, "fi_getinfo", -i64::from(fi::FI_ENODATA))
    })?;
    let caps = info.first().caps;
    if caps & REQUIRED_CAPS != REQUIRED_CAPS {
        return Err(FabricError::Provider {
            provider: profile.prov.to_string(),
            call: "fi_getinfo",
            code: fi::FI_ENODATA,
            text: format!("the provider lacks untagged or tagged messages (caps {caps:#x})"),
        });
    }
    Ok(info)
}

/// What zerorx needs to know about the chosen `fi_info`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Traits {
    /// Capabilities granted.
    pub(super) caps: u64,
    /// Local buffers must be registered and their descriptor passed (`FI_MR_LOCAL`).
    pub(super) mr_local: bool,
    /// RMA addresses are virtual addresses (`FI_MR_VIRT_ADDR`), not offsets.
    pub(super) virt_addr: bool,
    /// The provider picks keys (`FI_MR_PROV_KEY`).
    pub(super) prov_key: bool,
    /// Remote CQ data bytes.
    pub(super) cq_data_size: usize,
    /// Largest message.
    pub(super) max_msg_size: usize,
    /// Transmit queue size.
    pub(super) tx_size: usize,
    /// Largest send the provider completes without the receiver.
    pub(super) inject_size: usize,
    /// Receive queue size.
    pub(super) rx_size: usize,
    /// Transmit ordering bits (`FI_ORDER_*`).
    pub(super) msg_order: u64,
    /// `FI_PROGRESS_MANUAL` data progress.
    pub(super) manual_progress: bool,
    /// Address format of endpoint names.
    pub(super) addr_format: u32,
}

impl Traits {
    /// Reads them from an entry returned by `fi_getinfo`.
    pub(super) fn of(info: &Info) -> Traits {
        let i = info.first();
        // SAFETY: fi_getinfo fills every attr pointer of the entries it returns.
        let (dom, ep, tx, rx) = unsafe { (&*i.domain_attr, &*i.ep_attr, &*i.tx_attr, &*i.rx_attr) };
        let mr_mode = dom.mr_mode as u64;
        Traits {
            caps: i.caps,
            mr_local: mr_mode & fi::FI_MR_LOCAL != 0,
            virt_addr: mr_mode & fi::FI_MR_VIRT_ADDR != 0,
            prov_key: mr_mode & fi::FI_MR_PROV_KEY != 0,
            cq_data_size: dom.cq_data_size,
            max_msg_size: ep.max_msg_size,
            tx_size: tx.size,
            inject_size: tx.inject_size,
            rx_size: rx.size,
            msg_order: tx.msg_order,
            manual_progress: dom.data_progress == fi::FI_PROGRESS_MANUAL,
            addr_format: i.addr_format,
        }
    }
}
