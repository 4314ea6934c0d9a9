//! The receive mode against the real kernel probe: `Auto` resolves and logs once,
//! `ZeroCopy` on a queue the probe refuses fails with the probe's named reason and fix,
//! `DeviceLess` needs `ZCRX_REG_NODEV`, and the pool sizing options.

use std::sync::{Arc, Mutex};
use zcrx::probe::{capabilities, Reason};
use zerorx::runtime::{ResolvedMode, ZeroCopyUnavailable};
use zerorx::{ReceiveMode, Runtime};

fn unavailable(e: &std::io::Error) -> &ZeroCopyUnavailable {
    e.get_ref()
        .and_then(|e| e.downcast_ref::<ZeroCopyUnavailable>())
        .unwrap_or_else(|| panic!("not a ZeroCopyUnavailable: {e}"))
}

/// A thread's events.
type Events = Vec<(std::thread::ThreadId, tracing::Level, String)>;

/// Records the level, fields and thread of every event. Installed as the global
/// default (a thread-local one races with callsite interest caching when other tests
/// log from other threads); tests filter by their own thread.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Events>>);

fn recorder() -> &'static Recorder {
    static REC: std::sync::OnceLock<Recorder> = std::sync::OnceLock::new();
    REC.get_or_init(|| {
        let rec = Recorder::default();
        tracing::subscriber::set_global_default(rec.clone()).expect("first subscriber");
        rec
    })
}

fn events_of_this_thread() -> Vec<(tracing::Level, String)> {
    let me = std::thread::current().id();
    recorder()
        .0
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter(|(t, _, _)| *t == me)
        .map(|(_, l, m)| (*l, m.clone()))
        .collect()
}

struct Fields(String);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!("{}={:?} ", field.name(), value));
    }
}

