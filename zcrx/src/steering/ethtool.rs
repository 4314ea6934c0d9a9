//! A NIC's receive configuration through ethtool netlink (the kernel's `ethtool`
//! generic-netlink family): header/data split and its threshold (`RINGS_GET`), queue
//! counts (`CHANNELS_GET`), and the RSS hash function, key and indirection table
//! (`RSS_GET`).
//!
//! The netlink crates (`netlink-sys`, `netlink-packet-core`, `netlink-packet-generic`)
//! do the socket, framing and family lookup; the ethtool attributes, which no crate
//! carries without an async runtime, are named here from the 7.3 uapi header
//! (`linux/ethtool_netlink_generated.h`).

use netlink_packet_core::{
    DecodeError, Emitable, NetlinkHeader, NetlinkMessage, NetlinkPayload, Nla, NlaBuffer,
    NlasIterator, ParseableParametrized, NLA_F_NESTED, NLM_F_REQUEST,
};
use netlink_packet_generic::ctrl::nlas::GenlCtrlAttrs;
use netlink_packet_generic::ctrl::{GenlCtrl, GenlCtrlCmd};
use netlink_packet_generic::{GenlFamily, GenlHeader, GenlMessage};
use netlink_sys::{protocols::NETLINK_GENERIC, Socket, SocketAddr};
use std::io;

/// `ETHTOOL_MSG_*_GET` request numbers.
const MSG_RINGS_GET: u8 = 15;
const MSG_CHANNELS_GET: u8 = 17;
const MSG_RSS_GET: u8 = 38;
/// Every request's header nest (`ETHTOOL_A_*_HEADER`) and the device name inside it.
const A_HEADER: u16 = 1;
const A_HEADER_DEV_NAME: u16 = 2;
/// `ETHTOOL_A_RINGS_*`.
const A_RINGS_RX_MAX: u16 = 2;
const A_RINGS_RX: u16 = 6;
const A_RINGS_TCP_DATA_SPLIT: u16 = 11;
const A_RINGS_HDS_THRESH: u16 = 17;
const A_RINGS_HDS_THRESH_MAX: u16 = 18;
/// `ETHTOOL_A_CHANNELS_*`.
const A_CHANNELS_RX_COUNT: u16 = 6;
const A_CHANNELS_COMBINED_COUNT: u16 = 9;
/// `ETHTOOL_A_RSS_*`.
const A_RSS_HFUNC: u16 = 3;
const A_RSS_INDIR: u16 = 4;
const A_RSS_HKEY: u16 = 5;
/// `ETH_RSS_HASH_TOP`: the Toeplitz hash function bit of `ETHTOOL_A_RSS_HFUNC`.
pub(crate) const HASH_TOEPLITZ: u32 = 1;

/// One attribute, kind and raw value.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Attr {
    kind: u16,
    value: Vec<u8>,
}

impl Nla for Attr {
    fn value_len(&self) -> usize {
        self.value.len()
    }
    fn kind(&self) -> u16 {
        self.kind
    }
    fn emit_value(&self, buffer: &mut [u8]) {
        buffer.copy_from_slice(&self.value);
    }
}

/// An ethtool message: a command and its attributes.
#[derive(Debug, Clone)]
struct Ethtool {
    cmd: u8,
    attrs: Vec<Attr>,
}

impl GenlFamily for Ethtool {
    fn family_name() -> &'static str {
        "ethtool"
    }
    fn command(&self) -> u8 {
        self.cmd
    }
    fn version(&self) -> u8 {
        1
    }
}

impl Emitable for Ethtool {
    fn buffer_len(&self) -> usize {
        self.attrs.as_slice().buffer_len()
    }
    fn emit(&self, buffer: &mut [u8]) {
        self.attrs.as_slice().emit(buffer)
    }
}

fn parse_attrs(buf: &[u8]) -> Result<Vec<Attr>, DecodeError> {
    NlasIterator::new(buf)
        .map(|nla| {
            nla.map(|nla: NlaBuffer<&[u8]>| Attr {
                kind: nla.kind(),
                value: nla.value().to_vec(),
            })
        })
        .collect()
}

