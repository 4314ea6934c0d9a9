//! What the provider offers and how it answers `fi_getinfo`'s hints: the checks and
//! trims libfabric's own providers get from its internal `prov/util`, which an
//! external provider cannot link (none of it is exported), so they are written here.
//! Plain data in, plain data out; `ffi::info` moves it in and out of `fi_info`.

use crate::addr;
use crate::domain::Progress;
use std::net::{Ipv4Addr, SocketAddrV4};
use zerorx_libfabric_sys as fi;

/// The provider's name, as `fi_info -p` and `FI_PROVIDER` select it.
pub(crate) const NAME: &str = "zerorx";
/// Our version (`fi_provider.version`, `prov_version`): 0.1.
pub(crate) const VERSION: u32 = fi::fi_version_of(0, 1);
/// The libfabric API implemented.
pub(crate) const API: u32 = fi::fi_version_of(1, 17);

/// Primary capabilities: an application gets only those it asked for.
const PRIMARY: u64 = fi::FI_MSG
    | fi::FI_RMA
    | fi::FI_TAGGED
    | fi::FI_ATOMIC
    | fi::FI_MULTICAST
    | fi::FI_NAMED_RX_CTX
    | fi::FI_DIRECTED_RECV
    | fi::FI_VARIABLE_MSG
    | fi::FI_HMEM
    | fi::FI_COLLECTIVE
    | fi::FI_READ
    | fi::FI_WRITE
    | fi::FI_RECV
    | fi::FI_SEND
    | fi::FI_REMOTE_READ
    | fi::FI_REMOTE_WRITE;

/// Capabilities that belong on the transmit side (`tx_attr->caps`).
const TX_CAPS: u64 = fi::FI_MSG
    | fi::FI_RMA
    | fi::FI_TAGGED
    | fi::FI_ATOMIC
    | fi::FI_SEND
    | fi::FI_READ
    | fi::FI_WRITE
    | fi::FI_FENCE
    | fi::FI_TRIGGER;
/// Capabilities that belong on the receive side (`rx_attr->caps`).
const RX_CAPS: u64 = fi::FI_MSG
    | fi::FI_RMA
    | fi::FI_TAGGED
    | fi::FI_ATOMIC
    | fi::FI_DIRECTED_RECV
    | fi::FI_RECV
    | fi::FI_REMOTE_READ
    | fi::FI_REMOTE_WRITE
    | fi::FI_SOURCE
    | fi::FI_MULTI_RECV
    | fi::FI_RMA_EVENT;

/// Everything offered.
pub(crate) const CAPS: u64 = fi::FI_MSG
    | fi::FI_TAGGED
    | fi::FI_RMA
    | fi::FI_READ
    | fi::FI_WRITE
    | fi::FI_REMOTE_READ
    | fi::FI_REMOTE_WRITE
    | fi::FI_SEND
    | fi::FI_RECV
    | fi::FI_DIRECTED_RECV
    | fi::FI_SOURCE
    | fi::FI_MULTI_RECV
    | fi::FI_LOCAL_COMM
    | fi::FI_REMOTE_COMM;
/// One TCP stream per direction and peer, served in order: sends arrive in order.
pub(crate) const MSG_ORDER: u64 = fi::FI_ORDER_SAS;
pub(crate) const TX_OP_FLAGS: u64 = fi::FI_COMPLETION
    | fi::FI_INJECT
    | fi::FI_INJECT_COMPLETE
    | fi::FI_TRANSMIT_COMPLETE
    | fi::FI_DELIVERY_COMPLETE;
