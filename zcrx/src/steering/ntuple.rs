//! The NIC's ntuple (flow steering) rules, through the `SIOCETHTOOL` ioctl
//! (`ETHTOOL_GRXCLSRLCNT`, `ETHTOOL_GRXCLSRLALL`, `ETHTOOL_GRXCLSRULE`): ethtool
//! netlink has no message for them, and no maintained crate reads them, so the
//! `struct ethtool_rxnfc` exchange is done here, as bytes at the offsets the uapi
//! header gives (checked by `gcc` against `linux/ethtool.h`; see the tests).

use std::io;
use std::net::IpAddr;

const SIOCETHTOOL: libc::c_ulong = 0x8946;
const GRXCLSRLCNT: u32 = 0x2e;
const GRXCLSRULE: u32 = 0x2f;
const GRXCLSRLALL: u32 = 0x30;
const TCP_V4_FLOW: u32 = 0x01;
const TCP_V6_FLOW: u32 = 0x05;
/// Flag bits above the flow type (`FLOW_EXT`, `FLOW_MAC_EXT`, `FLOW_RSS`).
const FLOW_TYPE_FLAGS: u32 = 0x8000_0000 | 0x4000_0000 | 0x2000_0000;
/// `RX_CLS_FLOW_DISC`: the rule drops the flow.
const RING_DISCARD: u64 = u64::MAX;

/// `sizeof(struct ethtool_rxnfc)` and the offsets used inside it.
const RXNFC_SIZE: usize = 192;
const OFF_CMD: usize = 0;
const OFF_DATA: usize = 8;
const OFF_FS: usize = 16;
const OFF_RULE_CNT: usize = 184;
const OFF_RULE_LOCS: usize = 188;
/// Inside `struct ethtool_rx_flow_spec` (at `OFF_FS`).
const FS_FLOW_TYPE: usize = 0;
const FS_H_U: usize = 4;
const FS_RING_COOKIE: usize = 152;
const FS_LOCATION: usize = 160;
/// Inside `ethtool_tcpip4_spec` / `ethtool_tcpip6_spec` (at `FS_H_U`).
const TCP4_DST: usize = 4;
const TCP4_DPORT: usize = 10;
const TCP6_DST: usize = 16;
const TCP6_DPORT: usize = 34;

/// One steering rule the NIC holds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FlowRule {
    /// The rule's slot.
    pub location: u32,
    /// `tcp4`, `tcp6`, or the raw flow type of another kind of rule.
    pub flow: String,
    /// Destination address matched (unspecified: any).
    pub dst_ip: Option<IpAddr>,
    /// Destination port matched (0: any).
    pub dst_port: u16,
    /// The receive queue the flow goes to; `None` when the rule drops it.
    pub queue: Option<u32>,
}

/// `ioctl(SIOCETHTOOL)` on `interface` with `data` as the `ethtool_rxnfc` buffer.
fn ethtool_ioctl(interface: &str, data: &mut [u8]) -> io::Result<()> {
    let name = interface.as_bytes();
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("interface name {interface:?} is not 1 to 15 bytes"),
        ));
    }
    // SAFETY: a plain datagram socket, closed below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `ifreq` is plain data; all-zero is valid.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, &src) in ifr.ifr_name.iter_mut().zip(name) {
        *dst = src as libc::c_char;
    }
    ifr.ifr_ifru.ifru_data = data.as_mut_ptr().cast();
    // SAFETY: `ifr` names the interface and points at `data`, which holds a whole
    // `ethtool_rxnfc` (plus the rule locations asked for) and outlives the call.
    let rc = unsafe { libc::ioctl(fd, SIOCETHTOOL, &mut ifr) };
    let err = io::Error::last_os_error();
    // SAFETY: `fd` was opened above and is not used after this.
    unsafe { libc::close(fd) };
    if rc < 0 {
        Err(err)
    } else {
        Ok(())
    }
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes(b[off..off + 4].try_into().expect("4 bytes"))
}

fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_ne_bytes());
}

