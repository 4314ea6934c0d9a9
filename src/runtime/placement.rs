//! Which worker an accepted connection belongs on when workers own different NIC
//! queues: the one whose zero-copy instance is bound to the queue the connection's
//! packets arrive on.
//!
//! A socket reports the NAPI instance that last delivered to it
//! (`SO_INCOMING_NAPI_ID`); the kernel's netdev family lists each queue's NAPI id. At
//! start-up the runtime maps the NAPI id of every queue it bound to the worker owning
//! it; a connection whose NAPI id is in the map is served there, and anything else
//! (copy mode, device-less, loopback, a kernel or driver without NAPI ids) where it was
//! accepted.

use super::receive_mode::{ReceiveModeReport, ZeroCopyTarget};
use super::receive_plan::ReceiveRole;
use std::collections::HashMap;
use std::os::fd::AsRawFd;
use zcrx::steering::netdev::{self, RxQueue};

/// NAPI id → the worker owning that queue's zero-copy instance.
#[derive(Debug, Default)]
pub(crate) struct Placement {
    by_napi: HashMap<u32, usize>,
}

impl Placement {
    /// The placement for a runtime that resolved to `report`: empty unless it binds
    /// device queues and the kernel names their NAPI instances.
    pub(crate) fn for_report(report: &ReceiveModeReport) -> Placement {
        let Some(ZeroCopyTarget::Device {
            interface,
            ifindex,
            queues,
        }) = &report.target
        else {
            return Placement::default();
        };
        match netdev::rx_queues(*ifindex) {
            Ok(rx) => Placement::from_parts(&report.roles, queues, &rx),
            Err(e) => {
                tracing::info!(
                    interface,
                    error = %e,
                    "the queues' NAPI ids are unknown: connections are served where they are accepted"
                );
                Placement::default()
            }
        }
    }

    /// The map from the workers' roles, the bound queues (by instance) and the
    /// device's receive queues with their NAPI ids.
    fn from_parts(roles: &[ReceiveRole], queues: &[u32], rx: &[RxQueue]) -> Placement {
        let by_napi = roles
            .iter()
            .enumerate()
            .filter_map(|(worker, role)| match role {
                ReceiveRole::Owner { instance } => {
                    let queue = *queues.get(*instance)?;
                    let napi = rx.iter().find(|q| q.id == queue)?.napi_id?;
                    Some((napi, worker))
                }
                _ => None,
            })
            .collect();
        Placement { by_napi }
    }

    /// The worker for a connection on `socket`, when the map knows its NAPI instance.
    pub(crate) fn worker_for(&self, socket: &impl AsRawFd) -> Option<usize> {
        if self.by_napi.is_empty() {
            return None;
        }
        let napi = incoming_napi_id(socket)?;
        self.by_napi.get(&napi).copied()
    }
}

/// `SO_INCOMING_NAPI_ID` of `socket`: `None` when the kernel has none for it (0, or
/// the option unsupported).
pub(crate) fn incoming_napi_id(socket: &impl AsRawFd) -> Option<u32> {
    let mut id: u32 = 0;
    let mut len = std::mem::size_of::<u32>() as libc::socklen_t;
    // SAFETY: `id` and `len` are valid out-pointers for a u32 option.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_INCOMING_NAPI_ID,
            (&mut id as *mut u32).cast(),
            &mut len,
        )
    };
    (rc == 0 && id != 0).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rx(id: u32, napi: Option<u32>) -> RxQueue {
        RxQueue {
            id,
            napi_id: napi,
            io_uring: true,
        }
    }

    #[test]
    fn each_owned_queue_maps_its_napi_id_to_its_owner() {
        // Workers 0 and 1 own queues 6 and 7; worker 2 imports worker 0's instance.
        let roles = [
            ReceiveRole::Owner { instance: 0 },
            ReceiveRole::Owner { instance: 1 },
            ReceiveRole::Import { owner: 0 },
        ];
        let queues = [6, 7];
        let device = [rx(5, Some(8197)), rx(6, Some(8198)), rx(7, Some(8199))];
        let p = Placement::from_parts(&roles, &queues, &device);
        assert_eq!(p.by_napi.get(&8198), Some(&0));
        assert_eq!(p.by_napi.get(&8199), Some(&1));
        assert_eq!(p.by_napi.len(), 2, "queue 5 is nobody's: {p:?}");
        // A queue without a NAPI id cannot be told apart: it is left out.
        let p = Placement::from_parts(&roles, &queues, &[rx(6, None), rx(7, Some(9))]);
        assert_eq!(p.by_napi, HashMap::from([(9, 1)]));
    }

    #[test]
    fn loopback_connections_have_no_napi_id_and_no_worker() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let c = std::net::TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        let (s, _) = l.accept().expect("accept");
        assert_eq!(incoming_napi_id(&s), None);
        let p = Placement {
            by_napi: HashMap::from([(8193, 1)]),
        };
        assert_eq!(p.worker_for(&s), None);
        drop(c);
    }
}
