//! `--count` on a benchmark's command line: its options, and the run from parsed
//! options to the printed tables, the JSON and the baseline gate.

use super::{render, run, Exchange, Plan, Target};
use std::path::PathBuf;

/// The `--count` options, for the benchmarks' usage texts.
pub const USAGE: &str = "\
  --count             count instead of timing: per request, each server's user-space
                      instructions (cachegrind), heap allocations (DHAT), syscalls and
                      context switches (perf stat) under fixed work (see
                      benches/src/count/mod.rs); needs valgrind
  --count-connections C   connections, one request in flight each (default 8)
  --count-requests N  requests of the long run (default 20000; the short run makes N/5)
  --count-repeats R   times each count is taken, for the spread (default 3)
  --count-no-syscalls leave out the perf stat run
  --count-top N       functions listed per server, by instructions per request (default 12)
  --count-keep DIR    keep the first repeat's cachegrind files in DIR, as
                      WORKLOAD-SERVER-{long,short}.cgout: `cg_diff` the two, then
                      `cg_annotate --auto=yes` the difference for counts by source line
  --count-json FILE   also write the counts as JSON
  --count-baseline FILE   fail (exit 1) when zerorx's allocations per request rose at all
                      or its instructions per request rose more than 5 % above FILE's
  --count-write-baseline FILE   record zerorx's counts as FILE's baseline for this workload
";

/// Parsed `--count` options.
#[derive(Clone, Debug)]
pub struct Args {
    /// Connections.
    pub connections: usize,
    /// Requests of the long run.
    pub requests: u64,
    /// Repeats.
    pub repeats: usize,
    /// Count syscalls with perf.
    pub syscalls: bool,
    /// Functions listed per server.
    pub top: usize,
    /// Where to keep cachegrind's files.
    pub keep: Option<PathBuf>,
    /// Where to write JSON.
    pub json: Option<PathBuf>,
    /// The baseline to check.
    pub baseline: Option<PathBuf>,
    /// The baseline to write.
    pub write_baseline: Option<PathBuf>,
}

/// Takes the `--count*` options out of `args`: `None` without `--count`; the rest of
/// the arguments are left for the benchmark's own parser.
pub fn take(args: &mut Vec<String>) -> Result<Option<Args>, String> {
    if !args.iter().any(|a| a == "--count") {
        return Ok(None);
    }
    let mut a = Args {
        connections: 8,
        requests: 20_000,
        repeats: 3,
        syscalls: true,
        top: 12,
        keep: None,
        json: None,
        baseline: None,
        write_baseline: None,
    };
    let mut rest = Vec::new();
    let mut it = std::mem::take(args).into_iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--count" => {}
            "--count-no-syscalls" => a.syscalls = false,
            "--count-connections" => a.connections = in_range(&flag, &value()?, 1..=1024)?,
            "--count-requests" => a.requests = in_range(&flag, &value()?, 100..=100_000_000)?,
            "--count-repeats" => a.repeats = in_range(&flag, &value()?, 1..=20)?,
            "--count-top" => a.top = in_range(&flag, &value()?, 1..=10_000)?,
            "--count-json" => a.json = Some(value()?.into()),
            "--count-keep" => a.keep = Some(value()?.into()),
            "--count-baseline" => a.baseline = Some(value()?.into()),
            "--count-write-baseline" => a.write_baseline = Some(value()?.into()),
            _ => rest.push(flag),
        }
    }
    *args = rest;
    Ok(Some(a))
}

/// Parses `v`, the value of `flag`, as a number within `range`.
fn in_range<T>(flag: &str, v: &str, range: std::ops::RangeInclusive<T>) -> Result<T, String>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Debug,
{
    v.parse()
        .ok()
        .filter(|n| range.contains(n))
        .ok_or_else(|| format!("{flag}: expected {range:?}, got {v:?}"))
}

/// Counts `targets` through `workload` and prints the tables; checks or writes the
/// baseline for the target named `zerorx`. The exit status: 0, 1 when the gate
/// failed, 3 when the count could not be made.
pub fn main(
    a: &Args,
    workload: &str,
    exchange: Exchange,
    targets: &[Target<'_>],
    reference: &str,
) -> i32 {
    let plan = Plan {
        workload: workload.to_owned(),
        connections: a.connections,
        requests: a.requests,
        repeats: a.repeats,
        exchange,
        syscalls: a.syscalls,
        top: a.top,
        keep: a.keep.clone(),
    };
    if let Some(dir) = &plan.keep {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("--count-keep: {}: {e}", dir.display());
            return 3;
        }
    }
    let counts = match run(&plan, targets) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("count {workload}: {e}");
            return 3;
        }
    };
    print!("{}", render(&plan, &counts, reference));
    if let Some(path) = &a.json {
        let written = serde_json::to_string_pretty(&counts)
            .map_err(|e| e.to_string())
            .and_then(|j| std::fs::write(path, j).map_err(|e| format!("{}: {e}", path.display())));
        if let Err(e) = written {
            eprintln!("count: {e}");
            return 3;
        }
    }
    let zerorx = counts.iter().find(|c| c.server == "zerorx");
    // Batching, and so the count, depends on the connection count: each is its own entry.
    let key = format!("{workload} x{} conns", a.connections);
    if let Some(path) = &a.write_baseline {
        let Some(z) = zerorx else {
            eprintln!("count: --count-write-baseline needs the zerorx server counted");
            return 3;
        };
        if let Err(e) = super::write_baseline(path, &key, z) {
            eprintln!("count: {e}");
            return 3;
        }
        println!("baseline for {key} written to {}", path.display());
    }
    if let Some(path) = &a.baseline {
        let Some(z) = zerorx else {
            eprintln!("count: --count-baseline needs the zerorx server counted");
            return 3;
        };
        return match super::check_baseline(path, &key, z) {
            Ok(line) => {
                println!("count gate passed: {line}");
                0
            }
            Err(e) => {
                println!("COUNT GATE FAILED: {e}");
                1
            }
        };
    }
    0
}

/// The counted servers' names, from a benchmark's `--servers` value or its defaults.
pub fn server_names<'a>(given: Option<&'a str>, defaults: &[&'a str]) -> Vec<&'a str> {
    match given {
        Some(list) => list.split(',').map(str::trim).collect(),
        None => defaults.to_vec(),
    }
}
