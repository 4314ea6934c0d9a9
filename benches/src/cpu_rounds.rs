//! What the CPU-per-GB examples (`proxy_bench`, `send_bench`) share: a loopback sink
//! that discards what it reads, and the table of their interleaved rounds, each
//! contender's CPU against the peer measured in the same rounds.

use crate::report::Spread;
use std::io::Read;
use std::net::{SocketAddr, TcpListener};

/// A sink on 127.0.0.1 that reads every connection to its end, a thread each.
pub fn discard_sink() -> std::io::Result<SocketAddr> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut c = c;
                let mut buf = vec![0u8; 256 << 10];
                while matches!(c.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    Ok(addr)
}

/// The rounds' results of contenders `names`, the last of them the peer: per round,
/// CPU seconds per GB and GB/s.
pub struct CpuRounds {
    names: Vec<&'static str>,
    cpu: Vec<Vec<f64>>,
    rate: Vec<Vec<f64>>,
}

impl CpuRounds {
    /// Rounds of `names` (the last is the peer the others are compared with).
    pub fn new(names: &[&'static str]) -> CpuRounds {
        CpuRounds {
            names: names.to_vec(),
            cpu: vec![Vec::new(); names.len()],
            rate: vec![Vec::new(); names.len()],
        }
    }

    /// Records contender `i`'s round.
    pub fn push(&mut self, i: usize, cpu_per_gb: f64, gb_per_s: f64) {
        self.cpu[i].push(cpu_per_gb);
        self.rate[i].push(gb_per_s);
    }

    /// The table: median [min-max] of CPU per GB and GB/s, and each contender's
    /// per-round CPU ratio to the peer.
    pub fn table(&self, what: &str) -> String {
        let peer = self.names.len() - 1;
        let spread =
            |v: &[f64]| Spread::of(v).map_or((0.0, 0.0, 0.0), |s| (s.median, s.min, s.max));
        let mut out = format!(
            "{what:<14} CPU-s per GB median [min-max]   GB/s median [min-max]   CPU vs {} per round\n",
            self.names[peer]
        );
        for (i, name) in self.names.iter().enumerate() {
            let (c, c0, c1) = spread(&self.cpu[i]);
            let (g, g0, g1) = spread(&self.rate[i]);
            let ratio = if i == peer {
                "-".to_string()
            } else {
                let ratios: Vec<f64> = self.cpu[i]
                    .iter()
                    .zip(&self.cpu[peer])
                    .map(|(a, b)| a / b)
                    .collect();
                let (m, lo, hi) = spread(&ratios);
                format!("{m:.2}x [{lo:.2}-{hi:.2}]")
            };
            out += &format!(
                "{name:<14} {c:>8.3} [{c0:.3}-{c1:.3}]        {g:>6.2} [{g0:.2}-{g1:.2}]        {ratio}\n"
            );
        }
        out
    }
}
