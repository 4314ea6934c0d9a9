//! The Thrift protocols against fixed bytes, the Apache reference implementation (the
//! `thrift` crate), and hostile input.

mod support;

use bytes::Bytes;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use support::{ref_decode_message, ref_encode_message, same};
use zerorx_thrift::protocol::{binary, compact};
use zerorx_thrift::{
    encode_message, read_field, read_struct, required, ApplicationException,
    ApplicationExceptionKind, DecodeError, DecodeLimits, MessageReader, MessageType, Protocol,
    ProtocolRead, TType, ThriftDecode, ThriftEncode, ThriftType, Utf8Bytes, Uuid, Value,
};

/// Records the largest single allocation made on a thread while it is armed, so tests
/// can show that hostile lengths do not turn into allocations.
struct Tracking;

thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator unchanged; the bookkeeping only touches
// const-initialised thread-locals, which never allocate.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ARMED.try_with(|a| {
            if a.get() {
                let _ = LARGEST.try_with(|l| l.set(l.get().max(layout.size())));
            }
        });
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ARMED.try_with(|a| {
            if a.get() {
                let _ = LARGEST.try_with(|l| l.set(l.get().max(new_size)));
            }
        });
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Tracking = Tracking;

/// The largest allocation `f` made on this thread.
fn largest_allocation<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.with(|l| l.set(0));
    ARMED.with(|a| a.set(true));
    let out = f();
    ARMED.with(|a| a.set(false));
    (out, LARGEST.with(Cell::get))
}

const PROTOCOLS: [Protocol; 3] = [
    Protocol::Binary,
    Protocol::BinaryNonStrict,
    Protocol::Compact,
];

fn encode_value(
    protocol: Protocol,
    name: &str,
    kind: MessageType,
    seqid: i32,
    body: &Value,
) -> Bytes {
    let segs = encode_message(
        protocol,
        false,
        usize::MAX,
        name.as_bytes(),
        kind,
        seqid,
        body,
    )
    .expect("encodes");
    let mut all = Vec::new();
    for s in &segs {
        all.extend_from_slice(s);
    }
    Bytes::from(all)
}

fn decode(
    protocol: Protocol,
    input: Bytes,
) -> Result<(zerorx_thrift::MessageHeader, Value), DecodeError> {
    let mut r = MessageReader::new(protocol, input, DecodeLimits::default());
    let h = r.read_header()?;
    Ok((h, r.decode_value()?))
}

fn s(fields: Vec<(i16, Value)>) -> Value {
    Value::Struct(fields)
}

fn bin(b: &[u8]) -> Value {
    Value::Binary(Bytes::copy_from_slice(b))
}

#[test]
fn add_call_matches_the_documented_bytes() {
    let args = s(vec![(1, Value::I64(1)), (2, Value::I64(2))]);
    let strict = encode_value(Protocol::Binary, "add", MessageType::Call, 7, &args);
    let mut want = vec![
        0x80, 0x01, 0x00, 0x01, 0, 0, 0, 3, b'a', b'd', b'd', 0, 0, 0, 7,
    ];
    want.extend_from_slice(&[0x0a, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]);
    want.extend_from_slice(&[0x0a, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2, 0]);
    assert_eq!(&strict[..], &want[..]);

    let old = encode_value(
        Protocol::BinaryNonStrict,
        "add",
        MessageType::Call,
        7,
        &args,
    );
    let mut want = vec![0, 0, 0, 3, b'a', b'd', b'd', 1, 0, 0, 0, 7];
    want.extend_from_slice(&strict[15..]);
    assert_eq!(&old[..], &want[..]);

    let compact = encode_value(Protocol::Compact, "add", MessageType::Call, 7, &args);
    assert_eq!(
        &compact[..],
        &[0x82, 0x21, 7, 3, b'a', b'd', b'd', 0x16, 2, 0x16, 4, 0][..]
    );
}

