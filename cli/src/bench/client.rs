//! [`BenchClient`]: the `Bench` service's typed client.

use super::types::{
    AddArgs, EchoArgs, FailArgs, FailResult, FireArgs, FiredArgs, Overloaded, Payload,
    RoundtripArgs, SleepMsArgs, SumArgs,
};
use bytes::Bytes;
use std::fmt;
use std::net::SocketAddr;
use zerorx_thrift::client::{Client, ClientConfig, ClientError};
use zerorx_thrift::{Returns, Utf8Bytes, Void};

/// What `fail` returns: the declared exception, or a failed call.
#[derive(Debug)]
pub enum FailError {
    /// The declared `Overloaded` exception.
    Overloaded(Overloaded),
    /// The call itself failed.
    Call(ClientError),
}

impl fmt::Display for FailError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FailError::Overloaded(o) => write!(f, "{o}"),
            FailError::Call(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for FailError {}

/// A typed `Bench` client over a [`Client`] (pipelining: clone it and call from
/// several tasks at once).
#[derive(Clone, Debug)]
pub struct BenchClient {
    client: Client,
}

impl BenchClient {
    /// Wraps a client.
    pub fn new(client: Client) -> BenchClient {
        BenchClient { client }
    }

    /// Connects to a `Bench` server.
    pub async fn connect(
        addr: SocketAddr,
        config: ClientConfig,
    ) -> Result<BenchClient, ClientError> {
        Ok(BenchClient::new(Client::connect(addr, config).await?))
    }

    /// The underlying client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// `binary echo(1: binary data)`
    pub async fn echo(&self, data: Bytes) -> Result<Bytes, ClientError> {
        let r: Returns<Bytes> = self.client.call("echo", &EchoArgs { data }).await?;
        Ok(r.0)
    }

    /// `Payload roundtrip(1: Payload p)`
    pub async fn roundtrip(&self, p: Payload) -> Result<Payload, ClientError> {
        let r: Returns<Payload> = self.client.call("roundtrip", &RoundtripArgs { p }).await?;
        Ok(r.0)
    }

    /// `i64 add(1: i64 a, 2: i64 b)`
    pub async fn add(&self, a: i64, b: i64) -> Result<i64, ClientError> {
        let r: Returns<i64> = self.client.call("add", &AddArgs { a, b }).await?;
        Ok(r.0)
    }

    /// `i64 sum(1: list<i64> values)`
    pub async fn sum(&self, values: Vec<i64>) -> Result<i64, ClientError> {
        let r: Returns<i64> = self.client.call("sum", &SumArgs { values }).await?;
        Ok(r.0)
    }

    /// `void sleep_ms(1: i32 ms)`
    pub async fn sleep_ms(&self, ms: i32) -> Result<(), ClientError> {
        let _: Void = self.client.call("sleep_ms", &SleepMsArgs { ms }).await?;
        Ok(())
    }

    /// `oneway void fire(1: binary data)`
    pub async fn fire(&self, data: Bytes) -> Result<(), ClientError> {
        self.client.call_oneway("fire", &FireArgs { data }).await
    }

    /// `i64 fired()`
    pub async fn fired(&self) -> Result<i64, ClientError> {
        let r: Returns<i64> = self.client.call("fired", &FiredArgs).await?;
        Ok(r.0)
    }

    /// `void fail(1: string reason) throws (1: Overloaded o)`
    pub async fn fail(&self, reason: impl Into<Utf8Bytes>) -> Result<(), FailError> {
        let args = FailArgs {
            reason: reason.into(),
        };
        match self.client.call("fail", &args).await {
            Ok(FailResult::Ok) => Ok(()),
            Ok(FailResult::Overloaded(o)) => Err(FailError::Overloaded(o)),
            Err(e) => Err(FailError::Call(e)),
        }
    }
}
