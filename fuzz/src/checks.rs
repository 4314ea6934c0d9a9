//! What each fuzz target checks on one input. Beyond "no panic" and the allocation
//! ceiling of [`alloc_guard`](crate::alloc_guard):
//!
//! - the same bytes decode the same whether they arrive in one buffer or in many
//!   segments (the [`BytesChain`] path a connection takes when a frame spans receive
//!   buffers);
//! - skipping a message ([`binary::message_len`], what the unframed transport uses to
//!   find where a message ends) accepts exactly what decoding accepts, and consumes the
//!   same number of bytes, or fails with the same error;
//! - anything that decodes re-encodes to a message that decodes back to itself;
//! - a typed decoder accepts only well-formed Thrift, and what it returns round-trips.

use crate::alloc_guard::bounded;
use bytes::{Buf, Bytes};
use std::fmt::Debug;
use zerorx::net::BytesChain;
use zerorx_thrift::protocol::binary::{self, BinaryReader, BinaryWriter};
use zerorx_thrift::protocol::compact::{self, CompactReader, CompactWriter};
use zerorx_thrift::{
    encode_message, DecodeError, DecodeLimits, MessageHeader, OutBuf, Protocol, ProtocolRead,
    TType, ThriftDecode, ThriftEncode, Value,
};

/// The protocol family a target feeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// TBinaryProtocol (strict and non-strict headers both accepted).
    Binary,
    /// TCompactProtocol.
    Compact,
}

/// A decoded message, with the bytes it took and the protocol its header used.
type Decoded = Result<(MessageHeader, Value, usize, Protocol), DecodeError>;

fn decode_with<R: ProtocolRead>(
    r: &mut R,
    total: usize,
) -> Result<(MessageHeader, Value, usize), DecodeError> {
    let header = r.read_message_begin()?;
    let body = Value::decode(r, TType::Struct)?;
    Ok((header, body, total - r.remaining()))
}

fn decode<B: Buf>(wire: Wire, input: B) -> Decoded {
    let total = input.remaining();
    let limits = DecodeLimits::default();
    match wire {
        Wire::Binary => {
            let mut r = BinaryReader::with_limits(input, limits);
            let (h, v, used) = decode_with(&mut r, total)?;
            let protocol = if r.last_message_strict() {
                Protocol::Binary
            } else {
                Protocol::BinaryNonStrict
            };
            Ok((h, v, used, protocol))
        }
        Wire::Compact => {
            let mut r = CompactReader::with_limits(input, limits);
            let (h, v, used) = decode_with(&mut r, total)?;
            Ok((h, v, used, Protocol::Compact))
        }
    }
}

fn message_len<B: Buf>(wire: Wire, input: B) -> Result<usize, DecodeError> {
    match wire {
        Wire::Binary => binary::message_len(input, DecodeLimits::default()),
        Wire::Compact => compact::message_len(input, DecodeLimits::default()),
    }
}

fn concat(segments: Vec<Bytes>) -> Vec<u8> {
    segments.iter().flat_map(|s| s.iter().copied()).collect()
}

/// A decode result in a comparable form: the message re-encoded (a `Value`'s `==`
/// would call a NaN unequal to itself) and the bytes the decode took.
fn canonical(d: &Decoded) -> Result<(Vec<u8>, usize), DecodeError> {
    match d {
        Ok((h, body, used, protocol)) => {
            let encoded =
                encode_message(*protocol, false, usize::MAX, &h.name, h.kind, h.seqid, body)
                    .expect("a decoded message re-encodes");
            Ok((concat(encoded), *used))
        }
        Err(e) => Err(e.clone()),
    }
}

/// `data` cut into segments of 1 to 13 bytes (the pattern depends on the length, so
/// different inputs put boundaries in different places).
fn segmented(data: &[u8]) -> BytesChain {
    let mut rest = Bytes::copy_from_slice(data);
    let mut chain = BytesChain::new();
    let mut i = data.len();
    while !rest.is_empty() {
        let n = (1 + (i * 7) % 13).min(rest.len());
        chain.push(rest.split_to(n));
        i += 1;
    }
    chain
}

