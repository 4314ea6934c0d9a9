//! Zero-copy pool logic against an in-process fake of the kernel side (the refill
//! ring's consumer and the NIC writing into the area), the way folly tests its pool.

use super::refill::Flusher;
use super::register::{Answer, Registered};
use super::*;
use crate::abi::{ZcrxOffsets, ZcrxRqe, IORING_ZCRX_AREA_MASK};
use crate::features::ZcrxFeatures;
use crate::mem::{Backing, Mapping};
use crate::shm::fake_kernel::{nic_write, FakeRefillConsumer};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const PAGE: usize = 4096;
/// The header layout the 6.18+ kernels write back.
const OFFSETS: ZcrxOffsets = ZcrxOffsets {
    head: 0,
    tail: 4,
    rqes: 64,
    resv2: 0,
    resv: [0; 2],
};

struct Fake {
    pool: ZcPool,
    kernel: FakeRefillConsumer,
    area: *mut u8,
}

/// What the fake kernel does when the pool asks for `ZCRX_CTRL_FLUSH_RQ`.
enum FlushKind {
    /// The kernel lacks the control op (6.15–6.18).
    Absent,
    /// Count calls, consume nothing.
    Count(Arc<AtomicUsize>),
    /// Fail every call.
    Fail,
    /// Consume the whole ring and count the entries, like the real flush.
    Drain(Arc<AtomicUsize>),
}

fn fake(chunks: usize, rq_entries: u32, token: u64, nodev: bool, flush: FlushKind) -> Fake {
    let area = Mapping::new(chunks * PAGE, Backing::Anonymous).expect("area");
    let region = Mapping::new(PAGE + rq_entries as usize * 16, Backing::Anonymous).expect("region");
    // SAFETY: offsets and entry count fit the region mapped just above.
    let kernel = unsafe {
        FakeRefillConsumer::new(
            &region,
            OFFSETS.head,
            OFFSETS.tail,
            OFFSETS.rqes,
            rq_entries,
        )
    };
    let flusher: Option<Flusher> = match flush {
        FlushKind::Absent => None,
        FlushKind::Count(n) => Some(Box::new(move || {
            n.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })),
        FlushKind::Fail => Some(Box::new(|| {
            Err(std::io::Error::from_raw_os_error(libc::EINVAL))
        })),
        FlushKind::Drain(n) => {
            // SAFETY: the same region; it lives in the pool's core, which outlives
            // every flush (flushes run inside pool methods).
            let k = unsafe {
                FakeRefillConsumer::new(
                    &region,
                    OFFSETS.head,
                    OFFSETS.tail,
                    OFFSETS.rqes,
                    rq_entries,
                )
            };
            Some(Box::new(move || {
                n.fetch_add(k.consume(usize::MAX).len(), Ordering::Relaxed);
                Ok(())
            }))
        }
    };
    let area_ptr = area.as_ptr();
    let registered = Registered {
        area,
        region,
        answer: Answer {
            offsets: OFFSETS,
            rq_entries,
            zcrx_id: 3,
            token,
            chunk_size: PAGE as u32,
            stats_offset: None,
            events: None,
        },
    };
    // SAFETY: the answer describes the region built above, as the kernel's would.
    let pool = unsafe { ZcPool::assemble(registered, -1, ZcrxFeatures::default(), nodev, flusher) };
    Fake {
        pool,
        kernel,
        area: area_ptr,
    }
}

impl Fake {
    /// Receives `len` bytes at the start of each page in `pages`, then drops them all:
    /// one return per completion, in page order.
    fn return_pages(&self, pages: std::ops::Range<usize>, len: usize) {
        let bufs: Vec<_> = pages
            .map(|i| self.receive(i * PAGE, &pattern(i, len), 0))
            .collect();
        drop(bufs);
    }

