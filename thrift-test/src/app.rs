//! The app example's parts (`examples/app.rs`): the `Digest` handler, which hashes
//! each request body on the blocking pool so the worker keeps serving meanwhile, and
//! the example's config file.

use crate::generated::app::Digest;
use sha2::{Digest as _, Sha256};
use std::fmt::Write as _;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use zerorx_thrift::bytes::Bytes;
use zerorx_thrift::{ApplicationException, Utf8Bytes};

/// The SHA-256 of `data` as 64 lowercase hex digits.
pub fn sha256_hex(data: &[u8]) -> String {
    let mut out = String::with_capacity(64);
    for b in Sha256::digest(data) {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Serves `Digest`: each body is hashed by [`zerorx::spawn_blocking`] (hashing a
/// large body would otherwise stall every connection on the worker).
#[derive(Clone, Debug, Default)]
pub struct Hasher {
    served: Arc<AtomicU64>,
}

impl Hasher {
    /// Calls answered so far.
    pub fn served(&self) -> u64 {
        self.served.load(Relaxed)
    }
}

impl Digest for Hasher {
    fn sha256(
        &self,
        body: Bytes,
    ) -> impl Future<Output = Result<Utf8Bytes, ApplicationException>> + use<> {
        let served = self.served.clone();
        async move {
            // The body is a slice of the receive buffer: it goes to the blocking
            // thread as it is (a buffer returns to its pool from any thread).
            let hex = zerorx::spawn_blocking(move || sha256_hex(&body))
                .await
                .map_err(|e| ApplicationException::internal(format!("hashing failed: {e}")))?;
            served.fetch_add(1, Relaxed);
            Ok(Utf8Bytes::from(hex))
        }
    }
}

/// The example's config file: `key = value` lines, `#` comments.
///
/// ```text
/// tcp = 127.0.0.1:9090
/// unix = /run/app.sock
/// grace_ms = 500
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppConfig {
    /// Where the TCP server listens (port 0: any free port, printed at start).
    pub tcp: SocketAddr,
    /// The Unix socket's path.
    pub unix: PathBuf,
    /// How long calls in flight get to finish after SIGTERM or SIGINT.
    pub grace: std::time::Duration,
}

impl AppConfig {
    /// Parses the file's text; errors name the line and what is wrong with it.
    pub fn parse(text: &str) -> io::Result<AppConfig> {
        let bad = |line: usize, why: String| {
            io::Error::new(io::ErrorKind::InvalidData, format!("line {line}: {why}"))
        };
        let (mut tcp, mut unix, mut grace) = (None, None, None);
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                return Err(bad(i + 1, format!("'{line}' is not key = value")));
            };
            let value = value.trim();
            match key.trim() {
                "tcp" => {
                    tcp = Some(value.parse().map_err(|e| {
                        bad(i + 1, format!("tcp: '{value}' is not an address: {e}"))
                    })?)
                }
                "unix" => unix = Some(PathBuf::from(value)),
                "grace_ms" => {
                    let ms: u64 = value.parse().map_err(|_| {
                        bad(i + 1, format!("grace_ms: '{value}' is not a whole number"))
                    })?;
                    grace = Some(std::time::Duration::from_millis(ms));
                }
                other => return Err(bad(i + 1, format!("unknown key '{other}'"))),
            }
        }
        Ok(AppConfig {
            tcp: tcp.ok_or_else(|| bad(0, "no 'tcp = ADDRESS' line".into()))?,
            unix: unix.ok_or_else(|| bad(0, "no 'unix = PATH' line".into()))?,
            grace: grace.unwrap_or(std::time::Duration::from_millis(500)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_parses_and_a_bad_line_is_named() {
        let c = AppConfig::parse("# app\ntcp = 127.0.0.1:0\nunix = /tmp/a.sock # here\n")
            .expect("valid");
        assert_eq!(c.unix, PathBuf::from("/tmp/a.sock"));
        assert_eq!(c.grace.as_millis(), 500);
        let e = AppConfig::parse("tcp = 127.0.0.1:0\nport 9\n").expect_err("no =");
        assert!(e.to_string().contains("line 2"), "{e}");
        let e = AppConfig::parse("tcp = nowhere\nunix = /x\n").expect_err("bad address");
        assert!(e.to_string().contains("line 1: tcp"), "{e}");
        let e = AppConfig::parse("unix = /x\n").expect_err("no tcp");
        assert!(e.to_string().contains("tcp"), "{e}");
    }

    #[test]
    fn the_digest_is_sha256() {
        // FIPS 180-2's "abc" test vector.
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
