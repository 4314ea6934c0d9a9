//! `zerorx-thrift-test-server`: the ThriftTest server for Apache Thrift's
//! cross-language test (`test/test.py`, entry in `thrift-test/tests.json`). Prints
//! `listening on ADDR` when ready (`listening on unix:PATH`, or `unix:@NAME` for an
//! abstract name, with `--domain-socket`); SIGINT, SIGTERM or SIGHUP (the runner's
//! stop) end it within a second.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::SocketAddr as UnixAddr;
use std::process::ExitCode;
use std::time::Duration;
use zerorx::signal::SignalKind;
use zerorx_thrift::server::{ProtocolChoice, TransportChoice};
use zerorx_thrift::{DecodeLimits, Server, ServerBuilder};
use zerorx_thrift_test::flags::{Flags, Wire, USAGE};
use zerorx_thrift_test::generated::thrift_test::{SecondServiceServer, ThriftTestServer};
use zerorx_thrift_test::handlers::{SecondHandler, TestHandler};

fn main() -> ExitCode {
    let flags = match Flags::parse(std::env::args().skip(1)) {
        Ok(Some(f)) => f,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("zerorx-thrift-test-server: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match serve(&flags) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("zerorx-thrift-test-server: {e}");
            ExitCode::from(1)
        }
    }
}

fn transport(framed: bool) -> TransportChoice {
    if framed {
        TransportChoice::Framed
    } else {
        TransportChoice::Unframed
    }
}

/// The server the flags describe, before it is bound.
fn builder(flags: &Flags) -> ServerBuilder {
    let mut limits = DecodeLimits::default();
    if let Some(n) = flags.string_limit {
        limits.max_string_len = n;
    }
    if let Some(n) = flags.container_limit {
        limits.max_container_len = n;
    }
    let (protocol, transport) = match (flags.wire, flags.framed) {
        // Header frames (inside plain frames with --transport=framed) and the plain
        // clients Apache's header servers also take: every kind is told apart per
        // connection.
        (Wire::Header, _) => (ProtocolChoice::Auto, TransportChoice::Auto),
        (Wire::Binary, framed) => (ProtocolChoice::Binary, transport(framed)),
        (Wire::Compact, framed) => (ProtocolChoice::Compact, transport(framed)),
    };
    let builder = Server::builder()
        .protocol(protocol)
        .transport(transport)
        .limits(limits)
        .service(ThriftTestServer::new(TestHandler));
    if !flags.multiplexed {
        return builder;
    }
    builder
        .multiplexed("ThriftTest", ThriftTestServer::new(TestHandler))
        .multiplexed("SecondService", SecondServiceServer::new(SecondHandler))
}

fn serve(flags: &Flags) -> std::io::Result<()> {
    let rt = zerorx::Runtime::builder().threads(flags.workers).build()?;
    let (server, shown) = match &flags.domain_socket {
        // A domain socket replaces TCP, as in Apache's servers (the port is unused).
        Some(path) => {
            let (addr, shown) = if flags.abstract_namespace {
                let name = path.as_os_str().as_bytes();
                let addr = UnixAddr::from_abstract_name(name)?;
                (addr, format!("unix:@{}", path.display()))
            } else {
                let addr = UnixAddr::from_pathname(path).map_err(|e| {
                    std::io::Error::new(
                        e.kind(),
                        format!("--domain-socket={}: {e}", path.display()),
                    )
                })?;
                (addr, format!("unix:{}", path.display()))
            };
            (builder(flags).unix_addr(addr).start(rt.handle())?, shown)
        }
        None => {
            // Both address families, as Apache's servers listen (clients given
            // `localhost` may try ::1 first); IPv4 alone where IPv6 is off.
            let v6 = SocketAddr::from((Ipv6Addr::UNSPECIFIED, flags.port));
            let server = match builder(flags).addr(v6).start(rt.handle()) {
                Ok(s) => s,
                Err(_) => builder(flags)
                    .addr(SocketAddr::from((Ipv4Addr::UNSPECIFIED, flags.port)))
                    .start(rt.handle())?,
            };
            let shown = server.local_addr().to_string();
            (server, shown)
        }
    };
    // Listening before the address is printed: the cross-test runner sends SIGHUP
    // as soon as its client is done.
    let stop = zerorx_cli::signals::listen(&[
        SignalKind::interrupt(),
        SignalKind::terminate(),
        SignalKind::hangup(),
    ])?;
    println!("listening on {shown}");
    let shutdown = server.shutdown_handle();
    rt.block_on(async move {
        zerorx_cli::signals::on_first(stop, move |_| shutdown.shutdown(Duration::from_millis(500)));
        server.stopped().await
    })?;
    rt.shutdown(Duration::from_secs(1))
}
