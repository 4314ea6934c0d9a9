//! The peer table of one endpoint: ids with generations, lookup by the peer
//! endpoint's nonce or its listen address (a peer inserted by socket address alone
//! has nonce 0 until its first connection names it).

use super::outbound::OutConn;
use crate::PeerId;
use slab::Slab;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;

/// One peer.
pub(super) struct Peer {
    pub nonce: u64,
    pub addr: SocketAddr,
    /// The connection this endpoint opened to the peer (requests go out on it).
    pub out: Option<Rc<OutConn>>,
}

/// Peers by id and by nonce.
#[derive(Default)]
pub(super) struct Peers {
    slab: Slab<(PeerId, Peer)>,
    by_nonce: HashMap<u64, PeerId>,
    by_addr: HashMap<SocketAddr, PeerId>,
    generation: u32,
}

impl Peers {
    pub(super) fn by_nonce(&self, nonce: u64) -> Option<PeerId> {
        self.by_nonce.get(&nonce).copied()
    }

    /// The newest peer listening on `addr`.
    pub(super) fn by_addr(&self, addr: SocketAddr) -> Option<PeerId> {
        self.by_addr.get(&addr).copied()
    }

    pub(super) fn insert(&mut self, peer: Peer) -> PeerId {
        self.generation = self.generation.wrapping_add(1);
        let entry = self.slab.vacant_entry();
        let id = PeerId(u64::from(self.generation) << 32 | entry.key() as u64);
        if peer.nonce != 0 {
            self.by_nonce.insert(peer.nonce, id);
        }
        self.by_addr.insert(peer.addr, id);
        entry.insert((id, peer));
        id
    }

    /// Names the peer inserted by `addr` alone (nonce 0) with `nonce`, the endpoint
    /// that just connected from there.
    pub(super) fn adopt(&mut self, addr: SocketAddr, nonce: u64) -> Option<PeerId> {
        let id = self.by_addr(addr)?;
        let p = self.get_mut(id)?;
        if p.nonce != 0 {
            return None;
        }
        p.nonce = nonce;
        self.by_nonce.insert(nonce, id);
        Some(id)
    }

    fn index(id: PeerId) -> usize {
        (id.0 & u64::from(u32::MAX)) as usize
    }

    pub(super) fn get(&self, id: PeerId) -> Option<&Peer> {
        match self.slab.get(Self::index(id)) {
            Some((pid, p)) if *pid == id => Some(p),
            _ => None,
        }
    }

    pub(super) fn get_mut(&mut self, id: PeerId) -> Option<&mut Peer> {
        match self.slab.get_mut(Self::index(id)) {
            Some((pid, p)) if *pid == id => Some(p),
            _ => None,
        }
    }

    pub(super) fn remove(&mut self, id: PeerId) -> Option<Peer> {
        let i = Self::index(id);
        match self.slab.get(i) {
            Some((pid, _)) if *pid == id => {
                let (_, p) = self.slab.remove(i);
                self.by_nonce.remove(&p.nonce);
                if self.by_addr.get(&p.addr) == Some(&id) {
                    self.by_addr.remove(&p.addr);
                }
                Some(p)
            }
            _ => None,
        }
    }

    /// Every peer, removed (endpoint close).
    pub(super) fn drain(&mut self) -> Vec<Peer> {
        self.by_nonce.clear();
        self.by_addr.clear();
        self.slab.drain().map(|(_, p)| p).collect()
    }
}
