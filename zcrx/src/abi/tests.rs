//! The ABI structs against the kernel's: sizes, field offsets and constants as the 7.3
//! uapi headers have them.

use super::*;
use std::mem::{offset_of, size_of};

#[test]
fn struct_sizes_match_the_kernel() {
    assert_eq!(size_of::<ZcrxOffsets>(), 32);
    assert_eq!(size_of::<ZcrxIfqReg>(), 96);
    assert_eq!(size_of::<ZcrxAreaReg>(), 48);
    assert_eq!(size_of::<RegionDesc>(), 64);
    assert_eq!(size_of::<ZcrxRqe>(), 16);
    assert_eq!(size_of::<ZcrxCqe>(), 16);
    assert_eq!(size_of::<ZcrxCtrl>(), 72);
    assert_eq!(size_of::<QueryHdr>(), 40);
    assert_eq!(size_of::<QueryOpcode>(), 48);
    assert_eq!(size_of::<QueryZcrx>(), 40);
    assert_eq!(size_of::<SetupParams>(), 120);
    assert_eq!(size_of::<ZcrxCtrlArmEvent>(), 48);
    assert_eq!(size_of::<ZcrxCtrlAddArea>(), 48);
    assert_eq!(size_of::<ZcrxStats>(), 16);
    assert_eq!(size_of::<ZcrxEventDesc>(), 96);
    assert_eq!(size_of::<QueryScq>(), 16);
    assert_eq!(size_of::<QueryZcrxEvent>(), 48);
}

