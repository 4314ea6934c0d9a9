//! `--count` for the echo benchmark: W2's 64-byte echo, counted per request for each
//! server (zerorx and tokio current-thread unless `--servers` names others).

use super::Options;
use crate::child;
use crate::count::{self, cli, Exchange, Launch, Ready, Reply, Stop, Target};
use crate::servers::ServerKind;

/// The servers counted when `--servers` is not given.
const DEFAULT_SERVERS: [ServerKind; 2] = [ServerKind::Zerorx, ServerKind::TokioCt];

/// Runs the count with the benchmark's other options in `rest` (`--servers`, the pool
/// size).
pub(super) fn main(args: &cli::Args, rest: &[String]) -> i32 {
    let opts = match Options::parse(rest) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    let servers = if rest.iter().any(|a| a.starts_with("--servers")) {
        opts.servers.clone()
    } else {
        DEFAULT_SERVERS.to_vec()
    };
    let cfg = &opts.server;
    let targets: Vec<Target<'_>> = servers
        .iter()
        .map(|&kind| Target {
            name: kind.name().to_owned(),
            launch: Box::new(move || {
                Ok(Launch {
                    command: child::command(kind, cfg).map_err(|e| e.to_string())?,
                    ready: Ready::ListeningLine,
                    stop: Stop::CloseStdin,
                })
            }),
        })
        .collect();
    let exchange = Exchange {
        request: (0..64u8).map(|i| i.wrapping_mul(37)).collect(),
        reply: Reply::Echo,
    };
    count::cli::main(args, "W2", exchange, &targets, ServerKind::TokioCt.name())
}
