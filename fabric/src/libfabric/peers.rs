//! An endpoint's peers: the libfabric address-vector index of each, whether its
//! connection is known to be lost, and how many RMAs to it are in flight (the fence).
//! Ids are never reused, so a removed peer's id stays invalid after re-insertion.

use crate::{FabricError, PeerId};
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use zerorx_libfabric_sys as fi;

/// One peer.
#[derive(Debug)]
pub(super) struct Peer {
    /// Its index in the endpoint's address vector.
    pub(super) fi_addr: fi::fi_addr_t,
    /// Its address bytes, as inserted.
    pub(super) addr: Vec<u8>,
    /// Why its connection is considered lost (posts are refused with `PeerDown`).
    pub(super) down: Option<String>,
    /// RMAs posted to libfabric and not completed yet.
    pub(super) rma_in_flight: usize,
    /// When the target last refused an RMA, until an operation to the peer succeeds
    /// again: rxm drops the connection after a refusal, so operations that meet the
    /// dying connection are retried rather than failed.
    pub(super) reset_since: Option<std::time::Instant>,
    /// For an shm endpoint of this process: set once it closed.
    pub(super) local: Option<Arc<AtomicBool>>,
    /// The process of an shm peer.
    pub(super) pid: Option<i32>,
}

/// The peers of one endpoint.
#[derive(Debug, Default)]
pub(super) struct PeerTable {
    next: u64,
    by_id: HashMap<PeerId, Peer>,
    by_addr: HashMap<Vec<u8>, PeerId>,
    by_fi: HashMap<fi::fi_addr_t, PeerId>,
}

impl PeerTable {
    /// The id already given to `addr`, if any.
    pub(super) fn find_addr(&self, addr: &[u8]) -> Option<PeerId> {
        self.by_addr.get(addr).copied()
    }

    /// Records a peer libfabric inserted at `fi_addr`.
    pub(super) fn add(&mut self, addr: Vec<u8>, fi_addr: fi::fi_addr_t) -> PeerId {
        self.next += 1;
        let id = PeerId(self.next);
        self.by_addr.insert(addr.clone(), id);
        self.by_fi.insert(fi_addr, id);
        self.by_id.insert(
            id,
            Peer {
                fi_addr,
                addr,
                down: None,
                rma_in_flight: 0,
                reset_since: None,
                local: None,
                pid: None,
            },
        );
        id
    }

    /// Forgets a peer; returns it.
    pub(super) fn remove(&mut self, id: PeerId) -> Result<Peer, FabricError> {
        let p = self.by_id.remove(&id).ok_or(FabricError::UnknownPeer(id))?;
        self.by_addr.remove(&p.addr);
        self.by_fi.remove(&p.fi_addr);
        Ok(p)
    }

    /// The peer, if present.
    pub(super) fn get(&self, id: PeerId) -> Option<&Peer> {
        self.by_id.get(&id)
    }

    /// The peer, mutably.
    pub(super) fn get_mut(&mut self, id: PeerId) -> Option<&mut Peer> {
        self.by_id.get_mut(&id)
    }

    /// Every peer.
    pub(super) fn iter(&self) -> impl Iterator<Item = (PeerId, &Peer)> {
        self.by_id.iter().map(|(id, p)| (*id, p))
    }

    /// The id of the peer at an address-vector index (the source of a received message).
    pub(super) fn by_fi_addr(&self, fi_addr: fi::fi_addr_t) -> Option<PeerId> {
        self.by_fi.get(&fi_addr).copied()
    }
}

/// Checks that `bytes` is a whole endpoint name in `format` before libfabric reads it:
/// `fi_av_insert` takes no length and reads as many bytes as the format implies.
pub(super) fn check_name(bytes: &[u8], format: u32, own_len: usize) -> Result<(), FabricError> {
    let bad = |reason: String| Err(FabricError::BadAddress { reason });
    match format {
        fi::FI_SOCKADDR_IN => {
            let want = std::mem::size_of::<libc::sockaddr_in>();
            if bytes.len() != want {
                return bad(format!(
                    "an IPv4 endpoint name has {want} bytes, not {}",
                    bytes.len()
                ));
            }
            let family = u16::from_ne_bytes([bytes[0], bytes[1]]);
            if family != libc::AF_INET as u16 {
                return bad(format!("address family {family} is not AF_INET"));
            }
            Ok(())
        }
        fi::FI_SOCKADDR_IN6 => {
            let want = std::mem::size_of::<libc::sockaddr_in6>();
            if bytes.len() != want {
                return bad(format!(
                    "an IPv6 endpoint name has {want} bytes, not {}",
                    bytes.len()
                ));
            }
            let family = u16::from_ne_bytes([bytes[0], bytes[1]]);
            if family != libc::AF_INET6 as u16 {
                return bad(format!("address family {family} is not AF_INET6"));
            }
            Ok(())
        }
        fi::FI_ADDR_STR => match bytes.iter().position(|&b| b == 0) {
            Some(n) if n > 0 && bytes[..n].is_ascii() => Ok(()),
            _ => bad("a string endpoint name must be non-empty ASCII ending in NUL".into()),
        },
        _ if bytes.len() == own_len => Ok(()),
        _ => bad(format!(
            "endpoint names of this provider have {own_len} bytes, not {}",
            bytes.len()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_not_reused_and_lookups_follow_removal() {
        let mut t = PeerTable::default();
        let a = t.add(vec![1], 0);
        assert_eq!(t.find_addr(&[1]), Some(a));
        assert_eq!(t.by_fi_addr(0), Some(a));
        t.remove(a).unwrap();
        assert!(matches!(t.remove(a), Err(FabricError::UnknownPeer(x)) if x == a));
        assert_eq!((t.find_addr(&[1]), t.by_fi_addr(0)), (None, None));
        let b = t.add(vec![1], 0);
        assert_ne!(a, b);
        assert!(t.get(a).is_none() && t.get(b).is_some());
    }

    #[test]
    fn names_are_checked_against_the_format() {
        let mut v4 = vec![0u8; 16];
        v4[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        assert!(check_name(&v4, fi::FI_SOCKADDR_IN, 16).is_ok());
        assert!(check_name(&v4[..8], fi::FI_SOCKADDR_IN, 16).is_err());
        let mut wrong_family = v4.clone();
        wrong_family[0] = 99;
        assert!(check_name(&wrong_family, fi::FI_SOCKADDR_IN, 16).is_err());
        assert!(check_name(b"fi_shm://1:0:0\0", fi::FI_ADDR_STR, 16).is_ok());
        assert!(check_name(b"no terminator", fi::FI_ADDR_STR, 16).is_err());
        assert!(check_name(b"\0", fi::FI_ADDR_STR, 16).is_err());
        assert!(check_name(&[1, 2, 3], 12345, 3).is_ok());
        assert!(check_name(&[1, 2], 12345, 3).is_err());
    }
}
