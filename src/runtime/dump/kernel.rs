//! The kernel's side of the dump, read from `/proc/self`: each ring's `fdinfo`, the
//! process's fds and memory, and the addresses of the sockets ops work on.

use super::{
    FdinfoField, FdinfoValue, NicNote, NicQueueDump, PagePoolDump, ProcessState, SocketAddrs,
};
use crate::runtime::ZeroCopyTarget;
use std::os::fd::{BorrowedFd, RawFd};

/// `fdinfo` keys that describe the file, not the ring.
const FILE_KEYS: [&str; 4] = ["pos", "flags", "mnt_id", "ino"];

/// The ring's `/proc/self/fdinfo/FD` in the kernel's order: scalar fields as numbers
/// where they are, and each list (`PollList`, `CqOverflowList`, the registered files
/// and buffers) as its number of entries. Empty when unreadable.
pub(crate) fn ring_fdinfo(fd: RawFd) -> Vec<FdinfoField> {
    match std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")) {
        Ok(text) => parse_fdinfo(&text),
        Err(_) => Vec::new(),
    }
}

fn parse_fdinfo(text: &str) -> Vec<FdinfoField> {
    let mut out: Vec<FdinfoField> = Vec::new();
    // Whether the last field is a list whose entries (indented lines) are counted.
    let mut in_list = false;
    for line in text.lines() {
        if line.starts_with(char::is_whitespace) {
            if let (
                true,
                Some(FdinfoField {
                    value: FdinfoValue::Entries(n),
                    ..
                }),
            ) = (in_list, out.last_mut())
            {
                *n += 1;
            }
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        in_list = false;
        if FILE_KEYS.contains(&key) {
            continue;
        }
        let value = if value.is_empty() {
            in_list = true;
            FdinfoValue::Entries(0)
        } else {
            FdinfoValue::parse(value)
        };
        out.push(FdinfoField {
            key: key.into(),
            value,
        });
    }
    out
}

/// The addresses of socket `fd` (no peer for a listener or unconnected socket);
/// `None` for a non-socket.
pub(crate) fn socket_addrs(fd: RawFd) -> Option<SocketAddrs> {
    // SAFETY: `fd` is named by an op in flight on this worker's ring, and the op keeps
    // it open until its final completion (the `OpCode` contract); the borrow ends
    // within this call, on the worker thread that owns the op.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    let sock = socket2::SockRef::from(&fd);
    let local = sock.local_addr().ok()?.as_socket()?;
    let peer = sock.peer_addr().ok().and_then(|a| a.as_socket());
    Some(SocketAddrs::new(local, peer))
}

/// The kernel's view of the NIC queues `target` binds (netdev netlink), or why there
/// is none to show.
pub(crate) fn nic_queues(target: Option<&ZeroCopyTarget>) -> (Vec<NicQueueDump>, Option<NicNote>) {
    let (interface, ifindex, queues) = match target {
        None => return (Vec::new(), Some(NicNote::CopyMode)),
        Some(ZeroCopyTarget::DeviceLess { instances }) => {
            return (
                Vec::new(),
                Some(NicNote::DeviceLess {
                    instances: *instances,
                }),
            )
        }
        Some(ZeroCopyTarget::Device {
            interface,
            ifindex,
            queues,
        }) => (interface, *ifindex, queues),
    };
    let listed = zcrx::steering::netdev::rx_queues(ifindex);
    let pools = zcrx::steering::netdev::page_pools(ifindex);
    let out = queues
        .iter()
        .map(|&queue| {
            let mut q = NicQueueDump {
                interface: interface.clone(),
                queue,
                ..NicQueueDump::default()
            };
            match &listed {
                Ok(all) => match all.iter().find(|r| r.id == queue) {
                    Some(r) => {
                        q.napi_id = r.napi_id;
                        q.io_uring_bound = r.io_uring;
                    }
                    None => q.error = Some("the kernel lists no such receive queue".into()),
                },
                Err(e) => q.error = Some(format!("netdev queue-get: {e}")),
            }
            match &pools {
                Ok(pools) => {
                    q.page_pools = pools
                        .iter()
                        .filter(|p| q.napi_id.is_some() && p.napi_id == q.napi_id)
                        .map(|p| PagePoolDump {
                            id: p.id,
                            inflight: p.inflight,
                            inflight_bytes: p.inflight_mem,
                            io_uring: p.io_uring,
                            detached: p.detached,
                        })
                        .collect()
                }
                Err(e) => {
                    let e = format!("netdev page-pool-get: {e}");
                    q.error = Some(q.error.map_or(e.clone(), |prev| format!("{prev}; {e}")));
                }
            }
            q
        })
        .collect();
    (out, None)
}

/// Open fds, sockets and RSS of this process.
pub(crate) fn process_state() -> ProcessState {
    let mut state = ProcessState::default();
    if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
        for entry in dir.flatten() {
            state.open_fds += 1;
            if std::fs::read_link(entry.path())
                .is_ok_and(|target| target.to_string_lossy().starts_with("socket:"))
            {
                state.sockets += 1;
            }
        }
        // The directory's own fd, open while it was read.
        state.open_fds = state.open_fds.saturating_sub(1);
    }
    state.rss_bytes = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        // SAFETY: sysconf has no memory effects.
        .map(|pages| pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64);
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fdinfo_keeps_scalars_and_counts_list_entries() {
        let text = "pos:\t0\nflags:\t02000002\nmnt_id:\t17\nino:\t37022\nSqMask:\t0x7\n\
                    SqHead:\t5\nCqTail:\t9\nUserBufs:\t0\nPollList:\n  op=1, task_works=0\n\
                    CqOverflowList:\n  user_data=1, res=0\n  user_data=2, res=0\nNAPI:\tdisabled\n";
        let got = parse_fdinfo(text);
        let field = |key: &str, value| FdinfoField {
            key: key.into(),
            value,
        };
        let want = vec![
            field("SqMask", FdinfoValue::Hex(7)),
            field("SqHead", FdinfoValue::Number(5)),
            field("CqTail", FdinfoValue::Number(9)),
            field("UserBufs", FdinfoValue::Number(0)),
            field("PollList", FdinfoValue::Entries(1)),
            field("CqOverflowList", FdinfoValue::Entries(2)),
            field("NAPI", FdinfoValue::Text("disabled".into())),
        ];
        assert_eq!(got, want);
        let text: Vec<String> = got.iter().map(ToString::to_string).collect();
        assert_eq!(
            text.join(", "),
            "SqMask 0x7, SqHead 5, CqTail 9, UserBufs 0, PollList entries 1, \
             CqOverflowList entries 2, NAPI disabled"
        );
    }

    #[test]
    fn nic_queues_say_why_there_are_none_or_what_the_kernel_would_not_say() {
        assert_eq!(nic_queues(None), (Vec::new(), Some(NicNote::CopyMode)));
        let (q, note) = nic_queues(Some(&ZeroCopyTarget::DeviceLess { instances: 2 }));
        assert_eq!(q, Vec::new());
        assert_eq!(note, Some(NicNote::DeviceLess { instances: 2 }));
        // Loopback's queue 0 has no provider and no page pool (an older kernel
        // without the netdev family fails the query, which the entry says in words
        // instead of failing the dump).
        let (q, note) = nic_queues(Some(&ZeroCopyTarget::Device {
            interface: "lo".into(),
            ifindex: 1,
            queues: vec![0],
        }));
        assert_eq!(note, None);
        assert_eq!(q.len(), 1);
        assert_eq!((q[0].interface.as_str(), q[0].queue), ("lo", 0));
        assert!(!q[0].io_uring_bound);
        assert_eq!(q[0].page_pools, Vec::new());
        if let Some(error) = q[0].error.as_deref() {
            assert!(error.starts_with("netdev "), "{error}");
        }
        // A queue the device does not have is named as such.
        let (q, _) = nic_queues(Some(&ZeroCopyTarget::Device {
            interface: "lo".into(),
            ifindex: 1,
            queues: vec![4096],
        }));
        let error = q[0].error.as_deref().expect("an error in words");
        assert!(
            error.contains("lists no such receive queue") || error.starts_with("netdev "),
            "{error}"
        );
    }

    #[test]
    fn process_state_sees_a_socket_and_addresses_name_it() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        // Other tests open and close sockets meanwhile: only a lower bound is exact.
        let after = process_state();
        assert!(after.sockets >= 1, "{after:?}");
        assert!(after.open_fds > after.sockets, "{after:?}");
        assert!(after.rss_bytes.is_some_and(|b| b > 0));
        use std::os::fd::AsRawFd;
        let addrs = socket_addrs(listener.as_raw_fd()).expect("a socket");
        assert_eq!(
            addrs,
            SocketAddrs::new(listener.local_addr().expect("addr"), None)
        );
        let file = std::fs::File::open("/proc/self/statm").expect("statm");
        assert_eq!(socket_addrs(file.as_raw_fd()), None);
    }
}
