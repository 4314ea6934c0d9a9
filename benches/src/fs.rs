//! The file benchmark: `zerorx::fs` (reads and writes as SQEs on the worker's ring)
//! against `tokio::fs` (each call a job on tokio's blocking pool) and plain `std::fs`
//! on the calling thread, in interleaved rounds on each directory given (a tmpfs and a
//! disk by default):
//! - **write**: a new file of `--size` bytes in 1 MiB writes, then `fsync`;
//! - **read**: that file read back in 1 MiB reads (from the page cache: what a
//!   service re-reading its data sees; the same for all three);
//! - **random 4 KiB**: `--reads` reads of 4 KiB at random aligned offsets, one at a
//!   time (the same offsets for all three).
//!
//! Every byte read is checked against what was written. The table gives, per
//! workload and directory, each one's median [min–max] over the rounds and the
//! zerorx / peer ratios paired within each round (above 1: zerorx is faster).

use crate::report::Spread;
use bytes::{Bytes, BytesMut};
use std::io;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Options of one run.
#[derive(Clone, Debug)]
pub struct FsOptions {
    /// Interleaved rounds.
    pub rounds: usize,
    /// Bytes of the file written and read.
    pub size: u64,
    /// Random 4 KiB reads per round.
    pub reads: usize,
    /// Directories to run in.
    pub dirs: Vec<PathBuf>,
}

/// Command-line help.
pub const USAGE: &str = "\
file benchmark: zerorx::fs against tokio::fs and std::fs

cargo bench -p zerorx-bench --bench fs -- [--rounds N] [--size BYTES] [--reads N] [--dir PATH ...] [--smoke]

Defaults: 3 rounds, 1 GiB, 100000 random reads, in /dev/shm (tmpfs) and in target/ (disk).
";

impl FsOptions {
    /// The defaults: 3 rounds of 1 GiB and 100,000 random reads in /dev/shm and in the
    /// target directory.
    pub fn new() -> FsOptions {
        FsOptions {
            rounds: 3,
            size: 1 << 30,
            reads: 100_000,
            dirs: vec![PathBuf::from("/dev/shm"), default_disk_dir()],
        }
    }

    /// Parses arguments (`--bench` is ignored).
    pub fn parse(args: &[String]) -> Result<FsOptions, String> {
        let mut o = FsOptions::new();
        let mut dirs = Vec::new();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = || it.next().ok_or_else(|| format!("{a} needs a value"));
            let number = |v: &String| {
                v.parse::<u64>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("{a}: expected a whole number above 0, got {v:?}"))
            };
            match a.as_str() {
                "--bench" => {}
                "--smoke" => {
                    o.rounds = 1;
                    o.size = 8 << 20;
                    o.reads = 1_000;
                }
                "--rounds" => o.rounds = number(value()?)? as usize,
                "--size" => o.size = number(value()?)?,
                "--reads" => o.reads = number(value()?)? as usize,
                "--dir" => dirs.push(PathBuf::from(value()?)),
                "-h" | "--help" => return Err(USAGE.into()),
                other => return Err(format!("unknown argument {other:?}\n\n{USAGE}")),
            }
        }
        if !dirs.is_empty() {
            o.dirs = dirs;
        }
        Ok(o)
    }
}

impl Default for FsOptions {
    fn default() -> Self {
        FsOptions::new()
    }
}

/// The disk directory: the cargo target directory's `fs-bench` (on the machine's
/// disk, unlike /dev/shm).
fn default_disk_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"))
        .join("fs-bench")
}

/// The three ways to do file I/O compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Io {
    /// `zerorx::fs` on a one-worker runtime.
    Zerorx,
    /// `zerorx::fs` with registered buffers (`read_fixed_at`/`write_fixed_at`).
    ZerorxFixed,
    /// `tokio::fs` on a current-thread runtime (its blocking pool does the calls).
    Tokio,
    /// `std::fs` on the calling thread.
    Std,
}

