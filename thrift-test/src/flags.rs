//! The flags Apache's cross-test runner passes a server (`test/tests.json`:
//! `--port=N --protocol=P --transport=T`, `--domain-socket=PATH` for its `domain`
//! sockets and `--abstract-namespace` with it for `abstract` ones, plus
//! `--server-type`, `--workers`, `--string-limit`, `--container-limit` from its other
//! suites), read strictly: an option this server cannot honour is an error naming
//! it, not ignored.

use std::fmt;
use std::path::PathBuf;

/// How a connection's messages are encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// TBinaryProtocol.
    Binary,
    /// TCompactProtocol.
    Compact,
    /// THeader, with plain binary and compact clients (framed or not) served too, as
    /// Apache's header servers do; the header names each message's protocol.
    Header,
}

/// What the server was asked to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flags {
    /// Port to listen on, on all interfaces as Apache's servers do (0 picks one).
    /// Unused with a domain socket (the runner passes it anyway).
    pub port: u16,
    /// `--domain-socket=PATH`: listen on this Unix socket instead of TCP.
    pub domain_socket: Option<PathBuf>,
    /// `--abstract-namespace`: the domain socket's path is a Linux abstract name, not
    /// a file.
    pub abstract_namespace: bool,
    /// The protocol of `--protocol`.
    pub wire: Wire,
    /// `multi*`: ThriftTest and SecondService multiplexed (`ThriftTest:` and
    /// `SecondService:` prefixes; unprefixed names reach ThriftTest).
    pub multiplexed: bool,
    /// `--transport=framed` (else buffered, i.e. unframed).
    pub framed: bool,
    /// Worker threads (`--workers`/`-n`, default 2).
    pub workers: usize,
    /// `--string-limit`: longest string or binary accepted.
    pub string_limit: Option<usize>,
    /// `--container-limit`: most elements in one container.
    pub container_limit: Option<usize>,
}

/// A command line this server cannot run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlagError(pub String);

impl fmt::Display for FlagError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FlagError {}

/// The usage text.
pub const USAGE: &str = "usage: zerorx-thrift-test-server [--port=N] \
[--domain-socket=PATH [--abstract-namespace]] \
[--protocol=binary|compact|header|multi|multic|multih] [--transport=buffered|framed] \
[--server-type=simple|thread-pool|threaded|nonblocking] [--workers=N] \
[--string-limit=N] [--container-limit=N]";

