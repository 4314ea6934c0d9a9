//! liburing's device-less ZCRX cases (`test/zcrx.c`), plus the 7.2 event and 7.3 area
//! control ops, as a conformance suite for this crate's error mapping.
//!
//! Each case names the liburing case it mirrors (`LT n`, numbered as in
//! `docs/zcrx-events-and-areas.md` §5). Where our API can produce the condition, the
//! case asserts what our API answers (the `PoolError` variant, the field or hint, the
//! `RecvEnd` a completion maps to); where only a hand-made ABI call can (a NULL region,
//! a read-only area), it asserts the exact errno the kernel returns, the contract the
//! pools rely on. Every case needs `ZCRX_REG_NODEV` (Linux 7.1+): without it the cases
//! are listed as ignored with the reason, or fail with it under `ZERORX_REQUIRE_NODEV`
//! (CI's kernel guests). The event and area cases need 7.2 and 7.3; on an older kernel
//! a case of their refusal (our error, the kernel's errno) runs in their place, under
//! its own name.
//!
//! Not mirrored: corrupted refill entries and a corrupted refill head/tail (LT 32–34)
//! need writes into kernel-shared memory outside `zcrx::shm`, which nothing here may
//! do; the pools never produce such entries.

use io_uring::{cqueue, opcode, squeue, types, IoUring};
use libtest_mimic::{Arguments, Failed, Trial};
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;
use zcrx::abi::{self, ZcrxAreaReg, ZcrxCtrl, ZcrxIfqReg};
use zcrx::mem::Mapping;
use zcrx::probe::capabilities;
use zcrx::{Backing, PoolError, RearmReason, RecvEnd, RecvFailure, RecvTracker};
use zcrx::{ZcEvent, ZcPool, ZcPoolConfig, ZcTarget, ZcrxFeatures};

type Ring = IoUring<squeue::Entry, cqueue::Entry32>;
type Case = fn() -> Result<(), Failed>;

fn new_ring() -> Result<Ring, Failed> {
    IoUring::<squeue::Entry, cqueue::Entry32>::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(16)
        .map_err(|e| format!("cannot create a ZCRX ring: {e}").into())
}

fn features() -> ZcrxFeatures {
    capabilities().zcrx.clone()
}

fn page() -> usize {
    zcrx::sys::page_size()
}

fn expect(what: &str, ok: bool, detail: impl std::fmt::Debug) -> Result<(), Failed> {
    if ok {
        Ok(())
    } else {
        Err(format!("{what}: {detail:?}").into())
    }
}

/// A NODEV pool of `pages` on `ring`.
fn pool(ring: &Ring, pages: usize, events: Option<u64>) -> Result<ZcPool, Failed> {
    let cfg = ZcPoolConfig {
        area_bytes: pages * page(),
        event_user_data: events,
        ..ZcPoolConfig::new(ZcTarget::NoDev)
    };
    // SAFETY: every caller drops the ring before the pool.
    unsafe { ZcPool::register(ring.as_raw_fd(), &features(), &cfg) }
        .map_err(|e| e.to_string().into())
}

/// The errno of `IORING_REGISTER_ZCRX_IFQ` with valid NODEV arguments changed by
/// `mutate` (`None`: accepted). The memory outlives the attempt's ring.
fn register_errno(
    mutate: impl FnOnce(&mut ZcrxIfqReg, &mut ZcrxAreaReg, &mut abi::RegionDesc),
) -> Result<Option<i32>, Failed> {
    let ring = new_ring()?;
    let area = Mapping::new(16 * page(), Backing::Anonymous).map_err(|e| e.to_string())?;
    let region = Mapping::new(2 * page(), Backing::Anonymous).map_err(|e| e.to_string())?;
    let mut area_reg = ZcrxAreaReg {
        addr: area.as_ptr() as u64,
        len: area.len() as u64,
        ..Default::default()
    };
    let mut rd = abi::RegionDesc {
        user_addr: region.as_ptr() as u64,
        size: region.len() as u64,
        flags: abi::IORING_MEM_REGION_TYPE_USER,
        ..Default::default()
    };
    let mut reg = ZcrxIfqReg {
        rq_entries: 64,
        flags: abi::ZCRX_REG_NODEV,
        ..Default::default()
    };
    reg.area_ptr = &mut area_reg as *mut _ as u64;
    reg.region_ptr = &mut rd as *mut _ as u64;
    mutate(&mut reg, &mut area_reg, &mut rd);
    // SAFETY: the pointers in `reg` point at live locals or at mappings that outlive
    // the ring (dropped first, below).
    let result = unsafe { zcrx::sys::register_zcrx_ifq(ring.as_raw_fd(), &mut reg) };
    drop(ring);
    Ok(result.err().map(|e| e.raw_os_error().unwrap_or(0)))
}

