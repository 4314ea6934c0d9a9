//! Deterministic per-request counts (`--count` in the echo and RPC benchmarks): what a
//! server spends per request in instructions, heap allocations, syscalls and
//! wake-ups, counted rather than timed, so a cut of 1 % is visible on a noisy machine.
//!
//! Every server gets the same fixed work: `connections` clients, one request in
//! flight each (a closed loop, so how requests batch depends as little as possible on
//! timing), `requests` requests in all. Then:
//!
//! - **instructions** (user space): the server under `valgrind --tool=cachegrind
//!   --cache-sim=no`, run twice, with `requests` and with a fifth of them; the
//!   difference over the difference in requests leaves out start-up, connection
//!   set-up and shut-down, which both runs share. Per function the same difference
//!   gives the top symbols.
//! - **allocations** (calls and bytes): the same two runs under `valgrind --tool=dhat`.
//! - **syscalls, `io_uring_enter`, `epoll_wait` and context switches** (wake-ups):
//!   the server run natively, `perf stat` attached after a warm-up for exactly the
//!   measured requests (tracepoints and a software event: no hardware counters needed).
//!
//! Valgrind serialises a server's threads and slows it some 30×, so its client always
//! has a request waiting and batching is at its most stable; the figures repeat
//! within about a percent (`repeats` runs show the spread). `baseline` turns them into
//! the CI gate: allocations may not rise at all, instructions not by more than 5 %.

mod baseline;
pub mod cli;
mod client;
mod process;
mod tools;

pub use baseline::{check as check_baseline, write as write_baseline, Baseline};
pub use client::{Exchange, Reply};
pub use process::{Launch, Ready, Stop};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Set for every counted run: the port on 127.0.0.1 where a zerorx server that calls
/// [`spawn_exit_listener`] accepts one connection and exits.
///
/// Why: valgrind 3.19 holds its lock through `io_uring_enter` and delivers no signal
/// in it, so a zerorx worker waiting for I/O keeps every other thread from running
/// and SIGTERM from arriving: a stop by signal or by closing stdin took 6-76 s, and
/// the connections made to wake the worker meanwhile added thousands of instructions
/// to the count. An exit made by the worker itself, woken by a completion, needs
/// neither.
pub const EXIT_PORT_ENV: &str = "ZERORX_BENCH_EXIT_PORT";

/// When [`EXIT_PORT_ENV`] is set, spawns (on the current zerorx worker) a task that
/// exits the process at the first connection to that port. Call it from the server's
/// worker 0; without the variable it does nothing.
pub fn spawn_exit_listener() {
    let Some(port) = std::env::var(EXIT_PORT_ENV)
        .ok()
        .and_then(|p| p.parse::<u16>().ok())
    else {
        return;
    };
    zerorx::spawn(async move {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        match zerorx::net::TcpListener::bind(addr) {
            Ok(l) => {
                let _ = l.accept().await;
                std::process::exit(0);
            }
            Err(e) => eprintln!("count: cannot listen for the exit on {addr}: {e}"),
        }
    });
}

/// The fixed work every server gets.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The workload's name (`W2`, `RPC-64B`), for tables and the baseline.
    pub workload: String,
    /// Client connections, one request in flight each.
    pub connections: usize,
    /// Requests of the long run (the short run makes a fifth of them).
    pub requests: u64,
    /// How many times each count is taken (the spread is reported).
    pub repeats: usize,
    /// The request and its reply.
    pub exchange: Exchange,
    /// Also count syscalls and wake-ups with `perf stat` (native runs).
    pub syscalls: bool,
    /// How many functions the per-function table lists.
    pub top: usize,
    /// Where to keep the first repeat's cachegrind files, if anywhere.
    pub keep: Option<PathBuf>,
}

impl Plan {
    /// Requests of the short run, whose count is taken from the long one's.
    pub fn short_requests(&self) -> u64 {
        (self.requests / 5).max(self.connections as u64)
    }
}

/// A server to count: its name and how to start it (called once per run).
pub struct Target<'a> {
    /// The name in tables.
    pub name: String,
    /// Starts a fresh instance.
    pub launch: Box<dyn Fn() -> Result<Launch, String> + 'a>,
}

/// One server's counts per request.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Counts {
    /// The server.
    pub server: String,
    /// User-space instructions per request, one figure per repeat.
    pub instructions: Vec<f64>,
    /// Heap allocations per request (median over repeats).
    pub allocs: f64,
    /// Heap bytes allocated per request (median over repeats).
    pub alloc_bytes: f64,
    /// Syscalls, `io_uring_enter`, `epoll_wait` and context switches per request, from
    /// the native run (absent without `--count-syscalls`).
    pub syscalls: Option<SyscallCounts>,
    /// The functions with the most instructions per request (first repeat).
    pub top: Vec<(String, f64)>,
}

/// What `perf stat` counted per request in a native run.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct SyscallCounts {
    /// Every syscall.
    pub syscalls: f64,
    /// `io_uring_enter` calls.
    pub io_uring_enter: f64,
    /// `epoll_wait` calls.
    pub epoll_wait: f64,
    /// Context switches (each sleep and wake of a server thread).
    pub context_switches: f64,
}

impl Counts {
    /// The median of the repeats' instructions per request.
    pub fn instructions_median(&self) -> f64 {
        median(&self.instructions)
    }
}

