//! A libfabric address vector: the peers' socket addresses, indexed by the
//! `fi_addr_t` handed to the application. `FI_AV_TABLE` and `FI_AV_MAP` are the same
//! table here (a map's `fi_addr_t` is opaque to the application, so an index serves).

use rustc_hash::FxHashMap;
use std::net::SocketAddrV4;
use std::sync::RwLock;

#[derive(Default)]
struct Table {
    entries: Vec<Option<SocketAddrV4>>,
    /// The first live `fi_addr_t` of each address (`FI_SOURCE`), looked up for every
    /// receive: Fx rather than SipHash, since the keys are addresses the application
    /// inserted, not ones a peer can choose to collide.
    by_addr: FxHashMap<SocketAddrV4, u64>,
}

/// The table. Removed entries leave a hole, so `fi_addr_t`s stay valid.
#[derive(Default)]
pub(crate) struct AddressVector {
    table: RwLock<Table>,
}

impl AddressVector {
    /// Inserts `addrs` in order, returning their `fi_addr_t`s.
    pub(crate) fn insert(&self, addrs: &[SocketAddrV4]) -> Vec<u64> {
        let mut t = self.table.write().unwrap_or_else(|p| p.into_inner());
        addrs
            .iter()
            .map(|a| {
                t.entries.push(Some(*a));
                let id = (t.entries.len() - 1) as u64;
                t.by_addr.entry(*a).or_insert(id);
                id
            })
            .collect()
    }

    /// The address at `fi_addr`.
    pub(crate) fn lookup(&self, fi_addr: u64) -> Option<SocketAddrV4> {
        let t = self.table.read().unwrap_or_else(|p| p.into_inner());
        usize::try_from(fi_addr)
            .ok()
            .and_then(|i| t.entries.get(i).copied().flatten())
    }

    /// Removes `fi_addr`; false when it was not there.
    pub(crate) fn remove(&self, fi_addr: u64) -> bool {
        let mut t = self.table.write().unwrap_or_else(|p| p.into_inner());
        let Some(addr) = usize::try_from(fi_addr)
            .ok()
            .and_then(|i| t.entries.get_mut(i))
            .and_then(Option::take)
        else {
            return false;
        };
        if t.by_addr.get(&addr) == Some(&fi_addr) {
            t.by_addr.remove(&addr);
            // Another live entry of the same address takes over.
            if let Some(i) = t.entries.iter().position(|e| *e == Some(addr)) {
                t.by_addr.insert(addr, i as u64);
            }
        }
        true
    }

    /// The `fi_addr_t` of `addr`, for `FI_SOURCE`: the first live entry holding it.
    pub(crate) fn reverse(&self, addr: SocketAddrV4) -> Option<u64> {
        let t = self.table.read().unwrap_or_else(|p| p.into_inner());
        t.by_addr.get(&addr).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn removed_entries_leave_a_hole_and_others_keep_their_index() {
        let av = AddressVector::default();
        let a = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 1);
        let b = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 2);
        assert_eq!(av.insert(&[a, b]), [0, 1]);
        assert!(av.remove(0));
        assert!(!av.remove(0), "already removed");
        assert!(!av.remove(7), "never there");
        assert_eq!(av.lookup(0), None);
        assert_eq!(av.lookup(1), Some(b));
        assert_eq!(av.reverse(a), None, "removed");
        assert_eq!(av.reverse(b), Some(1));
        assert_eq!(av.insert(&[a, a]), [2, 3]);
        assert_eq!(av.reverse(a), Some(2), "the first of two entries");
        assert!(av.remove(2));
        assert_eq!(av.reverse(a), Some(3), "the other entry takes over");
        assert_eq!(av.lookup(u64::MAX), None);
    }
}
