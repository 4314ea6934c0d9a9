//! Typed decoders (`ThriftDecode` for containers, strings, structs) against the
//! schema-less decoder and a round trip (see `zerorx_fuzz::checks::typed_args`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(
    init: zerorx_fuzz::seeds::write_if_asked("typed_args"),
    |data: &[u8]| zerorx_fuzz::checks::typed_args(data)
);