/// `pages` of memory with an inaccessible (`PROT_NONE`) page on each side, so a range
/// reaching one page past either end is certain to fault: a plain mapping may have
/// neighbours, and an unmapped hole may be filled by the next small mapping (a ring's).
struct Guarded {
    base: *mut u8,
    pages: usize,
}

impl Guarded {
    fn new(pages: usize) -> Result<Guarded, Failed> {
        let len = (pages + 2) * page();
        // SAFETY: a fresh anonymous mapping; nothing else refers to it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        expect(
            "mmap",
            p != libc::MAP_FAILED,
            std::io::Error::last_os_error(),
        )?;
        let p = p.cast::<u8>();
        // SAFETY: the first and last page of the mapping just made; the middle stays.
        unsafe {
            libc::mprotect(p.cast(), page(), libc::PROT_NONE);
            libc::mprotect(p.add((pages + 1) * page()).cast(), page(), libc::PROT_NONE);
        }
        Ok(Guarded {
            // SAFETY: one page in, still inside the original mapping.
            base: unsafe { p.add(page()) },
            pages,
        })
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        // SAFETY: the whole mapping made in `new`, unmapped once, after every ring that
        // may have pinned it is gone (`register_errno` drops its ring first).
        unsafe { libc::munmap(self.base.sub(page()).cast(), (self.pages + 2) * page()) };
    }
}

/// A mapping the kernel can read but not write (or pin writable).
fn read_only(bytes: usize) -> Result<Mapping, Failed> {
    let m = Mapping::new(bytes, Backing::Anonymous).map_err(|e| e.to_string())?;
    // SAFETY: the range is this mapping's own; only its protection changes.
    let rc = unsafe { libc::mprotect(m.as_ptr().cast(), m.len(), libc::PROT_READ) };
    expect("mprotect", rc == 0, std::io::Error::last_os_error())?;
    Ok(m)
}

fn errno_is(case: &str, got: Option<i32>, want: &[i32]) -> Result<(), Failed> {
    match got {
        Some(e) if want.contains(&e) => Ok(()),
        other => Err(format!(
            "{case}: the kernel answered {:?}, expected one of {:?}",
            other.map(|e| std::io::Error::from_raw_os_error(e).to_string()),
            want.iter()
                .map(|e| std::io::Error::from_raw_os_error(*e).to_string())
                .collect::<Vec<_>>()
        )
        .into()),
    }
}

// ---- registration (LT 1–19) --------------------------------------------------------

/// LT 1, 5: the default registration works, and our layout rounds a refill size up
/// to the power of two the kernel wants (one entry per chunk by default).
fn nodev_registration_and_rounded_refill_size() -> Result<(), Failed> {
    let ring = new_ring()?;
    let cfg = ZcPoolConfig {
        area_bytes: 132 * page(),
        rq_entries: 127,
        ..ZcPoolConfig::new(ZcTarget::NoDev)
    };
    // SAFETY: the ring is dropped before the pool.
    let p = unsafe { ZcPool::register(ring.as_raw_fd(), &features(), &cfg) }
        .map_err(|e| format!("127 entries: {e}"))?;
    expect("132 chunks", p.stats().chunks_total == 132, p.stats())?;
    drop(ring);
    Ok(())
}

