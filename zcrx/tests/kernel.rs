//! Real-kernel tests of the zero-copy pool.
//!
//! Three groups:
//! - `zcrx_*` run everywhere: what registration does on this kernel and interface;
//! - `nodev_*` exercise the whole user-side ZCRX ABI on loopback TCP with a device-less
//!   instance (`ZCRX_REG_NODEV`, Linux 7.1+). They run whenever the probe reports NODEV
//!   and are listed as ignored, with the reason printed, otherwise. A test of a 7.2 or
//!   7.3 feature is replaced, on a kernel without it, by a test of the fallback under its
//!   own name (`nodev_without_*`). Select them with
//!   `cargo test -p zcrx --test kernel -- nodev`;
//! - `hw_*` need a ZCRX-capable NIC queue named by `ZERORX_ZCRX_IF` and
//!   `ZERORX_ZCRX_QUEUE` (and traffic steered to it); ignored, with the reason, otherwise.

use io_uring::types::{SubmitArgs, Timespec};
use io_uring::{cqueue, squeue, IoUring};
use libtest_mimic::{Arguments, Failed, Trial};
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};
use zcrx::abi::{self, IORING_ZCRX_AREA_MASK};
use zcrx::probe::capabilities;
use zcrx::{PoolError, RecvEnd, RecvTracker, RxBuf, ZcPool, ZcPoolConfig, ZcTarget, ZcrxFeatures};

type Ring = IoUring<squeue::Entry, cqueue::Entry32>;
/// One test case.
type Case = fn() -> Result<(), Failed>;

fn zcrx_ring() -> Result<Ring, Failed> {
    IoUring::<squeue::Entry, cqueue::Entry32>::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_cqsize(4096)
        .build(64)
        .map_err(|e| {
            format!("cannot create a ZCRX ring (SINGLE_ISSUER|DEFER_TASKRUN|CQE32): {e}").into()
        })
}

fn features() -> ZcrxFeatures {
    capabilities().zcrx.clone()
}

fn pat(i: u64) -> u8 {
    (i.wrapping_mul(131) ^ (i >> 12)) as u8
}

/// A loopback pair: (receiving side, writer thread sending `bytes` of the pattern).
fn stream(bytes: u64) -> (TcpStream, std::thread::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    let writer = std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).expect("connect");
        let mut i = 0;
        while i < bytes {
            let n = (bytes - i).min(100_000);
            let chunk: Vec<u8> = (i..i + n).map(pat).collect();
            s.write_all(&chunk).expect("write");
            i += n;
        }
    });
    (l.accept().expect("accept").0, writer)
}

