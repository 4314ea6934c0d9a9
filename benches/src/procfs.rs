//! Readings from `/proc`: a process's CPU time, memory and context switches, the
//! machine's CPU split, and the calling thread's CPU time.
//!
//! Server CPU comes from `/proc/PID/stat` (utime + stime), which covers every thread
//! the process ever had, io_uring's io-wq workers included; context switches are
//! summed over `/proc/PID/task/*/status`, which covers live threads only.

use std::fs;
use std::io;
use std::time::Duration;

fn read(path: &str) -> io::Result<String> {
    fs::read_to_string(path).map_err(|e| io::Error::new(e.kind(), format!("reading {path}: {e}")))
}

fn bad(path: &str, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{path}: cannot parse {what}"),
    )
}

/// Clock ticks per second, the unit of `/proc/PID/stat` times.
fn clock_ticks() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// CPU seconds (user + system) used so far by every thread of process `pid`.
pub fn process_cpu_secs(pid: u32) -> io::Result<f64> {
    let (user, system) = process_cpu_split(pid)?;
    Ok(user + system)
}

/// CPU seconds used so far by every thread of process `pid`: (user, system).
pub fn process_cpu_split(pid: u32) -> io::Result<(f64, f64)> {
    let path = format!("/proc/{pid}/stat");
    let text = read(&path)?;
    // The command name may contain spaces and parentheses: fields start after the last ')'.
    let rest = text
        .rfind(')')
        .map(|i| &text[i + 1..])
        .ok_or_else(|| bad(&path, "the command name"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After ')': state is field 3, so utime (14) and stime (15) are at 11 and 12.
    let field = |i: usize| -> io::Result<u64> {
        fields
            .get(i)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad(&path, "utime/stime"))
    };
    let hz = clock_ticks();
    Ok((field(11)? as f64 / hz, field(12)? as f64 / hz))
}

/// Voluntary plus involuntary context switches of every live thread of `pid`: each time
/// a thread blocked or was preempted. An idle event loop should add none.
pub fn context_switches(pid: u32) -> io::Result<u64> {
    let dir = format!("/proc/{pid}/task");
    let mut total = 0;
    for entry in fs::read_dir(&dir).map_err(|e| io::Error::new(e.kind(), format!("{dir}: {e}")))? {
        let entry = entry?;
        let path = entry.path().join("status");
        // A thread may exit between listing and reading: skip it.
        let Ok(text) = fs::read_to_string(&path) else {
            continue;
        };
        for line in text.lines() {
            if let Some(v) = line
                .strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
            {
                total += v.trim().parse::<u64>().unwrap_or(0);
            }
        }
    }
    Ok(total)
}

/// Resident memory of `pid` in bytes: (`VmRSS`, `RssAnon`). `RssAnon` is the
/// process's own heap and stacks, without mapped files such as its executable.
pub fn rss_bytes(pid: u32) -> io::Result<(u64, u64)> {
    let path = format!("/proc/{pid}/status");
    let text = read(&path)?;
    let kib = |key: &str| -> io::Result<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|k| k * 1024)
            .ok_or_else(|| bad(&path, key))
    };
    Ok((kib("VmRSS:")?, kib("RssAnon:")?))
}

/// Cumulative machine-wide CPU time by kind, from the first line of `/proc/stat`.
#[derive(Clone, Copy, Debug, Default)]
pub struct MachineCpu {
    /// user + nice
    pub user: u64,
    /// system
    pub system: u64,
    /// softirq (on this kernel not charged to any process)
    pub softirq: u64,
    /// irq
    pub other: u64,
    /// steal: time the hypervisor ran something else while this VM wanted a CPU
    pub steal: u64,
    /// idle + iowait
    pub idle: u64,
}

