//! `zerorx doctor`: argument parsing and rendering of the kernel capability report.
//!
//! The binary in `src/bin/zerorx.rs` only wires these pieces to stdout, stderr and the
//! exit code, so everything here is testable without spawning a process.

use serde::Serialize;
use std::fmt::Write as _;
use zcrx::probe::{names, Capabilities, ZcrxVerdict};
use zcrx::steering::{DataSplit, QueueChoice, Reading, SteeringReport};

/// Usage text, printed for `--help` and (on stderr) after a bad argument.
pub const USAGE: &str = "\
usage: zerorx doctor [--json] [--interface IF [--queue Q] [--flow PEER,LOCAL]]
                     [--require FEATURE[,...]]
       zerorx serve --port P [--protocol binary|compact|auto] [--threads N] [...]
       zerorx --help

  doctor           report what io_uring and zero-copy receive (ZCRX) can do here
  --json           print the report as JSON instead of a table
  --interface IF   also try a ZCRX registration on interface IF (queue 0 by default)
  --queue Q        the receive queue to try on IF (needs --interface)
                   With --interface, also report what steers packets on IF:
                   header/data split, queue counts, RSS key and table, ntuple rules
  --flow PEER,LOCAL  say which queue of IF TCP packets from PEER to LOCAL land on
                   (addresses with ports; ntuple rules first, else RSS)
  --require LIST   exit 1, naming what is missing, unless the kernel has every one of
                   recv-zc, nodev, import, export, flush-rq, rx-page-size, events,
                   add-area (for scripts and CI)
  serve            run the reference Thrift service (bench.thrift); `zerorx serve --help`
";

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Print [`USAGE`] and exit 0.
    Help,
    /// Run the doctor.
    Doctor(DoctorArgs),
}

/// Options of `zerorx doctor`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DoctorArgs {
    /// Print JSON instead of a table.
    pub json: bool,
    /// Interface and queue to probe on top of the cached report.
    pub queue: Option<(String, u32)>,
    /// A TCP flow (peer, local) whose queue on the interface to predict.
    pub flow: Option<(std::net::SocketAddr, std::net::SocketAddr)>,
    /// Features whose absence makes the doctor exit 1.
    pub require: Vec<Requirement>,
}

/// A kernel feature `--require` can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requirement {
    /// `IORING_OP_RECV_ZC` (6.15).
    RecvZc,
    /// Device-less instances, `ZCRX_REG_NODEV` (7.1).
    Nodev,
    /// `ZCRX_REG_IMPORT` (6.19).
    Import,
    /// `ZCRX_CTRL_EXPORT` (6.19).
    Export,
    /// `ZCRX_CTRL_FLUSH_RQ` (6.19).
    FlushRq,
    /// `ZCRX_FEATURE_RX_PAGE_SIZE` (7.0).
    RxPageSize,
    /// zcrx events and shared copy statistics (7.2).
    Events,
    /// `ZCRX_CTRL_ADD_AREA` (7.3).
    AddArea,
}

impl Requirement {
    const ALL: [(&'static str, Requirement); 8] = [
        ("recv-zc", Requirement::RecvZc),
        ("nodev", Requirement::Nodev),
        ("import", Requirement::Import),
        ("export", Requirement::Export),
        ("flush-rq", Requirement::FlushRq),
        ("rx-page-size", Requirement::RxPageSize),
        ("events", Requirement::Events),
        ("add-area", Requirement::AddArea),
    ];

    /// Its `--require` name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, r)| *r == self)
            .map_or("?", |(n, _)| n)
    }

