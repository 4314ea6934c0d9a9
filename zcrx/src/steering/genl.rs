//! A small synchronous generic-netlink client over the netlink crates: a socket bound
//! to one family, requests with raw attributes, and dumps. The families' attributes
//! (ethtool's, netdev's) are named by their modules from the uapi headers; no crate
//! carries them without an async runtime.

use netlink_packet_core::{
    DecodeError, Emitable, NetlinkHeader, NetlinkMessage, NetlinkPayload, Nla, NlaBuffer,
    NlasIterator, ParseableParametrized, NLA_F_NESTED, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_generic::ctrl::nlas::GenlCtrlAttrs;
use netlink_packet_generic::ctrl::{GenlCtrl, GenlCtrlCmd};
use netlink_packet_generic::{GenlFamily, GenlHeader, GenlMessage};
use netlink_sys::{protocols::NETLINK_GENERIC, Socket, SocketAddr};
use std::io;

/// One attribute, kind (flags included) and raw value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Attr {
    pub(crate) kind: u16,
    pub(crate) value: Vec<u8>,
}

impl Attr {
    /// A NUL-terminated string attribute.
    pub(crate) fn string(kind: u16, s: &str) -> Attr {
        let mut value = s.as_bytes().to_vec();
        value.push(0);
        Attr { kind, value }
    }

    /// A nest of `inner` attributes.
    pub(crate) fn nest(kind: u16, inner: &[Attr]) -> Attr {
        let mut value = vec![0; inner.buffer_len()];
        inner.emit(&mut value);
        Attr {
            kind: kind | NLA_F_NESTED,
            value,
        }
    }
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

/// Parses a run of attributes.
pub(crate) fn parse_attrs(buf: &[u8]) -> Result<Vec<Attr>, DecodeError> {
    NlasIterator::new(buf)
        .map(|nla| {
            nla.map(|nla: NlaBuffer<&[u8]>| Attr {
                kind: nla.kind(),
                value: nla.value().to_vec(),
            })
        })
        .collect()
}

/// The value of the attribute `kind` (nested flag ignored).
pub(crate) fn attr(attrs: &[Attr], kind: u16) -> Option<&[u8]> {
    attrs
        .iter()
        .find(|a| a.kind & !NLA_F_NESTED == kind)
        .map(|a| a.value.as_slice())
}

/// The `u32` attribute `kind` (native byte order, as netlink sends it).
pub(crate) fn u32_attr(attrs: &[Attr], kind: u16) -> Option<u32> {
    attr(attrs, kind)
        .filter(|v| v.len() >= 4)
        .map(|v| u32::from_ne_bytes([v[0], v[1], v[2], v[3]]))
}

/// A message of any family: its command, version and attributes. The family id is
/// set on each message, so the name is never used to look one up.
#[derive(Debug, Clone)]
struct Raw {
    cmd: u8,
    version: u8,
    attrs: Vec<Attr>,
}

impl GenlFamily for Raw {
    fn family_name() -> &'static str {
        "raw"
    }
    fn command(&self) -> u8 {
        self.cmd
    }
    fn version(&self) -> u8 {
        self.version
    }
}

impl Emitable for Raw {
    fn buffer_len(&self) -> usize {
        self.attrs.as_slice().buffer_len()
    }
    fn emit(&self, buffer: &mut [u8]) {
        self.attrs.as_slice().emit(buffer)
    }
}

impl ParseableParametrized<[u8], GenlHeader> for Raw {
    fn parse_with_param(buf: &[u8], header: GenlHeader) -> Result<Self, DecodeError> {
        Ok(Raw {
            cmd: header.cmd,
            version: header.version,
            attrs: parse_attrs(buf)?,
        })
    }
}

