//! A whole compact-protocol message: header and body, decoded from one buffer and from
//! segments, skipped, and re-encoded (see `zerorx_fuzz::checks::message`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use zerorx_fuzz::checks::{message, Wire};

fuzz_target!(
    init: zerorx_fuzz::seeds::write_if_asked("compact_message"),
    |data: &[u8]| message(Wire::Compact, data)
);
