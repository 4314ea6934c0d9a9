//! The runtime's zero-copy receive path against a real kernel.
//!
//! - `nodev_*`: device-less ZCRX instances (`ZCRX_REG_NODEV`, Linux 7.1+) drive the
//!   whole runtime path (CQE32 rings, RECV_ZC ops, refill returns, export/import,
//!   handover) on loopback TCP. They run whenever the probe reports NODEV; otherwise
//!   they are listed as ignored and the reason is printed. Select them with
//!   `cargo test --test zc_runtime -- nodev`.
//! - `hw_*`: a ZCRX-capable NIC queue named by `ZERORX_ZCRX_IF` and
//!   `ZERORX_ZCRX_QUEUE`; ignored, with the reason, otherwise.

mod common;

use bytes::Bytes;
use common::Rng;
use libtest_mimic::{Arguments, Failed, Trial};
use std::rc::Rc;
use std::time::Duration;
use zcrx::probe::capabilities;
use zerorx::net::TcpStream;
use zerorx::runtime::{ReceiveRole, ResolvedMode, ZeroCopySharing};
use zerorx::{spawn, timeout, Builder, ReceiveMode, Runtime};

type Case = fn() -> Result<(), Failed>;

/// Fails naming the kernel and what it lacks, for a test of a newer kernel's feature.
fn kernel_has(feature: bool, lacking: &str) -> Result<(), Failed> {
    if feature {
        return Ok(());
    }
    let release = &capabilities().kernel_release;
    Err(format!("kernel {release} lacks {lacking}").into())
}

fn check(cond: bool, msg: impl FnOnce() -> String) -> Result<(), Failed> {
    if cond {
        Ok(())
    } else {
        Err(msg().into())
    }
}

async fn echo(stream: TcpStream) {
    while let Ok(Some(buf)) = stream.recv().await {
        if stream.send(buf.into_bytes()).await.is_err() {
            return;
        }
    }
}

/// `conns` echo clients on `worker` against a listener on the same worker; every byte
/// verified. Returns the bytes echoed.
fn echo_on(rt: &Runtime, worker: usize, conns: u64, len: usize) -> Result<usize, Failed> {
    let h = rt.handle().clone();
    let job = h.spawn_on_with(worker, move || async move {
        let (l, addr) = common::loopback_listener();
        spawn(async move {
            while let Ok((s, _)) = l.accept().await {
                spawn(echo(s));
            }
        });
        let joins: Vec<_> = (0..conns)
            .map(|i| {
                spawn(async move {
                    let mut rng = Rng(i * 13 + 5);
                    let data = Bytes::from((0..len).map(|_| rng.next() as u8).collect::<Vec<_>>());
                    let s = Rc::new(TcpStream::connect(addr).await.expect("connect"));
                    common::echo_verified(s, data, 3000 + i as usize * 100, &format!("conn {i}"))
                        .await
                })
            })
            .collect();
        let mut total = 0;
        for j in joins {
            total += j.await.expect("client");
        }
        total
    });
    match rt.block_on(async { timeout(Duration::from_secs(60), job).await }) {
        Ok(done) => done.map_err(|e| Failed::from(format!("echo task failed: {e:?}"))),
        // Say what every op and task was waiting on, not only that it took too long.
        Err(_) => {
            let dump = rt.block_on(async { zerorx::Handle::try_current().map(|h| h.dump()) });
            Err(format!(
                "echo did not finish in 60 s; zero-copy pools {:?}; state:\n{}",
                rt.handle().zc_pool_stats(),
                dump.map_or("no dump".into(), |d| d.to_string())
            )
            .into())
        }
    }
}

fn device_less(threads: usize, instances: usize) -> Builder {
    let mut b = Runtime::builder();
    b.threads(threads)
        .receive_mode(ReceiveMode::DeviceLess { instances })
        .pool_size(1 << 20)
        .chunk_size(4096);
    b
}

