//! Builds the volo-thrift peer at run time: `volo/` (a Cargo project template, its
//! own workspace) with bench.thrift, compiled by volo's own code generator into
//! `target/rpc-peers/volo/` with `cargo build --release`. Rebuilt only when the
//! sources change; never a dependency of zerorx.

use super::tnonblocking::{built_from, work_dir};
use std::path::PathBuf;
use std::process::Command;

const MANIFEST: &str = include_str!("volo/Cargo.toml.in");
const BUILD: &str = include_str!("volo/build.rs");
const MAIN: &str = include_str!("volo/main.rs");

/// The server binary (`volo-bench-server PORT THREADS`), built if needed; `Err`
/// says what failed (the first build fetches volo from crates.io).
pub fn build(idl: &str) -> Result<PathBuf, String> {
    let dir = work_dir().join("volo");
    let bin = dir.join("target/release/volo-bench-server");
    let stamp = dir.join("sources.stamp");
    let sources = format!("{idl}\n----\n{MANIFEST}\n----\n{BUILD}\n----\n{MAIN}");
    if built_from(&bin, &stamp, &sources) {
        return Ok(bin);
    }
    let io = |e: std::io::Error| format!("{}: {e}", dir.display());
    std::fs::create_dir_all(dir.join("src")).map_err(io)?;
    std::fs::write(dir.join("Cargo.toml"), MANIFEST).map_err(io)?;
    std::fs::write(dir.join("build.rs"), BUILD).map_err(io)?;
    std::fs::write(dir.join("src/main.rs"), MAIN).map_err(io)?;
    std::fs::write(dir.join("bench.thrift"), idl).map_err(io)?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(["build", "--release", "--quiet", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        // Its own target directory, whatever the outer build was told.
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .map_err(|e| format!("cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "building the volo-thrift peer failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    std::fs::write(&stamp, sources).map_err(io)?;
    Ok(bin)
}
