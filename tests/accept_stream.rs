//! `TcpListener::accept_stream`: the connection without a `getpeername`, whose peer
//! address is still right when asked for, and no fd left behind.

mod common;

use std::io::{Read, Write};
use std::time::Duration;

#[test]
fn accept_stream_serves_and_the_peer_address_is_right_when_asked() {
    let _g = common::fd_lock();
    let rt = common::rt(1, Default::default());
    rt.block_on(async {
        let (l, addr) = common::loopback_listener();
        let fds = common::fd_count();
        for round in 0..3u8 {
            let mut client = std::net::TcpStream::connect(addr).expect("connect");
            let s = zerorx::timeout(Duration::from_secs(5), l.accept_stream())
                .await
                .expect("accept in time")
                .expect("accept");
            assert_eq!(
                s.peer_addr().expect("peer"),
                client.local_addr().expect("client addr"),
                "round {round}"
            );
            client.write_all(&[round; 64]).expect("write");
            let got = s.recv().await.expect("recv").expect("data");
            assert_eq!(&got[..], &[round; 64][..]);
            s.send(got).await.expect("send");
            let mut back = [0u8; 64];
            client.read_exact(&mut back).expect("read");
            assert_eq!(back, [round; 64]);
            drop(client);
            assert!(s.recv().await.expect("eof").is_none(), "end of stream");
        }
        // The streams are dropped; their closes may go through the ring, which the
        // worker submits on its next turn.
        zerorx::sleep(Duration::from_millis(20)).await;
        assert!(
            common::fd_count() <= fds,
            "an accepted stream's fd is left open: {} > {fds}",
            common::fd_count()
        );
    });
}

#[test]
fn accept_stream_returns_a_connection_reset_after_the_accept_and_its_recv_fails() {
    let _g = common::fd_lock();
    let rt = common::rt(1, Default::default());
    rt.block_on(async {
        let (l, addr) = common::loopback_listener();
        let client = std::net::TcpStream::connect(addr).expect("connect");
        socket2::SockRef::from(&client)
            .set_linger(Some(Duration::ZERO))
            .expect("SO_LINGER 0");
        drop(client);
        std::thread::sleep(Duration::from_millis(50));
        // Linux keeps a connection reset in the accept queue there (no
        // `ECONNABORTED`): it comes back, and its receive reports the reset.
        let s = zerorx::timeout(Duration::from_secs(5), l.accept_stream())
            .await
            .expect("accept in time")
            .expect("a reset is not an accept error");
        let r = zerorx::timeout(Duration::from_secs(5), s.recv())
            .await
            .expect("recv in time");
        match r {
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::ECONNRESET), "{e}"),
            Ok(got) => panic!("a reset connection received {got:?}"),
        }
    });
}
