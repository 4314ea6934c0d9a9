//! Owned libfabric objects, closed in the order `fi_close(3)` requires: endpoints before
//! the queues and address vectors bound to them, registrations and endpoints before their
//! domain, the domain before its fabric.

use super::errors;
use super::info::{Info, Profile, Traits};
use crate::FabricError;
use std::os::fd::{FromRawFd, OwnedFd};
use std::ptr;
use std::sync::Arc;
use zerorx_libfabric_sys as fi;

/// An opened fabric and domain for one provider, with the `fi_info` they came from.
pub(super) struct DomainRes {
    fabric: *mut fi::fid_fabric,
    domain: *mut fi::fid_domain,
    /// The entry endpoints are opened from.
    pub(super) info: Info,
    /// What the entry says.
    pub(super) traits: Traits,
    /// zerorx's policy for the provider.
    pub(super) profile: &'static Profile,
}

impl DomainRes {
    /// `fi_fabric` + `fi_domain` over `info`.
    pub(super) fn open(profile: &'static Profile, info: Info) -> Result<DomainRes, FabricError> {
        let traits = Traits::of(&info);
        let mut res = DomainRes {
            fabric: ptr::null_mut(),
            domain: ptr::null_mut(),
            info,
            traits,
            profile,
        };
        let i = res.info.as_mut_ptr();
        // SAFETY: i is a valid entry from fi_getinfo; the out pointers are fields of res,
        // whose Drop closes whatever was opened if the second call fails.
        unsafe {
            errors::check(
                profile.prov,
                "fi_fabric",
                fi::fi_fabric((*i).fabric_attr, &mut res.fabric, ptr::null_mut()),
            )?;
            errors::check(
                profile.prov,
                "fi_domain",
                fi::fi_domain(res.fabric, i, &mut res.domain, ptr::null_mut()),
            )?;
        }
        Ok(res)
    }

    /// The domain, for calls that open objects in it.
    pub(super) fn domain(&self) -> *mut fi::fid_domain {
        self.domain
    }

    /// The fabric, for `fi_trywait`.
    pub(super) fn fabric(&self) -> *mut fi::fid_fabric {
        self.fabric
    }

    /// libfabric's provider name.
    pub(super) fn prov(&self) -> &'static str {
        self.profile.prov
    }
}

// SAFETY: the fabric and domain are opened with FI_THREAD_SAFE (the hints ask for it), so
// libfabric serialises their use; the fi_info is only read after opening. Sharing lets a
// parked shm endpoint be closed from whichever thread lets go of it last.
unsafe impl Send for DomainRes {}
// SAFETY: as above.
unsafe impl Sync for DomainRes {}

impl Drop for DomainRes {
    fn drop(&mut self) {
        // SAFETY: both were opened by DomainRes::open (or are null) and every registration
        // and endpoint holds an Rc of this value, so none is still open.
        unsafe {
            if !self.domain.is_null() {
                fi::fi_close(&mut (*self.domain).fid);
            }
            if !self.fabric.is_null() {
                fi::fi_close(&mut (*self.fabric).fid);
            }
        }
    }
}

/// One memory registration.
pub(super) struct MrRes {
    mr: *mut fi::fid_mr,
    _domain: Arc<DomainRes>,
}

impl MrRes {
    /// `fi_mr_reg` of `len` bytes at `addr` with `access`, asking for `key` (ignored by
    /// providers that pick keys).
    ///
    /// # Safety
    /// `[addr, addr + len)` must stay allocated until the returned value is dropped.
    pub(super) unsafe fn register(
        domain: &Arc<DomainRes>,
        addr: *const u8,
        len: usize,
        access: u64,
        key: u64,
    ) -> Result<MrRes, i32> {
        let mut mr = ptr::null_mut();
        // SAFETY: the caller keeps the memory registered here alive for the MR's life;
        // the domain is open.
        let rc = unsafe {
            fi::fi_mr_reg(
                domain.domain(),
                addr.cast(),
                len,
                access,
                0,
                key,
                0,
                &mut mr,
                ptr::null_mut(),
            )
        };
        if rc != 0 {
            return Err(rc);
        }
        Ok(MrRes {
            mr,
            _domain: domain.clone(),
        })
    }

    /// The local descriptor to pass when posting from or into the memory.
    pub(super) fn desc(&self) -> *mut std::ffi::c_void {
        // SAFETY: the MR is open.
        unsafe { fi::fi_mr_desc(self.mr) }
    }

    /// The key peers use.
    pub(super) fn key(&self) -> u64 {
        // SAFETY: the MR is open.
        unsafe { fi::fi_mr_key(self.mr) }
    }
}

