//! `ThriftTest` and `SecondService` as Apache's reference servers implement them
//! (`test/cpp/src/TestServer.cpp`, `test/py/TestServer.py`): most methods return
//! their argument; the others are documented in the IDL and below.

use crate::generated::thrift_test::thrift_test::{
    TestExceptionException, TestMultiExceptionException,
};
use crate::generated::thrift_test::{
    Insanity, Numberz, SecondService, ThriftTest, UserId, Xception, Xception2, Xtruct, Xtruct2,
};
use std::collections::{BTreeMap, BTreeSet};
use std::future::{ready, Future};
use zerorx_thrift::bytes::Bytes;
use zerorx_thrift::{
    ApplicationException, ApplicationExceptionKind, HandlerError, Utf8Bytes, Uuid,
};

/// The handlers of `ThriftTest` (stateless).
#[derive(Debug, Default, Clone, Copy)]
pub struct TestHandler;

type Reply<T> = Result<T, ApplicationException>;

/// An echo: the argument back, at once.
fn echo<T>(thing: T) -> std::future::Ready<Reply<T>> {
    ready(Ok(thing))
}

impl ThriftTest for TestHandler {
    fn test_void(&self) -> impl Future<Output = Reply<()>> + use<> {
        echo(())
    }
    fn test_string(&self, thing: Utf8Bytes) -> impl Future<Output = Reply<Utf8Bytes>> + use<> {
        echo(thing)
    }
    fn test_bool(&self, thing: bool) -> impl Future<Output = Reply<bool>> + use<> {
        echo(thing)
    }
    fn test_byte(&self, thing: i8) -> impl Future<Output = Reply<i8>> + use<> {
        echo(thing)
    }
    fn test_i32(&self, thing: i32) -> impl Future<Output = Reply<i32>> + use<> {
        echo(thing)
    }
    fn test_i64(&self, thing: i64) -> impl Future<Output = Reply<i64>> + use<> {
        echo(thing)
    }
    fn test_double(&self, thing: f64) -> impl Future<Output = Reply<f64>> + use<> {
        echo(thing)
    }
    fn test_binary(&self, thing: Bytes) -> impl Future<Output = Reply<Bytes>> + use<> {
        echo(thing)
    }
    fn test_uuid(&self, thing: Uuid) -> impl Future<Output = Reply<Uuid>> + use<> {
        echo(thing)
    }
    fn test_struct(&self, thing: Xtruct) -> impl Future<Output = Reply<Xtruct>> + use<> {
        echo(thing)
    }
    fn test_nest(&self, thing: Xtruct2) -> impl Future<Output = Reply<Xtruct2>> + use<> {
        echo(thing)
    }
    fn test_map(
        &self,
        thing: BTreeMap<i32, i32>,
    ) -> impl Future<Output = Reply<BTreeMap<i32, i32>>> + use<> {
        echo(thing)
    }
    fn test_string_map(
        &self,
        thing: BTreeMap<Utf8Bytes, Utf8Bytes>,
    ) -> impl Future<Output = Reply<BTreeMap<Utf8Bytes, Utf8Bytes>>> + use<> {
        echo(thing)
    }
    fn test_set(&self, thing: BTreeSet<i32>) -> impl Future<Output = Reply<BTreeSet<i32>>> + use<> {
        echo(thing)
    }
    fn test_list(&self, thing: Vec<i32>) -> impl Future<Output = Reply<Vec<i32>>> + use<> {
        echo(thing)
    }
    fn test_enum(&self, thing: Numberz) -> impl Future<Output = Reply<Numberz>> + use<> {
        echo(thing)
    }
    fn test_typedef(&self, thing: UserId) -> impl Future<Output = Reply<UserId>> + use<> {
        echo(thing)
    }

    fn test_map_map(
        &self,
        _hello: i32,
    ) -> impl Future<Output = Reply<BTreeMap<i32, BTreeMap<i32, i32>>>> + use<> {
        let positive = (1..=4).map(|i| (i, i)).collect();
        let negative = (1..=4).map(|i| (-i, -i)).collect();
        echo(BTreeMap::from([(4, positive), (-4, negative)]))
    }

    fn test_insanity(
        &self,
        argument: Insanity,
    ) -> impl Future<Output = Reply<BTreeMap<UserId, BTreeMap<Numberz, Insanity>>>> + use<> {
        let first = BTreeMap::from([(Numberz::TWO, argument.clone()), (Numberz::THREE, argument)]);
        let second = BTreeMap::from([(Numberz::SIX, Insanity::default())]);
        echo(BTreeMap::from([(1, first), (2, second)]))
    }

    fn test_multi(
        &self,
        arg0: i8,
        arg1: i32,
        arg2: i64,
        _arg3: BTreeMap<i16, Utf8Bytes>,
        _arg4: Numberz,
        _arg5: UserId,
    ) -> impl Future<Output = Reply<Xtruct>> + use<> {
        echo(Xtruct {
            string_thing: Utf8Bytes::from_static("Hello2"),
            byte_thing: arg0,
            i32_thing: arg1,
            i64_thing: arg2,
        })
    }

    fn test_exception(
        &self,
        arg: Utf8Bytes,
    ) -> impl Future<Output = Result<(), HandlerError<TestExceptionException>>> + use<> {
        ready(match &*arg {
            "Xception" => Err(Xception {
                error_code: 1001,
                message: arg,
            }
            .into()),
            // Not a declared exception: the client gets a TApplicationException, as
            // from Apache's C++ server.
            "TException" => Err(HandlerError::Failed(ApplicationException::new(
                ApplicationExceptionKind::Unknown,
                "Default TException.",
            ))),
            _ => Ok(()),
        })
    }

    fn test_multi_exception(
        &self,
        arg0: Utf8Bytes,
        arg1: Utf8Bytes,
    ) -> impl Future<Output = Result<Xtruct, HandlerError<TestMultiExceptionException>>> + use<>
    {
        ready(match &*arg0 {
            "Xception" => Err(Xception {
                error_code: 1001,
                message: Utf8Bytes::from_static("This is an Xception"),
            }
            .into()),
            "Xception2" => Err(Xception2 {
                error_code: 2002,
                struct_thing: Xtruct {
                    string_thing: Utf8Bytes::from_static("This is an Xception2"),
                    ..Xtruct::default()
                },
            }
            .into()),
            _ => Ok(Xtruct {
                string_thing: arg1,
                ..Xtruct::default()
            }),
        })
    }

    fn test_oneway(&self, _seconds_to_sleep: i32) -> impl Future<Output = ()> + use<> {
        // Apache's C++ server returns at once (its Python server sleeps a third of the
        // time; a oneway call's sender cannot tell).
        ready(())
    }
}

/// The handler of `SecondService` (multiplexed beside `ThriftTest`).
#[derive(Debug, Default, Clone, Copy)]
pub struct SecondHandler;

impl SecondService for SecondHandler {
    fn secondtest_string(
        &self,
        thing: Utf8Bytes,
    ) -> impl Future<Output = Reply<Utf8Bytes>> + use<> {
        echo(Utf8Bytes::from(format!("testString(\"{}\")", &*thing)))
    }
}
