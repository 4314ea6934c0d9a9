//! `zerorx`'s command line: what it accepts, its usage text and `--require`'s
//! features. The report it prints is the library's ([`zerorx::doctor`]); `main.rs`
//! only wires these pieces to stdout, stderr and the exit code, so everything here is
//! testable without spawning a process.

use zerorx::zcrx::probe::Capabilities;

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
        let mut caps = zerorx::zcrx::probe::capabilities().clone();
        caps.kernel_release = "6.18.0-test".into();
        caps.zcrx = zerorx::zcrx::ZcrxFeatures {
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