    /// The NIC writes `data` at `off` and posts a completion for it.
    fn receive(&self, off: usize, data: &[u8], token: u64) -> crate::RxBuf {
        // SAFETY: `off..off+len` is inside the area and not held by any handle.
        unsafe { nic_write(&self.pool.decoder_core().area, off, data) };
        self.pool
            .take(data.len() as i32, [token | off as u64, 0])
            .expect("data completion")
    }
}

fn pattern(seed: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(31) ^ seed.wrapping_mul(7)) as u8)
        .collect()
}

#[test]
fn buffer_holds_exactly_the_completion_length() {
    let f = fake(4, 8, 0, false, FlushKind::Absent);
    let data = pattern(1, 100);
    let buf = f.receive(PAGE + 10, &data, 0);
    assert_eq!(buf.len(), 100, "never the chunk's capacity");
    assert_eq!(&buf[..], &data[..]);
    assert_eq!(buf.area_offset(), PAGE + 10);
    assert_eq!(buf.as_ptr(), f.area.wrapping_add(PAGE + 10).cast_const());
    let s = f.pool.stats();
    assert_eq!(
        (s.in_use, s.completions, s.bytes, s.zero_copy_bytes),
        (1, 1, 100, 100)
    );
}

#[test]
fn into_bytes_shares_the_chunk_without_copying_until_the_last_clone_drops() {
    let f = fake(4, 8, 0, false, FlushKind::Absent);
    let data = pattern(3, 500);
    let buf = f.receive(2 * PAGE, &data, 0);
    let ptr = buf.as_ptr();
    let bytes = buf.into_bytes();
    assert_eq!(bytes.as_ptr(), ptr, "same memory: no copy");
    let head = bytes.slice(0..10);
    let tail = bytes.slice(400..);
    drop(bytes);
    assert_eq!(&head[..], &data[..10]);
    assert_eq!(&tail[..], &data[400..]);
    f.pool.maintain();
    assert_eq!(f.kernel.queued(), 0, "still referenced by two slices");
    assert_eq!(f.pool.stats().in_use, 1);
    drop(head);
    let moved = std::thread::spawn(move || tail.len())
        .join()
        .expect("thread");
    assert_eq!(moved, 100);
    f.pool.maintain();
    assert_eq!(
        f.kernel.consume(8).len(),
        1,
        "returned once, from the last holder's thread"
    );
    assert_eq!(f.pool.stats().in_use, 0);
}

#[test]
fn bad_completions_are_rejected_with_reasons() {
    let token = 1u64 << 48;
    let f = fake(2, 8, token, false, FlushKind::Absent);
    let msg = |r: Result<crate::RxBuf, crate::PoolError>| r.expect_err("must fail").to_string();
    assert!(msg(f.pool.take(0, [token, 0])).contains("terminal"));
    assert!(msg(f.pool.take(-libc::ENOSPC, [token, 0])).contains("terminal"));
    assert!(msg(f.pool.take(10, [0, 0])).contains("area token"));
    assert!(msg(f.pool.take(10, [token | (PAGE as u64 - 5), 0])).contains("chunk boundary"));
    assert!(msg(f.pool.take(10, [token | (2 * PAGE as u64), 0])).contains("outside"));
    assert_eq!(f.pool.stats().in_use, 0, "nothing handed out");
}

#[test]
fn one_refill_entry_per_completion_with_token_and_zero_pad() {
    let token = 5u64 << 48;
    let f = fake(4, 8, token, false, FlushKind::Absent);
    let a = f.receive(0, &pattern(1, 10), token);
    let b = f.receive(2 * PAGE + 100, &pattern(2, 20), token);
    drop(a);
    drop(b);
    f.pool.maintain();
    let rqes = f.kernel.consume(64);
    assert_eq!(
        rqes,
        vec![
            ZcrxRqe {
                off: token,
                len: 10,
                pad: 0
            },
            ZcrxRqe {
                off: token | (2 * PAGE as u64 + 100),
                len: 20,
                pad: 0
            },
        ]
    );
    assert_eq!(rqes[1].off & !IORING_ZCRX_AREA_MASK, 2 * PAGE as u64 + 100);
    assert_eq!(f.pool.stats().in_use, 0);
}

