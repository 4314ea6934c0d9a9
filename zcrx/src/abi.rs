//! The kernel's ZCRX and query ABI: constants and `#[repr(C)]` structs.
//!
//! The `io-uring` crate (0.7.15) carries the 6.15-era registration struct only, with
//! `rx_buf_len` hidden in a reserved field and no query, control or import support, so
//! the structs the runtime registers with are defined here from the kernel uapi headers
//! (`include/uapi/linux/io_uring.h`, `io_uring/zcrx.h`, `io_uring/query.h`). Field order
//! and sizes are checked against the kernel values in the tests at the bottom.
//!
//! Every struct is plain data: all-zero is a valid value, which is what the kernel
//! expects of every reserved field.

/// `IORING_OP_RECV_ZC`: multishot zero-copy receive. Linux 6.15.
pub const IORING_OP_RECV_ZC: u8 = 58;

/// `IORING_REGISTER_PBUF_RING`: register a provided-buffer ring. Linux 5.19.
pub const IORING_REGISTER_PBUF_RING: u32 = 22;
/// `IOU_PBUF_RING_INC`: provided buffers consumed incrementally. Linux 6.12.
pub const IOU_PBUF_RING_INC: u16 = 2;
/// `IORING_REGISTER_ZCRX_IFQ`: bind a NIC receive queue to an area. Linux 6.15.
pub const IORING_REGISTER_ZCRX_IFQ: u32 = 32;
/// `IORING_REGISTER_QUERY`: blind capability query (ring fd may be -1). Linux 6.18.
pub const IORING_REGISTER_QUERY: u32 = 35;
/// `IORING_REGISTER_ZCRX_CTRL`: flush and export. Linux 6.19.
///
/// Never send it unless the kernel reports more than 36 register opcodes: 6.18-rc1..rc4
/// used the same number for a different struct.
pub const IORING_REGISTER_ZCRX_CTRL: u32 = 36;

/// Ring setup flags (`IORING_SETUP_*`) the probe and the runtime care about.
pub mod setup {
    /// Clamp oversized ring sizes instead of failing.
    pub const CLAMP: u32 = 1 << 4;
    /// Complete task work only when the application asks (cheaper wake-ups).
    pub const COOP_TASKRUN: u32 = 1 << 8;
    /// Tell the application when task work is pending.
    pub const TASKRUN_FLAG: u32 = 1 << 9;
    /// 32-byte completion entries (needed by RECV_ZC).
    pub const CQE32: u32 = 1 << 11;
    /// Only one thread submits (needed by DEFER_TASKRUN).
    pub const SINGLE_ISSUER: u32 = 1 << 12;
    /// Run completion task work at `io_uring_enter` time only (needed by ZCRX).
    pub const DEFER_TASKRUN: u32 = 1 << 13;
    /// Mixed 16/32-byte completion entries. Linux 6.18.
    pub const CQE_MIXED: u32 = 1 << 18;
}

/// Completion flags (`IORING_CQE_F_*`).
pub mod cqe_flags {
    /// A provided buffer was used; its id is in the upper 16 bits.
    pub const BUFFER: u32 = 1 << 0;
    /// More completions will follow for this request (multishot).
    pub const MORE: u32 = 1 << 1;
    /// The socket still had data when this completion was posted.
    pub const SOCK_NONEMPTY: u32 = 1 << 2;
    /// A zero-copy send's notification: the kernel no longer reads the send's memory.
    pub const NOTIF: u32 = 1 << 3;
    /// The provided buffer was consumed only in part (incremental rings).
    pub const BUF_MORE: u32 = 1 << 4;
    /// Padding entry on CQE_MIXED rings. Linux 6.18.
    pub const SKIP: u32 = 1 << 5;
    /// 32-byte entry on CQE_MIXED rings. Linux 6.18.
    pub const F_32: u32 = 1 << 15;
    /// Shift of the buffer id in `flags`.
    pub const BUFFER_SHIFT: u32 = 16;
}

