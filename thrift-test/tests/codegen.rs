//! What zerorx-thrift-build generates, exercised: `idl/coverage.thrift` (with the
//! `idl/shared.thrift` it includes) has every construct the generator supports;
//! `idl/ThriftTest.thrift` gives a real service with declared exceptions and a
//! multiplexed second service.

use std::collections::{BTreeMap, BTreeSet};
use std::future::{ready, Future};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;
use zerorx_thrift::bytes::Bytes;
use zerorx_thrift::transport::Transport;
use zerorx_thrift::{
    encode_message, ApplicationException, ApplicationExceptionKind, CallError, ClientConfig,
    ClientError, DecodeError, DecodeLimits, Detach, HandlerError, MessageReader, MessageType,
    Protocol, Server, ThriftDecode, ThriftEncode, Utf8Bytes, Uuid,
};
use zerorx_thrift_test::generated::coverage::{
    self, store::FindException, Choice, Everything, Failed, Node, Store, StoreClient, StoreServer,
};
use zerorx_thrift_test::generated::names::{self, HttpError, HttpStatus, UrlParts};
use zerorx_thrift_test::generated::shared::{Base, Level, Named, NotFound};
use zerorx_thrift_test::generated::thrift_test::thrift_test::{
    TestExceptionException, TestMultiExceptionException,
};
use zerorx_thrift_test::generated::thrift_test::{
    SecondServiceClient, SecondServiceServer, ThriftTestClient, ThriftTestServer, Xception, Xtruct,
};
use zerorx_thrift_test::handlers::{SecondHandler, TestHandler};

const PROTOCOLS: [Protocol; 2] = [Protocol::Binary, Protocol::Compact];

/// `value` encoded as a message body with `protocol`.
fn encode<T: ThriftEncode>(protocol: Protocol, value: &T) -> Bytes {
    let segs = encode_message(
        protocol,
        false,
        usize::MAX,
        b"m",
        MessageType::Call,
        1,
        value,
    )
    .expect("encodes");
    Bytes::from(segs.concat())
}

/// A message body decoded as `T`.
fn decode<T: ThriftDecode>(protocol: Protocol, bytes: Bytes) -> Result<T, DecodeError> {
    let mut r = MessageReader::new(protocol, bytes, DecodeLimits::default());
    r.read_header().expect("header");
    r.decode()
}

fn everything() -> Everything {
    Everything {
        req: -7,
        opt: Some("optional".into()),
        plain: 1 << 40,
        with_default: 3,
        level: Level::HIGH,
        blob: Bytes::from_static(&[0, 1, 2, 255]),
        roster: vec![Named {
            id: 5,
            name: "five".into(),
        }],
        tags: BTreeSet::from(["a".into(), "b".into()]),
        index: BTreeMap::from([(9, vec![Named::default()])]),
        ratio: -0.25,
        flag: false,
        key: Uuid([7; 16]),
        r#type: "keyword field".into(),
        numbers: Some(vec![3, 2, 1]),
    }
}

#[test]
fn every_field_kind_round_trips_in_both_protocols() {
    for p in PROTOCOLS {
        let e = everything();
        assert_eq!(decode::<Everything>(p, encode(p, &e)).unwrap(), e, "{p:?}");
        let bare = Everything {
            opt: None,
            numbers: None,
            ..everything()
        };
        assert_eq!(decode::<Everything>(p, encode(p, &bare)).unwrap(), bare);
    }
}