/// LT 2–4, 8–16, 19: hand-made registrations the pools never make, and the errno each
/// gets (the table's "what the kernel returns" column).
fn nodev_bad_registration_arguments_get_their_errno() -> Result<(), Failed> {
    use libc::{EFAULT, EINVAL};
    let p = page() as u64;
    errno_is(
        "LT2 region_ptr 0",
        register_errno(|r, _, _| r.region_ptr = 0)?,
        &[EFAULT],
    )?;
    errno_is(
        "LT3 region addr 0",
        register_errno(|_, _, d| d.user_addr = 0)?,
        &[EFAULT, EINVAL],
    )?;
    errno_is(
        "LT4 region size 0",
        register_errno(|_, _, d| d.size = 0)?,
        &[EFAULT, EINVAL],
    )?;
    errno_is(
        "LT7 rq_entries UINT_MAX",
        register_errno(|r, _, _| r.rq_entries = u32::MAX)?,
        &[EINVAL],
    )?;
    errno_is(
        "rq_entries 0",
        register_errno(|r, _, _| r.rq_entries = 0)?,
        &[EINVAL],
    )?;
    // 64 + 256 entries round to 512: more than two pages hold.
    errno_is(
        "LT8 region too small",
        register_errno(|r, _, _| r.rq_entries = 64 + 256)?,
        &[EINVAL],
    )?;
    errno_is(
        "LT9 area len 0",
        register_errno(|_, a, _| a.len = 0)?,
        &[EFAULT, EINVAL],
    )?;
    errno_is(
        "LT10 area addr 0",
        register_errno(|_, a, _| a.addr = 0)?,
        &[EFAULT, EINVAL],
    )?;
    errno_is(
        "LT11 area_ptr 0",
        register_errno(|r, _, _| r.area_ptr = 0)?,
        &[EFAULT],
    )?;
    let guarded = Guarded::new(16)?;
    let (gaddr, glen) = (guarded.base as u64, 16 * p);
    errno_is(
        "LT12 area from the page before the memory",
        register_errno(|_, a, _| {
            a.addr = gaddr - p;
            a.len = glen;
        })?,
        &[EFAULT],
    )?;
    errno_is(
        "LT13 area to the page after the memory",
        register_errno(|_, a, _| {
            a.addr = gaddr + p;
            a.len = glen;
        })?,
        &[EFAULT],
    )?;
    drop(guarded);
    errno_is(
        "LT14 len not a page multiple",
        register_errno(|_, a, _| a.len -= 100)?,
        &[EINVAL],
    )?;
    errno_is(
        "LT15 addr not page aligned",
        register_errno(|_, a, _| {
            a.addr += 8;
            a.len /= 2;
        })?,
        &[EINVAL],
    )?;
    let ro = read_only(16 * page())?;
    let addr = ro.as_ptr() as u64;
    errno_is(
        "LT16 read-only area",
        register_errno(|_, a, _| a.addr = addr)?,
        &[EFAULT],
    )?;
    errno_is(
        "a nonzero area token in",
        register_errno(|_, a, _| a.rq_area_token = 1 << 48)?,
        &[EINVAL],
    )?;
    errno_is(
        "NODEV with an interface",
        register_errno(|r, _, _| r.if_idx = 1)?,
        &[EINVAL],
    )?;
    Ok(())
}

