//! Fields of an SQE the io-uring crate has no setter for on some opcodes: the
//! `optlen` of a multishot receive (Linux 6.17) and the `buf_index` of a `SENDMSG_ZC`
//! that names registered memory (Linux 6.15). Written by hand because the crate's
//! `Entry` is opaque; the offsets are those of `struct io_uring_sqe` in the kernel's
//! uapi header, checked in the tests against fields the crate does set.

use io_uring::squeue;

/// Offset of `buf_index` (a union with `buf_group`).
pub(crate) const BUF_INDEX: usize = 40;
/// Offset of `optlen` (a union with `file_index` and `splice_fd_in`).
pub(crate) const OPTLEN: usize = 44;
const SQE_SIZE: usize = 64;
const _: () = assert!(std::mem::size_of::<squeue::Entry>() == SQE_SIZE);

/// `entry` with the bytes at `offset` replaced by `value`.
fn with_bytes<const N: usize>(
    entry: squeue::Entry,
    offset: usize,
    value: [u8; N],
) -> squeue::Entry {
    let mut raw = bytes(entry);
    raw[offset..offset + N].copy_from_slice(&value);
    // SAFETY: as in `bytes`: any 64 bytes are a valid `Entry`.
    unsafe { std::mem::transmute::<[u8; SQE_SIZE], squeue::Entry>(raw) }
}

/// `entry`'s 64 bytes.
fn bytes(entry: squeue::Entry) -> [u8; SQE_SIZE] {
    // SAFETY: `Entry` is `#[repr(C)]` around the 64-byte `io_uring_sqe` (size checked
    // above), made only of integers and unions of integers: any 64 bytes are a valid
    // value, and it owns nothing (no `Drop`), so viewing it as bytes and back is sound.
    unsafe { std::mem::transmute(entry) }
}

/// `entry` with its `optlen` field set to `len`.
pub(crate) fn with_optlen(entry: squeue::Entry, len: u32) -> squeue::Entry {
    with_bytes(entry, OPTLEN, len.to_ne_bytes())
}

/// `entry` with its `buf_index` field set to `index`.
pub(crate) fn with_buf_index(entry: squeue::Entry, index: u16) -> squeue::Entry {
    with_bytes(entry, BUF_INDEX, index.to_ne_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use io_uring::{opcode, types};

    /// Which bytes differ between `a` and `b`.
    fn changed(a: squeue::Entry, b: squeue::Entry) -> Vec<usize> {
        let (a, b) = (bytes(a), bytes(b));
        (0..SQE_SIZE).filter(|&i| a[i] != b[i]).collect()
    }

    #[test]
    fn optlen_lands_where_the_crate_puts_file_index() {
        // ACCEPT's `file_index` (slot + 1) shares the `optlen` field.
        let slot = types::DestinationSlot::try_from_slot_target(6).expect("slot");
        let accept = opcode::Accept::new(types::Fd(3), std::ptr::null_mut(), std::ptr::null_mut())
            .file_index(Some(slot))
            .build();
        assert_eq!(bytes(accept)[OPTLEN..OPTLEN + 4], 7u32.to_ne_bytes());
        let recv = || opcode::RecvMulti::new(types::Fd(3), 0).build();
        let after = with_optlen(recv(), 0x0102_0304);
        assert_eq!(
            bytes(after.clone())[OPTLEN..OPTLEN + 4],
            0x0102_0304u32.to_ne_bytes()
        );
        assert!(changed(recv(), after)
            .iter()
            .all(|i| (OPTLEN..OPTLEN + 4).contains(i)));
    }

    #[test]
    fn buf_index_lands_where_the_crate_puts_a_send_zcs() {
        let send = opcode::SendZc::new(types::Fd(3), std::ptr::null(), 0)
            .buf_index(Some(0x0a0b))
            .build();
        assert_eq!(
            bytes(send)[BUF_INDEX..BUF_INDEX + 2],
            0x0a0bu16.to_ne_bytes()
        );
        let msg = || opcode::SendMsgZc::new(types::Fd(3), std::ptr::null()).build();
        let after = with_buf_index(msg(), 0x0a0b);
        assert_eq!(
            bytes(after.clone())[BUF_INDEX..BUF_INDEX + 2],
            0x0a0bu16.to_ne_bytes()
        );
        assert!(changed(msg(), after)
            .iter()
            .all(|i| (BUF_INDEX..BUF_INDEX + 2).contains(i)));
    }
}