impl MachineCpu {
    /// Reads the counters now.
    pub fn now() -> io::Result<MachineCpu> {
        let text = read("/proc/stat")?;
        let line = text
            .lines()
            .next()
            .ok_or_else(|| bad("/proc/stat", "the cpu line"))?;
        let v: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map(|s| s.parse().unwrap_or(0))
            .collect();
        let g = |i: usize| v.get(i).copied().unwrap_or(0);
        Ok(MachineCpu {
            user: g(0) + g(1),
            system: g(2),
            idle: g(3) + g(4),
            other: g(5),
            steal: g(7),
            softirq: g(6),
        })
    }

    /// The share of each kind between `self` (earlier) and `later`, in percent of all
    /// CPUs: (user, system, softirq, busy).
    pub fn split_until(&self, later: &MachineCpu) -> MachineSplit {
        let d = |a: u64, b: u64| b.saturating_sub(a) as f64;
        let user = d(self.user, later.user);
        let system = d(self.system, later.system);
        let softirq = d(self.softirq, later.softirq);
        let other = d(self.other, later.other);
        let steal = d(self.steal, later.steal);
        let idle = d(self.idle, later.idle);
        let total = (user + system + softirq + other + steal + idle).max(1.0);
        MachineSplit {
            user_pct: 100.0 * user / total,
            system_pct: 100.0 * system / total,
            softirq_pct: 100.0 * softirq / total,
            busy_pct: 100.0 * (total - idle) / total,
            steal_pct: 100.0 * steal / total,
        }
    }
}

/// Machine-wide CPU use over an interval, in percent of all CPUs.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct MachineSplit {
    /// user + nice
    pub user_pct: f64,
    /// system
    pub system_pct: f64,
    /// softirq
    pub softirq_pct: f64,
    /// everything but idle (steal included: a CPU the host took is not free)
    pub busy_pct: f64,
    /// steal: on a shared VM, how much of the window other guests held the CPUs (their
    /// load also evicts caches, so a cell with much steal measures the host, not the
    /// servers)
    pub steal_pct: f64,
}

/// How busy the machine is over the next `window` (percent of all CPUs), e.g. other
/// tenants' load before a cell starts.
pub fn busy_over(window: Duration) -> io::Result<f64> {
    let a = MachineCpu::now()?;
    std::thread::sleep(window);
    Ok(a.split_until(&MachineCpu::now()?).busy_pct)
}

/// CPU time used so far by the calling thread (nanosecond resolution).
pub fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// The 1-minute load average, from `/proc/loadavg`.
pub fn load_average() -> io::Result<f64> {
    let text = read("/proc/loadavg")?;
    text.split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("/proc/loadavg", "the 1-minute load"))
}

/// Raises this process's open-file limit to its hard limit (idle-connection runs
/// need tens of thousands of sockets) and returns the new soft limit.
pub fn raise_fd_limit() -> io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    lim.rlim_cur = lim.rlim_max;
    // SAFETY: `lim` is a valid rlimit whose soft limit does not exceed its hard limit.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(lim.rlim_cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_process() {
        let pid = std::process::id();
        assert!(process_cpu_secs(pid).expect("cpu") >= 0.0);
        let (rss, anon) = rss_bytes(pid).expect("rss");
        assert!(rss > 0 && anon > 0 && anon <= rss);
        assert!(context_switches(pid).is_ok());
        let split = MachineCpu::now()
            .expect("stat")
            .split_until(&MachineCpu::now().expect("stat"));
        assert!((0.0..=100.0).contains(&split.busy_pct));
    }

    #[test]
    fn steal_is_busy_and_counted_on_its_own() {
        let a = MachineCpu::default();
        let b = MachineCpu {
            user: 30,
            system: 10,
            softirq: 5,
            other: 5,
            steal: 20,
            idle: 30,
        };
        let split = a.split_until(&b);
        assert_eq!(split.steal_pct, 20.0);
        assert_eq!(split.busy_pct, 70.0);
        assert_eq!(split.user_pct, 30.0);
    }

    #[test]
    fn missing_process_is_an_error() {
        // PIDs are below 2^22 on Linux.
        assert!(process_cpu_secs(u32::MAX).is_err());
        assert!(rss_bytes(u32::MAX).is_err());
    }
}
