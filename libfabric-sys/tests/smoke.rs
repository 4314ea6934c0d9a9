//! Raw smoke tests against the system libfabric: discovery for the two providers zerorx
//! targets, and one RDM send/recv between two endpoints of one process on each.
//!
//! They fail (not skip) when a provider is missing: `scripts/test` installs `libfabric-dev`,
//! which brings the providers built into Debian's `libfabric1`.

use std::ffi::{c_void, CStr};
use std::ptr;
use std::time::{Duration, Instant};

use zerorx_libfabric_sys as fi;

/// Upper bound for any wait in these tests; tcp;ofi_rxm needs ~40-80 ms to connect lazily.
const DEADLINE: Duration = Duration::from_secs(10);

/// An `fi_info` list returned by `fi_getinfo`, freed on drop.
struct InfoList(*mut fi::fi_info);

impl Drop for InfoList {
    fn drop(&mut self) {
        // SAFETY: the pointer came from fi_getinfo and is freed exactly once, here.
        unsafe { fi::fi_freeinfo(self.0) }
    }
}

impl InfoList {
    /// Provider names of every entry, in order.
    fn providers(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut cur = self.0;
        while !cur.is_null() {
            // SAFETY: cur is a live node of the list owned by self; fabric_attr and prov_name
            // are set by the provider for every returned entry.
            unsafe {
                let name = CStr::from_ptr((*(*cur).fabric_attr).prov_name);
                out.push(name.to_string_lossy().into_owned());
                cur = (*cur).next;
            }
        }
        out
    }
}

/// `fi_getinfo` for an RDM endpoint on 127.0.0.1 from `provider`, with the capabilities zerorx
/// asks for.
fn getinfo(provider: &str, caps: u64) -> Result<InfoList, i32> {
    // SAFETY: fi_allocinfo returns a zeroed fi_info with every attr struct allocated, or null.
    let hints = unsafe { fi::fi_allocinfo() };
    assert!(!hints.is_null(), "fi_allocinfo returned null");
    let prov = std::ffi::CString::new(provider).expect("provider name has no NUL");
    // SAFETY: hints and its attr structs were allocated by fi_allocinfo; prov_name must be
    // malloc'd because fi_freeinfo frees it, hence strdup.
    unsafe {
        (*hints).caps = caps;
        (*hints).mode = fi::FI_CONTEXT;
        (*(*hints).ep_attr).type_ = fi::FI_EP_RDM;
        (*(*hints).domain_attr).mr_mode =
            (fi::FI_MR_LOCAL | fi::FI_MR_VIRT_ADDR | fi::FI_MR_ALLOCATED | fi::FI_MR_PROV_KEY)
                as i32;
        (*(*hints).fabric_attr).prov_name = libc::strdup(prov.as_ptr());
    }
    let node = c"127.0.0.1";
    let mut info = ptr::null_mut();
    // SAFETY: hints is a valid fi_info; node is a NUL-terminated string; info is an out pointer.
    let rc = unsafe {
        fi::fi_getinfo(
            fi::FI_HEADER_VERSION,
            node.as_ptr(),
            ptr::null(),
            fi::FI_SOURCE,
            hints,
            &mut info,
        )
    };
    // SAFETY: hints came from fi_allocinfo and is no longer used.
    unsafe { fi::fi_freeinfo(hints) };
    if rc == 0 {
        Ok(InfoList(info))
    } else {
        Err(rc)
    }
}

#[test]
fn getinfo_finds_tcp_rxm_rdm() {
    let list = getinfo("tcp;ofi_rxm", fi::FI_MSG | fi::FI_TAGGED | fi::FI_RMA)
        .unwrap_or_else(|rc| panic!("fi_getinfo(tcp;ofi_rxm) = {rc}: {}", strerror(rc)));
    let provs = list.providers();
    assert!(!provs.is_empty());
    assert!(
        provs.iter().all(|p| p == "tcp;ofi_rxm"),
        "unexpected providers {provs:?}"
    );
    // SAFETY: the list is non-empty; ep_attr/domain_attr are set by the provider.
    let (ep_type, progress) = unsafe {
        (
            (*(*list.0).ep_attr).type_,
            (*(*list.0).domain_attr).data_progress,
        )
    };
    assert_eq!(ep_type, fi::FI_EP_RDM);
    assert_eq!(
        progress,
        fi::FI_PROGRESS_MANUAL,
        "rxm needs manual progress"
    );
}

#[test]
fn getinfo_finds_shm_rdm() {
    let list = getinfo("shm", fi::FI_MSG | fi::FI_TAGGED | fi::FI_RMA)
        .unwrap_or_else(|rc| panic!("fi_getinfo(shm) = {rc}: {}", strerror(rc)));
    assert!(list.providers().iter().all(|p| p == "shm"));
}

#[test]
fn getinfo_refuses_an_unknown_provider_with_enodata() {
    let err = getinfo("no-such-provider", fi::FI_MSG).err();
    assert_eq!(err, Some(-fi::FI_ENODATA));
}