/// Decodes `data` as one whole message of `wire`, every way the server can.
pub fn message(wire: Wire, data: &[u8]) {
    let n = data.len();
    let whole_in = Bytes::copy_from_slice(data);
    let (chain_a, chain_b) = (segmented(data), segmented(data));

    let whole = bounded(n, || decode(wire, whole_in.clone()));
    let chained = bounded(n, || decode(wire, chain_a));
    let skipped = bounded(n, || message_len(wire, whole_in.clone()));
    let skipped_chained = bounded(n, || message_len(wire, chain_b));

    let canon = canonical(&whole);
    assert_eq!(
        canon,
        canonical(&chained),
        "one buffer and segments decode differently"
    );
    assert_eq!(
        canon.as_ref().map(|(_, used)| *used).map_err(Clone::clone),
        skipped,
        "skipping and decoding disagree"
    );
    assert_eq!(
        skipped, skipped_chained,
        "skipping one buffer and segments disagree"
    );

    if let Ok((_, used)) = &canon {
        prefixes(wire, &data[..*used]);
    }
    if let Ok((encoded, _)) = canon {
        let again = canonical(&decode(wire, Bytes::from(encoded.clone())));
        match again {
            Ok((bytes, used)) => {
                assert_eq!(used, encoded.len(), "re-encoded message not consumed whole");
                assert_eq!(
                    bytes, encoded,
                    "re-encoded message decodes to something else"
                );
            }
            Err(e) => panic!("re-encoded message does not decode: {e}"),
        }
    }
}

/// Prefixes of a message that decodes whole (`message`): each must be reported as
/// truncated, and the length the unframed transport then waits for (what was read
/// before the failing read, plus what that read needed) must lie beyond the prefix and
/// within the message. Waiting for more would hang a valid request (or reject it as too
/// large); for less, spin.
fn prefixes(wire: Wire, message: &[u8]) {
    let len = message.len();
    // Every prefix of a short message; 64 spread over a long one.
    let step = (len / 64).max(1);
    for cut in (0..len).step_by(step) {
        let prefix = Bytes::copy_from_slice(&message[..cut]);
        match bounded(cut, || message_len(wire, prefix)) {
            Err(DecodeError::Truncated { needed, remaining }) => {
                let at_least = (cut - remaining).saturating_add(needed);
                assert!(
                    at_least > cut && at_least <= len,
                    "prefix of {cut} of a {len}-byte message: waits for {at_least} bytes"
                );
            }
            other => panic!("prefix of {cut} of a {len}-byte message: {other:?}, not truncated"),
        }
    }
}

fn encode_value<T: ThriftEncode>(wire: Wire, v: &T) -> Bytes {
    let mut out = OutBuf::new();
    match wire {
        Wire::Binary => v.encode(&mut BinaryWriter::new(&mut out)),
        Wire::Compact => v.encode(&mut CompactWriter::new(&mut out)),
    }
    out.finish_contiguous(usize::MAX)
        .expect("a decoded value re-encodes")
}

fn decode_value<T: ThriftDecode, B: Buf>(wire: Wire, input: B) -> (Result<T, DecodeError>, usize) {
    let limits = DecodeLimits::default();
    match wire {
        Wire::Binary => {
            let mut r = BinaryReader::with_limits(input, limits);
            (T::decode(&mut r), r.remaining())
        }
        Wire::Compact => {
            let mut r = CompactReader::with_limits(input, limits);
            (T::decode(&mut r), r.remaining())
        }
    }
}

/// Decodes `data` as a `T` (no message header), and checks it against the schema-less
/// decoder and a round trip.
pub fn typed<T: ThriftDecode + ThriftEncode + PartialEq + Debug>(wire: Wire, data: &[u8]) {
    let n = data.len();
    let input = Bytes::copy_from_slice(data);
    let (typed, typed_rest) = bounded(n, || decode_value::<T, _>(wire, input.clone()));
    let (chained, chained_rest) = bounded(n, || decode_value::<T, _>(wire, segmented(data)));
    assert_eq!(
        (&typed, typed_rest),
        (&chained, chained_rest),
        "one buffer and segments decode differently"
    );
    let Ok(value) = typed else { return };

    let (generic, generic_rest) = bounded(n, || {
        let limits = DecodeLimits::default();
        match wire {
            Wire::Binary => {
                let mut r = BinaryReader::with_limits(input.clone(), limits);
                (Value::decode(&mut r, T::TTYPE).map(drop), r.remaining())
            }
            Wire::Compact => {
                let mut r = CompactReader::with_limits(input.clone(), limits);
                (Value::decode(&mut r, T::TTYPE).map(drop), r.remaining())
            }
        }
    });
    assert_eq!(
        generic,
        Ok(()),
        "typed decoder accepted what is not well-formed Thrift"
    );
    assert_eq!(
        generic_rest, typed_rest,
        "typed and schema-less decoders took different lengths"
    );

    let encoded = encode_value(wire, &value);
    let (back, rest) = decode_value::<T, _>(wire, encoded);
    assert_eq!(rest, 0, "re-encoded value not consumed whole");
    assert_eq!(
        back.as_ref(),
        Ok(&value),
        "re-encoded value decodes to something else"
    );
}

