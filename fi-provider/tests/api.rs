//! The provider through libfabric's C API, as a program sees it: what comes back on
//! errors (truncation with the overflow, cancellation, bad arguments), the credits
//! behind `-FI_EAGAIN`, inject semantics, tag matching with immediate data, and the
//! close order libfabric requires.

mod common;

use std::ffi::{c_void, CStr};
use std::ptr;
use std::time::{Duration, Instant};
use zerorx_libfabric_sys as fi;

const EAGAIN: isize = -(fi::FI_EAGAIN as isize);
const EAVAIL: isize = -(fi::FI_EAVAIL as isize);

/// One domain with two endpoints `a` and `b`, each with its own CQ, both in one AV.
struct Pair {
    info: *mut fi::fi_info,
    fabric: *mut fi::fid_fabric,
    domain: *mut fi::fid_domain,
    av: *mut fi::fid_av,
    cq: [*mut fi::fid_cq; 2],
    ep: [*mut fi::fid_ep; 2],
    /// A counter of endpoint 1's receives (caller-driven pairs only).
    rx_cntr: *mut fi::fid_cntr,
    /// `fi_addr` of a and b.
    addr: [u64; 2],
}

fn fid<T>(p: *mut T) -> *mut fi::fid {
    p as *mut fi::fid
}

fn getinfo(tx_size: usize, caps: u64) -> *mut fi::fi_info {
    getinfo_threading(tx_size, caps, fi::FI_THREAD_UNSPEC)
}

fn getinfo_threading(tx_size: usize, caps: u64, threading: fi::fi_threading) -> *mut fi::fi_info {
    common::load_provider();
    // SAFETY: libfabric's allocation; attr structs allocated with it; strings strdup'd
    // because fi_freeinfo frees them.
    unsafe {
        let hints = fi::fi_allocinfo();
        assert!(!hints.is_null());
        (*hints).caps = caps;
        (*(*hints).ep_attr).type_ = fi::FI_EP_RDM;
        (*(*hints).fabric_attr).prov_name = libc::strdup(c"zerorx".as_ptr());
        (*(*hints).tx_attr).size = tx_size;
        (*(*hints).domain_attr).threading = threading;
        let mut info = ptr::null_mut();
        let rc = fi::fi_getinfo(
            fi::FI_HEADER_VERSION,
            ptr::null(),
            ptr::null(),
            0,
            hints,
            &mut info,
        );
        fi::fi_freeinfo(hints);
        assert_eq!(rc, 0, "fi_getinfo for zerorx: {rc}");
        info
    }
}

impl Pair {
    fn open(tx_size: usize) -> Pair {
        Pair::with_caps(tx_size, fi::FI_MSG | fi::FI_TAGGED)
    }

    fn with_caps(tx_size: usize, caps: u64) -> Pair {
        Pair::with_wait(tx_size, caps, fi::FI_WAIT_NONE)
    }

    fn with_wait(tx_size: usize, caps: u64, wait_obj: fi::fi_wait_obj) -> Pair {
        Pair::build(getinfo(tx_size, caps), wait_obj, false)
    }

    /// A pair in a domain the calling thread progresses (`FI_THREAD_DOMAIN`, which
    /// the provider answers with manual progress).
    fn caller_driven() -> Pair {
        Pair::caller_driven_with(fi::FI_WAIT_UNSPEC)
    }

    /// [`caller_driven`](Self::caller_driven) with CQs waiting on `wait_obj`.
    fn caller_driven_with(wait_obj: fi::fi_wait_obj) -> Pair {
        let info = getinfo_threading(0, fi::FI_MSG | fi::FI_TAGGED, fi::FI_THREAD_DOMAIN);
        // SAFETY: a live fi_info from fi_getinfo.
        let progress = unsafe { (*(*info).domain_attr).data_progress };
        assert_eq!(
            progress,
            fi::FI_PROGRESS_MANUAL,
            "FI_THREAD_DOMAIN gets manual progress"
        );
        Pair::build(info, wait_obj, true)
    }