#[test]
fn rdm_send_recv_tcp_rxm() {
    send_recv_roundtrip("tcp;ofi_rxm");
}

#[test]
fn rdm_send_recv_shm() {
    send_recv_roundtrip("shm");
}

fn strerror(rc: i32) -> String {
    // SAFETY: fi_strerror returns a static NUL-terminated string for any code.
    unsafe { CStr::from_ptr(fi::fi_strerror(-rc)) }
        .to_string_lossy()
        .into_owned()
}

/// Panics with the call name and libfabric's text when `rc` is an error.
fn check(call: &str, rc: i32) {
    assert!(rc == 0, "{call} failed: {rc} ({})", strerror(rc));
}

/// Fabric, domain, AV, one CQ and two RDM endpoints, closed in reverse order on drop.
struct Pair {
    fabric: *mut fi::fid_fabric,
    domain: *mut fi::fid_domain,
    av: *mut fi::fid_av,
    cq: *mut fi::fid_cq,
    eps: [*mut fi::fid_ep; 2],
    addrs: [fi::fi_addr_t; 2],
    mr_local: bool,
}

impl Drop for Pair {
    fn drop(&mut self) {
        // SAFETY: every fid was opened by Pair::open, is closed once, endpoints before the
        // objects they are bound to, as fi_close(3) requires.
        unsafe {
            for ep in self.eps {
                if !ep.is_null() {
                    fi::fi_close(&mut (*ep).fid);
                }
            }
            if !self.cq.is_null() {
                fi::fi_close(&mut (*self.cq).fid);
            }
            if !self.av.is_null() {
                fi::fi_close(&mut (*self.av).fid);
            }
            if !self.domain.is_null() {
                fi::fi_close(&mut (*self.domain).fid);
            }
            if !self.fabric.is_null() {
                fi::fi_close(&mut (*self.fabric).fid);
            }
        }
    }
}

impl Pair {
    fn open(provider: &str) -> Pair {
        let list = getinfo(provider, fi::FI_MSG | fi::FI_TAGGED)
            .unwrap_or_else(|rc| panic!("fi_getinfo({provider}) = {rc}: {}", strerror(rc)));
        let info = list.0;
        let mut p = Pair {
            fabric: ptr::null_mut(),
            domain: ptr::null_mut(),
            av: ptr::null_mut(),
            cq: ptr::null_mut(),
            eps: [ptr::null_mut(); 2],
            addrs: [0; 2],
            mr_local: false,
        };
        // SAFETY: info is the first entry of a live list; every out pointer is a field of p,
        // which closes what was opened if a later step panics.
        unsafe {
            p.mr_local = (*(*info).domain_attr).mr_mode & fi::FI_MR_LOCAL as i32 != 0;
            check(
                "fi_fabric",
                fi::fi_fabric((*info).fabric_attr, &mut p.fabric, ptr::null_mut()),
            );
            check(
                "fi_domain",
                fi::fi_domain(p.fabric, info, &mut p.domain, ptr::null_mut()),
            );
            let mut av_attr = fi::fi_av_attr {
                type_: fi::FI_AV_TABLE,
                ..Default::default()
            };
            check(
                "fi_av_open",
                fi::fi_av_open(p.domain, &mut av_attr, &mut p.av, ptr::null_mut()),
            );
            let mut cq_attr = fi::fi_cq_attr {
                size: 64,
                format: fi::FI_CQ_FORMAT_TAGGED,
                wait_obj: fi::FI_WAIT_NONE,
                ..Default::default()
            };
            check(
                "fi_cq_open",
                fi::fi_cq_open(p.domain, &mut cq_attr, &mut p.cq, ptr::null_mut()),
            );
            for i in 0..2 {
                check(
                    "fi_endpoint",
                    fi::fi_endpoint(p.domain, info, &mut p.eps[i], ptr::null_mut()),
                );
                check(
                    "fi_ep_bind(av)",
                    fi::fi_ep_bind(p.eps[i], &mut (*p.av).fid, 0),
                );
                check(
                    "fi_ep_bind(cq)",
                    fi::fi_ep_bind(p.eps[i], &mut (*p.cq).fid, fi::FI_TRANSMIT | fi::FI_RECV),
                );
                check("fi_enable", fi::fi_enable(p.eps[i]));
            }
            for i in 0..2 {
                let mut name = [0u8; 256];
                let mut len = name.len();
                check(
                    "fi_getname",
                    fi::fi_getname(&mut (*p.eps[i]).fid, name.as_mut_ptr().cast(), &mut len),
                );
                let inserted = fi::fi_av_insert(
                    p.av,
                    name.as_ptr().cast(),
                    1,
                    &mut p.addrs[i],
                    0,
                    ptr::null_mut(),
                );
                assert_eq!(inserted, 1, "fi_av_insert");
            }
        }
        p
    }

