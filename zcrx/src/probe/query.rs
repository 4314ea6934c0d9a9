//! `IORING_REGISTER_QUERY` (Linux 6.18+) and the rules that turn its answers, or their
//! absence, into [`ZcrxFeatures`].
//!
//! Hazard: never infer `IORING_REGISTER_ZCRX_CTRL` from a kernel version or from the
//! register opcode count alone; 6.18-rc1..rc4 used opcode 36 for a different struct.
//! Only a ZCRX query answer with `nr_ctrl_opcodes > 0` enables it.

use super::reason::errno_name;
use super::ring::errno_of;
use crate::{abi, ZcrxFeatures};
use serde::Serialize;

/// The answer to `IO_URING_QUERY_OPCODES`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct QueryOpcodesAnswer {
    /// Number of `IORING_OP_*` opcodes.
    pub nr_request_opcodes: u32,
    /// Number of `IORING_REGISTER_*` opcodes.
    pub nr_register_opcodes: u32,
    /// `IORING_FEAT_*` mask.
    pub feature_flags: u64,
    /// `IORING_SETUP_*` mask.
    pub ring_setup_flags: u64,
    /// Number of query opcodes.
    pub nr_query_opcodes: u32,
}

/// The answer to `IO_URING_QUERY_ZCRX` (Linux 6.19+): the kernel's struct as it is.
pub type ZcrxQueryAnswer = abi::QueryZcrx;

/// What the blind query found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct QueryReport {
    /// The `IORING_REGISTER_QUERY` syscall works (Linux 6.18+).
    pub present: bool,
    /// Errno name of the failed syscall when it does not.
    pub error: Option<String>,
    /// The OPCODES answer.
    pub opcodes: Option<QueryOpcodesAnswer>,
    /// The ZCRX answer, only when its per-entry result was 0.
    pub zcrx: Option<ZcrxQueryAnswer>,
    /// Errno name of the ZCRX entry's result when the kernel does not know the op.
    pub zcrx_error: Option<String>,
    /// The SCQ answer (Linux 6.19+), asked only when the kernel counts that op.
    pub scq: Option<abi::QueryScq>,
    /// The ZCRX_EVENT answer (Linux 7.2+), asked only when the kernel counts that op.
    pub zcrx_event: Option<abi::QueryZcrxEvent>,
}

/// Runs the OPCODES and ZCRX queries with ring fd -1.
pub(crate) fn run_query() -> QueryReport {
    let opcodes = match crate::sys::query::<abi::QueryOpcode>(abi::IO_URING_QUERY_OPCODES) {
        Err(err) => {
            return QueryReport {
                error: Some(errno_name(errno_of(&err))),
                ..Default::default()
            }
        }
        Ok(Err(errno)) => {
            // The syscall works, so QUERY exists, even though this entry was refused.
            return QueryReport {
                present: true,
                error: Some(errno_name(errno)),
                ..Default::default()
            };
        }
        Ok(Ok((q, _))) => QueryOpcodesAnswer {
            nr_request_opcodes: q.nr_request_opcodes,
            nr_register_opcodes: q.nr_register_opcodes,
            feature_flags: q.feature_flags,
            ring_setup_flags: q.ring_setup_flags,
            nr_query_opcodes: q.nr_query_opcodes,
        },
    };
    let (zcrx, zcrx_error) = match crate::sys::query::<abi::QueryZcrx>(abi::IO_URING_QUERY_ZCRX) {
        Ok(Ok((q, _))) => (Some(q), None),
        Ok(Err(errno)) => (None, Some(errno_name(errno))),
        Err(err) => (None, Some(errno_name(errno_of(&err)))),
    };
    let count = opcodes.nr_query_opcodes;
    QueryReport {
        present: true,
        error: None,
        opcodes: Some(opcodes),
        zcrx,
        zcrx_error,
        scq: counted_answer(count, abi::IO_URING_QUERY_SCQ),
        zcrx_event: counted_answer(count, abi::IO_URING_QUERY_ZCRX_EVENT),
    }
}