    /// `None` when the kernel has it, else what is missing and why, in words.
    pub fn missing(self, caps: &Capabilities) -> Option<String> {
        let z = &caps.zcrx;
        let (have, what) = match self {
            Requirement::RecvZc => (z.recv_zc, "IORING_OP_RECV_ZC (Linux 6.15+)"),
            Requirement::Nodev => (z.nodev, "ZCRX_REG_NODEV (Linux 7.1+)"),
            Requirement::Import => (z.import, "ZCRX_REG_IMPORT (Linux 6.19+)"),
            Requirement::Export => (z.export, "ZCRX_CTRL_EXPORT (Linux 6.19+)"),
            Requirement::FlushRq => (z.flush_rq, "ZCRX_CTRL_FLUSH_RQ (Linux 6.19+)"),
            Requirement::RxPageSize => (z.rx_page_size, "ZCRX_FEATURE_RX_PAGE_SIZE (Linux 7.0+)"),
            Requirement::Events => (
                z.events,
                "ZCRX_FEATURE_EVENT with ZCRX_CTRL_ARM_EVENT (Linux 7.2+)",
            ),
            Requirement::AddArea => (z.add_area, "ZCRX_CTRL_ADD_AREA (Linux 7.3+)"),
        };
        (!have).then(|| {
            format!(
                "{} is required but kernel {} lacks {what}",
                self.name(),
                caps.kernel_release
            )
        })
    }
}

impl std::str::FromStr for Requirement {
    type Err = UsageError;

    fn from_str(s: &str) -> Result<Requirement, UsageError> {
        Self::ALL
            .iter()
            .find(|(n, _)| *n == s)
            .map(|(_, r)| *r)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|(n, _)| *n).collect();
                UsageError(format!(
                    "--require: unknown feature `{s}` (one of {})",
                    names.join(", ")
                ))
            })
    }
}

/// A command line that cannot be run; its `Display` says what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Parses the arguments after the program name.
pub fn parse_args<I: IntoIterator<Item = String>>(args: I) -> Result<Command, UsageError> {
    let mut args = args.into_iter();
    match args.next().as_deref() {
        None => return Err(UsageError("missing command".into())),
        Some("-h" | "--help" | "help") => return Ok(Command::Help),
        Some("doctor") => {}
        Some(other) => return Err(UsageError(format!("unknown command `{other}`"))),
    }
    let mut json = false;
    let mut flow = None;
    let mut require = Vec::new();
    let mut interface = None;
    let mut queue = None;
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag.to_owned(), Some(value)),
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| -> Result<String, UsageError> {
            match inline {
                Some(v) => Ok(v.to_owned()),
                None => args
                    .next()
                    .ok_or_else(|| UsageError(format!("{name} needs a value"))),
            }
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--json" if inline.is_none() => json = true,
            "--interface" => {
                let name = value("--interface")?;
                if name.is_empty() {
                    return Err(UsageError("--interface needs a name".into()));
                }
                interface = Some(name);
            }
            "--require" => {
                for name in value("--require")?.split(',') {
                    require.push(name.parse()?);
                }
            }
            "--flow" => {
                let raw = value("--flow")?;
                let parsed = raw
                    .split_once(',')
                    .and_then(|(p, l)| Some((p.trim().parse().ok()?, l.trim().parse().ok()?)));
                flow = Some(parsed.ok_or_else(|| {
                    UsageError(format!(
                        "--flow needs PEER,LOCAL addresses with ports (10.0.0.1:40000,10.0.0.2:9090), got `{raw}`"
                    ))
                })?);
            }
            "--queue" => {
                let raw = value("--queue")?;
                let q = raw.parse::<u32>().map_err(|_| {
                    UsageError(format!("--queue needs a queue number, got `{raw}`"))
                })?;
                queue = Some(q);
            }
            _ => return Err(UsageError(format!("unknown argument `{arg}`"))),
        }
    }
    let queue = match (interface, queue) {
        (Some(interface), q) => Some((interface, q.unwrap_or(0))),
        (None, Some(_)) => return Err(UsageError("--queue needs --interface".into())),
        (None, None) => None,
    };
    if flow.is_some() && queue.is_none() {
        return Err(UsageError("--flow needs --interface".into()));
    }
    Ok(Command::Doctor(DoctorArgs {
        json,
        queue,
        flow,
        require,
    }))
}

/// The verdict for a queue asked for on the command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QueueProbe {
    /// Interface name.
    pub interface: String,
    /// Queue index.
    pub queue: u32,
    /// What the registration attempt found.
    pub result: ZcrxVerdict,
    /// What steers packets on the interface.
    pub steering: SteeringReport,
    /// The queue asked about with `--flow`: peer, local, and where it lands or why
    /// that cannot be told.
    pub flow: Option<FlowQueue>,
}

