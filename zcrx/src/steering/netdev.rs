//! A device's receive queues as the kernel's `netdev` generic-netlink family lists them
//! (`NETDEV_CMD_QUEUE_GET`, Linux 6.9+): each queue's NAPI instance, and whether an
//! io_uring memory provider (a ZCRX instance) is bound to it. The NAPI id is what a
//! socket reports through `SO_INCOMING_NAPI_ID`, so this maps a connection to its
//! queue. Also the device's page pools (`NETDEV_CMD_PAGE_POOL_GET`, 6.8+): the memory
//! in flight of each, and which one the io_uring provider feeds. Attribute numbers
//! from the 7.3 uapi header (`linux/netdev.h`).

use super::genl::{attr, u32_attr, Attr, GenlSocket};
use std::io;

const CMD_QUEUE_GET: u8 = 10;
const A_QUEUE_ID: u16 = 1;
const A_QUEUE_IFINDEX: u16 = 2;
const A_QUEUE_TYPE: u16 = 3;
const A_QUEUE_NAPI_ID: u16 = 4;
const A_QUEUE_IO_URING: u16 = 6;
const QUEUE_TYPE_RX: u32 = 0;
const CMD_PAGE_POOL_GET: u8 = 5;
const A_PAGE_POOL_ID: u16 = 1;
const A_PAGE_POOL_IFINDEX: u16 = 2;
const A_PAGE_POOL_NAPI_ID: u16 = 3;
const A_PAGE_POOL_INFLIGHT: u16 = 4;
const A_PAGE_POOL_INFLIGHT_MEM: u16 = 5;
const A_PAGE_POOL_DETACH_TIME: u16 = 6;
const A_PAGE_POOL_IO_URING: u16 = 8;

/// One receive queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct RxQueue {
    /// The queue's index.
    pub id: u32,
    /// Its NAPI instance (`None` when it has none, or the kernel does not say).
    pub napi_id: Option<u32>,
    /// An io_uring memory provider (a ZCRX instance) is bound to it.
    pub io_uring: bool,
}

/// Every receive queue of the device with `ifindex`.
pub fn rx_queues(ifindex: u32) -> io::Result<Vec<RxQueue>> {
    let mut s = GenlSocket::open("netdev", 1)?;
    let filter = Attr {
        kind: A_QUEUE_IFINDEX,
        value: ifindex.to_ne_bytes().to_vec(),
    };
    let replies = s.request(CMD_QUEUE_GET, vec![filter], true)?;
    Ok(decode(&replies, ifindex))
}

/// The receive queues among dump replies (each a queue's attributes) of `ifindex`.
fn decode(replies: &[Vec<Attr>], ifindex: u32) -> Vec<RxQueue> {
    let mut queues: Vec<RxQueue> = replies
        .iter()
        .filter(|q| u32_attr(q, A_QUEUE_TYPE) == Some(QUEUE_TYPE_RX))
        .filter(|q| u32_attr(q, A_QUEUE_IFINDEX).is_none_or(|i| i == ifindex))
        .filter_map(|q| {
            Some(RxQueue {
                id: u32_attr(q, A_QUEUE_ID)?,
                napi_id: u32_attr(q, A_QUEUE_NAPI_ID).filter(|&n| n != 0),
                io_uring: attr(q, A_QUEUE_IO_URING).is_some(),
            })
        })
        .collect();
    queues.sort_by_key(|q| q.id);
    queues
}

/// One page pool of a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PagePool {
    /// The pool's id.
    pub id: u64,
    /// The NAPI instance it serves.
    pub napi_id: Option<u32>,
    /// Pages (or net_iovs) handed out and not yet back.
    pub inflight: u64,
    /// Their bytes.
    pub inflight_mem: u64,
    /// The io_uring memory provider (a ZCRX area) feeds it.
    pub io_uring: bool,
    /// The driver has let go of it; it waits for its memory to come back.
    pub detached: bool,
}

/// Every page pool of the device with `ifindex`.
pub fn page_pools(ifindex: u32) -> io::Result<Vec<PagePool>> {
    let mut s = GenlSocket::open("netdev", 1)?;
    let replies = s.request(CMD_PAGE_POOL_GET, Vec::new(), true)?;
    Ok(decode_pools(&replies, ifindex))
}

/// A `u64` attribute (netlink `uint`: 4 or 8 bytes, native order).
fn uint_attr(attrs: &[Attr], kind: u16) -> Option<u64> {
    let v = attr(attrs, kind)?;
    match v.len() {
        4 => u32_attr(attrs, kind).map(u64::from),
        8 => Some(u64::from_ne_bytes(v.try_into().ok()?)),
        _ => None,
    }
}

