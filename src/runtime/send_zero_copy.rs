//! [`SendZeroCopy`]: when a connection's queued sends go out zero-copy
//! (`SEND_ZC`/`SENDMSG_ZC`: the kernel transmits from the buffers themselves and
//! says when it has let go of them) and when they are copied into the socket as
//! usual.
//!
//! Zero-copy is not free: the kernel pins the pages and posts a second completion per
//! send, which costs more than copying a small buffer, and where the route cannot
//! transmit from user memory (loopback, a device without scatter-gather or checksum
//! offload) the kernel copies anyway after paying for the pinning. So, as folly's
//! `AsyncSocket` does with `MSG_ZEROCOPY`, the default sends zero-copy only above a
//! size and stops for a socket once a notification reports the kernel copied
//! (`IORING_NOTIF_USAGE_ZC_COPIED`, asked for with `IORING_SEND_ZC_REPORT_USAGE` on
//! every zero-copy send): on loopback that costs one zero-copy send per connection.

use std::fmt;
use std::str::FromStr;

/// When sends ([`Connection::queue_send`](crate::net::Connection::queue_send), and
/// with them the Thrift server's replies, and awaited
/// [`Connection::send`](crate::net::Connection::send)s) go out zero-copy; set with
/// [`Builder::send_zero_copy`](crate::Builder::send_zero_copy) or `ZERORX_SEND_ZC`.
///
/// A zero-copy send keeps its buffers until the kernel's notification (a received
/// [`RxBuf`](zcrx::RxBuf) sent on returns to its pool then), and
/// [`Connection::flush_sends`](crate::net::Connection::flush_sends) waits for the
/// notifications too, so what it reports sent is also out of the kernel's hands. The
/// counters are [`WorkerMetricsSnapshot::send_zc`](crate::WorkerMetricsSnapshot::send_zc),
/// `send_zc_copied` and `send_zc_off`.
///
/// ```
/// use zerorx::SendZeroCopy;
/// let policy: SendZeroCopy = "auto,32K".parse().unwrap();
/// assert_eq!(policy, SendZeroCopy::Auto { threshold: 32 << 10 });
/// assert_eq!(SendZeroCopy::default().to_string(), "auto,16384");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendZeroCopy {
    /// Every send is copied by the kernel.
    Off,
    /// A send of at least `threshold` bytes (a queued send gathers everything queued
    /// meanwhile: the total counts) goes zero-copy, on a socket whose zero-copy sends
    /// the kernel has not copied; after one that it copied, or refused (a Unix
    /// socket), the socket's sends are plain. The default, above 16 KiB: the size
    /// above which the kernel's `MSG_ZEROCOPY` documentation finds zero-copy
    /// generally pays.
    Auto {
        /// The smallest send that goes zero-copy.
        threshold: usize,
    },
    /// As [`Auto`](Self::Auto), but a socket keeps sending zero-copy after the kernel
    /// copied (only a refusal stops it): to measure what the adaptive policy saves.
    Always {
        /// The smallest send that goes zero-copy.
        threshold: usize,
    },
}

/// [`SendZeroCopy::Auto`]'s threshold by default.
pub const DEFAULT_SEND_ZC_THRESHOLD: usize = 16 << 10;

/// The forms `ZERORX_SEND_ZC` and `FromStr` take.
pub(crate) const SEND_ZC_SYNTAX: &str =
    "off, auto or always, optionally followed by ,BYTES with K or M (auto,16K)";

impl Default for SendZeroCopy {
    fn default() -> Self {
        SendZeroCopy::Auto {
            threshold: DEFAULT_SEND_ZC_THRESHOLD,
        }
    }
}

impl SendZeroCopy {
    /// The smallest send that goes zero-copy (`usize::MAX` when none does).
    pub(crate) fn threshold(self) -> usize {
        match self {
            SendZeroCopy::Off => usize::MAX,
            SendZeroCopy::Auto { threshold } | SendZeroCopy::Always { threshold } => threshold,
        }
    }

    /// Whether a socket stops sending zero-copy once the kernel copied one.
    pub(crate) fn adaptive(self) -> bool {
        matches!(self, SendZeroCopy::Auto { .. })
    }
}

impl fmt::Display for SendZeroCopy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendZeroCopy::Off => f.write_str("off"),
            SendZeroCopy::Auto { threshold } => write!(f, "auto,{threshold}"),
            SendZeroCopy::Always { threshold } => write!(f, "always,{threshold}"),
        }
    }
}

impl FromStr for SendZeroCopy {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || format!("{text:?} is not a send zero-copy policy: expected {SEND_ZC_SYNTAX}");
        let v = text.trim().to_ascii_lowercase();
        let (mode, threshold) = match v.split_once(',') {
            Some((m, t)) => (
                m.trim(),
                Some(super::tuning::size("", t).map_err(|_| bad())?),
            ),
            None => (v.as_str(), None),
        };
        let threshold = threshold
            .map(|t| usize::try_from(t).map_err(|_| bad()))
            .transpose()?;
        let or_default = |t: Option<usize>| t.unwrap_or(DEFAULT_SEND_ZC_THRESHOLD);
        match (mode, threshold) {
            ("off", None) => Ok(SendZeroCopy::Off),
            ("auto", t) => Ok(SendZeroCopy::Auto {
                threshold: or_default(t),
            }),
            ("always", t) => Ok(SendZeroCopy::Always {
                threshold: or_default(t),
            }),
            _ => Err(bad()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_its_forms_and_prints_them_back() {
        for (text, want) in [
            ("off", SendZeroCopy::Off),
            ("auto", SendZeroCopy::default()),
            (" Auto , 4K ", SendZeroCopy::Auto { threshold: 4096 }),
            ("always,0", SendZeroCopy::Always { threshold: 0 }),
            (
                "always",
                SendZeroCopy::Always {
                    threshold: DEFAULT_SEND_ZC_THRESHOLD,
                },
            ),
        ] {
            let got: SendZeroCopy = text.parse().expect(text);
            assert_eq!(got, want, "{text}");
            assert_eq!(got.to_string().parse::<SendZeroCopy>(), Ok(want));
        }
        for text in ["", "on", "auto,", "auto,lots", "off,4K", "always,4K,prefer"] {
            let e = text.parse::<SendZeroCopy>().expect_err(text);
            assert!(e.contains("expected off, auto or always"), "{e}");
        }
    }

    #[test]
    fn off_sends_nothing_zero_copy_and_only_auto_adapts() {
        assert_eq!(SendZeroCopy::Off.threshold(), usize::MAX);
        assert!(SendZeroCopy::default().adaptive());
        assert!(!SendZeroCopy::Always { threshold: 1 }.adaptive());
    }
}
