//! Where a server's CPU goes: `perf record -g` on its process while a cell is
//! measured, each sample attributed to one category by walking its call chain from
//! the leaf: the first frame that names a category decides it (a spin lock, slab
//! or RCU helper decides nothing and the walk goes on to its caller).
//!
//! | category | frames (name prefixes) |
//! |---|---|
//! | user space | any frame outside the kernel at the leaf |
//! | data copies | `copy_*`/`_copy_*` iterators, `skb_copy_datagram*`, usercopy checks, kernel `memcpy`/`memmove` |
//! | TCP/IP | `tcp_`, `ip_`, `inet_`, `sk_`/`sock_`, `skb_`, `net_`/`netif_`/`napi_`, `dev_`, loopback, the congestion control |
//! | io_uring | `io_`, `__io_`, `io_uring`, task work |
//! | epoll | `ep_`, `do_epoll`, `*sys_epoll*` |
//! | syscall entry and fd lookup | `entry_SYSCALL`, `do_syscall`, `__x64_sys_`, `__sys_`, `fget`/`fdget`/`fput`, `syscall_exit`, `exit_to_user_mode` |
//! | other kernel | the scheduler, timers, page faults, whatever named none of the above |
//!
//! The shared kernel floor is copies + TCP/IP + other kernel (every runtime pays
//! it); the runtime's own cost is the rest.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// Where a sample's CPU went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    /// The process's own code and its libraries.
    User,
    /// io_uring: submission, task work, completion.
    IoUring,
    /// Syscall entry and exit, fd lookup.
    Syscall,
    /// epoll.
    Epoll,
    /// Copies between user and kernel memory.
    Copies,
    /// The TCP/IP stack and sockets.
    TcpIp,
    /// Everything else in the kernel.
    OtherKernel,
}

impl Category {
    /// Every category, in report order.
    pub const ALL: [Category; 7] = [
        Category::User,
        Category::IoUring,
        Category::Syscall,
        Category::Epoll,
        Category::Copies,
        Category::TcpIp,
        Category::OtherKernel,
    ];

    /// Its column name.
    pub fn name(self) -> &'static str {
        match self {
            Category::User => "user",
            Category::IoUring => "io_uring",
            Category::Syscall => "syscall",
            Category::Epoll => "epoll",
            Category::Copies => "copies",
            Category::TcpIp => "tcp/ip",
            Category::OtherKernel => "other-kernel",
        }
    }

    /// Its name in metric keys.
    pub fn key(self) -> &'static str {
        match self {
            Category::TcpIp => "tcp_ip",
            Category::OtherKernel => "other_kernel",
            c => c.name(),
        }
    }

    /// True for the part every runtime pays (copies, TCP/IP, other kernel).
    pub fn is_shared_floor(self) -> bool {
        matches!(
            self,
            Category::Copies | Category::TcpIp | Category::OtherKernel
        )
    }
}

const COPIES: &[&str] = &[
    "copy_user",
    "_copy_to_iter",
    "_copy_from_iter",
    "copy_to_iter",
    "copy_from_iter",
    "copyin",
    "copyout",
    "skb_copy_datagram",
    "simple_copy_to_iter",
    "__skb_datagram_iter",
    "copy_page",
    "rep_movs_alternative",
    "__check_object_size",
    "check_stack_object",
    "check_heap_object",
    "__virt_addr_valid",
    "memcpy",
    "__memcpy",
    "memmove",
    "__memmove",
    "copy_iovec_from_user",
    "csum_partial_copy",
];

const TCP_IP: &[&str] = &[
    "tcp_",
    "__tcp_",
    "tcp4_",
    "ip_",
    "__ip_",
    "ipv4_",
    "inet_",
    "__inet_",
    "sk_",
    "__sk_",
    "sock_",
    "__sock_",
    "lock_sock",
    "release_sock",
    "skb_",
    "__skb_",
    "kfree_skb",
    "consume_skb",
    "__alloc_skb",
    "__kfree_skb",
    "alloc_skb",
    "net_",
    "__net",
    "netif_",
    "__netif",
    "napi_",
    "__napi",
    "dev_",
    "__dev_",
    "loopback_",
    "process_backlog",
    "bbr_",
    "cubic",
    "raw_v4",
    "dst_",
    "nf_",
    "validate_xmit",
    "sch_",
    "__qdisc",
    "qdisc",
];