/// Shift of the area id inside a ZCRX offset.
pub const IORING_ZCRX_AREA_SHIFT: u32 = 48;
/// Mask of the area id bits inside a ZCRX offset.
pub const IORING_ZCRX_AREA_MASK: u64 = !((1u64 << IORING_ZCRX_AREA_SHIFT) - 1);
/// Area flag: the area is a dmabuf (Linux 6.16).
pub const IORING_ZCRX_AREA_DMABUF: u32 = 1;
/// Region flag: the region's memory is supplied by the user.
pub const IORING_MEM_REGION_TYPE_USER: u32 = 1;
/// `IORING_SEND_ZC_REPORT_USAGE`, carried in a zero-copy send's `sqe->ioprio`: the
/// notification says whether the kernel copied the bytes after all (Linux 6.2).
pub const IORING_SEND_ZC_REPORT_USAGE: u16 = 1 << 3;
/// Set in a zero-copy send's notification `res` (with
/// [`IORING_SEND_ZC_REPORT_USAGE`]) when the kernel copied some of the bytes: loopback,
/// or a device without scatter-gather or checksum offload.
pub const IORING_NOTIF_USAGE_ZC_COPIED: u32 = 1 << 31;
/// `IORING_RECVSEND_FIXED_BUF`, carried in a send's `sqe->ioprio`: its memory lies in
/// the registered buffer `sqe->buf_index` (a `SENDMSG_ZC`'s iovecs too, Linux 6.15).
pub const IORING_RECVSEND_FIXED_BUF: u16 = 1 << 2;
/// `IORING_RECV_MULTISHOT`, carried in `sqe->ioprio`.
pub const IORING_RECV_MULTISHOT: u16 = 1 << 1;

/// Registration flag: import an instance exported by another ring (Linux 6.19).
pub const ZCRX_REG_IMPORT: u32 = 1;
/// Registration flag: device-less instance, every byte copied (Linux 7.1).
pub const ZCRX_REG_NODEV: u32 = 2;
/// Query feature bit: `rx_buf_len` is honoured (Linux 7.0).
pub const ZCRX_FEATURE_RX_PAGE_SIZE: u32 = 1 << 0;
/// Query feature bit: zcrx events and the shared `zcrx_stats` block (`event_desc` at
/// registration, `ZCRX_CTRL_ARM_EVENT`). Linux 7.2.
pub const ZCRX_FEATURE_EVENT: u32 = 1 << 1;
/// ZCRX control op: make the kernel consume the refill ring now. Linux 6.19.
pub const ZCRX_CTRL_FLUSH_RQ: u32 = 0;
/// ZCRX control op: export the instance as a file descriptor. Linux 6.19.
pub const ZCRX_CTRL_EXPORT: u32 = 1;
/// ZCRX control op: arm a one-shot event CQE ([`ZcrxCtrlArmEvent`]). Linux 7.2.
pub const ZCRX_CTRL_ARM_EVENT: u32 = 2;
/// ZCRX control op: add an area to a registered instance ([`ZcrxCtrlAddArea`]).
/// Linux 7.3.
pub const ZCRX_CTRL_ADD_AREA: u32 = 3;

/// Event type: the instance ran out of buffers (`enum zcrx_event_type`). Linux 7.2.
pub const ZCRX_EVENT_ALLOC_FAIL: u32 = 0;
/// Event type: a fragment was copied instead of received in place. Linux 7.2.
pub const ZCRX_EVENT_COPY: u32 = 1;
/// Event descriptor flag: `stats_offset` names a [`ZcrxStats`] block in the refill
/// region. Linux 7.2.
pub const ZCRX_EVENT_DESC_FLAG_STATS: u32 = 1 << 0;
/// Most areas one instance may have (Linux 7.3); the area id sits in the offset bits
/// from [`IORING_ZCRX_AREA_SHIFT`] up.
pub const ZCRX_MAX_AREAS: u32 = 1024;

/// Query op: opcode counts and flag masks (Linux 6.18).
pub const IO_URING_QUERY_OPCODES: u32 = 0;
/// Query op: ZCRX capabilities (Linux 6.19).
pub const IO_URING_QUERY_ZCRX: u32 = 1;
/// Query op: SQ/CQ ring header size and alignment ([`QueryScq`]). Linux 6.19.
pub const IO_URING_QUERY_SCQ: u32 = 2;
/// Query op: zcrx event types and the stats block's size ([`QueryZcrxEvent`]).
/// Linux 7.2.
pub const IO_URING_QUERY_ZCRX_EVENT: u32 = 3;