/// Values that exercise the tricky corners of both encodings.
fn corner_cases() -> Vec<Value> {
    let deep = (0..20).fold(s(vec![(1, Value::Bool(true))]), |inner, i| {
        s(vec![
            (i, Value::Bool(i % 2 == 0)),
            (i + 20, inner),
            (-3, Value::Bool(false)),
        ])
    });
    vec![
        s(vec![]),
        s(vec![
            (1, Value::Bool(true)),
            (2, Value::Bool(false)),
            (300, Value::Bool(true)),
        ]),
        s(vec![
            (-5, Value::I32(-1)),
            (17, Value::I16(i16::MIN)),
            (16, Value::I8(-128)),
        ]),
        s(vec![
            (1, Value::I64(i64::MIN)),
            (2, Value::I64(i64::MAX)),
            (3, Value::I32(i32::MIN)),
            (4, Value::Double(-0.0)),
            (5, Value::Double(f64::INFINITY)),
            (32767, bin(b"")),
        ]),
        s(vec![(
            1,
            Value::List {
                elem: TType::Bool,
                items: (0..20).map(|i| Value::Bool(i % 3 == 0)).collect(),
            },
        )]),
        s(vec![(
            2,
            Value::Map {
                types: Some((TType::Binary, TType::List)),
                entries: vec![(
                    bin(b"k"),
                    Value::List {
                        elem: TType::I64,
                        items: (0..16).map(Value::I64).collect(),
                    },
                )],
            },
        )]),
        s(vec![(
            3,
            Value::Set {
                elem: TType::Struct,
                items: vec![s(vec![(1, bin(b"a"))]), s(vec![])],
            },
        )]),
        s(vec![(
            4,
            Value::Map {
                types: Some((TType::I32, TType::Double)),
                entries: vec![],
            },
        )]),
        deep,
    ]
}

#[test]
fn corner_cases_match_the_reference_implementation_both_ways() {
    for protocol in PROTOCOLS {
        for (i, v) in corner_cases().iter().enumerate() {
            let ours = encode_value(protocol, "m", MessageType::Reply, i as i32, v);
            let theirs = ref_encode_message(protocol, "m", MessageType::Reply, i as i32, v);
            if protocol != Protocol::Compact {
                // (Compact encodings may differ legitimately: the thrift crate writes a
                // field-id delta of exactly 15 in long form, Apache C++/Java in short.)
                assert_eq!(&ours[..], &theirs[..], "{protocol:?} case {i}: same bytes");
            }
            let (id, back) = ref_decode_message(protocol, &ours).expect("reference decodes ours");
            assert_eq!((id.name.as_str(), id.sequence_number), ("m", i as i32));
            assert!(
                same(&back, v),
                "{protocol:?} case {i}: reference read {back:?}"
            );
            let (h, mine) = decode(protocol, Bytes::from(theirs)).expect("we decode theirs");
            assert_eq!(
                (&h.name[..], h.kind, h.seqid),
                (&b"m"[..], MessageType::Reply, i as i32)
            );
            assert!(same(&mine, v), "{protocol:?} case {i}: we read {mine:?}");
        }
    }
}

#[test]
fn binary_values_are_slices_of_the_input() {
    let payload = vec![0xabu8; 1000];
    for protocol in PROTOCOLS {
        let msg = encode_value(
            protocol,
            "echo",
            MessageType::Call,
            1,
            &s(vec![(1, bin(&payload))]),
        );
        let range = msg.as_ptr() as usize..msg.as_ptr() as usize + msg.len();
        let (h, v) = decode(protocol, msg.clone()).expect("decodes");
        assert!(
            range.contains(&(h.name.as_ptr() as usize)),
            "name not copied"
        );
        let Value::Struct(fields) = v else {
            panic!("struct")
        };
        let Value::Binary(b) = &fields[0].1 else {
            panic!("binary")
        };
        assert_eq!(&b[..], &payload[..]);
        assert!(
            range.contains(&(b.as_ptr() as usize)),
            "{protocol:?}: payload not copied"
        );
    }
}