fn nodev_echo_every_byte_through_recv_zc() -> Result<(), Failed> {
    let rt = device_less(1, 1).build().map_err(|e| e.to_string())?;
    let report = rt.handle().receive_mode().clone();
    check(report.mode == ResolvedMode::ZeroCopy, || {
        format!("{report}")
    })?;
    let total = echo_on(&rt, 0, 16, 200_000)?;
    check(total == 16 * 200_000, || format!("echoed {total}"))?;
    let zc = rt.handle().zc_pool_stats()[0].ok_or("worker 0 has no zero-copy pool")?;
    // Both directions are received on this worker: the server's receives and the
    // clients' receives of the echo.
    check(zc.bytes == 2 * total as u64, || format!("{zc:?}"))?;
    check(zc.copied_bytes == zc.bytes, || {
        format!("device-less instances copy: {zc:?}")
    })?;
    check(zc.returned_to_kernel > 0, || format!("{zc:?}"))?;
    let copy = rt.handle().pool_stats()[0].ok_or("copy pool")?;
    check(copy.bytes == 0, || {
        format!("nothing went through the copy pool: {copy:?}")
    })
}

fn nodev_small_area_runs_dry_and_recovers_without_loss() -> Result<(), Failed> {
    let rt = device_less(1, 1)
        .pool_size(16 * 4096)
        .build()
        .map_err(|e| e.to_string())?;
    let total = echo_on(&rt, 0, 8, 400_000)?;
    check(total == 8 * 400_000, || format!("echoed {total}"))?;
    let m = rt.handle().metrics()[0];
    check(m.rearms.no_free_chunk > 0, || {
        format!("a 16-chunk area under 8 streams runs dry (ENOMEM): {m:?}")
    })
}

/// A 16-chunk pool under 8 streams on `worker` of `rt` (which holds up to ~40 chunks
/// at once) grows to its 32-chunk ceiling, one added area and no more, echoing every
/// byte, and ends with every chunk back.
fn grows_to_its_ceiling(rt: &Runtime, worker: usize) -> Result<(), Failed> {
    kernel_has(
        capabilities().zcrx.add_area,
        "ZCRX_CTRL_ADD_AREA (Linux 7.3+)",
    )?;
    let total = echo_on(rt, worker, 8, 400_000)?;
    check(total == 8 * 400_000, || format!("echoed {total}"))?;
    let s = rt.handle().zc_pool_stats()[0].ok_or("worker 0 owns a pool")?;
    check(
        s.areas_added == 1 && s.chunks_total == 32 && s.bytes == 2 * total as u64,
        || format!("a 16-chunk pool with a 32-chunk ceiling: {s:?}"),
    )?;
    // Returns reach the kernel on the owner's next turns.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let s = rt.handle().zc_pool_stats()[0].ok_or("pool")?;
        if s.in_use == 0 && s.returns_pending == 0 {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            return Err(format!("chunks still out 5 s after the echo: {s:?}").into());
        }
        rt.block_on(zerorx::sleep(Duration::from_millis(10)));
    }
}

fn nodev_a_pool_grows_under_a_burst_up_to_its_ceiling() -> Result<(), Failed> {
    let rt = device_less(1, 1)
        .pool_size(16 * 4096)
        .zero_copy_pool_ceiling(Some(32 * 4096))
        .build()
        .map_err(|e| e.to_string())?;
    grows_to_its_ceiling(&rt, 0)
}

fn nodev_an_importer_receives_into_areas_added_after_the_import() -> Result<(), Failed> {
    let rt = device_less(2, 1)
        .pool_size(16 * 4096)
        .zero_copy_pool_ceiling(Some(32 * 4096))
        .build()
        .map_err(|e| e.to_string())?;
    let roles = rt.handle().receive_mode().roles.clone();
    check(roles[1] == ReceiveRole::Import { owner: 0 }, || {
        format!("{roles:?}")
    })?;
    // Worker 1 imported the 16-chunk pool; its streams fill it, worker 0 adds areas,
    // and worker 1's completions name them.
    grows_to_its_ceiling(&rt, 1)
}