/// The running kernel's (major, minor).
fn kernel_version() -> (u32, u32) {
    let release = &capabilities().kernel_release;
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// Whether a multishot RECV_ZC that finds its area dry always ends with `ENOMEM`. 7.1
/// does not: such a receive (when the area is found dry on a retry that new data woke)
/// may stay armed without a completion, and chunks given back later (by the reader, or
/// by the owner for an importing ring) do not wake it; only the socket's next wake-up
/// would, which never comes once the peer's window is full. Cancelling it works: it
/// ends with `ECANCELED`, and a new receive takes the queued data. On 7.1.13 this hung
/// `nodev_receive_every_byte_at_the_cqe_offset` in 7 of 12 guest runs (in none of 5 on
/// 7.2.13 or on 7.3.4), `nodev_export_import_into_a_second_ring` once, and some runs
/// then stalled at most of their next re-arms.
fn kernel_ends_every_dry_receive() -> bool {
    kernel_version() >= (7, 2)
}

/// The `user_data` of the cancellation [`receive_all`] sends a stalled receive (7.1);
/// no socket fd comes near it.
const CANCEL: u64 = 0xCA7C_E100_0000;

/// Receives one stream to EOF through RECV_ZC, verifying every byte at the offset each
/// 32-byte CQE gives. `take` decodes with the owner pool or an import; `maintain` runs
/// once per turn; event CQEs (any other `user_data`) go to `events`' pool, and fail
/// the test without one. Returns (bytes, recoverable re-arms).
///
/// `area_chunks` (0: unknown) is how many chunks the kernel can receive into: holding
/// that many, the receive must end with `ENOMEM`. A 7.2+ kernel that leaves it armed
/// for 5 s fails the test. On 7.1 (see [`kernel_ends_every_dry_receive`]) a receive
/// that stays silent that way for 100 ms, or for a second in any case (the writers of
/// these tests never pause; an importer's area can be dry with nothing held), is
/// cancelled, the chunks held given back, and the receive re-armed, as an application
/// on 7.1 must; each recovery counts as a re-arm and is printed.
// One more argument than clippy likes: the two numbers say different things, and a
// struct for them would be built once per call.
#[allow(clippy::too_many_arguments)]
fn receive_all(
    ring: &mut Ring,
    fd: i32,
    sqe: impl Fn(u32) -> squeue::Entry,
    take: impl Fn(i32, [u64; 2]) -> Result<RxBuf, PoolError>,
    maintain: impl Fn(),
    hold: usize,
    area_chunks: usize,
    events: Option<&ZcPool>,
) -> Result<(u64, u64), Failed> {
    let mut tracker = RecvTracker::new(0);
    let mut held = Vec::new();
    let mut rearms = 0;
    let push = |ring: &mut Ring, e: squeue::Entry, user_data: u64| {
        // SAFETY: the socket outlives the ring's use of it in this function; a
        // cancellation names no memory.
        unsafe { ring.submission().push(&e.user_data(user_data)) }
            .map_err(|_| Failed::from("SQ full"))
    };
    let recover_stalls = !kernel_ends_every_dry_receive();
    // Last completion of the stream or of a cancellation: a second after it, with no
    // cancellation in flight, the receive is (still) stalled.
    let mut last_cqe = Instant::now();
    let mut cancel_in_flight = false;
    // Cancellations sent since the receive was last armed, in all, and what the kernel
    // answered them (0: cancelled; ENOENT: already ended; EALREADY: running, may end).
    let mut cancels_since_arm = 0u32;
    let mut cancelled = 0u64;
    let mut cancel_results: Vec<i32> = Vec::new();
    push(ring, sqe(0), fd as u64)?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if Instant::now() > deadline {
            return Err(format!(
                "RECV_ZC stream did not finish in 60 s: {} bytes received, {rearms} re-arms, \
                 {} buffers held, {cancelled} cancellations answered {cancel_results:?}",
                tracker.received(),
                held.len()
            )
            .into());
        }
        let ts = Timespec::new().nsec(5_000_000);
        if let Err(e) = ring
            .submitter()
            .submit_with_args(1, &SubmitArgs::new().timespec(&ts))
        {
            if !matches!(
                e.raw_os_error(),
                Some(libc::ETIME | libc::EINTR | libc::EBUSY)
            ) {
                return Err(format!("io_uring_enter: {e}").into());
            }
        }
        let cqes: Vec<cqueue::Entry32> = ring.completion().collect();
        for cqe in cqes {
            let (res, flags) = (cqe.result(), cqe.flags());
            if cqe.user_data() == CANCEL {
                if !matches!(-res, 0 | libc::ENOENT | libc::EALREADY) {
                    return Err(format!("cancelling a stalled receive: {res}").into());
                }
                cancel_in_flight = false;
                cancel_results.push(res);
                last_cqe = Instant::now();
                continue;
            }
            if cqe.user_data() != fd as u64 {
                match events {
                    Some(p) if p.event_user_data() == Some(cqe.user_data()) => {
                        p.on_event(res);
                        continue;
                    }
                    _ => {
                        return Err(format!(
                            "a CQE nobody asked for: user_data {:#x} res {res}",
                            cqe.user_data()
                        )
                        .into())
                    }
                }
            }
            last_cqe = Instant::now();
            if res > 0 {
                let big = *cqe.big_cqe();
                let buf = take(res, big).map_err(|e| e.to_string())?;
                let off = (big[0] & !IORING_ZCRX_AREA_MASK) as usize;
                if buf.area_offset() != off || buf.len() != res as usize {
                    return Err(format!(
                        "buffer at {} len {} != CQE {off}/{res}",
                        buf.area_offset(),
                        buf.len()
                    )
                    .into());
                }
                for (k, &b) in buf.iter().enumerate() {
                    let i = tracker.received() + k as u64;
                    if b != pat(i) {
                        return Err(format!("byte {i} corrupted").into());
                    }
                }
                tracker.on_data(res as u32);
                held.push(buf);
                if held.len() > hold {
                    held.clear();
                }
            }
            if cqueue::more(flags) {
                continue;
            }
            match tracker.on_end(res) {
                RecvEnd::Eof => {
                    if cancelled > 0 {
                        println!(
                            "kernel {}: {cancelled} cancellations of stalled receives \
                             (answered {cancel_results:?}), each re-armed",
                            capabilities().kernel_release
                        );
                    }
                    return Ok((tracker.received(), rearms));
                }
                RecvEnd::Rearm(_) => {
                    held.clear();
                    maintain();
                    rearms += 1;
                    cancels_since_arm = 0;
                    push(ring, sqe(tracker.remaining_budget()), fd as u64)?;
                }
                // Our own cancellation of a stalled receive (7.1): it ran dry.
                RecvEnd::Cancelled if cancels_since_arm > 0 => {
                    rearms += 1;
                    cancels_since_arm = 0;
                    push(ring, sqe(tracker.remaining_budget()), fd as u64)?;
                }
                other => return Err(format!("RECV_ZC ended with {other:?}").into()),
            }
        }
        maintain();
        let dry = area_chunks > 0 && held.len() >= area_chunks;
        let silent = last_cqe.elapsed();
        if !recover_stalls {
            if dry && silent > Duration::from_secs(5) {
                return Err(format!(
                    "kernel {} left a receive armed on its dry area ({} chunks held) for \
                     {silent:?} instead of ending it with ENOMEM",
                    capabilities().kernel_release,
                    held.len()
                )
                .into());
            }
            continue;
        }
        // A cancellation that found the receive running (EALREADY) or gone (ENOENT)
        // while no end came is sent again after the same wait.
        let stalled = if dry {
            silent > Duration::from_millis(100)
        } else {
            silent > Duration::from_secs(1)
        };
        if stalled && !cancel_in_flight {
            held.clear();
            maintain();
            push(
                ring,
                io_uring::opcode::AsyncCancel::new(fd as u64).build(),
                CANCEL,
            )?;
            cancel_in_flight = true;
            cancels_since_arm += 1;
            cancelled += 1;
        }
    }
}

