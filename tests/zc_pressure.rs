//! A zero-copy pool the application holds, against a real kernel: a reader that keeps
//! every buffer it received from a device-less ZCRX instance (`ZCRX_REG_NODEV`, Linux
//! 7.1+) still receives every byte, the area running dry (`ENOMEM`) and the rest
//! arriving in ordinary memory beside it; and streams through an area that runs low
//! over and over lose nothing when the worker restarts their receives (what it does on
//! Linux 7.1, which can leave a receive parked on a dry area). The copy pool's side is
//! `tests/pool_pressure.rs`.
//!
//! `nodev_*` tests run where the probe reports NODEV; elsewhere they are listed as
//! ignored with the reason (failed, with `ZERORX_REQUIRE_NODEV=1`, as in the guest).

mod common;

use bytes::Bytes;
use common::Rng;
use libtest_mimic::{Arguments, Failed};
use std::time::Duration;
use zcrx::probe::capabilities;
use zerorx::runtime::ResolvedMode;
use zerorx::{spawn, timeout, ReceiveMode, Runtime};

type Case = fn() -> Result<(), Failed>;

fn check(cond: bool, msg: impl FnOnce() -> String) -> Result<(), Failed> {
    if cond {
        Ok(())
    } else {
        Err(msg().into())
    }
}

/// The next buffer of `s`, which must hold `data` from `got` on; an error names `who`
/// and the offset, and a 30 s stall adds the worker's restarts, its pool and the
/// runtime's state dump.
async fn next_checked(
    s: &zerorx::net::TcpStream,
    data: &[u8],
    got: usize,
    who: &str,
    h: &zerorx::Handle,
) -> Result<zcrx::RxBuf, String> {
    let buf = match timeout(Duration::from_secs(30), s.recv()).await {
        Ok(Ok(Some(buf))) => buf,
        Ok(other) => return Err(format!("{who} at {got}: {other:?}")),
        Err(_) => {
            return Err(format!(
                "{who}: no progress at {got}: the receive hung ({} receives restarted; \
                 pool {:?})\n{}",
                h.metrics()[0].recv_zc_restarts,
                h.zc_pool_stats()[0],
                h.dump()
            ))
        }
    };
    if buf[..] != data[got..got + buf.len()] {
        return Err(format!("{who}: wrong bytes at {got}"));
    }
    Ok(buf)
}

fn nodev_a_reader_keeping_every_zero_copy_buffer_receives_everything() -> Result<(), Failed> {
    // 16 chunks of 4 KiB in the area: a reader keeping 1 MiB holds it dry 16 times over.
    let rt = sixteen_chunk_runtime(None)?;
    let report = rt.handle().receive_mode().clone();
    check(report.mode == ResolvedMode::ZeroCopy, || {
        format!("{report}")
    })?;
    let h = rt.handle().clone();
    let total = 1 << 20;
    let mut rng = Rng(11);
    let data = Bytes::from((0..total).map(|_| rng.next() as u8).collect::<Vec<_>>());
    let result = rt.block_on(async move {
        let (c, s) = common::connected_pair().await;
        let writer = {
            let data = data.clone();
            spawn(async move {
                c.send(data).await.expect("send");
                c
            })
        };
        let mut kept = Vec::new();
        let mut got = 0;
        while got < total {
            let buf = next_checked(&s, &data, got, "the reader", &h).await?;
            got += buf.len();
            kept.push(buf);
        }
        drop(writer.await.map_err(|e| format!("{e:?}"))?);
        let overflow: usize = kept
            .iter()
            .filter(|b| b.is_overflow())
            .map(|b| b.len())
            .sum();
        Ok::<_, String>((kept, overflow))
    });
    let (kept, overflow) = result?;
    let zc = rt.handle().zc_pool_stats()[0].ok_or("worker 0 has no zero-copy pool")?;
    let m = rt.handle().metrics()[0];
    check(zc.enomem > 0 && m.rearms.no_free_chunk > 0, || {
        format!("the area ran dry: {zc:?} {m:?}")
    })?;
    check(
        m.recv_overflows > 0 && overflow >= total - 64 * 1024,
        || format!("{overflow} bytes beside the area: {m:?}"),
    )?;
    check(zc.bytes as usize + overflow >= total, || format!("{zc:?}"))?;
    drop(kept);
    let zc = rt.handle().zc_pool_stats()[0].ok_or("pool")?;
    let copy = rt.handle().pool_stats()[0].ok_or("copy pool")?;
    check(zc.in_use == 0 && copy.overflow_held == 0, || {
        format!("everything back: {zc:?} {copy:?}")
    })
}