/// Counts every target under `plan`, printing progress as it goes.
pub fn run(plan: &Plan, targets: &[Target<'_>]) -> Result<Vec<Counts>, String> {
    tools::check_available(plan.syscalls)?;
    let short = plan.short_requests();
    if plan.requests <= short {
        return Err(format!(
            "--count-requests {} must be more than 5 per connection ({} connections)",
            plan.requests, plan.connections
        ));
    }
    let counted = count_all(plan, targets, short);
    tools::remove_scratch();
    counted
}

fn count_all(plan: &Plan, targets: &[Target<'_>], short: u64) -> Result<Vec<Counts>, String> {
    let delta = (plan.requests - short) as f64;
    let mut all = Vec::new();
    for t in targets {
        let mut instructions = Vec::new();
        let (mut allocs, mut bytes) = (Vec::new(), Vec::new());
        let mut top = Vec::new();
        for r in 0..plan.repeats {
            let kept = |run: &str| {
                let dir = plan.keep.as_ref().filter(|_| r == 0)?;
                Some(dir.join(format!("{}-{}-{run}.cgout", plan.workload, t.name)))
            };
            let long = tools::cachegrind(&*t.launch, plan, plan.requests, kept("long").as_deref())?;
            let small = tools::cachegrind(&*t.launch, plan, short, kept("short").as_deref())?;
            instructions.push((long.total - small.total) as f64 / delta);
            if r == 0 {
                top = top_symbols(&long.per_fn, &small.per_fn, delta, plan.top);
            }
            let long = tools::dhat(&*t.launch, plan, plan.requests)?;
            let small = tools::dhat(&*t.launch, plan, short)?;
            allocs.push(long.blocks.saturating_sub(small.blocks) as f64 / delta);
            bytes.push(long.bytes.saturating_sub(small.bytes) as f64 / delta);
            println!(
                "  count {:<8} {:<12} repeat {}: {:>8.0} instructions, {:.2} allocations ({:.0} B) per request",
                plan.workload,
                t.name,
                r + 1,
                instructions[r],
                allocs[r],
                bytes[r]
            );
        }
        let syscalls = if plan.syscalls {
            Some(tools::perf_syscalls(&*t.launch, plan, short)?)
        } else {
            None
        };
        all.push(Counts {
            server: t.name.clone(),
            instructions,
            allocs: median(&allocs),
            alloc_bytes: median(&bytes),
            syscalls,
            top,
        });
    }
    Ok(all)
}

fn top_symbols(
    long: &BTreeMap<String, u64>,
    short: &BTreeMap<String, u64>,
    delta: f64,
    keep: usize,
) -> Vec<(String, f64)> {
    let mut per: Vec<(String, f64)> = long
        .iter()
        .map(|(f, &n)| {
            let before = short.get(f).copied().unwrap_or(0);
            (f.clone(), n.saturating_sub(before) as f64 / delta)
        })
        .filter(|(_, n)| *n >= 0.5)
        .collect();
    per.sort_by(|a, b| b.1.total_cmp(&a.1));
    per.truncate(keep);
    per
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// The tables: counts per request for every server, each against `reference` (the
/// tokio peer), then each server's top functions.
pub fn render(plan: &Plan, counts: &[Counts], reference: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\ncounts per request, {}: {} connections, {}, {} requests \
         (instructions and allocations: the difference of {} and {} requests under valgrind)",
        plan.workload,
        plan.connections,
        match plan.exchange.ahead {
            0 | 1 => "one request in flight each".to_owned(),
            n => format!("each a stream up to {n} requests ahead"),
        },
        plan.requests,
        plan.requests,
        plan.short_requests(),
    );
    let _ = writeln!(
        out,
        "{:<12} {:>22} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "server",
        "instructions (min-max)",
        "vs ref",
        "allocs",
        "alloc B",
        "syscalls",
        "uring_ent",
        "epoll_wt",
        "ctx_sw"
    );
    let ref_instr = counts
        .iter()
        .find(|c| c.server == reference)
        .map(Counts::instructions_median);
    for c in counts {
        let (lo, hi) = c
            .instructions
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(lo, hi), &x| {
                (lo.min(x), hi.max(x))
            });
        let ratio = ref_instr
            .map(|r| format!("{:.2}x", c.instructions_median() / r))
            .unwrap_or_else(|| "-".into());
        let sys = |f: fn(&SyscallCounts) -> f64| {
            c.syscalls
                .as_ref()
                .map(|s| format!("{:.2}", f(s)))
                .unwrap_or_else(|| "-".into())
        };
        let _ = writeln!(
            out,
            "{:<12} {:>22} {:>8} {:>9.2} {:>9.0} {:>9} {:>9} {:>9} {:>9}",
            c.server,
            format!("{:.0} ({:.0}-{:.0})", c.instructions_median(), lo, hi),
            ratio,
            c.allocs,
            c.alloc_bytes,
            sys(|s| s.syscalls),
            sys(|s| s.io_uring_enter),
            sys(|s| s.epoll_wait),
            sys(|s| s.context_switches),
        );
    }
    let _ = writeln!(out, "(vs ref: instructions over {reference}'s)");
    for c in counts {
        let _ = writeln!(
            out,
            "\n{} {}: instructions per request by function",
            plan.workload, c.server
        );
        for (f, n) in &c.top {
            let _ = writeln!(out, "  {n:>8.1}  {f}");
        }
    }
    out
}