const IOS: [Io; 4] = [Io::Zerorx, Io::ZerorxFixed, Io::Tokio, Io::Std];
const CHUNK: usize = 1 << 20;
const PAGE: u64 = 4096;

/// One workload's result in one round.
#[derive(Clone, Debug)]
pub struct FsCell {
    /// Round, from 1.
    pub round: usize,
    /// Directory.
    pub dir: PathBuf,
    /// `write`, `read` or `random 4 KiB`.
    pub workload: &'static str,
    /// Who did it.
    pub io: Io,
    /// MB/s for write and read, thousands of reads per second for random reads.
    pub rate: f64,
}

/// The bytes at `offset` of the benchmark file: a pattern each read can be checked
/// against without keeping the file in memory.
fn byte_at(offset: u64) -> u8 {
    (offset.wrapping_mul(2_654_435_761) >> 13) as u8
}

/// The 1 MiB chunk starting at `offset` (a multiple of `CHUNK`).
fn chunk_at(offset: u64) -> Bytes {
    (0..CHUNK as u64).map(|i| byte_at(offset + i)).collect()
}

fn check(data: &[u8], offset: u64, what: &str) -> io::Result<()> {
    match data
        .iter()
        .enumerate()
        .find(|(i, b)| **b != byte_at(offset + *i as u64))
    {
        None => Ok(()),
        Some((i, _)) => Err(io::Error::other(format!(
            "{what}: wrong byte at offset {}",
            offset + i as u64
        ))),
    }
}

/// The random read offsets (page-aligned), the same for all three.
fn offsets(size: u64, n: usize) -> Vec<u64> {
    let pages = (size / PAGE).max(1);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % pages) * PAGE
        })
        .collect()
}