/// [`receive_all`] through the pool that owns the instance.
fn receive_owned(
    ring: &mut Ring,
    pool: &ZcPool,
    fd: i32,
    hold: usize,
) -> Result<(u64, u64), Failed> {
    receive_all(
        ring,
        fd,
        |b| pool.recv_zc(fd, b),
        |r, c| pool.take(r, c),
        || {
            pool.maintain();
        },
        hold,
        pool.stats().chunks_total as usize,
        Some(pool),
    )
    // What the pool saw says where a stalled receive stopped.
    .map_err(|e| format!("{}; pool {:?}", e.message().unwrap_or("?"), pool.stats()).into())
}

// ---- run everywhere ----------------------------------------------------------------

fn zcrx_registration_on_loopback_is_refused_with_a_named_reason() -> Result<(), Failed> {
    let f = features();
    if !f.recv_zc {
        let cfg = ZcPoolConfig::new(ZcTarget::Device {
            ifindex: 1,
            queue: 0,
        });
        // SAFETY: fails before anything is registered.
        let err = unsafe { ZcPool::register(-1, &f, &cfg) }.expect_err("no RECV_ZC");
        assert!(matches!(err, PoolError::Unsupported { .. }), "{err}");
        return Ok(());
    }
    let ring = zcrx_ring()?;
    let lo = capabilities()
        .interface("lo")
        .map(|i| i.ifindex)
        .unwrap_or(1);
    let cfg = ZcPoolConfig::new(ZcTarget::Device {
        ifindex: lo,
        queue: 0,
    });
    // SAFETY: the ring is dropped before any pool could be.
    let err = unsafe { ZcPool::register(ring.as_raw_fd(), &f, &cfg) }
        .expect_err("loopback has no DMA device");
    match &err {
        PoolError::Kernel { source, hint, .. } => match source.raw_os_error() {
            Some(libc::EOPNOTSUPP) => assert!(hint.contains("parent device"), "{hint}"),
            Some(libc::EPERM) => assert!(hint.contains("CAP_NET_ADMIN"), "{hint}"),
            other => return Err(format!("unexpected errno {other:?}: {err}").into()),
        },
        other => return Err(format!("expected a kernel error, got {other}").into()),
    }
    Ok(())
}

fn zcrx_registration_needs_cqe32_and_defer_taskrun() -> Result<(), Failed> {
    let f = features();
    if !f.recv_zc {
        return Ok(());
    }
    let plain = IoUring::new(8).map_err(|e| e.to_string())?;
    let cfg = ZcPoolConfig::new(ZcTarget::Device {
        ifindex: 1,
        queue: 0,
    });
    // SAFETY: the ring is dropped before any pool could be.
    let err = unsafe { ZcPool::register(plain.as_raw_fd(), &f, &cfg) }.expect_err("plain ring");
    match &err {
        PoolError::Kernel { source, .. } => {
            let e = source.raw_os_error();
            assert!(matches!(e, Some(libc::EINVAL | libc::EPERM)), "{err}");
        }
        other => return Err(format!("expected a kernel error, got {other}").into()),
    }
    Ok(())
}

fn zcrx_device_less_mode_matches_the_probe() -> Result<(), Failed> {
    let f = features();
    let cfg = ZcPoolConfig::new(ZcTarget::NoDev);
    if f.nodev {
        let ring = zcrx_ring()?;
        // SAFETY: the ring is dropped before the pool.
        let pool =
            unsafe { ZcPool::register(ring.as_raw_fd(), &f, &cfg) }.map_err(|e| e.to_string())?;
        assert!(pool.is_nodev());
        drop(ring);
    } else {
        // SAFETY: fails before anything is registered.
        let err = unsafe { ZcPool::register(-1, &f, &cfg) }.expect_err("no NODEV");
        assert!(err.to_string().contains("Linux 7.1"), "{err}");
    }
    Ok(())
}

// ---- device-less (Linux 7.1+) --------------------------------------------------------

fn nodev_pool(ring: &Ring, area_pages: usize, rq_entries: u32) -> Result<ZcPool, Failed> {
    let cfg = ZcPoolConfig {
        area_bytes: area_pages * zcrx::sys::page_size(),
        rq_entries,
        ..ZcPoolConfig::new(ZcTarget::NoDev)
    };
    // SAFETY: every caller drops the ring before the pool.
    unsafe { ZcPool::register(ring.as_raw_fd(), &features(), &cfg) }
        .map_err(|e| e.to_string().into())
}

fn nodev_registration() -> Result<(), Failed> {
    let ring = zcrx_ring()?;
    let pool = nodev_pool(&ring, 64, 0)?;
    assert_eq!(
        pool.chunk_size(),
        zcrx::sys::page_size() as u64,
        "NODEV uses page chunks"
    );
    assert_eq!(pool.stats().chunks_total, 64);
    drop(ring);
    Ok(())
}

fn nodev_receive_every_byte_at_the_cqe_offset() -> Result<(), Failed> {
    let mut ring = zcrx_ring()?;
    let pool = nodev_pool(&ring, 16, 0)?;
    // About one re-arm per 60 kB. On 7.1 a run can stall at most of them, 100 ms each
    // before `receive_all` cancels (see `kernel_ends_every_dry_receive`): 4 MiB keeps
    // that within seconds and still runs the area dry some 70 times.
    let bytes: u64 = if kernel_ends_every_dry_receive() {
        32 << 20
    } else {
        4 << 20
    };
    let (sock, writer) = stream(bytes);
    let fd = sock.as_raw_fd();
    // Holding 16 buffers (the whole area) before giving any back makes the area run
    // dry whatever the timing; returning each at once let a fast reader keep up with
    // the kernel (1 CI run in 4 under TCG saw no re-arm).
    let (n, rearms) = receive_owned(&mut ring, &pool, fd, 16)?;
    writer.join().map_err(|_| "writer")?;
    assert_eq!(n, bytes);
    let s = pool.stats();
    assert_eq!(s.copied_bytes, n, "device-less bytes are copies");
    assert!(
        rearms > 0 && s.flushes > 0,
        "a 16-page area must run dry and be flushed: {s:?}"
    );
    pool.maintain();
    assert_eq!(pool.stats().in_use, 0);
    drop(ring);
    Ok(())
}

