//! Endpoint addresses as libfabric sees them: IPv4 `sockaddr_in` (`FI_SOCKADDR_IN`),
//! the listen address of the endpoint's zerorx-fabric endpoint.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, ToSocketAddrs, UdpSocket};

/// `sizeof(struct sockaddr_in)`.
pub(crate) const SOCKADDR_IN_LEN: usize = 16;

/// Reads a `sockaddr_in` from its bytes; `None` if it is not one.
pub(crate) fn from_bytes(b: &[u8]) -> Option<SocketAddrV4> {
    if b.len() < SOCKADDR_IN_LEN {
        return None;
    }
    let family = u16::from_ne_bytes([b[0], b[1]]);
    if i32::from(family) != libc::AF_INET {
        return None;
    }
    let port = u16::from_be_bytes([b[2], b[3]]);
    let ip = Ipv4Addr::new(b[4], b[5], b[6], b[7]);
    Some(SocketAddrV4::new(ip, port))
}

/// The `sockaddr_in` bytes of `a`.
pub(crate) fn to_bytes(a: SocketAddrV4) -> [u8; SOCKADDR_IN_LEN] {
    let mut b = [0u8; SOCKADDR_IN_LEN];
    b[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
    b[2..4].copy_from_slice(&a.port().to_be_bytes());
    b[4..8].copy_from_slice(&a.ip().octets());
    b
}

/// libfabric's text form (`fi_av_straddr`): `fi_sockaddr_in://1.2.3.4:5`.
pub(crate) fn to_text(a: SocketAddrV4) -> String {
    format!("fi_sockaddr_in://{a}")
}

/// Resolves a node and service (a port number) to an IPv4 address.
pub(crate) fn resolve(node: Option<&str>, service: Option<&str>) -> Result<SocketAddrV4, String> {
    let port = match service {
        None => 0,
        Some(s) => s
            .parse::<u16>()
            .map_err(|_| format!("service {s:?} is not a port number"))?,
    };
    let node = node.unwrap_or("127.0.0.1");
    let found = (node, port)
        .to_socket_addrs()
        .map_err(|e| format!("node {node:?} does not resolve: {e}"))?;
    found
        .filter_map(|a| match a {
            SocketAddr::V4(v4) => Some(v4),
            SocketAddr::V6(_) => None,
        })
        .next()
        .ok_or_else(|| format!("node {node:?} has no IPv4 address (only FI_SOCKADDR_IN)"))
}

/// The local address the kernel would send from to reach `dest` (port 0): where an
/// endpoint talking to `dest` listens, so `dest` can reach it back.
pub(crate) fn source_for(dest: SocketAddrV4) -> SocketAddrV4 {
    let probe = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).and_then(|s| {
        s.connect(dest)?;
        s.local_addr()
    });
    match probe {
        Ok(SocketAddr::V4(a)) if !a.ip().is_unspecified() => SocketAddrV4::new(*a.ip(), 0),
        _ => SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sockaddr_in_round_trips_and_other_families_are_refused() {
        let a = SocketAddrV4::new(Ipv4Addr::new(10, 1, 2, 3), 9228);
        assert_eq!(from_bytes(&to_bytes(a)), Some(a));
        let mut six = to_bytes(a);
        six[..2].copy_from_slice(&(libc::AF_INET6 as u16).to_ne_bytes());
        assert_eq!(from_bytes(&six), None);
        assert_eq!(from_bytes(&[0; 8]), None);
        assert_eq!(to_text(a), "fi_sockaddr_in://10.1.2.3:9228");
    }

    #[test]
    fn a_service_must_be_a_port_and_the_source_for_loopback_is_loopback() {
        assert!(resolve(Some("127.0.0.1"), Some("http")).is_err());
        let d = resolve(Some("127.0.0.1"), Some("9228")).unwrap();
        assert_eq!(d, SocketAddrV4::new(Ipv4Addr::LOCALHOST, 9228));
        assert_eq!(*source_for(d).ip(), Ipv4Addr::LOCALHOST);
    }
}
