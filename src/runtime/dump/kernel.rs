//! The kernel's side of the dump, read from `/proc/self`: each ring's `fdinfo`, the
//! process's fds and memory, and the addresses of the sockets ops work on.

use super::{NicQueueDump, ProcessState};
use crate::runtime::ZeroCopyTarget;
use std::os::fd::{BorrowedFd, RawFd};

/// `fdinfo` keys that describe the file, not the ring.
const FILE_KEYS: [&str; 4] = ["pos", "flags", "mnt_id", "ino"];

/// The ring's `/proc/self/fdinfo/FD` as `(key, value)` pairs in the kernel's order:
/// scalar fields as they are, and each list (`PollList`, `CqOverflowList`, the
/// registered files and buffers) as its number of entries. Empty when unreadable.
pub(crate) fn ring_fdinfo(fd: RawFd) -> Vec<(String, String)> {
    match std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")) {
        Ok(text) => parse_fdinfo(&text),
        Err(_) => Vec::new(),
    }
}

fn parse_fdinfo(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    // The list whose entries (indented lines) are being counted.
    let mut list: Option<usize> = None;
    for line in text.lines() {
        if line.starts_with(char::is_whitespace) {
            if let Some(i) = list {
                let n = out[i].1.parse::<u64>().unwrap_or(0) + 1;
                out[i].1 = n.to_string();
            }
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        if FILE_KEYS.contains(&key) {
            list = None;
            continue;
        }
        if value.is_empty() {
            out.push((format!("{key} entries"), "0".into()));
            list = Some(out.len() - 1);
        } else {
            out.push((key.into(), value.into()));
            list = None;
        }
    }
    out
}

/// `local -> peer` of socket `fd` (`local` alone for a listener or unconnected
/// socket); `None` for a non-socket.
pub(crate) fn socket_addrs(fd: RawFd) -> Option<String> {
    // SAFETY: `fd` is named by an op in flight on this worker's ring, and the op keeps
    // it open until its final completion (the `OpCode` contract); the borrow ends
    // within this call, on the worker thread that owns the op.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    let sock = socket2::SockRef::from(&fd);
    let local = sock.local_addr().ok()?.as_socket()?;
    Some(match sock.peer_addr().ok().and_then(|a| a.as_socket()) {
        Some(peer) => format!("{local} -> {peer}"),
        None => local.to_string(),
    })
}

/// The kernel's view of the NIC queues `target` binds (netdev netlink), or why there
/// is none to show.
pub(crate) fn nic_queues(target: Option<&ZeroCopyTarget>) -> (Vec<NicQueueDump>, Option<String>) {
    let (interface, ifindex, queues) = match target {
        None => return (Vec::new(), Some("no ZCRX queue bound (copy mode)".into())),
        Some(ZeroCopyTarget::DeviceLess { instances }) => {
            return (
                Vec::new(),
                Some(format!(
                    "no ZCRX queue bound: {instances} device-less instances, on no NIC"
                )),
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
                        .map(|p| {
                            format!(
                                "page pool {}: {} in flight ({} B){}{}",
                                p.id,
                                p.inflight,
                                p.inflight_mem,
                                if p.io_uring {
                                    ", io_uring provider"
                                } else {
                                    ""
                                },
                                if p.detached { ", detached" } else { "" }
                            )
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
        let want: Vec<(String, String)> = [
            ("SqMask", "0x7"),
            ("SqHead", "5"),
            ("CqTail", "9"),
            ("UserBufs", "0"),
            ("PollList entries", "1"),
            ("CqOverflowList entries", "2"),
            ("NAPI", "disabled"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn nic_queues_say_why_there_are_none_or_what_the_kernel_would_not_say() {
        assert_eq!(
            nic_queues(None),
            (Vec::new(), Some("no ZCRX queue bound (copy mode)".into()))
        );
        let (q, note) = nic_queues(Some(&ZeroCopyTarget::DeviceLess { instances: 2 }));
        assert_eq!(q, Vec::new());
        assert_eq!(
            note.as_deref(),
            Some("no ZCRX queue bound: 2 device-less instances, on no NIC")
        );
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
        assert_eq!(q[0].page_pools, Vec::<String>::new());
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
        assert_eq!(addrs, listener.local_addr().expect("addr").to_string());
        let file = std::fs::File::open("/proc/self/statm").expect("statm");
        assert_eq!(socket_addrs(file.as_raw_fd()), None);
    }
}