/// Largest refill ring the kernel accepts without `IORING_SETUP_CLAMP`.
pub const RQ_MAX_ENTRIES: u32 = 32768;

/// `struct io_uring_zcrx_offsets`: where head, tail and entries sit in the refill region.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ZcrxOffsets {
    /// Byte offset of the kernel-written head (u32).
    pub head: u32,
    /// Byte offset of the user-written tail (u32).
    pub tail: u32,
    /// Byte offset of the refill entry array.
    pub rqes: u32,
    /// Reserved.
    pub resv2: u32,
    /// Reserved.
    pub resv: [u64; 2],
}

/// `struct io_uring_zcrx_ifq_reg`: the argument of `IORING_REGISTER_ZCRX_IFQ`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct ZcrxIfqReg {
    /// Interface index; the exported fd for IMPORT; 0 for NODEV.
    pub if_idx: u32,
    /// Hardware receive queue; 0 for NODEV and IMPORT.
    pub if_rxq: u32,
    /// Requested refill entries; the kernel writes back the power of two it used.
    pub rq_entries: u32,
    /// `ZCRX_REG_*` flags (0 before Linux 6.19).
    pub flags: u32,
    /// Pointer to a [`ZcrxAreaReg`].
    pub area_ptr: u64,
    /// Pointer to a [`RegionDesc`] for the refill ring.
    pub region_ptr: u64,
    /// Written by the kernel.
    pub offsets: ZcrxOffsets,
    /// Written by the kernel: the id to put in `sqe->zcrx_ifq_idx`.
    pub zcrx_id: u32,
    /// Chunk size wanted (Linux 7.0+; 0 = page size); written back on 7.1+.
    pub rx_buf_len: u32,
    /// Pointer to a [`ZcrxEventDesc`], or 0 for no events (Linux 7.2+; reserved and
    /// required to be 0 before).
    pub event_desc: u64,
    /// Reserved, must be 0.
    pub resv: [u64; 2],
}

/// `struct io_uring_zcrx_area_reg`: the memory the NIC writes into.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct ZcrxAreaReg {
    /// User address (page aligned), or offset into a dmabuf.
    pub addr: u64,
    /// Length in bytes (page multiple).
    pub len: u64,
    /// Written by the kernel: area id << 48, to OR into refill entries.
    pub rq_area_token: u64,
    /// `IORING_ZCRX_AREA_*` flags.
    pub flags: u32,
    /// dmabuf fd when `flags` has DMABUF.
    pub dmabuf_fd: u32,
    /// Reserved.
    pub resv2: [u64; 2],
}

/// `struct io_uring_region_desc`: user memory for the refill ring.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct RegionDesc {
    /// User address (page aligned) when `flags` has TYPE_USER.
    pub user_addr: u64,
    /// Size in bytes (page multiple).
    pub size: u64,
    /// `IORING_MEM_REGION_TYPE_*`.
    pub flags: u32,
    /// Must be 0.
    pub id: u32,
    /// Written by the kernel for kernel-allocated regions.
    pub mmap_offset: u64,
    /// Reserved.
    pub resv: [u64; 4],
}

/// `struct io_uring_zcrx_rqe`: one entry of the refill ring.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ZcrxRqe {
    /// Area offset of the returned chunk, OR'd with the area token.
    pub off: u64,
    /// Ignored by the kernel.
    pub len: u32,
    /// Must be 0, or the kernel silently drops the entry.
    pub pad: u32,
}

/// `struct io_uring_zcrx_cqe`: bytes 16..32 of a RECV_ZC completion.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ZcrxCqe {
    /// Area id (high 16 bits) and byte offset into the area.
    pub off: u64,
    /// Reserved.
    pub pad: u64,
}

/// `struct zcrx_ctrl_export`: output of `ZCRX_CTRL_EXPORT`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct ZcrxCtrlExport {
    /// Written by the kernel: the exported instance's fd.
    pub zcrx_fd: u32,
    /// Reserved, must be 0.
    pub resv1: [u32; 11],
}

/// `struct zcrx_ctrl`: the argument of `IORING_REGISTER_ZCRX_CTRL`.
///
/// The kernel's 48-byte union (flush, export, arm-event and add-area arms) is kept as
/// raw bytes, filled and read only through the constructors and accessors below, so no
/// arm is ever read as another.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct ZcrxCtrl {
    /// The instance id in the calling ring.
    pub zcrx_id: u32,
    /// `ZCRX_CTRL_*`.
    pub op: u32,
    /// Reserved, must be 0 (else `EFAULT`).
    pub resv: [u64; 2],
    /// The op's arm of the union, as bytes.
    pub payload: [u64; 6],
}

