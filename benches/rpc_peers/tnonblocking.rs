//! Builds the Apache Thrift C++ peer at run time: C++ code generated from
//! bench.thrift by the Thrift compiler, plus `tnonblocking_server.cpp`, compiled
//! against the system's libthrift into `target/rpc-peers/`. Rebuilt only when the
//! sources change.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The Debian packages the peer needs.
pub const APT: &str = "apt-get install -y thrift-compiler libthrift-dev libevent-dev g++";

const HANDLER: &str = include_str!("tnonblocking_server.cpp");

/// Where the benchmark keeps what it builds: `target/rpc-peers/`, found from the
/// benchmark binary's own path (`target/<profile>/deps/rpc-…`).
pub fn work_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let target = exe
        .ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "target"))
        .map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir);
    target.join("rpc-peers")
}

fn missing_tools() -> Vec<&'static str> {
    let mut missing = Vec::new();
    let found = |cmd: &str, arg: &str| {
        Command::new(cmd)
            .arg(arg)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !found("thrift", "--version") {
        missing.push("thrift (thrift-compiler)");
    }
    if !found("g++", "--version") {
        missing.push("g++");
    }
    for (header, package) in [
        (
            "/usr/include/thrift/server/TNonblockingServer.h",
            "libthrift-dev",
        ),
        ("/usr/include/event2/event.h", "libevent-dev"),
    ] {
        if !Path::new(header).exists() {
            missing.push(package);
        }
    }
    missing
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{cmd:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    ))
}

/// True when `bin` exists and was built from `sources` (recorded in `stamp` after a
/// successful build).
pub fn built_from(bin: &Path, stamp: &Path, sources: &str) -> bool {
    bin.exists() && std::fs::read_to_string(stamp).is_ok_and(|s| s == sources)
}

/// The server binary, built if needed; `Err` says what is missing (with the apt
/// command) or what failed.
pub fn build(idl: &str) -> Result<PathBuf, String> {
    let missing = missing_tools();
    if !missing.is_empty() {
        return Err(format!(
            "missing {}; install with: {APT}",
            missing.join(", ")
        ));
    }
    let dir = work_dir().join("tnonblocking");
    let bin = dir.join("tnonblocking_server");
    let stamp = dir.join("sources.stamp");
    let sources = format!("{idl}\n----\n{HANDLER}");
    if built_from(&bin, &stamp, &sources) {
        return Ok(bin);
    }
    let io = |e: std::io::Error| format!("{}: {e}", dir.display());
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(io)?;
    std::fs::write(dir.join("bench.thrift"), idl).map_err(io)?;
    std::fs::write(dir.join("tnonblocking_server.cpp"), HANDLER).map_err(io)?;
    run(Command::new("thrift")
        .args(["--gen", "cpp", "-out"])
        .arg(&dir)
        .arg(dir.join("bench.thrift")))?;
    run(Command::new("g++")
        .args(["-O2", "-std=c++17", "-DNDEBUG", "-I"])
        .arg(&dir)
        .arg(dir.join("tnonblocking_server.cpp"))
        .arg(dir.join("Bench.cpp"))
        .arg(dir.join("bench_types.cpp"))
        .arg("-o")
        .arg(&bin)
        .args(["-lthriftnb", "-lthrift", "-levent", "-lpthread"]))?;
    std::fs::write(&stamp, sources).map_err(io)?;
    Ok(bin)
}