impl ParseableParametrized<[u8], GenlHeader> for Ethtool {
    fn parse_with_param(buf: &[u8], header: GenlHeader) -> Result<Self, DecodeError> {
        Ok(Ethtool {
            cmd: header.cmd,
            attrs: parse_attrs(buf)?,
        })
    }
}

/// A generic-netlink socket with the ethtool family resolved.
pub(crate) struct EthtoolSocket {
    socket: Socket,
    family: u16,
    seq: u32,
}

/// Sends one request and returns the payload of its one reply.
fn round_trip<F>(socket: &Socket, mut msg: GenlMessage<F>, family: u16, seq: u32) -> io::Result<F>
where
    F: GenlFamily + Emitable + ParseableParametrized<[u8], GenlHeader> + std::fmt::Debug,
{
    msg.set_resolved_family_id(family);
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST;
    header.sequence_number = seq;
    let mut nl = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(msg));
    nl.finalize();
    let mut buf = vec![0; nl.buffer_len()];
    nl.serialize(&mut buf);
    socket.send(&buf, 0)?;
    let (reply, _) = socket.recv_from_full()?;
    let parsed = NetlinkMessage::<GenlMessage<F>>::deserialize(&reply)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("netlink reply: {e}")))?;
    match parsed.payload {
        NetlinkPayload::InnerMessage(m) => Ok(m.payload),
        NetlinkPayload::Error(e) => Err(e.to_io()),
        other => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unexpected netlink reply {other:?}"),
        )),
    }
}

impl EthtoolSocket {
    /// Opens the socket and looks the ethtool family up (`ENOENT` where the kernel has
    /// no ethtool netlink, before 5.6).
    pub(crate) fn open() -> io::Result<EthtoolSocket> {
        let mut socket = Socket::new(NETLINK_GENERIC)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        let ctrl = GenlMessage::from_payload(GenlCtrl {
            cmd: GenlCtrlCmd::GetFamily,
            nlas: vec![GenlCtrlAttrs::FamilyName("ethtool".to_owned())],
        });
        let reply = round_trip(
            &socket,
            ctrl,
            netlink_packet_generic::constants::GENL_ID_CTRL,
            1,
        )?;
        let family = reply
            .nlas
            .iter()
            .find_map(|a| match a {
                GenlCtrlAttrs::FamilyId(id) => Some(*id),
                _ => None,
            })
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no ethtool family id"))?;
        Ok(EthtoolSocket {
            socket,
            family,
            seq: 1,
        })
    }

    /// One `*_GET` request for `interface`; the reply's attributes.
    fn get(&mut self, cmd: u8, interface: &str) -> io::Result<Vec<Attr>> {
        let mut name = interface.as_bytes().to_vec();
        name.push(0);
        let inner = Attr {
            kind: A_HEADER_DEV_NAME,
            value: name,
        };
        let mut nested = vec![0; inner.buffer_len()];
        inner.emit(&mut nested);
        let msg = GenlMessage::from_payload(Ethtool {
            cmd,
            attrs: vec![Attr {
                kind: A_HEADER | NLA_F_NESTED,
                value: nested,
            }],
        });
        self.seq += 1;
        Ok(round_trip(&self.socket, msg, self.family, self.seq)?.attrs)
    }

    /// `ETHTOOL_MSG_RINGS_GET`.
    pub(crate) fn rings(&mut self, interface: &str) -> io::Result<Rings> {
        let attrs = self.get(MSG_RINGS_GET, interface)?;
        Ok(Rings {
            rx: u32_attr(&attrs, A_RINGS_RX),
            rx_max: u32_attr(&attrs, A_RINGS_RX_MAX),
            tcp_data_split: attr(&attrs, A_RINGS_TCP_DATA_SPLIT)
                .and_then(|v| v.first())
                .map(|&v| match v {
                    1 => DataSplit::Disabled,
                    2 => DataSplit::Enabled,
                    _ => DataSplit::Unknown,
                }),
            hds_thresh: u32_attr(&attrs, A_RINGS_HDS_THRESH),
            hds_thresh_max: u32_attr(&attrs, A_RINGS_HDS_THRESH_MAX),
        })
    }