    /// Reads one completion, driving progress for both endpoints (they share the CQ).
    fn next_completion(&self, deadline: Instant) -> fi::fi_cq_tagged_entry {
        let mut entry = fi::fi_cq_tagged_entry::default();
        loop {
            // SAFETY: cq is open; entry has room for one FI_CQ_FORMAT_TAGGED entry.
            let n = unsafe {
                fi::fi_cq_read(
                    self.cq,
                    (&mut entry as *mut fi::fi_cq_tagged_entry).cast(),
                    1,
                )
            };
            if n == 1 {
                return entry;
            }
            if n == -(fi::FI_EAVAIL as isize) {
                let mut err = fi::fi_cq_err_entry::default();
                // SAFETY: an error entry is queued (EAVAIL); err is a valid out struct.
                unsafe { fi::fi_cq_readerr(self.cq, &mut err, 0) };
                panic!("completion error {} prov_errno {}", err.err, err.prov_errno);
            }
            assert_eq!(n, -(fi::FI_EAGAIN as isize), "fi_cq_read");
            assert!(
                Instant::now() < deadline,
                "no completion within {DEADLINE:?}"
            );
        }
    }
}

/// Registers `buf` when the provider requires local registration; returns (mr, desc).
fn register(p: &Pair, buf: &mut [u8]) -> (*mut fi::fid_mr, *mut c_void) {
    if !p.mr_local {
        return (ptr::null_mut(), ptr::null_mut());
    }
    let mut mr = ptr::null_mut();
    // SAFETY: buf outlives the registration (closed by the caller before buf is dropped).
    unsafe {
        check(
            "fi_mr_reg",
            fi::fi_mr_reg(
                p.domain,
                buf.as_ptr().cast(),
                buf.len(),
                fi::FI_SEND | fi::FI_RECV,
                0,
                0,
                0,
                &mut mr,
                ptr::null_mut(),
            ),
        );
        (mr, fi::fi_mr_desc(mr))
    }
}

fn send_recv_roundtrip(provider: &str) {
    let p = Pair::open(provider);
    let deadline = Instant::now() + DEADLINE;
    let mut tx: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
    let mut rx = vec![0u8; 4096];
    let (tx_mr, tx_desc) = register(&p, &mut tx);
    let (rx_mr, rx_desc) = register(&p, &mut rx);
    // The op contexts must be stable memory (hints.mode = FI_CONTEXT lets the provider use it).
    let mut recv_ctx = fi::fi_context::default();
    let mut send_ctx = fi::fi_context::default();

    // SAFETY: rx and recv_ctx outlive the operation (we wait for its completion below).
    let rc = unsafe {
        fi::fi_recv(
            p.eps[1],
            rx.as_mut_ptr().cast(),
            rx.len(),
            rx_desc,
            fi::FI_ADDR_UNSPEC,
            (&mut recv_ctx as *mut fi::fi_context).cast(),
        )
    };
    assert_eq!(rc, 0, "fi_recv");

    // rxm connects lazily: the first send returns EAGAIN until progress completes the handshake.
    let mut eagains = 0u32;
    loop {
        // SAFETY: tx and send_ctx outlive the operation (we wait for its completion below).
        let rc = unsafe {
            fi::fi_send(
                p.eps[0],
                tx.as_ptr().cast(),
                tx.len(),
                tx_desc,
                p.addrs[1],
                (&mut send_ctx as *mut fi::fi_context).cast(),
            )
        };
        if rc == 0 {
            break;
        }
        assert_eq!(rc, -(fi::FI_EAGAIN as isize), "fi_send");
        eagains += 1;
        let mut entry = fi::fi_cq_tagged_entry::default();
        // SAFETY: progress only; the CQ is empty until the send is accepted (recv still pending).
        let n =
            unsafe { fi::fi_cq_read(p.cq, (&mut entry as *mut fi::fi_cq_tagged_entry).cast(), 1) };
        assert!(n < 0, "unexpected completion before the send was posted");
        assert!(
            Instant::now() < deadline,
            "send still EAGAIN after {eagains} tries"
        );
    }

    let mut seen_send = false;
    let mut seen_recv = false;
    while !(seen_send && seen_recv) {
        let c = p.next_completion(deadline);
        if c.op_context == (&mut send_ctx as *mut fi::fi_context).cast() {
            assert!(
                c.flags & fi::FI_SEND != 0,
                "send completion flags {:#x}",
                c.flags
            );
            seen_send = true;
        } else if c.op_context == (&mut recv_ctx as *mut fi::fi_context).cast() {
            assert!(
                c.flags & fi::FI_RECV != 0,
                "recv completion flags {:#x}",
                c.flags
            );
            assert_eq!(c.len, tx.len());
            seen_recv = true;
        } else {
            panic!("completion with unknown context {:?}", c.op_context);
        }
    }
    assert_eq!(rx, tx, "received bytes differ");

    for mr in [tx_mr, rx_mr] {
        if !mr.is_null() {
            // SAFETY: both operations completed, so nothing uses the registration any more.
            unsafe { fi::fi_close(&mut (*mr).fid) };
        }
    }
}
