//! [`RemoteKey`]: what a peer needs for RMA into a region, and the [`KeyGrant`] a
//! provider makes it from.

use super::Access;
use crate::error::PostError;
use serde::{Deserialize, Serialize};

/// The generation of every key a program chose: such keys carry none of their own.
pub(crate) const KEYED_GENERATION: u32 = 0;

/// What a provider returns for a granted range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyGrant {
    /// The key peers present (unguessable).
    pub key: u64,
    /// The grant's generation, checked with the key.
    pub generation: u32,
    /// What the provider adds to an RMA offset to address the range (0-based offset
    /// for the io_uring provider, a virtual address for `FI_MR_VIRT_ADDR` providers).
    pub base: u64,
}

/// What a peer needs to read or write a granted range: serialisable (serde, or
/// [`to_bytes`](Self::to_bytes)) for out-of-band exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RemoteKey {
    /// The key.
    pub key: u64,
    /// The grant's generation.
    pub generation: u32,
    /// Provider addressing base of the range (see [`KeyGrant::base`]).
    pub base: u64,
    /// Length of the granted range; RMA offsets are relative to its start.
    pub len: u64,
    /// What the key grants.
    pub access: Access,
}

impl RemoteKey {
    /// A key known only by its value, as libfabric programs exchange them (a key the
    /// target chose with [`MemoryRegion::remote_keyed`](crate::MemoryRegion::remote_keyed)):
    /// no bounds or access to check before posting, so the target's check is the
    /// only one (providers with [`Cap::TargetValidation`](crate::Cap::TargetValidation)
    /// report a violation in the completion).
    pub fn raw(key: u64) -> RemoteKey {
        RemoteKey {
            key,
            generation: KEYED_GENERATION,
            base: 0,
            len: u64::MAX,
            access: Access::REMOTE_READ | Access::REMOTE_WRITE,
        }
    }

    /// Encoded length of [`to_bytes`](Self::to_bytes).
    pub const ENCODED_LEN: usize = 29;

    /// A fixed little-endian encoding.
    pub fn to_bytes(&self) -> [u8; Self::ENCODED_LEN] {
        let mut b = [0u8; Self::ENCODED_LEN];
        b[0..8].copy_from_slice(&self.key.to_le_bytes());
        b[8..12].copy_from_slice(&self.generation.to_le_bytes());
        b[12..20].copy_from_slice(&self.base.to_le_bytes());
        b[20..28].copy_from_slice(&self.len.to_le_bytes());
        b[28] = self.access.bits();
        b
    }

    /// Decodes [`to_bytes`](Self::to_bytes); `None` for a wrong length.
    pub fn from_bytes(b: &[u8]) -> Option<RemoteKey> {
        if b.len() != Self::ENCODED_LEN {
            return None;
        }
        let u64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(a)
        };
        let mut g = [0u8; 4];
        g.copy_from_slice(&b[8..12]);
        Some(RemoteKey {
            key: u64_at(0),
            generation: u32::from_le_bytes(g),
            base: u64_at(12),
            len: u64_at(20),
            access: Access::from_bits(b[28]),
        })
    }

    /// Checks an RMA of `len` bytes at `offset` needing `need`, before posting.
    pub(crate) fn check(&self, offset: u64, len: u64, need: Access) -> Result<(), PostError> {
        if !self.access.contains(need) {
            return Err(PostError::RemoteAccess {
                key: self.key,
                need,
                have: self.access,
            });
        }
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(PostError::RemoteRange {
                key: self.key,
                offset,
                len,
                limit: self.len,
            }),
        }
    }
}

/// 64 random bits from the kernel (`getrandom`), for keys and endpoint nonces.
pub fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    let mut filled = 0;
    while filled < 8 {
        // SAFETY: writes at most `8 - filled` bytes into `b[filled..]`.
        let n = unsafe { libc::getrandom(b[filled..].as_mut_ptr().cast(), 8 - filled, 0) };
        if n > 0 {
            filled += n as usize;
        } else if n < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // getrandom cannot fail on Linux ≥ 3.17 once the pool is initialised; fall
            // back to a time- and address-mixed value rather than panicking.
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            return t ^ (&b as *const _ as u64).rotate_left(32);
        }
    }
    u64::from_le_bytes(b)
}
