//! The counters: cachegrind (instructions), DHAT (allocations), `perf stat`
//! (syscalls, context switches), each wrapped around one server run, and the parsers of
//! what they write.

use super::client::Clients;
use super::process::{Launch, Running};
use super::{Plan, SyscallCounts};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Says what is missing, with the package to install.
pub(super) fn check_available(syscalls: bool) -> Result<(), String> {
    let runs = |cmd: &str, arg: &str| {
        Command::new(cmd)
            .arg(arg)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !runs("valgrind", "--version") {
        return Err("--count needs valgrind: apt-get install valgrind".into());
    }
    if syscalls {
        crate::profile::check_available()?;
    }
    Ok(())
}

/// This process's directory for the counters' files.
fn scratch_dir() -> PathBuf {
    std::env::temp_dir().join(format!("zerorx-count-{}", std::process::id()))
}

/// A file in the scratch directory, which is made on first use.
fn scratch(tool: &str) -> Result<PathBuf, String> {
    let dir = scratch_dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir.join(tool))
}

/// Removes the scratch directory (a count's files, up to a few MiB, are read by then).
pub(super) fn remove_scratch() {
    let _ = std::fs::remove_dir_all(scratch_dir());
}

/// Runs one server under `wrapper` through `requests` requests and stops it.
fn counted_run(
    launch: &dyn Fn() -> Result<Launch, String>,
    plan: &Plan,
    requests: u64,
    wrapper: &[OsString],
    log: &Path,
) -> Result<(), String> {
    let server = Running::start(&plan.workload, launch()?, wrapper, log)?;
    let mut clients = Clients::connect(server.addr, plan.connections)?;
    if let Err(e) = clients.run(requests, &plan.exchange) {
        return Err(format!("{e}\nthe server said:\n{}", server.log_tail()));
    }
    drop(clients);
    server.stop()?;
    Ok(())
}

/// What cachegrind counted over a whole run.
pub(super) struct Instructions {
    /// Every instruction.
    pub(super) total: u64,
    /// By function (demangled name; its files merged).
    pub(super) per_fn: BTreeMap<String, u64>,
}

/// Counts a whole run's user-space instructions; copies cachegrind's file to `keep_as`
/// when given (for `cg_diff` and `cg_annotate`).
pub(super) fn cachegrind(
    launch: &dyn Fn() -> Result<Launch, String>,
    plan: &Plan,
    requests: u64,
    keep_as: Option<&Path>,
) -> Result<Instructions, String> {
    let out = scratch("cachegrind.out")?;
    let log = scratch("cachegrind.log")?;
    let _ = std::fs::remove_file(&out);
    let wrapper: Vec<OsString> = vec![
        "valgrind".into(),
        "--tool=cachegrind".into(),
        "--cache-sim=no".into(),
        format!("--cachegrind-out-file={}", out.display()).into(),
    ];
    counted_run(launch, plan, requests, &wrapper, &log)?;
    let text = std::fs::read_to_string(&out).map_err(|e| {
        format!(
            "cachegrind wrote no {}: {e}\n{}",
            out.display(),
            std::fs::read_to_string(&log).unwrap_or_default()
        )
    })?;
    if let Some(to) = keep_as {
        std::fs::copy(&out, to).map_err(|e| format!("--count-keep: {}: {e}", to.display()))?;
    }
    parse_cachegrind(&text)
}

/// Reads a cachegrind out file (events `Ir` only): `fn=` names a function, and each
/// following `LINE COUNT` line adds to it.
pub(super) fn parse_cachegrind(text: &str) -> Result<Instructions, String> {
    let mut per_fn: BTreeMap<String, u64> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut total = None;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("fn=") {
            current = Some(name.to_owned());
        } else if let Some(sum) = line.strip_prefix("summary:") {
            total = sum.trim().parse::<u64>().ok();
        } else if line.starts_with(|c: char| c.is_ascii_digit()) {
            let count = line
                .split_whitespace()
                .nth(1)
                .and_then(|n| n.parse::<u64>().ok())
                .ok_or_else(|| format!("cachegrind: a line without a count: {line:?}"))?;
            let f = current
                .clone()
                .ok_or("cachegrind: counts before any fn= line")?;
            *per_fn.entry(f).or_default() += count;
        }
    }
    let total = total.ok_or("cachegrind: no summary line (was the run cut short?)")?;
    Ok(Instructions { total, per_fn })
}

/// What DHAT counted over a whole run.
pub(super) struct Allocations {
    /// Heap blocks allocated.
    pub(super) blocks: u64,
    /// Bytes in them.
    pub(super) bytes: u64,
}