/// One worker on a device-less instance of 16 chunks of 4 KiB (and a copy pool of
/// the same size), no hold limit; `restarts` as `Builder::zero_copy_restarts` (`None`:
/// the kernel's default).
fn sixteen_chunk_runtime(restarts: Option<bool>) -> Result<Runtime, Failed> {
    let mut b = Runtime::builder();
    b.threads(1)
        .receive_mode(ReceiveMode::DeviceLess { instances: 1 })
        .pool_size(64 * 1024)
        .chunk_size(4096)
        .recv_hold_limit(0);
    if let Some(on) = restarts {
        b.zero_copy_restarts(on);
    }
    Ok(b.build().map_err(|e| e.to_string())?)
}

/// Eight streams through a 16-chunk area whose readers keep a sliding window of
/// buffers, so the area runs low and gets chunks back over and over (and, on 7.1, the
/// worker watches its receives for parked ones). Every byte must arrive, in order.
/// Returns the worker's restart count.
fn churning_streams(restarts: Option<bool>) -> Result<u64, Failed> {
    let rt = sixteen_chunk_runtime(restarts)?;
    let report = rt.handle().receive_mode().clone();
    check(report.mode == ResolvedMode::ZeroCopy, || {
        format!("{report}")
    })?;
    let h = rt.handle().clone();
    let total = 512 * 1024;
    rt.block_on(async move {
        let mut readers = Vec::new();
        let mut writers = Vec::new();
        for i in 0..8u64 {
            let (c, s) = common::connected_pair().await;
            let mut rng = Rng(100 + i);
            let data = Bytes::from((0..total).map(|_| rng.next() as u8).collect::<Vec<_>>());
            writers.push(spawn({
                let data = data.clone();
                async move {
                    // In pieces, so each stream's data arrives over many turns.
                    for piece in data.chunks(16 * 1024) {
                        c.send(Bytes::copy_from_slice(piece)).await.expect("send");
                    }
                    c
                }
            }));
            let h = h.clone();
            readers.push(spawn(async move {
                let mut window = std::collections::VecDeque::new();
                let mut got = 0;
                while got < total {
                    let buf = next_checked(&s, &data, got, &format!("stream {i}"), &h).await?;
                    got += buf.len();
                    // Keep the last 3 buffers: 8 readers then hold more than the area.
                    window.push_back(buf);
                    if window.len() > 3 {
                        window.pop_front();
                    }
                    if got % (64 * 1024) < 4096 {
                        zerorx::yield_now().await;
                    }
                }
                Ok::<(), String>(())
            }));
        }
        for r in readers {
            r.await.map_err(|e| format!("{e:?}"))??;
        }
        for w in writers {
            drop(w.await.map_err(|e| format!("{e:?}"))?);
        }
        Ok::<(), String>(())
    })?;
    let m = rt.handle().metrics()[0];
    let zc = rt.handle().zc_pool_stats()[0].ok_or("worker 0 has no zero-copy pool")?;
    check(zc.bytes > 0, || {
        format!("zero-copy receives took part: {zc:?}")
    })?;
    Ok(m.recv_zc_restarts)
}

