//! The Toeplitz hash NICs use for receive-side scaling (RSS), and what follows from it:
//! which receive queue a TCP flow lands on, and which local port puts a new connection
//! on a chosen queue.
//!
//! Written here rather than taken from a crate: it is twenty lines, and the crates
//! that carry it come with a whole packet-processing stack. The tests check it against
//! the verification vectors Microsoft publishes for RSS ("Verifying the RSS Hash
//! Calculation").

use std::net::{IpAddr, SocketAddr};
use std::ops::RangeInclusive;

/// The Toeplitz hash of `input` under `key`: for every set bit of the input, XOR in
/// the 32 key bits starting at that bit's position. A key shorter than the input plus
/// four bytes runs out: the missing key bits count as zero.
pub fn toeplitz(key: &[u8], input: &[u8]) -> u32 {
    let key_bit = |i: usize| -> u32 {
        key.get(i / 8)
            .map_or(0, |byte| u32::from(byte >> (7 - i % 8) & 1))
    };
    // The 32-bit window of the key that starts at bit 0, slid one bit per input bit.
    let mut window: u32 = (0..32).fold(0, |w, i| w << 1 | key_bit(i));
    let mut hash = 0;
    for (byte_index, byte) in input.iter().enumerate() {
        for bit in 0..8 {
            if byte & (0x80 >> bit) != 0 {
                hash ^= window;
            }
            window = window << 1 | key_bit(byte_index * 8 + bit + 32);
        }
    }
    hash
}

/// The bytes RSS hashes for a TCP packet from `src` to `dst`: source address,
/// destination address, source port, destination port, in network order. `None` when
/// the two addresses are of different families.
fn tcp_input(src: SocketAddr, dst: SocketAddr) -> Option<Vec<u8>> {
    let mut input = Vec::with_capacity(36);
    match (src.ip(), dst.ip()) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            input.extend_from_slice(&s.octets());
            input.extend_from_slice(&d.octets());
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            input.extend_from_slice(&s.octets());
            input.extend_from_slice(&d.octets());
        }
        _ => return None,
    }
    input.extend_from_slice(&src.port().to_be_bytes());
    input.extend_from_slice(&dst.port().to_be_bytes());
    Some(input)
}

/// The RSS hash of TCP packets from `src` to `dst` (the NIC hashes the packets it
/// *receives*: for a local socket, `src` is the peer and `dst` the local address).
/// `None` for mixed address families.
pub fn tcp_flow_hash(key: &[u8], src: SocketAddr, dst: SocketAddr) -> Option<u32> {
    tcp_input(src, dst).map(|input| toeplitz(key, &input))
}

/// The queue a hash selects through the indirection table, as drivers index it (the
/// hash modulo the table size). `None` for an empty table.
pub fn queue_for_hash(hash: u32, indirection: &[u32]) -> Option<u32> {
    if indirection.is_empty() {
        return None;
    }
    indirection.get(hash as usize % indirection.len()).copied()
}