#[test]
fn completions_sharing_a_chunk_each_return_once() {
    let f = fake(2, 8, 0, false, FlushKind::Absent);
    let parts: Vec<_> = (0..4)
        .map(|i| f.receive(i * 1000, &pattern(i, 900), 0))
        .collect();
    for (i, p) in parts.iter().enumerate() {
        assert_eq!(
            &p[..],
            &pattern(i, 900)[..],
            "ranges of one chunk do not overlap"
        );
    }
    drop(parts);
    f.pool.maintain();
    let offs: Vec<u64> = f.kernel.consume(64).iter().map(|r| r.off).collect();
    assert_eq!(offs, vec![0, 1000, 2000, 3000]);
}

#[test]
fn full_refill_ring_queues_pending_then_drains_in_order() {
    let f = fake(8, 2, 0, false, FlushKind::Absent);
    f.return_pages(0..5, 64);
    let s = f.pool.stats();
    assert_eq!(s.refill_full, 3, "two fit, three wait");
    assert_eq!(s.returns_pending, 3);
    f.pool.maintain();
    assert_eq!(f.kernel.queued(), 2, "never more than the ring holds");
    let mut seen = Vec::new();
    while seen.len() < 5 {
        let got = f.kernel.consume(1);
        assert!(!got.is_empty(), "pending returns must keep flowing");
        seen.extend(got.iter().map(|r| r.off / PAGE as u64));
        f.pool.maintain();
        assert!(f.kernel.queued() <= 2);
    }
    assert_eq!(seen, vec![0, 1, 2, 3, 4]);
    assert_eq!(f.pool.stats().returns_pending, 0);
}

#[test]
fn large_pending_queue_against_a_small_ring() {
    let f = fake(150, 8, 0, false, FlushKind::Absent);
    f.return_pages(0..150, 32);
    let mut returned = Vec::new();
    for _ in 0..100 {
        f.pool.maintain();
        returned.extend(f.kernel.consume(8).iter().map(|r| r.off / PAGE as u64));
        if returned.len() == 150 {
            break;
        }
    }
    assert_eq!(returned, (0..150).collect::<Vec<u64>>());
}

#[test]
fn returns_from_many_threads_all_arrive_once() {
    let f = fake(64, 64, 0, false, FlushKind::Absent);
    let notified = Arc::new(AtomicUsize::new(0));
    let n2 = notified.clone();
    assert!(f.pool.set_return_notifier(Arc::new(move || {
        n2.fetch_add(1, Ordering::Relaxed);
    })));
    assert!(
        !f.pool.set_return_notifier(Arc::new(|| {})),
        "only the first notifier is kept"
    );
    let mut per_thread: Vec<Vec<crate::RxBuf>> = (0..8).map(|_| Vec::new()).collect();
    for i in 0..64 {
        per_thread[i % 8].push(f.receive(i * PAGE, &pattern(i, 128), 0));
    }
    let handles: Vec<_> = per_thread
        .into_iter()
        .map(|bufs| {
            std::thread::spawn(move || {
                for b in &bufs {
                    assert_eq!(b.len(), 128);
                }
                drop(bufs);
            })
        })
        .collect();
    for h in handles {
        h.join().expect("dropper thread");
    }
    assert_eq!(notified.load(Ordering::Relaxed), 64);
    assert_eq!(f.pool.stats().returns_pending, 64);
    assert_eq!(f.pool.maintain(), 64);
    let mut offs: Vec<u64> = f
        .kernel
        .consume(128)
        .iter()
        .map(|r| r.off / PAGE as u64)
        .collect();
    offs.sort_unstable();
    assert_eq!(offs, (0..64).collect::<Vec<u64>>());
    let s = f.pool.stats();
    assert_eq!((s.in_use, s.returns_pending, s.remote_returns), (0, 0, 64));
}