// SAFETY: an FI_THREAD_SAFE domain's registrations may be closed from any thread.
unsafe impl Send for MrRes {}

impl Drop for MrRes {
    fn drop(&mut self) {
        // SAFETY: opened by register, closed once; the domain is held open by _domain.
        unsafe { fi::fi_close(&mut (*self.mr).fid) };
    }
}

/// One RDM endpoint with its own completion queue and address vector.
pub(super) struct EpRes {
    ep: *mut fi::fid_ep,
    cq: *mut fi::fid_cq,
    av: *mut fi::fid_av,
    /// A duplicate of the CQ's wait fd, when the provider has one.
    pub(super) wait_fd: Option<Arc<OwnedFd>>,
    domain: Arc<DomainRes>,
}

impl EpRes {
    /// Opens the AV, the CQ (with an fd wait object when the provider supports one) and
    /// the endpoint from `info`, binds and enables it.
    pub(super) fn open(
        domain: &Arc<DomainRes>,
        info: &Info,
        cq_size: usize,
    ) -> Result<EpRes, FabricError> {
        let prov = domain.prov();
        let mut res = EpRes {
            ep: ptr::null_mut(),
            cq: ptr::null_mut(),
            av: ptr::null_mut(),
            wait_fd: None,
            domain: domain.clone(),
        };
        let mut av_attr = fi::fi_av_attr {
            type_: fi::FI_AV_TABLE,
            ..Default::default()
        };
        // SAFETY: the domain is open; out pointers are fields of res, whose Drop closes
        // whatever was opened when a later step fails.
        unsafe {
            errors::check(
                prov,
                "fi_av_open",
                fi::fi_av_open(domain.domain(), &mut av_attr, &mut res.av, ptr::null_mut()),
            )?;
        }
        res.open_cq(cq_size)?;
        // SAFETY: as above; info is a valid entry; the AV and CQ are open.
        unsafe {
            errors::check(
                prov,
                "fi_endpoint",
                fi::fi_endpoint(
                    domain.domain(),
                    info.as_mut_ptr(),
                    &mut res.ep,
                    ptr::null_mut(),
                ),
            )?;
            errors::check(
                prov,
                "fi_ep_bind(av)",
                fi::fi_ep_bind(res.ep, &mut (*res.av).fid, 0),
            )?;
            errors::check(
                prov,
                "fi_ep_bind(cq)",
                fi::fi_ep_bind(res.ep, &mut (*res.cq).fid, fi::FI_TRANSMIT | fi::FI_RECV),
            )?;
            errors::check(prov, "fi_enable", fi::fi_enable(res.ep))?;
        }
        Ok(res)
    }

    /// A tagged-format CQ; `FI_WAIT_FD` first, `FI_WAIT_NONE` when the provider has no fd
    /// wait object (shm answers `FI_ENOSYS`).
    fn open_cq(&mut self, size: usize) -> Result<(), FabricError> {
        let prov = self.domain.prov();
        for wait in [fi::FI_WAIT_FD, fi::FI_WAIT_NONE] {
            let mut attr = fi::fi_cq_attr {
                size,
                format: fi::FI_CQ_FORMAT_TAGGED,
                wait_obj: wait,
                ..Default::default()
            };
            // SAFETY: the domain is open; attr and the out pointer are valid.
            let rc = unsafe {
                fi::fi_cq_open(
                    self.domain.domain(),
                    &mut attr,
                    &mut self.cq,
                    ptr::null_mut(),
                )
            };
            if rc != 0 {
                self.cq = ptr::null_mut();
                if wait == fi::FI_WAIT_FD {
                    continue;
                }
                return Err(errors::call_failed(prov, "fi_cq_open", i64::from(rc)));
            }
            if wait == fi::FI_WAIT_FD {
                self.wait_fd = self.dup_wait_fd()?;
            }
            return Ok(());
        }
        Err(errors::call_failed(
            prov,
            "fi_cq_open",
            -i64::from(fi::FI_ENOSYS),
        ))
    }