    /// Opens the pair; with `rx_cntr`, endpoint 1's receives also count on a counter.
    fn build(info: *mut fi::fi_info, wait_obj: fi::fi_wait_obj, rx_cntr: bool) -> Pair {
        let mut p = Pair {
            info,
            fabric: ptr::null_mut(),
            domain: ptr::null_mut(),
            av: ptr::null_mut(),
            cq: [ptr::null_mut(); 2],
            ep: [ptr::null_mut(); 2],
            rx_cntr: ptr::null_mut(),
            addr: [0; 2],
        };
        // SAFETY: the libfabric calls as documented, on objects made here.
        unsafe {
            assert_eq!(
                fi::fi_fabric((*info).fabric_attr, &mut p.fabric, ptr::null_mut()),
                0
            );
            assert_eq!(
                fi::fi_domain(p.fabric, info, &mut p.domain, ptr::null_mut()),
                0
            );
            let mut av_attr = fi::fi_av_attr {
                type_: fi::FI_AV_TABLE,
                ..Default::default()
            };
            assert_eq!(
                fi::fi_av_open(p.domain, &mut av_attr, &mut p.av, ptr::null_mut()),
                0
            );
            for i in 0..2 {
                let mut cq_attr = fi::fi_cq_attr {
                    format: fi::FI_CQ_FORMAT_TAGGED,
                    size: 64,
                    wait_obj,
                    ..Default::default()
                };
                assert_eq!(
                    fi::fi_cq_open(p.domain, &mut cq_attr, &mut p.cq[i], ptr::null_mut()),
                    0
                );
                assert_eq!(
                    fi::fi_endpoint(p.domain, info, &mut p.ep[i], ptr::null_mut()),
                    0
                );
                assert_eq!(
                    fi::fi_send(p.ep[i], ptr::null(), 0, ptr::null_mut(), 0, ptr::null_mut()),
                    -(fi::FI_EOPBADSTATE as isize),
                    "a send before fi_enable is refused"
                );
                assert_eq!(fi::fi_ep_bind(p.ep[i], fid(p.av), 0), 0);
                assert_eq!(
                    fi::fi_ep_bind(p.ep[i], fid(p.cq[i]), fi::FI_TRANSMIT | fi::FI_RECV),
                    0
                );
                if rx_cntr && i == 1 {
                    let mut attr = fi::fi_cntr_attr {
                        events: fi::FI_CNTR_EVENTS_COMP,
                        wait_obj: fi::FI_WAIT_UNSPEC,
                        ..Default::default()
                    };
                    assert_eq!(
                        fi::fi_cntr_open(p.domain, &mut attr, &mut p.rx_cntr, ptr::null_mut()),
                        0
                    );
                    assert_eq!(fi::fi_ep_bind(p.ep[i], fid(p.rx_cntr), fi::FI_RECV), 0);
                }
                assert_eq!(fi::fi_enable(p.ep[i]), 0);
                let mut name = [0u8; 16];
                let mut len = 4usize;
                assert_eq!(
                    fi::fi_getname(fid(p.ep[i]), name.as_mut_ptr().cast(), &mut len),
                    -(fi::FI_ETOOSMALL as i32),
                    "too small a buffer is refused with the size needed"
                );
                assert_eq!(len, 16);
                assert_eq!(
                    fi::fi_getname(fid(p.ep[i]), name.as_mut_ptr().cast(), &mut len),
                    0
                );
                let mut a = 0u64;
                assert_eq!(
                    fi::fi_av_insert(p.av, name.as_ptr().cast(), 1, &mut a, 0, ptr::null_mut()),
                    1
                );
                p.addr[i] = a;
            }
        }
        p
    }

    /// The next completion or error on CQ `i`, within a deadline.
    fn next(&self, i: usize) -> Result<fi::fi_cq_tagged_entry, fi::fi_cq_err_entry> {
        self.next_from(i).map(|(e, _)| e)
    }

