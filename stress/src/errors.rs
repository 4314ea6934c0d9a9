//! What can go wrong in a run, by kind, with the request id where there is one.

use serde::{Deserialize, Serialize};
use std::fmt;

/// One kind of failure the harness detects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A request never got its reply (connection closed, timed out, or run ended).
    Lost,
    /// A reply arrived for a request that had already been answered.
    Duplicate,
    /// A reply's bytes are not the ones expected (CRC, length, kind or payload).
    Corrupted,
    /// A reply for another connection's request.
    Misrouted,
    /// A reply naming a request id this connection never sent.
    UnknownId,
    /// The server answered with a rejection (it saw the request as broken).
    Rejected,
    /// The server answered with an error where a result was expected.
    ServerError,
    /// Connecting failed.
    Connect,
    /// The connection was reset or failed while receiving.
    Reset,
    /// The server closed the connection while the client still had work.
    Closed,
    /// A reply took longer than the timeout; the connection was given up.
    Timeout,
    /// Sending failed.
    Send,
    /// The reply stream could not be parsed.
    Protocol,
}

impl ErrorKind {
    /// Every kind, in report order.
    pub const ALL: [ErrorKind; 13] = [
        ErrorKind::Lost,
        ErrorKind::Duplicate,
        ErrorKind::Corrupted,
        ErrorKind::Misrouted,
        ErrorKind::UnknownId,
        ErrorKind::Rejected,
        ErrorKind::ServerError,
        ErrorKind::Connect,
        ErrorKind::Reset,
        ErrorKind::Closed,
        ErrorKind::Timeout,
        ErrorKind::Send,
        ErrorKind::Protocol,
    ];

    /// Index into per-kind counter arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The name used in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Lost => "lost",
            ErrorKind::Duplicate => "duplicate",
            ErrorKind::Corrupted => "corrupted",
            ErrorKind::Misrouted => "misrouted",
            ErrorKind::UnknownId => "unknown_id",
            ErrorKind::Rejected => "rejected",
            ErrorKind::ServerError => "server_error",
            ErrorKind::Connect => "connect",
            ErrorKind::Reset => "reset",
            ErrorKind::Closed => "closed",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Send => "send",
            ErrorKind::Protocol => "protocol",
        }
    }

    /// What the kind means, for the text report.
    pub fn meaning(self) -> &'static str {
        match self {
            ErrorKind::Lost => "requests never answered",
            ErrorKind::Duplicate => "replies to requests already answered",
            ErrorKind::Corrupted => "replies with wrong bytes",
            ErrorKind::Misrouted => "replies meant for another connection",
            ErrorKind::UnknownId => "replies to ids never sent",
            ErrorKind::Rejected => "requests the server said were broken",
            ErrorKind::ServerError => "error replies where a result was due",
            ErrorKind::Connect => "connection attempts that failed",
            ErrorKind::Reset => "connections reset or failed while receiving",
            ErrorKind::Closed => "connections the server closed early",
            ErrorKind::Timeout => "connections given up waiting for a reply",
            ErrorKind::Send => "sends that failed",
            ErrorKind::Protocol => "reply streams that could not be parsed",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One detected failure, kept for the report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorSample {
    /// What went wrong.
    pub kind: ErrorKind,
    /// The request id, when the failure concerns one request.
    pub id: Option<u64>,
    /// The connection number.
    pub conn: u32,
    /// Details in words.
    pub detail: String,
}

impl fmt::Display for ErrorSample {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.id {
            Some(id) => write!(
                f,
                "{} id {:#x} (conn {}): {}",
                self.kind, id, self.conn, self.detail
            ),
            None => write!(f, "{} (conn {}): {}", self.kind, self.conn, self.detail),
        }
    }
}