#[test]
fn absent_fields_take_the_idl_defaults_and_a_required_one_is_an_error() {
    let d = Everything::default();
    assert_eq!(
        (d.with_default, d.level, d.ratio, d.flag, &d.numbers, &d.opt),
        (9, Level::MID, 0.5, true, &None, &None),
        "Default follows the IDL's `= value`s; optional fields stay None"
    );
    for p in PROTOCOLS {
        // Only `req` on the wire: everything else defaults as the IDL says.
        #[derive(Debug)]
        struct OnlyReq;
        impl zerorx_thrift::ThriftType for OnlyReq {
            const TTYPE: zerorx_thrift::TType = zerorx_thrift::TType::Struct;
        }
        impl ThriftEncode for OnlyReq {
            fn encode<W: zerorx_thrift::ProtocolWrite>(&self, w: &mut W) {
                w.write_struct_begin();
                zerorx_thrift::write_field(w, 1, &11i32);
                w.write_field_stop();
                w.write_struct_end();
            }
        }
        let got: Everything = decode(p, encode(p, &OnlyReq)).unwrap();
        assert_eq!(
            got,
            Everything {
                req: 11,
                ..Everything::default()
            }
        );
        // Nothing on the wire: `req` is required.
        let empty = encode(p, &zerorx_thrift::Void);
        assert_eq!(
            decode::<Everything>(p, empty),
            Err(DecodeError::MissingField {
                strukt: "Everything",
                field: "req"
            })
        );
    }
}

#[test]
fn unknown_fields_and_fields_of_another_type_are_skipped() {
    for p in PROTOCOLS {
        // Everything's field 1 is an i32 where Named has an i64 (skipped); its field
        // 2 is a string, as Named's; the rest Named does not know.
        let named: Named = decode(p, encode(p, &everything())).unwrap();
        assert_eq!(
            named,
            Named {
                id: 0,
                name: "optional".into()
            }
        );
    }
}

#[test]
fn enum_values_the_idl_does_not_name_are_kept() {
    assert_eq!((Level::LOW.0, Level::MID.0, Level::HIGH.0), (0, 5, 6));
    assert_eq!(Level::VALUES, &[Level::LOW, Level::MID, Level::HIGH]);
    assert_eq!(
        format!("{:?} {:?}", Level::HIGH, Level(77)),
        "HIGH Level(77)"
    );
    assert_eq!(Level(77).name(), None);
    for p in PROTOCOLS {
        let e = Everything {
            level: Level(77),
            ..everything()
        };
        assert_eq!(
            decode::<Everything>(p, encode(p, &e)).unwrap().level,
            Level(77)
        );
    }
}

#[test]
fn a_union_is_exactly_one_field() {
    for p in PROTOCOLS {
        for c in [
            Choice::Number(-1),
            Choice::Text("t".into()),
            Choice::Named(Named::default()),
        ] {
            assert_eq!(decode::<Choice>(p, encode(p, &c)).unwrap(), c);
        }
        // Everything has fields 1 (i32) and 2 (string) set: two of Choice's.
        assert_eq!(
            decode::<Choice>(p, encode(p, &everything())),
            Err(DecodeError::UnionFields {
                union: "Choice",
                set: 2
            })
        );
        assert_eq!(
            decode::<Choice>(p, encode(p, &zerorx_thrift::Void)),
            Err(DecodeError::UnionFields {
                union: "Choice",
                set: 0
            })
        );
    }
}

/// A received frame: its memory says when it is freed, as a receive chunk would.
struct Frame(Bytes, Arc<AtomicI32>);

