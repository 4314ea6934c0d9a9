//! Property tests: random values of every Thrift type go through zerorx's encoder,
//! the reference decoder (the `thrift` crate), the reference encoder and zerorx's
//! decoder, and come back unchanged, in both protocols.

mod support;

use bytes::Bytes;
use proptest::collection::vec;
use proptest::prelude::*;
use support::{ref_decode_message, ref_encode_message, same};
use zerorx_thrift::{
    encode_message, DecodeLimits, MessageReader, MessageType, Protocol, TType, Value,
};

fn leaf_type() -> impl Strategy<Value = TType> {
    prop_oneof![
        Just(TType::Bool),
        Just(TType::I8),
        Just(TType::I16),
        Just(TType::I32),
        Just(TType::I64),
        Just(TType::Double),
        Just(TType::Binary),
    ]
}

fn any_type(depth: u32) -> BoxedStrategy<TType> {
    if depth == 0 {
        return leaf_type().boxed();
    }
    prop_oneof![
        4 => leaf_type(),
        1 => Just(TType::Struct),
        1 => Just(TType::List),
        1 => Just(TType::Set),
        1 => Just(TType::Map),
    ]
    .boxed()
}

fn value_of(t: TType, depth: u32) -> BoxedStrategy<Value> {
    let inner = depth.saturating_sub(1);
    match t {
        TType::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
        TType::I8 => any::<i8>().prop_map(Value::I8).boxed(),
        TType::I16 => any::<i16>().prop_map(Value::I16).boxed(),
        TType::I32 => any::<i32>().prop_map(Value::I32).boxed(),
        TType::I64 => any::<i64>().prop_map(Value::I64).boxed(),
        TType::Double => any::<f64>().prop_map(Value::Double).boxed(),
        TType::Binary => vec(any::<u8>(), 0..40)
            .prop_map(|b| Value::Binary(Bytes::from(b)))
            .boxed(),
        TType::Uuid => any::<[u8; 16]>().prop_map(Value::Uuid).boxed(),
        TType::Struct => struct_value(inner),
        TType::List | TType::Set => any_type(inner)
            .prop_flat_map(move |elem| {
                vec(value_of(elem, inner), 0..20).prop_map(move |items| {
                    if t == TType::List {
                        Value::List { elem, items }
                    } else {
                        Value::Set { elem, items }
                    }
                })
            })
            .boxed(),
        TType::Map => (any_type(inner), any_type(inner))
            .prop_flat_map(move |(k, v)| {
                vec((value_of(k, inner), value_of(v, inner)), 0..8).prop_map(move |entries| {
                    Value::Map {
                        types: Some((k, v)),
                        entries,
                    }
                })
            })
            .boxed(),
    }
}

fn struct_value(depth: u32) -> BoxedStrategy<Value> {
    let field = (-40i16..400, any_type(depth))
        .prop_flat_map(move |(id, t)| value_of(t, depth).prop_map(move |v| (id, v)));
    vec(field, 0..8).prop_map(Value::Struct).boxed()
}

fn ours(protocol: Protocol, seqid: i32, body: &Value) -> Vec<u8> {
    encode_message(
        protocol,
        false,
        usize::MAX,
        b"method",
        MessageType::Call,
        seqid,
        body,
    )
    .expect("encodes")
    .concat()
}

fn round_trip(protocol: Protocol, seqid: i32, body: &Value) -> Result<(), TestCaseError> {
    // zerorx encoder -> reference decoder.
    let encoded = ours(protocol, seqid, body);
    let (id, theirs) = ref_decode_message(protocol, &encoded)
        .map_err(|e| TestCaseError::fail(format!("reference rejected our bytes: {e}")))?;
    prop_assert_eq!(id.sequence_number, seqid);
    prop_assert!(same(&theirs, body), "reference read {:?}", theirs);
    // reference encoder -> zerorx decoder.
    let back = ref_encode_message(protocol, "method", MessageType::Call, seqid, &theirs);
    let mut r = MessageReader::new(protocol, Bytes::from(back), DecodeLimits::default());
    let h = r
        .read_header()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!((&h.name[..], h.seqid), (&b"method"[..], seqid));
    let mine = r
        .decode_value()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert!(same(&mine, body), "zerorx read {:?}", mine);
    prop_assert_eq!(r.remaining(), 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn binary_strict_round_trips(seqid in any::<i32>(), body in struct_value(3)) {
        round_trip(Protocol::Binary, seqid, &body)?;
    }

    #[test]
    fn binary_non_strict_round_trips(seqid in any::<i32>(), body in struct_value(3)) {
        round_trip(Protocol::BinaryNonStrict, seqid, &body)?;
    }

    #[test]
    fn compact_round_trips(seqid in any::<i32>(), body in struct_value(3)) {
        round_trip(Protocol::Compact, seqid, &body)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// `uuid` is newer than the reference crate: zerorx against itself, and every
    /// strict prefix of the encoding fails cleanly.
    #[test]
    fn uuid_values_round_trip_and_truncate_cleanly(
        ids in vec(any::<[u8; 16]>(), 0..5),
        other in struct_value(1),
    ) {
        let body = Value::Struct(vec![
            (1, Value::List { elem: TType::Uuid, items: ids.into_iter().map(Value::Uuid).collect() }),
            (2, other),
        ]);
        for protocol in [Protocol::Binary, Protocol::Compact] {
            let bytes = Bytes::from(ours(protocol, 1, &body));
            let mut r = MessageReader::new(protocol, bytes.clone(), DecodeLimits::default());
            r.read_header().map_err(|e| TestCaseError::fail(e.to_string()))?;
            let v = r.decode_value().map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert!(same(&v, &body));
            for cut in 0..bytes.len() {
                let mut r = MessageReader::new(protocol, bytes.slice(..cut), DecodeLimits::default());
                let res = r.read_header().and_then(|_| r.decode_value());
                prop_assert!(res.is_err());
            }
        }
    }
}