#[test]
fn maintain_off_the_owner_thread_does_nothing() {
    let f = fake(4, 8, 0, false, FlushKind::Absent);
    let buf = f.receive(0, &pattern(0, 8), 0);
    let stats = f.pool.stats_handle();
    std::thread::spawn(move || drop(buf)).join().expect("drop");
    assert_eq!(stats.snapshot().returns_pending, 1);
    // The pool itself is not Send; a stats handle is, and cannot touch the ring.
    assert_eq!(f.kernel.queued(), 0);
    f.pool.maintain();
    assert_eq!(f.kernel.queued(), 1);
}

#[test]
fn teardown_with_buffers_outstanding_keeps_memory_until_the_last_drop() {
    let f = fake(4, 8, 0, false, FlushKind::Absent);
    let data = pattern(9, 3000);
    let buf = f.receive(PAGE, &data, 0);
    // The core owns the mappings and unmaps them when it is dropped; watching it
    // through a Weak is exact, where /proc/self/maps races with other tests' mmaps.
    let core = f.pool.core_weak();
    let Fake { pool, .. } = f;
    drop(pool);
    assert!(core.upgrade().is_some(), "a live buffer keeps the memory");
    let reader = std::thread::spawn(move || {
        assert_eq!(
            &buf[..],
            &data[..],
            "bytes stay valid after the pool is gone"
        );
        drop(buf);
    });
    reader.join().expect("reader");
    assert!(
        core.upgrade().is_none(),
        "memory released with the last buffer"
    );
}

#[test]
fn pending_returns_trigger_a_flush() {
    let flushes = Arc::new(AtomicUsize::new(0));
    let f = fake(8, 2, 0, false, FlushKind::Count(flushes.clone()));
    f.return_pages(0..2, 8);
    f.pool.maintain();
    assert_eq!(
        flushes.load(Ordering::Relaxed),
        0,
        "no flush while the ring has room"
    );
    f.return_pages(2..4, 8);
    f.pool.maintain();
    assert!(
        flushes.load(Ordering::Relaxed) >= 1,
        "returns waiting: flush"
    );
    assert!(f.pool.stats().flushes >= 1);
}

#[test]
fn device_less_pools_flush_after_every_publish_and_count_copies() {
    // In device-less mode the kernel consumes the refill ring only when flushed.
    let consumed = Arc::new(AtomicUsize::new(0));
    let f = fake(8, 8, 0, true, FlushKind::Drain(consumed.clone()));
    let buf = f.receive(0, &pattern(0, 50), 0);
    drop(buf);
    f.pool.maintain();
    assert_eq!(
        consumed.load(Ordering::Relaxed),
        1,
        "flushed right after publishing"
    );
    assert_eq!(f.kernel.queued(), 0);
    f.pool.maintain();
    assert_eq!(f.pool.stats().flushes, 1, "nothing new published: no flush");
    let s = f.pool.stats();
    assert_eq!(
        (s.copied_bytes, s.zero_copy_bytes),
        (50, 0),
        "device-less bytes are copies"
    );
}

#[test]
fn failing_flush_is_counted_not_fatal() {
    let f = fake(8, 1, 0, false, FlushKind::Fail);
    f.return_pages(0..3, 8);
    f.pool.maintain();
    let s = f.pool.stats();
    assert_eq!(s.flush_errors, 1);
    assert_eq!(s.returns_pending, 2, "returns still wait, none lost");
    assert_eq!(f.kernel.consume(8).len(), 1);
    f.pool.maintain();
    f.kernel.consume(8);
    f.pool.maintain();
    f.kernel.consume(8);
    assert_eq!(f.pool.stats().returns_pending, 0);
}