/// An importer's receive that ran dry (`ENOMEM`) while its reader holds every chunk
/// must take the area the owner adds, though no chunk was returned. It used to wait for
/// a return only: the owner's growth woke the importer, which saw no return and went
/// back to sleep beside 16 free chunks (1 guest run in 6 of the growth test hung).
fn nodev_an_importer_that_ran_dry_receives_into_the_area_added_meanwhile() -> Result<(), Failed> {
    kernel_has(
        capabilities().zcrx.add_area,
        "ZCRX_CTRL_ADD_AREA (Linux 7.3+)",
    )?;
    let rt = device_less(2, 1)
        .pool_size(16 * 4096)
        .zero_copy_pool_ceiling(Some(32 * 4096))
        .build()
        .map_err(|e| e.to_string())?;
    let h = rt.handle().clone();
    let job = h.spawn_on_with(1, || async {
        let (l, addr) = common::loopback_listener();
        // 24 pages: more than the first area holds, less than the ceiling.
        let data: Vec<u8> = (0..24 * 4096u32).map(|i| (i * 31 % 253) as u8).collect();
        let sent = Bytes::from(data);
        let client = {
            let sent = sent.clone();
            spawn(async move {
                let c = TcpStream::connect(addr).await.expect("connect");
                c.send(sent).await.expect("send");
                // Keep the connection open until the reader is done.
                let _ = c.recv().await;
            })
        };
        let (s, _) = l.accept().await.expect("accept");
        // Hold every buffer: nothing goes back to the pool while the reader waits.
        let mut held = Vec::new();
        let mut got = 0;
        while got < sent.len() {
            match s.recv().await {
                Ok(Some(buf)) => {
                    got += buf.len();
                    held.push(buf);
                }
                other => return Err(format!("receive ended after {got} bytes: {other:?}")),
            }
        }
        let all: Vec<u8> = held.iter().flat_map(|b| b.iter().copied()).collect();
        drop(client);
        Ok((all == sent[..], held.len()))
    });
    let (same, buffers) = rt
        .block_on(async { timeout(Duration::from_secs(30), job).await })
        .map_err(|_| "the importer never received past the first area (30 s)")?
        .map_err(|e| format!("reader task: {e:?}"))??;
    check(same, || "bytes differ from what was sent".into())?;
    let s = rt.handle().zc_pool_stats()[0].ok_or("worker 0 owns a pool")?;
    // Whether the receive ended with ENOMEM before the area came (the case that hung)
    // or the owner grew first depends on timing; either way the importer held more
    // chunks than the first area has.
    check(buffers > 16 && s.areas_added >= 1, || {
        format!("{buffers} buffers held at once: the first area ran dry and one was added: {s:?}")
    })
}

fn a_ceiling_below_the_pool_size_is_refused() -> Result<(), Failed> {
    let err = device_less(1, 1)
        .pool_size(1 << 20)
        .zero_copy_pool_ceiling(Some(1 << 19))
        .build()
        .err()
        .ok_or("a ceiling below pool_size was accepted")?;
    check(
        err.kind() == std::io::ErrorKind::InvalidInput
            && err.to_string().contains("zero_copy_pool_ceiling"),
        || format!("{err}"),
    )
}

fn nodev_import_shares_the_owners_pool() -> Result<(), Failed> {
    if !capabilities().zcrx.import {
        return Err("the kernel has NODEV but not ZCRX_REG_IMPORT".into());
    }
    let rt = device_less(2, 1).build().map_err(|e| e.to_string())?;
    let roles = rt.handle().receive_mode().roles.clone();
    check(
        roles
            == vec![
                ReceiveRole::Owner { instance: 0 },
                ReceiveRole::Import { owner: 0 },
            ],
        || format!("{roles:?}"),
    )?;
    let total = echo_on(&rt, 1, 8, 200_000)?;
    let pools = rt.handle().zc_pool_stats();
    let (owner, importer) = (pools[0].ok_or("owner")?, pools[1].ok_or("importer")?);
    check(owner.bytes >= 2 * total as u64, || {
        format!("worker 1 received into worker 0's pool: {owner:?}")
    })?;
    check(
        importer.bytes == owner.bytes || importer.bytes + 1 >= owner.bytes,
        || "the importer reports the owner's counters".into(),
    )?;
    let instances = rt.handle().zc_instances();
    let (o, i) = (
        instances[0].clone().ok_or("the owner has an instance")?,
        instances[1].clone().ok_or("the importer has an instance")?,
    );
    check(!o.imported && i.imported && o.area == i.area, || {
        format!("the importer receives into the owner's area: {o:?} / {i:?}")
    })?;
    check(rt.handle().metrics()[1].recv_handovers == 0, || {
        "no handover".into()
    })
}