const IO_URING: &[&str] = &["io_", "__io_", "tctx_task_work", "task_work_run"];

const EPOLL: &[&str] = &["ep_", "__ep_", "do_epoll", "__x64_sys_epoll", "__sys_epoll"];

const SYSCALL: &[&str] = &[
    "entry_SYSCALL",
    "do_syscall",
    "__x64_sys_",
    "__sys_",
    "____sys_",
    "__do_sys_",
    "fget",
    "__fget",
    "fdget",
    "__fdget",
    "fput",
    "syscall_exit",
    "syscall_return",
    "exit_to_user_mode",
    "ksys_",
];

fn starts_with_any(sym: &str, prefixes: &[&str]) -> bool {
    prefixes.iter().any(|p| sym.starts_with(p))
}

/// The category a kernel symbol names, if any. Checked in this order so a copy
/// inside TCP counts as a copy, and TCP work under io_uring as TCP.
fn kernel_category(sym: &str) -> Option<Category> {
    if starts_with_any(sym, COPIES) {
        Some(Category::Copies)
    } else if starts_with_any(sym, EPOLL) {
        Some(Category::Epoll)
    } else if starts_with_any(sym, TCP_IP) {
        Some(Category::TcpIp)
    } else if starts_with_any(sym, IO_URING) || sym.contains("io_uring") {
        Some(Category::IoUring)
    } else if starts_with_any(sym, SYSCALL) {
        Some(Category::Syscall)
    } else {
        None
    }
}

/// One frame of a sample: its symbol and whether it is kernel code.
struct Frame<'a> {
    sym: &'a str,
    kernel: bool,
}

/// The category of one sample, given its frames leaf first.
fn categorize(frames: &[Frame]) -> Category {
    match frames.first() {
        None => return Category::OtherKernel,
        Some(f) if !f.kernel => return Category::User,
        Some(_) => {}
    }
    for f in frames.iter().take_while(|f| f.kernel) {
        if let Some(c) = kernel_category(f.sym) {
            return c;
        }
    }
    Category::OtherKernel
}

/// Samples per category.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attribution {
    /// Samples counted per category.
    pub samples: BTreeMap<Category, u64>,
    /// Samples of the runtime's own categories per leaf symbol (where own CPU is
    /// spent, to find what to cut).
    pub own_symbols: BTreeMap<String, u64>,
}

impl Attribution {
    /// All samples.
    pub fn total(&self) -> u64 {
        self.samples.values().sum()
    }

    /// The share (0..=1) of `c`.
    pub fn share(&self, c: Category) -> f64 {
        let total = self.total();
        if total == 0 {
            return 0.0;
        }
        *self.samples.get(&c).unwrap_or(&0) as f64 / total as f64
    }

    /// Adds another attribution's samples (rounds of the same cell).
    pub fn merge(&mut self, other: &Attribution) {
        for (c, n) in &other.samples {
            *self.samples.entry(*c).or_default() += n;
        }
        for (s, n) in &other.own_symbols {
            *self.own_symbols.entry(s.clone()).or_default() += n;
        }
    }

    /// `total_us` (a measured CPU time per operation) split by this attribution's
    /// shares: µs per category in [`Category::ALL`] order, the shared floor and the
    /// runtime's own cost. `None` without samples (perf caught none of a very short
    /// window): no split rather than all of it called own.
    pub fn split(&self, total_us: f64) -> Option<Split> {
        if self.total() == 0 {
            return None;
        }
        let mut floor = 0.0;
        let per_category = Category::ALL.map(|c| {
            let us = total_us * self.share(c);
            if c.is_shared_floor() {
                floor += us;
            }
            (c, us)
        });
        Some(Split {
            per_category,
            floor,
            own: total_us - floor,
        })
    }

    /// The `n` leaf symbols with the most own-cost samples, with their share (0..=1)
    /// of all samples.
    pub fn top_own(&self, n: usize) -> Vec<(&str, f64)> {
        let total = self.total().max(1) as f64;
        let mut v: Vec<(&str, u64)> = self
            .own_symbols
            .iter()
            .map(|(s, n)| (s.as_str(), *n))
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        v.into_iter()
            .take(n)
            .map(|(s, k)| (s, k as f64 / total))
            .collect()
    }
}