impl tracing::Subscriber for Recorder {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut f = Fields(String::new());
        event.record(&mut f);
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push((
            std::thread::current().id(),
            *event.metadata().level(),
            f.0,
        ));
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn auto_resolves_with_the_probe_reason_and_logs_it_once() {
    recorder();
    let rt = Runtime::builder().threads(2).build().expect("runtime");
    let caps = capabilities();
    let report = rt.handle().receive_mode().clone();
    assert_eq!(report.requested, ReceiveMode::Auto);
    assert_eq!(report.roles.len(), 2);
    assert!(report.reason.starts_with("auto: "), "{}", report.reason);
    match caps.receive_mode.mode {
        ResolvedMode::Copy => {
            assert_eq!(report.mode, ResolvedMode::Copy);
            assert!(
                report.reason.contains(&caps.receive_mode.reason),
                "the probe's reason is carried: {}",
                report.reason
            );
        }
        // A machine with a ZCRX-capable queue: zero-copy, or copy with the reason the
        // workers could not attach it.
        ResolvedMode::ZeroCopy => assert!(
            report.mode == ResolvedMode::ZeroCopy || report.reason.contains("could not attach"),
            "{report}"
        ),
    }
    let logged: Vec<_> = events_of_this_thread()
        .into_iter()
        .filter(|(_, msg)| msg.contains("zerorx receive mode"))
        .collect();
    assert_eq!(logged.len(), 1, "logged once: {logged:?}");
    assert_eq!(logged[0].0, tracing::Level::INFO);
    assert!(
        logged[0].1.contains(&report.reason),
        "the log line names the reason: {}",
        logged[0].1
    );
    // Readable from any thread.
    let h = rt.handle().clone();
    let seen = std::thread::spawn(move || h.receive_mode().clone())
        .join()
        .expect("thread");
    assert_eq!(seen, report);
}

#[test]
fn copy_mode_is_reported_as_requested() {
    let rt = Runtime::builder()
        .threads(1)
        .receive_mode(ReceiveMode::Copy)
        .build()
        .expect("runtime");
    let r = rt.handle().receive_mode();
    assert_eq!(r.mode, ResolvedMode::Copy);
    assert_eq!(r.reason, "copy mode was requested");
    assert_eq!(r.roles, vec![zerorx::runtime::ReceiveRole::Copy]);
    assert_eq!(r.to_string(), "copy (copy mode was requested)");
}

#[test]
fn zero_copy_on_loopback_fails_with_no_parent_device() {
    let e = Runtime::builder()
        .threads(1)
        .receive_mode(ReceiveMode::ZeroCopy {
            interface: "lo".into(),
            queues: vec![0],
        })
        .build()
        .expect_err("loopback cannot bind a ZCRX queue");
    assert_eq!(e.kind(), std::io::ErrorKind::Unsupported);
    let u = unavailable(&e);
    assert_eq!(u.target(), "lo queue 0");
    let msg = e.to_string();
    if capabilities().zcrx_in_kernel == Some(false) {
        assert_eq!(u.reason(), &Reason::KernelWithoutZcrx, "{msg}");
    } else {
        assert_eq!(u.reason(), &Reason::NoParentDevice, "{msg}");
        assert!(msg.contains("no parent (DMA) device (EOPNOTSUPP)"), "{msg}");
        assert!(msg.contains("ZCRX_REG_NODEV"), "the fix is named: {msg}");
    }
    assert!(msg.contains("fix: "), "{msg}");
}

#[test]
fn zero_copy_on_every_refused_interface_fails_with_the_probes_reason() {
    let caps = capabilities();
    let refused: Vec<_> = caps
        .interfaces
        .iter()
        .filter_map(|i| i.queue0.reason().map(|r| (i.name.clone(), r.clone())))
        .collect();
    assert!(
        !refused.is_empty() || caps.interfaces.iter().all(|i| i.queue0.is_possible()),
        "the probe judged every interface"
    );
    for (name, reason) in refused {
        let e = Runtime::builder()
            .threads(1)
            .receive_mode(ReceiveMode::ZeroCopy {
                interface: name.clone(),
                queues: vec![0],
            })
            .build()
            .expect_err("refused by the probe");
        let u = unavailable(&e);
        assert_eq!(u.reason(), &reason, "{name}: {e}");
        assert_eq!(u.fix(), reason.fix());
        assert!(e.to_string().contains(&format!("{name} queue 0")), "{e}");
        if name == "eth0" {
            if let Some(driver) = caps.interface("eth0").and_then(|i| i.driver.clone()) {
                if driver == "virtio_net" {
                    assert_eq!(u.reason().name(), "DriverLacksQueueManagement");
                    assert!(e.to_string().contains("virtio_net"), "{e}");
                    assert!(e.to_string().contains("EOPNOTSUPP"), "{e}");
                }
            }
        }
    }
}

#[test]
fn zero_copy_on_a_missing_interface_or_bad_queue_list_fails_clearly() {
    let e = Runtime::builder()
        .threads(1)
        .receive_mode(ReceiveMode::ZeroCopy {
            interface: "zrx-nope0".into(),
            queues: vec![0],
        })
        .build()
        .expect_err("no such interface");
    assert_eq!(
        unavailable(&e).reason(),
        &Reason::NoSuchInterface {
            interface: "zrx-nope0".into()
        }
    );
    let e = Runtime::builder()
        .threads(1)
        .receive_mode(ReceiveMode::ZeroCopy {
            interface: "lo".into(),
            queues: vec![0, 1],
        })
        .build()
        .expect_err("two queues, one worker");
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert!(
        e.to_string()
            .contains("2 queues but the runtime has 1 workers"),
        "{e}"
    );
}

#[test]
fn device_less_needs_linux_7_1() {
    let built = Runtime::builder()
        .threads(2)
        .receive_mode(ReceiveMode::DeviceLess { instances: 1 })
        .build();
    if capabilities().zcrx.nodev {
        let rt = built.expect("NODEV is available");
        assert_eq!(rt.handle().receive_mode().mode, ResolvedMode::ZeroCopy);
    } else {
        let e = built.expect_err("no NODEV on this kernel");
        assert_eq!(e.kind(), std::io::ErrorKind::Unsupported);
        let u = unavailable(&e);
        assert_eq!(u.reason().name(), "KernelTooOld");
        assert!(e.to_string().contains("Linux 7.1"), "{e}");
    }
}

#[test]
fn pool_size_and_chunk_size_size_the_copy_pool() {
    let mut b = Runtime::builder();
    let c = b.copy_pool_config().expect("default").expect("pool");
    assert_eq!((c.buffers, c.buffer_size), (64, 64 * 1024), "4 MiB default");
    b.pool_size(1 << 20).chunk_size(4096);
    let c = b.copy_pool_config().expect("sized").expect("pool");
    assert_eq!((c.buffers, c.buffer_size), (256, 4096));
    // Rounded down to a power of two (a provided-buffer ring's size).
    b.pool_size(100_000);
    assert_eq!(
        b.copy_pool_config().expect("sized").expect("pool").buffers,
        16
    );
    b.pool_size(100);
    let e = b.copy_pool_config().expect_err("smaller than one chunk");
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert_eq!(
        b.build().expect_err("refused at build").kind(),
        std::io::ErrorKind::InvalidInput
    );
    b.copy_pool(None);
    assert_eq!(b.copy_pool_config().expect("off"), None);
    let rt = Runtime::builder()
        .threads(1)
        .pool_size(256 * 1024)
        .chunk_size(16 * 1024)
        .build()
        .expect("runtime");
    let stats = rt.handle().pool_stats()[0].expect("pool");
    assert_eq!(stats.chunks_total, 16);
}

#[test]
fn busy_poll_is_registered_or_refused_with_a_named_error() {
    // What the kernel says to a plain ring, to hold the runtime to the same answer.
    let ring = io_uring::IoUring::new(8).expect("io_uring");
    let mut napi = io_uring::types::Napi::new().set_busy_poll_timeout(50);
    let kernel = ring.submitter().register_napi(&mut napi);
    drop(ring);
    let built = Runtime::builder()
        .threads(2)
        .receive_mode(ReceiveMode::Copy)
        .busy_poll(std::time::Duration::from_micros(50), true)
        .build();
    match (kernel, built) {
        (Ok(()), Ok(rt)) => {
            let flags = rt.handle().ring_flags();
            assert!(
                flags.iter().all(|f| f.is_some_and(|f| f.napi_busy_poll)),
                "every worker's ring busy-polls: {flags:?}"
            );
            // And receiving still works.
            let got = rt.block_on(async {
                let l = zerorx::net::TcpListener::bind("127.0.0.1:0".parse().expect("addr"))
                    .expect("bind");
                let c = zerorx::net::TcpStream::connect(l.local_addr().expect("addr"))
                    .await
                    .expect("connect");
                let (s, _) = l.accept().await.expect("accept");
                c.send(bytes::Bytes::from_static(b"polled"))
                    .await
                    .expect("send");
                s.recv().await.expect("recv").expect("data").to_vec()
            });
            assert_eq!(got, b"polled");
        }
        (Err(k), Err(e)) => {
            let msg = e.to_string();
            assert!(msg.contains("IORING_REGISTER_NAPI"), "{msg}");
            assert!(msg.contains("CONFIG_NET_RX_BUSY_POLL"), "{msg}");
            assert_eq!(e.kind(), k.kind(), "{msg}");
        }
        (k, b) => panic!(
            "the runtime disagrees with the kernel: kernel {k:?}, build {:?}",
            b.map(|_| "ok")
        ),
    }
    // Nonsense is refused before the kernel is asked.
    let e = Runtime::builder()
        .threads(1)
        .busy_poll(std::time::Duration::ZERO, false)
        .build()
        .expect_err("zero timeout");
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("busy-poll timeout"), "{e}");
    // Off by default.
    let rt = Runtime::builder().threads(1).build().expect("runtime");
    assert_eq!(
        rt.handle().ring_flags()[0].map(|f| f.napi_busy_poll),
        Some(false)
    );
}