impl AsRef<[u8]> for Frame {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Frame {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn detached_generated_values_equal_the_decoded_ones_and_hold_no_frame() {
    for p in PROTOCOLS {
        let freed = Arc::new(AtomicI32::new(0));
        let frame = |v: &dyn Fn(Protocol) -> Bytes| Bytes::from_owner(Frame(v(p), freed.clone()));
        let e: Everything = decode(p, frame(&|p| encode(p, &everything()))).unwrap();
        let c: Choice = decode(p, frame(&|p| encode(p, &Choice::Text("text".into())))).unwrap();
        assert_eq!(freed.load(Ordering::SeqCst), 0, "decoded fields are slices");
        let (e, c) = (e.detach(), c.detach());
        assert_eq!(
            freed.load(Ordering::SeqCst),
            2,
            "detached: both frames freed"
        );
        assert_eq!(e, everything(), "{p:?}");
        assert_eq!(c, Choice::Text("text".into()));
        assert_eq!(Level::HIGH.detach(), Level::HIGH);
        assert_eq!(chain(3).detach(), chain(3));
    }
}

fn chain(len: i32) -> Node {
    let mut node = Node {
        value: len,
        next: None,
    };
    for v in (0..len).rev() {
        node = Node {
            value: v,
            next: Some(Box::new(node)),
        };
    }
    node
}

#[test]
fn a_struct_holding_itself_is_boxed_and_round_trips() {
    for p in PROTOCOLS {
        let n = chain(5);
        assert_eq!(decode::<Node>(p, encode(p, &n)).unwrap(), n);
        // Deeper than the decoder's limit: an error, not a stack overflow.
        let deep = chain(200);
        assert_eq!(
            decode::<Node>(p, encode(p, &deep)),
            Err(DecodeError::DepthLimit(64))
        );
    }
}

#[test]
fn consts_have_the_idl_values() {
    assert_eq!(coverage::ANSWER, 42);
    assert_eq!(&*coverage::GREETING, "hi \"there\"");
    assert_eq!(coverage::RATIO, 0.5);
    assert_eq!(coverage::TOP, Level::HIGH);
    assert_eq!(
        *coverage::WORDS,
        vec![Utf8Bytes::from("a"), Utf8Bytes::from("b")]
    );
    assert_eq!(coverage::COUNTS.get("two"), Some(&2));
    assert_eq!(
        *coverage::DEFAULT_NAMED,
        Named {
            id: 7,
            name: "anon".into()
        }
    );
}

/// Store (extending shared.Base from the included file), keeping what `poke` saw.
#[derive(Default)]
struct TestStore {
    poked: Arc<AtomicI32>,
}

impl Base for TestStore {
    fn next(
        &self,
        level: Level,
    ) -> impl Future<Output = Result<Level, ApplicationException>> + use<> {
        ready(Ok(Level(level.0 + 1)))
    }
}

impl Store for TestStore {
    fn find(
        &self,
        id: i64,
    ) -> impl Future<Output = Result<Named, HandlerError<FindException>>> + use<> {
        ready(match id {
            1 => Ok(Named {
                id,
                name: "one".into(),
            }),
            2 => Err(NotFound {
                message: "no 2".into(),
            }
            .into()),
            3 => Err(Failed {
                code: 3,
                message: "three".into(),
            }
            .into()),
            _ => Err(ApplicationException::internal("undeclared").into()),
        })
    }

    fn put(
        &self,
        item: Named,
        note: Option<Utf8Bytes>,
    ) -> impl Future<Output = Result<(), ApplicationException>> + use<> {
        ready(match note {
            Some(n) if *n == *item.name => Ok(()),
            None => Ok(()),
            Some(_) => Err(ApplicationException::internal("note differs")),
        })
    }

    fn pick(
        &self,
        c: Choice,
    ) -> impl Future<Output = Result<Choice, ApplicationException>> + use<> {
        ready(Ok(c))
    }

    fn chain(&self, len: i32) -> impl Future<Output = Result<Node, ApplicationException>> + use<> {
        ready(Ok(chain(len)))
    }

    fn poke(&self, times: i32) -> impl Future<Output = ()> + use<> {
        let poked = self.poked.clone();
        async move {
            poked.fetch_add(times, Ordering::Relaxed);
        }
    }