/// Waits for the CQEs of `user_data` until one comes without `F_MORE`; returns every
/// `(res, flags)` of them, in order. Other CQEs (the armed receive's) are dropped.
fn completions_of(ring: &mut Ring, user_data: u64) -> Result<Vec<(i32, u32)>, Failed> {
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let ts = Timespec::new().nsec(5_000_000);
        let _ = ring
            .submitter()
            .submit_with_args(1, &SubmitArgs::new().timespec(&ts));
        for cqe in ring.completion().collect::<Vec<cqueue::Entry32>>() {
            if cqe.user_data() == user_data {
                got.push((cqe.result(), cqe.flags()));
                if !cqueue::more(cqe.flags()) {
                    return Ok(got);
                }
            }
        }
    }
    Err(format!("no final CQE for {user_data} in 10 s (got {got:?})").into())
}

/// What the kernel does with a ZCRX area's pages as the memory of a zero-copy send:
/// received bytes sent on from the area as they are (`SEND_ZC`), then with the area
/// registered as a fixed buffer of the same ring (`IORING_RECVSEND_FIXED_BUF`). Both
/// go out byte for byte, and each notification reports the copy loopback makes
/// (`IORING_NOTIF_USAGE_ZC_COPIED`). A device-less area is ordinary memory the kernel
/// pinned for the instance; pinning it again for the send, or registering it, is
/// allowed.
fn nodev_an_areas_pages_go_out_as_send_memory_registered_or_not() -> Result<(), Failed> {
    let mut ring = zcrx_ring()?;
    let pool = nodev_pool(&ring, 16, 0)?;
    let (sock, writer) = stream(3000);
    let fd = sock.as_raw_fd();
    // SAFETY: the socket outlives the ring's use of it (the ring is dropped first).
    unsafe {
        ring.submission()
            .push(&pool.recv_zc(fd, 0).user_data(fd as u64))
    }
    .map_err(|_| "SQ full")?;
    // The first received buffer.
    let mut buf = None;
    let deadline = Instant::now() + Duration::from_secs(10);
    while buf.is_none() && Instant::now() < deadline {
        let ts = Timespec::new().nsec(5_000_000);
        let _ = ring
            .submitter()
            .submit_with_args(1, &SubmitArgs::new().timespec(&ts));
        for cqe in ring.completion().collect::<Vec<cqueue::Entry32>>() {
            if cqe.user_data() == fd as u64 && cqe.result() > 0 && buf.is_none() {
                buf = Some(
                    pool.take(cqe.result(), *cqe.big_cqe())
                        .map_err(|e| e.to_string())?,
                );
            }
        }
    }
    let buf = buf.ok_or("nothing received in 10 s")?;
    writer.join().map_err(|_| "writer")?;
    // A sink for what is sent on.
    let l = TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    let sink = std::thread::spawn(move || {
        let (mut c, _) = l.accept().expect("accept");
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut c, &mut got).expect("read");
        got
    });
    let out = TcpStream::connect(addr)?;
    let send = |ring: &mut Ring, index: Option<u16>, user_data: u64| {
        let e = io_uring::opcode::SendZc::new(
            io_uring::types::Fd(out.as_raw_fd()),
            buf.as_ptr(),
            buf.len() as u32,
        )
        .zc_flags(abi::IORING_SEND_ZC_REPORT_USAGE)
        .buf_index(index)
        .build()
        .user_data(user_data);
        // SAFETY: `buf` (in the area, alive until the pool drops after the ring) and
        // `out` outlive the send, which ends with its notification below.
        unsafe { ring.submission().push(&e) }.map_err(|_| Failed::from("SQ full"))?;
        let cqes = completions_of(ring, user_data)?;
        match cqes[..] {
            [(res, f1), (usage, f2)]
                if res == buf.len() as i32
                    && cqueue::more(f1)
                    && f2 & abi::cqe_flags::NOTIF != 0 =>
            {
                Ok(usage as u32 & abi::IORING_NOTIF_USAGE_ZC_COPIED != 0)
            }
            _ => Err(Failed::from(format!(
                "SEND_ZC from the area (registered: {}): {cqes:?}",
                index.is_some()
            ))),
        }
    };
    let copied_plain = send(&mut ring, None, 1)?;
    // The area as a fixed buffer of this ring.
    let area = libc::iovec {
        iov_base: buf.as_ptr().wrapping_sub(buf.area_offset()) as *mut libc::c_void,
        iov_len: 16 * zcrx::sys::page_size(),
    };
    // SAFETY: the area lives until the pool drops, after the ring (which drops the
    // registration with it).
    unsafe { ring.submitter().register_buffers(&[area]) }
        .map_err(|e| format!("registering a device-less area as a fixed buffer: {e}"))?;
    let copied_registered = send(&mut ring, Some(0), 2)?;
    drop(out);
    let got = sink.join().map_err(|_| "sink")?;
    let want: Vec<u8> = buf.iter().chain(buf.iter()).copied().collect();
    if got != want {
        return Err(format!(
            "sent on {} bytes, {} arrived or they differ",
            want.len(),
            got.len()
        )
        .into());
    }
    if !(copied_plain && copied_registered) {
        return Err(format!(
            "loopback copies every zero-copy send: notifications said {copied_plain}, {copied_registered}"
        )
        .into());
    }
    drop(buf);
    drop(ring);
    Ok(())
}