/// A CPU time per operation split by [`Attribution::split`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Split {
    /// µs per category, in [`Category::ALL`] order.
    pub per_category: [(Category, f64); 7],
    /// Copies + TCP/IP + other kernel: what every runtime pays.
    pub floor: f64,
    /// The rest: the runtime's own cost.
    pub own: f64,
}

/// Attributes the text `perf script -F comm,tid,ip,sym,dso` printed for a
/// `perf record -g` recording: samples are separated by blank lines, each a header
/// line then one line per frame, leaf first: `ADDR SYMBOL (DSO)`.
pub fn attribute(script: &str) -> Attribution {
    let mut out = Attribution::default();
    let mut frames: Vec<Frame> = Vec::new();
    let mut in_sample = false;
    let mut flush = |frames: &mut Vec<Frame>, in_sample: &mut bool| {
        if *in_sample {
            let c = categorize(frames);
            *out.samples.entry(c).or_default() += 1;
            if !c.is_shared_floor() {
                let leaf = frames.first().map_or("[none]", |f| f.sym);
                *out.own_symbols.entry(leaf.to_owned()).or_default() += 1;
            }
        }
        frames.clear();
        *in_sample = false;
    };
    for line in script.lines() {
        if line.trim().is_empty() {
            flush(&mut frames, &mut in_sample);
            continue;
        }
        if !line.starts_with(char::is_whitespace) {
            // A sample's header line.
            flush(&mut frames, &mut in_sample);
            in_sample = true;
            continue;
        }
        let l = line.trim();
        let Some((_addr, rest)) = l.split_once(' ') else {
            continue;
        };
        let (sym, dso) = match rest.rfind(" (") {
            Some(i) => (&rest[..i], &rest[i + 2..rest.len().saturating_sub(1)]),
            None => (rest, ""),
        };
        let sym = sym.split('+').next().unwrap_or(sym);
        frames.push(Frame {
            sym,
            kernel: dso.starts_with("[kernel"),
        });
    }
    flush(&mut frames, &mut in_sample);
    out
}

/// A `perf record` of one process in progress.
pub struct Recording {
    child: Child,
    data: PathBuf,
}