/// The answer to `--flow`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FlowQueue {
    /// The sending side.
    pub peer: std::net::SocketAddr,
    /// The receiving (local) side.
    pub local: std::net::SocketAddr,
    /// The queue and what chose it, or why it cannot be told.
    pub queue: Result<QueueChoice, String>,
}

impl QueueProbe {
    /// Probes `queue` of `interface` and reads its steering; predicts `flow`'s queue.
    pub fn run(
        interface: String,
        queue: u32,
        flow: Option<(std::net::SocketAddr, std::net::SocketAddr)>,
    ) -> QueueProbe {
        let steering = zcrx::steering::report(&interface);
        let flow = flow.map(|(peer, local)| FlowQueue {
            peer,
            local,
            queue: steering.queue_for(peer, local),
        });
        QueueProbe {
            result: zcrx::probe::probe_queue(&interface, queue),
            interface,
            queue,
            steering,
            flow,
        }
    }
}

/// A reading as text: the value through `f`, or `unknown:` and the reason.
fn show<T>(r: &Reading<T>, f: impl Fn(&T) -> String) -> String {
    match r {
        Reading::Known(v) => f(v),
        Reading::Unavailable(why) => format!("unknown: {why}"),
    }
}

fn render_steering(out: &mut String, s: &SteeringReport, flow: Option<&FlowQueue>) {
    let _ = writeln!(out, "\nsteering on {}", s.interface);
    let _ = writeln!(
        out,
        "  rx queues        {}",
        show(&s.rx_queues, u32::to_string)
    );
    let or_not = |v: Option<u32>| v.map_or("not reported".to_owned(), |n| n.to_string());
    let rings = show(&s.rings, |r| {
        let split = match r.tcp_data_split {
            Some(DataSplit::Enabled) => "on",
            Some(DataSplit::Disabled) => "off",
            Some(DataSplit::Unknown) => "unknown",
            None => "not reported",
        };
        format!(
            "header/data split {split}, hds-thresh {}, rx ring {}",
            or_not(r.hds_thresh),
            or_not(r.rx)
        )
    });
    let _ = writeln!(out, "  rings            {rings}");
    let rss = show(&s.rss, |r| {
        if r.indirection.is_empty() {
            return "the device reports no indirection table".to_owned();
        }
        let queues: std::collections::BTreeSet<u32> = r.indirection.iter().copied().collect();
        format!(
            "hash function {}, {}-byte key, {} table entries over queues {queues:?}",
            r.hash_function.map_or("?".into(), |f| format!("{f:#x}")),
            r.key.len(),
            r.indirection.len(),
        )
    });
    let _ = writeln!(out, "  rss              {rss}");
    let rules = show(&s.flow_rules, |rules| {
        if rules.is_empty() {
            return "none".to_owned();
        }
        let each: Vec<String> = rules
            .iter()
            .map(|r| {
                format!(
                    "#{} {} {}:{} -> {}",
                    r.location,
                    r.flow,
                    r.dst_ip.map_or("*".into(), |ip| ip.to_string()),
                    r.dst_port,
                    r.queue.map_or("drop".into(), |q| format!("queue {q}"))
                )
            })
            .collect();
        each.join("; ")
    });
    let _ = writeln!(out, "  ntuple rules     {rules}");
    let queues = show(&s.queues, |queues| {
        if queues.is_empty() {
            return "none listed".to_owned();
        }
        let each: Vec<String> = queues
            .iter()
            .map(|q| {
                let napi = q.napi_id.map_or("no napi".into(), |n| format!("napi {n}"));
                let zc = if q.io_uring { ", io_uring bound" } else { "" };
                format!("{} ({napi}{zc})", q.id)
            })
            .collect();
        each.join(", ")
    });
    let _ = writeln!(out, "  rx queue list    {queues}");
    for problem in s.zero_copy_problems() {
        let _ = writeln!(out, "  for zero-copy    {problem}");
    }
    if let Some(f) = flow {
        let answer = match &f.queue {
            Ok(c) => format!("queue {} (by {})", c.queue, c.by),
            Err(why) => format!("cannot tell: {why}"),
        };
        let _ = writeln!(out, "  flow {} -> {}: {answer}", f.peer, f.local);
    }
}