    /// [`next`](Self::next) with the sender's `fi_addr` (`fi_cq_readfrom`).
    fn next_from(&self, i: usize) -> Result<(fi::fi_cq_tagged_entry, u64), fi::fi_cq_err_entry> {
        let start = Instant::now();
        loop {
            let mut e = fi::fi_cq_tagged_entry::default();
            let mut src = 0u64;
            // SAFETY: one tagged entry and one address of room.
            let n = unsafe {
                fi::fi_cq_readfrom(
                    self.cq[i],
                    (&mut e as *mut fi::fi_cq_tagged_entry).cast(),
                    1,
                    &mut src,
                )
            };
            if n == 1 {
                return Ok((e, src));
            }
            if n == EAVAIL {
                let mut err = fi::fi_cq_err_entry::default();
                // SAFETY: one error entry of room; err_data left to the provider.
                let r = unsafe { fi::fi_cq_readerr(self.cq[i], &mut err, 0) };
                assert_eq!(r, 1, "fi_cq_readerr after -FI_EAVAIL");
                return Err(err);
            }
            assert_eq!(n, EAGAIN, "fi_cq_read");
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "no completion on CQ {i} in 10 s"
            );
        }
    }

    /// `FI_GETWAIT` on CQ `i`: its wait fd, or the negative code.
    fn wait_fd(&self, i: usize) -> Result<i32, i32> {
        let mut fd: i32 = -1;
        // SAFETY: FI_GETWAIT writes an int for an FI_WAIT_FD CQ, nothing otherwise.
        let rc = unsafe {
            fi::fi_control(
                fid(self.cq[i]),
                fi::FI_GETWAIT as i32,
                (&mut fd as *mut i32).cast(),
            )
        };
        if rc == 0 {
            Ok(fd)
        } else {
            Err(rc)
        }
    }

    /// Posts a receive of `buf` on endpoint `i` with context `c`.
    ///
    /// # Safety
    /// `buf` outlives the receive: its completion is read before `buf` goes.
    unsafe fn recv(&self, i: usize, buf: &mut [u8], c: usize) {
        // SAFETY: `buf` is valid for the receive by the caller's promise.
        let rc = unsafe {
            fi::fi_recv(
                self.ep[i],
                buf.as_mut_ptr().cast(),
                buf.len(),
                ptr::null_mut(),
                fi::FI_ADDR_UNSPEC,
                ctx(c),
            )
        };
        assert_eq!(rc, 0, "fi_recv");
    }

    fn empty(&self, i: usize) -> bool {
        let mut e = fi::fi_cq_tagged_entry::default();
        // SAFETY: one tagged entry of room.
        unsafe {
            fi::fi_cq_read(
                self.cq[i],
                (&mut e as *mut fi::fi_cq_tagged_entry).cast(),
                1,
            ) == EAGAIN
        }
    }

    /// Closes in libfabric's order, checking that out-of-order closes are refused.
    fn close(self) {
        // SAFETY: closing objects made in `open`, each once.
        unsafe {
            assert_eq!(
                fi::fi_close(fid(self.domain)),
                -fi::FI_EBUSY,
                "the domain has children"
            );
            assert_eq!(
                fi::fi_close(fid(self.cq[0])),
                -fi::FI_EBUSY,
                "an endpoint is bound to the CQ"
            );
            assert_eq!(
                fi::fi_close(fid(self.av)),
                -fi::FI_EBUSY,
                "endpoints are bound to the AV"
            );
            for i in 0..2 {
                assert_eq!(fi::fi_close(fid(self.ep[i])), 0);
                assert_eq!(fi::fi_close(fid(self.cq[i])), 0);
            }
            if !self.rx_cntr.is_null() {
                assert_eq!(fi::fi_close(fid(self.rx_cntr)), 0);
            }
            assert_eq!(fi::fi_close(fid(self.av)), 0);
            assert_eq!(
                fi::fi_close(fid(self.fabric)),
                -fi::FI_EBUSY,
                "the fabric has a domain"
            );
            assert_eq!(fi::fi_close(fid(self.domain)), 0);
            assert_eq!(fi::fi_close(fid(self.fabric)), 0);
            fi::fi_freeinfo(self.info);
        }
    }
}

/// Whether `fd` turns readable within `ms`.
fn readable(fd: i32, ms: i32) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut pfd, 1, ms) == 1 }
}

fn ctx(n: usize) -> *mut c_void {
    n as *mut c_void
}

#[test]
fn a_truncated_receive_reports_the_overflow_and_names_the_cause() {
    let p = Pair::open(0);
    let src = [7u8; 20];
    let mut dst = [0u8; 8];
    // SAFETY: buffers outlive their operations (completions read below).
    unsafe {
        p.recv(1, &mut dst[..8], 11);
        assert_eq!(
            fi::fi_send(
                p.ep[0],
                src.as_ptr().cast(),
                20,
                ptr::null_mut(),
                p.addr[1],
                ctx(10)
            ),
            0
        );
    }
    let sent = p.next(0).expect("the send completes");
    assert_eq!(sent.op_context, ctx(10));
    assert_eq!(sent.flags, fi::FI_SEND | fi::FI_MSG);
    let err = p.next(1).expect_err("the receive is truncated");
    assert_eq!(err.err, fi::FI_ETRUNC as i32);
    assert_eq!(err.op_context, ctx(11));
    assert_eq!((err.len, err.olen), (8, 12), "8 bytes placed, 12 over");
    assert_eq!(dst, [7u8; 8], "the posted bytes were filled");
    // SAFETY: err_data points at the provider's text until the next readerr.
    let text = unsafe {
        CStr::from_ptr(fi::fi_cq_strerror(
            p.cq[1],
            err.prov_errno,
            err.err_data,
            ptr::null_mut(),
            0,
        ))
    };
    let text = text.to_str().unwrap();
    assert!(
        text.contains("20 bytes") && text.contains("8"),
        "strerror says {text:?}"
    );
    p.close();
}

#[test]
fn a_cancelled_receive_completes_with_ecanceled_and_its_context() {
    let p = Pair::open(0);
    let mut dst = [0u8; 8];
    // SAFETY: the buffer outlives the receive (its cancellation is read below).
    unsafe {
        p.recv(1, &mut dst[..8], 21);
        assert_eq!(fi::fi_cancel(fid(p.ep[1]), ctx(21)), 0);
    }
    let err = p.next(1).expect_err("the receive is cancelled");
    assert_eq!(err.err, fi::FI_ECANCELED);
    assert_eq!(err.op_context, ctx(21));
    assert!(p.empty(1), "exactly one entry for the receive");
    p.close();
}

