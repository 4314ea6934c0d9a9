//! Seed inputs: valid encodings of the bench.thrift calls and replies (and values
//! using every Thrift type), generated rather than committed, so they follow the
//! encoders.

use crate::checks::{Wire, GENERATED_KINDS, TYPED_KINDS};
use bytes::Bytes;
use zerorx_cli::bench::{
    AddArgs, EchoArgs, FailArgs, FailException, FailResult, FireArgs, FiredArgs, Overloaded,
    Payload, RoundtripArgs, SleepMsArgs, SumArgs,
};
use zerorx_thrift::protocol::binary::BinaryWriter;
use zerorx_thrift::protocol::compact::CompactWriter;
use zerorx_thrift::{encode_message, MessageBody, MessageType, OutBuf, Protocol, TType, Value};

fn bin(b: &[u8]) -> Value {
    Value::Binary(Bytes::copy_from_slice(b))
}

fn strukt(fields: Vec<(i16, Value)>) -> Value {
    Value::Struct(fields)
}

fn payload() -> Value {
    strukt(vec![
        (1, Value::I64(42)),
        (2, bin(&[0xab; 100])),
        (
            3,
            Value::Map {
                types: Some((TType::Binary, TType::Binary)),
                entries: vec![(bin(b"k"), bin(b"v")), (bin(b"trace"), bin(b"abc"))],
            },
        ),
        (
            4,
            Value::List {
                elem: TType::I32,
                items: vec![Value::I32(1), Value::I32(-7), Value::I32(i32::MAX)],
            },
        ),
    ])
}

/// A struct with a field of every type, nested containers, large and negative ids.
fn every_type() -> Value {
    strukt(vec![
        (1, Value::Bool(true)),
        (2, Value::Bool(false)),
        (3, Value::I8(-1)),
        (4, Value::I16(300)),
        (5, Value::I32(-70000)),
        (20, Value::I64(i64::MIN)),
        (-3, Value::Double(1.5)),
        (7, Value::Uuid([7; 16])),
        (8, bin("héllo".as_bytes())),
        (
            9,
            Value::Set {
                elem: TType::I16,
                items: vec![Value::I16(1), Value::I16(2)],
            },
        ),
        (
            10,
            Value::List {
                elem: TType::List,
                items: vec![Value::List {
                    elem: TType::Bool,
                    items: vec![Value::Bool(true), Value::Bool(false)],
                }],
            },
        ),
        (
            11,
            Value::Map {
                types: Some((TType::I32, TType::Struct)),
                entries: vec![(Value::I32(1), strukt(vec![(1, Value::Double(-0.0))]))],
            },
        ),
        (
            12,
            Value::Map {
                types: Some((TType::Binary, TType::Binary)),
                entries: vec![],
            },
        ),
        (1000, strukt(vec![(1, strukt(vec![]))])),
    ])
}

/// `(method, kind, body)` for every bench.thrift call and the replies a server sends.
fn messages() -> Vec<(&'static str, MessageType, Value)> {
    use MessageType::{Call, Exception, Oneway, Reply};
    vec![
        ("echo", Call, strukt(vec![(1, bin(&[0x5a; 64]))])),
        ("echo", Reply, strukt(vec![(0, bin(&[0x5a; 64]))])),
        ("roundtrip", Call, strukt(vec![(1, payload())])),
        ("roundtrip", Reply, strukt(vec![(0, payload())])),
        (
            "add",
            Call,
            strukt(vec![(1, Value::I64(2)), (2, Value::I64(-3))]),
        ),
        ("add", Reply, strukt(vec![(0, Value::I64(-1))])),
        (
            "sum",
            Call,
            strukt(vec![(
                1,
                Value::List {
                    elem: TType::I64,
                    items: (0..10).map(Value::I64).collect(),
                },
            )]),
        ),
        ("sleep_ms", Call, strukt(vec![(1, Value::I32(5))])),
        ("sleep_ms", Reply, strukt(vec![])),
        ("fire", Oneway, strukt(vec![(1, bin(b"x"))])),
        ("fired", Call, strukt(vec![])),
        ("fail", Call, strukt(vec![(1, bin(b"busy"))])),
        (
            "fail",
            Reply,
            strukt(vec![(
                1,
                strukt(vec![(1, bin(b"busy")), (2, Value::I32(7))]),
            )]),
        ),
        (
            "nope",
            Exception,
            strukt(vec![(1, bin(b"unknown method nope")), (2, Value::I32(1))]),
        ),
        ("every_type", Call, strukt(vec![(1, every_type())])),
    ]
}