#[test]
fn uuid_round_trips_in_both_protocols() {
    let v = s(vec![
        (1, Value::Uuid(*b"0123456789abcdef")),
        (
            2,
            Value::List {
                elem: TType::Uuid,
                items: vec![Value::Uuid([7; 16])],
            },
        ),
    ]);
    for protocol in PROTOCOLS {
        let msg = encode_value(protocol, "u", MessageType::Call, 1, &v);
        assert_eq!(decode(protocol, msg).expect("decodes").1, v);
        let mut r = MessageReader::new(
            protocol,
            encode_value(protocol, "u", MessageType::Call, 1, &v),
            DecodeLimits::default(),
        );
        r.read_header().expect("header");
        r.skip_body().expect("uuid skips");
        assert_eq!(r.remaining(), 0);
    }
    let one = Uuid([9; 16]);
    let mut out = zerorx_thrift::OutBuf::new();
    one.encode(&mut compact::CompactWriter::new(&mut out));
    let bytes = out.finish_contiguous(100).expect("fits");
    assert_eq!(
        Uuid::decode(&mut compact::CompactReader::new(bytes)),
        Ok(one)
    );
}

#[test]
fn every_truncation_is_an_error_never_a_panic() {
    for protocol in PROTOCOLS {
        for v in corner_cases() {
            let msg = encode_value(protocol, "method", MessageType::Call, 42, &v);
            for cut in 0..msg.len() {
                let err = decode(protocol, msg.slice(..cut)).expect_err("truncated input");
                assert!(err.is_truncated(), "{protocol:?} cut at {cut}: {err}");
                let len = match protocol {
                    Protocol::Compact => {
                        compact::message_len(msg.slice(..cut), DecodeLimits::default())
                    }
                    _ => binary::message_len(msg.slice(..cut), DecodeLimits::default()),
                };
                assert!(len.expect_err("truncated").is_truncated());
            }
            let len = match protocol {
                Protocol::Compact => compact::message_len(msg.clone(), DecodeLimits::default()),
                _ => binary::message_len(msg.clone(), DecodeLimits::default()),
            };
            assert_eq!(
                len,
                Ok(msg.len()),
                "{protocol:?}: scanner measures the message"
            );
        }
    }
}

#[test]
fn negative_sizes_are_rejected() {
    let lim = DecodeLimits::default();
    // list<i32> of -1 elements; string of length -2; map of -3 entries.
    let list = Bytes::from_static(&[8, 0xff, 0xff, 0xff, 0xff]);
    assert_eq!(
        binary::decode_value(list, TType::List, lim),
        Err(DecodeError::NegativeSize(-1))
    );
    let string = Bytes::from_static(&[0xff, 0xff, 0xff, 0xfe, b'x']);
    assert_eq!(
        binary::decode_value(string, TType::Binary, lim),
        Err(DecodeError::NegativeSize(-2))
    );
    let map = Bytes::from_static(&[8, 8, 0xff, 0xff, 0xff, 0xfd]);
    assert_eq!(
        binary::decode_value(map, TType::Map, lim),
        Err(DecodeError::NegativeSize(-3))
    );
    // Compact sizes are varints read as i32: 0xffffffff is -1.
    let list = Bytes::from_static(&[0xf5, 0xff, 0xff, 0xff, 0xff, 0x0f]);
    assert_eq!(
        compact::decode_value(list, TType::List, lim),
        Err(DecodeError::NegativeSize(-1))
    );
    let string = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
    assert_eq!(
        compact::decode_value(string, TType::Binary, lim),
        Err(DecodeError::NegativeSize(-1))
    );
}