fn nodev_handover_serves_the_other_worker() -> Result<(), Failed> {
    let rt = device_less(2, 1)
        .zero_copy_sharing(ZeroCopySharing::Handover)
        .build()
        .map_err(|e| e.to_string())?;
    let roles = rt.handle().receive_mode().roles.clone();
    check(roles[1] == ReceiveRole::Handover { owner: 0 }, || {
        format!("{roles:?}")
    })?;
    let total = echo_on(&rt, 1, 8, 200_000)?;
    let m = rt.handle().metrics();
    check(m[1].recv_handovers >= 16, || format!("{:?}", m[1]))?;
    let owner = rt.handle().zc_pool_stats()[0].ok_or("owner")?;
    check(owner.bytes >= 2 * total as u64, || format!("{owner:?}"))?;
    check(owner.remote_returns > 0, || {
        format!("buffers dropped on worker 1 went back to worker 0: {owner:?}")
    })
}

fn nodev_copy_events_reach_the_pool_and_are_re_armed() -> Result<(), Failed> {
    kernel_has(
        capabilities().zcrx.events,
        "zcrx events (ZCRX_FEATURE_EVENT, Linux 7.2+)",
    )?;
    let rt = device_less(1, 1).build().map_err(|e| e.to_string())?;
    // Each echo copies (device-less); a second COPY event needs the first re-armed.
    let mut events = Vec::new();
    for _ in 0..2 {
        echo_on(&rt, 0, 2, 200_000)?;
        let s = rt.handle().zc_pool_stats()[0].ok_or("worker 0 owns a pool")?;
        events.push(s.copy_events);
    }
    let s = rt.handle().zc_pool_stats()[0].ok_or("pool")?;
    check(
        events[0] >= 1
            && events[1] > events[0]
            && s.event_arm_errors == 0
            && s.kernel_copy_bytes > 0
            && s.kernel_copy_bytes <= s.bytes,
        || format!("COPY events after each echo {events:?}; {s:?}"),
    )
}

fn nodev_one_instance_per_worker() -> Result<(), Failed> {
    let rt = device_less(2, 2).build().map_err(|e| e.to_string())?;
    let roles = rt.handle().receive_mode().roles.clone();
    check(
        roles
            == vec![
                ReceiveRole::Owner { instance: 0 },
                ReceiveRole::Owner { instance: 1 },
            ],
        || format!("{roles:?}"),
    )?;
    // Each worker registered an instance of its own: two areas that do not overlap.
    let instances = rt.handle().zc_instances();
    let (a, b) = (
        instances[0].clone().ok_or("worker 0 has no instance")?,
        instances[1].clone().ok_or("worker 1 has no instance")?,
    );
    check(!a.imported && !b.imported, || format!("{a:?} / {b:?}"))?;
    check(
        a.area.end <= b.area.start || b.area.end <= a.area.start,
        || format!("the two workers' areas overlap: {a:?} / {b:?}"),
    )?;
    // And each instance carried exactly its own worker's traffic (both directions of
    // 4 echoed streams of 100,000 bytes).
    echo_on(&rt, 0, 4, 100_000)?;
    let after0: Vec<u64> = rt
        .handle()
        .zc_pool_stats()
        .iter()
        .map(|p| p.map_or(0, |p| p.bytes))
        .collect();
    echo_on(&rt, 1, 4, 100_000)?;
    let after1: Vec<u64> = rt
        .handle()
        .zc_pool_stats()
        .iter()
        .map(|p| p.map_or(0, |p| p.bytes))
        .collect();
    check(
        after0 == [800_000, 0] && after1 == [800_000, 800_000],
        || format!("bytes per pool after worker 0's echo {after0:?}, after worker 1's {after1:?}"),
    )
}

fn hw_target() -> Result<(String, u32), String> {
    let name = std::env::var("ZERORX_ZCRX_IF")
        .map_err(|_| "set ZERORX_ZCRX_IF and ZERORX_ZCRX_QUEUE".to_string())?;
    let queue = std::env::var("ZERORX_ZCRX_QUEUE")
        .ok()
        .and_then(|q| q.parse().ok())
        .ok_or("ZERORX_ZCRX_QUEUE must be a queue number")?;
    Ok((name, queue))
}

