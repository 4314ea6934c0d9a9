//! A NIC's receive configuration through ethtool netlink (the kernel's `ethtool`
//! generic-netlink family): header/data split and its threshold (`RINGS_GET`), queue
//! counts (`CHANNELS_GET`), and the RSS hash function, key and indirection table
//! (`RSS_GET`).
//!
//! The attributes are named here from the 7.3 uapi header
//! (`linux/ethtool_netlink_generated.h`); `genl` does the netlink exchange.

use super::genl::{attr, u32_attr, Attr, GenlSocket};
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

/// A generic-netlink socket bound to the ethtool family.
pub(crate) struct EthtoolSocket(GenlSocket);

impl EthtoolSocket {
    /// Opens the socket (`ENOENT` where the kernel has no ethtool netlink, before 5.6).
    pub(crate) fn open() -> io::Result<EthtoolSocket> {
        GenlSocket::open("ethtool", 1).map(EthtoolSocket)
    }

    /// One `*_GET` request for `interface`; the reply's attributes.
    fn get(&mut self, cmd: u8, interface: &str) -> io::Result<Vec<Attr>> {
        let header = Attr::nest(A_HEADER, &[Attr::string(A_HEADER_DEV_NAME, interface)]);
        let mut replies = self.0.request(cmd, vec![header], false)?;
        Ok(replies.pop().unwrap_or_default())
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
