//! Memory layout and registration of a ZCRX instance.

use crate::abi::{self, RegionDesc, ZcrxAreaReg, ZcrxIfqReg};
use crate::error::PoolError;
use crate::features::ZcrxFeatures;
use crate::mem::{Backing, Mapping};
use crate::sys;
use std::io;
use std::os::fd::RawFd;

/// The memory of a registered instance and the kernel's answer.
#[derive(Debug)]
pub(crate) struct Registered {
    pub(crate) area: Mapping,
    pub(crate) region: Mapping,
    pub(crate) answer: Answer,
}

/// What the kernel wrote back on a successful registration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Answer {
    pub(crate) offsets: abi::ZcrxOffsets,
    pub(crate) rq_entries: u32,
    pub(crate) zcrx_id: u32,
    pub(crate) token: u64,
    pub(crate) chunk_size: u32,
    /// Where the kernel keeps the instance's `zcrx_stats` in the region, when the
    /// registration asked for events.
    pub(crate) stats_offset: Option<usize>,
    /// `user_data` of the event CQEs, when registered with events.
    pub(crate) events: Option<u64>,
}

/// The request, after validation against the kernel's features.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    pub(crate) if_idx: u32,
    pub(crate) if_rxq: u32,
    pub(crate) flags: u32,
    pub(crate) area_bytes: usize,
    pub(crate) chunk_size: u32,
    pub(crate) rq_entries: u32,
    pub(crate) backing: Backing,
    /// `user_data` of event CQEs, when the kernel has events and they were asked for.
    pub(crate) events: Option<u64>,
}

/// Alignment of the stats block: a cache line, which covers the 8 bytes the 7.2/7.3
/// kernels require (`IO_URING_QUERY_ZCRX_EVENT`'s `stats_off_alignment`).
const STATS_ALIGN: usize = 64;

impl Layout {
    /// Bytes of refill-ring header: a whole page (safe against the pending header
    /// growth), more if the kernel asks for a larger aligned header.
    pub(crate) fn rq_header_bytes(features: &ZcrxFeatures) -> usize {
        let page = sys::page_size();
        let align = features.rq_hdr_alignment.max(1) as usize;
        let hdr = (features.rq_hdr_size as usize).next_multiple_of(align);
        hdr.max(page).next_multiple_of(page)
    }

    /// End of the refill entries the region must hold.
    fn rqes_end(&self, features: &ZcrxFeatures) -> usize {
        Self::rq_header_bytes(features)
            + self.rq_entries as usize * std::mem::size_of::<abi::ZcrxRqe>()
    }

    /// Where the kernel's stats block goes: right after the refill entries, where the
    /// kernel requires it (before them is `ERANGE`), when events are asked for.
    pub(crate) fn stats_offset(&self, features: &ZcrxFeatures) -> Option<usize> {
        self.events
            .map(|_| self.rqes_end(features).next_multiple_of(STATS_ALIGN))
    }

    pub(crate) fn region_bytes(&self, features: &ZcrxFeatures) -> usize {
        let page = sys::page_size();
        let end = match self.stats_offset(features) {
            Some(off) => off + std::mem::size_of::<abi::ZcrxStats>(),
            None => self.rqes_end(features),
        };
        end.next_multiple_of(page)
    }
}

/// Maps the area and refill region and registers them. Retries once with page-sized
/// chunks when the kernel or driver refuses a larger `rx_buf_len`.
///
/// # Safety
/// The returned mappings must outlive the ring `ring_fd` and every import of the
/// instance.
pub(crate) unsafe fn register(
    ring_fd: RawFd,
    features: &ZcrxFeatures,
    layout: &Layout,
) -> Result<Registered, PoolError> {
    let page = sys::page_size() as u32;
    let area = Mapping::new(layout.area_bytes, layout.backing).map_err(PoolError::Memory)?;
    let region = Mapping::new(layout.region_bytes(features), Backing::Anonymous)
        .map_err(PoolError::Memory)?;
    let stats_offset = layout.stats_offset(features);
    // SAFETY: forwarded from the caller's contract.
    match unsafe { try_register(ring_fd, layout, stats_offset, &area, &region) } {
        Ok(answer) => Ok(Registered {
            area,
            region,
            answer,
        }),
        Err(e)
            if layout.chunk_size > page
                && matches!(
                    e.raw_os_error(),
                    Some(libc::EINVAL | libc::ERANGE | libc::EOPNOTSUPP)
                ) =>
        {
            tracing::info!(
                chunk = layout.chunk_size,
                error = %e,
                "large ZCRX chunks refused; falling back to page-sized chunks"
            );
            let small = Layout {
                chunk_size: page,
                ..layout.clone()
            };
            // SAFETY: as above.
            unsafe { try_register(ring_fd, &small, stats_offset, &area, &region) }
                .map(|answer| Registered {
                    area,
                    region,
                    answer,
                })
                .map_err(|e| kernel_error(e, layout))
        }
        Err(e) => Err(kernel_error(e, layout)),
    }
}

