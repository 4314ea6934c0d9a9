//! The engine against a small echo server of the test's own: every role, wrong bytes,
//! hang-ups, fixed work, churn's sources and refusals.

use super::*;
use crate::client::churn::CHURN_SOURCES;
use crate::client::plan::Pause;

#[test]
fn user_data_round_trips() {
    for (i, k) in [(0usize, SEND), (63, RECV), (70_000, CONNECT), (5, CLOSE)] {
        let ud = user_data(i, k);
        assert_eq!(((ud >> KIND_BITS) as usize, ud & 3), (i, k));
    }
}

struct NoProbe;
impl Probe for NoProbe {
    fn window_start(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn window_end(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A thread-per-connection server that echoes through `mangle`; it stops when the
/// client closes (each thread ends at EOF, the acceptor after `conns` accepts).
fn server(conns: usize, mangle: fn(&mut [u8])) -> SocketAddr {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    std::thread::spawn(move || {
        for s in l.incoming().take(conns) {
            // A churned connection reset before accept is not the listener's end.
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 65536];
                loop {
                    let n = match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    mangle(&mut buf[..n]);
                    if s.write_all(&buf[..n]).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

fn plan(addr: SocketAddr, roles: Vec<Role>) -> Plan {
    Plan {
        addr,
        roles,
        warmup: Duration::from_millis(20),
        measure: Duration::from_millis(150),
        open_rate: 0.0,
        max_ops: None,
    }
}

#[test]
fn every_role_completes_against_an_echo_server() {
    let roles = vec![
        Role::Closed { size: 64 },
        Role::Closed { size: 100_000 },
        Role::Stream {
            chunk: 65536,
            pause: Some(Pause {
                period: Duration::from_millis(50),
                stopped: Duration::from_millis(10),
            }),
        },
        Role::Churn { size: 64 },
        Role::Open { size: 64 },
    ];
    // Churn alone opens thousands of connections a second: never run out of accepts.
    let mut p = plan(server(usize::MAX, |_| {}), roles);
    p.open_rate = 2000.0;
    let r = Engine::connect(&p)
        .and_then(|e| e.run(&p, &mut NoProbe))
        .expect("run");
    assert!(
        r.rr.ops > 0 && r.stream.bytes > 0 && r.churn.ops > 0,
        "{r:?}"
    );
    assert!(r.rr.quantile_us(0.5) > 0.0);
    assert!(r.window >= Duration::from_millis(100));
}

#[test]
fn a_wrong_byte_fails_the_run() {
    let p = plan(server(1, |b| b[0] ^= 1), vec![Role::Closed { size: 64 }]);
    let e = Engine::connect(&p)
        .and_then(|e| e.run(&p, &mut NoProbe))
        .expect_err("corruption must be caught");
    assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
}

#[test]
fn a_server_that_hangs_up_fails_the_run() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    std::thread::spawn(move || drop(l.accept()));
    let p = plan(addr, vec![Role::Closed { size: 64 }]);
    assert!(Engine::connect(&p)
        .and_then(|e| e.run(&p, &mut NoProbe))
        .is_err());
}

#[test]
fn fixed_work_ends_the_window_early() {
    let mut p = plan(server(1, |_| {}), vec![Role::Closed { size: 64 }]);
    p.measure = Duration::from_secs(20);
    p.max_ops = Some(50);
    let t = Instant::now();
    let r = Engine::connect(&p)
        .and_then(|e| e.run(&p, &mut NoProbe))
        .expect("run");
    assert_eq!(r.rr.ops, 50);
    assert!(t.elapsed() < Duration::from_secs(10));
}

#[test]
fn churn_closes_every_connection_it_opens() {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Arc;
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    let (accepted, ended) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let peers = Arc::new(std::sync::Mutex::new(std::collections::BTreeSet::new()));
    let (a, e, pe) = (accepted.clone(), ended.clone(), peers.clone());
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            a.fetch_add(1, SeqCst);
            if let (Ok(peer), Ok(mut seen)) = (s.peer_addr(), pe.lock()) {
                seen.insert(peer.ip());
            }
            let e = e.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 64];
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 {
                        // The client's close (through its ring) arrived.
                        e.fetch_add(1, SeqCst);
                        return;
                    }
                    if s.write_all(&buf[..n]).is_err() {
                        return;
                    }
                }
            });
        }
    });
    let p = plan(addr, vec![Role::Churn { size: 64 }; 4]);
    let r = Engine::connect(&p)
        .and_then(|e| e.run(&p, &mut NoProbe))
        .expect("run");
    assert!(r.churn.ops > 0, "{r:?}");
    assert!(r.churn.quantile_us(0.5) > 0.0, "cycles are timed");
    let deadline = Instant::now() + Duration::from_secs(5);
    while ended.load(SeqCst) < accepted.load(SeqCst) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let (a, e) = (accepted.load(SeqCst), ended.load(SeqCst));
    assert_eq!(e, a, "every connection the client opened was closed");
    assert!(
        r.churn.ops <= a as u64,
        "{} cycles, {a} connections",
        r.churn.ops
    );
    // Connections took their source addresses in turn (TIME_WAIT spread over
    // sixteen 4-tuples per port).
    let seen = peers.lock().expect("peers").clone();
    let expected: std::collections::BTreeSet<_> = churn_sources(addr)
        .iter()
        .map(|s| s.ip())
        .take(a.min(usize::from(CHURN_SOURCES)))
        .collect();
    assert_eq!(seen, expected, "{a} connections");
}

#[test]
fn churn_spreads_sources_only_on_ipv4_loopback() {
    let local: SocketAddr = "127.0.0.1:9".parse().expect("addr");
    let sources = churn_sources(local);
    assert_eq!(sources.len(), usize::from(CHURN_SOURCES));
    assert!(sources
        .iter()
        .all(|s| s.ip().is_loopback() && s.port() == 0));
    assert_eq!(
        sources[0],
        "127.0.0.1:0".parse::<SocketAddr>().expect("addr")
    );
    for other in ["10.0.0.1:9", "[::1]:9"] {
        let server: SocketAddr = other.parse().expect("addr");
        assert!(churn_sources(server).is_empty(), "{other}");
    }
}

#[test]
fn a_refused_churn_connect_is_an_error() {
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind");
    let p = plan(addr, vec![Role::Churn { size: 64 }]);
    let t = Instant::now();
    let e = Engine::connect(&p)
        .and_then(|e| e.run(&p, &mut NoProbe))
        .expect_err("nothing listens");
    assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused, "{e}");
    // The send and receive linked behind the connect were cancelled and reaped
    // with it: teardown does not wait out its 5 s for them.
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
}

#[test]
fn a_refused_connection_is_an_error() {
    // Bind then drop a listener: nothing listens on that port any more.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind");
    let plan = Plan {
        addr,
        roles: vec![Role::Closed { size: 64 }],
        warmup: Duration::ZERO,
        measure: Duration::from_millis(10),
        open_rate: 0.0,
        max_ops: None,
    };
    assert!(Engine::connect(&plan).is_err());
}