#[test]
fn bad_arguments_are_refused_with_einval_not_a_crash() {
    let p = Pair::open(0);
    let buf = [0u8; 8];
    let iov = [fi::iovec {
        iov_base: buf.as_ptr() as *mut c_void,
        iov_len: 8,
    }; 2];
    // SAFETY: every call gets an argument the provider must refuse; none is posted.
    unsafe {
        assert_eq!(
            fi::fi_send(
                p.ep[0],
                buf.as_ptr().cast(),
                8,
                ptr::null_mut(),
                99,
                ptr::null_mut()
            ),
            -(fi::FI_EINVAL as isize),
            "an fi_addr not in the AV"
        );
        assert_eq!(
            fi::fi_send(
                p.ep[0],
                ptr::null(),
                8,
                ptr::null_mut(),
                p.addr[1],
                ptr::null_mut()
            ),
            -(fi::FI_EINVAL as isize),
            "a NULL buffer with a length"
        );
        assert_eq!(
            fi::fi_sendv(
                p.ep[0],
                iov.as_ptr(),
                ptr::null_mut(),
                2,
                p.addr[1],
                ptr::null_mut()
            ),
            -(fi::FI_EINVAL as isize),
            "two iovecs (iov_limit is 1)"
        );
        let big = vec![0u8; 8192];
        assert_eq!(
            fi::fi_inject(p.ep[0], big.as_ptr().cast(), big.len(), p.addr[1]),
            -(fi::FI_EMSGSIZE as isize),
            "an inject over inject_size"
        );
        assert_eq!(
            fi::fi_cq_read(p.cq[0], ptr::null_mut(), 1),
            -(fi::FI_EINVAL as isize),
            "a NULL entry buffer"
        );
        let (mut mr1, mut mr2) = (ptr::null_mut(), ptr::null_mut());
        let remote = fi::FI_REMOTE_WRITE | fi::FI_REMOTE_READ;
        assert_eq!(
            fi::fi_mr_reg(
                p.domain,
                buf.as_ptr().cast(),
                8,
                remote,
                0,
                0x77,
                0,
                &mut mr1,
                ptr::null_mut()
            ),
            0
        );
        assert_eq!(
            fi::fi_mr_reg(
                p.domain,
                buf.as_ptr().cast(),
                8,
                remote,
                0,
                0x77,
                0,
                &mut mr2,
                ptr::null_mut()
            ),
            -(fi::FI_ENOKEY as i32),
            "a key is registered once per domain"
        );
        assert_eq!(fi::fi_close(fid(mr1)), 0);
    }
    assert!(p.empty(0) && p.empty(1), "nothing refused was posted");
    p.close();
}

#[test]
fn sends_past_the_tx_size_get_eagain_until_completions_are_read() {
    let p = Pair::open(2);
    let buf = [1u8; 16];
    // SAFETY: the buffer outlives the sends (completions read below).
    let send = |c| unsafe {
        fi::fi_send(
            p.ep[0],
            buf.as_ptr().cast(),
            16,
            ptr::null_mut(),
            p.addr[1],
            ctx(c),
        )
    };
    assert_eq!(send(1), 0);
    assert_eq!(send(2), 0);
    assert_eq!(send(3), EAGAIN, "both credits are taken");
    assert!(p.next(0).is_ok());
    assert_eq!(send(3), 0, "reading a completion gives its credit back");
    assert!(p.next(0).is_ok() && p.next(0).is_ok());
    let mut dst = [0u8; 16];
    for i in 0..3 {
        // SAFETY: the buffer outlives each receive (completion read right after).
        unsafe {
            assert_eq!(
                fi::fi_recv(
                    p.ep[1],
                    dst.as_mut_ptr().cast(),
                    16,
                    ptr::null_mut(),
                    fi::FI_ADDR_UNSPEC,
                    ctx(40 + i)
                ),
                0
            );
        }
        assert_eq!(p.next(1).expect("a message").len, 16);
    }
    p.close();
}

#[test]
fn an_inject_takes_its_bytes_at_the_call_and_reports_no_completion() {
    let p = Pair::open(0);
    let mut buf = *b"injected";
    let mut dst = [0u8; 8];
    // SAFETY: the receive buffer outlives the receive; the inject's is free at return.
    unsafe {
        assert_eq!(fi::fi_inject(p.ep[0], buf.as_ptr().cast(), 8, p.addr[1]), 0);
        buf.copy_from_slice(b"changed!");
        p.recv(1, &mut dst[..8], 5);
    }
    assert_eq!(p.next(1).expect("the message").len, 8);
    assert_eq!(&dst, b"injected", "the bytes at the call, not after");
    assert!(p.empty(0), "an inject reports no completion");
    p.close();
}