/// One stream of 8 MiB through a 16-chunk area whose reader keeps every pool buffer
/// until it holds the whole area, then lets all go: the area runs dry 128 times while
/// the peer still has bytes queued, where Linux 7.1 parks the receive (with restarts
/// off it hung there in 4 of 4 guest runs; the raw API's `receive_all`, the same
/// pattern, in 7 of 12). Every byte must come, in order, within 30 s of the one before.
/// Returns the worker's restart count.
fn holding_the_whole_area(restarts: Option<bool>) -> Result<u64, Failed> {
    let rt = sixteen_chunk_runtime(restarts)?;
    let h = rt.handle().clone();
    let total = 8 << 20;
    let mut rng = Rng(21);
    let data = Bytes::from((0..total).map(|_| rng.next() as u8).collect::<Vec<_>>());
    rt.block_on(async move {
        let (c, s) = common::connected_pair().await;
        let writer = {
            let data = data.clone();
            spawn(async move {
                c.send(data).await.expect("send");
                c
            })
        };
        let mut held = Vec::new();
        let mut got = 0;
        while got < total {
            let who = format!("the reader holding {} buffers", held.len());
            let buf = next_checked(&s, &data, got, &who, &h).await?;
            got += buf.len();
            // The area is held whole (or the runtime said so by receiving beside it).
            let dry = buf.is_overflow();
            held.push(buf);
            if dry || held.len() >= 16 {
                held.clear();
            }
        }
        drop(writer.await.map_err(|e| format!("{e:?}"))?);
        Ok::<(), String>(())
    })?;
    Ok(rt.handle().metrics()[0].recv_zc_restarts)
}

fn nodev_a_reader_holding_the_whole_area_in_turns_gets_every_byte() -> Result<(), Failed> {
    let caps = capabilities();
    let restarts = holding_the_whole_area(None)?;
    if caps.zcrx.events {
        // Linux 7.2+ ends a receive on a dry area with ENOMEM: nothing is restarted.
        check(restarts == 0, || {
            format!(
                "{restarts} restarts on kernel {}, which has zcrx events",
                caps.kernel_release
            )
        })
    } else {
        // Linux 7.1 parked the receive: the worker restarted it (else it would hang).
        check(restarts > 0, || {
            format!(
                "no restart on kernel {}, which lacks zcrx events",
                caps.kernel_release
            )
        })
    }
}

fn nodev_without_restarts_a_kernel_with_events_ends_dry_receives_itself() -> Result<(), Failed> {
    // Switched off, nothing is restarted. With zcrx events (7.2+) the whole-area
    // reader still gets every byte: the kernel ends each dry receive with ENOMEM. On
    // 7.1 any run that dries the area can hang (the park: the churning streams did in
    // 2 of 9 guest runs with restarts off), so there a stream that never dries it runs.
    let restarts = if capabilities().zcrx.events {
        holding_the_whole_area(Some(false))?
    } else {
        a_stream_within_the_area(Some(false))?
    };
    check(restarts == 0, || format!("{restarts} restarts while off"))
}

/// One stream of 32 KiB (half the area) whose reader drops each buffer at once: the
/// area never runs low. Returns the worker's restart count.
fn a_stream_within_the_area(restarts: Option<bool>) -> Result<u64, Failed> {
    let rt = sixteen_chunk_runtime(restarts)?;
    let h = rt.handle().clone();
    let total = 32 * 1024;
    let mut rng = Rng(31);
    let data = Bytes::from((0..total).map(|_| rng.next() as u8).collect::<Vec<_>>());
    rt.block_on(async move {
        let (c, s) = common::connected_pair().await;
        c.send(data.clone()).await.map_err(|e| e.to_string())?;
        let mut got = 0;
        while got < total {
            got += next_checked(&s, &data, got, "the reader", &h).await?.len();
        }
        Ok::<(), String>(())
    })?;
    Ok(rt.handle().metrics()[0].recv_zc_restarts)
}

fn nodev_streams_through_a_churning_area_lose_and_reorder_nothing() -> Result<(), Failed> {
    churning_streams(None).map(drop)
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
        println!("nodev_* tests not run: {r}");
    }
    let cases: [(&str, Case); 4] = [
        (
            "nodev_a_reader_holding_the_whole_area_in_turns_gets_every_byte",
            nodev_a_reader_holding_the_whole_area_in_turns_gets_every_byte,
        ),
        (
            "nodev_a_reader_keeping_every_zero_copy_buffer_receives_everything",
            nodev_a_reader_keeping_every_zero_copy_buffer_receives_everything,
        ),
        (
            "nodev_without_restarts_a_kernel_with_events_ends_dry_receives_itself",
            nodev_without_restarts_a_kernel_with_events_ends_dry_receives_itself,
        ),
        (
            "nodev_streams_through_a_churning_area_lose_and_reorder_nothing",
            nodev_streams_through_a_churning_area_lose_and_reorder_nothing,
        ),
    ];
    let trials = cases
        .into_iter()
        .map(|(name, case)| common::nodev_trial(name, case, &missing))
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