/// Whole messages (no frame prefix) for the `binary_message` or `compact_message`
/// target.
pub fn messages_for(wire: Wire) -> Vec<Vec<u8>> {
    let protocols: &[Protocol] = match wire {
        Wire::Binary => &[Protocol::Binary, Protocol::BinaryNonStrict],
        Wire::Compact => &[Protocol::Compact],
    };
    let mut out = Vec::new();
    for &protocol in protocols {
        for (seqid, (name, kind, body)) in (1..).zip(messages()) {
            let segments = encode_message(
                protocol,
                false,
                usize::MAX,
                name.as_bytes(),
                kind,
                seqid,
                &body,
            )
            .expect("seed messages encode");
            out.push(segments.iter().flat_map(|s| s.iter().copied()).collect());
        }
    }
    out
}

fn encode<T: MessageBody>(wire: Wire, v: &T) -> Vec<u8> {
    let mut out = OutBuf::new();
    match wire {
        Wire::Binary => v.encode_body(&mut BinaryWriter::new(&mut out)),
        Wire::Compact => v.encode_body(&mut CompactWriter::new(&mut out)),
    }
    out.finish_contiguous(usize::MAX)
        .expect("seed values encode")
        .to_vec()
}

fn overloaded() -> Overloaded {
    Overloaded {
        reason: "busy".into(),
        retry_after_ms: 7,
    }
}

fn bench_payload(meta: bool) -> Payload {
    Payload {
        id: -5,
        data: Bytes::from_static(&[9; 70]),
        meta: meta.then(|| [("k".into(), "v".into())].into_iter().collect()),
        tags: vec![1, 2, 3],
    }
}

/// An encoding of the type `kind` picks in [`typed_args`](crate::checks::typed_args).
fn typed_sample(kind: u8, wire: Wire) -> Vec<u8> {
    let list = |elem, items| Value::List { elem, items };
    let map = |k, v, entries| Value::Map {
        types: Some((k, v)),
        entries,
    };
    let value = match kind {
        0 => strukt(vec![(1, bin(b"boom")), (2, Value::I32(6))]),
        1 => list(TType::I64, vec![Value::I64(1), Value::I64(i64::MAX)]),
        2 => map(TType::Binary, TType::Binary, vec![(bin(b"k"), bin(b"v"))]),
        3 => list(TType::Binary, vec![bin(b""), bin(&[1; 40])]),
        4 => Value::Set {
            elem: TType::I32,
            items: vec![Value::I32(3), Value::I32(-3)],
        },
        5 => map(
            TType::I16,
            TType::List,
            vec![(Value::I16(2), list(TType::Binary, vec![bin(b"a")]))],
        ),
        6 => list(
            TType::Set,
            vec![Value::Set {
                elem: TType::Uuid,
                items: vec![Value::Uuid([1; 16])],
            }],
        ),
        7 => map(
            TType::I8,
            TType::List,
            vec![(Value::I8(1), list(TType::Bool, vec![Value::Bool(true)]))],
        ),
        8 => {
            return encode(
                wire,
                &EchoArgs {
                    data: Bytes::from_static(&[0x5a; 64]),
                },
            )
        }
        9 => {
            return encode(
                wire,
                &RoundtripArgs {
                    p: bench_payload(true),
                },
            )
        }
        10 => return encode(wire, &AddArgs { a: 1, b: i64::MAX }),
        11 => {
            return encode(
                wire,
                &SumArgs {
                    values: vec![1, -1, 7],
                },
            )
        }
        12 => return encode(wire, &SleepMsArgs { ms: 3 }),
        13 => {
            return encode(
                wire,
                &FireArgs {
                    data: Bytes::from_static(b"f"),
                },
            )
        }
        14 => return encode(wire, &FiredArgs {}),
        15 => {
            return encode(
                wire,
                &FailArgs {
                    reason: "why".into(),
                },
            )
        }
        16 => return encode(wire, &FailResult::Thrown(FailException::O(overloaded()))),
        17 => return encode(wire, &overloaded()),
        _ => return encode(wire, &bench_payload(false)),
    };
    encode(wire, &value)
}

/// Inputs for a typed target: per kind and protocol, a selector byte, then
/// `sample`'s encoding.
fn selected(kinds: u8, sample: fn(u8, Wire) -> Vec<u8>) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for kind in 0..kinds {
        for (bit, wire) in [(0u8, Wire::Binary), (1, Wire::Compact)] {
            let mut input = vec![kind << 1 | bit];
            input.extend(sample(kind, wire));
            out.push(input);
        }
    }
    out
}

/// Inputs for the `typed_args` target: a selector byte, then the value.
pub fn typed_args() -> Vec<Vec<u8>> {
    selected(TYPED_KINDS, typed_sample)
}