#[test]
fn tagged_receives_match_under_their_ignore_mask_and_carry_immediate_data() {
    let p = Pair::open(0);
    let src = *b"tagged!!";
    let mut other = [0u8; 8];
    let mut dst = [0u8; 8];
    // SAFETY: buffers outlive their operations (completions read below).
    unsafe {
        // Does not match 0x1234 (differs outside the mask); stays posted.
        assert_eq!(
            fi::fi_trecv(
                p.ep[1],
                other.as_mut_ptr().cast(),
                8,
                ptr::null_mut(),
                fi::FI_ADDR_UNSPEC,
                0x9900,
                0xff,
                ctx(1)
            ),
            0
        );
        assert_eq!(
            fi::fi_trecv(
                p.ep[1],
                dst.as_mut_ptr().cast(),
                8,
                ptr::null_mut(),
                fi::FI_ADDR_UNSPEC,
                0x1200,
                0xff,
                ctx(2)
            ),
            0
        );
        assert_eq!(
            fi::fi_tsenddata(
                p.ep[0],
                src.as_ptr().cast(),
                8,
                ptr::null_mut(),
                77,
                p.addr[1],
                0x1234,
                ctx(3)
            ),
            0
        );
    }
    let got = p.next(1).expect("the tagged message");
    assert_eq!(got.op_context, ctx(2), "the receive whose mask matches");
    assert_eq!(got.tag, 0x1234);
    assert_eq!(got.data, 77);
    assert_eq!(
        got.flags,
        fi::FI_RECV | fi::FI_TAGGED | fi::FI_REMOTE_CQ_DATA
    );
    assert_eq!(&dst, b"tagged!!");
    assert_eq!(p.next(0).expect("the send").op_context, ctx(3));
    // SAFETY: cancels the receive that never matched; its buffer is still alive.
    unsafe { assert_eq!(fi::fi_cancel(fid(p.ep[1]), ctx(1)), 0) };
    assert_eq!(p.next(1).expect_err("cancelled").err, fi::FI_ECANCELED);
    assert_eq!(other, [0u8; 8]);
    p.close();
}

#[test]
fn getinfo_refuses_what_is_not_offered() {
    common::load_provider();
    // SAFETY: as in `getinfo`.
    unsafe {
        let hints = fi::fi_allocinfo();
        (*hints).caps = fi::FI_ATOMIC;
        (*(*hints).fabric_attr).prov_name = libc::strdup(c"zerorx".as_ptr());
        let mut info = ptr::null_mut();
        let rc = fi::fi_getinfo(
            fi::FI_HEADER_VERSION,
            ptr::null(),
            ptr::null(),
            0,
            hints,
            &mut info,
        );
        assert_eq!(rc, -fi::FI_ENODATA, "FI_ATOMIC is not offered");
        (*hints).caps = fi::FI_MSG;
        (*(*hints).ep_attr).type_ = fi::FI_EP_MSG;
        let rc = fi::fi_getinfo(
            fi::FI_HEADER_VERSION,
            ptr::null(),
            ptr::null(),
            0,
            hints,
            &mut info,
        );
        assert_eq!(rc, -fi::FI_ENODATA, "only RDM endpoints");
        fi::fi_freeinfo(hints);
    }
}

#[test]
fn directed_receives_take_only_their_source_and_completions_name_the_sender() {
    let p = Pair::with_caps(0, fi::FI_TAGGED | fi::FI_DIRECTED_RECV | fi::FI_SOURCE);
    let from_a = *b"from a..";
    let from_b = *b"from b..";
    let mut only_b = [0u8; 8];
    let mut any = [0u8; 8];
    // SAFETY: buffers outlive their operations (completions read below).
    unsafe {
        assert_eq!(
            fi::fi_trecv(
                p.ep[1],
                only_b.as_mut_ptr().cast(),
                8,
                ptr::null_mut(),
                p.addr[1],
                7,
                0,
                ctx(1)
            ),
            0
        );
        assert_eq!(
            fi::fi_trecv(
                p.ep[1],
                any.as_mut_ptr().cast(),
                8,
                ptr::null_mut(),
                fi::FI_ADDR_UNSPEC,
                7,
                0,
                ctx(2)
            ),
            0
        );
        assert_eq!(
            fi::fi_tsend(
                p.ep[0],
                from_a.as_ptr().cast(),
                8,
                ptr::null_mut(),
                p.addr[1],
                7,
                ctx(3)
            ),
            0
        );
    }
    let (got, src) = p.next_from(1).expect("a's message");
    assert_eq!(
        got.op_context,
        ctx(2),
        "the receive directed at b is passed over"
    );
    assert_eq!(src, p.addr[0], "FI_SOURCE names a");
    assert_eq!(&any, b"from a..");
    // SAFETY: as above; b sends to itself.
    unsafe {
        assert_eq!(
            fi::fi_tsend(
                p.ep[1],
                from_b.as_ptr().cast(),
                8,
                ptr::null_mut(),
                p.addr[1],
                7,
                ctx(4)
            ),
            0
        );
    }
    // b's CQ gets its send's completion and the receive's, in either order.
    let two = [
        p.next_from(1).expect("b's entry"),
        p.next_from(1).expect("b's entry"),
    ];
    let (got, src) = two
        .iter()
        .find(|(e, _)| e.flags & fi::FI_RECV != 0)
        .copied()
        .expect("the receive of b's message");
    assert_eq!((got.op_context, src), (ctx(1), p.addr[1]));
    assert_eq!(&only_b, b"from b..");
    assert!(
        two.iter().any(|(e, _)| e.op_context == ctx(4)),
        "b's send completes"
    );
    assert_eq!(p.next(0).expect("a's send").op_context, ctx(3));
    // SAFETY: a source not in the AV is refused before anything is posted.
    let bad = unsafe {
        fi::fi_trecv(
            p.ep[1],
            any.as_mut_ptr().cast(),
            8,
            ptr::null_mut(),
            42,
            7,
            0,
            ctx(5),
        )
    };
    assert_eq!(bad, -(fi::FI_EINVAL as isize));
    p.close();
}