/// Counts a whole run's heap allocations.
pub(super) fn dhat(
    launch: &dyn Fn() -> Result<Launch, String>,
    plan: &Plan,
    requests: u64,
) -> Result<Allocations, String> {
    let out = scratch("dhat.out")?;
    let log = scratch("dhat.log")?;
    let wrapper: Vec<OsString> = vec![
        "valgrind".into(),
        "--tool=dhat".into(),
        format!("--dhat-out-file={}", out.display()).into(),
    ];
    counted_run(launch, plan, requests, &wrapper, &log)?;
    let text = std::fs::read_to_string(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let _ = std::fs::remove_file(&out);
    parse_dhat(&text)
}

/// Reads DHAT's summary line, `Total:     1,234 bytes in 56 blocks`.
pub(super) fn parse_dhat(log: &str) -> Result<Allocations, String> {
    let line = log
        .lines()
        .find_map(|l| l.split_once("Total:").map(|(_, rest)| rest))
        .ok_or_else(|| format!("DHAT printed no `Total:` line:\n{log}"))?;
    let numbers: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.replace(',', "").parse().ok())
        .collect();
    match numbers[..] {
        [bytes, blocks] => Ok(Allocations { blocks, bytes }),
        _ => Err(format!(
            "DHAT's total line is not `B bytes in N blocks`: {line:?}"
        )),
    }
}

/// The events `perf stat` counts, in [`SyscallCounts`]'s order.
const PERF_EVENTS: [&str; 4] = [
    "raw_syscalls:sys_enter",
    "syscalls:sys_enter_io_uring_enter",
    "syscalls:sys_enter_epoll_wait",
    "context-switches",
];

/// Runs the server natively: `warm` requests, then `perf stat` on the server's
/// threads for exactly `plan.requests` more.
pub(super) fn perf_syscalls(
    launch: &dyn Fn() -> Result<Launch, String>,
    plan: &Plan,
    warm: u64,
) -> Result<SyscallCounts, String> {
    let log = scratch("native.log")?;
    let out = scratch("perf.out")?;
    let server = Running::start(&plan.workload, launch()?, &[], &log)?;
    let mut clients = Clients::connect(server.addr, plan.connections)?;
    clients.run(warm, &plan.exchange)?;
    let mut perf = Command::new("perf")
        .args(["stat", "-x", ",", "-e", &PERF_EVENTS.join(","), "-o"])
        .arg(&out)
        .args(["-p", &server.pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("perf stat: {e}"))?;
    // perf attaches to every thread of the server before it counts; an idle server
    // makes no syscalls meanwhile.
    std::thread::sleep(Duration::from_millis(500));
    let measured = clients.run(plan.requests, &plan.exchange);
    // SAFETY: `perf` is our child, not yet reaped; SIGINT makes it print and exit.
    unsafe { libc::kill(perf.id() as libc::pid_t, libc::SIGINT) };
    let _ = perf.wait();
    measured?;
    drop(clients);
    server.stop()?;
    let text = std::fs::read_to_string(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let n = parse_perf(&text)?;
    let per = |x: u64| x as f64 / plan.requests as f64;
    Ok(SyscallCounts {
        syscalls: per(n[0]),
        io_uring_enter: per(n[1]),
        epoll_wait: per(n[2]),
        context_switches: per(n[3]),
    })
}

/// Reads `perf stat -x,` output: `COUNT,UNIT,EVENT,...` per event.
pub(super) fn parse_perf(text: &str) -> Result<[u64; 4], String> {
    let mut n = [None; 4];
    for line in text.lines() {
        let fields: Vec<&str> = line.split(',').collect();
        if fields.len() < 3 {
            continue;
        }
        if let Some(i) = PERF_EVENTS.iter().position(|e| *e == fields[2]) {
            n[i] = fields[0].parse::<u64>().ok();
        }
    }
    let mut out = [0; 4];
    for (i, v) in n.iter().enumerate() {
        out[i] = v.ok_or_else(|| format!("perf stat counted no {}:\n{text}", PERF_EVENTS[i]))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cachegrind_counts_are_summed_per_function() {
        let text = "desc: x\ncmd: server\nevents: Ir\nfl=a.rs\nfn=alpha\n1 10\n2 5\n\
                    fl=b.rs\nfn=beta\n7 3\nfl=c.rs\nfn=alpha\n3 1\nsummary: 19\n";
        let got = parse_cachegrind(text).expect("parses");
        assert_eq!(got.total, 19);
        assert_eq!(got.per_fn["alpha"], 16);
        assert_eq!(got.per_fn["beta"], 3);
        assert!(parse_cachegrind("fn=a\n1 2\n").is_err(), "no summary line");
    }

    #[test]
    fn dhat_total_is_bytes_then_blocks() {
        let log = "==1== Total:     1,234,567 bytes in 12,345 blocks\n==1== At t-gmax: 9 bytes\n";
        let got = parse_dhat(log).expect("parses");
        assert_eq!((got.bytes, got.blocks), (1_234_567, 12_345));
        assert!(parse_dhat("==1== nothing\n").is_err());
    }

    #[test]
    fn perf_stat_lines_are_read_by_event() {
        let text = "# started\n\n120,,raw_syscalls:sys_enter,1,100.00,,\n\
                    40,,syscalls:sys_enter_io_uring_enter,1,100.00,,\n\
                    0,,syscalls:sys_enter_epoll_wait,1,100.00,,\n7,,context-switches,1,100.00,,\n";
        assert_eq!(parse_perf(text).expect("parses"), [120, 40, 0, 7]);
        let missing = parse_perf("<not counted>,,context-switches,0,0,,\n").unwrap_err();
        assert!(missing.contains("raw_syscalls"), "{missing}");
    }
}