impl ZcrxCtrl {
    fn new(zcrx_id: u32, op: u32) -> ZcrxCtrl {
        ZcrxCtrl {
            zcrx_id,
            op,
            ..Default::default()
        }
    }

    /// `ZCRX_CTRL_FLUSH_RQ`: its arm is all reserved zeros.
    pub fn flush_rq(zcrx_id: u32) -> ZcrxCtrl {
        ZcrxCtrl::new(zcrx_id, ZCRX_CTRL_FLUSH_RQ)
    }

    /// `ZCRX_CTRL_EXPORT`: the kernel writes the new fd into the arm
    /// ([`exported_fd`](Self::exported_fd)).
    pub fn export(zcrx_id: u32) -> ZcrxCtrl {
        ZcrxCtrl::new(zcrx_id, ZCRX_CTRL_EXPORT)
    }

    /// `ZCRX_CTRL_ARM_EVENT` for `event_type` (`ZCRX_EVENT_*`), as
    /// [`ZcrxCtrlArmEvent`] lays it out.
    pub fn arm_event(zcrx_id: u32, event_type: u32) -> ZcrxCtrl {
        let mut c = ZcrxCtrl::new(zcrx_id, ZCRX_CTRL_ARM_EVENT);
        c.set_u32_at_start(event_type);
        c
    }

    /// `ZCRX_CTRL_ADD_AREA` with a pointer to a [`ZcrxAreaReg`], as [`ZcrxCtrlAddArea`]
    /// lays it out.
    pub fn add_area(zcrx_id: u32, area_ptr: u64) -> ZcrxCtrl {
        let mut c = ZcrxCtrl::new(zcrx_id, ZCRX_CTRL_ADD_AREA);
        c.payload[0] = area_ptr;
        c
    }

    /// The fd an `EXPORT` wrote back (`zcrx_ctrl_export::zcrx_fd`).
    pub fn exported_fd(&self) -> u32 {
        let b = self.payload[0].to_ne_bytes();
        u32::from_ne_bytes([b[0], b[1], b[2], b[3]])
    }

    /// Stores a `u32` in the first four bytes of the arm, where the export and
    /// arm-event arms keep their one field.
    fn set_u32_at_start(&mut self, v: u32) {
        let mut b = self.payload[0].to_ne_bytes();
        b[..4].copy_from_slice(&v.to_ne_bytes());
        self.payload[0] = u64::from_ne_bytes(b);
    }
}

/// `struct zcrx_ctrl_arm_event`: the payload of `ZCRX_CTRL_ARM_EVENT` (Linux 7.2).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct ZcrxCtrlArmEvent {
    /// `ZCRX_EVENT_*`: the event to post once more.
    pub event_type: u32,
    /// Reserved, must be 0.
    pub resv: [u32; 11],
}

/// `struct zcrx_ctrl_add_area`: the payload of `ZCRX_CTRL_ADD_AREA` (Linux 7.3).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct ZcrxCtrlAddArea {
    /// Pointer to a [`ZcrxAreaReg`]; the kernel writes the new area's token into it.
    pub area_ptr: u64,
    /// Reserved, must be 0.
    pub resv: [u64; 5],
}

/// `struct zcrx_stats`: the copy-fallback counters the kernel keeps in user memory
/// (Linux 7.2).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ZcrxStats {
    /// Fragments copied instead of received in place (not completions: one completion
    /// may carry several). The kernel updates both fields without atomics, so they are
    /// approximate under concurrent receives.
    pub copy_count: u64,
    /// Bytes copied (bytes copied from a packet's linear head are not counted).
    pub copy_bytes: u64,
}