/// An export whose fd is the write end of a pipe: once every copy of it is closed the
/// read end sees end-of-file. Unlike checking the fd number, this cannot be fooled by
/// another test reusing the number.
fn export_of(f: &Fake) -> (ExportedZcrx, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two new descriptors into the array.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) };
    assert_eq!(rc, 0, "pipe2");
    // SAFETY: both descriptors are new and owned by nobody else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    (ExportedZcrx::new(write, f.pool.decoder_clone()), read)
}

/// True once every write end of the pipe is closed.
fn closed(read_end: &OwnedFd) -> bool {
    let mut b = [0u8; 1];
    // SAFETY: reads at most one byte into a local buffer.
    unsafe { libc::read(read_end.as_raw_fd(), b.as_mut_ptr().cast(), 1) == 0 }
}

#[test]
fn export_fd_is_closed_when_dropped_unimported() {
    let f = fake(2, 8, 0, false, FlushKind::Absent);
    let (exp, read_end) = export_of(&f);
    assert!(!closed(&read_end));
    drop(exp);
    assert!(
        closed(&read_end),
        "an unimported export must not keep the queue bound"
    );
}

#[test]
fn export_fd_is_closed_when_import_is_unsupported_or_refused() {
    let f = fake(2, 8, 0, false, FlushKind::Absent);
    let (exp, read_end) = export_of(&f);
    // SAFETY: the import fails before any ring uses the memory.
    let err = unsafe { exp.import(-1, &ZcrxFeatures::default()) }.expect_err("no import support");
    assert!(err.to_string().contains("6.19"), "{err}");
    assert!(closed(&read_end));

    let ring = io_uring::IoUring::new(8).expect("ring");
    let (exp, read_end) = export_of(&f);
    let features = ZcrxFeatures {
        import: true,
        ..Default::default()
    };
    // SAFETY: `ring` outlives the (failing) import.
    let err = unsafe { exp.import(ring.as_raw_fd(), &features) }
        .expect_err("ring lacks CQE32/DEFER_TASKRUN");
    assert!(matches!(err, crate::PoolError::Kernel { .. }), "{err}");
    assert!(closed(&read_end), "fd closed on the failure path too");
}

#[test]
fn export_needs_kernel_support() {
    let f = fake(2, 8, 0, false, FlushKind::Absent);
    let err = f.pool.export().expect_err("features say no export");
    assert!(matches!(
        err,
        crate::PoolError::Unsupported {
            needs: "Linux 6.19",
            ..
        }
    ));
}

#[test]
fn config_is_validated_against_features() {
    let page = crate::sys::page_size() as u32;
    let none = ZcrxFeatures::default();
    let zc = ZcrxFeatures {
        recv_zc: true,
        ..Default::default()
    };
    let dev = ZcPoolConfig::new(ZcTarget::Device {
        ifindex: 2,
        queue: 1,
    });
    assert!(matches!(
        dev.layout(&none),
        Err(crate::PoolError::Unsupported {
            needs: "Linux 6.15",
            ..
        })
    ));
    let nodev = ZcPoolConfig::new(ZcTarget::NoDev);
    assert!(matches!(
        nodev.layout(&zc),
        Err(crate::PoolError::Unsupported {
            needs: "Linux 7.1",
            ..
        })
    ));
    let bad_chunk = ZcPoolConfig {
        chunk_size: 5000,
        ..dev.clone()
    };
    assert!(matches!(
        bad_chunk.layout(&zc),
        Err(crate::PoolError::InvalidConfig {
            field: "chunk_size",
            ..
        })
    ));
    let too_many = ZcPoolConfig {
        area_bytes: 1 << 30,
        ..dev.clone()
    };
    assert!(matches!(
        too_many.layout(&zc),
        Err(crate::PoolError::InvalidConfig {
            field: "rq_entries",
            ..
        })
    ));

    let l = dev.layout(&zc).expect("valid");
    assert_eq!((l.if_idx, l.if_rxq, l.flags), (2, 1, 0));
    assert_eq!(l.rq_entries, (4 << 20) / page, "one refill entry per chunk");
    let big = ZcPoolConfig {
        chunk_size: 32768,
        ..dev.clone()
    };
    assert_eq!(
        big.layout(&zc).expect("valid").chunk_size,
        page,
        "no RX_PAGE_SIZE: page chunks"
    );
    let large = ZcrxFeatures {
        rx_page_size: true,
        ..zc.clone()
    };
    assert_eq!(big.layout(&large).expect("valid").chunk_size, 32768);
    let nodev_ok = ZcrxFeatures {
        nodev: true,
        ..large
    };
    let l = ZcPoolConfig {
        chunk_size: 32768,
        ..nodev
    }
    .layout(&nodev_ok)
    .expect("valid");
    assert_eq!(
        (l.if_idx, l.if_rxq, l.flags, l.chunk_size),
        (0, 0, crate::abi::ZCRX_REG_NODEV, page)
    );
}

