//! A libfabric address vector: the peers' socket addresses, indexed by the
//! `fi_addr_t` handed to the application. `FI_AV_TABLE` and `FI_AV_MAP` are the same
//! table here (a map's `fi_addr_t` is opaque to the application, so an index serves).

use std::net::SocketAddrV4;
use std::sync::RwLock;

/// The table. Removed entries leave a hole, so `fi_addr_t`s stay valid.
#[derive(Default)]
pub(crate) struct AddressVector {
    entries: RwLock<Vec<Option<SocketAddrV4>>>,
}

impl AddressVector {
    /// Inserts `addrs` in order, returning their `fi_addr_t`s.
    pub(crate) fn insert(&self, addrs: &[SocketAddrV4]) -> Vec<u64> {
        let mut t = self.entries.write().unwrap_or_else(|p| p.into_inner());
        addrs
            .iter()
            .map(|a| {
                t.push(Some(*a));
                (t.len() - 1) as u64
            })
            .collect()
    }

    /// The address at `fi_addr`.
    pub(crate) fn lookup(&self, fi_addr: u64) -> Option<SocketAddrV4> {
        let t = self.entries.read().unwrap_or_else(|p| p.into_inner());
        usize::try_from(fi_addr)
            .ok()
            .and_then(|i| t.get(i).copied().flatten())
    }

    /// Removes `fi_addr`; false when it was not there.
    pub(crate) fn remove(&self, fi_addr: u64) -> bool {
        let mut t = self.entries.write().unwrap_or_else(|p| p.into_inner());
        match usize::try_from(fi_addr).ok().and_then(|i| t.get_mut(i)) {
            Some(slot @ Some(_)) => {
                *slot = None;
                true
            }
            _ => false,
        }
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
        assert_eq!(av.insert(&[a]), [2]);
        assert_eq!(av.lookup(u64::MAX), None);
    }
}
