//! What the cross-language tests share: paths, the IDL as Debian's compiler takes it,
//! and starting a server that says where it listens.
// Each test binary includes this module and uses a part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// This crate's directory.
pub fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The workspace root, where `target/` is.
pub fn workspace() -> &'static Path {
    manifest()
        .parent()
        .expect("thrift-test/ is inside the workspace")
}

/// `idl/ThriftTest.thrift` without its `uuid` lines: Debian's compiler (0.17) has
/// no `uuid` type.
pub fn idl_without_uuid() -> String {
    std::fs::read_to_string(manifest().join("idl/ThriftTest.thrift"))
        .expect("idl/ThriftTest.thrift")
        .lines()
        .filter(|l| !l.contains("uuid"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Starts `cmd` (stdout piped) and reads its first line, `listening on …PORT`.
pub fn spawn_listening(cmd: &mut Command) -> (Child, u16) {
    let (child, at) = spawn_listening_at(cmd);
    let port = at
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{cmd:?}: no port in {at:?}"));
    (child, port)
}

/// Starts `cmd` (stdout piped) and reads its first line, `listening on WHERE`:
/// returns WHERE (an address, or `unix:PATH` for a server on a Unix socket).
pub fn spawn_listening_at(cmd: &mut Command) -> (Child, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("first line");
    let at = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("{cmd:?}: unexpected first line {line:?}"))
        .to_owned();
    (child, at)
}
