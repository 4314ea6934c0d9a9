//! Transport and protocol detection from a connection's first bytes (see
//! `zerorx_fuzz::checks::detect`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(
    init: zerorx_fuzz::seeds::write_if_asked("detect"),
    |data: &[u8]| zerorx_fuzz::checks::detect(data)
);