/// The user_data the event tests register their event CQEs under.
const EVENTS: u64 = 0xE7E7_0000;

/// Linux 7.2+ (`ZcrxFeatures::events`); [`nodev_without_events_the_pool_counts_copies`]
/// is what runs in its place on 7.1.
fn nodev_copy_events_are_re_armed_and_the_kernel_counts_copies() -> Result<(), Failed> {
    let f = features();
    let mut ring = zcrx_ring()?;
    let cfg = ZcPoolConfig {
        area_bytes: 64 * zcrx::sys::page_size(),
        event_user_data: Some(EVENTS),
        ..ZcPoolConfig::new(ZcTarget::NoDev)
    };
    // SAFETY: the ring is dropped before the pool.
    let pool =
        unsafe { ZcPool::register(ring.as_raw_fd(), &f, &cfg) }.map_err(|e| e.to_string())?;
    if pool.event_user_data() != Some(EVENTS) {
        return Err("the kernel has events but the pool did not register them".into());
    }
    // Two streams: the first COPY event must have been re-armed for the second to
    // post one, as each type fires once per arming.
    let mut total = 0;
    for round in 0..2 {
        let (sock, writer) = stream(4 << 20);
        let (n, _) = receive_owned(&mut ring, &pool, sock.as_raw_fd(), 0)?;
        writer.join().map_err(|_| "writer")?;
        total += n;
        let s = pool.stats();
        if s.copy_events < round + 1 {
            return Err(format!("round {round}: {} COPY events: {s:?}", s.copy_events).into());
        }
    }
    let s = pool.stats();
    // Device-less: every byte is a copy. The kernel's own count leaves out bytes
    // copied from a packet's linear part, so it is bounded by, not equal to, ours.
    if !(s.copied_bytes == total
        && s.kernel_copy_count > 0
        && s.kernel_copy_bytes > 0
        && s.kernel_copy_bytes <= total
        && s.event_arm_errors == 0
        && s.alloc_fail_events == 0)
    {
        return Err(format!("after {total} bytes: {s:?}").into());
    }
    drop(ring);
    Ok(())
}

/// The fallback of [`nodev_copy_events_are_re_armed_and_the_kernel_counts_copies`] on a
/// kernel without zcrx events (7.1): a pool that asks for events registers without
/// them (an `event_desc` would be refused), posts no event CQE, and its own count of
/// copied bytes is the only one; the kernel's stay at zero. Re-arming is refused with
/// the kernel's errno for an unknown control op.
fn nodev_without_events_the_pool_counts_copies() -> Result<(), Failed> {
    let f = features();
    let mut ring = zcrx_ring()?;
    let cfg = ZcPoolConfig {
        area_bytes: 64 * zcrx::sys::page_size(),
        event_user_data: Some(EVENTS),
        ..ZcPoolConfig::new(ZcTarget::NoDev)
    };
    // SAFETY: the ring is dropped before the pool.
    let pool =
        unsafe { ZcPool::register(ring.as_raw_fd(), &f, &cfg) }.map_err(|e| e.to_string())?;
    if pool.event_user_data().is_some() {
        return Err("the kernel lacks events but the pool says it registered them".into());
    }
    let mut total = 0;
    for _ in 0..2 {
        let (sock, writer) = stream(4 << 20);
        // With no event user_data, receive_owned fails on any CQE that is not the
        // stream's: an event posted anyway would fail the test here.
        let (n, _) = receive_owned(&mut ring, &pool, sock.as_raw_fd(), 0)?;
        writer.join().map_err(|_| "writer")?;
        total += n;
    }
    let s = pool.stats();
    if !(total == 2 * (4 << 20)
        && s.copied_bytes == total
        && s.bytes == total
        && s.copy_events == 0
        && s.alloc_fail_events == 0
        && s.kernel_copy_count == 0
        && s.kernel_copy_bytes == 0
        && s.event_arm_errors == 0)
    {
        return Err(format!("after {total} bytes: {s:?}").into());
    }
    // Asked directly, the kernel does not know the op.
    let r = zcrx::sys::zcrx_ctrl(
        ring.as_raw_fd(),
        &mut abi::ZcrxCtrl::arm_event(pool.zcrx_id(), abi::ZCRX_EVENT_COPY),
    );
    match r.as_ref().map_err(|e| e.raw_os_error()) {
        Err(Some(libc::EOPNOTSUPP)) => {}
        other => return Err(format!("ZCRX_CTRL_ARM_EVENT without events: {other:?}").into()),
    }
    drop(ring);
    Ok(())
}