    /// The CQ's wait fd (`fi_control(FI_GETWAIT)`), duplicated so a poll in the io_uring
    /// ring can never name a closed or reused descriptor.
    fn dup_wait_fd(&self) -> Result<Option<Arc<OwnedFd>>, FabricError> {
        let mut fd: i32 = -1;
        // SAFETY: the CQ is open and was created with FI_WAIT_FD; the argument of
        // FI_GETWAIT for an fd wait object is an int out-pointer.
        let rc = unsafe {
            fi::fi_control(
                &mut (*self.cq).fid,
                fi::FI_GETWAIT as i32,
                (&mut fd as *mut i32).cast(),
            )
        };
        if rc != 0 || fd < 0 {
            return Ok(None);
        }
        // SAFETY: fd is an open descriptor owned by libfabric; dup makes one we own.
        let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
        if dup < 0 {
            return Err(FabricError::io(
                "fcntl(F_DUPFD_CLOEXEC)",
                &std::io::Error::last_os_error(),
            ));
        }
        // SAFETY: dup is a fresh descriptor nobody else owns.
        Ok(Some(Arc::new(unsafe { OwnedFd::from_raw_fd(dup) })))
    }

    /// The endpoint.
    pub(super) fn ep(&self) -> *mut fi::fid_ep {
        self.ep
    }

    /// The completion queue.
    pub(super) fn cq(&self) -> *mut fi::fid_cq {
        self.cq
    }

    /// The address vector.
    pub(super) fn av(&self) -> *mut fi::fid_av {
        self.av
    }

    /// Removes peers from the address vector (failures ignored: the endpoint is being
    /// let go).
    pub(super) fn av_remove(&self, addrs: impl Iterator<Item = fi::fi_addr_t>) {
        for mut a in addrs {
            // SAFETY: the AV is open; removing an index it does not hold is an error
            // libfabric reports, not undefined behaviour.
            unsafe { fi::fi_av_remove(self.av, &mut a, 1, 0) };
        }
    }

    /// `fi_cancel` of each posted operation named by its context.
    pub(super) fn cancel(&self, contexts: impl Iterator<Item = *mut std::ffi::c_void>) {
        for ctx in contexts {
            // SAFETY: the endpoint is open; the context names one of its posted operations.
            unsafe { fi::fi_cancel(&mut (*self.ep).fid, ctx) };
        }
    }

    /// Reads every completion available (successes and errors alike) and returns their
    /// op contexts; used once the endpoint no longer reports to anyone.
    pub(super) fn drain_contexts(&self) -> Vec<*mut std::ffi::c_void> {
        let mut out = Vec::new();
        let mut entry = fi::fi_cq_tagged_entry::default();
        loop {
            // SAFETY: the CQ is open; entry has room for one tagged-format entry.
            let n = unsafe {
                fi::fi_cq_read(
                    self.cq,
                    (&mut entry as *mut fi::fi_cq_tagged_entry).cast(),
                    1,
                )
            };
            if n == 1 {
                out.push(entry.op_context);
            } else if n == -(fi::FI_EAVAIL as isize) {
                let mut err = fi::fi_cq_err_entry::default();
                // SAFETY: an error entry is queued; err is a valid out struct.
                if unsafe { fi::fi_cq_readerr(self.cq, &mut err, 0) } != 1 {
                    return out;
                }
                out.push(err.op_context);
            } else {
                return out;
            }
        }
    }

    /// The endpoint's own address (`fi_getname`).
    pub(super) fn name(&self) -> Result<Vec<u8>, FabricError> {
        let mut buf = vec![0u8; 256];
        let mut len = buf.len();
        // SAFETY: the endpoint is open; buf has len bytes.
        let rc = unsafe { fi::fi_getname(&mut (*self.ep).fid, buf.as_mut_ptr().cast(), &mut len) };
        errors::check(self.domain.prov(), "fi_getname", rc)?;
        buf.truncate(len.min(256));
        Ok(buf)
    }

    /// Whether sleeping on the wait fd now cannot miss a completion (`fi_trywait`).
    pub(super) fn try_wait(&self) -> bool {
        // SAFETY: fabric and CQ are open; the array holds one valid fid pointer.
        let rc = unsafe {
            let mut fids = [&mut (*self.cq).fid as *mut fi::fid];
            fi::fi_trywait(self.domain.fabric(), fids.as_mut_ptr(), 1)
        };
        rc == 0
    }
}

// SAFETY: the endpoint, CQ and AV belong to an FI_THREAD_SAFE domain, so they may be
// used and closed from another thread; only one owner holds them at a time.
unsafe impl Send for EpRes {}

impl Drop for EpRes {
    fn drop(&mut self) {
        // SAFETY: each object was opened by EpRes::open (or is null) and is closed once:
        // the endpoint first, then the CQ and AV it was bound to.
        unsafe {
            if !self.ep.is_null() {
                fi::fi_close(&mut (*self.ep).fid);
            }
            if !self.cq.is_null() {
                fi::fi_close(&mut (*self.cq).fid);
            }
            if !self.av.is_null() {
                fi::fi_close(&mut (*self.av).fid);
            }
        }
    }
}