#[test]
fn huge_declared_sizes_allocate_nothing_large() {
    let lim = DecodeLimits::default();
    let cases: Vec<(Protocol, TType, Bytes)> = vec![
        // list<i64> claiming 2^31-1 elements, 8 bytes present.
        (
            Protocol::Binary,
            TType::List,
            Bytes::from_static(&[0x0a, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 1]),
        ),
        // string claiming 2 GiB.
        (
            Protocol::Binary,
            TType::Binary,
            Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff, b'a', b'b']),
        ),
        // map<string,string> of 2^31-1 entries.
        (
            Protocol::Binary,
            TType::Map,
            Bytes::from_static(&[11, 11, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0]),
        ),
        // compact list<struct> of 2^31-1 elements.
        (
            Protocol::Compact,
            TType::List,
            Bytes::from_static(&[0xfc, 0xff, 0xff, 0xff, 0xff, 0x07, 0]),
        ),
        // compact map of 2^31-1 entries.
        (
            Protocol::Compact,
            TType::Map,
            Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0x07, 0x88, 0]),
        ),
        // compact binary of 2^31-1 bytes.
        (
            Protocol::Compact,
            TType::Binary,
            Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0x07, 1, 2]),
        ),
    ];
    // Without a container limit the count is checked against the bytes present.
    let unlimited = DecodeLimits {
        max_container_len: usize::MAX,
        ..lim
    };
    for (protocol, t, input) in cases {
        for l in [lim, unlimited] {
            let (res, largest) = largest_allocation(|| match protocol {
                Protocol::Compact => compact::decode_value(input.clone(), t, l),
                _ => binary::decode_value(input.clone(), t, l),
            });
            let err = res.expect_err("hostile");
            assert!(
                err.is_truncated() || matches!(err, DecodeError::SizeLimit { .. }) && l == lim,
                "{protocol:?} {t:?}: {err:?}"
            );
            assert!(
                largest < 4096,
                "{protocol:?} {t:?}: allocated {largest} bytes"
            );
        }
    }
    // Also through the typed decoders.
    let list = Bytes::from_static(&[0x0a, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 1]);
    let (res, largest) = largest_allocation(|| {
        Vec::<i64>::decode(&mut binary::BinaryReader::with_limits(
            list.clone(),
            unlimited,
        ))
    });
    assert!(res.expect_err("hostile").is_truncated());
    assert!(largest < 4096, "typed list allocated {largest}");
}

#[test]
fn container_limit_is_enforced() {
    let lim = DecodeLimits {
        max_container_len: 3,
        ..DecodeLimits::default()
    };
    let v = Value::List {
        elem: TType::I8,
        items: (0..4).map(Value::I8).collect(),
    };
    for protocol in PROTOCOLS {
        let msg = encode_value(
            protocol,
            "m",
            MessageType::Call,
            1,
            &s(vec![(1, v.clone())]),
        );
        let mut r = MessageReader::new(protocol, msg, lim);
        r.read_header().expect("header");
        assert_eq!(
            r.decode_value(),
            Err(DecodeError::SizeLimit { size: 4, limit: 3 })
        );
    }
}

#[test]
fn unknown_type_ids_are_rejected() {
    let lim = DecodeLimits::default();
    for bad in [1u8, 5, 7, 9, 17, 0xff] {
        // A struct with one field of type `bad`.
        let input = Bytes::from(vec![bad, 0, 1, 0, 0, 0, 0]);
        assert_eq!(
            binary::decode_value(input, TType::Struct, lim),
            Err(DecodeError::InvalidType(bad))
        );
        let list = Bytes::from(vec![bad, 0, 0, 0, 1, 0]);
        assert_eq!(
            binary::decode_value(list, TType::List, lim),
            Err(DecodeError::InvalidType(bad))
        );
        let map = Bytes::from(vec![11, bad, 0, 0, 0, 1, 0]);
        assert_eq!(
            binary::decode_value(map, TType::Map, lim),
            Err(DecodeError::InvalidType(bad))
        );
    }
    for bad in [14u8, 15] {
        let input = Bytes::from(vec![0x10 | bad, 0, 0]);
        assert_eq!(
            compact::decode_value(input, TType::Struct, lim),
            Err(DecodeError::InvalidType(bad))
        );
        let list = Bytes::from(vec![0x10 | bad, 0]);
        assert_eq!(
            compact::decode_value(list, TType::List, lim),
            Err(DecodeError::InvalidType(bad))
        );
        let map = Bytes::from(vec![1, 0x80 | bad, 0, 0]);
        assert_eq!(
            compact::decode_value(map, TType::Map, lim),
            Err(DecodeError::InvalidType(bad))
        );
    }
}