/// `struct zcrx_event_desc`: what `io_uring_zcrx_ifq_reg::event_desc` points to
/// (Linux 7.2).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct ZcrxEventDesc {
    /// `user_data` of the event CQEs.
    pub user_data: u64,
    /// Bit `1 << ZCRX_EVENT_*` for each event type wanted.
    pub type_mask: u32,
    /// `ZCRX_EVENT_DESC_FLAG_*`.
    pub flags: u32,
    /// With `ZCRX_EVENT_DESC_FLAG_STATS`: offset of a [`ZcrxStats`] in the refill region.
    pub stats_offset: u64,
    /// Reserved, must be 0.
    pub resv2: [u64; 9],
}

/// `struct io_uring_query_hdr`: one entry of a query chain.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct QueryHdr {
    /// Next header in the chain, or 0.
    pub next_entry: u64,
    /// Pointer to the op's result struct.
    pub query_data: u64,
    /// `IO_URING_QUERY_*`.
    pub query_op: u32,
    /// In: buffer size; out: bytes written.
    pub size: u32,
    /// Out: 0 or a negative errno (`-EOPNOTSUPP` for an unknown op).
    pub result: i32,
    /// Reserved.
    pub resv: [u32; 3],
}

/// `struct io_uring_query_opcode`: answer of `IO_URING_QUERY_OPCODES`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct QueryOpcode {
    /// Number of `IORING_OP_*` opcodes.
    pub nr_request_opcodes: u32,
    /// Number of `IORING_REGISTER_*` opcodes.
    pub nr_register_opcodes: u32,
    /// `IORING_FEAT_*` mask.
    pub feature_flags: u64,
    /// `IORING_SETUP_*` mask.
    pub ring_setup_flags: u64,
    /// `IORING_ENTER_*` mask.
    pub enter_flags: u64,
    /// `IOSQE_*` mask.
    pub sqe_flags: u64,
    /// Number of query opcodes.
    pub nr_query_opcodes: u32,
    /// Padding.
    pub pad: u32,
}

/// `struct io_uring_query_zcrx`: answer of `IO_URING_QUERY_ZCRX`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct QueryZcrx {
    /// Supported `ZCRX_REG_*` flags.
    pub register_flags: u64,
    /// Supported `IORING_ZCRX_AREA_*` flags.
    pub area_flags: u64,
    /// Number of `ZCRX_CTRL_*` ops.
    pub nr_ctrl_opcodes: u32,
    /// `ZCRX_FEATURE_*` bits.
    pub features: u32,
    /// Size of the refill ring header.
    pub rq_hdr_size: u32,
    /// Alignment of the refill entry array.
    pub rq_hdr_alignment: u32,
    /// Reserved.
    pub resv2: u64,
}

/// `struct io_uring_query_scq`: answer of `IO_URING_QUERY_SCQ` (Linux 6.19).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct QueryScq {
    /// Size of the SQ/CQ rings' header.
    pub hdr_size: u64,
    /// Alignment of the header.
    pub hdr_alignment: u64,
}

/// `struct io_uring_query_zcrx_event`: answer of `IO_URING_QUERY_ZCRX_EVENT`
/// (Linux 7.2).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct QueryZcrxEvent {
    /// Bit `1 << ZCRX_EVENT_*` for each supported event type.
    pub event_flags: u32,
    /// Size of [`ZcrxStats`] as the kernel writes it.
    pub stats_size: u32,
    /// Alignment `stats_offset` must have.
    pub stats_off_alignment: u32,
    /// Reserved.
    pub resv1: u32,
    /// Reserved.
    pub resv2: [u64; 4],
}

/// `struct io_uring_params`, used by the probe's raw `io_uring_setup` calls.
///
/// The submission and completion ring offsets are kept opaque: the probe never maps the
/// rings it creates.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct SetupParams {
    /// Submission queue entries (out).
    pub sq_entries: u32,
    /// Completion queue entries (in with CQSIZE, out).
    pub cq_entries: u32,
    /// `IORING_SETUP_*` flags.
    pub flags: u32,
    /// SQPOLL CPU.
    pub sq_thread_cpu: u32,
    /// SQPOLL idle time.
    pub sq_thread_idle: u32,
    /// Out: `IORING_FEAT_*`.
    pub features: u32,
    /// Work queue to attach to.
    pub wq_fd: u32,
    /// Reserved.
    pub resv: [u32; 3],
    /// `struct io_sqring_offsets`.
    pub sq_off: [u32; 10],
    /// `struct io_cqring_offsets`.
    pub cq_off: [u32; 10],
}

#[cfg(test)]
mod tests;
