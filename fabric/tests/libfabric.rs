//! The libfabric providers' own cases: that the libfabric 1.17 quirks measured on this
//! machine are normalised the way the provider documents (the shared semantics are the
//! conformance suite's, `fabric/tests/conformance.rs`). Needs the `libfabric` feature
//! (`scripts/test` installs `libfabric-dev` and builds with `--all-features`).
#![cfg(feature = "libfabric")]

use std::future::Future;
use std::time::Duration;
use zerorx_fabric::*;

const RXM: &str = "libfabric:tcp;ofi_rxm";
const SHM: &str = "libfabric:shm";
const OP_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `f` on a one-worker runtime, bounded in time.
fn run<F: Future<Output = ()>>(f: F) {
    let rt = zerorx::Runtime::builder()
        .threads(1)
        .shutdown_timeout(Duration::from_secs(5))
        .build()
        .expect("runtime");
    rt.block_on(async {
        if zerorx::time::timeout(Duration::from_secs(120), f)
            .await
            .is_err()
        {
            panic!("no result within 120 s");
        }
    });
}

fn domain(provider: &str, caps: &[Cap]) -> Domain {
    let req = Requirements::new().caps(caps.iter().copied());
    Fabric::open(provider, &req)
        .unwrap_or_else(|e| panic!("{provider}: {e} (is libfabric1 installed?)"))
        .domain(DomainConfig::default())
        .expect("domain")
}

struct Side {
    ep: Endpoint,
    cq: CompletionQueue,
}

fn side(d: &Domain, cfg: EndpointConfig) -> Side {
    let cq = d.completion_queue(cfg.tx_depth + cfg.rx_depth).expect("cq");
    let ep = d.endpoint(&cq, cfg).expect("endpoint");
    Side { ep, cq }
}

async fn next(cq: &CompletionQueue, what: &str) -> Completion {
    match zerorx::time::timeout(OP_TIMEOUT, cq.next()).await {
        Ok(c) => c,
        Err(_) => panic!("no completion for {what} within {OP_TIMEOUT:?}"),
    }
}

fn missing(d: &Discovery, cap: Cap) -> &str {
    d.missing_reason(cap)
        .unwrap_or_else(|| panic!("{}: {cap} should be missing", d.provider))
}

#[test]
fn both_providers_are_listed_after_the_default() {
    let all = Fabric::providers();
    assert_eq!(all.first().map(String::as_str), Some("uring-tcp"));
    assert!(
        all.iter().any(|p| p == RXM) && all.iter().any(|p| p == SHM),
        "{all:?}"
    );
}

