//! Tuning by environment: `ZERORX_*` variables set what the code left at its default,
//! so an operator can size a deployed service without a rebuild; what the code sets
//! explicitly wins. Every effective value is kept with where it came from
//! ([`Handle::tuning`](crate::Handle::tuning), `zerorx doctor`, the stress report),
//! and a variable that does not parse fails `build()` with its name and what it takes.

use super::receive_mode::{ReceiveMode, RECEIVE_MODE_SYNTAX};
use super::send_zero_copy::{SendZeroCopy, SEND_ZC_SYNTAX};
use crate::wake::WakeMode;
use serde::Serialize;
use std::fmt;
use std::io;
use std::time::Duration;

/// Where an effective value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The builder's default.
    Default,
    /// A `ZERORX_*` environment variable.
    Environment,
    /// Set explicitly through the [`Builder`](crate::Builder).
    Code,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Source::Default => "default",
            Source::Environment => "environment",
            Source::Code => "code",
        })
    }
}

/// One tunable setting's effective value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Setting {
    /// The builder setting (`threads`).
    pub name: &'static str,
    /// The variable that can set it (`ZERORX_THREADS`).
    pub variable: &'static str,
    /// The value in force, as text.
    pub value: String,
    /// Where it came from.
    pub source: Source,
}

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} ({})", self.name, self.value, self.source)
    }
}

/// Every variable, the setting it sets and what it accepts.
pub const VARIABLES: [(&str, &str, &str); 17] = [
    (
        "ZERORX_THREADS",
        "threads",
        "a whole number of workers, at least 1",
    ),
    (
        "ZERORX_RING_ENTRIES",
        "ring_entries",
        "SQ entries, 1 to 32768",
    ),
    (
        "ZERORX_CQ_ENTRIES",
        "cq_entries",
        "CQ entries, at least the SQ's",
    ),
    (
        "ZERORX_POOL_SIZE",
        "pool_size",
        "bytes, with an optional K, M or G (4M)",
    ),
    (
        "ZERORX_CHUNK_SIZE",
        "chunk_size",
        "bytes, with an optional K or M (64K)",
    ),
    ("ZERORX_RECEIVE_MODE", "receive_mode", RECEIVE_MODE_SYNTAX),
    ("ZERORX_WAKE", "wake", "eventfd or msg-ring"),
    (
        "ZERORX_BUSY_POLL",
        "busy_poll",
        "off, or a duration (50us, 1ms) optionally followed by ,prefer",
    ),
    (
        "ZERORX_INCREMENTAL_BUFFERS",
        "incremental_buffers",
        "auto, on or off",
    ),
    ("ZERORX_RECV_BUNDLES", "recv_bundles", "on or off"),
    (
        "ZERORX_ZC_RESTARTS",
        "zero_copy_restarts",
        "auto, on or off",
    ),
    (
        "ZERORX_COMPLETION_BATCH",
        "completion_batch",
        "off, or EVENTS,DURATION (16,50us)",
    ),
    (
        "ZERORX_RECV_MEMORY_LIMIT",
        "receive_memory_limit",
        "bytes, with an optional K, M or G (64M)",
    ),
    (
        "ZERORX_MAX_BLOCKING_THREADS",
        "max_blocking_threads",
        "a whole number of threads, at least 1",
    ),
    (
        "ZERORX_BLOCKING_KEEP_ALIVE",
        "blocking_keep_alive",
        "a duration (500ms, 10s)",
    ),
    ("ZERORX_SEND_ZC", "send_zero_copy", SEND_ZC_SYNTAX),
    (
        "ZERORX_SEND_ARENA",
        "send_arena",
        "bytes, with an optional K, M or G (4M; 0: none)",
    ),
];

/// The error for `variable` holding `value`.
pub(crate) fn bad(variable: &str, value: &str) -> io::Error {
    let accepts = VARIABLES
        .iter()
        .find(|(v, ..)| *v == variable)
        .map_or("", |(.., a)| a);
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{variable}={value:?} is not valid: expected {accepts}"),
    )
}