#[test]
fn a_wait_fd_cq_wakes_a_poller_and_fi_trywait_says_when_to_read_first() {
    let p = Pair::with_wait(0, fi::FI_MSG, fi::FI_WAIT_FD);
    let fd = p.wait_fd(1).expect("FI_GETWAIT");
    assert!(fd >= 0);
    let mut fids = [fid(p.cq[1])];
    // SAFETY: one live CQ fid.
    let mut trywait = || unsafe { fi::fi_trywait(p.fabric, fids.as_mut_ptr(), 1) };
    assert_eq!(trywait(), 0, "nothing queued: the caller may block");
    let readable = |ms| readable(fd, ms);
    assert!(!readable(0));
    let src = *b"wake up!";
    let mut dst = [0u8; 8];
    // SAFETY: buffers outlive their operations (completions read below).
    unsafe {
        p.recv(1, &mut dst[..8], 1);
        assert_eq!(
            fi::fi_send(
                p.ep[0],
                src.as_ptr().cast(),
                8,
                ptr::null_mut(),
                p.addr[1],
                ctx(2)
            ),
            0
        );
    }
    assert!(
        readable(10_000),
        "the receive's completion makes the fd readable"
    );
    assert_eq!(
        trywait(),
        -fi::FI_EAGAIN,
        "an entry is queued: read it first"
    );
    assert_eq!(p.next(1).expect("the message").op_context, ctx(1));
    assert_eq!(trywait(), 0);
    assert!(!readable(0), "drained by the arming");
    assert!(p.next(0).is_ok());
    // A CQ without a wait fd has none to give.
    let q = Pair::open(0);
    assert_eq!(q.wait_fd(0), Err(-fi::FI_ENODATA));
    q.close();
    p.close();
}