/// A local port in `ports` such that packets from `peer` to `local_ip:port` land on
/// `queue`, given the NIC's RSS `key` and `indirection` table: bind the connecting
/// socket to it and its replies arrive on that queue (what a client does to receive
/// zero-copy on the queue a worker owns). The first such port from `ports`' start, or
/// `None` when no port in the range maps there (the queue is not in the table, or
/// the range is too small).
pub fn local_port_for_queue(
    key: &[u8],
    indirection: &[u32],
    peer: SocketAddr,
    local_ip: IpAddr,
    queue: u32,
    ports: RangeInclusive<u16>,
) -> Option<u16> {
    if !indirection.contains(&queue) {
        return None;
    }
    ports.into_iter().find(|&port| {
        tcp_flow_hash(key, peer, SocketAddr::new(local_ip, port))
            .and_then(|h| queue_for_hash(h, indirection))
            == Some(queue)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The secret key of the published RSS verification data.
    const KEY: [u8; 40] = [
        0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f,
        0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
        0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
    ];

    fn sa(s: &str) -> SocketAddr {
        s.parse().expect("address")
    }

    /// (destination, source, IP-only hash, IP+TCP hash), as published.
    const V4: [(&str, &str, u32, u32); 5] = [
        (
            "161.142.100.80:1766",
            "66.9.149.187:2794",
            0x323e8fc2,
            0x51ccc178,
        ),
        (
            "65.69.140.83:4739",
            "199.92.111.2:14230",
            0xd718262a,
            0xc626b0ea,
        ),
        (
            "12.22.207.184:38024",
            "24.19.198.95:12898",
            0xd2d0a5de,
            0x5c2b394a,
        ),
        (
            "209.142.163.6:2217",
            "38.27.205.30:48228",
            0x82989176,
            0xafc7327f,
        ),
        (
            "202.188.127.2:1303",
            "153.39.163.191:44251",
            0x5d1809c5,
            0x10e828a2,
        ),
    ];

    const V6: [(&str, &str, u32, u32); 3] = [
        (
            "[3ffe:2501:200:3::1]:1766",
            "[3ffe:2501:200:1fff::7]:2794",
            0x2cc18cd5,
            0x40207d3d,
        ),
        (
            "[ff02::1]:4739",
            "[3ffe:501:8::260:97ff:fe40:efab]:14230",
            0x0f0c461c,
            0xdde51bbf,
        ),
        (
            "[fe80::200:f8ff:fe21:67cf]:38024",
            "[3ffe:1900:4545:3:200:f8ff:fe21:67cf]:44251",
            0x4b61e985,
            0x02d1feef,
        ),
    ];

    #[test]
    fn the_published_rss_vectors_hold() {
        for (dst, src, ip_only, with_tcp) in V4.into_iter().chain(V6) {
            let (dst, src) = (sa(dst), sa(src));
            assert_eq!(
                tcp_flow_hash(&KEY, src, dst),
                Some(with_tcp),
                "{src} -> {dst}"
            );
            let input = tcp_input(src, dst).expect("one family");
            let addresses = &input[..input.len() - 4];
            assert_eq!(
                toeplitz(&KEY, addresses),
                ip_only,
                "{src} -> {dst}, addresses only"
            );
        }
    }

    #[test]
    fn mixed_families_and_empty_tables_have_no_queue() {
        assert_eq!(tcp_flow_hash(&KEY, sa("1.2.3.4:1"), sa("[::1]:2")), None);
        assert_eq!(queue_for_hash(7, &[]), None);
        assert_eq!(queue_for_hash(7, &[0, 1, 2]), Some(1));
        // A short key contributes zeros past its end rather than panicking.
        assert_eq!(toeplitz(&[], &[0xff; 12]), 0);
    }

    #[test]
    fn a_chosen_port_lands_on_the_chosen_queue() {
        let indirection: Vec<u32> = (0..128).map(|i| i % 4).collect();
        let peer = sa("10.0.0.1:9090");
        let local = "10.0.0.2".parse().expect("ip");
        for queue in 0..4 {
            let port = local_port_for_queue(&KEY, &indirection, peer, local, queue, 32768..=60999)
                .expect("a port for every queue in the table");
            let hash = tcp_flow_hash(&KEY, peer, SocketAddr::new(local, port)).expect("v4");
            assert_eq!(
                queue_for_hash(hash, &indirection),
                Some(queue),
                "port {port}"
            );
        }
        assert_eq!(
            local_port_for_queue(&KEY, &indirection, peer, local, 9, 32768..=60999),
            None,
            "queue 9 is not in the table"
        );
        assert_eq!(
            local_port_for_queue(&KEY, &indirection, peer, local, 3, 40000..=40000)
                .is_some_and(|p| p == 40000),
            queue_for_hash(
                tcp_flow_hash(&KEY, peer, SocketAddr::new(local, 40000)).expect("v4"),
                &indirection
            ) == Some(3),
            "a one-port range answers for that port only"
        );
    }
}