/// The page pools of `ifindex` among dump replies, by id.
fn decode_pools(replies: &[Vec<Attr>], ifindex: u32) -> Vec<PagePool> {
    let mut pools: Vec<PagePool> = replies
        .iter()
        .filter(|p| u32_attr(p, A_PAGE_POOL_IFINDEX) == Some(ifindex))
        .filter_map(|p| {
            Some(PagePool {
                id: uint_attr(p, A_PAGE_POOL_ID)?,
                napi_id: u32_attr(p, A_PAGE_POOL_NAPI_ID).filter(|&n| n != 0),
                inflight: uint_attr(p, A_PAGE_POOL_INFLIGHT).unwrap_or(0),
                inflight_mem: uint_attr(p, A_PAGE_POOL_INFLIGHT_MEM).unwrap_or(0),
                io_uring: attr(p, A_PAGE_POOL_IO_URING).is_some(),
                detached: attr(p, A_PAGE_POOL_DETACH_TIME).is_some(),
            })
        })
        .collect();
    pools.sort_by_key(|p| p.id);
    pools
}

/// The queue whose NAPI instance is `napi_id`.
pub fn queue_of_napi(queues: &[RxQueue], napi_id: u32) -> Option<u32> {
    queues
        .iter()
        .find(|q| q.napi_id == Some(napi_id))
        .map(|q| q.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(id: u32, ty: u32, ifindex: u32, napi: u32, io_uring: bool) -> Vec<Attr> {
        let u = |kind, v: u32| Attr {
            kind,
            value: v.to_ne_bytes().to_vec(),
        };
        let mut a = vec![
            u(A_QUEUE_ID, id),
            u(A_QUEUE_TYPE, ty),
            u(A_QUEUE_IFINDEX, ifindex),
        ];
        if napi != 0 {
            a.push(u(A_QUEUE_NAPI_ID, napi));
        }
        if io_uring {
            a.push(Attr::nest(A_QUEUE_IO_URING, &[]));
        }
        a
    }

    #[test]
    fn rx_queues_of_the_device_with_their_napi_and_provider() {
        let replies = vec![
            q(1, QUEUE_TYPE_RX, 4, 8194, true),
            q(0, QUEUE_TYPE_RX, 4, 8193, false),
            q(0, 1, 4, 8193, false),
            q(0, QUEUE_TYPE_RX, 5, 9000, false),
            q(2, QUEUE_TYPE_RX, 4, 0, false),
        ];
        let queues = decode(&replies, 4);
        assert_eq!(
            queues,
            vec![
                RxQueue {
                    id: 0,
                    napi_id: Some(8193),
                    io_uring: false
                },
                RxQueue {
                    id: 1,
                    napi_id: Some(8194),
                    io_uring: true
                },
                RxQueue {
                    id: 2,
                    napi_id: None,
                    io_uring: false
                },
            ]
        );
        assert_eq!(queue_of_napi(&queues, 8194), Some(1));
        assert_eq!(queue_of_napi(&queues, 9000), None, "another device's queue");
    }

    #[test]
    fn page_pools_of_the_device_with_their_memory_and_provider() {
        let u32a = |kind, v: u32| Attr {
            kind,
            value: v.to_ne_bytes().to_vec(),
        };
        let u64a = |kind, v: u64| Attr {
            kind,
            value: v.to_ne_bytes().to_vec(),
        };
        let replies = vec![
            vec![
                u64a(A_PAGE_POOL_ID, 7),
                u32a(A_PAGE_POOL_IFINDEX, 4),
                u32a(A_PAGE_POOL_NAPI_ID, 8194),
                u32a(A_PAGE_POOL_INFLIGHT, 3),
                u64a(A_PAGE_POOL_INFLIGHT_MEM, 12288),
                Attr::nest(A_PAGE_POOL_IO_URING, &[]),
            ],
            vec![
                u32a(A_PAGE_POOL_ID, 2),
                u32a(A_PAGE_POOL_IFINDEX, 4),
                u64a(A_PAGE_POOL_DETACH_TIME, 99),
            ],
            vec![u32a(A_PAGE_POOL_ID, 3), u32a(A_PAGE_POOL_IFINDEX, 5)],
        ];
        assert_eq!(
            decode_pools(&replies, 4),
            vec![
                PagePool {
                    id: 2,
                    napi_id: None,
                    inflight: 0,
                    inflight_mem: 0,
                    io_uring: false,
                    detached: true
                },
                PagePool {
                    id: 7,
                    napi_id: Some(8194),
                    inflight: 3,
                    inflight_mem: 12288,
                    io_uring: true,
                    detached: false
                },
            ]
        );
    }

    #[test]
    fn loopback_answers_without_error() {
        // lo has no hardware queues; the dump still works (or the kernel predates
        // the netdev family, which says so).
        match rx_queues(1) {
            Ok(queues) => assert!(queues.iter().all(|q| !q.io_uring), "{queues:?}"),
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::ENOENT), "{e}"),
        }
        // Loopback has no page pool of its own.
        match page_pools(1) {
            Ok(pools) => assert_eq!(pools, Vec::new()),
            Err(e) => assert!(
                matches!(e.raw_os_error(), Some(libc::ENOENT | libc::EPERM)),
                "{e}"
            ),
        }
    }
}