/// Each constructor lays its arm out as the arm's own struct would.
#[test]
fn ctrl_arms_match_their_structs() {
    let as_bytes =
        |c: &ZcrxCtrl| -> Vec<u8> { c.payload.iter().flat_map(|w| w.to_ne_bytes()).collect() };
    fn bytes_of<T: Copy>(v: &T) -> Vec<u8> {
        // SAFETY: `T` is one of the plain `repr(C)` arms, with no padding.
        unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), size_of::<T>()).to_vec() }
    }
    let arm = ZcrxCtrl::arm_event(7, ZCRX_EVENT_COPY);
    assert_eq!((arm.zcrx_id, arm.op), (7, ZCRX_CTRL_ARM_EVENT));
    let want = ZcrxCtrlArmEvent {
        event_type: ZCRX_EVENT_COPY,
        ..Default::default()
    };
    assert_eq!(as_bytes(&arm), bytes_of(&want));
    let add = ZcrxCtrl::add_area(1, 0xdead_beef_0000);
    assert_eq!(add.op, ZCRX_CTRL_ADD_AREA);
    let want = ZcrxCtrlAddArea {
        area_ptr: 0xdead_beef_0000,
        ..Default::default()
    };
    assert_eq!(as_bytes(&add), bytes_of(&want));
    assert_eq!(as_bytes(&ZcrxCtrl::flush_rq(2)), vec![0; 48]);
    let mut exported = ZcrxCtrl::export(3);
    assert_eq!((exported.op, exported.exported_fd()), (ZCRX_CTRL_EXPORT, 0));
    // The kernel writes `zcrx_ctrl_export::zcrx_fd` at the start of the arm.
    let reply = ZcrxCtrlExport {
        zcrx_fd: 42,
        ..Default::default()
    };
    let reply = bytes_of(&reply);
    for (i, w) in exported.payload.iter_mut().enumerate() {
        *w = u64::from_ne_bytes(reply[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    }
    assert_eq!(exported.exported_fd(), 42);
}

#[test]
fn event_and_area_structs_of_7_2_and_7_3() {
    assert_eq!(offset_of!(ZcrxIfqReg, event_desc), 72);
    assert_eq!(offset_of!(ZcrxIfqReg, resv), 80);
    assert_eq!(offset_of!(ZcrxEventDesc, user_data), 0);
    assert_eq!(offset_of!(ZcrxEventDesc, type_mask), 8);
    assert_eq!(offset_of!(ZcrxEventDesc, flags), 12);
    assert_eq!(offset_of!(ZcrxEventDesc, stats_offset), 16);
    assert_eq!(offset_of!(ZcrxEventDesc, resv2), 24);
    assert_eq!(offset_of!(ZcrxStats, copy_count), 0);
    assert_eq!(offset_of!(ZcrxStats, copy_bytes), 8);
    assert_eq!(offset_of!(ZcrxCtrlArmEvent, event_type), 0);
    assert_eq!(offset_of!(ZcrxCtrlArmEvent, resv), 4);
    assert_eq!(offset_of!(ZcrxCtrlAddArea, area_ptr), 0);
    assert_eq!(offset_of!(ZcrxCtrlAddArea, resv), 8);
    assert_eq!(offset_of!(QueryZcrxEvent, event_flags), 0);
    assert_eq!(offset_of!(QueryZcrxEvent, stats_size), 4);
    assert_eq!(offset_of!(QueryZcrxEvent, stats_off_alignment), 8);
    assert_eq!(offset_of!(QueryZcrxEvent, resv2), 16);
    assert_eq!(offset_of!(QueryScq, hdr_alignment), 8);
    // The values of the 7.3 uapi header (`include/uapi/linux/io_uring/zcrx.h`,
    // `query.h`).
    assert_eq!((ZCRX_FEATURE_RX_PAGE_SIZE, ZCRX_FEATURE_EVENT), (1, 2));
    assert_eq!(
        (
            ZCRX_CTRL_FLUSH_RQ,
            ZCRX_CTRL_EXPORT,
            ZCRX_CTRL_ARM_EVENT,
            ZCRX_CTRL_ADD_AREA
        ),
        (0, 1, 2, 3)
    );
    assert_eq!((ZCRX_EVENT_ALLOC_FAIL, ZCRX_EVENT_COPY), (0, 1));
    assert_eq!(ZCRX_EVENT_DESC_FLAG_STATS, 1);
    assert_eq!(
        (
            IO_URING_QUERY_OPCODES,
            IO_URING_QUERY_ZCRX,
            IO_URING_QUERY_SCQ,
            IO_URING_QUERY_ZCRX_EVENT
        ),
        (0, 1, 2, 3)
    );
}

#[test]
fn ifq_reg_field_offsets() {
    assert_eq!(offset_of!(ZcrxIfqReg, if_idx), 0);
    assert_eq!(offset_of!(ZcrxIfqReg, if_rxq), 4);
    assert_eq!(offset_of!(ZcrxIfqReg, rq_entries), 8);
    assert_eq!(offset_of!(ZcrxIfqReg, flags), 12);
    assert_eq!(offset_of!(ZcrxIfqReg, area_ptr), 16);
    assert_eq!(offset_of!(ZcrxIfqReg, region_ptr), 24);
    assert_eq!(offset_of!(ZcrxIfqReg, offsets), 32);
    assert_eq!(offset_of!(ZcrxIfqReg, zcrx_id), 64);
    assert_eq!(offset_of!(ZcrxIfqReg, rx_buf_len), 68);
    assert_eq!(offset_of!(ZcrxOffsets, head), 0);
    assert_eq!(offset_of!(ZcrxOffsets, tail), 4);
    assert_eq!(offset_of!(ZcrxOffsets, rqes), 8);
    assert_eq!(offset_of!(ZcrxOffsets, resv2), 12);
    assert_eq!(offset_of!(ZcrxOffsets, resv), 16);
}

#[test]
fn area_region_and_entry_field_offsets() {
    assert_eq!(offset_of!(ZcrxAreaReg, addr), 0);
    assert_eq!(offset_of!(ZcrxAreaReg, len), 8);
    assert_eq!(offset_of!(ZcrxAreaReg, rq_area_token), 16);
    assert_eq!(offset_of!(ZcrxAreaReg, flags), 24);
    assert_eq!(offset_of!(ZcrxAreaReg, dmabuf_fd), 28);
    assert_eq!(offset_of!(ZcrxAreaReg, resv2), 32);
    assert_eq!(offset_of!(RegionDesc, user_addr), 0);
    assert_eq!(offset_of!(RegionDesc, size), 8);
    assert_eq!(offset_of!(RegionDesc, flags), 16);
    assert_eq!(offset_of!(RegionDesc, id), 20);
    assert_eq!(offset_of!(RegionDesc, mmap_offset), 24);
    assert_eq!(offset_of!(RegionDesc, resv), 32);
    assert_eq!(offset_of!(ZcrxRqe, off), 0);
    assert_eq!(offset_of!(ZcrxRqe, len), 8);
    assert_eq!(offset_of!(ZcrxRqe, pad), 12);
    assert_eq!(offset_of!(ZcrxCqe, off), 0);
    assert_eq!(offset_of!(ZcrxCqe, pad), 8);
}

#[test]
fn ctrl_and_query_field_offsets() {
    assert_eq!(offset_of!(ZcrxCtrl, zcrx_id), 0);
    assert_eq!(offset_of!(ZcrxCtrl, op), 4);
    assert_eq!(offset_of!(ZcrxCtrl, resv), 8);
    assert_eq!(offset_of!(ZcrxCtrl, payload), 24);
    assert_eq!(size_of::<ZcrxCtrlExport>(), 48);
    assert_eq!(offset_of!(QueryHdr, next_entry), 0);
    assert_eq!(offset_of!(QueryHdr, query_data), 8);
    assert_eq!(offset_of!(QueryHdr, query_op), 16);
    assert_eq!(offset_of!(QueryHdr, size), 20);
    assert_eq!(offset_of!(QueryHdr, result), 24);
    assert_eq!(offset_of!(QueryHdr, resv), 28);
    assert_eq!(offset_of!(QueryZcrx, register_flags), 0);
    assert_eq!(offset_of!(QueryZcrx, area_flags), 8);
    assert_eq!(offset_of!(QueryZcrx, nr_ctrl_opcodes), 16);
    assert_eq!(offset_of!(QueryZcrx, features), 20);
    assert_eq!(offset_of!(QueryZcrx, rq_hdr_size), 24);
    assert_eq!(offset_of!(QueryZcrx, rq_hdr_alignment), 28);
    assert_eq!(offset_of!(QueryZcrx, resv2), 32);
    assert_eq!(offset_of!(QueryOpcode, nr_register_opcodes), 4);
    assert_eq!(offset_of!(QueryOpcode, feature_flags), 8);
    assert_eq!(offset_of!(QueryOpcode, ring_setup_flags), 16);
    assert_eq!(offset_of!(QueryOpcode, nr_query_opcodes), 40);
    assert_eq!(offset_of!(SetupParams, flags), 8);
    assert_eq!(offset_of!(SetupParams, features), 20);
    assert_eq!(offset_of!(SetupParams, sq_off), 40);
    assert_eq!(offset_of!(SetupParams, cq_off), 80);
}

#[test]
fn area_mask_splits_token_and_offset() {
    assert_eq!(IORING_ZCRX_AREA_MASK, 0xFFFF_0000_0000_0000);
    let off = (3u64 << IORING_ZCRX_AREA_SHIFT) | 0x1234;
    assert_eq!(off & !IORING_ZCRX_AREA_MASK, 0x1234);
    assert_eq!(off & IORING_ZCRX_AREA_MASK, 3 << 48);
}
