//! A multishot accept that the kernel ends (here: `EMFILE`) surfaces the error once and
//! is armed again by the next `accept`; a connection reset before it was accepted is
//! closed and skipped, not an error. Own test binary: it lowers RLIMIT_NOFILE.

mod common;

use std::time::Duration;
use zerorx::net::TcpListener;

fn set_nofile(soft: u64) -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: reads and writes a valid rlimit struct for this process.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        let old = lim.rlim_cur;
        lim.rlim_cur = soft;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
        old
    }
}

#[test]
fn accept_error_ends_the_multishot_and_the_next_accept_rearms() {
    // Fills the fd table: not at the same time as the other test here.
    let _g = common::fd_lock();
    let rt = common::rt(1, Default::default());
    rt.block_on(async {
        let (l, addr) = common::loopback_listener();
        // io_uring reads RLIMIT_NOFILE when it prepares the accept, so lower it first:
        // fill every fd below the limit, keeping two spare for one connection.
        let old = set_nofile(common::fd_count() as u64 + 16);
        let mut spare = Vec::new();
        while let Ok(s) = std::net::UdpSocket::bind("127.0.0.1:0") {
            spare.push(s);
        }
        drop(spare.pop());
        drop(spare.pop());
        let client = std::net::TcpStream::connect(addr).expect("connect");
        let (s0, _) = l.accept().await.expect("first accept takes the last fd");
        // One more fd for the second client's own socket; none left for its accept.
        drop(spare.pop());
        let client2 = std::net::TcpStream::connect(addr).expect("connect 2");
        let first = zerorx::timeout(Duration::from_secs(2), l.accept())
            .await
            .expect("accept completes");
        let err = first.expect_err("no fd left");
        assert_eq!(err.raw_os_error(), Some(libc::EMFILE), "{err}");
        drop(spare);
        set_nofile(old);
        // The next accept re-arms and takes the waiting connections.
        let (s1, _) = zerorx::timeout(Duration::from_secs(2), l.accept())
            .await
            .expect("re-armed")
            .expect("accept");
        assert!(l.rearms() >= 1, "rearms {}", l.rearms());
        drop((s0, s1, client, client2));
    });
}

/// Connects to `addr` and resets the connection at once (SO_LINGER 0, close): it is
/// queued for accept and then reset there.
fn connect_and_reset(addr: std::net::SocketAddr) {
    let s = std::net::TcpStream::connect(addr).expect("connect");
    socket2::SockRef::from(&s)
        .set_linger(Some(Duration::ZERO))
        .expect("SO_LINGER 0");
    drop(s);
}

/// The next connection `l` accepts is `good` (a client bound to that address), and it
/// carries bytes both ways.
async fn accepts_good(l: &TcpListener, good: &mut std::net::TcpStream) {
    use std::io::{Read, Write};
    let (s, peer) = zerorx::timeout(Duration::from_secs(5), l.accept())
        .await
        .expect("accept in time")
        .expect("a reset connection is not an accept error");
    assert_eq!(
        peer,
        good.local_addr().expect("addr"),
        "the good connection"
    );
    good.write_all(b"ping").expect("write");
    let got = s.recv().await.expect("recv").expect("data");
    assert_eq!(&got[..], b"ping");
    s.send(bytes::Bytes::from_static(b"pong"))
        .await
        .expect("send");
    let mut back = [0u8; 4];
    good.read_exact(&mut back).expect("read");
    assert_eq!(&back, b"pong");
}

/// The resets travel over loopback: give the kernel a moment to process them.
fn let_resets_arrive() {
    std::thread::sleep(Duration::from_millis(50));
}

#[test]
fn connection_reset_before_accept_is_closed_counted_and_skipped() {
    let _g = common::fd_lock();
    let rt = common::rt(1, Default::default());
    let h = rt.handle().clone();
    rt.block_on(async {
        let (l, addr) = common::loopback_listener();
        let fds = common::fd_count();
        // Reset while still in the kernel's accept queue (no accept armed yet).
        for _ in 0..3 {
            connect_and_reset(addr);
        }
        let_resets_arrive();
        let mut good = std::net::TcpStream::connect(addr).expect("connect good");
        accepts_good(&l, &mut good).await;
        assert_eq!(h.metrics()[0].accept_reset, 3, "{:?}", h.metrics()[0]);
        // Reset after the armed multishot accept took them, before `accept` is called.
        for _ in 0..2 {
            connect_and_reset(addr);
        }
        let_resets_arrive();
        zerorx::sleep(Duration::from_millis(20)).await;
        let mut good2 = std::net::TcpStream::connect(addr).expect("connect good 2");
        accepts_good(&l, &mut good2).await;
        assert_eq!(h.metrics()[0].accept_reset, 5, "{:?}", h.metrics()[0]);
        drop((good, good2));
        // The reset connections' fds were closed (the accepted streams are dropped).
        zerorx::sleep(Duration::from_millis(20)).await;
        assert!(
            common::fd_count() <= fds,
            "no fd of a reset connection is left open: {} > {fds}",
            common::fd_count()
        );
    });
}