/// One registration attempt.
///
/// # Safety
/// As [`register`].
unsafe fn try_register(
    ring_fd: RawFd,
    layout: &Layout,
    stats_offset: Option<usize>,
    area: &Mapping,
    region: &Mapping,
) -> io::Result<Answer> {
    let page = sys::page_size() as u32;
    // The kernel does not zero user-provided refill memory on older versions; a stale
    // head or tail would make it consume garbage entries.
    // SAFETY: the region is a live, owned, writable mapping of `len` bytes.
    unsafe { std::ptr::write_bytes(region.as_ptr(), 0, region.len()) };
    let mut area_reg = ZcrxAreaReg {
        addr: area.as_ptr() as u64,
        len: area.len() as u64,
        ..Default::default()
    };
    let mut region_desc = RegionDesc {
        user_addr: region.as_ptr() as u64,
        size: region.len() as u64,
        flags: abi::IORING_MEM_REGION_TYPE_USER,
        ..Default::default()
    };
    let mut event_desc = abi::ZcrxEventDesc::default();
    if let (Some(user_data), Some(offset)) = (layout.events, stats_offset) {
        event_desc = abi::ZcrxEventDesc {
            user_data,
            type_mask: (1 << abi::ZCRX_EVENT_ALLOC_FAIL) | (1 << abi::ZCRX_EVENT_COPY),
            flags: abi::ZCRX_EVENT_DESC_FLAG_STATS,
            stats_offset: offset as u64,
            ..Default::default()
        };
    }
    let mut reg = ZcrxIfqReg {
        if_idx: layout.if_idx,
        if_rxq: layout.if_rxq,
        rq_entries: layout.rq_entries,
        flags: layout.flags,
        area_ptr: &mut area_reg as *mut ZcrxAreaReg as u64,
        region_ptr: &mut region_desc as *mut RegionDesc as u64,
        rx_buf_len: if layout.chunk_size > page {
            layout.chunk_size
        } else {
            0
        },
        // Nonzero only on kernels with events: before 7.2 the word is reserved.
        event_desc: match layout.events {
            Some(_) => &mut event_desc as *mut abi::ZcrxEventDesc as u64,
            None => 0,
        },
        ..Default::default()
    };
    // SAFETY: the structs are writable and live across the call; the area and region
    // outlive the ring by the caller's contract.
    unsafe { sys::register_zcrx_ifq(ring_fd, &mut reg)? };
    let rqes_end =
        reg.offsets.rqes as usize + reg.rq_entries as usize * std::mem::size_of::<abi::ZcrxRqe>();
    let stats_end = stats_offset.map_or(rqes_end, |s| s + std::mem::size_of::<abi::ZcrxStats>());
    if !reg.rq_entries.is_power_of_two()
        || rqes_end > region.len()
        || !reg.offsets.rqes.is_multiple_of(16)
        || stats_offset.is_some_and(|s| s < rqes_end)
        || stats_end > region.len()
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "kernel returned a refill layout that does not fit the region: {} entries at offset {} in {} bytes",
                reg.rq_entries,
                reg.offsets.rqes,
                region.len()
            ),
        ));
    }
    let chunk_size = match reg.rx_buf_len {
        0 => page,
        n => n,
    };
    Ok(Answer {
        offsets: reg.offsets,
        rq_entries: reg.rq_entries,
        zcrx_id: reg.zcrx_id,
        token: area_reg.rq_area_token,
        chunk_size,
        stats_offset: layout.events.and(stats_offset),
        events: layout.events.filter(|_| stats_offset.is_some()),
    })
}

fn kernel_error(source: io::Error, layout: &Layout) -> PoolError {
    let hint = match source.raw_os_error() {
        Some(libc::EOPNOTSUPP) => "this interface cannot bind a ZCRX queue (loopback/veth have no \
            parent device; drivers such as virtio_net lack queue management); `zerorx doctor` \
            names the reason"
            .to_string(),
        Some(libc::ERANGE) => format!("queue {} does not exist on this interface", layout.if_rxq),
        Some(libc::EEXIST) => {
            "an XDP program is attached, the queue is already bound, or the call \
            came from a thread other than the ring's submitter"
                .to_string()
        }
        Some(libc::EBUSY) => "the queue is used by AF_XDP or leased to another device".to_string(),
        Some(libc::EINVAL) => "the ring lacks DEFER_TASKRUN/CQE32, or header split is off \
            (`ethtool -G IF tcp-data-split on hds-thresh 0`)"
            .to_string(),
        Some(libc::ENODEV) => format!("no interface with index {}", layout.if_idx),
        _ => crate::error::registration_hint(&source),
    };
    PoolError::Kernel {
        op: "registering the ZCRX interface queue",
        source,
        hint,
    }
}
