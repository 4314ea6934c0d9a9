//! What the running kernel offers for ZCRX, as the pools need it.
//!
//! The probe fills this from `IO_URING_QUERY_ZCRX` when the kernel has it and from the
//! 6.15–6.18 fallback rules otherwise; the pools take it as configuration so that their
//! logic can be tested against any kernel generation.

use serde::Serialize;

/// ZCRX capabilities of the running kernel.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ZcrxFeatures {
    /// `IORING_OP_RECV_ZC` is a supported opcode (Linux 6.15+).
    pub recv_zc: bool,
    /// `IO_URING_QUERY_ZCRX` answered (Linux 6.19+); the fields below then come from it.
    pub query: bool,
    /// Raw `register_flags` from the query (0 without it).
    pub register_flags: u64,
    /// Raw `area_flags` from the query (0 without it).
    pub area_flags: u64,
    /// Number of `ZCRX_CTRL_*` ops (0 without `IORING_REGISTER_ZCRX_CTRL`).
    pub nr_ctrl_opcodes: u32,
    /// Raw `features` from the query.
    pub features: u32,
    /// Size of the refill ring header the kernel expects (8 when unknown).
    pub rq_hdr_size: u32,
    /// Alignment of the refill entry array (64 when unknown).
    pub rq_hdr_alignment: u32,
    /// `ZCRX_REG_IMPORT`: an instance can be shared with another ring (6.19+).
    pub import: bool,
    /// `ZCRX_REG_NODEV`: device-less, copy-only instances (7.1+).
    pub nodev: bool,
    /// dmabuf areas (6.16+).
    pub dmabuf: bool,
    /// `ZCRX_CTRL_FLUSH_RQ` (6.19+).
    pub flush_rq: bool,
    /// `ZCRX_CTRL_EXPORT` (6.19+).
    pub export: bool,
    /// `rx_buf_len` larger than a page (7.0+).
    pub rx_page_size: bool,
    /// zcrx events and the shared copy statistics (`ZCRX_FEATURE_EVENT` with
    /// `ZCRX_CTRL_ARM_EVENT`, 7.2+).
    pub events: bool,
    /// Areas added to a registered instance (`ZCRX_CTRL_ADD_AREA`, 7.3+).
    pub add_area: bool,
    /// More than one instance per ring (6.16+); 6.15 answers a second one with `EBUSY`.
    pub multiple_per_ring: bool,
}
