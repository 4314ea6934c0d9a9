//! A multishot accept that the kernel ends (here: `EMFILE`) surfaces the error once and
//! is armed again by the next `accept`. Own test binary: it lowers RLIMIT_NOFILE.

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
    let rt = common::rt(1, Default::default());
    rt.block_on(async {
        let l = TcpListener::bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
        let addr = l.local_addr().expect("addr");
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
        let err = first.err().expect("no fd left");
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