/// Linux 7.3+ (`ZcrxFeatures::add_area`); [`nodev_without_add_area_a_burst_stays_in_the_first_area`]
/// is what runs in its place before.
fn nodev_an_added_area_takes_a_burst_without_losing_a_byte() -> Result<(), Failed> {
    let mut ring = zcrx_ring()?;
    let page = zcrx::sys::page_size();
    let pool = nodev_pool(&ring, 16, 64)?;
    match pool.add_area(0) {
        Err(PoolError::InvalidConfig { .. }) => {}
        other => return Err(format!("a 0-byte area: {other:?}").into()),
    }
    let chunks = pool.add_area(32 * page).map_err(|e| e.to_string())?;
    if chunks != 48 || pool.stats().areas_added != 1 {
        return Err(format!(
            "after adding 32 pages to 16: {chunks} chunks, {:?}",
            pool.stats()
        )
        .into());
    }
    // Holding 40 buffers at a time needs more than the first area's 16 chunks, so the
    // kernel must receive into the added one; every byte is checked where its CQE says.
    let areas = std::cell::Cell::new(0u64);
    let (sock, writer) = stream(8 << 20);
    let fd = sock.as_raw_fd();
    let (n, _) = receive_all(
        &mut ring,
        fd,
        |b| pool.recv_zc(fd, b),
        |r, c| {
            areas.set(areas.get() | 1 << (c[0] >> abi::IORING_ZCRX_AREA_SHIFT).min(63));
            pool.take(r, c)
        },
        || {
            pool.maintain();
        },
        40,
        pool.stats().chunks_total as usize,
        Some(&pool),
    )?;
    writer.join().map_err(|_| "writer")?;
    if n != 8 << 20 || areas.get() != 0b11 {
        return Err(format!("{n} bytes; areas seen (bit per id) {:#b}", areas.get()).into());
    }
    pool.maintain();
    let s = pool.stats();
    if s.in_use != 0 || s.chunks_total != 48 {
        return Err(format!("every chunk back in 48: {s:?}").into());
    }
    drop(ring);
    Ok(())
}

/// The fallback of [`nodev_an_added_area_takes_a_burst_without_losing_a_byte`] on a
/// kernel without `ZCRX_CTRL_ADD_AREA` (7.1, 7.2): the pool refuses to grow, naming the
/// op and the kernel that has it, before asking the kernel (which, asked directly,
/// refuses the op); a 4 MiB burst, held 40 buffers at a time, then runs the 16-chunk
/// area dry, waits for returns, and loses no byte, every completion naming the first area.
fn nodev_without_add_area_a_burst_stays_in_the_first_area() -> Result<(), Failed> {
    let mut ring = zcrx_ring()?;
    let page = zcrx::sys::page_size();
    let pool = nodev_pool(&ring, 16, 64)?;
    match pool.add_area(32 * page) {
        Err(PoolError::Unsupported { what, needs })
            if what.contains("ZCRX_CTRL_ADD_AREA") && needs == "Linux 7.3" => {}
        other => return Err(format!("adding 32 pages without ADD_AREA: {other:?}").into()),
    }
    let extra =
        zcrx::mem::Mapping::new(32 * page, zcrx::Backing::Anonymous).map_err(|e| e.to_string())?;
    let mut area = abi::ZcrxAreaReg {
        addr: extra.as_ptr() as u64,
        len: extra.len() as u64,
        ..Default::default()
    };
    let r = zcrx::sys::zcrx_ctrl(
        ring.as_raw_fd(),
        &mut abi::ZcrxCtrl::add_area(pool.zcrx_id(), &mut area as *mut _ as u64),
    );
    match r.as_ref().map_err(|e| e.raw_os_error()) {
        Err(Some(libc::EOPNOTSUPP)) => {}
        other => return Err(format!("ZCRX_CTRL_ADD_AREA asked directly: {other:?}").into()),
    }
    let s = pool.stats();
    if s.chunks_total != 16 || s.areas_added != 0 {
        return Err(format!("a refused area changed the pool: {s:?}").into());
    }
    let areas = std::cell::Cell::new(0u64);
    let (sock, writer) = stream(4 << 20);
    let fd = sock.as_raw_fd();
    let (n, rearms) = receive_all(
        &mut ring,
        fd,
        |b| pool.recv_zc(fd, b),
        |r, c| {
            areas.set(areas.get() | 1 << (c[0] >> abi::IORING_ZCRX_AREA_SHIFT).min(63));
            pool.take(r, c)
        },
        || {
            pool.maintain();
        },
        40,
        pool.stats().chunks_total as usize,
        Some(&pool),
    )?;
    writer.join().map_err(|_| "writer")?;
    // Holding 40 buffers of a 16-chunk area, the receive must end dry (ENOMEM) and be
    // re-armed after the held ones go back.
    if n != 4 << 20 || areas.get() != 0b1 || rearms == 0 {
        return Err(format!(
            "{n} bytes; areas seen (bit per id) {:#b}; {rearms} re-arms",
            areas.get()
        )
        .into());
    }
    pool.maintain();
    let s = pool.stats();
    if s.in_use != 0 || s.chunks_total != 16 || s.areas_added != 0 {
        return Err(format!("every chunk back in 16: {s:?}").into());
    }
    drop(ring);
    drop(extra);
    Ok(())
}

fn nodev_without_events_no_event_is_posted() -> Result<(), Failed> {
    let mut ring = zcrx_ring()?;
    let pool = nodev_pool(&ring, 64, 0)?;
    assert_eq!(pool.event_user_data(), None);
    let (sock, writer) = stream(1 << 20);
    // receive_owned fails on any CQE that is not the stream's.
    let (n, _) = receive_owned(&mut ring, &pool, sock.as_raw_fd(), 0)?;
    writer.join().map_err(|_| "writer")?;
    let s = pool.stats();
    if n != 1 << 20 || s.copy_events != 0 || s.kernel_copy_count != 0 {
        return Err(format!("{s:?}").into());
    }
    drop(ring);
    Ok(())
}