/// LT 17–18, 7 through our API: what the pool refuses before the kernel sees it, and
/// what it maps the kernel's refusals to.
fn nodev_our_api_refuses_bad_pools_with_named_fields() -> Result<(), Failed> {
    let f = features();
    let bad = |cfg: ZcPoolConfig| -> Result<PoolError, Failed> {
        // SAFETY: every case fails before registering anything.
        unsafe { ZcPool::register(-1, &f, &cfg) }
            .err()
            .ok_or_else(|| Failed::from("accepted"))
    };
    let nodev = ZcPoolConfig::new(ZcTarget::NoDev);
    for (cfg, field) in [
        (
            ZcPoolConfig {
                rq_entries: u32::MAX,
                ..nodev.clone()
            },
            "rq_entries",
        ),
        (
            ZcPoolConfig {
                area_bytes: 0,
                ..nodev.clone()
            },
            "area_bytes",
        ),
        (
            ZcPoolConfig {
                chunk_size: u32::MAX,
                ..nodev.clone()
            },
            "chunk_size",
        ),
        (
            ZcPoolConfig {
                chunk_size: 1 << 31,
                area_bytes: 1 << 31,
                ..nodev.clone()
            },
            "rq_entries",
        ),
    ] {
        match bad(cfg)? {
            PoolError::InvalidConfig { field: got, .. } if got == field => {}
            other => return Err(format!("{field}: {other}").into()),
        }
    }
    // LT 18: a device-less instance takes page chunks only; we ask for pages, so a
    // large chunk_size still registers.
    let ring = new_ring()?;
    let cfg = ZcPoolConfig {
        chunk_size: 1 << 16,
        area_bytes: 64 * page(),
        ..nodev
    };
    // SAFETY: the ring is dropped before the pool.
    let p = unsafe { ZcPool::register(ring.as_raw_fd(), &f, &cfg) }.map_err(|e| e.to_string())?;
    expect(
        "page chunks",
        p.chunk_size() == page() as u64,
        p.chunk_size(),
    )?;
    drop(ring);
    Ok(())
}

// ---- RECV_ZC (LT 20–23) -------------------------------------------------------------

/// The one CQE of `sqe` and what [`RecvTracker`] makes of it.
fn single_end(ring: &mut Ring, sqe: squeue::Entry) -> Result<(i32, RecvEnd), Failed> {
    // SAFETY: the SQE names no memory (or a socket that outlives the ring use).
    unsafe { ring.submission().push(&sqe.user_data(7)) }.map_err(|_| "SQ full")?;
    ring.submit_and_wait(1).map_err(|e| e.to_string())?;
    let cqe = ring.completion().next().ok_or("no CQE")?;
    expect("a terminal CQE", !cqueue::more(cqe.flags()), cqe.flags())?;
    let t = RecvTracker::new(0);
    Ok((cqe.result(), t.on_end(cqe.result())))
}