fn hw_runtime_binds_the_queue_and_keeps_loopback_on_copy() -> Result<(), Failed> {
    let (interface, queue) = hw_target()?;
    let rt = Runtime::builder()
        .threads(2)
        .receive_mode(ReceiveMode::ZeroCopy {
            interface,
            queues: vec![queue],
        })
        .build()
        .map_err(|e| e.to_string())?;
    let report = rt.handle().receive_mode().clone();
    check(report.mode == ResolvedMode::ZeroCopy, || {
        format!("{report}")
    })?;
    let zc = rt.handle().zc_pool_stats()[0].ok_or("worker 0 owns a pool")?;
    check(zc.chunks_total > 0, || format!("{zc:?}"))?;
    // Loopback never crosses the NIC queue: it must use the copy pool.
    echo_on(&rt, 0, 4, 50_000)?;
    let zc = rt.handle().zc_pool_stats()[0].ok_or("pool")?;
    let copy = rt.handle().pool_stats()[0].ok_or("copy pool")?;
    check(zc.bytes == 0 && copy.bytes > 0, || {
        format!("{zc:?} / {copy:?}")
    })
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

fn main() {
    let args = Arguments::from_args();
    let caps = capabilities();
    let nodev_reason = (!caps.zcrx.nodev).then(|| {
        format!(
            "kernel {} lacks ZCRX_REG_NODEV (device-less ZCRX, Linux 7.1+)",
            caps.kernel_release
        )
    });
    let hw_reason = hw_target().err();
    if let Some(r) = &nodev_reason {
        println!(
            "nodev_* tests not run: {r}; run them on a 7.1+ kernel with \
             `cargo test --test zc_runtime -- nodev`"
        );
    }
    if let Some(r) = &hw_reason {
        println!("hw_* tests not run: no ZCRX-capable NIC queue configured ({r})");
    }
    let nodev: [(&str, Case); 9] = [
        (
            "nodev_echo_every_byte_through_recv_zc",
            nodev_echo_every_byte_through_recv_zc,
        ),
        (
            "nodev_small_area_runs_dry_and_recovers_without_loss",
            nodev_small_area_runs_dry_and_recovers_without_loss,
        ),
        (
            "nodev_import_shares_the_owners_pool",
            nodev_import_shares_the_owners_pool,
        ),
        (
            "nodev_handover_serves_the_other_worker",
            nodev_handover_serves_the_other_worker,
        ),
        (
            "nodev_one_instance_per_worker",
            nodev_one_instance_per_worker,
        ),
        (
            "nodev_copy_events_reach_the_pool_and_are_re_armed",
            nodev_copy_events_reach_the_pool_and_are_re_armed,
        ),
        (
            "nodev_a_pool_grows_under_a_burst_up_to_its_ceiling",
            nodev_a_pool_grows_under_a_burst_up_to_its_ceiling,
        ),
        (
            "nodev_an_importer_receives_into_areas_added_after_the_import",
            nodev_an_importer_receives_into_areas_added_after_the_import,
        ),
        (
            "nodev_an_importer_that_ran_dry_receives_into_the_area_added_meanwhile",
            nodev_an_importer_that_ran_dry_receives_into_the_area_added_meanwhile,
        ),
    ];
    let hw: [(&str, Case); 1] = [(
        "hw_runtime_binds_the_queue_and_keeps_loopback_on_copy",
        hw_runtime_binds_the_queue_and_keeps_loopback_on_copy,
    )];
    let trials: Vec<Trial> = nodev
        .into_iter()
        .map(|(n, f)| nodev_trial(n, f, &nodev_reason))
        .chain(std::iter::once(Trial::test(
            "a_ceiling_below_the_pool_size_is_refused",
            a_ceiling_below_the_pool_size_is_refused,
        )))
        .chain(
            hw.into_iter()
                .map(|(n, f)| Trial::test(n, f).with_ignored_flag(hw_reason.is_some())),
        )
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