    fn all(
        &self,
        e: Everything,
    ) -> impl Future<Output = Result<Everything, ApplicationException>> + use<> {
        ready(Ok(e))
    }
}

#[test]
fn a_service_extending_another_file_s_serves_and_calls_every_method() {
    let rt = zerorx::Runtime::builder().threads(1).build().unwrap();
    let store = Arc::new(TestStore::default());
    let poked = store.poked.clone();
    let server = Server::builder()
        .service(StoreServer::from_arc(store.clone()))
        .multiplexed("Store", StoreServer::from_arc(store))
        .start(rt.handle())
        .unwrap();
    let addr = server.local_addr();
    rt.block_on(async {
        for multiplexed in [false, true] {
            let raw = zerorx_thrift::Client::connect(addr, ClientConfig::default())
                .await
                .unwrap();
            let c = if multiplexed {
                StoreClient::multiplexed(raw, "Store")
            } else {
                StoreClient::new(raw)
            };
            // The base service's method, through Deref to its client.
            assert_eq!(c.next(Level::MID).await.unwrap(), Level::HIGH);
            assert_eq!(c.find(1).await.unwrap().name.as_str(), "one");
            match c.find(2).await {
                Err(CallError::Thrown(FindException::Missing(e))) => {
                    assert_eq!(&*e.message, "no 2")
                }
                other => panic!("find(2): {other:?}"),
            }
            match c.find(3).await {
                Err(CallError::Thrown(FindException::Failed(e))) => assert_eq!(e.code, 3),
                other => panic!("find(3): {other:?}"),
            }
            match c.find(4).await {
                Err(CallError::Failed(ClientError::Application(e))) => {
                    assert_eq!(e.kind, ApplicationExceptionKind::InternalError)
                }
                other => panic!("find(4): {other:?}"),
            }
            c.put(Named::default(), None).await.unwrap();
            c.put(Named::default(), Some("anon".into())).await.unwrap();
            assert!(c.put(Named::default(), Some("x".into())).await.is_err());
            let pick = Choice::Named(Named {
                id: 1,
                name: "n".into(),
            });
            assert_eq!(c.pick(pick.clone()).await.unwrap(), pick);
            assert_eq!(c.chain(4).await.unwrap(), chain(4));
            assert_eq!(c.all(everything()).await.unwrap(), everything());
            c.poke(5).await.unwrap();
            // The oneway call was read before this one on the same connection.
            c.next(Level::LOW).await.unwrap();
        }
    });
    assert_eq!(poked.load(Ordering::Relaxed), 10);
    server.shutdown_handle().shutdown(Duration::from_secs(1));
    rt.block_on(server.stopped()).unwrap();
}

#[test]
fn the_generated_thrift_test_client_sees_declared_and_undeclared_exceptions() {
    let rt = zerorx::Runtime::builder().threads(1).build().unwrap();
    let server = Server::builder()
        .service(ThriftTestServer::new(TestHandler))
        .multiplexed("ThriftTest", ThriftTestServer::new(TestHandler))
        .multiplexed("SecondService", SecondServiceServer::new(SecondHandler))
        .start(rt.handle())
        .unwrap();
    let addr = server.local_addr();
    rt.block_on(async {
        let raw = zerorx_thrift::Client::connect(addr, ClientConfig::default())
            .await
            .unwrap();
        let c = ThriftTestClient::new(raw.clone());
        c.test_exception("Safe".into()).await.unwrap();
        match c.test_exception("Xception".into()).await {
            Err(CallError::Thrown(TestExceptionException::Err1(Xception {
                error_code,
                message,
            }))) => assert_eq!((error_code, &*message), (1001, "Xception")),
            other => panic!("Xception: {other:?}"),
        }
        match c.test_exception("TException".into()).await {
            Err(CallError::Failed(ClientError::Application(e))) => {
                assert_eq!(e.kind, ApplicationExceptionKind::Unknown)
            }
            other => panic!("TException: {other:?}"),
        }
        match c.test_multi_exception("Xception2".into(), "x".into()).await {
            Err(CallError::Thrown(TestMultiExceptionException::Err2(e))) => {
                assert_eq!(
                    (e.error_code, &*e.struct_thing.string_thing),
                    (2002, "This is an Xception2")
                )
            }
            other => panic!("Xception2: {other:?}"),
        }
        assert_eq!(
            c.test_multi_exception("no".into(), "back".into())
                .await
                .unwrap(),
            Xtruct {
                string_thing: "back".into(),
                ..Xtruct::default()
            }
        );
        // Multiplexed on the same connection as the plain calls.
        let second = SecondServiceClient::multiplexed(raw.clone(), "SecondService");
        assert_eq!(
            &*second.secondtest_string("foobar".into()).await.unwrap(),
            "testString(\"foobar\")"
        );
        let m = ThriftTestClient::multiplexed(raw, "ThriftTest");
        assert_eq!(m.test_i64(-5).await.unwrap(), -5);
        assert_eq!(m.test_uuid(Uuid([9; 16])).await.unwrap(), Uuid([9; 16]));
        // THeader, plain and inside a frame, binary and compact, multiplexed too: the
        // server tells each connection's dialect and answers in it.
        for transport in [Transport::Header, Transport::FramedHeader] {
            for protocol in [Protocol::Binary, Protocol::Compact] {
                let config = ClientConfig {
                    transport,
                    protocol,
                    ..ClientConfig::default()
                };
                let raw = zerorx_thrift::Client::connect(addr, config).await.unwrap();
                let c = ThriftTestClient::new(raw.clone());
                let big = Bytes::from(vec![3u8; 200_000]);
                assert_eq!(c.test_binary(big.clone()).await.unwrap(), big);
                match c.test_exception("Xception".into()).await {
                    Err(CallError::Thrown(TestExceptionException::Err1(e))) => {
                        assert_eq!(e.error_code, 1001)
                    }
                    other => panic!("{transport:?}/{protocol:?}: {other:?}"),
                }
                let second = SecondServiceClient::multiplexed(raw, "SecondService");
                assert_eq!(
                    &*second.secondtest_string("h".into()).await.unwrap(),
                    "testString(\"h\")"
                );
            }
        }
    });
    server.shutdown_handle().shutdown(Duration::from_secs(1));
    rt.block_on(server.stopped()).unwrap();
}

/// The `KV` service of `idl/names.thrift`: `parse` throws for a URL without a scheme.
struct Urls;

impl names::Kv for Urls {
    fn parse(
        &self,
        url: Utf8Bytes,
    ) -> impl Future<Output = Result<UrlParts, HandlerError<names::kv::ParseException>>> + use<>
    {
        ready(match url.split_once("://") {
            Some((scheme, _)) => Ok(UrlParts {
                scheme: Utf8Bytes::from(scheme.to_owned()),
                r#type: "absolute".into(),
                self_: 1,
                url: url.clone(),
            }),
            None => Err(HttpError {
                code: 400,
                message: "no scheme".into(),
            }
            .into()),
        })
    }

