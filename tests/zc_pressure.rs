//! A zero-copy pool the application holds, against a real kernel: a reader that keeps
//! every buffer it received from a device-less ZCRX instance (`ZCRX_REG_NODEV`, Linux
//! 7.1+) still receives every byte, the area running dry (`ENOMEM`) and the rest
//! arriving in ordinary memory beside it. The copy pool's side is `tests/pool_pressure.rs`.
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
    let name = "nodev_a_reader_keeping_every_zero_copy_buffer_receives_everything";
    let case = nodev_a_reader_keeping_every_zero_copy_buffer_receives_everything;
    libtest_mimic::run(&args, vec![common::nodev_trial(name, case, &missing)]).exit();
}