/// A comma-separated list, or `none`.
fn list(items: Vec<String>) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// The report as a table for a person.
pub fn render_text(caps: &Capabilities, queue: Option<&QueueProbe>) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail; the results are ignored for that reason.
    let _ = writeln!(out, "zerorx doctor");
    let _ = writeln!(out, "  kernel           {}", caps.kernel_release);
    let _ = writeln!(out, "  page size        {} bytes", caps.page_size);

    let _ = writeln!(out, "\nio_uring");
    match &caps.io_uring.problem {
        None => {
            let _ = writeln!(out, "  usable           yes");
        }
        Some(block) => {
            let _ = writeln!(out, "  usable           no: {block}");
            let _ = writeln!(out, "  fix              {}", block.fix());
        }
    }

    let _ = writeln!(out, "\nsetup flags");
    for f in &caps.setup_flags {
        let err = f
            .error
            .as_deref()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        let _ = writeln!(out, "  {:<16} {}{err}", f.name, yes_no(f.supported));
    }

    let _ = writeln!(out, "\nopcodes");
    if let Some(err) = &caps.opcode_probe_error {
        let _ = writeln!(
            out,
            "  probe failed ({err}); every opcode reads as unsupported"
        );
    }
    for o in &caps.opcodes {
        let _ = writeln!(out, "  {:<16} {}", o.name, yes_no(o.supported));
    }
    let b = &caps.buffer_rings;
    let _ = writeln!(out, "  {:<16} {}", "buffer rings", yes_no(b.provided_ring));
    let _ = writeln!(out, "  {:<16} {}", "bundles", yes_no(b.bundle));
    let _ = writeln!(out, "  {:<16} {}", "incremental", yes_no(b.incremental));

    let _ = writeln!(out, "\nQUERY (IORING_REGISTER_QUERY)");
    let q = &caps.query;
    match (&q.opcodes, &q.error) {
        (Some(op), _) => {
            let _ = writeln!(out, "  present          yes");
            let _ = writeln!(
                out,
                "  opcodes          {} request, {} register, {} query; setup mask {:#x}",
                op.nr_request_opcodes,
                op.nr_register_opcodes,
                op.nr_query_opcodes,
                op.ring_setup_flags
            );
        }
        (None, err) => {
            let why = err.as_deref().unwrap_or("no answer");
            let _ = writeln!(out, "  present          {} ({why})", yes_no(q.present));
        }
    }
    if let Some(op) = &q.opcodes {
        let _ = writeln!(
            out,
            "  query ops        {}",
            list(names::query_ops(op.nr_query_opcodes))
        );
    }
    match (&q.zcrx, &q.zcrx_error) {
        (Some(z), _) => {
            let _ = writeln!(
                out,
                "  zcrx             register_flags {:#x}, area_flags {:#x}, {} ctrl ops, features {:#x}",
                z.register_flags, z.area_flags, z.nr_ctrl_opcodes, z.features
            );
            for (label, named) in [
                ("register flags", names::register_flags(z.register_flags)),
                ("area flags", names::area_flags(z.area_flags)),
                ("ctrl ops", names::ctrl_ops(z.nr_ctrl_opcodes)),
                ("features", names::features(z.features)),
            ] {
                let _ = writeln!(out, "  {label:<16} {}", list(named));
            }
        }
        (None, Some(err)) => {
            let _ = writeln!(out, "  zcrx             not answered ({err}): Linux < 6.19");
        }
        (None, None) => {
            let _ = writeln!(out, "  zcrx             not asked");
        }
    }
    if let Some(s) = &q.scq {
        let _ = writeln!(
            out,
            "  scq              ring header {} bytes, aligned to {}",
            s.hdr_size, s.hdr_alignment
        );
    }
    if let Some(e) = &q.zcrx_event {
        let _ = writeln!(
            out,
            "  zcrx events      {}; stats block {} bytes, offset aligned to {}",
            list(names::event_types(e.event_flags)),
            e.stats_size,
            e.stats_off_alignment
        );
    }

    let z = &caps.zcrx;
    let _ = writeln!(out, "\nZCRX features");
    let mut row = |name: &str, value: String| {
        let _ = writeln!(out, "  {name:<16} {value}");
    };
    row("RECV_ZC", yes_no(z.recv_zc).into());
    let built = match caps.zcrx_in_kernel {
        Some(b) => yes_no(b).to_owned(),
        None => "unknown".to_owned(),
    };
    row("in kernel", built);
    row(
        "from query",
        if z.query {
            "yes".into()
        } else {
            "no (fallback rules)".into()
        },
    );
    row("import", yes_no(z.import).into());
    row("nodev", yes_no(z.nodev).into());
    row("dmabuf", yes_no(z.dmabuf).into());
    row("flush_rq", yes_no(z.flush_rq).into());
    row("export", yes_no(z.export).into());
    row("rx_page_size", yes_no(z.rx_page_size).into());
    row("events", yes_no(z.events).into());
    row("add_area", yes_no(z.add_area).into());
    row("multi per ring", yes_no(z.multiple_per_ring).into());
    row(
        "rq header",
        format!(
            "{} bytes, entries aligned to {}",
            z.rq_hdr_size, z.rq_hdr_alignment
        ),
    );

    let _ = writeln!(out, "\ninterfaces (ZCRX on queue 0)");
    for i in &caps.interfaces {
        let driver = i.driver.as_deref().unwrap_or("-");
        let parent = if i.has_parent_device {
            "device"
        } else {
            "no device"
        };
        let _ = writeln!(
            out,
            "  {:<10} #{:<3} {driver:<12} {parent:<9} {} rx queues",
            i.name, i.ifindex, i.rx_queues
        );
        render_verdict(&mut out, &i.queue0);
    }
    if let Some(p) = queue {
        let _ = writeln!(out, "\nqueue {} of {}", p.queue, p.interface);
        render_verdict(&mut out, &p.result);
        render_steering(&mut out, &p.steering, p.flow.as_ref());
    }

    let m = &caps.receive_mode;
    let _ = writeln!(out, "\nreceive mode: {}", m.mode);
    if let (Some(i), Some(q)) = (&m.interface, m.queue) {
        let _ = writeln!(out, "  bind             {i} queue {q}");
    }
    let _ = writeln!(out, "  reason           {}", m.reason);
    let nodev = if caps.nodev_testing {
        "available: ZCRX_REG_NODEV can exercise RECV_ZC on loopback"
    } else {
        "not available (ZCRX_REG_NODEV needs Linux 7.1+)"
    };
    let _ = writeln!(out, "  nodev testing    {nodev}");
    out
}