pub(crate) const RX_OP_FLAGS: u64 = fi::FI_COMPLETION | fi::FI_MULTI_RECV;
/// zerorx-fabric's uring-tcp limit.
pub(crate) const MAX_MSG: usize = 1 << 30;
pub(crate) const QUEUE_SIZE: usize = 1024;
pub(crate) const INJECT_SIZE: usize = 4096;
/// Immediate data: the full 64 bits.
pub(crate) const CQ_DATA_SIZE: usize = 8;
/// Messages held before a matching receive (zerorx-fabric's `unexpected_bytes`).
pub(crate) const BUFFERED_RECV: usize = 16 << 20;
/// libfabric's "generic" tag format (all 64 bits usable).
const TAG_FORMAT: u64 = 0xAAAA_AAAA_AAAA_AAAA;
/// `FI_MR_BASIC` and `FI_MR_SCALABLE` (old modes a 1.5+ application does not use).
const MR_OLD: i32 = (fi::FI_MR_BASIC | fi::FI_MR_SCALABLE) as i32;

/// The part of `fi_getinfo`'s hints this provider looks at, copied out of C.
#[derive(Default, Clone, Copy)]
pub(crate) struct Hints {
    pub caps: u64,
    pub mode: u64,
    pub addr_format: u32,
    pub src: Option<SocketAddrV4>,
    pub dest: Option<SocketAddrV4>,
    /// `src_addr`/`dest_addr` were given but are not `sockaddr_in`s.
    pub foreign_addr: bool,
    pub tx: Option<fi::fi_tx_attr>,
    pub rx: Option<fi::fi_rx_attr>,
    pub ep: Option<fi::fi_ep_attr>,
    pub domain: Option<fi::fi_domain_attr>,
    /// `domain_attr->name` / `fabric_attr->name` differ from ours.
    pub other_name: bool,
}

/// One `fi_info` to return.
#[derive(Debug)]
pub(crate) struct Offer {
    pub caps: u64,
    pub mode: u64,
    pub src: SocketAddrV4,
    pub dest: Option<SocketAddrV4>,
    pub tx: fi::fi_tx_attr,
    pub rx: fi::fi_rx_attr,
    pub ep: fi::fi_ep_attr,
    pub domain: fi::fi_domain_attr,
}

/// Why there is nothing to offer (`-FI_ENODATA`), for the log.
pub(crate) type NoMatch = String;

fn over(what: &str, asked: impl std::fmt::Display, ours: impl std::fmt::Display) -> NoMatch {
    format!("{what} {asked} is more than zerorx offers ({ours})")
}

