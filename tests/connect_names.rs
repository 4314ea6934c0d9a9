//! `TcpStream::connect` by name and by address list: names resolved on the blocking
//! pool (`localhost` only: it resolves from the hosts file, with no query on the
//! network), every address tried in order, errors naming the host and what was tried.

mod common;

use std::io::ErrorKind;
use std::net::SocketAddr;
use zerorx::net::TcpStream;

/// A loopback port nothing listens on (bound, then closed).
fn closed_port() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr")
}

#[test]
fn a_name_resolves_on_the_blocking_pool_and_connects() {
    let rt = common::rt(1, zerorx::WakeMode::EventFd);
    let h = rt.handle().clone();
    rt.block_on(async move {
        let (l, addr) = common::loopback_listener();
        let accepted = zerorx::spawn(async move {
            let mut n = 0;
            while n < 3 && l.accept().await.is_ok() {
                n += 1;
            }
            n
        });
        let s = TcpStream::connect(format!("localhost:{}", addr.port()))
            .await
            .expect("localhost resolves from the hosts file");
        assert_eq!(s.peer_addr().expect("peer").port(), addr.port());
        // The lookup ran on a pool thread, not on the worker.
        assert!(h.dump().blocking.threads >= 1, "{}", h.dump());
        // Text that is an address is not looked up; a (host, port) pair works too.
        TcpStream::connect(addr.to_string())
            .await
            .expect("address text");
        TcpStream::connect(("127.0.0.1", addr.port()))
            .await
            .expect("pair");
        assert_eq!(accepted.await.expect("task"), 3);
    });
}

#[test]
fn every_address_is_tried_in_order() {
    let rt = common::rt(1, zerorx::WakeMode::EventFd);
    rt.block_on(async {
        let (l, addr) = common::loopback_listener();
        let refused = closed_port();
        let accept = zerorx::spawn(async move { l.accept().await.map(drop) });
        let s = TcpStream::connect(vec![refused, addr])
            .await
            .expect("the second address connects");
        assert_eq!(s.peer_addr().expect("peer"), addr);
        accept.await.expect("task").expect("accepted");

        let other = closed_port();
        let err = TcpStream::connect(&[refused, other][..])
            .await
            .expect_err("nothing listens");
        assert_eq!(err.kind(), ErrorKind::ConnectionRefused);
        let text = err.to_string();
        assert!(
            text.contains(&refused.to_string()) && text.contains(&other.to_string()),
            "every address tried is named: {text}"
        );
    });
}

#[test]
fn failures_name_what_was_asked_for() {
    let rt = common::rt(1, zerorx::WakeMode::EventFd);
    rt.block_on(async {
        // One address given as such: the connect's own error, as it always was.
        let refused = closed_port();
        let err = TcpStream::connect(refused).await.expect_err("refused");
        assert_eq!(err.raw_os_error(), Some(libc::ECONNREFUSED));
        // A name: the error names it.
        let err = TcpStream::connect(format!("localhost:{}", refused.port()))
            .await
            .expect_err("refused");
        assert_eq!(err.kind(), ErrorKind::ConnectionRefused);
        assert!(err.to_string().contains("localhost"), "{err}");
        // No port: the resolver refuses the text, and the error says which.
        let err = TcpStream::connect("localhost").await.expect_err("no port");
        assert!(err.to_string().contains("\"localhost\""), "{err}");
        // An empty list.
        let err = TcpStream::connect(Vec::<SocketAddr>::new())
            .await
            .expect_err("nothing to connect to");
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
    });
}