/// The first byte of a typed target's input: the protocol (bit 0) and which of
/// `kinds` types (the rest, modulo `kinds`); then the bytes to decode.
fn select(data: &[u8], kinds: u8) -> Option<(u8, Wire, &[u8])> {
    let (&selector, body) = data.split_first()?;
    let wire = if selector & 1 == 0 {
        Wire::Binary
    } else {
        Wire::Compact
    };
    Some(((selector >> 1) % kinds, wire, body))
}

/// How many types [`typed_args`] picks from.
pub const TYPED_KINDS: u8 = 19;

/// The first byte picks the protocol (bit 0) and the type (the rest, modulo
/// [`TYPED_KINDS`]); the remaining bytes are decoded as that type: the bench.thrift
/// argument and result structs the server decodes, `TApplicationException`, and
/// containers of every shape the typed codecs implement.
pub fn typed_args(data: &[u8]) {
    use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
    use zerorx_cli::bench::{
        AddArgs, EchoArgs, FailArgs, FailResult, FireArgs, FiredArgs, Overloaded, Payload,
        RoundtripArgs, SleepMsArgs, SumArgs,
    };
    use zerorx_thrift::{ApplicationException, Utf8Bytes, Uuid};

    let Some((kind, wire, body)) = select(data, TYPED_KINDS) else {
        return;
    };
    match kind {
        0 => typed::<ApplicationException>(wire, body),
        1 => typed::<Vec<i64>>(wire, body),
        2 => typed::<BTreeMap<Utf8Bytes, Utf8Bytes>>(wire, body),
        3 => typed::<Vec<Bytes>>(wire, body),
        4 => typed::<HashSet<i32>>(wire, body),
        5 => typed::<BTreeMap<i16, Vec<String>>>(wire, body),
        6 => typed::<Vec<BTreeSet<Uuid>>>(wire, body),
        7 => typed::<HashMap<i8, Vec<bool>>>(wire, body),
        8 => typed::<EchoArgs>(wire, body),
        9 => typed::<RoundtripArgs>(wire, body),
        10 => typed::<AddArgs>(wire, body),
        11 => typed::<SumArgs>(wire, body),
        12 => typed::<SleepMsArgs>(wire, body),
        13 => typed::<FireArgs>(wire, body),
        14 => typed::<FiredArgs>(wire, body),
        15 => typed::<FailArgs>(wire, body),
        16 => typed::<FailResult>(wire, body),
        17 => typed::<Overloaded>(wire, body),
        _ => typed::<Payload>(wire, body),
    }
}

/// How many types [`generated_types`] picks from.
pub const GENERATED_KINDS: u8 = 11;

/// Like [`typed_args`], for decoders zerorx-thrift-build generated from ThriftTest's
/// IDL: nested structs, maps keyed by enums, sets of structs, a union, declared
/// exceptions in a result struct (types with a `double` are left out: NaN is not
/// equal to itself, so the round trip could not be compared).
pub fn generated_types(data: &[u8]) {
    use zerorx_thrift_test::generated::thrift_test::{
        thrift_test::{TestInsanityArgs, TestMultiArgs, TestMultiExceptionResult},
        BoolTest, CrazyNesting, Insanity, NestedMixedx2, OptionalBinary, SomeUnion, Xception2,
        Xtruct2,
    };

    let Some((kind, wire, body)) = select(data, GENERATED_KINDS) else {
        return;
    };
    match kind {
        0 => typed::<Xtruct2>(wire, body),
        1 => typed::<Insanity>(wire, body),
        2 => typed::<CrazyNesting>(wire, body),
        3 => typed::<SomeUnion>(wire, body),
        4 => typed::<Xception2>(wire, body),
        5 => typed::<NestedMixedx2>(wire, body),
        6 => typed::<BoolTest>(wire, body),
        7 => typed::<OptionalBinary>(wire, body),
        8 => typed::<TestInsanityArgs>(wire, body),
        9 => typed::<TestMultiArgs>(wire, body),
        _ => typed::<TestMultiExceptionResult>(wire, body),
    }
}

/// Checks the transport detector on the first bytes of `data`: it asks for more only
/// while it needs them, and once it has named a transport and protocol, more bytes
/// never change its answer (the server may have received any number of bytes when it
/// decides).
pub fn detect(data: &[u8]) {
    use zerorx_thrift::transport::{detect, Detected};

    let mut first_found = None;
    for k in 0..=data.len().min(16) {
        let got = bounded(k, || detect(&data[..k]));
        match got {
            Detected::NeedMore(want) => {
                assert!(
                    want > k,
                    "{k} bytes: asked for {want}, which it already has"
                );
                assert!(
                    first_found.is_none(),
                    "{k} bytes: asked for more after {first_found:?}"
                );
            }
            found => match first_found {
                None => first_found = Some((k, found)),
                Some((at, first)) => assert_eq!(
                    found, first,
                    "answer changed from {first:?} at {at} bytes to {found:?} at {k}"
                ),
            },
        }
    }
}