fn nodev_receives_on_bad_fds_and_ids_fail_for_good() -> Result<(), Failed> {
    let mut ring = new_ring()?;
    let p = pool(&ring, 16, None)?;
    let (res, end) = single_end(&mut ring, p.recv_zc(-1, 0))?;
    expect(
        "LT20 fd -1",
        matches!(-res, libc::EBADF | libc::ENOTSOCK),
        res,
    )?;
    expect(
        "LT20 is final",
        matches!(end, RecvEnd::Failed(RecvFailure::Errno(_))),
        end,
    )?;
    let ring_fd = ring.as_raw_fd();
    let (res, end) = single_end(&mut ring, p.recv_zc(ring_fd, 0))?;
    expect(
        "LT21 the ring fd",
        matches!(-res, libc::EBADF | libc::ENOTSOCK),
        res,
    )?;
    expect("LT21 is final", matches!(end, RecvEnd::Failed(_)), end)?;
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let _c = TcpStream::connect(l.local_addr().map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let (s, _) = l.accept().map_err(|e| e.to_string())?;
    let wrong = opcode::RecvZc::new(types::Fd(s.as_raw_fd()), 0)
        .ifq(p.zcrx_id() + 1)
        .ioprio(abi::IORING_RECV_MULTISHOT)
        .build();
    let (res, end) = single_end(&mut ring, wrong)?;
    expect("LT22 zcrx_id + 1", -res == libc::EINVAL, res)?;
    expect(
        "LT22 is final",
        end == RecvEnd::Failed(RecvFailure::Errno(libc::EINVAL)),
        end,
    )?;
    drop(ring);
    Ok(())
}

/// LT 36: receiving twice the area with nothing returned ends the receive with ENOMEM,
/// which we map to "re-arm once chunks come back", never to a failure.
fn nodev_an_exhausted_area_is_a_rearm_not_a_failure() -> Result<(), Failed> {
    let mut ring = new_ring()?;
    let p = pool(&ring, 16, None)?;
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let addr = l.local_addr().map_err(|e| e.to_string())?;
    let writer = std::thread::spawn(move || {
        let mut c = TcpStream::connect(addr).expect("connect");
        let _ = c.write_all(&vec![7u8; 32 * 4096]);
        std::thread::sleep(Duration::from_millis(200));
    });
    let (s, _) = l.accept().map_err(|e| e.to_string())?;
    // SAFETY: the socket outlives the ring's use of it.
    unsafe {
        ring.submission()
            .push(&p.recv_zc(s.as_raw_fd(), 0).user_data(1))
    }
    .map_err(|_| "SQ full")?;
    let mut held = Vec::new();
    let end = loop {
        ring.submit_and_wait(1).map_err(|e| e.to_string())?;
        let cqes: Vec<cqueue::Entry32> = ring.completion().collect();
        let mut end = None;
        for c in cqes {
            if c.result() > 0 {
                held.push(
                    p.take(c.result(), *c.big_cqe())
                        .map_err(|e| e.to_string())?,
                );
            }
            if !cqueue::more(c.flags()) {
                end = Some(c.result());
            }
        }
        if let Some(res) = end {
            break res;
        }
    };
    expect("LT36 ENOMEM", -end == libc::ENOMEM, end)?;
    let t = RecvTracker::new(0);
    let mapped = t.on_end(end);
    expect(
        "ENOMEM re-arms",
        mapped == RecvEnd::Rearm(RearmReason::NoFreeChunk),
        mapped,
    )?;
    expect("16 chunks held", held.len() == 16, held.len())?;
    drop(held);
    drop(ring);
    writer.join().map_err(|_| "writer")?;
    Ok(())
}

/// LT 23, 39: the ring goes away with a receive armed (inline and on io-wq), and with
/// the instance still exported; nothing hangs, and the pool's memory outlives it all.
fn nodev_abnormal_exits_do_not_hang() -> Result<(), Failed> {
    for (async_wq, keep_export) in [(false, false), (true, false), (false, true), (true, true)] {
        let mut ring = new_ring()?;
        let p = pool(&ring, 16, None)?;
        let export = if keep_export {
            Some(p.export().map_err(|e| e.to_string())?)
        } else {
            None
        };
        let l = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        let mut c = TcpStream::connect(l.local_addr().map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        let (s, _) = l.accept().map_err(|e| e.to_string())?;
        let mut sqe = p.recv_zc(s.as_raw_fd(), 0);
        if async_wq {
            sqe = sqe.flags(squeue::Flags::ASYNC);
        }
        // SAFETY: the socket outlives the ring.
        unsafe { ring.submission().push(&sqe) }.map_err(|_| "SQ full")?;
        ring.submit().map_err(|e| e.to_string())?;
        // Data queued as task work that nobody runs before the ring exits.
        c.write_all(b"data nobody reaps")
            .map_err(|e| e.to_string())?;
        drop(ring);
        drop(export);
        drop(p);
        drop((c, s));
    }
    Ok(())
}

// ---- control ops (LT 24–31; 7.2 events; 7.3 areas) --------------------------------------

fn nodev_control_ops_on_wrong_rings_and_ids() -> Result<(), Failed> {
    let fresh = new_ring()?;
    let r = zcrx::sys::zcrx_ctrl(fresh.as_raw_fd(), &mut ZcrxCtrl::export(0));
    errno_is(
        "LT25 export without an instance",
        r.err().and_then(|e| e.raw_os_error()),
        &[libc::ENXIO],
    )?;
    let r = zcrx::sys::zcrx_ctrl(-1, &mut ZcrxCtrl::export(0));
    // Ring fd -1 is the "blind" register path, which only QUERY may take: EINVAL (7.3).
    errno_is(
        "LT24 export through fd -1",
        r.err().and_then(|e| e.raw_os_error()),
        &[libc::EINVAL, libc::EBADF],
    )?;
    let mut reg = ZcrxIfqReg {
        if_idx: u32::MAX,
        flags: abi::ZCRX_REG_IMPORT,
        ..Default::default()
    };
    // SAFETY: an import names no memory of ours.
    let r = unsafe { zcrx::sys::register_zcrx_ifq(fresh.as_raw_fd(), &mut reg) };
    errno_is(
        "LT26 import of fd -1",
        r.err().and_then(|e| e.raw_os_error()),
        &[libc::EBADF],
    )?;
    let ring = new_ring()?;
    let p = pool(&ring, 16, None)?;
    let r = zcrx::sys::zcrx_ctrl(ring.as_raw_fd(), &mut ZcrxCtrl::flush_rq(p.zcrx_id() + 1));
    errno_is(
        "LT30 flush of id + 1",
        r.err().and_then(|e| e.raw_os_error()),
        &[libc::ENXIO],
    )?;
    zcrx::sys::zcrx_ctrl(ring.as_raw_fd(), &mut ZcrxCtrl::flush_rq(p.zcrx_id()))
        .map_err(|e| format!("LT31 a valid flush: {e}"))?;
    drop(ring);
    drop(fresh);
    Ok(())
}

/// 7.2: an event is armed from registration; arming it again before it fires, or an
/// unknown type, is refused; our pool ignores an unknown type instead of arming it.
/// [`nodev_without_events_arming_and_event_descriptors_are_refused`] runs in its place
/// on 7.1.
fn nodev_event_arming_rules() -> Result<(), Failed> {
    let ring = new_ring()?;
    let p = pool(&ring, 16, Some(0xE7))?;
    let fd = ring.as_raw_fd();
    let r = zcrx::sys::zcrx_ctrl(
        fd,
        &mut ZcrxCtrl::arm_event(p.zcrx_id(), abi::ZCRX_EVENT_COPY),
    );
    errno_is(
        "arming an armed event",
        r.err().and_then(|e| e.raw_os_error()),
        &[libc::EINVAL],
    )?;
    let r = zcrx::sys::zcrx_ctrl(fd, &mut ZcrxCtrl::arm_event(p.zcrx_id(), 9));
    errno_is(
        "arming an unknown type",
        r.err().and_then(|e| e.raw_os_error()),
        &[libc::EINVAL],
    )?;
    expect(
        "unknown events are not re-armed",
        p.on_event(9) == ZcEvent::Unknown(9),
        (),
    )?;
    expect(
        "nothing counted",
        p.stats().event_arm_errors == 0,
        p.stats(),
    )?;
    // An import may not subscribe to events.
    let export = p.export().map_err(|e| e.to_string())?;
    let ring2 = new_ring()?;
    let mut desc = abi::ZcrxEventDesc {
        user_data: 1,
        type_mask: 1,
        ..Default::default()
    };
    let mut reg = ZcrxIfqReg {
        if_idx: export.raw_fd() as u32,
        flags: abi::ZCRX_REG_IMPORT,
        event_desc: &mut desc as *mut _ as u64,
        ..Default::default()
    };
    // SAFETY: an import names no memory of ours; the descriptor is a live local.
    let r = unsafe { zcrx::sys::register_zcrx_ifq(ring2.as_raw_fd(), &mut reg) };
    errno_is(
        "an import with events",
        r.err().and_then(|e| e.raw_os_error()),
        &[libc::EINVAL],
    )?;
    drop(ring2);
    drop(export);
    drop(ring);
    Ok(())
}

/// The fallback of [`nodev_event_arming_rules`] before 7.2: the kernel refuses an event
/// descriptor at registration (the word is still reserved) and does not know the arm
/// op, so a pool asked for events registers without them, and an event CQE handed to
/// it anyway (none can come) is counted, and so is its refused re-arm.
fn nodev_without_events_arming_and_event_descriptors_are_refused() -> Result<(), Failed> {
    let mut desc = abi::ZcrxEventDesc {
        user_data: 1,
        type_mask: 1,
        ..Default::default()
    };
    let desc_ptr = &mut desc as *mut abi::ZcrxEventDesc as u64;
    errno_is(
        "an event descriptor before 7.2",
        register_errno(|r, _, _| r.event_desc = desc_ptr)?,
        &[libc::EINVAL],
    )?;
    let ring = new_ring()?;
    let p = pool(&ring, 16, Some(0xE7))?;
    expect(
        "registered without events",
        p.event_user_data().is_none(),
        p.event_user_data(),
    )?;
    let r = zcrx::sys::zcrx_ctrl(
        ring.as_raw_fd(),
        &mut ZcrxCtrl::arm_event(p.zcrx_id(), abi::ZCRX_EVENT_COPY),
    );
    errno_is(
        "ZCRX_CTRL_ARM_EVENT before 7.2",
        r.err().and_then(|e| e.raw_os_error()),
        &[libc::EOPNOTSUPP],
    )?;
    let copy = abi::ZCRX_EVENT_COPY as i32;
    expect(
        "a COPY event is counted",
        p.on_event(copy) == ZcEvent::Copy,
        (),
    )?;
    expect("twice", p.on_event(copy) == ZcEvent::Copy, ())?;
    let s = p.stats();
    expect(
        "two COPY events, two refused re-arms",
        s.copy_events == 2 && s.event_arm_errors == 2,
        s,
    )?;
    drop(ring);
    Ok(())
}

/// 7.3: areas can be added until the instance has 1024; the next is refused with our
/// hint, and a read-only area is refused by the kernel.
/// [`nodev_without_add_area_areas_are_refused_and_the_instance_goes_on`] runs in its
/// place before 7.3.
fn nodev_area_limits() -> Result<(), Failed> {
    let ring = new_ring()?;
    let p = pool(&ring, 1, None)?;
    let ro = read_only(page())?;
    let mut area = ZcrxAreaReg {
        addr: ro.as_ptr() as u64,
        len: ro.len() as u64,
        ..Default::default()
    };
    let r = zcrx::sys::zcrx_ctrl(
        ring.as_raw_fd(),
        &mut ZcrxCtrl::add_area(p.zcrx_id(), &mut area as *mut _ as u64),
    );
    errno_is(
        "a read-only added area",
        r.err().and_then(|e| e.raw_os_error()),
        &[libc::EFAULT],
    )?;
    let mut added = 0;
    let err = loop {
        match p.add_area(page()) {
            Ok(_) => added += 1,
            Err(e) => break e,
        }
        if added > abi::ZCRX_MAX_AREAS {
            return Err("more than 1024 areas accepted".into());
        }
    };
    expect(
        "1023 added to the first",
        added == abi::ZCRX_MAX_AREAS - 1,
        added,
    )?;
    // Our pool refuses the 1025th before the kernel sees it; the kernel, asked anyway,
    // refuses it too.
    match &err {
        PoolError::InvalidConfig {
            field: "areas",
            reason,
        } if reason.contains("1024") => {}
        other => return Err(format!("the 1025th area: {other}").into()),
    }
    let extra = Mapping::new(page(), Backing::Anonymous).map_err(|e| e.to_string())?;
    let mut area = ZcrxAreaReg {
        addr: extra.as_ptr() as u64,
        len: extra.len() as u64,
        ..Default::default()
    };
    let r = zcrx::sys::zcrx_ctrl(
        ring.as_raw_fd(),
        &mut ZcrxCtrl::add_area(p.zcrx_id(), &mut area as *mut _ as u64),
    );
    errno_is(
        "the 1025th area, asked of the kernel",
        r.err().and_then(|e| e.raw_os_error()),
        &[libc::EINVAL],
    )?;
    expect(
        "every chunk counted",
        p.stats().chunks_total == 1024,
        p.stats(),
    )?;
    drop(ring);
    drop(extra);
    Ok(())
}

/// The fallback of [`nodev_area_limits`] before 7.3: our pool refuses an area before the
/// kernel sees it, naming the op and the kernel that has it; the kernel, asked
/// directly, does not know the op; the instance keeps its one area and its control ops
/// (a flush) keep working.
fn nodev_without_add_area_areas_are_refused_and_the_instance_goes_on() -> Result<(), Failed> {
    let ring = new_ring()?;
    let p = pool(&ring, 1, None)?;
    match p.add_area(page()) {
        Err(PoolError::Unsupported { what, needs })
            if what.contains("ZCRX_CTRL_ADD_AREA") && needs == "Linux 7.3" => {}
        other => return Err(format!("an area without ADD_AREA: {other:?}").into()),
    }
    let extra = Mapping::new(page(), Backing::Anonymous).map_err(|e| e.to_string())?;
    let mut area = ZcrxAreaReg {
        addr: extra.as_ptr() as u64,
        len: extra.len() as u64,
        ..Default::default()
    };
    let r = zcrx::sys::zcrx_ctrl(
        ring.as_raw_fd(),
        &mut ZcrxCtrl::add_area(p.zcrx_id(), &mut area as *mut _ as u64),
    );
    errno_is(
        "ZCRX_CTRL_ADD_AREA before 7.3",
        r.err().and_then(|e| e.raw_os_error()),
        &[libc::EOPNOTSUPP],
    )?;
    expect(
        "the kernel named no area",
        area.rq_area_token == 0,
        area.rq_area_token,
    )?;
    let s = p.stats();
    expect(
        "one chunk, no area added",
        s.chunks_total == 1 && s.areas_added == 0,
        s,
    )?;
    zcrx::sys::zcrx_ctrl(ring.as_raw_fd(), &mut ZcrxCtrl::flush_rq(p.zcrx_id()))
        .map_err(|e| format!("a flush after the refused area: {e}"))?;
    drop(ring);
    drop(extra);
    Ok(())
}

/// The test of a feature where the kernel has it, else the test of its fallback: one
/// or the other always runs, under its own name.
fn feature_or_fallback(
    has: bool,
    feature: (&'static str, Case),
    fallback: (&'static str, Case),
) -> (&'static str, Case) {
    if has {
        feature
    } else {
        fallback
    }
}

fn main() {
    let args = Arguments::from_args();
    let caps = capabilities();
    let missing = (!caps.zcrx.nodev).then(|| {
        format!(
            "kernel {} lacks ZCRX_REG_NODEV (device-less ZCRX, Linux 7.1+)",
            caps.kernel_release
        )
    });
    if let Some(r) = &missing {
        println!(
            "conformance cases not run: {r}; the kernel guest runs them (scripts/guest-tests)"
        );
    }
    let required = std::env::var_os("ZERORX_REQUIRE_NODEV").is_some();
    let cases: [(&str, Case); 9] = [
        (
            "nodev_registration_and_rounded_refill_size",
            nodev_registration_and_rounded_refill_size,
        ),
        (
            "nodev_bad_registration_arguments_get_their_errno",
            nodev_bad_registration_arguments_get_their_errno,
        ),
        (
            "nodev_our_api_refuses_bad_pools_with_named_fields",
            nodev_our_api_refuses_bad_pools_with_named_fields,
        ),
        (
            "nodev_receives_on_bad_fds_and_ids_fail_for_good",
            nodev_receives_on_bad_fds_and_ids_fail_for_good,
        ),
        (
            "nodev_an_exhausted_area_is_a_rearm_not_a_failure",
            nodev_an_exhausted_area_is_a_rearm_not_a_failure,
        ),
        (
            "nodev_abnormal_exits_do_not_hang",
            nodev_abnormal_exits_do_not_hang,
        ),
        (
            "nodev_control_ops_on_wrong_rings_and_ids",
            nodev_control_ops_on_wrong_rings_and_ids,
        ),
        feature_or_fallback(
            caps.zcrx.events,
            ("nodev_event_arming_rules", nodev_event_arming_rules),
            (
                "nodev_without_events_arming_and_event_descriptors_are_refused",
                nodev_without_events_arming_and_event_descriptors_are_refused,
            ),
        ),
        feature_or_fallback(
            caps.zcrx.add_area,
            ("nodev_area_limits", nodev_area_limits),
            (
                "nodev_without_add_area_areas_are_refused_and_the_instance_goes_on",
                nodev_without_add_area_areas_are_refused_and_the_instance_goes_on,
            ),
        ),
    ];
    let trials = cases
        .into_iter()
        .map(|(name, case)| match (&missing, required) {
            (Some(reason), true) => {
                let reason = format!("ZERORX_REQUIRE_NODEV is set but {reason}");
                Trial::test(name, move || Err(reason.into()))
            }
            (reason, _) => Trial::test(name, case).with_ignored_flag(reason.is_some()),
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
