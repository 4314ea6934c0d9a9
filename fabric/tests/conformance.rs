//! Conformance suite of the fabric API, run against every provider in the build
//! (`Fabric::providers()`: `uring-tcp`, plus the libfabric providers with the
//! `libfabric` feature). Modelled on libfabric's fabtests scenarios, with the error
//! matrix of `shared/design/fabric-api.md` section 3 as explicit cases. A case needing
//! a capability a provider lacks asserts that discovery reports it missing with a
//! reason and that opening with it fails with `Unsupported` — never a silent skip.

use std::future::Future;
use std::rc::Rc;
use std::time::Duration;
use zerorx_fabric::*;

const CASE_TIMEOUT: Duration = Duration::from_secs(180);
const OP_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `case` once per provider, each on a fresh one-worker runtime, bounded in time.
fn each_provider<F, Fut>(case: &str, f: F)
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = ()>,
{
    let providers = Fabric::providers();
    assert!(
        providers.first().map(String::as_str) == Some("uring-tcp"),
        "uring-tcp is the default provider: {providers:?}"
    );
    for p in providers {
        eprintln!("[{case}] provider {p}");
        let rt = zerorx::Runtime::builder()
            .threads(1)
            .shutdown_timeout(Duration::from_secs(5))
            .build()
            .expect("runtime");
        rt.block_on(async {
            if zerorx::time::timeout(CASE_TIMEOUT, f(p.clone()))
                .await
                .is_err()
            {
                panic!("[{case}] provider {p}: no result within {CASE_TIMEOUT:?}");
            }
        });
    }
}

/// An opened provider and one domain.
struct Net {
    name: String,
    domain: Domain,
}

/// Opens `provider` needing `caps`; `None` (after asserting the report) when the
/// provider lacks one of them.
fn open(provider: &str, caps: &[Cap]) -> Option<Net> {
    let req = Requirements::new().caps(caps.iter().copied());
    let d = Fabric::discover(provider, &req).expect("discovery");
    assert_eq!(d.provider, provider);
    let missing = d.missing();
    if !missing.is_empty() {
        for (cap, why) in &missing {
            assert!(
                !why.trim().is_empty(),
                "{provider}: {cap} missing without a reason"
            );
            eprintln!("    {provider} does not support {cap}: {why} (reported by discovery)");
        }
        match Fabric::open(provider, &req) {
            Err(FabricError::Unsupported {
                cap,
                provider: p,
                reason,
                ..
            }) => {
                assert_eq!(p, provider);
                assert!(missing.iter().any(|(c, _)| *c == cap));
                assert!(!reason.is_empty());
            }
            other => panic!("{provider}: open with missing {missing:?} gave {other:?}"),
        }
        return None;
    }
    let fabric = Fabric::open(provider, &req).expect("open");
    let domain = fabric.domain(DomainConfig::default()).expect("domain");
    Some(Net {
        name: provider.to_string(),
        domain,
    })
}

/// One endpoint with its own completion queue.
struct Side {
    ep: Endpoint,
    cq: CompletionQueue,
}

fn side(net: &Net, cfg: EndpointConfig) -> Side {
    let cq = net
        .domain
        .completion_queue(cfg.tx_depth + cfg.rx_depth)
        .expect("cq");
    let ep = net.domain.endpoint(&cq, cfg).expect("endpoint");
    Side { ep, cq }
}

/// Two endpoints that know each other: (a, b, a's id for b, b's id for a).
async fn pair(net: &Net) -> (Side, Side, PeerId, PeerId) {
    let a = side(net, EndpointConfig::default());
    let b = side(net, EndpointConfig::default());
    let ab =
        a.ep.connect(&b.ep.address())
            .await
            .expect("a connects to b");
    let ba =
        b.ep.connect(&a.ep.address())
            .await
            .expect("b connects to a");
    (a, b, ab, ba)
}

async fn next(cq: &CompletionQueue, what: &str) -> Completion {
    match zerorx::time::timeout(OP_TIMEOUT, cq.next()).await {
        Ok(c) => c,
        Err(_) => panic!("no completion for {what} within {OP_TIMEOUT:?}"),
    }
}

async fn next_ok(cq: &CompletionQueue, what: &str) -> Completion {
    let c = next(cq, what).await;
    assert!(c.is_ok(), "{what}: {c:?}");
    c
}

/// Nothing more arrives within a short while.
async fn quiet(cq: &CompletionQueue, what: &str) {
    zerorx::time::sleep(Duration::from_millis(100)).await;
    if let Some(c) = cq.try_next() {
        panic!("{what}: unexpected completion {c:?}");
    }
}

fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn region(net: &Net, len: usize, access: Access) -> MemoryRegion {
    net.domain.register(len, access).expect("register")
}

fn source_named(net: &Net) -> bool {
    Fabric::discover(&net.name, &Requirements::new())
        .expect("discovery")
        .supports(Cap::SourceFilter)
}

fn assert_source(net: &Net, c: &Completion, expected: PeerId) {
    if source_named(net) {
        assert_eq!(c.peer, Some(expected), "{}: source of {c:?}", net.name);
    }
}

// ---------------------------------------------------------------------------------
// Discovery and setup