fn nodev_refill_ring_smaller_than_the_area_with_lazy_returns() -> Result<(), Failed> {
    let mut ring = zcrx_ring()?;
    let pool = nodev_pool(&ring, 64, 16)?;
    let (sock, writer) = stream(8 << 20);
    let fd = sock.as_raw_fd();
    let (n, _) = receive_owned(&mut ring, &pool, fd, 40)?;
    writer.join().map_err(|_| "writer")?;
    assert_eq!(n, 8 << 20);
    assert!(
        pool.stats().refill_full > 0,
        "40 held buffers overflow a 16-entry ring"
    );
    drop(ring);
    Ok(())
}

fn nodev_export_import_into_a_second_ring() -> Result<(), Failed> {
    let f = features();
    if !(f.export && f.import) {
        return Err("kernel reports NODEV without export/import".into());
    }
    let ring = zcrx_ring()?;
    let pool = nodev_pool(&ring, 64, 0)?;
    let exported = pool.export().map_err(|e| e.to_string())?;
    let raw = exported.raw_fd();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let done2 = done.clone();
    let importer = std::thread::spawn(move || -> Result<u64, String> {
        let mut ring2 = zcrx_ring().map_err(|e| format!("{e:?}"))?;
        // SAFETY: ring2 is dropped before the import.
        let import = unsafe { exported.import(ring2.as_raw_fd(), &features()) }
            .map_err(|e| e.to_string())?;
        // Another test may reuse the number at once; what matters is that it no longer
        // names the exported instance.
        let target = std::fs::read_link(format!("/proc/self/fd/{raw}")).unwrap_or_default();
        if target.to_string_lossy().contains("zcrx") {
            return Err("export fd still open after import".into());
        }
        let (sock, writer) = stream(4 << 20);
        let fd = sock.as_raw_fd();
        let r = receive_all(
            &mut ring2,
            fd,
            |b| import.recv_zc(fd, b),
            |r, c| import.take(r, c),
            || {},
            0,
            0,
            None,
        )
        .map_err(|e| format!("{e:?}"))?;
        writer.join().map_err(|_| "writer")?;
        drop(ring2);
        done2.store(true, std::sync::atomic::Ordering::Release);
        Ok(r.0)
    });
    // The owner keeps returning the importer's chunks until it is done.
    while !done.load(std::sync::atomic::Ordering::Acquire) && !importer.is_finished() {
        pool.maintain();
        std::thread::sleep(Duration::from_millis(1));
    }
    let got = importer.join().map_err(|_| "importer panicked")??;
    assert_eq!(got, 4 << 20);
    // The original ring keeps working afterwards.
    let mut ring = ring;
    let (sock, writer) = stream(1 << 20);
    let fd = sock.as_raw_fd();
    let (n, _) = receive_owned(&mut ring, &pool, fd, 0)?;
    writer.join().map_err(|_| "writer")?;
    assert_eq!(n, 1 << 20);
    drop(ring);
    Ok(())
}

fn nodev_teardown_with_buffers_outstanding() -> Result<(), Failed> {
    let mut ring = zcrx_ring()?;
    let pool = nodev_pool(&ring, 64, 0)?;
    let (sock, writer) = stream(64 * 1024);
    let fd = sock.as_raw_fd();
    // SAFETY: the socket outlives the ring.
    unsafe { ring.submission().push(&pool.recv_zc(fd, 0)) }.map_err(|_| "SQ full")?;
    let mut kept = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while kept.iter().map(|b: &RxBuf| b.len()).sum::<usize>() < 64 * 1024
        && Instant::now() < deadline
    {
        ring.submit_and_wait(1).map_err(|e| e.to_string())?;
        let cqes: Vec<cqueue::Entry32> = ring.completion().collect();
        for c in cqes.into_iter().filter(|c| c.result() > 0) {
            kept.push(
                pool.take(c.result(), *c.big_cqe())
                    .map_err(|e| e.to_string())?,
            );
        }
    }
    writer.join().map_err(|_| "writer")?;
    drop(ring);
    drop(pool);
    let mut i = 0u64;
    for b in &kept {
        for &x in b.iter() {
            assert_eq!(x, pat(i), "byte {i} after teardown");
            i += 1;
        }
    }
    std::thread::spawn(move || drop(kept))
        .join()
        .map_err(|_| "drop thread")?;
    Ok(())
}