fn render_verdict(out: &mut String, verdict: &ZcrxVerdict) {
    match verdict {
        ZcrxVerdict::Possible => {
            let _ = writeln!(out, "      ZCRX possible");
        }
        ZcrxVerdict::Unavailable(reason) => {
            let _ = writeln!(out, "      ZCRX not possible: {reason}");
            let _ = writeln!(out, "      fix: {}", reason.fix());
        }
    }
}

/// The runtime's tunable settings as a default [`Builder`](crate::Builder) would take
/// them here: each `ZERORX_*` variable, its value and where it came from.
pub fn render_tuning(tuning: &std::io::Result<Vec<crate::runtime::tuning::Setting>>) -> String {
    let mut out = String::from("\ntuning (ZERORX_* environment; a value set in code wins)\n");
    match tuning {
        Ok(settings) => {
            for s in settings {
                let _ = writeln!(out, "  {:<20} {} ({})", s.variable, s.value, s.source);
            }
        }
        Err(e) => {
            let _ = writeln!(out, "  invalid: {e}");
        }
    }
    out
}

/// The report as pretty JSON: the [`Capabilities`] object, plus `queue_probe` if asked
/// and `tuning` (or `tuning_error`).
pub fn render_json(
    caps: &Capabilities,
    queue: Option<&QueueProbe>,
    tuning: &std::io::Result<Vec<crate::runtime::tuning::Setting>>,
) -> Result<String, serde_json::Error> {
    let mut value = serde_json::to_value(caps)?;
    if let Some(map) = value.as_object_mut() {
        if let Some(p) = queue {
            map.insert("queue_probe".to_owned(), serde_json::to_value(p)?);
        }
        match tuning {
            Ok(t) => map.insert("tuning".to_owned(), serde_json::to_value(t)?),
            Err(e) => map.insert("tuning_error".to_owned(), e.to_string().into()),
        };
    }
    serde_json::to_string_pretty(&value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Command, UsageError> {
        parse_args(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn doctor_forms() {
        assert_eq!(
            parse(&["doctor"]),
            Ok(Command::Doctor(DoctorArgs::default()))
        );
        assert_eq!(
            parse(&["doctor", "--json"]),
            Ok(Command::Doctor(DoctorArgs {
                json: true,
                queue: None,
                flow: None,
                require: vec![]
            }))
        );
        assert_eq!(
            parse(&["doctor", "--interface", "eth0", "--queue", "3", "--json"]),
            Ok(Command::Doctor(DoctorArgs {
                json: true,
                queue: Some(("eth0".into(), 3)),
                flow: None,
                require: vec![]
            }))
        );
        assert_eq!(
            parse(&["doctor", "--queue=2", "--interface=lo"]),
            Ok(Command::Doctor(DoctorArgs {
                json: false,
                queue: Some(("lo".into(), 2)),
                flow: None,
                require: vec![]
            }))
        );
        assert_eq!(
            parse(&["doctor", "--interface", "eth0"]),
            Ok(Command::Doctor(DoctorArgs {
                json: false,
                queue: Some(("eth0".into(), 0)),
                flow: None,
                require: vec![]
            }))
        );
    }

    #[test]
    fn require_lists_features_and_refuses_unknown_ones() {
        assert_eq!(
            parse(&["doctor", "--require", "nodev,events", "--require=add-area"]),
            Ok(Command::Doctor(DoctorArgs {
                require: vec![
                    Requirement::Nodev,
                    Requirement::Events,
                    Requirement::AddArea
                ],
                ..DoctorArgs::default()
            }))
        );
        for (name, r) in Requirement::ALL {
            assert_eq!(name.parse::<Requirement>(), Ok(r));
            assert_eq!(r.name(), name);
        }
        let err = parse(&["doctor", "--require", "nodev,zerocopy"]).expect_err("unknown");
        assert!(err.0.contains("unknown feature `zerocopy`"), "{err}");
        assert!(err.0.contains("add-area"), "lists the names: {err}");
        assert!(parse(&["doctor", "--require"]).is_err());
    }

    #[test]
    fn a_missing_requirement_names_the_kernel_and_what_it_lacks() {
        let mut caps = zcrx::probe::capabilities().clone();
        caps.kernel_release = "6.18.0-test".into();
        caps.zcrx = zcrx::ZcrxFeatures {
            recv_zc: true,
            nodev: true,
            ..Default::default()
        };
        assert_eq!(Requirement::Nodev.missing(&caps), None);
        assert_eq!(Requirement::RecvZc.missing(&caps), None);
        let events = Requirement::Events.missing(&caps).expect("missing");
        assert_eq!(
            events,
            "events is required but kernel 6.18.0-test lacks ZCRX_FEATURE_EVENT with \
             ZCRX_CTRL_ARM_EVENT (Linux 7.2+)"
        );
        for r in [
            Requirement::Import,
            Requirement::Export,
            Requirement::FlushRq,
            Requirement::RxPageSize,
            Requirement::AddArea,
        ] {
            let why = r.missing(&caps).expect("missing");
            assert!(why.starts_with(r.name()) && why.contains("Linux"), "{why}");
        }
    }

    #[test]
    fn flow_takes_two_addresses_and_an_interface() {
        let peer: std::net::SocketAddr = "10.0.0.1:40000".parse().expect("addr");
        let local: std::net::SocketAddr = "10.0.0.2:9090".parse().expect("addr");
        assert_eq!(
            parse(&[
                "doctor",
                "--interface",
                "eth1",
                "--flow",
                "10.0.0.1:40000,10.0.0.2:9090"
            ]),
            Ok(Command::Doctor(DoctorArgs {
                queue: Some(("eth1".into(), 0)),
                flow: Some((peer, local)),
                ..DoctorArgs::default()
            }))
        );
        let err = parse(&["doctor", "--flow", "10.0.0.1:1,10.0.0.2:2"]).expect_err("no interface");
        assert_eq!(err.0, "--flow needs --interface");
        for bad in ["10.0.0.1:1", "10.0.0.1,10.0.0.2", "a:1,b:2", ""] {
            let err = parse(&["doctor", "--interface", "lo", "--flow", bad]).expect_err(bad);
            assert!(err.0.contains("PEER,LOCAL"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_steering_section_shows_rules_rss_problems_and_the_flow() {
        use zcrx::steering::{FlowRule, Rings, Rss};
        let steering = SteeringReport {
            interface: "eth1".into(),
            rx_queues: Reading::Known(4),
            rings: Reading::Known(Rings {
                rx: Some(1024),
                rx_max: Some(4096),
                tcp_data_split: Some(DataSplit::Disabled),
                hds_thresh: Some(0),
                hds_thresh_max: None,
            }),
            rss: Reading::Known(Rss {
                hash_function: Some(1),
                key: vec![0x6d; 40],
                indirection: (0..128).map(|i| i % 4).collect(),
            }),
            flow_rules: Reading::Known(vec![FlowRule {
                location: 5,
                flow: "tcp4".into(),
                dst_ip: None,
                dst_port: 9090,
                queue: Some(2),
            }]),
            queues: Reading::Known(vec![
                zcrx::steering::RxQueue {
                    id: 0,
                    napi_id: Some(8193),
                    io_uring: false,
                },
                zcrx::steering::RxQueue {
                    id: 2,
                    napi_id: Some(8195),
                    io_uring: true,
                },
            ]),
        };
        let peer = "10.0.0.1:40000".parse().expect("addr");
        let local = "10.0.0.2:9090".parse().expect("addr");
        let flow = FlowQueue {
            peer,
            local,
            queue: steering.queue_for(peer, local),
        };
        let mut out = String::new();
        render_steering(&mut out, &steering, Some(&flow));
        for want in [
            "rx queues        4",
            "header/data split off, hds-thresh 0, rx ring 1024",
            "hash function 0x1, 40-byte key, 128 table entries over queues {0, 1, 2, 3}",
            "#5 tcp4 *:9090 -> queue 2",
            "rx queue list    0 (napi 8193), 2 (napi 8195, io_uring bound)",
            "for zero-copy    header/data split is off",
            "flow 10.0.0.1:40000 -> 10.0.0.2:9090: queue 2 (by ntuple rule 5)",
        ] {
            assert!(out.contains(want), "{want:?} missing from:\n{out}");
        }
    }

    #[test]
    fn help_forms() {
        for args in [&["--help"][..], &["-h"], &["help"], &["doctor", "--help"]] {
            assert_eq!(parse(args), Ok(Command::Help), "{args:?}");
        }
    }

    #[test]
    fn bad_command_lines() {
        let cases: [&[&str]; 9] = [
            &[],
            &["frobnicate"],
            &["doctor", "--queue", "1"],
            &["doctor", "--queue", "x", "--interface", "lo"],
            &["doctor", "--queue", "-1", "--interface", "lo"],
            &["doctor", "--interface"],
            &["doctor", "--interface="],
            &["doctor", "--json=yes"],
            &["doctor", "--verbose"],
        ];
        for args in cases {
            assert!(parse(args).is_err(), "{args:?} accepted");
        }
        assert_eq!(
            parse(&["doctor", "--queue", "1"]),
            Err(UsageError("--queue needs --interface".into()))
        );
    }
}