/// The answer to query `op` when the kernel counts it among its `count` query ops.
///
/// Ops past the count answer `EOPNOTSUPP`; not asking keeps an older kernel's report
/// free of errors nobody can act on.
fn counted_answer<T: Default>(count: u32, op: u32) -> Option<T> {
    if count <= op {
        return None;
    }
    match crate::sys::query::<T>(op) {
        Ok(Ok((q, _))) => Some(q),
        _ => None,
    }
}

/// Builds [`ZcrxFeatures`] from the opcode probe and the query results.
///
/// With a ZCRX answer every field comes from it. Without one the kernel is 6.15–6.18:
/// nothing that needs 6.19+ (import, nodev, control ops, large buffers) is claimed, the
/// refill header is the classic 8 bytes with the 64-byte entry alignment of 6.18, and
/// dmabuf areas and several instances per ring (both 6.16) are assumed only when QUERY
/// itself exists, which proves at least 6.18.
pub fn zcrx_features(
    recv_zc: bool,
    query_present: bool,
    zcrx: Option<&ZcrxQueryAnswer>,
) -> ZcrxFeatures {
    match zcrx {
        Some(q) => ZcrxFeatures {
            recv_zc,
            query: true,
            register_flags: q.register_flags,
            area_flags: q.area_flags,
            nr_ctrl_opcodes: q.nr_ctrl_opcodes,
            features: q.features,
            rq_hdr_size: q.rq_hdr_size,
            rq_hdr_alignment: q.rq_hdr_alignment,
            import: q.register_flags & u64::from(abi::ZCRX_REG_IMPORT) != 0,
            nodev: q.register_flags & u64::from(abi::ZCRX_REG_NODEV) != 0,
            dmabuf: q.area_flags & u64::from(abi::IORING_ZCRX_AREA_DMABUF) != 0,
            flush_rq: q.nr_ctrl_opcodes > abi::ZCRX_CTRL_FLUSH_RQ,
            export: q.nr_ctrl_opcodes > abi::ZCRX_CTRL_EXPORT,
            rx_page_size: q.features & abi::ZCRX_FEATURE_RX_PAGE_SIZE != 0,
            events: q.features & abi::ZCRX_FEATURE_EVENT != 0
                && q.nr_ctrl_opcodes > abi::ZCRX_CTRL_ARM_EVENT,
            add_area: q.nr_ctrl_opcodes > abi::ZCRX_CTRL_ADD_AREA,
            multiple_per_ring: true,
        },
        None => ZcrxFeatures {
            recv_zc,
            query: false,
            rq_hdr_size: 8,
            rq_hdr_alignment: 64,
            // RECV_ZC gates these too: a QUERY-capable kernel without the opcode
            // (filtered, or built without networking) cannot use any ZCRX feature.
            dmabuf: recv_zc && query_present,
            multiple_per_ring: recv_zc && query_present,
            ..Default::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANSWER_6_19: ZcrxQueryAnswer = ZcrxQueryAnswer {
        register_flags: 1,
        area_flags: 1,
        nr_ctrl_opcodes: 2,
        features: 0,
        rq_hdr_size: 8,
        rq_hdr_alignment: 64,
        resv2: 0,
    };

    const ANSWER_7_1: ZcrxQueryAnswer = ZcrxQueryAnswer {
        register_flags: 3,
        area_flags: 1,
        nr_ctrl_opcodes: 2,
        features: 1,
        rq_hdr_size: 8,
        rq_hdr_alignment: 64,
        resv2: 0,
    };

    #[test]
    fn query_absent_gives_the_6_15_baseline() {
        let f = zcrx_features(true, false, None);
        let expected = ZcrxFeatures {
            recv_zc: true,
            query: false,
            register_flags: 0,
            area_flags: 0,
            nr_ctrl_opcodes: 0,
            features: 0,
            rq_hdr_size: 8,
            rq_hdr_alignment: 64,
            import: false,
            nodev: false,
            dmabuf: false,
            flush_rq: false,
            export: false,
            rx_page_size: false,
            events: false,
            add_area: false,
            multiple_per_ring: false,
        };
        assert_eq!(f, expected);
    }

    #[test]
    fn query_present_without_zcrx_op_is_6_18() {
        let f = zcrx_features(true, true, None);
        assert!(f.recv_zc && !f.query);
        assert!(f.dmabuf && f.multiple_per_ring);
        assert!(!f.import && !f.nodev && !f.flush_rq && !f.export && !f.rx_page_size);
        assert_eq!(
            (f.nr_ctrl_opcodes, f.register_flags, f.area_flags),
            (0, 0, 0)
        );
        assert_eq!((f.rq_hdr_size, f.rq_hdr_alignment), (8, 64));
    }

    #[test]
    fn no_recv_zc_claims_nothing_even_with_query() {
        let f = zcrx_features(false, true, None);
        assert!(!f.recv_zc && !f.dmabuf && !f.multiple_per_ring);
    }

    #[test]
    fn answer_6_19_enables_import_and_ctrl_but_not_nodev() {
        let f = zcrx_features(true, true, Some(&ANSWER_6_19));
        let expected = ZcrxFeatures {
            recv_zc: true,
            query: true,
            register_flags: 1,
            area_flags: 1,
            nr_ctrl_opcodes: 2,
            features: 0,
            rq_hdr_size: 8,
            rq_hdr_alignment: 64,
            import: true,
            nodev: false,
            dmabuf: true,
            flush_rq: true,
            export: true,
            rx_page_size: false,
            events: false,
            add_area: false,
            multiple_per_ring: true,
        };
        assert_eq!(f, expected);
    }

    #[test]
    fn answer_7_1_enables_everything() {
        let f = zcrx_features(true, true, Some(&ANSWER_7_1));
        let expected = ZcrxFeatures {
            recv_zc: true,
            query: true,
            register_flags: 3,
            area_flags: 1,
            nr_ctrl_opcodes: 2,
            features: 1,
            rq_hdr_size: 8,
            rq_hdr_alignment: 64,
            import: true,
            nodev: true,
            dmabuf: true,
            flush_rq: true,
            export: true,
            rx_page_size: true,
            events: false,
            add_area: false,
            multiple_per_ring: true,
        };
        assert_eq!(f, expected);
    }

    #[test]
    fn answer_7_3_enables_events_and_added_areas() {
        let answer = ZcrxQueryAnswer {
            nr_ctrl_opcodes: 4,
            features: 0x3,
            rq_hdr_size: 128,
            ..ANSWER_7_1
        };
        let f = zcrx_features(true, true, Some(&answer));
        assert!(f.events && f.add_area && f.rx_page_size && f.nodev && f.export);
        // 7.2: events, no ADD_AREA yet.
        let f = zcrx_features(
            true,
            true,
            Some(&ZcrxQueryAnswer {
                nr_ctrl_opcodes: 3,
                ..answer
            }),
        );
        assert!(f.events && !f.add_area);
        // The feature bit alone is not enough: arming needs the control op.
        let f = zcrx_features(
            true,
            true,
            Some(&ZcrxQueryAnswer {
                nr_ctrl_opcodes: 2,
                ..answer
            }),
        );
        assert!(!f.events && !f.add_area);
    }

    #[test]
    fn one_ctrl_opcode_is_flush_only_and_header_size_is_taken_verbatim() {
        let answer = ZcrxQueryAnswer {
            nr_ctrl_opcodes: 1,
            rq_hdr_size: 128,
            rq_hdr_alignment: 128,
            ..ANSWER_6_19
        };
        let f = zcrx_features(true, true, Some(&answer));
        assert!(f.flush_rq && !f.export);
        assert_eq!((f.rq_hdr_size, f.rq_hdr_alignment), (128, 128));
    }
}
