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

fn nodev_a_reader_keeping_every_zero_copy_buffer_receives_everything() -> Result<(), Failed> {
    // 16 chunks of 4 KiB in the area: a reader keeping 1 MiB holds it dry 16 times over.
    let rt = Runtime::builder()
        .threads(1)
        .receive_mode(ReceiveMode::DeviceLess { instances: 1 })
        .pool_size(64 * 1024)
        .chunk_size(4096)
        .recv_hold_limit(0)
        .build()
        .map_err(|e| e.to_string())?;
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
            let buf = match timeout(Duration::from_secs(30), s.recv()).await {
                Ok(Ok(Some(buf))) => buf,
                Ok(other) => return Err(format!("at {got}: {other:?}")),
                Err(_) => {
                    return Err(format!(
                        "no progress at {got}: the receive hung\n{}",
                        h.dump()
                    ))
                }
            };
            if buf[..] != data[got..got + buf.len()] {
                return Err(format!("wrong bytes at {got}"));
            }
            got += buf.len();
            kept.push(buf);
        }
        drop(writer.await.map_err(|e| format!("{e:?}"))?);
        let overflow: usize = kept
            .iter()
            .filter(|b| b.is_overflow())
            .map(|b| b.len())
            .sum();
        Ok((kept, overflow))
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

/// Eight streams through a 16-chunk area whose readers keep a sliding window of
/// buffers, so the area runs low and gets chunks back over and over; with `restarts`
/// (`None`: the kernel's default) the worker cancels and re-arms its zero-copy
/// receives after each shortage. Every byte must arrive, in order. Returns the
/// worker's restart count.
fn churning_streams(restarts: Option<bool>) -> Result<u64, Failed> {
    let mut b = Runtime::builder();
    b.threads(1)
        .receive_mode(ReceiveMode::DeviceLess { instances: 1 })
        .pool_size(64 * 1024)
        .chunk_size(4096)
        .recv_hold_limit(0);
    if let Some(on) = restarts {
        b.zero_copy_restarts(on);
    }
    let rt = b.build().map_err(|e| e.to_string())?;
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
                    let buf = match timeout(Duration::from_secs(30), s.recv()).await {
                        Ok(Ok(Some(buf))) => buf,
                        Ok(other) => return Err(format!("stream {i} at {got}: {other:?}")),
                        Err(_) => {
                            return Err(format!(
                                "stream {i}: no progress at {got}: the receive hung\n{}",
                                h.dump()
                            ))
                        }
                    };
                    if buf[..] != data[got..got + buf.len()] {
                        return Err(format!("stream {i}: wrong bytes at {got}"));
                    }
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
                Ok(())
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

fn nodev_receives_restart_where_the_kernel_can_leave_them_parked() -> Result<(), Failed> {
    let caps = capabilities();
    let restarts = churning_streams(None)?;
    if caps.zcrx.events {
        // Linux 7.2+ ends a receive on a dry area with ENOMEM: nothing to restart.
        check(restarts == 0, || {
            format!(
                "{restarts} restarts on kernel {}, which has zcrx events",
                caps.kernel_release
            )
        })
    } else {
        // Linux 7.1: the worker restarts receives after each shortage.
        check(restarts > 0, || {
            format!(
                "no restart on kernel {}, which lacks zcrx events",
                caps.kernel_release
            )
        })
    }
}

fn nodev_restarted_receives_lose_and_reorder_nothing() -> Result<(), Failed> {
    // Forced on, so every kernel line runs the restart path.
    let restarts = churning_streams(Some(true))?;
    check(restarts > 0, || "no receive was restarted".to_owned())?;
    // And off: the kernel's own ends only (on 7.1 this may stall; not run there).
    if capabilities().zcrx.events {
        let restarts = churning_streams(Some(false))?;
        check(restarts == 0, || format!("{restarts} restarts while off"))?;
    }
    Ok(())
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
    let cases: [(&str, Case); 3] = [
        (
            "nodev_a_reader_keeping_every_zero_copy_buffer_receives_everything",
            nodev_a_reader_keeping_every_zero_copy_buffer_receives_everything,
        ),
        (
            "nodev_receives_restart_where_the_kernel_can_leave_them_parked",
            nodev_receives_restart_where_the_kernel_can_leave_them_parked,
        ),
        (
            "nodev_restarted_receives_lose_and_reorder_nothing",
            nodev_restarted_receives_lose_and_reorder_nothing,
        ),
    ];
    let trials = cases
        .into_iter()
        .map(|(name, case)| common::nodev_trial(name, case, &missing))
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