/// Answers `fi_getinfo(api, node, service, flags, hints)`.
pub(crate) fn offer(
    api: u32,
    node: Option<&str>,
    service: Option<&str>,
    source_flag: bool,
    h: &Hints,
) -> Result<Offer, NoMatch> {
    if api < fi::fi_version_of(1, 5) {
        return Err(format!(
            "API version {}.{} is older than 1.5, whose memory-registration rules zerorx needs",
            api >> 16,
            api & 0xffff
        ));
    }
    if h.other_name {
        return Err(format!("fabric or domain name is not {NAME:?}"));
    }
    if h.caps & !CAPS != 0 {
        return Err(format!(
            "capabilities {:#x} are not offered (zerorx offers {CAPS:#x})",
            h.caps & !CAPS
        ));
    }
    if !matches!(
        h.addr_format,
        fi::FI_FORMAT_UNSPEC | fi::FI_SOCKADDR | fi::FI_SOCKADDR_IN
    ) || h.foreign_addr
    {
        return Err("only IPv4 addresses (FI_SOCKADDR_IN) are offered".into());
    }
    let mut ep = ep_attr();
    if let Some(e) = h.ep {
        if !matches!(e.type_, fi::FI_EP_UNSPEC | fi::FI_EP_RDM) {
            return Err(format!("endpoint type {} is not FI_EP_RDM", e.type_));
        }
        if e.max_msg_size > MAX_MSG {
            return Err(over("max_msg_size", e.max_msg_size, MAX_MSG));
        }
        if e.tx_ctx_cnt > 1 || e.rx_ctx_cnt > 1 {
            return Err("shared or scalable contexts are not offered".into());
        }
        if e.auth_key_size != 0 {
            return Err("authorization keys are not offered".into());
        }
        if e.max_order_war_size > 0 {
            return Err(over("max_order_war_size", e.max_order_war_size, 0));
        }
        if e.mem_tag_format != 0 {
            ep.mem_tag_format = e.mem_tag_format;
        }
    }
    let mut tx = tx_attr();
    if let Some(t) = h.tx {
        if t.caps & !CAPS != 0 || t.msg_order & !MSG_ORDER != 0 || t.comp_order != 0 {
            return Err("transmit caps or ordering beyond FI_ORDER_SAS".into());
        }
        if t.op_flags & !TX_OP_FLAGS != 0 {
            return Err(format!(
                "transmit op_flags {:#x} not offered",
                t.op_flags & !TX_OP_FLAGS
            ));
        }
        if t.inject_size > INJECT_SIZE {
            return Err(over("inject_size", t.inject_size, INJECT_SIZE));
        }
        if t.size > QUEUE_SIZE {
            return Err(over("tx size", t.size, QUEUE_SIZE));
        }
        if t.iov_limit > 1 || t.rma_iov_limit > 1 {
            return Err(over("tx iov_limit", t.iov_limit.max(t.rma_iov_limit), 1));
        }
        tx.op_flags = t.op_flags;
        tx.msg_order = t.msg_order;
        if t.size != 0 {
            tx.size = t.size;
        }
        if t.inject_size != 0 {
            tx.inject_size = t.inject_size;
        }
    }
    let mut rx = rx_attr();
    if let Some(r) = h.rx {
        if r.caps & !CAPS != 0 || r.msg_order & !MSG_ORDER != 0 || r.comp_order != 0 {
            return Err("receive caps or ordering beyond FI_ORDER_SAS".into());
        }
        if r.op_flags & !RX_OP_FLAGS != 0 {
            return Err(format!(
                "receive op_flags {:#x} not offered",
                r.op_flags & !RX_OP_FLAGS
            ));
        }
        if r.size > QUEUE_SIZE {
            return Err(over("rx size", r.size, QUEUE_SIZE));
        }
        if r.iov_limit > 1 {
            return Err(over("rx iov_limit", r.iov_limit, 1));
        }
        if r.total_buffered_recv > BUFFERED_RECV {
            return Err(over(
                "total_buffered_recv",
                r.total_buffered_recv,
                BUFFERED_RECV,
            ));
        }
        rx.op_flags = r.op_flags;
        rx.msg_order = r.msg_order;
        if r.size != 0 {
            rx.size = r.size;
        }
    }
    let mut domain = domain_attr();
    if let Some(d) = h.domain {
        if d.mr_mode & MR_OLD != 0 {
            return Err("FI_MR_BASIC / FI_MR_SCALABLE are not offered".into());
        }
        if d.cq_data_size > CQ_DATA_SIZE {
            return Err(over("cq_data_size", d.cq_data_size, CQ_DATA_SIZE));
        }
        if !matches!(
            d.av_type,
            fi::FI_AV_UNSPEC | fi::FI_AV_MAP | fi::FI_AV_TABLE
        ) {
            return Err(format!("av_type {} is not offered", d.av_type));
        }
        if d.tx_ctx_cnt > 1 || d.rx_ctx_cnt > 1 || d.auth_key_size != 0 {
            return Err("several contexts or authorization keys are not offered".into());
        }
        if d.caps & !(fi::FI_LOCAL_COMM | fi::FI_REMOTE_COMM) != 0 {
            return Err(format!("domain caps {:#x} not offered", d.caps));
        }
        // Every threading and progress model is served (thread-safe, progressing on
        // a worker thread, or on the caller's for FI_THREAD_DOMAIN with manual
        // progress): report what was asked so the application sees its own choice.
        // An application serialising its calls (FI_THREAD_DOMAIN) that leaves
        // progress open gets manual progress, driven inside its own calls, which
        // saves a thread hand-off on each side of every transfer.
        if d.threading != fi::FI_THREAD_UNSPEC {
            domain.threading = d.threading;
        }
        let progress =
            if d.threading == fi::FI_THREAD_DOMAIN && d.data_progress != fi::FI_PROGRESS_AUTO {
                fi::FI_PROGRESS_MANUAL
            } else {
                fi::FI_PROGRESS_AUTO
            };
        domain.control_progress = match d.control_progress {
            fi::FI_PROGRESS_UNSPEC => progress,
            asked => asked,
        };
        domain.data_progress = match d.data_progress {
            fi::FI_PROGRESS_UNSPEC => progress,
            asked => asked,
        };
        if d.resource_mgmt != fi::FI_RM_UNSPEC {
            domain.resource_mgmt = d.resource_mgmt;
        }
        domain.av_type = d.av_type;
        // We need no memory-registration mode: none of theirs is imposed.
        domain.mr_mode = 0;
    }
    let caps = if h.caps == 0 {
        CAPS
    } else {
        let mut c = h.caps & PRIMARY;
        if c & (fi::FI_MSG | fi::FI_TAGGED) != 0 && c & (fi::FI_SEND | fi::FI_RECV) == 0 {
            c |= fi::FI_SEND | fi::FI_RECV;
        }
        let rma_dirs = fi::FI_READ | fi::FI_WRITE | fi::FI_REMOTE_READ | fi::FI_REMOTE_WRITE;
        if c & fi::FI_RMA != 0 && c & rma_dirs == 0 {
            c |= rma_dirs;
        }
        c | (CAPS & !PRIMARY)
    };
    // A write with immediate data consumes a posted receive at the target, which
    // libfabric allows only under FI_RX_CQ_DATA; without it, fi_writedata is refused.
    let mode = h.mode & fi::FI_RX_CQ_DATA;
    rx.mode = mode;
    tx.caps = caps & TX_CAPS;
    rx.caps = caps & RX_CAPS;
    let (src, dest) = addresses(node, service, source_flag, h)?;
    Ok(Offer {
        caps,
        mode,
        src,
        dest,
        tx,
        rx,
        ep,
        domain,
    })
}