/// Write, read and random reads of one file by `io`; returns the three rates.
fn measure(io: Io, path: &Path, size: u64, offsets: &[u64]) -> io::Result<[f64; 3]> {
    let chunks: Vec<Bytes> = (0..size.div_ceil(CHUNK as u64))
        .map(|i| chunk_at(i * CHUNK as u64))
        .collect();
    let mb = size as f64 / 1e6;
    match io {
        Io::Zerorx => {
            let rt = zerorx::Runtime::builder().threads(1).build()?;
            rt.block_on(async {
                use zerorx::fs::File;
                let t = Instant::now();
                let f = File::create(path).await?;
                for (i, c) in chunks.iter().enumerate() {
                    let at = i as u64 * CHUNK as u64;
                    let len = (size - at).min(CHUNK as u64) as usize;
                    f.write_all_at(c.slice(..len), at).await?;
                }
                f.sync_all().await?;
                let write = mb / t.elapsed().as_secs_f64();

                let t = Instant::now();
                let f = File::open(path).await?;
                let mut buf = BytesMut::with_capacity(CHUNK);
                let mut at = 0;
                loop {
                    buf.clear();
                    let (n, b) = f.read_at(buf, at).await?;
                    buf = b;
                    if n == 0 {
                        break;
                    }
                    check(&buf, at, "zerorx read")?;
                    at += n as u64;
                }
                let read = mb / t.elapsed().as_secs_f64();

                let t = Instant::now();
                let mut buf = BytesMut::with_capacity(PAGE as usize);
                for &o in offsets {
                    buf.clear();
                    let (n, b) = f.read_at(buf, o).await?;
                    buf = b;
                    check(&buf[..n], o, "zerorx random read")?;
                }
                let random = offsets.len() as f64 / 1e3 / t.elapsed().as_secs_f64();
                Ok([write, read, random])
            })
        }
        Io::ZerorxFixed => {
            let rt = zerorx::Runtime::builder().threads(1).build()?;
            rt.block_on(async {
                use zerorx::fs::{File, FixedBuf};
                let t = Instant::now();
                let f = File::create(path).await?;
                let mut buf = FixedBuf::new(CHUNK)?;
                for (i, c) in chunks.iter().enumerate() {
                    let at = i as u64 * CHUNK as u64;
                    let len = (size - at).min(CHUNK as u64) as usize;
                    buf.clear();
                    buf.extend_from_slice(&c[..len])?;
                    let mut done = 0;
                    while done < len {
                        // A short write leaves the rest for the next call.
                        let (n, b) = f.write_fixed_at(buf, at + done as u64).await?;
                        buf = b;
                        if n == 0 {
                            return Err(io::Error::new(io::ErrorKind::WriteZero, "write_fixed_at"));
                        }
                        done += n;
                        if done < len {
                            let rest = buf[n..].to_vec();
                            buf.clear();
                            buf.extend_from_slice(&rest)?;
                        }
                    }
                }
                f.sync_all().await?;
                let write = mb / t.elapsed().as_secs_f64();

                let t = Instant::now();
                let f = File::open(path).await?;
                let mut at = 0;
                loop {
                    let (n, b) = f.read_fixed_at(buf, at).await?;
                    buf = b;
                    if n == 0 {
                        break;
                    }
                    check(&buf, at, "zerorx fixed read")?;
                    at += n as u64;
                }
                let read = mb / t.elapsed().as_secs_f64();

                let t = Instant::now();
                let mut page = FixedBuf::new(PAGE as usize)?;
                for &o in offsets {
                    let (_, p) = f.read_fixed_at(page, o).await?;
                    page = p;
                    check(&page, o, "zerorx fixed random read")?;
                }
                let random = offsets.len() as f64 / 1e3 / t.elapsed().as_secs_f64();
                Ok([write, read, random])
            })
        }
        Io::Tokio => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            rt.block_on(async {
                use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
                let t = Instant::now();
                let mut f = tokio::fs::File::create(path).await?;
                for (i, c) in chunks.iter().enumerate() {
                    let at = i as u64 * CHUNK as u64;
                    let len = (size - at).min(CHUNK as u64) as usize;
                    f.write_all(&c[..len]).await?;
                }
                f.sync_all().await?;
                let write = mb / t.elapsed().as_secs_f64();

                let t = Instant::now();
                let mut f = tokio::fs::File::open(path).await?;
                let mut buf = vec![0u8; CHUNK];
                let mut at = 0;
                loop {
                    let n = f.read(&mut buf).await?;
                    if n == 0 {
                        break;
                    }
                    check(&buf[..n], at, "tokio read")?;
                    at += n as u64;
                }
                let read = mb / t.elapsed().as_secs_f64();

                let t = Instant::now();
                let mut page = [0u8; PAGE as usize];
                for &o in offsets {
                    f.seek(std::io::SeekFrom::Start(o)).await?;
                    let n = f.read(&mut page).await?;
                    check(&page[..n], o, "tokio random read")?;
                }
                let random = offsets.len() as f64 / 1e3 / t.elapsed().as_secs_f64();
                Ok([write, read, random])
            })
        }
        Io::Std => {
            use std::io::{Read, Write};
            use std::os::unix::fs::FileExt;
            let t = Instant::now();
            let mut f = std::fs::File::create(path)?;
            for (i, c) in chunks.iter().enumerate() {
                let at = i as u64 * CHUNK as u64;
                let len = (size - at).min(CHUNK as u64) as usize;
                f.write_all(&c[..len])?;
            }
            f.sync_all()?;
            let write = mb / t.elapsed().as_secs_f64();

            let t = Instant::now();
            let mut f = std::fs::File::open(path)?;
            let mut buf = vec![0u8; CHUNK];
            let mut at = 0;
            loop {
                let n = f.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                check(&buf[..n], at, "std read")?;
                at += n as u64;
            }
            let read = mb / t.elapsed().as_secs_f64();

            let t = Instant::now();
            let mut page = [0u8; PAGE as usize];
            for &o in offsets {
                let n = f.read_at(&mut page, o)?;
                check(&page[..n], o, "std random read")?;
            }
            let random = offsets.len() as f64 / 1e3 / t.elapsed().as_secs_f64();
            Ok([write, read, random])
        }
    }
}

const WORKLOADS: [&str; 3] = ["write", "read", "random 4 KiB"];