fn nodev_ring_exit_with_an_armed_request() -> Result<(), Failed> {
    let mut ring = zcrx_ring()?;
    let pool = nodev_pool(&ring, 16, 0)?;
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let client = TcpStream::connect(l.local_addr().map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let (server, _) = l.accept().map_err(|e| e.to_string())?;
    // SAFETY: the socket outlives the ring.
    unsafe { ring.submission().push(&pool.recv_zc(server.as_raw_fd(), 0)) }
        .map_err(|_| "SQ full")?;
    ring.submit().map_err(|e| e.to_string())?;
    drop(ring);
    drop(pool);
    drop(client);
    Ok(())
}

// ---- hardware ---------------------------------------------------------------------------

fn hw_target() -> Result<(u32, u32), String> {
    let name = std::env::var("ZERORX_ZCRX_IF")
        .map_err(|_| "set ZERORX_ZCRX_IF and ZERORX_ZCRX_QUEUE".to_string())?;
    let queue = std::env::var("ZERORX_ZCRX_QUEUE")
        .ok()
        .and_then(|q| q.parse().ok())
        .ok_or("ZERORX_ZCRX_QUEUE must be a queue number")?;
    let ifindex = capabilities()
        .interface(&name)
        .map(|i| i.ifindex)
        .ok_or(format!("no interface {name}"))?;
    Ok((ifindex, queue))
}

fn hw_register_and_export_a_device_queue() -> Result<(), Failed> {
    let (ifindex, queue) = hw_target()?;
    let ring = zcrx_ring()?;
    let cfg = ZcPoolConfig {
        chunk_size: 32 * 1024,
        ..ZcPoolConfig::new(ZcTarget::Device { ifindex, queue })
    };
    // SAFETY: the ring is dropped before the pool.
    let pool = unsafe { ZcPool::register(ring.as_raw_fd(), &features(), &cfg) }
        .map_err(|e| e.to_string())?;
    assert!(!pool.is_nodev());
    if features().export {
        let exp = pool.export().map_err(|e| e.to_string())?;
        drop(exp);
    }
    drop(ring);
    Ok(())
}

/// A nodev test: listed as ignored, with the reason printed, where NODEV is missing,
/// except under `ZERORX_REQUIRE_NODEV` (set by CI's kernel guest), where it fails with
/// the reason instead.
fn nodev_trial(name: &str, case: Case, missing: &Option<String>) -> Trial {
    match missing {
        Some(reason) if std::env::var_os("ZERORX_REQUIRE_NODEV").is_some() => {
            let reason = format!("ZERORX_REQUIRE_NODEV is set but {reason}");
            Trial::test(name, move || Err(reason.into()))
        }
        _ => Trial::test(name, case).with_ignored_flag(missing.is_some()),
    }
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
    let f = features();
    let nodev_reason = (!f.nodev).then(|| {
        format!(
            "kernel {} lacks ZCRX_REG_NODEV (device-less ZCRX, Linux 7.1+)",
            capabilities().kernel_release
        )
    });
    let hw_reason = hw_target().err();
    if let Some(r) = &nodev_reason {
        println!("nodev_* tests not run: {r}; run them on a 7.1+ kernel with `cargo test -p zcrx --test kernel -- nodev`");
    }
    if let Some(r) = &hw_reason {
        println!("hw_* tests not run: no ZCRX-capable NIC queue configured ({r})");
    }
    let everywhere: [(&str, Case); 3] = [
        (
            "zcrx_registration_on_loopback_is_refused_with_a_named_reason",
            zcrx_registration_on_loopback_is_refused_with_a_named_reason,
        ),
        (
            "zcrx_registration_needs_cqe32_and_defer_taskrun",
            zcrx_registration_needs_cqe32_and_defer_taskrun,
        ),
        (
            "zcrx_device_less_mode_matches_the_probe",
            zcrx_device_less_mode_matches_the_probe,
        ),
    ];
    let nodev: [(&str, Case); 10] = [
        ("nodev_registration", nodev_registration),
        (
            "nodev_an_areas_pages_go_out_as_send_memory_registered_or_not",
            nodev_an_areas_pages_go_out_as_send_memory_registered_or_not,
        ),
        feature_or_fallback(
            f.events,
            (
                "nodev_copy_events_are_re_armed_and_the_kernel_counts_copies",
                nodev_copy_events_are_re_armed_and_the_kernel_counts_copies,
            ),
            (
                "nodev_without_events_the_pool_counts_copies",
                nodev_without_events_the_pool_counts_copies,
            ),
        ),
        (
            "nodev_without_events_no_event_is_posted",
            nodev_without_events_no_event_is_posted,
        ),
        feature_or_fallback(
            f.add_area,
            (
                "nodev_an_added_area_takes_a_burst_without_losing_a_byte",
                nodev_an_added_area_takes_a_burst_without_losing_a_byte,
            ),
            (
                "nodev_without_add_area_a_burst_stays_in_the_first_area",
                nodev_without_add_area_a_burst_stays_in_the_first_area,
            ),
        ),
        (
            "nodev_receive_every_byte_at_the_cqe_offset",
            nodev_receive_every_byte_at_the_cqe_offset,
        ),
        (
            "nodev_refill_ring_smaller_than_the_area_with_lazy_returns",
            nodev_refill_ring_smaller_than_the_area_with_lazy_returns,
        ),
        (
            "nodev_export_import_into_a_second_ring",
            nodev_export_import_into_a_second_ring,
        ),
        (
            "nodev_teardown_with_buffers_outstanding",
            nodev_teardown_with_buffers_outstanding,
        ),
        (
            "nodev_ring_exit_with_an_armed_request",
            nodev_ring_exit_with_an_armed_request,
        ),
    ];
    let hw: [(&str, Case); 1] = [(
        "hw_register_and_export_a_device_queue",
        hw_register_and_export_a_device_queue,
    )];
    let mut trials: Vec<Trial> = everywhere
        .into_iter()
        .map(|(n, f)| Trial::test(n, f))
        .collect();
    trials.extend(
        nodev
            .into_iter()
            .map(|(n, f)| nodev_trial(n, f, &nodev_reason)),
    );
    trials.extend(
        hw.into_iter()
            .map(|(n, f)| Trial::test(n, f).with_ignored_flag(hw_reason.is_some())),
    );
    libtest_mimic::run(&args, trials).exit();
}
