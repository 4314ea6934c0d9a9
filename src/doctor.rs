//! `zerorx doctor`: argument parsing and rendering of the kernel capability report.
//!
//! The binary in `src/bin/zerorx.rs` only wires these pieces to stdout, stderr and the
//! exit code, so everything here is testable without spawning a process.

use serde::Serialize;
use std::fmt::Write as _;
use zcrx::probe::{Capabilities, ZcrxVerdict};

/// Usage text, printed for `--help` and (on stderr) after a bad argument.
pub const USAGE: &str = "\
usage: zerorx doctor [--json] [--interface IF [--queue Q]]
       zerorx serve --port P [--protocol binary|compact|auto] [--threads N] [...]
       zerorx --help

  doctor           report what io_uring and zero-copy receive (ZCRX) can do here
  --json           print the report as JSON instead of a table
  --interface IF   also try a ZCRX registration on interface IF (queue 0 by default)
  --queue Q        the receive queue to try on IF (needs --interface)
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
    Ok(Command::Doctor(DoctorArgs { json, queue }))
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
    match (&q.zcrx, &q.zcrx_error) {
        (Some(z), _) => {
            let _ = writeln!(
                out,
                "  zcrx             register_flags {:#x}, area_flags {:#x}, {} ctrl ops, features {:#x}",
                z.register_flags, z.area_flags, z.nr_ctrl_opcodes, z.features
            );
        }
        (None, Some(err)) => {
            let _ = writeln!(out, "  zcrx             not answered ({err}): Linux < 6.19");
        }
        (None, None) => {
            let _ = writeln!(out, "  zcrx             not asked");
        }
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

/// The report as pretty JSON: the [`Capabilities`] object, plus `queue_probe` if asked.
pub fn render_json(
    caps: &Capabilities,
    queue: Option<&QueueProbe>,
) -> Result<String, serde_json::Error> {
    let mut value = serde_json::to_value(caps)?;
    if let (Some(p), Some(map)) = (queue, value.as_object_mut()) {
        map.insert("queue_probe".to_owned(), serde_json::to_value(p)?);
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
                queue: None
            }))
        );
        assert_eq!(
            parse(&["doctor", "--interface", "eth0", "--queue", "3", "--json"]),
            Ok(Command::Doctor(DoctorArgs {
                json: true,
                queue: Some(("eth0".into(), 3))
            }))
        );
        assert_eq!(
            parse(&["doctor", "--queue=2", "--interface=lo"]),
            Ok(Command::Doctor(DoctorArgs {
                json: false,
                queue: Some(("lo".into(), 2))
            }))
        );
        assert_eq!(
            parse(&["doctor", "--interface", "eth0"]),
            Ok(Command::Doctor(DoctorArgs {
                json: false,
                queue: Some(("eth0".into(), 0))
            }))
        );
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