/// A whole number.
pub(crate) fn number(variable: &str, value: &str) -> io::Result<u64> {
    value.trim().parse().map_err(|_| bad(variable, value))
}

/// Bytes with an optional binary suffix (`K`, `M`, `G`, case-insensitive, `iB`
/// allowed).
pub(crate) fn size(variable: &str, value: &str) -> io::Result<u64> {
    let v = value.trim();
    let v = v
        .strip_suffix("iB")
        .or_else(|| v.strip_suffix('B'))
        .unwrap_or(v);
    let (digits, shift) = match v.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&v[..v.len() - 1], 10),
        Some('M') => (&v[..v.len() - 1], 20),
        Some('G') => (&v[..v.len() - 1], 30),
        _ => (v, 0),
    };
    digits
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or_else(|| bad(variable, value))
}

/// `eventfd` or `msg-ring`.
pub(crate) fn wake(variable: &str, value: &str) -> io::Result<WakeMode> {
    match value.trim().to_ascii_lowercase().as_str() {
        "eventfd" => Ok(WakeMode::EventFd),
        "msg-ring" | "msgring" | "msg_ring" => Ok(WakeMode::MsgRing),
        _ => Err(bad(variable, value)),
    }
}

/// `off`, or `DURATION[,prefer]` with a `us`, `ms` or `s` unit.
pub(crate) fn busy_poll(variable: &str, value: &str) -> io::Result<Option<(Duration, bool)>> {
    let v = value.trim();
    if v.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let (time, prefer) = match v.split_once(',') {
        Some((t, "prefer")) => (t.trim(), true),
        Some(_) => return Err(bad(variable, value)),
        None => (v, false),
    };
    let d = duration(time).ok_or_else(|| bad(variable, value))?;
    Ok(Some((d, prefer)))
}

/// A non-zero duration with a `us`, `ms` or `s` unit.
fn duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let (digits, unit) = text
        .find(|c: char| !c.is_ascii_digit())
        .map_or((text, ""), |i| text.split_at(i));
    let n: u64 = digits.parse().ok()?;
    let d = match unit {
        "us" => Duration::from_micros(n),
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        _ => return None,
    };
    (!d.is_zero()).then_some(d)
}

/// A duration such as `500ms` or `10s`, more than zero.
pub(crate) fn positive_duration(variable: &str, value: &str) -> io::Result<Duration> {
    duration(value).ok_or_else(|| bad(variable, value))
}

/// `on` or `off` (also `true`/`false`, `1`/`0`).
pub(crate) fn switch(variable: &str, value: &str) -> io::Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "1" => Ok(true),
        "off" | "false" | "0" => Ok(false),
        _ => Err(bad(variable, value)),
    }
}

/// `auto` (`None`: the kernel decides), or a [`switch`].
pub(crate) fn auto_switch(variable: &str, value: &str) -> io::Result<Option<bool>> {
    if value.trim().eq_ignore_ascii_case("auto") {
        return Ok(None);
    }
    switch(variable, value).map(Some)
}

/// `off`, or `EVENTS,DURATION`: wait for up to EVENTS completions, at most DURATION
/// after the first.
pub(crate) fn completion_batch(variable: &str, value: &str) -> io::Result<Option<(u32, Duration)>> {
    let v = value.trim();
    if v.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let (events, delay) = v.split_once(',').ok_or_else(|| bad(variable, value))?;
    let events: u32 = events
        .trim()
        .parse()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| bad(variable, value))?;
    let delay = duration(delay).ok_or_else(|| bad(variable, value))?;
    Ok(Some((events, delay)))
}

/// A [`SendZeroCopy`] policy (`auto,16K`).
pub(crate) fn send_zero_copy(variable: &str, value: &str) -> io::Result<SendZeroCopy> {
    value.parse().map_err(|_: String| bad(variable, value))
}

