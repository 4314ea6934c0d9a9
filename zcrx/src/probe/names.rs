//! Names for the op numbers and bits the kernel's query reports, each with the Linux
//! version that added it, so `zerorx doctor` can say what a kernel offers and show
//! anything newer than this build as unknown instead of hiding it.
//!
//! Values are those of the 7.3 uapi headers (`include/uapi/linux/io_uring/zcrx.h`,
//! `query.h`); `abi`'s tests pin the constants.

use crate::abi;

/// One named thing: its kernel name and the release that added it.
type Entry = (u64, &'static str, &'static str);

/// `ZCRX_CTRL_*`, by op number.
const CTRL_OPS: [Entry; 4] = [
    (abi::ZCRX_CTRL_FLUSH_RQ as u64, "FLUSH_RQ", "6.19"),
    (abi::ZCRX_CTRL_EXPORT as u64, "EXPORT", "6.19"),
    (abi::ZCRX_CTRL_ARM_EVENT as u64, "ARM_EVENT", "7.2"),
    (abi::ZCRX_CTRL_ADD_AREA as u64, "ADD_AREA", "7.3"),
];

/// `IO_URING_QUERY_*`, by op number.
const QUERY_OPS: [Entry; 4] = [
    (abi::IO_URING_QUERY_OPCODES as u64, "OPCODES", "6.18"),
    (abi::IO_URING_QUERY_ZCRX as u64, "ZCRX", "6.19"),
    (abi::IO_URING_QUERY_SCQ as u64, "SCQ", "6.19"),
    (abi::IO_URING_QUERY_ZCRX_EVENT as u64, "ZCRX_EVENT", "7.2"),
];

/// `ZCRX_FEATURE_*`, by bit.
const FEATURES: [Entry; 2] = [
    (abi::ZCRX_FEATURE_RX_PAGE_SIZE as u64, "RX_PAGE_SIZE", "7.0"),
    (abi::ZCRX_FEATURE_EVENT as u64, "EVENT", "7.2"),
];

/// `ZCRX_REG_*`, by bit.
const REGISTER_FLAGS: [Entry; 2] = [
    (abi::ZCRX_REG_IMPORT as u64, "IMPORT", "6.19"),
    (abi::ZCRX_REG_NODEV as u64, "NODEV", "7.1"),
];

/// `IORING_ZCRX_AREA_*`, by bit.
const AREA_FLAGS: [Entry; 1] = [(abi::IORING_ZCRX_AREA_DMABUF as u64, "DMABUF", "6.16")];

/// `1 << ZCRX_EVENT_*`, by bit (the query's `event_flags` and the descriptor's
/// `type_mask`).
const EVENT_TYPES: [Entry; 2] = [
    (1 << abi::ZCRX_EVENT_ALLOC_FAIL, "ALLOC_FAIL", "7.2"),
    (1 << abi::ZCRX_EVENT_COPY, "COPY", "7.2"),
];

fn named(name: &str, since: &str) -> String {
    format!("{name} ({since})")
}

/// The first `count` numbered ops of `table`; numbers past it are unknown.
fn numbered(count: u32, table: &[Entry], what: &str) -> Vec<String> {
    (0..u64::from(count))
        .map(|n| match table.iter().find(|(v, ..)| *v == n) {
            Some((_, name, since)) => named(name, since),
            None => format!("{what} {n} (unknown: newer than this build)"),
        })
        .collect()
}

/// Every set bit of `mask`, named from `table` or shown as unknown.
fn bits(mask: u64, table: &[Entry]) -> Vec<String> {
    (0..64)
        .map(|b| 1u64 << b)
        .filter(|bit| mask & bit != 0)
        .map(|bit| match table.iter().find(|(v, ..)| *v == bit) {
            Some((_, name, since)) => named(name, since),
            None => format!("bit {bit:#x} (unknown: newer than this build)"),
        })
        .collect()
}

/// The ZCRX control ops a kernel reporting `nr_ctrl_opcodes` supports.
pub fn ctrl_ops(nr_ctrl_opcodes: u32) -> Vec<String> {
    numbered(nr_ctrl_opcodes, &CTRL_OPS, "op")
}

/// The query ops a kernel reporting `nr_query_opcodes` answers.
pub fn query_ops(nr_query_opcodes: u32) -> Vec<String> {
    numbered(nr_query_opcodes, &QUERY_OPS, "op")
}

/// The `ZCRX_FEATURE_*` bits of the query's `features`.
pub fn features(features: u32) -> Vec<String> {
    bits(u64::from(features), &FEATURES)
}

/// The `ZCRX_REG_*` bits of the query's `register_flags`.
pub fn register_flags(flags: u64) -> Vec<String> {
    bits(flags, &REGISTER_FLAGS)
}

/// The `IORING_ZCRX_AREA_*` bits of the query's `area_flags`.
pub fn area_flags(flags: u64) -> Vec<String> {
    bits(flags, &AREA_FLAGS)
}

/// The event types of the ZCRX_EVENT query's `event_flags`.
pub fn event_types(event_flags: u32) -> Vec<String> {
    bits(u64::from(event_flags), &EVENT_TYPES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_7_3_kernel_has_every_op_and_feature_named() {
        assert_eq!(
            ctrl_ops(4),
            [
                "FLUSH_RQ (6.19)",
                "EXPORT (6.19)",
                "ARM_EVENT (7.2)",
                "ADD_AREA (7.3)"
            ]
        );
        assert_eq!(features(0x3), ["RX_PAGE_SIZE (7.0)", "EVENT (7.2)"]);
        assert_eq!(register_flags(0x3), ["IMPORT (6.19)", "NODEV (7.1)"]);
        assert_eq!(area_flags(0x1), ["DMABUF (6.16)"]);
        assert_eq!(
            query_ops(4),
            [
                "OPCODES (6.18)",
                "ZCRX (6.19)",
                "SCQ (6.19)",
                "ZCRX_EVENT (7.2)"
            ]
        );
        assert_eq!(event_types(0x3), ["ALLOC_FAIL (7.2)", "COPY (7.2)"]);
    }

    #[test]
    fn older_kernels_list_only_what_they_have() {
        assert_eq!(ctrl_ops(2), ["FLUSH_RQ (6.19)", "EXPORT (6.19)"]);
        assert!(ctrl_ops(0).is_empty());
        assert!(features(0).is_empty());
        assert_eq!(query_ops(1), ["OPCODES (6.18)"]);
    }

    #[test]
    fn what_a_newer_kernel_adds_shows_as_unknown() {
        assert_eq!(
            ctrl_ops(6)[4..],
            [
                "op 4 (unknown: newer than this build)",
                "op 5 (unknown: newer than this build)"
            ]
        );
        assert_eq!(
            features(0x1 | 0x8),
            [
                "RX_PAGE_SIZE (7.0)",
                "bit 0x8 (unknown: newer than this build)"
            ]
        );
        assert_eq!(
            register_flags(1 << 63),
            ["bit 0x8000000000000000 (unknown: newer than this build)"]
        );
        assert_eq!(
            event_types(0x4),
            ["bit 0x4 (unknown: newer than this build)"]
        );
    }
}
