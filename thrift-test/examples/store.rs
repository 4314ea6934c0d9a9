//! The store example: a key-value service (`idl/store.thrift`) whose handler keeps the
//! entries it decodes, served on one worker while one client pipelines `put`s.
//!
//! ```sh
//! cargo run --release -p zerorx-thrift-test --example store                # 1,000,000 puts, keep all, detached
//! cargo run --release -p zerorx-thrift-test --example store -- --keep 64   # keep every 64th
//! cargo run --release -p zerorx-thrift-test --example store -- --no-detach --puts 200000
//! ```
//!
//! Options: `--puts N`, `--depth N` (calls in flight), `--value-len N`, `--keep all|N`
//! (every Nth), `--no-detach` (keep the decoded slices as they are), `--memory-limit
//! BYTES` (the server worker's receive memory limit). It prints what was kept against
//! the memory the process grew by, and how the server's receives fared. docs/rpc.md
//! ("Keeping what you decode") explains the figures.

use zerorx_thrift_test::store::{run_puts, Keep, PutRun};

fn parse(args: &[String]) -> Result<PutRun, String> {
    let mut run = PutRun {
        puts: 1_000_000,
        depth: 32,
        value_len: 100,
        keep: Keep::All,
        detach: true,
        memory_limit: None,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        let number = |v: &String| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag}: '{v}' is not a whole number"))
        };
        match flag.as_str() {
            "--puts" => run.puts = number(value()?)?,
            "--depth" => run.depth = number(value()?)? as usize,
            "--value-len" => run.value_len = number(value()?)? as usize,
            "--memory-limit" => run.memory_limit = Some(number(value()?)? as usize),
            "--no-detach" => run.detach = false,
            "--keep" => {
                let v = value()?;
                run.keep = if v == "all" {
                    Keep::All
                } else {
                    Keep::EveryNth(number(v)?.max(1))
                };
            }
            other => {
                return Err(format!(
                    "unknown option '{other}' (see the top of examples/store.rs)"
                ))
            }
        }
    }
    Ok(run)
}

fn mib(b: u64) -> f64 {
    b as f64 / (1 << 20) as f64
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let run = match parse(&args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("store: {e}");
            std::process::exit(2);
        }
    };
    let r = match run_puts(&run) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("store: {e}");
            std::process::exit(1);
        }
    };
    let grown = r.rss_after.saturating_sub(r.rss_before);
    println!(
        "{} puts ({} answered, {} callers failed) in {:.2} s, keep {:?}, {}",
        run.puts,
        r.answered,
        r.failed,
        r.elapsed.as_secs_f64(),
        run.keep,
        if run.detach {
            "detached"
        } else {
            "not detached"
        }
    );
    println!(
        "kept       {} entries, {:.1} MiB of keys and values",
        r.kept_entries,
        mib(r.kept_bytes)
    );
    println!(
        "memory     RSS {:.1} → {:.1} MiB (+{:.1} MiB, {:.2}× the data kept)",
        mib(r.rss_before),
        mib(r.rss_after),
        mib(grown),
        grown as f64 / r.kept_bytes.max(1) as f64
    );
    println!(
        "receives   {} into ordinary memory while the pool was held ({:.1} MiB still held), {} refused at the limit, {} connections closed at it",
        r.overflow_receives,
        mib(r.overflow_held),
        r.memory_refusals,
        r.receive_memory_closes
    );
    if let Some(e) = &r.first_error {
        println!("first error {e}");
    }
    if r.answered != run.puts {
        std::process::exit(1);
    }
}