fn addresses(
    node: Option<&str>,
    service: Option<&str>,
    source_flag: bool,
    h: &Hints,
) -> Result<(SocketAddrV4, Option<SocketAddrV4>), NoMatch> {
    let named = if node.is_some() || service.is_some() {
        Some(addr::resolve(node, service)?)
    } else {
        None
    };
    let (src, dest) = if source_flag {
        (named.or(h.src), h.dest)
    } else {
        (h.src, named.or(h.dest))
    };
    let src = match (src, dest) {
        (Some(s), _) => s,
        (None, Some(d)) => addr::source_for(d),
        (None, None) => SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0),
    };
    if src.ip().is_unspecified() {
        return Err(
            "a source address must name an interface (not 0.0.0.0): it is the \
                    address peers reach the endpoint at"
                .into(),
        );
    }
    Ok((src, dest))
}

fn tx_attr() -> fi::fi_tx_attr {
    fi::fi_tx_attr {
        caps: CAPS,
        msg_order: MSG_ORDER,
        comp_order: fi::FI_ORDER_NONE,
        inject_size: INJECT_SIZE,
        size: QUEUE_SIZE,
        iov_limit: 1,
        rma_iov_limit: 1,
        ..Default::default()
    }
}

fn rx_attr() -> fi::fi_rx_attr {
    fi::fi_rx_attr {
        caps: CAPS,
        msg_order: MSG_ORDER,
        comp_order: fi::FI_ORDER_NONE,
        total_buffered_recv: BUFFERED_RECV,
        size: QUEUE_SIZE,
        iov_limit: 1,
        ..Default::default()
    }
}

fn ep_attr() -> fi::fi_ep_attr {
    fi::fi_ep_attr {
        type_: fi::FI_EP_RDM,
        protocol: fi::FI_PROTO_SOCK_TCP,
        protocol_version: 1,
        max_msg_size: MAX_MSG,
        max_order_raw_size: MAX_MSG,
        max_order_waw_size: MAX_MSG,
        mem_tag_format: TAG_FORMAT,
        tx_ctx_cnt: 1,
        rx_ctx_cnt: 1,
        ..Default::default()
    }
}

