//! The TLS benchmark: the two ways zerorx runs rustls, side by side, rounds
//! interleaved. `compat`: futures-rustls over `TcpStream::compat()`; `direct`:
//! `zerorx::tls` (rustls driven by the receive buffers). Each cell sends a bulk transfer from a client on worker
//! 0 to a server on worker 1 of one runtime, both sides in the cell's mode, over
//! loopback, and reports MB/s and process CPU per MiB.

use crate::procfs;
use crate::report::Spread;
use futures_util::io::{AsyncReadExt, AsyncWriteExt};
use std::io;
use std::sync::Arc;
use std::time::Instant;
use zerorx::net::{TcpListener, TcpStream};
use zerorx::tls::rustls;

/// Command-line help.
pub const USAGE: &str = "\
tls benchmark: futures-rustls over compat() vs rustls driven by the receive buffers
cargo bench -p zerorx-bench --bench tls -- [--rounds N] [--mib M] [--smoke]
  --rounds N   interleaved rounds (default 5)
  --mib M      MiB sent per cell (default 256)
  --smoke      1 round of 4 MiB: checks every byte arrives, no figures
";

/// The two ways.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Compat,
    Direct,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Compat => "compat",
            Mode::Direct => "direct",
        }
    }
}

type Io = Box<dyn Stream>;

/// Either TLS stream.
trait Stream: futures_util::AsyncRead + futures_util::AsyncWrite + Unpin {}
impl<T: futures_util::AsyncRead + futures_util::AsyncWrite + Unpin> Stream for T {}

struct Configs {
    server: Arc<rustls::ServerConfig>,
    client: Arc<rustls::ClientConfig>,
}

fn configs() -> io::Result<Configs> {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
        .map_err(io::Error::other)?;
    let der = made.cert.der().clone();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(made.key_pair.serialize_der().into());
    let server = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![der.clone()], key)
        .map_err(io::Error::other)?;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(der).map_err(io::Error::other)?;
    let client = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Configs {
        server: Arc::new(server),
        client: Arc::new(client),
    })
}

async fn accept(mode: Mode, s: TcpStream, c: Arc<rustls::ServerConfig>) -> io::Result<Io> {
    Ok(match mode {
        Mode::Compat => Box::new(
            futures_rustls::TlsAcceptor::from(c)
                .accept(s.compat())
                .await?,
        ),
        Mode::Direct => Box::new(zerorx::tls::accept(s, c).await?),
    })
}

async fn connect(mode: Mode, s: TcpStream, c: Arc<rustls::ClientConfig>) -> io::Result<Io> {
    let name = rustls::pki_types::ServerName::try_from("localhost").map_err(io::Error::other)?;
    Ok(match mode {
        Mode::Compat => Box::new(
            futures_rustls::TlsConnector::from(c)
                .connect(name, s.compat())
                .await?,
        ),
        Mode::Direct => Box::new(zerorx::tls::connect(s, c, name).await?),
    })
}

/// Byte `i` of the transfer.
fn byte(i: usize) -> u8 {
    (i * 31 + i / 4093) as u8
}

/// One cell: (seconds, process CPU seconds) to move `total` bytes.
fn measure(mode: Mode, cfg: &Configs, total: usize) -> io::Result<(f64, f64)> {
    let rt = zerorx::Runtime::builder().threads(2).build()?;
    let handle = rt.handle().clone();
    let (server_cfg, client_cfg) = (cfg.server.clone(), cfg.client.clone());
    let cpu0 = procfs::process_cpu_secs(std::process::id())?;
    let start = Instant::now();
    rt.block_on(async move {
        let (tx, rx) = std::sync::mpsc::channel();
        let server = handle.spawn_on_with(1, move || async move {
            let l = TcpListener::bind("127.0.0.1:0".parse().expect("addr"))?;
            let _ = tx.send(l.local_addr());
            let (s, _) = l.accept().await?;
            let mut tls = accept(mode, s, server_cfg).await?;
            let mut buf = vec![0u8; 256 << 10];
            let mut got = 0usize;
            while got < total {
                let n = tls.read(&mut buf).await?;
                if n == 0 {
                    return Err(io::Error::other(format!(
                        "ended after {got} of {total} bytes"
                    )));
                }
                if buf[..n]
                    .iter()
                    .enumerate()
                    .any(|(k, &b)| b != byte(got + k))
                {
                    return Err(io::Error::other(format!("a wrong byte near {got}")));
                }
                got += n;
            }
            tls.write_all(b"k").await?;
            tls.flush().await?;
            Ok::<(), io::Error>(())
        });
        let addr = rx.recv().map_err(io::Error::other)??;
        let s = TcpStream::connect(addr).await?;
        let mut tls = connect(mode, s, client_cfg).await?;
        let mut chunk = vec![0u8; 64 << 10];
        let mut sent = 0usize;
        while sent < total {
            let n = chunk.len().min(total - sent);
            for (k, b) in chunk[..n].iter_mut().enumerate() {
                *b = byte(sent + k);
            }
            tls.write_all(&chunk[..n]).await?;
            sent += n;
        }
        tls.flush().await?;
        let mut ack = [0u8; 1];
        tls.read_exact(&mut ack).await?;
        server
            .await
            .map_err(|e| io::Error::other(format!("server task: {e}")))??;
        Ok::<(), io::Error>(())
    })?;
    let secs = start.elapsed().as_secs_f64();
    let cpu = procfs::process_cpu_secs(std::process::id())? - cpu0;
    Ok((secs, cpu))
}

