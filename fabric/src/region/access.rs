//! [`Access`]: what a region or a remote key may be used for.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What a region (or a remote key) may be used for.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Access(u8);

impl Access {
    /// Source of sends and RMA writes.
    pub const READ: Access = Access(1);
    /// Destination of receives and RMA reads.
    pub const WRITE: Access = Access(2);
    /// Peers may read it with RMA (needs [`READ`](Self::READ) too).
    pub const REMOTE_READ: Access = Access(4);
    /// Peers may write it with RMA (needs [`WRITE`](Self::WRITE) too).
    pub const REMOTE_WRITE: Access = Access(8);
    /// Local read and write.
    pub const LOCAL: Access = Access(3);
    /// Everything.
    pub const ALL: Access = Access(15);

    /// No access.
    pub const fn empty() -> Access {
        Access(0)
    }

    /// Whether every flag of `other` is set here.
    pub const fn contains(self, other: Access) -> bool {
        self.0 & other.0 == other.0
    }

    /// The raw bits (for wire formats).
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// From raw bits; unknown bits are dropped.
    pub const fn from_bits(bits: u8) -> Access {
        Access(bits & 15)
    }

    /// Only the remote flags.
    pub const fn remote_part(self) -> Access {
        Access(self.0 & 12)
    }
}

impl std::ops::BitOr for Access {
    type Output = Access;
    fn bitor(self, rhs: Access) -> Access {
        Access(self.0 | rhs.0)
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = [
            (Access::READ, "read"),
            (Access::WRITE, "write"),
            (Access::REMOTE_READ, "remote-read"),
            (Access::REMOTE_WRITE, "remote-write"),
        ];
        let set: Vec<&str> = names
            .iter()
            .filter(|(a, _)| self.contains(*a))
            .map(|(_, n)| *n)
            .collect();
        if set.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&set.join("|"))
        }
    }
}

impl fmt::Debug for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Access({self})")
    }
}