fn invalid(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

/// Sends `msg` and collects the payloads of the replies: one, or with `dump` every
/// one up to the end marker. A netlink error reply becomes its errno.
fn exchange<F>(
    socket: &Socket,
    mut msg: GenlMessage<F>,
    family: u16,
    seq: u32,
    dump: bool,
) -> io::Result<Vec<F>>
where
    F: GenlFamily + Emitable + ParseableParametrized<[u8], GenlHeader> + std::fmt::Debug,
{
    msg.set_resolved_family_id(family);
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | if dump { NLM_F_DUMP } else { 0 };
    header.sequence_number = seq;
    let mut nl = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(msg));
    nl.finalize();
    let mut buf = vec![0; nl.buffer_len()];
    nl.serialize(&mut buf);
    socket.send(&buf, 0)?;
    let mut out = Vec::new();
    loop {
        let (datagram, _) = socket.recv_from_full()?;
        let mut rest = datagram.as_slice();
        // A datagram may carry several messages, each starting with its length.
        while rest.len() >= 16 {
            let len = u32::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            if len < 16 || len > rest.len() {
                return Err(invalid(format!(
                    "netlink message of {len} bytes in {}",
                    rest.len()
                )));
            }
            let parsed = NetlinkMessage::<GenlMessage<F>>::deserialize(&rest[..len])
                .map_err(|e| invalid(format!("netlink reply: {e}")))?;
            rest = &rest[len.next_multiple_of(4).min(rest.len())..];
            match parsed.payload {
                NetlinkPayload::InnerMessage(m) if !dump => return Ok(vec![m.payload]),
                NetlinkPayload::InnerMessage(m) => out.push(m.payload),
                NetlinkPayload::Done(_) => return Ok(out),
                NetlinkPayload::Error(e) if e.code.is_some() => return Err(e.to_io()),
                // An ACK without error ends a request that had nothing to say.
                NetlinkPayload::Error(_) => return Ok(out),
                other => return Err(invalid(format!("unexpected netlink reply {other:?}"))),
            }
        }
    }
}

/// A generic-netlink socket with one family resolved.
pub(crate) struct GenlSocket {
    socket: Socket,
    family: u16,
    version: u8,
    seq: u32,
}

impl GenlSocket {
    /// Opens a socket and looks `family` up (`ENOENT` where the kernel lacks it).
    pub(crate) fn open(family: &str, version: u8) -> io::Result<GenlSocket> {
        let mut socket = Socket::new(NETLINK_GENERIC)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        let ctrl = GenlMessage::from_payload(GenlCtrl {
            cmd: GenlCtrlCmd::GetFamily,
            nlas: vec![GenlCtrlAttrs::FamilyName(family.to_owned())],
        });
        let replies = exchange(
            &socket,
            ctrl,
            netlink_packet_generic::constants::GENL_ID_CTRL,
            1,
            false,
        )?;
        let id = replies
            .iter()
            .flat_map(|r| &r.nlas)
            .find_map(|a| match a {
                GenlCtrlAttrs::FamilyId(id) => Some(*id),
                _ => None,
            })
            .ok_or_else(|| invalid(format!("no id for the {family} family")))?;
        Ok(GenlSocket {
            socket,
            family: id,
            version,
            seq: 1,
        })
    }

    /// One request; the attributes of its reply (or of every reply, with `dump`).
    pub(crate) fn request(
        &mut self,
        cmd: u8,
        attrs: Vec<Attr>,
        dump: bool,
    ) -> io::Result<Vec<Vec<Attr>>> {
        self.seq += 1;
        let msg = GenlMessage::from_payload(Raw {
            cmd,
            version: self.version,
            attrs,
        });
        Ok(exchange(&self.socket, msg, self.family, self.seq, dump)?
            .into_iter()
            .map(|r| r.attrs)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_are_found_by_kind_without_the_nested_flag() {
        let attrs = vec![
            Attr::nest(1, &[Attr::string(2, "eth0")]),
            Attr {
                kind: 17,
                value: 256u32.to_ne_bytes().to_vec(),
            },
            Attr {
                kind: 6,
                value: vec![1, 2],
            },
        ];
        let nested = parse_attrs(attr(&attrs, 1).expect("the nest")).expect("parses");
        assert_eq!(nested, vec![Attr::string(2, "eth0")]);
        assert_eq!(u32_attr(&attrs, 17), Some(256));
        assert_eq!(u32_attr(&attrs, 6), None, "a short value is no u32");
        assert_eq!(u32_attr(&attrs, 2), None);
    }

    #[test]
    fn a_message_round_trips_through_the_attribute_parser() {
        let attrs = vec![
            Attr::string(2, "eth0"),
            Attr {
                kind: 4,
                value: [0u32, 1, 2, 3]
                    .iter()
                    .flat_map(|q| q.to_ne_bytes())
                    .collect(),
            },
        ];
        let msg = Raw {
            cmd: 38,
            version: 1,
            attrs: attrs.clone(),
        };
        let mut buf = vec![0; msg.buffer_len()];
        msg.emit(&mut buf);
        assert_eq!(parse_attrs(&buf).expect("parses"), attrs);
    }

    #[test]
    fn an_unknown_family_is_enoent() {
        let err = GenlSocket::open("zerorx-nofam", 1).err().expect("unknown");
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT), "{err}");
    }
}