impl Flags {
    /// Parses the arguments after the program name. `Ok(None)` for `--help`.
    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Option<Flags>, FlagError> {
        let mut f = Flags {
            port: 9090,
            domain_socket: None,
            abstract_namespace: false,
            wire: Wire::Binary,
            multiplexed: false,
            framed: false,
            workers: 2,
            string_limit: None,
            container_limit: None,
        };
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            if arg == "-h" || arg == "--help" {
                return Ok(None);
            }
            if arg == "--abstract-namespace" {
                f.abstract_namespace = true;
                continue;
            }
            // `--name=value` or `--name value`, as boost::program_options takes them.
            let (name, inline) = match arg.split_once('=') {
                Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
                None => (arg.clone(), None),
            };
            let mut value = || -> Result<String, FlagError> {
                match &inline {
                    Some(v) => Ok(v.clone()),
                    None => args
                        .next()
                        .ok_or_else(|| FlagError(format!("{name} needs a value"))),
                }
            };
            match name.as_str() {
                "--port" => f.port = number(&name, &value()?)?,
                "--domain-socket" => {
                    let v = value()?;
                    if v.is_empty() {
                        return Err(FlagError(format!("{name} needs a path")));
                    }
                    f.domain_socket = Some(PathBuf::from(v));
                }
                "--protocol" => {
                    let v = value()?;
                    (f.wire, f.multiplexed) = match v.as_str() {
                        "binary" => (Wire::Binary, false),
                        "compact" => (Wire::Compact, false),
                        "header" => (Wire::Header, false),
                        "multi" => (Wire::Binary, true),
                        "multic" => (Wire::Compact, true),
                        "multih" => (Wire::Header, true),
                        other => {
                            return Err(FlagError(format!(
                                "--protocol={other} is not served (binary, compact, header, multi, multic, multih are)"
                            )))
                        }
                    };
                }
                "--transport" => {
                    f.framed = match value()?.as_str() {
                        "buffered" => false,
                        "framed" => true,
                        other => {
                            return Err(FlagError(format!(
                                "--transport={other} is not served (buffered, framed are)"
                            )))
                        }
                    }
                }
                // Every kind Apache names is served the same way here: a thread per
                // core, each with its own listener and event loop.
                "--server-type" => match value()?.as_str() {
                    "simple" | "thread-pool" | "threaded" | "nonblocking" => {}
                    other => return Err(FlagError(format!("--server-type={other} is unknown"))),
                },
                "--workers" | "-n" => {
                    f.workers = number(&name, &value()?)?;
                    if f.workers == 0 {
                        return Err(FlagError(format!("{name} must be at least 1")));
                    }
                }
                "--string-limit" => f.string_limit = Some(number(&name, &value()?)?),
                "--container-limit" => f.container_limit = Some(number(&name, &value()?)?),
                other => {
                    return Err(FlagError(format!(
                        "{other} is not supported (TLS, HTTP, zlib and JSON are not served)"
                    )))
                }
            }
        }
        if f.abstract_namespace && f.domain_socket.is_none() {
            return Err(FlagError(
                "--abstract-namespace needs --domain-socket=NAME (the abstract name)".into(),
            ));
        }
        Ok(Some(f))
    }
}

fn number<T: std::str::FromStr>(name: &str, v: &str) -> Result<T, FlagError> {
    v.parse()
        .map_err(|_| FlagError(format!("{name}={v}: not a valid number")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<Flags>, FlagError> {
        Flags::parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn the_runner_s_flags_are_read_in_both_spellings() {
        let f = parse(&["--port=9091", "--protocol", "multic", "--transport=framed"])
            .unwrap()
            .unwrap();
        assert_eq!(
            (f.port, f.wire, f.multiplexed, f.framed),
            (9091, Wire::Compact, true, true)
        );
        let f = parse(&["--string-limit=10", "--container-limit", "3", "-n", "4"])
            .unwrap()
            .unwrap();
        assert_eq!(
            (f.string_limit, f.container_limit, f.workers, f.port),
            (Some(10), Some(3), 4, 9090)
        );
        assert_eq!(parse(&["--help"]), Ok(None));
        // As the runner passes a `domain` socket (the port comes too), and `abstract`.
        let f = parse(&[
            "--protocol=binary",
            "--domain-socket=/tmp/T.thrift.7",
            "--port=7",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            (f.domain_socket.as_deref(), f.abstract_namespace),
            (Some(std::path::Path::new("/tmp/T.thrift.7")), false)
        );
        let f = parse(&["--abstract-namespace", "--domain-socket", "/tmp/T.thrift.8"])
            .unwrap()
            .unwrap();
        assert!(f.abstract_namespace && f.domain_socket.is_some());
    }

    #[test]
    fn what_cannot_be_honoured_is_an_error_naming_it() {
        for (args, needle) in [
            (&["--protocol=json"][..], "--protocol=json"),
            (&["--transport=http"][..], "--transport=http"),
            (&["--ssl"][..], "--ssl"),
            (&["--port=x"][..], "--port=x"),
            (&["--port"][..], "needs a value"),
            (&["--workers=0"][..], "at least 1"),
            (&["--server-type=forking"][..], "forking"),
            (&["--abstract-namespace"][..], "needs --domain-socket"),
            (&["--domain-socket="][..], "needs a path"),
        ] {
            let e = parse(args).expect_err("must fail");
            assert!(e.0.contains(needle), "{args:?}: {e}");
        }
    }
}
