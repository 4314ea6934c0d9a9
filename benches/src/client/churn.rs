//! Where churn connections come from: loopback source addresses bound without a port.

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;

/// How many loopback source addresses (127.0.0.1 up) churn spreads its connections over.
pub(super) const CHURN_SOURCES: u8 = 16;

/// The source addresses churn connections to `server` bind to, in turn: 127.0.0.1 to
/// 127.0.0.16 when the server is on IPv4 loopback, none (the kernel picks) otherwise.
///
/// Why: every churn cycle leaves a TIME_WAIT socket on the client for 60 s, and with one
/// source address the 4-tuples to the one server port run short of ports at ~14k
/// connections/s. `connect` then scans the port range (`__inet_hash_connect`,
/// `tcp_twsk_unique`: ~40 % of the client's CPU in a W6-64 profile), the load generator
/// and not the server sets the rate, and some connects stall for 100 ms. Sixteen
/// sources give each port sixteen 4-tuples, so the first port tried is free.
pub(super) fn churn_sources(server: SocketAddr) -> Vec<SocketAddr> {
    match server {
        SocketAddr::V4(v4) if v4.ip().is_loopback() => (1..=CHURN_SOURCES)
            .map(|host| SocketAddr::from(([127, 0, 0, host], 0)))
            .collect(),
        _ => Vec::new(),
    }
}

/// Binds `s` to `source` without taking a port: `IP_BIND_ADDRESS_NO_PORT` leaves the
/// port to `connect`, which picks one unique for the whole 4-tuple instead of one free
/// for every address.
pub(super) fn bind_source(s: &socket2::Socket, source: SocketAddr) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: `s` is an open socket for the whole call, and the option value points
    // at a live c_int whose size is passed with it.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    s.bind(&source.into())
        .map_err(|e| io::Error::new(e.kind(), format!("churn source {source}: bind: {e}")))
}
