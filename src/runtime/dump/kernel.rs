//! The kernel's side of the dump, read from `/proc/self`: each ring's `fdinfo`, the
//! process's fds and memory, and the addresses of the sockets ops work on.

use super::ProcessState;
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