/// Runs every round (the order of the three rotating) in every directory and prints
/// the table.
pub fn run(opts: &FsOptions) -> io::Result<Vec<FsCell>> {
    let offsets = offsets(opts.size, opts.reads);
    let mut cells = Vec::new();
    for dir in &opts.dirs {
        std::fs::create_dir_all(dir)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
        let path = dir.join(format!("zerorx-fs-bench-{}", std::process::id()));
        for round in 1..=opts.rounds {
            for k in 0..IOS.len() {
                let io = IOS[(k + round) % IOS.len()];
                let rates = measure(io, &path, opts.size, &offsets);
                let _ = std::fs::remove_file(&path);
                let rates = rates.map_err(|e| {
                    io::Error::new(e.kind(), format!("{io:?} in {}: {e}", dir.display()))
                })?;
                println!(
                    "r{round} {:<8} {:<12} write {:>8.0} MB/s  read {:>8.0} MB/s  random {:>8.1} k/s",
                    format!("{io:?}"),
                    dir.display(),
                    rates[0],
                    rates[1],
                    rates[2]
                );
                for (w, rate) in WORKLOADS.iter().zip(rates) {
                    cells.push(FsCell {
                        round,
                        dir: dir.clone(),
                        workload: w,
                        io,
                        rate,
                    });
                }
            }
        }
    }
    print!("{}", table(&cells, opts));
    Ok(cells)
}

/// Per directory and workload: each one's median [min–max], and zerorx's ratio to
/// each peer paired within each round.
pub fn table(cells: &[FsCell], opts: &FsOptions) -> String {
    let mut out = format!(
        "\nfiles: {} rounds, {} MiB written and read in 1 MiB calls, {} random 4 KiB reads \
         (MB/s; random: thousands of reads/s; ratio = zerorx / peer, above 1 = zerorx faster)\n\
         {:<14} {:<13} {:>24} {:>24} {:>24} {:>24} {:>20} {:>20} {:>20}\n",
        opts.rounds,
        opts.size >> 20,
        opts.reads,
        "dir",
        "workload",
        "zerorx",
        "zerorx fixed",
        "tokio::fs",
        "std::fs",
        "zerorx / tokio",
        "zerorx / std",
        "fixed / zerorx"
    );
    let fmt = |s: Option<Spread>, digits: usize| {
        s.map_or("-".into(), |s| {
            format!(
                "{:.*} [{:.*}-{:.*}]",
                digits, s.median, digits, s.min, digits, s.max
            )
        })
    };
    for dir in &opts.dirs {
        for w in WORKLOADS {
            let of = |io: Io| -> Vec<&FsCell> {
                cells
                    .iter()
                    .filter(|c| &c.dir == dir && c.workload == w && c.io == io)
                    .collect()
            };
            let rates = |io: Io| Spread::of(&of(io).iter().map(|c| c.rate).collect::<Vec<_>>());
            let ratio = |ours: Io, peer: Io| {
                let v: Vec<f64> = of(ours)
                    .iter()
                    .filter_map(|z| {
                        let p = of(peer).into_iter().find(|p| p.round == z.round)?;
                        (p.rate > 0.0).then(|| z.rate / p.rate)
                    })
                    .collect();
                Spread::of(&v)
            };
            out += &format!(
                "{:<14} {:<13} {:>24} {:>24} {:>24} {:>24} {:>20} {:>20} {:>20}\n",
                dir.display().to_string(),
                w,
                fmt(rates(Io::Zerorx), 0),
                fmt(rates(Io::ZerorxFixed), 0),
                fmt(rates(Io::Tokio), 0),
                fmt(rates(Io::Std), 0),
                fmt(ratio(Io::Zerorx, Io::Tokio), 2),
                fmt(ratio(Io::Zerorx, Io::Std), 2),
                fmt(ratio(Io::ZerorxFixed, Io::Zerorx), 2)
            );
        }
    }
    out
}

/// The file benchmark's `main`; returns the exit code.
pub fn main_with_args(args: Vec<String>) -> i32 {
    crate::main_with(&args, "file", FsOptions::parse, run)
}