/// Runs the benchmark; the process exit code.
pub fn main_with_args(args: Vec<String>) -> i32 {
    let (mut rounds, mut mib, mut smoke) = (5usize, 256usize, false);
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        let mut num = || {
            it.next()
                .and_then(|v| v.parse::<usize>().ok())
                .filter(|&v| v > 0)
        };
        match a.as_str() {
            "--bench" => {}
            "--rounds" => match num() {
                Some(n) => rounds = n,
                None => return usage("--rounds takes a positive count"),
            },
            "--mib" => match num() {
                Some(n) => mib = n,
                None => return usage("--mib takes a positive count"),
            },
            "--smoke" => {
                smoke = true;
                rounds = 1;
                mib = 4;
            }
            other => return usage(&format!("unknown option {other}")),
        }
    }
    let cfg = match configs() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tls bench: certificate: {e}");
            return 1;
        }
    };
    let total = mib << 20;
    let mut cells: Vec<(usize, Mode, f64, f64)> = Vec::new();
    for round in 0..rounds {
        let order = if round % 2 == 0 {
            [Mode::Compat, Mode::Direct]
        } else {
            [Mode::Direct, Mode::Compat]
        };
        for mode in order {
            match measure(mode, &cfg, total) {
                Ok((secs, cpu)) => {
                    println!(
                        "round {round} {:6} {:>8.1} MB/s {:>7.3} CPU-ms per MiB",
                        mode.name(),
                        total as f64 / secs / 1e6,
                        cpu * 1e3 / mib as f64
                    );
                    cells.push((
                        round,
                        mode,
                        total as f64 / secs / 1e6,
                        cpu * 1e3 / mib as f64,
                    ));
                }
                Err(e) => {
                    eprintln!("tls bench: {} failed: {e}", mode.name());
                    return 1;
                }
            }
        }
    }
    if smoke {
        println!("tls smoke: {} cells, every byte checked", cells.len());
        return 0;
    }
    println!("\nmedian [min-max] over {rounds} rounds; ratio = direct / compat within a round");
    for (name, pick) in [("MB/s", 2usize), ("CPU-ms per MiB", 3)] {
        let get = |c: &(usize, Mode, f64, f64)| if pick == 2 { c.2 } else { c.3 };
        let of = |m: Mode| {
            cells
                .iter()
                .filter(|c| c.1 == m)
                .map(get)
                .collect::<Vec<_>>()
        };
        let ratios: Vec<f64> = (0..rounds)
            .filter_map(|r| {
                let d = cells.iter().find(|c| c.0 == r && c.1 == Mode::Direct)?;
                let c = cells.iter().find(|c| c.0 == r && c.1 == Mode::Compat)?;
                Some(get(d) / get(c))
            })
            .collect();
        let (Some(c), Some(d), Some(r)) = (
            Spread::of(&of(Mode::Compat)),
            Spread::of(&of(Mode::Direct)),
            Spread::of(&ratios),
        ) else {
            continue;
        };
        println!(
            "  {name:15} compat {:>9.2} [{:.2}-{:.2}]  direct {:>9.2} [{:.2}-{:.2}]  ratio {:.3}x [{:.3}-{:.3}]",
            c.median, c.min, c.max, d.median, d.min, d.max, r.median, r.min, r.max
        );
    }
    0
}

fn usage(why: &str) -> i32 {
    eprintln!("tls bench: {why}\n\n{USAGE}");
    2
}