/// Sends `len` bytes from endpoint 0 to endpoint 1 and checks every byte arrived.
fn round(p: &Pair, len: usize, seed: u8) {
    let src: Vec<u8> = (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect();
    let mut dst = vec![0u8; len];
    // SAFETY: both buffers outlive their operations (completions read below).
    unsafe {
        p.recv(1, &mut dst[..len], 1);
        assert_eq!(
            fi::fi_send(
                p.ep[0],
                src.as_ptr().cast(),
                len,
                ptr::null_mut(),
                p.addr[1],
                ctx(2)
            ),
            0
        );
    }
    let got = p.next(1).expect("the receive");
    assert_eq!((got.op_context, got.len), (ctx(1), len));
    assert_eq!(p.next(0).expect("the send").op_context, ctx(2));
    assert!(dst == src, "{len} bytes arrived intact");
}

#[test]
fn a_domain_the_caller_progresses_moves_every_byte_inside_its_calls() {
    let p = Pair::caller_driven();
    for (i, len) in [0, 1, 64, 4096, 65_536, 1 << 20].into_iter().enumerate() {
        round(&p, len, i as u8);
    }
    // fi_cq_sread turns the ring while it waits: a message sent before it arrives
    // inside it; with nothing coming, it returns at its timeout.
    let mut dst = [0u8; 8];
    let mut e = fi::fi_cq_tagged_entry::default();
    // SAFETY: buffers outlive their operations; one entry of room.
    unsafe {
        p.recv(1, &mut dst[..8], 3);
        assert_eq!(
            fi::fi_inject(p.ep[0], b"sread me".as_ptr().cast(), 8, p.addr[1]),
            0
        );
        let n = fi::fi_cq_sread(
            p.cq[1],
            (&mut e as *mut fi::fi_cq_tagged_entry).cast(),
            1,
            ptr::null(),
            10_000,
        );
        assert_eq!((n, e.op_context), (1, ctx(3)));
        assert_eq!(&dst, b"sread me");
        let start = Instant::now();
        let n = fi::fi_cq_sread(
            p.cq[1],
            (&mut e as *mut fi::fi_cq_tagged_entry).cast(),
            1,
            ptr::null(),
            50,
        );
        assert_eq!(n, EAGAIN, "nothing came");
        assert!(
            start.elapsed() >= Duration::from_millis(50),
            "returned before its timeout"
        );
    }
    // fi_cntr_wait turns the ring too: the receive it counts completes inside it.
    let mut dst = [0u8; 4];
    // SAFETY: the buffer outlives the receive (its completion is read below).
    unsafe {
        // Seven receives so far (the rounds and the sread), all counted.
        let before = fi::fi_cntr_read(p.rx_cntr);
        assert_eq!(before, 7);
        p.recv(1, &mut dst[..4], 4);
        assert_eq!(
            fi::fi_inject(p.ep[0], b"cntr".as_ptr().cast(), 4, p.addr[1]),
            0
        );
        assert_eq!(fi::fi_cntr_wait(p.rx_cntr, before + 1, 10_000), 0);
        assert_eq!(
            fi::fi_cntr_wait(p.rx_cntr, before + 2, 50),
            -fi::FI_ETIMEDOUT,
            "nothing more came"
        );
    }
    assert_eq!(p.next(1).expect("the counted receive").op_context, ctx(4));
    assert_eq!(&dst, b"cntr");
    p.close();
}

#[test]
fn another_threads_calls_to_a_caller_progressed_domain_are_served_by_the_owners_calls() {
    let p = Pair::caller_driven();
    let (ep0, to, domain, cq1) = (
        p.ep[0] as usize,
        p.addr[1],
        p.domain as usize,
        p.cq[1] as usize,
    );
    let mut dst = [0u8; 5];
    // SAFETY: the buffer outlives the operation (completion read below).
    unsafe {
        p.recv(1, &mut dst[..5], 1);
    }
    std::thread::spawn(move || {
        let buf = [7u8; 8];
        let mut mr = ptr::null_mut();
        // SAFETY: live objects of the test's domain; the inject copies its bytes.
        unsafe {
            assert_eq!(
                fi::fi_inject(ep0 as *mut fi::fid_ep, b"hello".as_ptr().cast(), 5, to),
                0,
                "a post from another thread is queued for the owner"
            );
            let rc = fi::fi_mr_reg(
                domain as *mut fi::fid_domain,
                buf.as_ptr().cast(),
                8,
                fi::FI_REMOTE_WRITE,
                0,
                0x99,
                0,
                &mut mr,
                ptr::null_mut(),
            );
            assert!(
                rc < 0,
                "a registration needs the owner's runtime: refused, not hung ({rc})"
            );
        }
    })
    .join()
    .unwrap();
    let got = p
        .next(1)
        .expect("the other thread's message, moved by this thread's reads");
    assert_eq!((got.op_context, &dst), (ctx(1), b"hello"));

    // fi_cq_signal from another thread ends a blocked fi_cq_sread at once.
    let signaller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        // SAFETY: a live CQ of the test's domain.
        assert_eq!(unsafe { fi::fi_cq_signal(cq1 as *mut fi::fid_cq) }, 0);
    });
    let mut e = fi::fi_cq_tagged_entry::default();
    let start = Instant::now();
    // SAFETY: one entry of room; no timeout (the signal ends it).
    let n = unsafe {
        fi::fi_cq_sread(
            p.cq[1],
            (&mut e as *mut fi::fi_cq_tagged_entry).cast(),
            1,
            ptr::null(),
            -1,
        )
    };
    assert_eq!(n, EAGAIN, "woken by the signal with nothing to read");
    assert!(start.elapsed() < Duration::from_secs(30));
    signaller.join().unwrap();

    // A wait-fd CQ shares the ring's readiness fd, which only the owner can reach:
    // another thread's open is refused, with the reason in the log.
    let domain = p.domain as usize;
    let rc = std::thread::spawn(move || {
        let mut cq = ptr::null_mut();
        let mut attr = fi::fi_cq_attr {
            format: fi::FI_CQ_FORMAT_CONTEXT,
            wait_obj: fi::FI_WAIT_FD,
            ..Default::default()
        };
        // SAFETY: a live domain; `cq` is written only on success.
        unsafe {
            fi::fi_cq_open(
                domain as *mut fi::fid_domain,
                &mut attr,
                &mut cq,
                ptr::null_mut(),
            )
        }
    })
    .join()
    .unwrap();
    assert_eq!(rc, -fi::FI_ENOSYS);
    p.close();
}