fn nested(depth: usize, t: TType) -> Value {
    (0..depth).fold(Value::I32(1), |inner, _| match t {
        TType::Struct => s(vec![(1, inner)]),
        TType::List => Value::List {
            elem: inner.ttype(),
            items: vec![inner],
        },
        _ => Value::Map {
            types: Some((TType::I8, inner.ttype())),
            entries: vec![(Value::I8(0), inner)],
        },
    })
}

#[test]
fn nesting_past_the_limit_is_rejected_and_skip_is_bounded_too() {
    let lim = DecodeLimits {
        max_depth: 10,
        ..DecodeLimits::default()
    };
    for protocol in PROTOCOLS {
        for t in [TType::Struct, TType::List, TType::Map] {
            // The message body is one struct level; 9 more fit under a limit of 10.
            let ok = encode_value(
                protocol,
                "m",
                MessageType::Call,
                1,
                &s(vec![(1, nested(9, t))]),
            );
            let mut r = MessageReader::new(protocol, ok, lim);
            r.read_header().expect("header");
            assert!(
                r.decode_value().is_ok(),
                "{protocol:?} {t:?}: depth 10 allowed"
            );
            let deep = encode_value(
                protocol,
                "m",
                MessageType::Call,
                1,
                &s(vec![(1, nested(10, t))]),
            );
            let mut r = MessageReader::new(protocol, deep.clone(), lim);
            r.read_header().expect("header");
            assert_eq!(
                r.decode_value(),
                Err(DecodeError::DepthLimit(10)),
                "{protocol:?} {t:?}"
            );
            let mut r = MessageReader::new(protocol, deep, lim);
            r.read_header().expect("header");
            assert_eq!(
                r.skip_body(),
                Err(DecodeError::DepthLimit(10)),
                "{protocol:?} {t:?} skip"
            );
        }
    }
    // 100k levels of list header bytes: rejected at the limit, no stack overflow.
    let mut evil = Vec::new();
    for _ in 0..100_000 {
        evil.extend_from_slice(&[0x0f, 0, 0, 0, 1]);
    }
    let err = binary::decode_value(Bytes::from(evil), TType::List, DecodeLimits::default());
    assert_eq!(err, Err(DecodeError::DepthLimit(64)));
}