    /// `ETHTOOL_MSG_CHANNELS_GET`: receive queues (rx-only plus combined).
    pub(crate) fn rx_queues(&mut self, interface: &str) -> io::Result<u32> {
        let attrs = self.get(MSG_CHANNELS_GET, interface)?;
        Ok(u32_attr(&attrs, A_CHANNELS_RX_COUNT).unwrap_or(0)
            + u32_attr(&attrs, A_CHANNELS_COMBINED_COUNT).unwrap_or(0))
    }

    /// `ETHTOOL_MSG_RSS_GET` for the default context.
    pub(crate) fn rss(&mut self, interface: &str) -> io::Result<Rss> {
        let attrs = self.get(MSG_RSS_GET, interface)?;
        let indirection = attr(&attrs, A_RSS_INDIR)
            .map(|v| {
                v.chunks_exact(4)
                    .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Rss {
            hash_function: u32_attr(&attrs, A_RSS_HFUNC),
            key: attr(&attrs, A_RSS_HKEY)
                .map(<[u8]>::to_vec)
                .unwrap_or_default(),
            indirection,
        })
    }
}

fn attr(attrs: &[Attr], kind: u16) -> Option<&[u8]> {
    attrs
        .iter()
        .find(|a| a.kind & !NLA_F_NESTED == kind)
        .map(|a| a.value.as_slice())
}

fn u32_attr(attrs: &[Attr], kind: u16) -> Option<u32> {
    attr(attrs, kind)
        .filter(|v| v.len() >= 4)
        .map(|v| u32::from_ne_bytes([v[0], v[1], v[2], v[3]]))
}

/// Header/data split as the driver reports it (`ETHTOOL_A_RINGS_TCP_DATA_SPLIT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum DataSplit {
    /// The driver does not say (or cannot tell).
    Unknown,
    /// Off: ZCRX cannot place payloads (`ethtool -G IF tcp-data-split on`).
    Disabled,
    /// On: headers and payload land in separate buffers, as ZCRX needs.
    Enabled,
}

/// What `RINGS_GET` answered.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Rings {
    /// Receive ring entries.
    pub rx: Option<u32>,
    /// Their maximum.
    pub rx_max: Option<u32>,
    /// Header/data split; `None` when the driver does not report it at all.
    pub tcp_data_split: Option<DataSplit>,
    /// Header/data split threshold in bytes (ZCRX wants 0: every payload split).
    pub hds_thresh: Option<u32>,
    /// The largest threshold the driver takes.
    pub hds_thresh_max: Option<u32>,
}

/// What `RSS_GET` answered for the default context.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Rss {
    /// `ETH_RSS_HASH_*` bits of the active hash function (`1`: Toeplitz).
    pub hash_function: Option<u32>,
    /// The hash key.
    pub key: Vec<u8>,
    /// The indirection table: entry `hash % len` is the queue.
    pub indirection: Vec<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_are_found_by_kind_without_the_nested_flag() {
        let attrs = vec![
            Attr {
                kind: A_HEADER | NLA_F_NESTED,
                value: vec![1, 2],
            },
            Attr {
                kind: A_RINGS_HDS_THRESH,
                value: 256u32.to_ne_bytes().to_vec(),
            },
            Attr {
                kind: A_RINGS_RX,
                value: vec![1, 2],
            },
        ];
        assert_eq!(attr(&attrs, A_HEADER), Some(&[1u8, 2][..]));
        assert_eq!(u32_attr(&attrs, A_RINGS_HDS_THRESH), Some(256));
        assert_eq!(
            u32_attr(&attrs, A_RINGS_RX),
            None,
            "a short value is no u32"
        );
        assert_eq!(u32_attr(&attrs, A_RINGS_RX_MAX), None);
    }

    #[test]
    fn a_request_round_trips_through_the_attribute_parser() {
        let attrs = vec![
            Attr {
                kind: A_HEADER_DEV_NAME,
                value: b"eth0\0".to_vec(),
            },
            Attr {
                kind: A_RSS_INDIR,
                value: [0u32, 1, 2, 3]
                    .iter()
                    .flat_map(|q| q.to_ne_bytes())
                    .collect(),
            },
        ];
        let msg = Ethtool {
            cmd: MSG_RSS_GET,
            attrs: attrs.clone(),
        };
        let mut buf = vec![0; msg.buffer_len()];
        msg.emit(&mut buf);
        assert_eq!(parse_attrs(&buf).expect("parses"), attrs);
    }
}
