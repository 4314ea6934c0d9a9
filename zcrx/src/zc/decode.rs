//! Turning RECV_ZC completions into buffers.

use crate::abi::IORING_ZCRX_AREA_MASK;
use crate::core::PoolCore;
use crate::error::PoolError;
use crate::rxbuf::RxBuf;
use std::sync::Arc;

/// What a ring needs to decode completions of one ZCRX instance (the owner's ring and
/// importing rings decode the same way).
#[derive(Debug, Clone)]
pub(crate) struct Decoder {
    pub(crate) core: Arc<PoolCore>,
    /// The area token (area id << 48) the kernel assigned.
    pub(crate) token: u64,
    /// Chunk ("niov") size: a data completion never crosses a chunk boundary.
    pub(crate) chunk_size: u64,
    /// Device-less instances copy every byte.
    pub(crate) zero_copy: bool,
}

impl Decoder {
    /// The user-space address range of the instance's area: what identifies the
    /// instance across rings (an import decodes into its owner's area).
    pub(crate) fn area(&self) -> std::ops::Range<usize> {
        let start = self.core.area.as_ptr() as usize;
        start..start + self.core.area.len()
    }

    /// A data completion (`res > 0`, `big_cqe[0]` = area token | offset) as the buffer
    /// holding exactly `res` bytes.
    pub(crate) fn take(&self, res: i32, big_cqe: [u64; 2]) -> Result<RxBuf, PoolError> {
        if res <= 0 {
            return Err(PoolError::BadCompletion(format!(
                "result {res} is a terminal completion: its 32-byte tail must not be read"
            )));
        }
        let off = big_cqe[0];
        let token = off & IORING_ZCRX_AREA_MASK;
        let area = if token == self.token {
            &self.core.area
        } else {
            self.core.added_area(token).ok_or_else(|| {
                PoolError::BadCompletion(format!(
                    "area token {token:#x} is none of this pool's (first {:#x})",
                    self.token
                ))
            })?
        };
        let start = off & !IORING_ZCRX_AREA_MASK;
        let end = start + res as u64;
        let area_len = area.len() as u64;
        if end > area_len {
            return Err(PoolError::BadCompletion(format!(
                "range {start}..{end} is outside the {area_len}-byte area"
            )));
        }
        if start / self.chunk_size != (end - 1) / self.chunk_size {
            return Err(PoolError::BadCompletion(format!(
                "range {start}..{end} crosses a {}-byte chunk boundary",
                self.chunk_size
            )));
        }
        self.core.stats.handed_out(res as u64, self.zero_copy);
        // SAFETY: the range is inside the area (checked above); the kernel handed this
        // completion's user reference to us and gets it back only through the refill
        // entry written when the handle drops, which names the area by the same token.
        Ok(unsafe {
            RxBuf::new(
                self.core.clone(),
                area.as_ptr().add(start as usize),
                res as u32,
                off,
            )
        })
    }
}