/// An encoding of the type `kind` picks in
/// [`generated_types`](crate::checks::generated_types).
fn generated_sample(kind: u8, wire: Wire) -> Vec<u8> {
    use std::collections::{BTreeMap, BTreeSet};
    use zerorx_thrift_test::generated::thrift_test::{
        thrift_test::{
            TestInsanityArgs, TestMultiArgs, TestMultiExceptionException, TestMultiExceptionResult,
        },
        BoolTest, CrazyNesting, Insanity, NestedMixedx2, Numberz, OptionalBinary, SomeUnion,
        Xception2, Xtruct, Xtruct2,
    };
    let xtruct = Xtruct {
        string_thing: "Zero".into(),
        byte_thing: 1,
        i32_thing: -3,
        i64_thing: -5,
    };
    let insanity = Insanity {
        user_map: BTreeMap::from([(Numberz::FIVE, 5), (Numberz(99), -1)]),
        xtructs: vec![xtruct.clone(), Xtruct::default()],
    };
    match kind {
        0 => encode(
            wire,
            &Xtruct2 {
                byte_thing: 1,
                struct_thing: xtruct.clone(),
                i32_thing: 5,
            },
        ),
        1 => encode(wire, &insanity),
        2 => encode(
            wire,
            &CrazyNesting {
                set_field: Some(BTreeSet::from([insanity.clone()])),
                list_field: vec![BTreeMap::from([(
                    BTreeSet::from([1, 2]),
                    BTreeMap::from([(
                        3,
                        BTreeSet::from([vec![BTreeMap::from([(insanity.clone(), "s".into())])]]),
                    )]),
                )])],
                ..CrazyNesting::default()
            },
        ),
        3 => encode(wire, &SomeUnion::InsanityThing(insanity.clone())),
        4 => encode(
            wire,
            &Xception2 {
                error_code: 2002,
                struct_thing: xtruct.clone(),
            },
        ),
        5 => encode(
            wire,
            &NestedMixedx2 {
                int_set_list: vec![BTreeSet::from([1, 2])],
                map_int_strset: BTreeMap::from([(1, BTreeSet::from(["a".into()]))]),
                ..NestedMixedx2::default()
            },
        ),
        6 => encode(wire, &BoolTest::default()),
        7 => encode(
            wire,
            &OptionalBinary {
                bin_set: Some(BTreeSet::from([Bytes::from_static(b"x")])),
                bin_map: None,
            },
        ),
        8 => encode(wire, &TestInsanityArgs { argument: insanity }),
        9 => encode(
            wire,
            &TestMultiArgs {
                arg0: 74,
                arg1: 0xff00ff,
                arg2: 1 << 40,
                arg3: BTreeMap::from([(0, "abc".into())]),
                arg4: Numberz::FIVE,
                arg5: 0xf0f0f0,
            },
        ),
        _ => encode(
            wire,
            &TestMultiExceptionResult::Thrown(TestMultiExceptionException::Err2(Xception2 {
                error_code: 2002,
                struct_thing: xtruct,
            })),
        ),
    }
}

/// Inputs for the `generated_types` target: a selector byte, then the value.
pub fn generated_types() -> Vec<Vec<u8>> {
    selected(GENERATED_KINDS, generated_sample)
}

/// Connection openings for the `detect` target: each message framed and unframed.
pub fn detect() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for protocol in [
        Protocol::Binary,
        Protocol::BinaryNonStrict,
        Protocol::Compact,
    ] {
        for framed in [false, true] {
            let (name, kind, body) = &messages()[0];
            let segments = encode_message(
                protocol,
                framed,
                usize::MAX,
                name.as_bytes(),
                *kind,
                1,
                body,
            )
            .expect("seed messages encode");
            out.push(
                segments
                    .iter()
                    .flat_map(|s| s.iter().take(16).copied())
                    .take(16)
                    .collect(),
            );
        }
    }
    out
}

/// The seeds of the fuzz target `target`, or `None` for a target this crate does not
/// know.
pub fn for_target(target: &str) -> Option<Vec<Vec<u8>>> {
    match target {
        "binary_message" => Some(messages_for(Wire::Binary)),
        "compact_message" => Some(messages_for(Wire::Compact)),
        "typed_args" => Some(typed_args()),
        "generated_types" => Some(generated_types()),
        "detect" => Some(detect()),
        _ => None,
    }
}

/// The environment variable that turns a target binary into its seed writer.
pub const SEEDS_ENV: &str = "ZERORX_FUZZ_SEEDS";

/// Called by every target at start-up: when [`SEEDS_ENV`] names a directory, writes
/// `target`'s seeds there as `seed-NNN` files and exits instead of fuzzing. Keeping
/// the writer inside the instrumented binary spares a second, uninstrumented build.
pub fn write_if_asked(target: &str) {
    let Some(dir) = std::env::var_os(SEEDS_ENV) else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let seeds = for_target(target).unwrap_or_else(|| panic!("no seeds for target {target}"));
    let written = std::fs::create_dir_all(&dir).and_then(|()| {
        for (i, seed) in seeds.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{i:03}")), seed)?;
        }
        Ok(())
    });
    match written {
        Ok(()) => {
            println!("{target}: {} seeds in {}", seeds.len(), dir.display());
            std::process::exit(0);
        }
        Err(e) => {
            eprintln!("{target}: cannot write seeds to {}: {e}", dir.display());
            std::process::exit(1);
        }
    }
}
