//! `--count` for the echo benchmark: W2's 64-byte echo (and W5's 64 KiB one with
//! `--workloads W2,W5`), counted per request for each server (zerorx and tokio
//! current-thread unless `--servers` names others).

use super::Options;
use crate::child;
use crate::count::{self, cli, Exchange, Launch, Ready, Reply, Stop, Target};
use crate::servers::ServerKind;
use crate::workloads::Workload;

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
    let workloads = if rest.iter().any(|a| a.starts_with("--workloads")) {
        opts.workloads.clone()
    } else {
        vec![Workload::W2]
    };
    let mut status = 0;
    for w in workloads {
        let Some((size, ahead)) = request_size(w) else {
            eprintln!(
                "--count counts W2 (64 B) and W5 (64 KiB) request/response and W4 (64 KiB \
                 stream echo), not {}",
                w.id()
            );
            return 2;
        };
        let exchange = Exchange {
            request: (0..size).map(|i| (i as u8).wrapping_mul(37)).collect(),
            reply: Reply::Echo,
            ahead,
        };
        let s = count::cli::main(args, w.id(), exchange, &targets, ServerKind::TokioCt.name());
        status = status.max(s);
    }
    status
}

/// The request size of a workload `--count` can count, and how many requests each
/// connection keeps in flight: the request/response ones, one; W4's stream echo, 64
/// KiB chunks written up to 4 ahead of the echoes read (per chunk, the count is then
/// a stream's cost per 64 KiB, the README's W4 row).
fn request_size(w: Workload) -> Option<(usize, usize)> {
    match w {
        Workload::W2 => Some((64, 1)),
        Workload::W4 => Some((64 * 1024, 4)),
        Workload::W5 => Some((64 * 1024, 1)),
        _ => None,
    }
}