#[test]
fn a_wait_fd_on_a_domain_its_thread_progresses_wakes_that_thread_for_the_ring_s_work() {
    let p = Pair::caller_driven_with(fi::FI_WAIT_FD);
    let fd = p.wait_fd(1).expect("FI_GETWAIT");
    assert!(fd >= 0);
    // The sender is another domain, with a worker thread, on another thread: this
    // thread sleeps on the fd while the message is on its way.
    let q = Pair::open(0);
    let mut name = [0u8; 16];
    let mut len = name.len();
    let mut to = 0u64;
    // SAFETY: live endpoints and AV; `name` has `len` bytes of room.
    unsafe {
        assert_eq!(
            fi::fi_getname(fid(p.ep[1]), name.as_mut_ptr().cast(), &mut len),
            0
        );
        assert_eq!(
            fi::fi_av_insert(q.av, name.as_ptr().cast(), 1, &mut to, 0, ptr::null_mut()),
            1
        );
    }
    let mut dst = [0u8; 5];
    let mut fids = [fid(p.cq[1])];
    // SAFETY: the buffer outlives the receive (its completion is read below); one
    // live CQ fid for fi_trywait.
    unsafe {
        p.recv(1, &mut dst[..5], 9);
        assert_eq!(
            fi::fi_trywait(p.fabric, fids.as_mut_ptr(), 1),
            0,
            "nothing there yet"
        );
    }
    let readable = |ms| readable(fd, ms);
    assert!(!readable(50), "nothing sent, nothing to wake for");
    let ep = q.ep[0] as usize;
    let sender = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        // SAFETY: live objects of `q`, a thread-safe domain; inject copies its bytes.
        unsafe { fi::fi_inject(ep as *mut fi::fid_ep, b"awake".as_ptr().cast(), 5, to) }
    });
    assert!(readable(10_000), "the message's arrival signals the fd");
    assert_eq!(sender.join().unwrap(), 0);
    let got = p
        .next(1)
        .expect("the message, turned into an entry by the read");
    assert_eq!((got.op_context, &dst), (ctx(9), b"awake"));
    // SAFETY: as above.
    unsafe {
        assert_eq!(
            fi::fi_trywait(p.fabric, fids.as_mut_ptr(), 1),
            0,
            "read: may sleep again"
        );
    }
    q.close();
    p.close();
}

#[test]
fn a_thread_that_exits_with_its_domain_open_takes_the_runtime_along_and_closes_still_work() {
    // The pair's objects, as numbers, so they can cross back to this thread.
    let objs = std::thread::spawn(|| {
        let p = Pair::caller_driven();
        round(&p, 64, 1);
        (
            p.fabric as usize,
            p.domain as usize,
            p.av as usize,
            p.cq.map(|c| c as usize),
            p.ep.map(|e| e as usize),
            p.rx_cntr as usize,
            p.info as usize,
        )
        // `p` is left open: the thread ends with its domain (`Pair` closes only when
        // asked).
    })
    .join()
    .expect("the owner thread ends cleanly, its runtime dropped with it");
    let (fabric, domain, av, cq, ep, cntr, info) = objs;
    // SAFETY: live objects the exited thread opened and never closed.
    unsafe {
        let e = ep[0] as *mut fi::fid_ep;
        assert_eq!(
            fi::fi_inject(e, b"late".as_ptr().cast(), 4, 0),
            -(fi::FI_EIO as isize),
            "a post finds the domain's command loop gone with its thread: an error, not a hang"
        );
        for e in ep {
            assert_eq!(fi::fi_close(e as *mut fi::fid), 0);
        }
        for c in cq {
            assert_eq!(fi::fi_close(c as *mut fi::fid), 0);
        }
        assert_eq!(fi::fi_close(cntr as *mut fi::fid), 0);
        assert_eq!(fi::fi_close(av as *mut fi::fid), 0);
        assert_eq!(fi::fi_close(domain as *mut fi::fid), 0);
        assert_eq!(fi::fi_close(fabric as *mut fi::fid), 0);
        fi::fi_freeinfo(info as *mut fi::fi_info);
    }
}

#[test]
fn a_post_from_another_thread_keeps_its_place_before_the_owners_next_post() {
    let p = Pair::caller_driven();
    let (ep0, to) = (p.ep[0] as usize, p.addr[1]);
    let (mut first, mut second) = ([0u8; 3], [0u8; 3]);
    // SAFETY: both buffers outlive their receives (completions read below).
    unsafe {
        p.recv(1, &mut first[..3], 1);
        p.recv(1, &mut second[..3], 2);
    }
    // Serialised as FI_THREAD_DOMAIN asks: the other thread's inject returns before
    // the owner's starts, so it must go first.
    std::thread::spawn(move || {
        // SAFETY: a live endpoint of the test's domain; inject copies its bytes.
        let rc = unsafe { fi::fi_inject(ep0 as *mut fi::fid_ep, b"one".as_ptr().cast(), 3, to) };
        assert_eq!(rc, 0);
    })
    .join()
    .unwrap();
    // SAFETY: as above.
    unsafe {
        assert_eq!(fi::fi_inject(p.ep[0], b"two".as_ptr().cast(), 3, to), 0);
    }
    assert_eq!(p.next(1).expect("first").op_context, ctx(1));
    assert_eq!(p.next(1).expect("second").op_context, ctx(2));
    assert_eq!(
        (&first, &second),
        (b"one", b"two"),
        "sent in the order posted"
    );
    p.close();
}