    fn set_ttl(
        &self,
        ttl_seconds: i64,
    ) -> impl Future<Output = Result<(), ApplicationException>> + use<> {
        ready(if ttl_seconds >= 0 {
            Ok(())
        } else {
            Err(ApplicationException::internal("negative"))
        })
    }
}

#[test]
fn an_acronym_service_serves_under_its_rust_names_and_its_exception_shows_its_message() {
    // The message field is a typedef of `string`: `Display` shows it, not the debug form.
    let e = HttpError {
        code: 400,
        message: "no scheme".into(),
    };
    assert_eq!(e.to_string(), "HttpError: no scheme");
    assert_eq!(HttpStatus::NOT_FOUND.0, 404);
    // Negative literals keep their sign.
    assert_eq!(
        (names::LOWEST, names::COLD, names::DOWN),
        (i64::MIN, -273.15, names::Sign::NEGATIVE)
    );
    assert_eq!(
        (
            names::Sign::NEGATIVE.0,
            names::Sign::ZERO.0,
            names::Sign(-1).name()
        ),
        (-1, 0, Some("NEGATIVE"))
    );

    let rt = zerorx::Runtime::builder().threads(1).build().unwrap();
    let server = Server::builder()
        .service(names::KvServer::new(Urls))
        .start(rt.handle())
        .unwrap();
    let addr = server.local_addr();
    rt.block_on(async {
        let c = names::KvClient::connect(addr, ClientConfig::default())
            .await
            .unwrap();
        let parts = c.parse("http://x".into()).await.unwrap();
        assert_eq!(
            (&*parts.scheme, &*parts.r#type, parts.self_),
            ("http", "absolute", 1)
        );
        match c.parse("x".into()).await {
            Err(CallError::Thrown(names::kv::ParseException::HttpError(e))) => {
                assert_eq!(e.to_string(), "HttpError: no scheme")
            }
            other => panic!("parse(x): {other:?}"),
        }
        c.set_ttl(5).await.unwrap();
        assert!(c.set_ttl(-1).await.is_err());
    });
    server.shutdown_handle().shutdown(Duration::from_secs(1));
    rt.block_on(server.stopped()).unwrap();
}