#[test]
fn bad_headers_are_rejected() {
    let lim = DecodeLimits::default();
    let wrong_version = Bytes::from_static(&[0x80, 0x02, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(
        binary::decode_message(wrong_version, lim).map(drop),
        Err(DecodeError::BadVersion(0x8002_0001))
    );
    let bad_kind = Bytes::from_static(&[0x80, 0x01, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(
        binary::decode_message(bad_kind, lim).map(drop),
        Err(DecodeError::InvalidMessageType(9))
    );
    let strict_only = Bytes::from_static(&[0, 0, 0, 1, b'a', 1, 0, 0, 0, 0, 0]);
    let mut r = binary::BinaryReader::new(strict_only.clone()).strict(true);
    assert_eq!(
        r.read_message_begin().map(drop),
        Err(DecodeError::BadVersion(1))
    );
    assert!(
        binary::decode_message(strict_only, lim).is_ok(),
        "non-strict accepted by default"
    );
    let not_compact = Bytes::from_static(&[0x83, 0x21, 0, 0, 0]);
    assert_eq!(
        compact::decode_message(not_compact, lim).map(drop),
        Err(DecodeError::BadVersion(0x83))
    );
    let compact_v2 = Bytes::from_static(&[0x82, 0x22, 0, 0, 0]);
    assert_eq!(
        compact::decode_message(compact_v2, lim).map(drop),
        Err(DecodeError::BadVersion(0x8222))
    );
    let long_varint = Bytes::from(vec![0xffu8; 11]);
    assert_eq!(
        compact::decode_value(long_varint, TType::I64, lim),
        Err(DecodeError::VarintTooLong)
    );
    let bad_bool = Bytes::from_static(&[7]);
    assert_eq!(
        compact::decode_value(bad_bool, TType::Bool, lim),
        Err(DecodeError::InvalidType(7))
    );
}

#[test]
fn garbage_never_panics() {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let lim = DecodeLimits::default();
    let mut ok = 0;
    for i in 0..20_000 {
        let len = (next() % 64) as usize;
        let mut bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        // Half the cases start like real messages so decoding gets past the header.
        if i % 2 == 0 && len > 2 {
            bytes[0] = if i % 4 == 0 { 0x82 } else { 0x80 };
            bytes[1] = if i % 4 == 0 { 0x21 } else { 0x01 };
        }
        let input = Bytes::from(bytes);
        ok += usize::from(binary::decode_message(input.clone(), lim).is_ok());
        ok += usize::from(compact::decode_message(input.clone(), lim).is_ok());
        for t in TType::ALL {
            let _ = binary::decode_value(input.clone(), t, lim);
            let _ = compact::decode_value(input.clone(), t, lim);
        }
        let _ = binary::message_len(input.clone(), lim);
        let _ = compact::message_len(&input[..], lim);
    }
    assert!(ok < 20_000, "garbage is mostly rejected ({ok} decoded)");
}

/// A struct that knows only field 5; everything else must be skipped.
#[derive(Debug, PartialEq)]
struct KnowsFive(i32);

impl ThriftType for KnowsFive {
    const TTYPE: TType = TType::Struct;
}

impl ThriftDecode for KnowsFive {
    fn decode<R: ProtocolRead>(r: &mut R) -> Result<Self, DecodeError> {
        let mut five = None;
        read_struct(r, |r, h| {
            if h.id == 5 {
                five = read_field::<_, i32>(r, h)?;
                return Ok(true);
            }
            Ok(false)
        })?;
        Ok(KnowsFive(required(five, "KnowsFive", "five")?))
    }
}

#[test]
fn unknown_fields_of_every_type_are_skipped() {
    let mut fields: Vec<(i16, Value)> = vec![
        (1, Value::Bool(true)),
        (2, Value::I8(-1)),
        (3, Value::I16(300)),
        (4, Value::I64(1 << 40)),
        (6, Value::Double(1.5)),
        (7, bin(b"skip me")),
        (8, Value::Uuid([1; 16])),
        (9, corner_cases().pop().expect("deep struct")),
        (
            10,
            Value::List {
                elem: TType::Binary,
                items: vec![bin(b"a"), bin(b"")],
            },
        ),
        (
            11,
            Value::Set {
                elem: TType::Double,
                items: vec![Value::Double(2.0)],
            },
        ),
        (
            12,
            Value::Map {
                types: Some((TType::I16, TType::Map)),
                entries: vec![(
                    Value::I16(1),
                    Value::Map {
                        types: Some((TType::Bool, TType::Bool)),
                        entries: vec![(Value::Bool(false), Value::Bool(true))],
                    },
                )],
            },
        ),
        (
            13,
            Value::Map {
                types: Some((TType::I8, TType::I8)),
                entries: vec![],
            },
        ),
        (5, Value::I32(55)),
        (14, Value::Bool(false)),
    ];
    // The known id with the wrong type first: skipped, then the right one is read.
    fields.insert(0, (5, bin(b"wrong type")));
    let body = s(fields);
    for protocol in PROTOCOLS {
        let msg = encode_value(protocol, "m", MessageType::Call, 1, &body);
        let mut r = MessageReader::new(protocol, msg, DecodeLimits::default());
        r.read_header().expect("header");
        assert_eq!(r.decode::<KnowsFive>(), Ok(KnowsFive(55)), "{protocol:?}");
        assert_eq!(r.remaining(), 0, "{protocol:?}: everything consumed");
    }
    let missing = encode_value(
        Protocol::Compact,
        "m",
        MessageType::Call,
        1,
        &s(vec![(5, Value::I64(1))]),
    );
    let mut r = MessageReader::new(Protocol::Compact, missing, DecodeLimits::default());
    r.read_header().expect("header");
    assert_eq!(
        r.decode::<KnowsFive>(),
        Err(DecodeError::MissingField {
            strukt: "KnowsFive",
            field: "five"
        })
    );
}

#[test]
fn typed_containers_check_element_types_and_utf8() {
    let strings = Value::List {
        elem: TType::Binary,
        items: vec![bin(b"x")],
    };
    let mut out = zerorx_thrift::OutBuf::new();
    strings.encode(&mut binary::BinaryWriter::new(&mut out));
    let bytes = out.finish_contiguous(100).expect("fits");
    assert_eq!(
        Vec::<i32>::decode(&mut binary::BinaryReader::new(bytes.clone())),
        Err(DecodeError::WrongElementType {
            expected: TType::I32,
            found: TType::Binary
        })
    );
    assert_eq!(
        Vec::<Utf8Bytes>::decode(&mut binary::BinaryReader::new(bytes)).map(|v| v[0].to_string()),
        Ok("x".to_owned())
    );
    let bad = Value::Binary(Bytes::from_static(&[0xff, 0xfe]));
    let mut out = zerorx_thrift::OutBuf::new();
    bad.encode(&mut compact::CompactWriter::new(&mut out));
    let bytes = out.finish_contiguous(100).expect("fits");
    assert_eq!(
        Utf8Bytes::decode(&mut compact::CompactReader::new(bytes.clone())),
        Err(DecodeError::InvalidUtf8)
    );
    assert_eq!(
        String::decode(&mut compact::CompactReader::new(bytes)),
        Err(DecodeError::InvalidUtf8)
    );
}

#[test]
fn application_exception_interoperates() {
    let e = ApplicationException::new(
        ApplicationExceptionKind::UnknownMethod,
        "no such method: nope",
    );
    for protocol in PROTOCOLS {
        let segs = encode_message(
            protocol,
            false,
            1 << 20,
            b"nope",
            MessageType::Exception,
            9,
            &e,
        )
        .expect("encodes");
        let bytes: Vec<u8> = segs.concat();
        let mut input = &bytes[..];
        let mut p: Box<dyn thrift::protocol::TInputProtocol> = match protocol {
            Protocol::Compact => Box::new(thrift::protocol::TCompactInputProtocol::new(&mut input)),
            _ => Box::new(thrift::protocol::TBinaryInputProtocol::new(
                &mut input, false,
            )),
        };
        let id = p.read_message_begin().expect("header");
        assert_eq!(id.message_type, thrift::protocol::TMessageType::Exception);
        let theirs =
            thrift::Error::read_application_error_from_in_protocol(&mut *p).expect("reads");
        assert_eq!(theirs.kind, thrift::ApplicationErrorKind::UnknownMethod);
        assert_eq!(theirs.message, "no such method: nope");
        drop(p);
        let mut r = MessageReader::new(protocol, Bytes::from(bytes), DecodeLimits::default());
        r.read_header().expect("header");
        assert_eq!(r.decode::<ApplicationException>(), Ok(e.clone()));
    }
}