/// The receive mode's command-line form.
pub(crate) fn receive_mode(variable: &str, value: &str) -> io::Result<ReceiveMode> {
    value.trim().parse().map_err(|e: String| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("{variable}: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_in_their_forms() {
        assert_eq!(size("V", "4M").ok(), Some(4 << 20));
        assert_eq!(size("V", "64k").ok(), Some(64 << 10));
        assert_eq!(size("V", "1GiB").ok(), Some(1 << 30));
        assert_eq!(size("V", "4096").ok(), Some(4096));
        assert_eq!(number("V", " 3 ").ok(), Some(3));
        assert_eq!(wake("V", "msg-ring").ok(), Some(WakeMode::MsgRing));
        assert_eq!(wake("V", "EventFd").ok(), Some(WakeMode::EventFd));
        assert_eq!(busy_poll("V", "off").ok(), Some(None));
        assert_eq!(
            busy_poll("V", "50us").ok(),
            Some(Some((Duration::from_micros(50), false)))
        );
        assert_eq!(
            busy_poll("V", "2ms,prefer").ok(),
            Some(Some((Duration::from_millis(2), true)))
        );
        assert_eq!(switch("V", "On").ok(), Some(true));
        assert_eq!(switch("V", "0").ok(), Some(false));
        assert_eq!(auto_switch("V", "auto").ok(), Some(None));
        assert_eq!(auto_switch("V", "off").ok(), Some(Some(false)));
        assert_eq!(completion_batch("V", "off").ok(), Some(None));
        assert_eq!(
            completion_batch("V", "16, 50us").ok(),
            Some(Some((16, Duration::from_micros(50))))
        );
        assert_eq!(
            receive_mode("V", "device-less:2").ok(),
            Some(ReceiveMode::DeviceLess { instances: 2 })
        );
    }

    #[test]
    fn a_bad_value_names_the_variable_and_what_it_takes() {
        let cases: [(&str, &str, io::Result<()>); 13] = [
            (
                "ZERORX_RECV_BUNDLES",
                "yes",
                switch("ZERORX_RECV_BUNDLES", "yes").map(drop),
            ),
            (
                "ZERORX_INCREMENTAL_BUFFERS",
                "maybe",
                auto_switch("ZERORX_INCREMENTAL_BUFFERS", "maybe").map(drop),
            ),
            (
                "ZERORX_COMPLETION_BATCH",
                "16",
                completion_batch("ZERORX_COMPLETION_BATCH", "16").map(drop),
            ),
            (
                "ZERORX_COMPLETION_BATCH",
                "0,50us",
                completion_batch("ZERORX_COMPLETION_BATCH", "0,50us").map(drop),
            ),
            (
                "ZERORX_COMPLETION_BATCH",
                "16,0ms",
                completion_batch("ZERORX_COMPLETION_BATCH", "16,0ms").map(drop),
            ),
            (
                "ZERORX_THREADS",
                "two",
                number("ZERORX_THREADS", "two").map(drop),
            ),
            (
                "ZERORX_POOL_SIZE",
                "4X",
                size("ZERORX_POOL_SIZE", "4X").map(drop),
            ),
            (
                "ZERORX_POOL_SIZE",
                "99999999999G",
                size("ZERORX_POOL_SIZE", "99999999999G").map(drop),
            ),
            (
                "ZERORX_WAKE",
                "futex",
                wake("ZERORX_WAKE", "futex").map(drop),
            ),
            (
                "ZERORX_BUSY_POLL",
                "50",
                busy_poll("ZERORX_BUSY_POLL", "50").map(drop),
            ),
            (
                "ZERORX_BUSY_POLL",
                "0us",
                busy_poll("ZERORX_BUSY_POLL", "0us").map(drop),
            ),
            (
                "ZERORX_BUSY_POLL",
                "5ms,fast",
                busy_poll("ZERORX_BUSY_POLL", "5ms,fast").map(drop),
            ),
            (
                "ZERORX_RECEIVE_MODE",
                "fast",
                receive_mode("ZERORX_RECEIVE_MODE", "fast").map(drop),
            ),
        ];
        for (variable, value, result) in cases {
            let err = result.expect_err(value);
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
            let msg = err.to_string();
            assert!(msg.contains(variable) && msg.contains("expected"), "{msg}");
            assert!(
                msg.contains(value) || variable == "ZERORX_RECEIVE_MODE",
                "{msg}"
            );
        }
    }
}