#[test]
fn refill_header_is_a_page_or_what_the_kernel_asks() {
    let page = crate::sys::page_size();
    let f = ZcrxFeatures {
        rq_hdr_size: 8,
        rq_hdr_alignment: 64,
        ..Default::default()
    };
    assert_eq!(register::Layout::rq_header_bytes(&f), page);
    let grown = ZcrxFeatures {
        rq_hdr_size: page as u32 + 8,
        rq_hdr_alignment: 64,
        ..Default::default()
    };
    assert_eq!(register::Layout::rq_header_bytes(&grown), 2 * page);
}

#[test]
fn events_are_registered_only_where_the_kernel_has_them() {
    let page = crate::sys::page_size();
    let older = ZcrxFeatures {
        recv_zc: true,
        rq_hdr_size: 8,
        rq_hdr_alignment: 64,
        ..Default::default()
    };
    let with_events = ZcrxFeatures {
        events: true,
        rq_hdr_size: 128,
        ..older.clone()
    };
    let cfg = ZcPoolConfig {
        event_user_data: Some(0xE7),
        ..ZcPoolConfig::new(ZcTarget::Device {
            ifindex: 2,
            queue: 0,
        })
    };
    // Before 7.2 the descriptor's word is reserved: nothing is asked, nothing reserved.
    let l = cfg.layout(&older).expect("valid");
    assert_eq!(l.events, None);
    assert_eq!(l.stats_offset(&older), None);
    // 7.2+: the stats block goes after the refill entries, aligned, inside the region.
    let l = cfg.layout(&with_events).expect("valid");
    assert_eq!(l.events, Some(0xE7));
    let off = l.stats_offset(&with_events).expect("a stats block");
    let rqes_end = register::Layout::rq_header_bytes(&with_events) + l.rq_entries as usize * 16;
    assert!(
        off >= rqes_end && off.is_multiple_of(64),
        "{off} after {rqes_end}"
    );
    let region = l.region_bytes(&with_events);
    assert!(
        off + 16 <= region && region.is_multiple_of(page),
        "{off} in {region}"
    );
    // Without a user_data nothing is asked either.
    let quiet = ZcPoolConfig {
        event_user_data: None,
        ..cfg
    };
    assert_eq!(quiet.layout(&with_events).expect("valid").events, None);
}

#[test]
fn adding_an_area_needs_linux_7_3_and_a_size() {
    // The fake pool's features are all off, as on a kernel before 7.3.
    let f = fake(8, 8, 0, false, FlushKind::Absent);
    match f.pool.add_area(8 * PAGE) {
        Err(crate::PoolError::Unsupported { needs, .. }) => assert_eq!(needs, "Linux 7.3"),
        other => panic!("{other:?}"),
    }
    assert_eq!(f.pool.stats().chunks_total, 8, "nothing was added");
    assert_eq!(f.pool.stats().areas_added, 0);
}