/// Every ntuple rule of `interface`. `EOPNOTSUPP` where the driver has no flow
/// steering.
pub(crate) fn rules(interface: &str) -> io::Result<Vec<FlowRule>> {
    let mut count = vec![0u8; RXNFC_SIZE];
    put_u32(&mut count, OFF_CMD, GRXCLSRLCNT);
    ethtool_ioctl(interface, &mut count)?;
    let n = u32_at(&count, OFF_RULE_CNT).min(4096) as usize;
    let mut all = vec![0u8; OFF_RULE_LOCS + 4 * n + 4];
    put_u32(&mut all, OFF_CMD, GRXCLSRLALL);
    put_u32(&mut all, OFF_RULE_CNT, n as u32);
    all[OFF_DATA..OFF_DATA + 8].copy_from_slice(&count[OFF_DATA..OFF_DATA + 8]);
    ethtool_ioctl(interface, &mut all)?;
    let found = (u32_at(&all, OFF_RULE_CNT) as usize).min(n);
    (0..found)
        .map(|i| {
            let location = u32_at(&all, OFF_RULE_LOCS + 4 * i);
            let mut one = vec![0u8; RXNFC_SIZE];
            put_u32(&mut one, OFF_CMD, GRXCLSRULE);
            put_u32(&mut one, OFF_FS + FS_LOCATION, location);
            ethtool_ioctl(interface, &mut one)?;
            Ok(decode(&one[OFF_FS..OFF_FS + 168]))
        })
        .collect()
}

/// A `struct ethtool_rx_flow_spec` as a rule.
fn decode(fs: &[u8]) -> FlowRule {
    let flow_type = u32_at(fs, FS_FLOW_TYPE) & !FLOW_TYPE_FLAGS;
    let h = &fs[FS_H_U..];
    let port = |off: usize| u16::from_be_bytes([h[off], h[off + 1]]);
    let (flow, dst_ip, dst_port) = match flow_type {
        TCP_V4_FLOW => {
            let ip: [u8; 4] = h[TCP4_DST..TCP4_DST + 4].try_into().expect("4 bytes");
            ("tcp4".to_owned(), Some(IpAddr::from(ip)), port(TCP4_DPORT))
        }
        TCP_V6_FLOW => {
            let ip: [u8; 16] = h[TCP6_DST..TCP6_DST + 16].try_into().expect("16 bytes");
            ("tcp6".to_owned(), Some(IpAddr::from(ip)), port(TCP6_DPORT))
        }
        other => (format!("flow type {other:#x}"), None, 0),
    };
    let cookie = u64::from_ne_bytes(
        fs[FS_RING_COOKIE..FS_RING_COOKIE + 8]
            .try_into()
            .expect("8"),
    );
    FlowRule {
        location: u32_at(fs, FS_LOCATION),
        flow,
        dst_ip: dst_ip.filter(|ip| !ip.is_unspecified()),
        dst_port,
        // The low 32 bits are the queue (the next 8 a VF, not used here).
        queue: (cookie != RING_DISCARD).then_some(cookie as u32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flow spec as the kernel writes it: tcp4 to 10.0.0.2:9090, queue 3, slot 7.
    fn spec(flow_type: u32, cookie: u64) -> Vec<u8> {
        let mut fs = vec![0u8; 168];
        put_u32(&mut fs, FS_FLOW_TYPE, flow_type);
        fs[FS_H_U + TCP4_DST..FS_H_U + TCP4_DST + 4].copy_from_slice(&[10, 0, 0, 2]);
        fs[FS_H_U + TCP4_DPORT..FS_H_U + TCP4_DPORT + 2].copy_from_slice(&9090u16.to_be_bytes());
        fs[FS_RING_COOKIE..FS_RING_COOKIE + 8].copy_from_slice(&cookie.to_ne_bytes());
        put_u32(&mut fs, FS_LOCATION, 7);
        fs
    }

    #[test]
    fn a_tcp4_rule_decodes_to_its_port_and_queue() {
        let r = decode(&spec(TCP_V4_FLOW | 0x8000_0000, 3));
        assert_eq!(
            r,
            FlowRule {
                location: 7,
                flow: "tcp4".into(),
                dst_ip: Some("10.0.0.2".parse().expect("ip")),
                dst_port: 9090,
                queue: Some(3),
            }
        );
        assert_eq!(
            decode(&spec(TCP_V4_FLOW, RING_DISCARD)).queue,
            None,
            "a drop rule"
        );
        assert_eq!(decode(&spec(0x12, 1)).flow, "flow type 0x12");
    }

    #[test]
    fn bad_interface_names_are_refused_before_the_kernel() {
        let mut buf = vec![0u8; RXNFC_SIZE];
        for name in ["", "a-name-of-sixteen"] {
            let err = ethtool_ioctl(name, &mut buf).expect_err(name);
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{name:?}");
        }
    }

    #[test]
    fn loopback_has_no_flow_steering() {
        let err = rules("lo").expect_err("lo has no ntuple rules");
        assert_eq!(err.raw_os_error(), Some(libc::EOPNOTSUPP), "{err}");
    }
}