#[test]
fn discovery_reports_the_measured_quirks() {
    let all = Requirements::new().caps(Cap::ALL);
    let rxm = Fabric::discover(RXM, &all).expect("discover rxm");
    for cap in [
        Cap::Msg,
        Cap::Tagged,
        Cap::SendImm,
        Cap::RmaWrite,
        Cap::RmaRead,
    ] {
        assert!(rxm.supports(cap), "{RXM}: {cap}\n{rxm}");
    }
    for cap in [
        Cap::SourceFilter,
        Cap::Cancel,
        Cap::LeaseRecv,
        Cap::PeerRemove,
    ] {
        assert!(rxm.supports(cap), "{RXM}: {cap}\n{rxm}");
    }
    assert!(missing(&rxm, Cap::DeliveryComplete).contains("closed endpoint"));
    assert!(missing(&rxm, Cap::TargetValidation).contains("drops the connection"));
    assert!(missing(&rxm, Cap::RmaWriteImm).contains("FI_RX_CQ_DATA"));
    assert!(missing(&rxm, Cap::Accept).contains("out of band"));
    assert!(rxm.ordering.contains("send after write") && rxm.ordering.contains("RMAs"));
    assert!(rxm.limits.max_msg_size >= 8 << 20 && rxm.limits.max_depth >= 256);

    let shm = Fabric::discover(SHM, &all).expect("discover shm");
    assert!(
        shm.supports(Cap::Msg) && shm.supports(Cap::DeliveryComplete),
        "{shm}"
    );
    assert!(missing(&shm, Cap::Tagged).contains("stale ignore mask"));
    assert!(missing(&shm, Cap::RmaWrite).contains("hangs both endpoints"));
    assert!(missing(&shm, Cap::RmaRead).contains("hangs both endpoints"));
    // Opening with a missing capability names it and where it is available.
    match Fabric::open(SHM, &Requirements::new().cap(Cap::RmaWrite)) {
        Err(FabricError::Unsupported {
            cap, available_in, ..
        }) => {
            assert_eq!(cap, Cap::RmaWrite);
            assert!(available_in.iter().any(|p| p == RXM), "{available_in:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn truncation_reports_the_full_length_on_rxm_and_none_on_shm() {
    for (provider, needed) in [(RXM, Some(64)), (SHM, None)] {
        run(async move {
            let d = domain(provider, &[Cap::Msg]);
            let (a, b) = (
                side(&d, EndpointConfig::default()),
                side(&d, EndpointConfig::default()),
            );
            let ab = a.ep.connect(&b.ep.address()).await.expect("connect");
            let src = d.register(64, Access::LOCAL).unwrap();
            let dst = d.register(64, Access::LOCAL).unwrap();
            src.write(0, &[7; 64]).unwrap();
            b.ep.recv(&dst.slice(0..16).unwrap()).post().unwrap();
            a.ep.send(ab, &src.all()).post().unwrap();
            assert!(next(&a.cq, "send").await.is_ok());
            let c = next(&b.cq, "truncated recv").await;
            assert_eq!(
                c.status,
                Err(OpError::Truncated { needed, posted: 16 }),
                "{provider}"
            );
            // rxm's dynamic receive buffers (turned off by the provider) would have
            // dropped the connection here, and this message with it.
            b.ep.recv(&dst.all()).post().unwrap();
            a.ep.send(ab, &src.slice(0..5).unwrap()).post().unwrap();
            assert!(next(&a.cq, "send").await.is_ok());
            let c = next(&b.cq, "recv after truncation").await;
            assert_eq!((c.status, c.len), (Ok(()), 5), "{provider}");
        });
    }
}

#[test]
fn a_refused_rma_costs_no_message_behind_it() {
    run(async {
        let d = domain(RXM, &[Cap::Msg, Cap::RmaWrite]);
        let (a, b) = (
            side(&d, EndpointConfig::default()),
            side(&d, EndpointConfig::default()),
        );
        let ab = a.ep.connect(&b.ep.address()).await.expect("connect");
        let target = d.register(4096, Access::ALL).unwrap();
        let stale = target.remote(0..4096, Access::REMOTE_WRITE).unwrap();
        assert!(target.revoke(&stale));
        let src = d.register(4096, Access::LOCAL).unwrap();
        src.write(0, b"behind the refused write").unwrap();
        let dst = d.register(64, Access::LOCAL).unwrap();
        b.ep.recv(&dst.all()).post().unwrap();
        // Posted back to back: rxm drops the connection when it refuses the write, so the
        // provider holds the send until the write has completed.
        let w =
            a.ep.write(ab, &src.slice(0..100).unwrap(), &stale, 0)
                .post()
                .unwrap();
        let s = a.ep.send(ab, &src.slice(0..24).unwrap()).post().unwrap();
        let c = next(&a.cq, "refused write").await;
        assert_eq!(c.op, w);
        assert_eq!(
            c.status,
            Err(OpError::RemoteAccess {
                key: stale.key,
                fault: AccessFault::BadKey
            })
        );
        let c = next(&a.cq, "send").await;
        assert_eq!((c.op, c.status), (s, Ok(())));
        let r = next(&b.cq, "recv").await;
        assert_eq!((r.status, r.len), (Ok(()), 24));
        assert_eq!(dst.to_vec(0..24).unwrap(), b"behind the refused write");
        assert_eq!(
            target.to_vec(0..100).unwrap(),
            vec![0; 100],
            "nothing written"
        );
        // A fresh key works over the re-established connection.
        let fresh = target.remote(0..4096, Access::REMOTE_WRITE).unwrap();
        a.ep.write(ab, &src.slice(0..8).unwrap(), &fresh, 0)
            .post()
            .unwrap();
        assert_eq!(next(&a.cq, "write with a fresh key").await.status, Ok(()));
        assert_eq!(target.to_vec(0..8).unwrap(), b"behind t");
    });
}

#[test]
fn an_unreachable_peer_ends_in_connection_lost_then_peer_down() {
    run(async {
        let d = domain(RXM, &[Cap::Msg]);
        let gone = side(&d, EndpointConfig::default());
        let addr = gone.ep.address();
        drop(gone);
        let cfg = EndpointConfig {
            connect_timeout: Duration::from_millis(300),
            ..Default::default()
        };
        let a = side(&d, cfg);
        let peer =
            a.ep.connect(&addr)
                .await
                .expect("RDM connect only checks the address");
        let src = d.register(64, Access::LOCAL).unwrap();
        let first = a.ep.send(peer, &src.slice(0..8).unwrap()).post().unwrap();
        let second = a.ep.send(peer, &src.slice(0..8).unwrap()).post().unwrap();
        for op in [first, second] {
            let c = next(&a.cq, "send to a closed endpoint").await;
            assert_eq!(c.op, op, "in post order");
            assert!(
                matches!(c.status, Err(OpError::ConnectionLost { peer: Some(p), .. }) if p == peer),
                "{c:?}"
            );
        }
        match a.ep.send(peer, &src.slice(0..8).unwrap()).post() {
            Err(PostError::PeerDown { peer: p, cause }) => {
                assert_eq!(p, peer);
                assert!(cause.contains("not reachable"), "{cause}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(a.ep.ops_outstanding(), 0);
        // Removing and inserting again is the explicit reconnect.
        a.ep.remove_peer(peer).unwrap();
        assert_ne!(a.ep.insert_peer(&addr).unwrap(), peer);
    });
}

#[test]
fn bad_addresses_are_refused_before_libfabric_reads_them() {
    run(async {
        for provider in [RXM, SHM] {
            let d = domain(provider, &[Cap::Msg]);
            let a = side(&d, EndpointConfig::default());
            let mut addr = a.ep.address();
            addr.bytes.truncate(3);
            assert!(
                matches!(a.ep.insert_peer(&addr), Err(FabricError::BadAddress { .. })),
                "{provider}"
            );
        }
    });
}

#[test]
fn shm_sends_complete_before_the_receiver_posts() {
    run(async {
        let d = domain(SHM, &[Cap::Msg]);
        let (a, b) = (
            side(&d, EndpointConfig::default()),
            side(&d, EndpointConfig::default()),
        );
        let ab = a.ep.connect(&b.ep.address()).await.expect("connect");
        let n = 1 << 20;
        let src = d.register(n, Access::LOCAL).unwrap();
        let data: Vec<u8> = (0..n).map(|i| (i * 31 % 251) as u8).collect();
        src.write(0, &data).unwrap();
        a.ep.send(ab, &src.all()).post().unwrap();
        // shm moves messages above 4 KiB only once the receiver matched them; the
        // provider sends from a copy so the send completes now.
        assert!(next(&a.cq, "send").await.is_ok());
        src.write(0, &vec![0; n]).unwrap();
        drop(src);
        let dst = d.register(n, Access::LOCAL).unwrap();
        b.ep.recv(&dst.all()).post().unwrap();
        let c = next(&b.cq, "late recv").await;
        assert_eq!((c.status, c.len), (Ok(()), n));
        assert!(
            dst.to_vec(0..n).unwrap() == data,
            "the data as it was at post time"
        );
    });
}

#[test]
fn closing_an_shm_peer_of_the_same_process_is_connection_loss_not_a_crash() {
    run(async {
        let d = domain(SHM, &[Cap::Msg]);
        let a = side(&d, EndpointConfig::default());
        let b = side(&d, EndpointConfig::default());
        let c = side(&d, EndpointConfig::default());
        let ab = a.ep.connect(&b.ep.address()).await.unwrap();
        let cb = c.ep.connect(&b.ep.address()).await.unwrap();
        let src = d.register(1 << 20, Access::LOCAL).unwrap();
        let dst = d.register(64, Access::LOCAL).unwrap();
        b.ep.recv(&dst.all()).post().unwrap();
        b.ep.recv(&dst.all()).post().unwrap();
        a.ep.send(ab, &src.slice(0..8).unwrap()).post().unwrap();
        assert!(next(&a.cq, "send").await.is_ok());
        assert!(next(&b.cq, "recv").await.is_ok());
        // A send the receiver must pull (above shm's inject size), sent as a delivered
        // send so it cannot complete early: it is still waiting when b closes.
        let pending =
            a.ep.send(ab, &src.slice(0..65536).unwrap())
                .level(Level::Delivered)
                .post()
                .unwrap();
        let bq = b.cq.clone();
        drop(b);
        assert_eq!(
            bq.try_next().map(|c| c.status),
            Some(Err(OpError::Canceled))
        );
        let c1 = next(&a.cq, "send waiting on the closed peer").await;
        assert_eq!(c1.op, pending);
        assert!(
            matches!(c1.status, Err(OpError::ConnectionLost { .. })),
            "{c1:?}"
        );
        assert!(matches!(
            a.ep.send(ab, &src.slice(0..8).unwrap()).post(),
            Err(PostError::PeerDown { .. })
        ));
        // Another endpoint that still has it, and one that removes it, carry on.
        assert!(matches!(
            c.ep.send(cb, &src.slice(0..8).unwrap()).post(),
            Err(PostError::PeerDown { .. })
        ));
        a.ep.remove_peer(ab).unwrap();
        let e = side(&d, EndpointConfig::default());
        let ae = a.ep.connect(&e.ep.address()).await.unwrap();
        e.ep.recv(&dst.all()).post().unwrap();
        a.ep.send(ae, &src.slice(0..8).unwrap()).post().unwrap();
        assert!(next(&a.cq, "send to a live peer").await.is_ok());
        assert!(next(&e.cq, "recv").await.is_ok());
        drop(c);
        drop(a);
    });
}

/// The child side of `a_dead_shm_peer_process_is_connection_loss`: an shm endpoint that
/// prints its address and never receives, until killed.
fn shm_child() {
    run(async {
        let d = domain(SHM, &[Cap::Msg]);
        let s = side(&d, EndpointConfig::default());
        let hex: String =
            s.ep.address()
                .to_bytes()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
        println!("\nSHMPEER {hex}");
        use std::io::Write;
        std::io::stdout().flush().unwrap();
        // Bounded: the parent kills this process long before.
        zerorx::time::sleep(Duration::from_secs(60)).await;
    });
}

#[test]
fn a_dead_shm_peer_process_is_connection_loss() {
    if std::env::var_os("ZERORX_LF_SHM_CHILD").is_some() {
        shm_child();
        std::process::exit(0);
    }
    let exe = std::env::current_exe().unwrap();
    let mut child = std::process::Command::new(exe)
        .args([
            "a_dead_shm_peer_process_is_connection_loss",
            "--exact",
            "--nocapture",
        ])
        .env("ZERORX_LF_SHM_CHILD", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn the peer process");
    let stdout = child.stdout.take().unwrap();
    let line = {
        use std::io::BufRead;
        std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find_map(|l| l.strip_prefix("SHMPEER ").map(str::to_string))
    };
    let Some(hex) = line else {
        let _ = child.kill();
        panic!("the child printed no address");
    };
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    let addr = EpAddr::from_bytes(&bytes).unwrap();
    run(async move {
        let d = domain(SHM, &[Cap::Msg, Cap::DeliveryComplete]);
        let a = side(&d, EndpointConfig::default());
        let peer = a.ep.connect(&addr).await.unwrap();
        let src = d.register(65536, Access::LOCAL).unwrap();
        // Waits for the child to take it, which it never does.
        let op =
            a.ep.send(peer, &src.all())
                .level(Level::Delivered)
                .post()
                .unwrap();
        zerorx::time::sleep(Duration::from_millis(100)).await;
        assert!(a.cq.try_next().is_none(), "nobody received it");
        let pid = child.id();
        child.kill().expect("kill");
        child.wait().expect("reap");
        // A killed process cannot unlink its shm region; do it for it.
        if let Ok(dir) = std::fs::read_dir("/dev/shm") {
            for e in dir.flatten() {
                if e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("{pid}:"))
                {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        let c = next(&a.cq, "send to the dead process").await;
        assert_eq!(c.op, op);
        match c.status {
            Err(OpError::ConnectionLost {
                peer: Some(p),
                cause,
            }) => {
                assert_eq!(p, peer);
                assert!(cause.contains("exited"), "{cause}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            a.ep.send(peer, &src.slice(0..8).unwrap()).post(),
            Err(PostError::PeerDown { .. })
        ));
    });
}

/// A sender that closes (and whose runtime ends) right after its send reported `Sent`,
/// before the receiver on another thread has even posted a receive.
fn sender_closes_right_after_a_sent_send(provider: &'static str) {
    let n = 1 << 20;
    let data: Vec<u8> = (0..n).map(|i| (i * 7 % 253) as u8).collect();
    let expect = data.clone();
    let (to_sender, from_receiver) = std::sync::mpsc::channel::<EpAddr>();
    let (to_receiver, from_sender) = std::sync::mpsc::channel::<EpAddr>();
    let sender = std::thread::spawn(move || {
        run(async move {
            let d = domain(provider, &[Cap::Msg]);
            let s = side(&d, EndpointConfig::default());
            to_receiver.send(s.ep.address()).unwrap();
            let peer = s.ep.connect(&from_receiver.recv().unwrap()).await.unwrap();
            let src = d.register(n, Access::LOCAL).unwrap();
            src.write(0, &data).unwrap();
            s.ep.send(peer, &src.all()).post().unwrap();
            assert!(next(&s.cq, "send").await.is_ok(), "{provider}");
            src.write(0, &vec![0; n]).unwrap();
            // The endpoint, the region and then the runtime go now.
        });
    });
    run(async move {
        let d = domain(provider, &[Cap::Msg]);
        let r = side(&d, EndpointConfig::default());
        to_sender.send(r.ep.address()).unwrap();
        r.ep.connect(&from_sender.recv().unwrap()).await.unwrap();
        zerorx::time::sleep(Duration::from_millis(100)).await;
        let dst = d.register(n, Access::LOCAL).unwrap();
        r.ep.recv(&dst.all()).post().unwrap();
        let c = next(&r.cq, "recv after the sender closed").await;
        assert_eq!((c.status, c.len), (Ok(()), n), "{provider}");
        assert!(
            dst.to_vec(0..n).unwrap() == expect,
            "{provider}: the data as sent"
        );
    });
    sender.join().expect("sender thread");
}

#[test]
fn a_sent_rxm_message_survives_its_sender_closing() {
    // 1 MiB goes by rendezvous: the receiver pulls it from the sender's endpoint.
    sender_closes_right_after_a_sent_send(RXM);
}

#[test]
fn a_sent_shm_message_survives_its_sender_closing() {
    // shm has the receiver copy it out of the sender's memory.
    sender_closes_right_after_a_sent_send(SHM);
}