#[test]
fn discovery_reports_every_capability_with_words() {
    for p in Fabric::providers() {
        let all = Requirements::new().caps(Cap::ALL);
        let d = Fabric::discover(&p, &all).expect("discovery");
        assert_eq!(d.caps.len(), Cap::ALL.len(), "{p}: one line per capability");
        for (r, cap) in d.caps.iter().zip(Cap::ALL) {
            assert_eq!(r.cap, cap);
            match &r.support {
                Support::Guaranteed(what) => assert!(!what.is_empty(), "{p}: {cap}"),
                Support::Missing(why) => assert!(!why.is_empty(), "{p}: {cap}"),
            }
        }
        assert!(d.limits.max_msg_size >= 8 << 20, "{p}: 8 MiB messages");
        assert!(!d.ordering.is_empty() && !d.progress.is_empty());
        let text = d.to_string();
        assert!(text.contains(&p) && text.contains("tagged"), "{text}");
        match Fabric::open(&p, &all) {
            Ok(_) => assert!(d.missing().is_empty()),
            Err(FabricError::Unsupported { cap, reason, .. }) => {
                assert_eq!(d.missing_reason(cap), Some(reason.as_str()));
            }
            Err(e) => panic!("{p}: {e}"),
        }
    }
    match Fabric::open("no-such-provider", &Requirements::new()) {
        Err(FabricError::UnknownProvider { name, available }) => {
            assert_eq!(name, "no-such-provider");
            assert_eq!(available, Fabric::providers());
        }
        other => panic!("{other:?}"),
    }
    let e = Fabric::open("uring-tcp", &Requirements::new().max_msg_size(usize::MAX)).unwrap_err();
    assert!(
        matches!(
            e,
            FabricError::InvalidConfig {
                field: "Requirements::max_msg_size",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn setup_errors_name_the_field() {
    each_provider("setup_errors", |p| async move {
        let Some(net) = open(&p, &[Cap::Msg]) else {
            return;
        };
        let bad = |e: FabricError, field: &str| match e {
            FabricError::InvalidConfig {
                field: f, reason, ..
            } => {
                assert_eq!(f, field);
                assert!(!reason.is_empty());
            }
            other => panic!("{p}: expected InvalidConfig({field}), got {other}"),
        };
        bad(net.domain.register(0, Access::LOCAL).unwrap_err(), "len");
        bad(
            net.domain.register(64, Access::REMOTE_WRITE).unwrap_err(),
            "access",
        );
        bad(
            net.domain.register(64, Access::empty()).unwrap_err(),
            "access",
        );
        bad(
            net.domain.completion_queue(0).unwrap_err(),
            "completion queue depth",
        );
        let cq = net.domain.completion_queue(10).expect("cq");
        let cfg = EndpointConfig {
            tx_depth: 4,
            rx_depth: 4,
            ..Default::default()
        };
        let _e1 = net.domain.endpoint(&cq, cfg.clone()).expect("fits");
        bad(
            net.domain.endpoint(&cq, cfg.clone()).unwrap_err(),
            "EndpointConfig::tx_depth + rx_depth",
        );
        bad(
            net.domain
                .endpoint(
                    &net.domain.completion_queue(100).expect("cq"),
                    EndpointConfig {
                        tx_depth: 0,
                        ..cfg.clone()
                    },
                )
                .unwrap_err(),
            "EndpointConfig::tx_depth",
        );
        let ro = region(&net, 64, Access::READ);
        bad(
            ro.remote(0..64, Access::REMOTE_WRITE).unwrap_err(),
            "MemoryRegion::remote access",
        );
        bad(
            ro.remote(0..65, Access::REMOTE_READ).unwrap_err(),
            "MemoryRegion::remote range",
        );
        assert!(matches!(
            ro.slice(60..70),
            Err(PostError::LocalRange {
                offset: 60,
                len: 10,
                region_len: 64
            })
        ));
    });
}

#[test]
fn endpoint_outside_a_worker_is_refused() {
    let net = open("uring-tcp", &[]).expect("uring-tcp");
    let cq = net.domain.completion_queue(1024).expect("cq");
    assert!(matches!(
        net.domain.endpoint(&cq, EndpointConfig::default()),
        Err(FabricError::NotInRuntime)
    ));
}

// ---------------------------------------------------------------------------------
// Two-sided

#[test]
fn pingpong_with_data_check_1b_to_8mib() {
    each_provider("pingpong", |p| async move {
        let Some(net) = open(&p, &[Cap::Msg]) else {
            return;
        };
        let (a, b, ab, ba) = pair(&net).await;
        let max = 8 << 20;
        let (a_src, a_dst) = (
            region(&net, max, Access::LOCAL),
            region(&net, max, Access::LOCAL),
        );
        let b_buf = region(&net, max, Access::LOCAL);
        for size in [1usize, 64, 4096, 65536, 1 << 20, 8 << 20] {
            for round in 0..3u64 {
                let data = pattern(size as u64 * 7 + round, size);
                a_src.write(0, &data).expect("fill");
                b.ep.recv(&b_buf.slice(0..size).unwrap())
                    .post()
                    .expect("recv");
                a.ep.send(ab, &a_src.slice(0..size).unwrap())
                    .post()
                    .expect("send");
                let s = next_ok(&a.cq, "ping send").await;
                assert_eq!((s.kind, s.len, s.peer), (OpKind::Send, size, Some(ab)));
                let r = next_ok(&b.cq, "ping recv").await;
                assert_eq!(
                    (r.kind, r.len, r.tag, r.imm),
                    (OpKind::Recv, size, None, None)
                );
                assert_source(&net, &r, ba);
                assert!(
                    b_buf.to_vec(0..size).unwrap() == data,
                    "{p}: ping data, {size} B"
                );
                a.ep.recv(&a_dst.slice(0..size).unwrap())
                    .post()
                    .expect("recv");
                b.ep.send(ba, &b_buf.slice(0..size).unwrap())
                    .post()
                    .expect("send");
                next_ok(&b.cq, "pong send").await;
                let r = next_ok(&a.cq, "pong recv").await;
                assert_eq!(r.len, size);
                assert!(
                    a_dst.to_vec(0..size).unwrap() == data,
                    "{p}: pong data, {size} B"
                );
            }
        }
    });
}

#[test]
fn unexpected_messages_wait_for_receives_in_order() {
    each_provider("unexpected", |p| async move {
        let Some(net) = open(&p, &[Cap::Msg]) else {
            return;
        };
        let (a, b, ab, _) = pair(&net).await;
        let sizes = [1usize, 100, 5000, 70_000, 1 << 20, 3];
        let src = region(&net, sizes.iter().sum(), Access::LOCAL);
        let mut at = 0;
        for (i, &n) in sizes.iter().enumerate() {
            src.write(at, &pattern(i as u64, n)).unwrap();
            a.ep.send(ab, &src.slice(at..at + n).unwrap())
                .context(i as u64)
                .post()
                .expect("send before any receive");
            at += n;
        }
        for i in 0..sizes.len() {
            let c = next_ok(&a.cq, "send").await;
            assert_eq!(c.context, i as u64, "{p}: send completions");
        }
        zerorx::time::sleep(Duration::from_millis(50)).await;
        let dst = region(&net, 1 << 20, Access::LOCAL);
        for (i, &n) in sizes.iter().enumerate() {
            b.ep.recv(&dst.all())
                .context(i as u64)
                .post()
                .expect("recv");
            let c = next_ok(&b.cq, "late recv").await;
            assert_eq!((c.context, c.len), (i as u64, n), "{p}: arrival order");
            assert!(
                dst.to_vec(0..n).unwrap() == pattern(i as u64, n),
                "{p}: message {i}"
            );
        }
    });
}

#[test]
fn recv_cancel() {
    each_provider("recv_cancel", |p| async move {
        let Some(net) = open(&p, &[Cap::Msg, Cap::Cancel]) else {
            return;
        };
        let (a, b, ab, _) = pair(&net).await;
        let d1 = region(&net, 64, Access::LOCAL);
        let d2 = region(&net, 64, Access::LOCAL);
        let r1 = b.ep.recv(&d1.all()).context(1).post().unwrap();
        let r2 = b.ep.recv(&d2.all()).context(2).post().unwrap();
        assert!(b.ep.cancel(r1), "{p}: a posted receive can be cancelled");
        let c = next(&b.cq, "cancelled recv").await;
        assert_eq!(
            (c.op, c.context, c.status.clone()),
            (r1, 1, Err(OpError::Canceled))
        );
        assert!(!b.ep.cancel(r1), "{p}: cancelled twice");
        // Deregistration is impossible while an operation uses the region.
        let d2 = match d2.close() {
            Err((d2, FabricError::InUse { ops: 1, .. })) => d2,
            other => panic!(
                "{p}: close under a posted recv: {:?}",
                other.err().map(|e| e.1)
            ),
        };
        let src = region(&net, 64, Access::LOCAL);
        src.write(0, b"after cancel").unwrap();
        let s = a.ep.send(ab, &src.slice(0..12).unwrap()).post().unwrap();
        assert!(!a.ep.cancel(s), "{p}: sends are not cancellable");
        next_ok(&a.cq, "send").await;
        let c = next_ok(&b.cq, "second recv").await;
        assert_eq!(
            (c.op, c.len),
            (r2, 12),
            "{p}: the message skipped the cancelled recv"
        );
        assert_eq!(d2.to_vec(0..12).unwrap(), b"after cancel");
        assert!(!b.ep.cancel(r2), "{p}: completed op");
        d2.close().expect("no op in flight any more");
        d1.close().expect("no op in flight");
        quiet(&b.cq, "after cancel").await;
    });
}

#[test]
fn immediate_data() {
    each_provider("immediate", |p| async move {
        let Some(net) = open(&p, &[Cap::Msg, Cap::SendImm]) else {
            return;
        };
        let (a, b, ab, _) = pair(&net).await;
        let src = region(&net, 64, Access::LOCAL);
        let dst = region(&net, 64, Access::LOCAL);
        src.write(0, b"imm").unwrap();
        for imm in [Some(0xfeed_f00d_dead_beefu64), None, Some(0)] {
            b.ep.recv(&dst.all()).post().unwrap();
            let mut s = a.ep.send(ab, &src.slice(0..3).unwrap());
            if let Some(i) = imm {
                s = s.imm(i);
            }
            s.post().unwrap();
            next_ok(&a.cq, "send").await;
            let c = next_ok(&b.cq, "recv").await;
            assert_eq!((c.imm, c.len, c.remote_write), (imm, 3, false), "{p}");
        }
    });
}

/// Probes `b` until a message tagged `tag` is waiting (sends arrive asynchronously).
async fn waiting(b: &Side, tag: u64) -> Completion {
    let start = std::time::Instant::now();
    loop {
        b.ep.probe(tag, 0).post().unwrap();
        let c = next(&b.cq, "probe").await;
        if c.is_ok() || start.elapsed() > OP_TIMEOUT {
            return c;
        }
        assert_eq!(c.status, Err(OpError::NoMessage));
        zerorx::time::sleep(Duration::from_millis(2)).await;
    }
}

#[test]
fn probe_peek_claim_and_discard_waiting_messages() {
    each_provider("probe", |p| async move {
        let Some(net) = open(&p, &[Cap::Tagged, Cap::Probe, Cap::SourceFilter]) else {
            return;
        };
        let (a, b, ab, ba) = pair(&net).await;
        let src = region(&net, 4096, Access::LOCAL);
        for (i, tag) in [0x10u64, 0x20, 0x30].into_iter().enumerate() {
            src.write(i * 100, &pattern(tag, 50 + i)).unwrap();
            a.ep.send(ab, &src.slice(i * 100..i * 100 + 50 + i).unwrap())
                .tag(tag)
                .imm(tag + 1)
                .post()
                .unwrap();
            next_ok(&a.cq, "tsend").await;
        }
        let none = b.ep.probe(0x99, 0).post().unwrap();
        let c = next(&b.cq, "probe for a tag nobody sent").await;
        assert_eq!(
            (c.op, c.kind, c.status),
            (none, OpKind::Probe, Err(OpError::NoMessage)),
            "{p}"
        );
        // Peek: reported with its length, tag, data and sender, and left waiting.
        let peek = waiting(&b, 0x20).await;
        assert!(peek.is_ok(), "{p}: {peek:?}");
        assert_eq!(
            (peek.len, peek.tag, peek.imm, peek.peer),
            (51, Some(0x20), Some(0x21), Some(ba)),
            "{p}"
        );
        let again = b.ep.probe(0x2f, 0x0f).from(ba).post().unwrap();
        let c = next_ok(&b.cq, "second peek").await;
        assert_eq!(
            (c.op, c.tag),
            (again, Some(0x20)),
            "{p}: peek left it, masks apply"
        );
        // Claim: set aside; a receive for its tag no longer sees it.
        let claim = b.ep.probe(0x20, 0).claim().post().unwrap();
        next_ok(&b.cq, "claim").await;
        let dst = region(&net, 64, Access::LOCAL);
        let plain = b.ep.recv(&dst.all()).tagged(0x20, 0).post().unwrap();
        quiet(&b.cq, "a receive after the claim").await;
        assert!(
            b.ep.cancel(plain),
            "{p}: the claimed message did not match the receive"
        );
        assert_eq!(
            next(&b.cq, "cancelled").await.status,
            Err(OpError::Canceled)
        );
        let got = b.ep.recv_claimed(claim, Some(&dst.all()), 7).unwrap();
        let c = next_ok(&b.cq, "claimed receive").await;
        assert_eq!(
            (c.op, c.context, c.len, c.tag),
            (got, 7, 51, Some(0x20)),
            "{p}"
        );
        assert_eq!(dst.to_vec(0..51).unwrap(), pattern(0x20, 51), "{p}");
        let twice = b.ep.recv_claimed(claim, Some(&dst.all()), 8).unwrap();
        assert_eq!(
            next(&b.cq, "claim taken twice").await.status,
            Err(OpError::NoMessage),
            "{p}: {twice:?}"
        );
        // Discard: dropped, as a claimed one can be.
        b.ep.probe(0x10, 0).discard().post().unwrap();
        assert_eq!(next_ok(&b.cq, "discard").await.len, 50);
        b.ep.probe(0x10, 0).post().unwrap();
        assert_eq!(
            next(&b.cq, "discarded").await.status,
            Err(OpError::NoMessage),
            "{p}"
        );
        let claim = b.ep.probe(0x30, 0).claim().post().unwrap();
        next_ok(&b.cq, "claim to discard").await;
        b.ep.recv_claimed(claim, None, 9).unwrap();
        let c = next_ok(&b.cq, "claimed and discarded").await;
        assert_eq!((c.len, c.tag, c.context), (52, Some(0x30), 9), "{p}");
        quiet(&b.cq, "after the probes").await;
    });
}

#[test]
fn multi_receive_fills_one_buffer_with_several_messages() {
    each_provider("multi_recv", |p| async move {
        let Some(net) = open(&p, &[Cap::Msg, Cap::MultiRecv]) else {
            return;
        };
        let (a, b, ab, _) = pair(&net).await;
        let src = region(&net, 4096, Access::LOCAL);
        let buf = region(&net, 256, Access::LOCAL);
        let after = region(&net, 64, Access::LOCAL);
        let multi = b.ep.recv(&buf.all()).multi(64).context(1).post().unwrap();
        let next_recv = b.ep.recv(&after.all()).context(2).post().unwrap();
        for i in 0..5u64 {
            src.write(i as usize * 100, &pattern(i, 50)).unwrap();
            a.ep.send(
                ab,
                &src.slice(i as usize * 100..i as usize * 100 + 50).unwrap(),
            )
            .post()
            .unwrap();
            next_ok(&a.cq, "send").await;
        }
        // 4 messages fit before fewer than 64 bytes are left (256 - 200 = 56).
        for i in 0..4usize {
            let c = next_ok(&b.cq, "multi part").await;
            assert_eq!(
                (c.op, c.context, c.len, c.offset),
                (multi, 1, 50, i * 50),
                "{p}"
            );
            assert_eq!(c.more, i < 3, "{p}: the fourth ends the buffer");
            assert_eq!(
                buf.to_vec(i * 50..i * 50 + 50).unwrap(),
                pattern(i as u64, 50)
            );
        }
        let c = next_ok(&b.cq, "the receive after the multi-receive").await;
        assert_eq!((c.op, c.len, c.more), (next_recv, 50, false), "{p}");
        assert_eq!(after.to_vec(0..50).unwrap(), pattern(4, 50));
        // A message longer than the room left ends the buffer truncated.
        let small = region(&net, 80, Access::LOCAL);
        let m2 = b.ep.recv(&small.all()).multi(16).post().unwrap();
        for i in 0..2 {
            a.ep.send(ab, &src.slice(i * 100..i * 100 + 50).unwrap())
                .post()
                .unwrap();
            next_ok(&a.cq, "send").await;
        }
        assert!(next_ok(&b.cq, "first part").await.more);
        let c = next(&b.cq, "truncated part").await;
        assert_eq!((c.op, c.offset, c.len, c.more), (m2, 50, 30, false), "{p}");
        assert_eq!(
            c.status,
            Err(OpError::Truncated {
                needed: Some(50),
                posted: 30
            }),
            "{p}"
        );
        quiet(&b.cq, "after the multi-receives").await;
    });
}

#[test]
fn tagged_matching_with_masks() {
    each_provider("tagged", |p| async move {
        let Some(net) = open(&p, &[Cap::Msg, Cap::Tagged]) else {
            return;
        };
        let (a, b, ab, _) = pair(&net).await;
        let src = region(&net, 4096, Access::LOCAL);
        let bufs: Vec<MemoryRegion> = (0..5).map(|_| region(&net, 64, Access::LOCAL)).collect();
        let untagged = b.ep.recv(&bufs[0].all()).context(100).post().unwrap();
        let masked =
            b.ep.recv(&bufs[1].all())
                .tagged(0x1000, 0xff)
                .context(101)
                .post()
                .unwrap();
        let exact =
            b.ep.recv(&bufs[2].all())
                .tagged(0x2000, 0)
                .context(102)
                .post()
                .unwrap();
        let send = |at: usize, text: &[u8], tag: Option<u64>| {
            src.write(at, text).unwrap();
            let s = a.ep.send(ab, &src.slice(at..at + text.len()).unwrap());
            match tag {
                Some(t) => s.tag(t).post().unwrap(),
                None => s.post().unwrap(),
            }
        };
        send(0, b"exact", Some(0x2000));
        send(100, b"masked", Some(0x10ab));
        send(200, b"late", Some(0x3000));
        send(300, b"plain", None);
        for _ in 0..4 {
            let s = next_ok(&a.cq, "tsend").await;
            assert!(matches!(s.kind, OpKind::TaggedSend | OpKind::Send));
        }
        let mut got = std::collections::HashMap::new();
        for _ in 0..3 {
            let c = next_ok(&b.cq, "trecv").await;
            got.insert(c.op, c);
        }
        let c = &got[&exact];
        assert_eq!(
            (c.kind, c.tag, c.len),
            (OpKind::TaggedRecv, Some(0x2000), 5),
            "{p}"
        );
        assert_eq!(bufs[2].to_vec(0..5).unwrap(), b"exact");
        let c = &got[&masked];
        assert_eq!((c.tag, c.len), (Some(0x10ab), 6), "{p}: ignore mask");
        assert_eq!(bufs[1].to_vec(0..6).unwrap(), b"masked");
        let c = &got[&untagged];
        assert_eq!(
            (c.kind, c.tag, c.len),
            (OpKind::Recv, None, 5),
            "{p}: untagged"
        );
        assert_eq!(bufs[0].to_vec(0..5).unwrap(), b"plain");
        // 0x3000 matched nothing: it waits until a receive accepts it.
        b.ep.recv(&bufs[3].all()).tagged(0x3001, 0).post().unwrap();
        quiet(&b.cq, "0x3001 must not match 0x3000").await;
        b.ep.recv(&bufs[4].all()).tagged(0x3000, 0).post().unwrap();
        let c = next_ok(&b.cq, "late tagged").await;
        assert_eq!((c.tag, c.len), (Some(0x3000), 4), "{p}");
        assert_eq!(bufs[4].to_vec(0..4).unwrap(), b"late");
    });
}

#[test]
fn source_filter() {
    each_provider("source_filter", |p| async move {
        let Some(net) = open(&p, &[Cap::Msg, Cap::Tagged, Cap::SourceFilter]) else {
            return;
        };
        let a = side(&net, EndpointConfig::default());
        let b = side(&net, EndpointConfig::default());
        let c = side(&net, EndpointConfig::default());
        let ac = a.ep.connect(&c.ep.address()).await.unwrap();
        let bc = b.ep.connect(&c.ep.address()).await.unwrap();
        let ca = c.ep.insert_peer(&a.ep.address()).unwrap();
        let cb = c.ep.insert_peer(&b.ep.address()).unwrap();
        assert_ne!(ca, cb);
        let src = region(&net, 64, Access::LOCAL);
        src.write(0, b"from a").unwrap();
        src.write(8, b"from b").unwrap();
        let d = [
            region(&net, 64, Access::LOCAL),
            region(&net, 64, Access::LOCAL),
        ];
        let only_a = c.ep.recv(&d[0].all()).from(ca).post().unwrap();
        b.ep.send(bc, &src.slice(8..14).unwrap()).post().unwrap();
        next_ok(&b.cq, "b send").await;
        quiet(&c.cq, "a recv only from a must not take b's message").await;
        a.ep.send(ac, &src.slice(0..6).unwrap()).post().unwrap();
        next_ok(&a.cq, "a send").await;
        let got = next_ok(&c.cq, "from a").await;
        assert_eq!((got.op, got.peer), (only_a, Some(ca)), "{p}");
        assert_eq!(d[0].to_vec(0..6).unwrap(), b"from a");
        c.ep.recv(&d[1].all()).post().unwrap();
        let got = next_ok(&c.cq, "any source").await;
        assert_eq!(got.peer, Some(cb));
        assert_eq!(d[1].to_vec(0..6).unwrap(), b"from b");
        // Tag and source together.
        c.ep.recv(&d[0].all()).tagged(7, 0).from(cb).post().unwrap();
        a.ep.send(ac, &src.slice(0..6).unwrap())
            .tag(7)
            .post()
            .unwrap();
        b.ep.send(bc, &src.slice(8..14).unwrap())
            .tag(7)
            .post()
            .unwrap();
        let got = next_ok(&c.cq, "tag 7 from b").await;
        assert_eq!((got.peer, got.tag), (Some(cb), Some(7)), "{p}");
        assert_eq!(d[0].to_vec(0..6).unwrap(), b"from b");
    });
}

#[test]
fn multi_peer() {
    each_provider("multi_peer", |p| async move {
        let Some(net) = open(&p, &[Cap::Msg]) else {
            return;
        };
        const CLIENTS: usize = 4;
        const MSGS: usize = 20;
        let server = side(&net, EndpointConfig::default());
        let mut clients = Vec::new();
        for _ in 0..CLIENTS {
            let c = side(&net, EndpointConfig::default());
            let to_server = c.ep.connect(&server.ep.address()).await.unwrap();
            let from_server = server.ep.insert_peer(&c.ep.address()).unwrap();
            clients.push((c, to_server, from_server));
        }
        let rbuf = region(&net, CLIENTS * MSGS * 16, Access::LOCAL);
        for i in 0..CLIENTS * MSGS {
            server
                .ep
                .recv(&rbuf.slice(i * 16..i * 16 + 16).unwrap())
                .context(i as u64)
                .post()
                .unwrap();
        }
        let sbufs: Vec<MemoryRegion> = (0..CLIENTS)
            .map(|_| region(&net, MSGS * 16, Access::LOCAL))
            .collect();
        for k in 0..MSGS {
            for (i, (c, to_server, _)) in clients.iter().enumerate() {
                let msg = format!("c{i}:m{k:03}");
                sbufs[i].write(k * 16, msg.as_bytes()).unwrap();
                c.ep.send(
                    *to_server,
                    &sbufs[i].slice(k * 16..k * 16 + msg.len()).unwrap(),
                )
                .post()
                .unwrap();
            }
        }
        let mut last = [None::<usize>; CLIENTS];
        for _ in 0..CLIENTS * MSGS {
            let c = next_ok(&server.cq, "server recv").await;
            let slot = c.context as usize;
            let text =
                String::from_utf8(rbuf.to_vec(slot * 16..slot * 16 + c.len).unwrap()).unwrap();
            let (ci, k) = text[1..].split_once(":m").expect("format");
            let (ci, k): (usize, usize) = (ci.parse().unwrap(), k.parse().unwrap());
            assert!(
                last[ci].is_none_or(|l| k == l + 1),
                "{p}: order from client {ci}"
            );
            last[ci] = Some(k);
            assert_source(&net, &c, clients[ci].2);
        }
        assert!(last.iter().all(|l| *l == Some(MSGS - 1)), "{p}: {last:?}");
        for (c, _, _) in &clients {
            for _ in 0..MSGS {
                next_ok(&c.cq, "client send").await;
            }
        }
        // Replies to every client.
        let reply = region(&net, 64, Access::LOCAL);
        for (i, (c, _, from_server)) in clients.iter().enumerate() {
            reply.write(i * 8, format!("ack{i}").as_bytes()).unwrap();
            c.ep.recv(&sbufs[i].slice(0..16).unwrap()).post().unwrap();
            server
                .ep
                .send(*from_server, &reply.slice(i * 8..i * 8 + 4).unwrap())
                .post()
                .unwrap();
        }
        for (i, (c, _, _)) in clients.iter().enumerate() {
            let r = next_ok(&c.cq, "reply").await;
            assert_eq!(r.len, 4);
            assert_eq!(sbufs[i].to_vec(0..4).unwrap(), format!("ack{i}").as_bytes());
        }
    });
}

#[test]
fn peer_insert_remove() {
    each_provider("peer_insert_remove", |p| async move {
        let Some(net) = open(&p, &[Cap::Msg, Cap::PeerRemove]) else {
            return;
        };
        let (a, b, ab, ba) = pair(&net).await;
        assert_eq!(
            a.ep.insert_peer(&b.ep.address()).unwrap(),
            ab,
            "{p}: idempotent insert"
        );
        assert_eq!(
            a.ep.peer_address(ab),
            Some(b.ep.address()),
            "{p}: peer_address"
        );
        assert_eq!(
            b.ep.peer_address(ba),
            Some(a.ep.address()),
            "{p}: peer_address"
        );
        let src = region(&net, 64, Access::LOCAL);
        let dst = region(&net, 64, Access::LOCAL);
        src.write(0, b"one").unwrap();
        b.ep.recv(&dst.all()).post().unwrap();
        a.ep.send(ab, &src.slice(0..3).unwrap()).post().unwrap();
        next_ok(&a.cq, "send").await;
        next_ok(&b.cq, "recv").await;
        let directed = if source_named(&net) {
            Some(a.ep.recv(&dst.all()).from(ab).post().unwrap())
        } else {
            None
        };
        a.ep.remove_peer(ab).expect("remove");
        assert_eq!(
            a.ep.peer_address(ab),
            None,
            "{p}: a removed peer has no address"
        );
        if let Some(op) = directed {
            let c = next(&a.cq, "directed recv of a removed peer").await;
            assert_eq!((c.op, c.status), (op, Err(OpError::Canceled)), "{p}");
        }
        assert!(matches!(a.ep.remove_peer(ab), Err(FabricError::UnknownPeer(x)) if x == ab));
        assert!(matches!(
            a.ep.send(ab, &src.slice(0..3).unwrap()).post(),
            Err(PostError::UnknownPeer(x)) if x == ab
        ));
        let bad = EpAddr {
            provider: "other".into(),
            bytes: vec![1, 2, 3],
        };
        assert!(matches!(
            a.ep.insert_peer(&bad),
            Err(FabricError::BadAddress { .. })
        ));
        // Inserted again: a new id, and messages flow.
        let ab2 = a.ep.connect(&b.ep.address()).await.expect("reinsert");
        assert_ne!(ab2, ab, "{p}: a removed id is not reused");
        src.write(0, b"two").unwrap();
        b.ep.recv(&dst.all()).post().unwrap();
        a.ep.send(ab2, &src.slice(0..3).unwrap()).post().unwrap();
        next_ok(&a.cq, "send after reinsert").await;
        let c = next_ok(&b.cq, "recv after reinsert").await;
        assert_source(&net, &c, ba);
        assert_eq!(dst.to_vec(0..3).unwrap(), b"two");
    });
}

#[test]
fn lease_receive() {
    each_provider("lease", |p| async move {
        let Some(net) = open(&p, &[Cap::Msg, Cap::LeaseRecv]) else {
            return;
        };
        let (a, b, ab, ba) = pair(&net).await;
        let src = region(&net, 1 << 20, Access::LOCAL);
        for (i, n) in [64usize, 4096, 200_000, 600_000].into_iter().enumerate() {
            let data = pattern(i as u64, n);
            src.write(0, &data).unwrap();
            b.ep.recv_lease(1 << 20).post().unwrap();
            a.ep.send(ab, &src.slice(0..n).unwrap()).post().unwrap();
            next_ok(&a.cq, "send").await;
            let c = next_ok(&b.cq, "lease").await;
            assert_eq!((c.kind, c.len), (OpKind::LeaseRecv, n));
            assert_source(&net, &c, ba);
            let lease = c.lease.expect("a lease");
            assert_eq!(lease.len(), n);
            assert!(lease.to_vec() == data, "{p}: lease data, {n} B");
        }
        // Unexpected, then leased; and truncated.
        src.write(0, b"0123456789abcdef").unwrap();
        a.ep.send(ab, &src.slice(0..16).unwrap()).post().unwrap();
        next_ok(&a.cq, "send").await;
        zerorx::time::sleep(Duration::from_millis(20)).await;
        b.ep.recv_lease(10).post().unwrap();
        let c = next(&b.cq, "truncated lease").await;
        match c.status {
            // Providers that cannot tell the full length report None.
            Err(OpError::Truncated { needed, posted: 10 }) => {
                assert!(needed.is_none_or(|n| n == 16), "{p}: needed {needed:?}");
            }
            other => panic!("{p}: expected a truncated lease, got {other:?}"),
        }
        assert_eq!(c.lease.expect("lease").to_vec(), b"0123456789");
    });
}

// ---------------------------------------------------------------------------------
// One-sided

async fn rma_target(net: &Net) -> (Side, Side, PeerId, PeerId, MemoryRegion, RemoteKey) {
    let (a, b, ab, ba) = pair(net).await;
    let t = region(net, 1 << 20, Access::ALL);
    let key = t
        .remote(0..1 << 20, Access::REMOTE_READ | Access::REMOTE_WRITE)
        .expect("key");
    // The key travels out of band, as bytes or through serde.
    let json = serde_json::to_string(&key).expect("serialise");
    assert_eq!(
        serde_json::from_str::<RemoteKey>(&json).expect("deserialise"),
        key
    );
    let key = RemoteKey::from_bytes(&key.to_bytes()).expect("decode");
    assert_eq!(
        RemoteKey::from_bytes(&[0; 3]),
        None,
        "a wrong length is refused"
    );
    (a, b, ab, ba, t, key)
}

#[test]
fn rma_write_and_read_at_every_level() {
    each_provider("rma_write_read", |p| async move {
        let Some(net) = open(&p, &[Cap::RmaWrite, Cap::RmaRead]) else {
            return;
        };
        let (a, _b, ab, _ba, t, key) = rma_target(&net).await;
        let src = region(&net, 1 << 20, Access::LOCAL);
        let back = region(&net, 1 << 20, Access::LOCAL);
        for level in [Level::Delivered, Level::Sent] {
            for (i, (off, len)) in [(0u64, 1usize), (100, 4096), (4096, 65536), (0, 1 << 20)]
                .into_iter()
                .enumerate()
            {
                let data = pattern(i as u64 + 10 * level as u64, len);
                src.write(0, &data).unwrap();
                a.ep.write(ab, &src.slice(0..len).unwrap(), &key, off)
                    .level(level)
                    .post()
                    .expect("write");
                let c = next_ok(&a.cq, "write").await;
                assert_eq!(
                    (c.kind, c.len, c.peer),
                    (OpKind::Write, len, Some(ab)),
                    "{p}"
                );
                // A read after a write to the same peer sees it.
                a.ep.read(ab, &back.slice(0..len).unwrap(), &key, off)
                    .post()
                    .expect("read");
                let c = next_ok(&a.cq, "read").await;
                assert_eq!((c.kind, c.len), (OpKind::Read, len));
                assert!(
                    back.to_vec(0..len).unwrap() == data,
                    "{p}: read back {len} B at {off}"
                );
                let off = off as usize;
                assert!(
                    t.to_vec(off..off + len).unwrap() == data,
                    "{p}: target memory"
                );
            }
        }
        // Reads of data the target wrote itself.
        let data = pattern(99, 70_000);
        t.write(5000, &data).unwrap();
        a.ep.read(ab, &back.slice(0..70_000).unwrap(), &key, 5000)
            .post()
            .unwrap();
        next_ok(&a.cq, "read").await;
        assert!(back.to_vec(0..70_000).unwrap() == data);
    });
}

#[test]
fn rma_write_with_immediate_data() {
    each_provider("rma_write_imm", |p| async move {
        let Some(net) = open(&p, &[Cap::RmaWrite, Cap::RmaWriteImm]) else {
            return;
        };
        let (a, b, ab, ba, t, key) = rma_target(&net).await;
        let src = region(&net, 65536, Access::LOCAL);
        let rbuf = region(&net, 64, Access::LOCAL);
        for (i, level) in [Level::Delivered, Level::Sent].into_iter().enumerate() {
            let data = pattern(i as u64, 65536);
            src.write(0, &data).unwrap();
            let r = b.ep.recv(&rbuf.all()).post().unwrap();
            a.ep.write(ab, &src.all(), &key, 8192)
                .imm(0x77 + i as u64)
                .level(level)
                .post()
                .unwrap();
            next_ok(&a.cq, "write imm").await;
            let c = next_ok(&b.cq, "imm at target").await;
            assert_eq!(
                (c.op, c.kind, c.len, c.imm, c.remote_write),
                (r, OpKind::Recv, 65536, Some(0x77 + i as u64), true),
                "{p}"
            );
            assert_source(&net, &c, ba);
            assert!(
                t.to_vec(8192..8192 + 65536).unwrap() == data,
                "{p}: data placed first"
            );
        }
        // No receive posted: the notification waits for one.
        a.ep.write(ab, &src.slice(0..10).unwrap(), &key, 0)
            .imm(5)
            .post()
            .unwrap();
        next_ok(&a.cq, "write imm").await;
        quiet(&b.cq, "no receive posted").await;
        b.ep.recv(&rbuf.all()).post().unwrap();
        let c = next_ok(&b.cq, "late imm").await;
        assert_eq!((c.imm, c.len, c.remote_write), (Some(5), 10, true));
    });
}

#[test]
fn concurrent_operations_from_many_tasks() {
    each_provider("concurrent", |p| async move {
        let Some(net) = open(&p, &[Cap::Msg, Cap::RmaWrite]) else {
            return;
        };
        const TASKS: usize = 8;
        const MSGS: usize = 30;
        const SZ: usize = 256;
        let (a, b, ab, _, t, key) = rma_target(&net).await;
        let rbuf = region(&net, TASKS * MSGS * SZ, Access::LOCAL);
        for i in 0..TASKS * MSGS {
            b.ep.recv(&rbuf.slice(i * SZ..(i + 1) * SZ).unwrap())
                .context(i as u64)
                .post()
                .unwrap();
        }
        let a = Rc::new(a);
        let net = Rc::new(net);
        let mut handles = Vec::new();
        for task in 0..TASKS {
            let (a, net) = (a.clone(), net.clone());
            handles.push(zerorx::spawn(async move {
                let src = region(&net, MSGS * SZ * 2, Access::LOCAL);
                for k in 0..MSGS {
                    let mut msg = pattern((task * 1000 + k) as u64, SZ);
                    msg[0] = task as u8;
                    msg[1] = k as u8;
                    src.write(k * SZ, &msg).unwrap();
                    let at = MSGS * SZ + k * SZ;
                    src.write(at, &msg).unwrap();
                    let s = src.slice(k * SZ..(k + 1) * SZ).unwrap();
                    let w = src.slice(at..at + SZ).unwrap();
                    let off = ((task * MSGS + k) * SZ) as u64;
                    loop {
                        match a.ep.send(ab, &s).post() {
                            Ok(_) => break,
                            Err(PostError::QueueFull { .. }) => zerorx::yield_now().await,
                            Err(e) => panic!("send: {e}"),
                        }
                    }
                    loop {
                        match a.ep.write(ab, &w, &key, off).post() {
                            Ok(_) => break,
                            Err(PostError::QueueFull { .. }) => zerorx::yield_now().await,
                            Err(e) => panic!("write: {e}"),
                        }
                    }
                    if k % 4 == 0 {
                        zerorx::yield_now().await;
                    }
                }
                src
            }));
        }
        let mut done = 0;
        while done < TASKS * MSGS * 2 {
            next_ok(&a.cq, "send/write").await;
            done += 1;
        }
        let mut sources = Vec::new();
        for h in handles {
            sources.push(h.await.expect("task"));
        }
        let mut next_k = [0usize; TASKS];
        for _ in 0..TASKS * MSGS {
            let c = next_ok(&b.cq, "recv").await;
            let slot = c.context as usize;
            let got = rbuf.to_vec(slot * SZ..(slot + 1) * SZ).unwrap();
            let (task, k) = (got[0] as usize, got[1] as usize);
            assert_eq!(k, next_k[task], "{p}: task {task}'s messages in post order");
            next_k[task] += 1;
            let mut want = pattern((task * 1000 + k) as u64, SZ);
            want[0] = task as u8;
            want[1] = k as u8;
            assert!(got == want, "{p}: payload of task {task} message {k}");
        }
        for task in 0..TASKS {
            for k in 0..MSGS {
                let off = (task * MSGS + k) * SZ;
                let got = t.to_vec(off..off + SZ).unwrap();
                assert_eq!(got[..2], [task as u8, k as u8], "{p}: write {task}/{k}");
            }
        }
        drop(sources);
    });
}

// ---------------------------------------------------------------------------------
// Error matrix

#[test]
fn truncated_receive() {
    each_provider("truncated", |p| async move {
        let Some(net) = open(&p, &[Cap::Msg]) else {
            return;
        };
        let (a, b, ab, _) = pair(&net).await;
        let src = region(&net, 64, Access::LOCAL);
        let dst = region(&net, 64, Access::LOCAL);
        let data = pattern(3, 64);
        src.write(0, &data).unwrap();
        for unexpected in [false, true] {
            if !unexpected {
                b.ep.recv(&dst.slice(0..16).unwrap()).post().unwrap();
            }
            a.ep.send(ab, &src.all()).post().unwrap();
            next_ok(&a.cq, "the sender sees success").await;
            if unexpected {
                zerorx::time::sleep(Duration::from_millis(20)).await;
                b.ep.recv(&dst.slice(0..16).unwrap()).post().unwrap();
            }
            let c = next(&b.cq, "truncated recv").await;
            match c.status {
                Err(OpError::Truncated { needed, posted: 16 }) => {
                    assert!(needed.is_none_or(|n| n == 64), "{p}: needed {needed:?}");
                }
                other => panic!("{p}: expected Truncated, got {other:?}"),
            }
            assert_eq!(c.len, 16);
            assert_eq!(
                dst.to_vec(0..16).unwrap(),
                data[..16],
                "{p}: the first bytes placed"
            );
            assert_eq!(
                dst.to_vec(16..64).unwrap(),
                vec![0; 48],
                "{p}: nothing past the posted length"
            );
        }
        // The connection is fine afterwards.
        b.ep.recv(&dst.all()).post().unwrap();
        a.ep.send(ab, &src.all()).post().unwrap();
        next_ok(&a.cq, "send").await;
        assert_eq!(next_ok(&b.cq, "recv").await.len, 64);
    });
}

/// RMA with `key` fails at the target with `fault` and the connection stays usable.
async fn refused(
    a: &Side,
    ab: PeerId,
    src: &MrSlice,
    (key, off): (&RemoteKey, u64),
    write: bool,
    fault: AccessFault,
) {
    let post = if write {
        a.ep.write(ab, src, key, off).post()
    } else {
        a.ep.read(ab, src, key, off).post()
    };
    post.expect("passes the initiator's checks");
    let c = next(&a.cq, "refused RMA").await;
    assert_eq!(
        c.status,
        Err(OpError::RemoteAccess {
            key: key.key,
            fault
        }),
        "write={write}"
    );
}

async fn still_connected(a: &Side, b: &Side, ab: PeerId, net: &Net) {
    let src = region(net, 8, Access::LOCAL);
    let dst = region(net, 8, Access::LOCAL);
    src.write(0, b"alive").unwrap();
    b.ep.recv(&dst.all()).post().unwrap();
    a.ep.send(ab, &src.slice(0..5).unwrap()).post().unwrap();
    next_ok(&a.cq, "send after a refusal").await;
    next_ok(&b.cq, "recv after a refusal").await;
    assert_eq!(dst.to_vec(0..5).unwrap(), b"alive");
}

#[test]
fn bad_and_stale_keys() {
    each_provider("bad_stale_key", |p| async move {
        let Some(net) = open(
            &p,
            &[Cap::Msg, Cap::RmaWrite, Cap::RmaRead, Cap::TargetValidation],
        ) else {
            return;
        };
        let (a, b, ab, _, t, key) = rma_target(&net).await;
        let src = region(&net, 4096, Access::LOCAL);
        let s = src.slice(0..100).unwrap();
        let forged = RemoteKey {
            key: random_u64() | 1,
            ..key
        };
        refused(&a, ab, &s, (&forged, 0), true, AccessFault::BadKey).await;
        refused(&a, ab, &s, (&forged, 0), false, AccessFault::BadKey).await;
        still_connected(&a, &b, ab, &net).await;
        assert!(t.revoke(&key), "{p}: a live key");
        assert!(!t.revoke(&key), "{p}: revoked already");
        refused(&a, ab, &s, (&key, 0), true, AccessFault::StaleKey).await;
        refused(&a, ab, &s, (&key, 0), false, AccessFault::StaleKey).await;
        // A second key still works, until revoke_all; then a dropped region.
        let k2 = t.remote(0..4096, Access::REMOTE_WRITE).unwrap();
        a.ep.write(ab, &s, &k2, 0).post().unwrap();
        next_ok(&a.cq, "write with a fresh key").await;
        t.revoke_all();
        refused(&a, ab, &s, (&k2, 0), true, AccessFault::StaleKey).await;
        let t2 = region(&net, 4096, Access::ALL);
        let k3 = t2.remote(0..4096, Access::REMOTE_WRITE).unwrap();
        drop(t2);
        refused(&a, ab, &s, (&k3, 0), true, AccessFault::StaleKey).await;
        still_connected(&a, &b, ab, &net).await;
        // Data never landed through a refused key.
        assert_eq!(t.to_vec(0..100).unwrap(), vec![0; 100]);
    });
}

#[test]
fn out_of_bounds_and_wrong_access() {
    each_provider("bounds_access", |p| async move {
        let Some(net) = open(&p, &[Cap::Msg, Cap::RmaWrite, Cap::RmaRead]) else {
            return;
        };
        let (a, b, ab, _) = pair(&net).await;
        let t = region(&net, 8192, Access::ALL);
        let wkey = t.remote(0..4096, Access::REMOTE_WRITE).unwrap();
        let rkey = t.remote(4096..8192, Access::REMOTE_READ).unwrap();
        let src = region(&net, 4096, Access::LOCAL);
        let s100 = src.slice(0..100).unwrap();
        // Caught at the initiator, before posting: nothing completes.
        assert_eq!(
            a.ep.write(ab, &s100, &wkey, 4000).post(),
            Err(PostError::RemoteRange {
                key: wkey.key,
                offset: 4000,
                len: 100,
                limit: 4096
            })
        );
        assert_eq!(
            a.ep.read(ab, &s100, &rkey, u64::MAX).post(),
            Err(PostError::RemoteRange {
                key: rkey.key,
                offset: u64::MAX,
                len: 100,
                limit: 4096
            })
        );
        assert_eq!(
            a.ep.write(ab, &s100, &rkey, 0).post(),
            Err(PostError::RemoteAccess {
                key: rkey.key,
                need: Access::REMOTE_WRITE,
                have: Access::REMOTE_READ
            })
        );
        assert_eq!(
            a.ep.read(ab, &s100, &wkey, 0).post(),
            Err(PostError::RemoteAccess {
                key: wkey.key,
                need: Access::REMOTE_READ,
                have: Access::REMOTE_WRITE
            })
        );
        let ro = region(&net, 64, Access::READ);
        assert_eq!(
            a.ep.read(ab, &ro.all(), &rkey, 0).post(),
            Err(PostError::LocalAccess {
                need: Access::WRITE,
                have: Access::READ
            })
        );
        assert_eq!(
            a.ep.recv(&ro.all()).post(),
            Err(PostError::LocalAccess {
                need: Access::WRITE,
                have: Access::READ
            })
        );
        let other = open(&p, &[Cap::Msg]).expect("second domain");
        let foreign = region(&other, 64, Access::LOCAL);
        assert_eq!(
            a.ep.send(ab, &foreign.all()).post(),
            Err(PostError::ForeignRegion)
        );
        quiet(&a.cq, "refused posts complete nothing").await;
        assert_eq!(a.ep.ops_outstanding(), 0);
        // A peer that lies about the key's length or access is refused by the target.
        let discovery = Fabric::discover(&p, &Requirements::new()).unwrap();
        if let Some(why) = discovery.missing_reason(Cap::TargetValidation) {
            eprintln!("    {p}: no target-side validation ({why}); initiator checks only");
            return;
        }
        let long = RemoteKey {
            len: 1 << 20,
            ..wkey
        };
        refused(
            &a,
            ab,
            &s100,
            (&long, 4000),
            true,
            AccessFault::OutOfBounds {
                offset: 4000,
                len: 100,
                limit: 4096,
            },
        )
        .await;
        let lying = RemoteKey {
            access: Access::REMOTE_READ | Access::REMOTE_WRITE,
            ..rkey
        };
        refused(
            &a,
            ab,
            &s100,
            (&lying, 0),
            true,
            AccessFault::NoAccess {
                need: Access::REMOTE_WRITE,
            },
        )
        .await;
        still_connected(&a, &b, ab, &net).await;
        assert_eq!(
            t.to_vec(0..8192).unwrap(),
            vec![0; 8192],
            "{p}: nothing written"
        );
    });
}

#[test]
fn queue_overflow_is_refused_with_the_declared_depth() {
    each_provider("queue_overflow", |p| async move {
        let Some(net) = open(&p, &[Cap::Msg, Cap::Cancel]) else {
            return;
        };
        let cfg = EndpointConfig {
            tx_depth: 4,
            rx_depth: 4,
            ..Default::default()
        };
        let a = side(&net, cfg.clone());
        let b = side(&net, EndpointConfig::default());
        let ab = a.ep.connect(&b.ep.address()).await.unwrap();
        let buf = region(&net, 64, Access::LOCAL);
        let mut recvs = Vec::new();
        for _ in 0..4 {
            recvs.push(a.ep.recv(&buf.all()).post().unwrap());
        }
        assert_eq!(
            a.ep.recv(&buf.all()).post(),
            Err(PostError::QueueFull {
                queue: QueueKind::Rx,
                depth: 4
            })
        );
        assert!(a.ep.cancel(recvs[0]));
        // The slot is held until the completion is taken.
        zerorx::time::sleep(Duration::from_millis(10)).await;
        assert!(matches!(
            a.ep.recv(&buf.all()).post(),
            Err(PostError::QueueFull { .. })
        ));
        assert_eq!(
            next(&a.cq, "cancelled").await.status,
            Err(OpError::Canceled)
        );
        a.ep.recv(&buf.all()).post().expect("a slot is free again");
        for _ in 0..4 {
            a.ep.send(ab, &buf.slice(0..8).unwrap()).post().unwrap();
        }
        let e = a.ep.send(ab, &buf.slice(0..8).unwrap()).post().unwrap_err();
        assert_eq!(
            e,
            PostError::QueueFull {
                queue: QueueKind::Tx,
                depth: 4
            }
        );
        assert!(e.to_string().contains('4'), "{e}");
        next_ok(&a.cq, "send").await;
        a.ep.send(ab, &buf.slice(0..8).unwrap())
            .post()
            .expect("a tx slot is free again");
    });
}

/// The child side of `peer_killed_mid_transfer`: serves until killed.
fn child_peer(provider: &str) {
    let rt = zerorx::Runtime::builder()
        .threads(1)
        .build()
        .expect("runtime");
    rt.block_on(async {
        let net = open(provider, &[Cap::Msg, Cap::RmaWrite]).expect("child open");
        let s = side(&net, EndpointConfig::default());
        let t = region(&net, 64 << 20, Access::ALL);
        let key = t.remote(0..64 << 20, Access::REMOTE_WRITE).unwrap();
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        println!(
            "PEER {} {}",
            hex(&s.ep.address().to_bytes()),
            hex(&key.to_bytes())
        );
        use std::io::Write;
        std::io::stdout().flush().unwrap();
        let rbuf = region(&net, 1 << 20, Access::LOCAL);
        for _ in 0..64 {
            s.ep.recv(&rbuf.all()).post().unwrap();
        }
        // Bounded: the parent kills this process long before.
        for _ in 0..600 {
            zerorx::time::sleep(Duration::from_millis(100)).await;
            while let Some(c) = s.cq.try_next() {
                if c.kind == OpKind::Recv {
                    let _ = s.ep.recv(&rbuf.all()).post();
                }
            }
        }
    });
}

#[test]
fn peer_killed_mid_transfer() {
    if let Ok(provider) = std::env::var("ZERORX_FABRIC_CHILD") {
        child_peer(&provider);
        std::process::exit(0);
    }
    each_provider("peer_killed", |p| async move {
        let Some(net) = open(&p, &[Cap::Msg, Cap::RmaWrite]) else {
            return;
        };
        let exe = std::env::current_exe().unwrap();
        let mut child = std::process::Command::new(exe)
            .args([
                "peer_killed_mid_transfer",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("ZERORX_FABRIC_CHILD", &p)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("spawn the peer process");
        let stdout = child.stdout.take().unwrap();
        let line = std::thread::spawn(move || {
            use std::io::BufRead;
            std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .find_map(|l| l.find("PEER ").map(|i| l[i..].to_string()))
        });
        let mut waited = 0;
        while !line.is_finished() && waited < 300 {
            zerorx::time::sleep(Duration::from_millis(100)).await;
            waited += 1;
        }
        let line = line.join().unwrap().expect("the peer prints its address");
        let unhex = |s: &str| {
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
                .collect::<Vec<u8>>()
        };
        let mut parts = line.split_whitespace().skip(1);
        let addr = EpAddr::from_bytes(&unhex(parts.next().unwrap())).unwrap();
        let key = RemoteKey::from_bytes(&unhex(parts.next().unwrap())).unwrap();
        let a = side(&net, EndpointConfig::default());
        let peer =
            a.ep.connect(&addr)
                .await
                .expect("connect to the peer process");
        let src = region(&net, 4 << 20, Access::LOCAL);
        let mut posted = 0;
        for i in 0..48u64 {
            a.ep.write(peer, &src.all(), &key, (i % 16) * (4 << 20))
                .post()
                .unwrap();
            a.ep.send(peer, &src.slice(0..65536).unwrap())
                .level(Level::Sent)
                .post()
                .unwrap();
            posted += 2;
        }
        // Let some of it flow, then kill the peer mid-transfer.
        let first = next(&a.cq, "first completion").await;
        let mut results = vec![first];
        child.kill().expect("kill");
        child.wait().expect("reap");
        while results.len() < posted {
            results.push(next(&a.cq, "completion after the kill").await);
        }
        let lost = results
            .iter()
            .filter(|c| matches!(c.status, Err(OpError::ConnectionLost { .. })))
            .count();
        for c in &results {
            assert!(
                c.status.is_ok() || matches!(c.status, Err(OpError::ConnectionLost { .. })),
                "{p}: {c:?}"
            );
        }
        assert!(lost > 0, "{p}: some operations were cut off");
        assert_eq!(a.ep.ops_outstanding(), 0, "{p}: every op completed");
        // Later posts to the dead peer fail at once or complete with the loss.
        match a.ep.send(peer, &src.slice(0..8).unwrap()).post() {
            Err(PostError::PeerDown { peer: x, .. }) => assert_eq!(x, peer),
            Ok(_) => {
                let c = next(&a.cq, "send to a dead peer").await;
                assert!(
                    matches!(c.status, Err(OpError::ConnectionLost { .. })),
                    "{p}: {c:?}"
                );
            }
            Err(e) => panic!("{p}: {e}"),
        }
    });
}

#[test]
fn close_completes_everything_with_canceled() {
    each_provider("close", |p| async move {
        let Some(net) = open(&p, &[Cap::Msg, Cap::RmaRead]) else {
            return;
        };
        let (a, _b, ab, _, _t, key) = rma_target(&net).await;
        let buf = region(&net, 1 << 20, Access::LOCAL);
        let mut ops = Vec::new();
        for _ in 0..8 {
            ops.push(a.ep.recv(&buf.slice(0..64).unwrap()).post().unwrap());
        }
        let cq = a.cq.clone();
        drop(a.ep);
        let mut seen = Vec::new();
        while let Some(c) = cq.try_next() {
            assert_eq!(c.status, Err(OpError::Canceled), "{p}");
            seen.push(c.op);
        }
        seen.sort();
        ops.sort();
        assert_eq!(seen, ops, "{p}: one completion per op");
        assert_eq!(buf.ops_in_flight(), 0);
        let _ = (ab, key);
    });
}