fn perf_runs() -> bool {
    Command::new("perf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Checks that `perf` can sample here, installing Debian's `linux-perf` first when
/// it is missing and this is root; the error says what to install or allow.
pub fn check_available() -> Result<(), String> {
    if !perf_runs() && is_root() {
        println!("perf is missing: installing linux-perf (apt-get)...");
        let install = || {
            Command::new("apt-get")
                .args([
                    "install",
                    "-y",
                    "-qq",
                    "--no-install-recommends",
                    "linux-perf",
                ])
                .env("DEBIAN_FRONTEND", "noninteractive")
                .status()
                .is_ok_and(|s| s.success())
        };
        if !install() {
            let _ = Command::new("apt-get").args(["update", "-qq"]).status();
            install();
        }
    }
    if !perf_runs() {
        return Err("perf is missing: apt-get install linux-perf".into());
    }
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
        .unwrap_or(4);
    if paranoid > 2 && !is_root() {
        return Err(format!(
            "perf_event_paranoid is {paranoid}: sysctl kernel.perf_event_paranoid=2 (or run as root)"
        ));
    }
    Ok(())
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

impl Recording {
    /// Samples `pid` (every thread, call chains, 999 Hz) for `secs` seconds into a
    /// file under `dir`.
    pub fn start(pid: u32, secs: f64, dir: &Path, name: &str) -> io::Result<Recording> {
        std::fs::create_dir_all(dir)?;
        let data = dir.join(format!("{name}.perf.data"));
        let child = Command::new("perf")
            .args([
                "record",
                "-q",
                "-g",
                "-F",
                "999",
                "-p",
                &pid.to_string(),
                "-o",
            ])
            .arg(&data)
            .args(["--", "sleep", &format!("{secs:.3}")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        Ok(Recording { child, data })
    }

    /// Waits for the recording and attributes it.
    pub fn finish(self) -> io::Result<Attribution> {
        let out = self.child.wait_with_output()?;
        if !out.status.success() {
            return Err(io::Error::other(format!(
                "perf record: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let script = Command::new("perf")
            .args(["script", "-F", "comm,tid,ip,sym,dso", "-i"])
            .arg(&self.data)
            .stderr(Stdio::null())
            .output()?;
        let _ = std::fs::remove_file(&self.data);
        if !script.status.success() {
            return Err(io::Error::other("perf script failed"));
        }
        Ok(attribute(&String::from_utf8_lossy(&script.stdout)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = "\
rpc 1 \n\t          18d4cb zerorx::ops::tcp_recv::Receiver::poll_recv (/bin/rpc)\n\
\n\
rpc 1 \n\tffffffff81ff6c32 ip_rcv ([kernel.kallsyms])\n\tffffffff81b60c5d io_sendmsg ([kernel.kallsyms])\n\
\n\
rpc 1 \n\tffffffff816ac500 check_stack_object ([kernel.kallsyms])\n\tffffffff8200e5d4 tcp_sendmsg_locked ([kernel.kallsyms])\n\
\n\
rpc 1 \n\tffffffff81000001 _raw_spin_unlock_irqrestore ([kernel.kallsyms])\n\tffffffff81b45bb2 io_submit_sqes ([kernel.kallsyms])\n\tffffffff821ed511 do_syscall_64 ([kernel.kallsyms])\n\
\n\
tokio 2 \n\tffffffff81000002 _raw_spin_lock ([kernel.kallsyms])\n\tffffffff81000003 ep_poll ([kernel.kallsyms])\n\
\n\
tokio 2 \n\tffffffff81000004 fdget ([kernel.kallsyms])\n\
\n\
tokio 2 \n\tffffffff81000005 schedule ([kernel.kallsyms])\n\t          101829 syscall (/usr/lib/libc.so.6)\n\
";

    #[test]
    fn each_sample_goes_to_the_first_frame_that_names_a_category() {
        let a = attribute(SCRIPT);
        let n = |c| *a.samples.get(&c).unwrap_or(&0);
        assert_eq!(a.total(), 7);
        assert_eq!(n(Category::User), 1);
        assert_eq!(n(Category::TcpIp), 1, "ip_rcv under io_sendmsg is TCP");
        assert_eq!(
            n(Category::Copies),
            1,
            "the usercopy check inside tcp_sendmsg"
        );
        assert_eq!(n(Category::IoUring), 1, "a lock under io_submit_sqes");
        assert_eq!(n(Category::Epoll), 1);
        assert_eq!(n(Category::Syscall), 1);
        assert_eq!(
            n(Category::OtherKernel),
            1,
            "the scheduler, up to user space"
        );
        assert!((a.share(Category::User) - 1.0 / 7.0).abs() < 1e-9);
    }

    #[test]
    fn a_time_splits_by_the_shares_into_floor_and_own() {
        let split = attribute(SCRIPT).split(7.0).expect("samples");
        assert!(split
            .per_category
            .iter()
            .all(|(_, us)| (us - 1.0).abs() < 1e-9));
        assert!(
            (split.floor - 3.0).abs() < 1e-9,
            "copies, tcp/ip, other kernel"
        );
        assert!((split.own - 4.0).abs() < 1e-9);
        assert_eq!(
            Attribution::default().split(5.0),
            None,
            "no samples, no split"
        );
    }

    #[test]
    fn own_cost_is_listed_by_leaf_symbol_and_the_floor_is_not() {
        let a = attribute(SCRIPT);
        let top = a.top_own(10);
        let names: Vec<&str> = top.iter().map(|(s, _)| *s).collect();
        assert_eq!(names.len(), 4, "user, io_uring, epoll, syscall: {names:?}");
        assert!(names.contains(&"zerorx::ops::tcp_recv::Receiver::poll_recv"));
        assert!(
            names.contains(&"_raw_spin_unlock_irqrestore"),
            "the lock under io_submit_sqes"
        );
        assert!(!names.contains(&"ip_rcv") && !names.contains(&"schedule"));
        assert!(top
            .iter()
            .all(|(_, share)| (share - 1.0 / 7.0).abs() < 1e-9));
        let mut twice = a.clone();
        twice.merge(&a);
        assert_eq!(twice.own_symbols.values().sum::<u64>(), 8);
        assert_eq!(a.top_own(1).len(), 1);
    }

    #[test]
    fn empty_input_attributes_nothing() {
        assert_eq!(attribute("").total(), 0);
        assert_eq!(Attribution::default().share(Category::User), 0.0);
    }
}