/// Environment variable that forces a worker thread per domain (`thread`), whatever
/// the domain's threading and progress say.
pub(crate) const PROGRESS_ENV: &str = "FI_ZERORX_PROGRESS";

/// Who progresses a domain opened with `attr`: the opening thread, inside its own
/// calls, when it serialises them (`FI_THREAD_DOMAIN`) and asks for manual data
/// progress; a worker thread otherwise, or when `FI_ZERORX_PROGRESS=thread`.
pub(crate) fn progress_of(attr: Option<&fi::fi_domain_attr>) -> Progress {
    let forced_thread = std::env::var(PROGRESS_ENV).is_ok_and(|v| v == "thread");
    match attr {
        Some(d)
            if !forced_thread
                && d.threading == fi::FI_THREAD_DOMAIN
                && d.data_progress == fi::FI_PROGRESS_MANUAL =>
        {
            Progress::Caller
        }
        _ => Progress::Thread,
    }
}

fn domain_attr() -> fi::fi_domain_attr {
    fi::fi_domain_attr {
        threading: fi::FI_THREAD_SAFE,
        control_progress: fi::FI_PROGRESS_AUTO,
        data_progress: fi::FI_PROGRESS_AUTO,
        resource_mgmt: fi::FI_RM_ENABLED,
        av_type: fi::FI_AV_UNSPEC,
        mr_mode: 0,
        mr_key_size: 8,
        cq_data_size: CQ_DATA_SIZE,
        cq_cnt: 1024,
        ep_cnt: 1024,
        tx_ctx_cnt: 1,
        rx_ctx_cnt: 1,
        max_ep_tx_ctx: 1,
        max_ep_rx_ctx: 1,
        mr_iov_limit: 1,
        cntr_cnt: 1024,
        caps: fi::FI_LOCAL_COMM | fi::FI_REMOTE_COMM,
        max_err_data: 256,
        mr_cnt: 65536,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hints() -> Hints {
        Hints::default()
    }

    #[test]
    fn no_hints_get_everything_with_a_loopback_source() {
        let o = offer(API, None, None, false, &hints()).unwrap();
        assert_eq!(o.caps, CAPS);
        assert_eq!(
            o.tx.caps & (fi::FI_RECV | fi::FI_SOURCE | fi::FI_DIRECTED_RECV),
            0
        );
        assert_eq!(o.rx.caps & fi::FI_SEND, 0);
        assert_ne!(o.tx.caps & fi::FI_SEND, 0);
        assert_ne!(o.rx.caps & fi::FI_SOURCE, 0);
        assert_eq!(o.src, SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0));
        assert_eq!(o.dest, None);
        assert_eq!(o.ep.type_, fi::FI_EP_RDM);
        assert_eq!(o.domain.threading, fi::FI_THREAD_SAFE);
    }

    #[test]
    fn an_application_gets_only_the_primary_caps_it_asked_for() {
        let h = Hints {
            caps: fi::FI_TAGGED,
            ..hints()
        };
        let o = offer(API, None, None, false, &h).unwrap();
        assert_eq!(o.caps & PRIMARY, fi::FI_TAGGED | fi::FI_SEND | fi::FI_RECV);
        assert_ne!(o.caps & fi::FI_LOCAL_COMM, 0, "secondary caps stay");
        assert_eq!(o.caps & fi::FI_MSG, 0);
    }

    #[test]
    fn what_is_not_offered_is_refused_with_the_reason() {
        let atomic = Hints {
            caps: fi::FI_ATOMIC,
            ..hints()
        };
        assert!(offer(API, None, None, false, &atomic)
            .unwrap_err()
            .contains("capabilities"));
        let msg_ep = Hints {
            ep: Some(fi::fi_ep_attr {
                type_: fi::FI_EP_MSG,
                ..Default::default()
            }),
            ..hints()
        };
        assert!(offer(API, None, None, false, &msg_ep)
            .unwrap_err()
            .contains("FI_EP_RDM"));
        let basic = Hints {
            domain: Some(fi::fi_domain_attr {
                mr_mode: fi::FI_MR_BASIC as i32,
                ..Default::default()
            }),
            ..hints()
        };
        assert!(offer(API, None, None, false, &basic).is_err());
        let big = Hints {
            tx: Some(fi::fi_tx_attr {
                inject_size: INJECT_SIZE + 1,
                ..Default::default()
            }),
            ..hints()
        };
        assert!(offer(API, None, None, false, &big)
            .unwrap_err()
            .contains("inject_size"));
        assert!(offer(fi::fi_version_of(1, 4), None, None, false, &hints()).is_err());
        let named = Hints {
            other_name: true,
            ..hints()
        };
        assert!(offer(API, None, None, false, &named).is_err());
    }

    #[test]
    fn node_and_service_are_the_destination_unless_fi_source_says_otherwise() {
        let o = offer(API, Some("127.0.0.1"), Some("9228"), false, &hints()).unwrap();
        assert_eq!(o.dest, Some(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 9228)));
        assert_eq!(o.src.port(), 0);
        let o = offer(API, Some("127.0.0.1"), Some("9228"), true, &hints()).unwrap();
        assert_eq!(o.src, SocketAddrV4::new(Ipv4Addr::LOCALHOST, 9228));
        assert_eq!(o.dest, None);
        let any = Hints {
            src: Some(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 1)),
            ..hints()
        };
        assert!(offer(API, None, None, false, &any).is_err());
    }

    #[test]
    fn requested_sizes_and_progress_are_reported_back() {
        let h = Hints {
            tx: Some(fi::fi_tx_attr {
                size: 64,
                ..Default::default()
            }),
            domain: Some(fi::fi_domain_attr {
                data_progress: fi::FI_PROGRESS_MANUAL,
                threading: fi::FI_THREAD_DOMAIN,
                ..Default::default()
            }),
            ..hints()
        };
        let o = offer(API, None, None, false, &h).unwrap();
        assert_eq!(o.tx.size, 64);
        assert_eq!(o.domain.data_progress, fi::FI_PROGRESS_MANUAL);
        assert_eq!(o.domain.threading, fi::FI_THREAD_DOMAIN);
    }

    #[test]
    fn a_serialising_application_that_leaves_progress_open_gets_manual_progress() {
        let asked = |threading, data_progress| {
            let h = Hints {
                domain: Some(fi::fi_domain_attr {
                    threading,
                    data_progress,
                    ..Default::default()
                }),
                ..hints()
            };
            let d = offer(API, None, None, false, &h).unwrap().domain;
            (d.data_progress, d.control_progress)
        };
        let manual = (fi::FI_PROGRESS_MANUAL, fi::FI_PROGRESS_MANUAL);
        let auto = (fi::FI_PROGRESS_AUTO, fi::FI_PROGRESS_AUTO);
        assert_eq!(asked(fi::FI_THREAD_DOMAIN, fi::FI_PROGRESS_UNSPEC), manual);
        assert_eq!(asked(fi::FI_THREAD_DOMAIN, fi::FI_PROGRESS_AUTO), auto);
        assert_eq!(asked(fi::FI_THREAD_SAFE, fi::FI_PROGRESS_UNSPEC), auto);
        assert_eq!(asked(fi::FI_THREAD_UNSPEC, fi::FI_PROGRESS_UNSPEC), auto);
        let domain = |threading, data_progress| fi::fi_domain_attr {
            threading,
            data_progress,
            ..Default::default()
        };
        let of = |d: fi::fi_domain_attr| progress_of(Some(&d));
        assert_eq!(
            of(domain(fi::FI_THREAD_DOMAIN, fi::FI_PROGRESS_MANUAL)),
            Progress::Caller
        );
        assert_eq!(
            of(domain(fi::FI_THREAD_DOMAIN, fi::FI_PROGRESS_AUTO)),
            Progress::Thread
        );
        assert_eq!(
            of(domain(fi::FI_THREAD_SAFE, fi::FI_PROGRESS_MANUAL)),
            Progress::Thread
        );
        assert_eq!(progress_of(None), Progress::Thread);
    }
}
