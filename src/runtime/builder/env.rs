//! The `ZERORX_*` environment applied to a [`Builder`] where the code set nothing,
//! and the effective value of every tunable setting.

use super::Builder;
use crate::runtime::tuning::{self, Setting, Source};
use crate::wake::WakeMode;
use std::io;

impl Builder {
    /// This builder with the environment's values applied where the code set none,
    /// and the effective value of every tunable setting.
    pub(super) fn resolve(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> io::Result<(Builder, Vec<Setting>)> {
        let mut b = self.clone();
        let mut sources = Vec::new();
        for (variable, ..) in tuning::VARIABLES {
            let source = if self.explicit.contains(&variable) {
                Source::Code
            } else if let Some(value) = env(variable).filter(|v| !v.trim().is_empty()) {
                b.apply(variable, &value)?;
                Source::Environment
            } else {
                Source::Default
            };
            sources.push((variable, source));
        }
        let settings = sources
            .into_iter()
            .map(|(variable, source)| {
                let (name, value) = b.describe(variable);
                Setting {
                    name,
                    variable,
                    value,
                    source,
                }
            })
            .collect();
        Ok((b, settings))
    }

    /// Sets the setting `variable` names from its text.
    fn apply(&mut self, variable: &'static str, value: &str) -> io::Result<()> {
        let to_u32 = |n: u64| u32::try_from(n).map_err(|_| tuning::bad(variable, value));
        match variable {
            "ZERORX_THREADS" => {
                let n = tuning::number(variable, value)?;
                self.threads = Some(
                    usize::try_from(n)
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or_else(|| tuning::bad(variable, value))?,
                );
            }
            "ZERORX_RING_ENTRIES" => self.ring_entries = to_u32(tuning::number(variable, value)?)?,
            "ZERORX_CQ_ENTRIES" => {
                self.cq_entries = Some(to_u32(tuning::number(variable, value)?)?)
            }
            "ZERORX_POOL_SIZE" => {
                self.pool_bytes = usize::try_from(tuning::size(variable, value)?)
                    .map_err(|_| tuning::bad(variable, value))?
            }
            "ZERORX_CHUNK_SIZE" => self.chunk_size = to_u32(tuning::size(variable, value)?)?,
            "ZERORX_RECEIVE_MODE" => self.receive_mode = tuning::receive_mode(variable, value)?,
            "ZERORX_WAKE" => self.wake = tuning::wake(variable, value)?,
            "ZERORX_BUSY_POLL" => self.busy_poll = tuning::busy_poll(variable, value)?,
            "ZERORX_INCREMENTAL_BUFFERS" => {
                self.incremental = tuning::auto_switch(variable, value)?
            }
            "ZERORX_RECV_BUNDLES" => self.recv_bundles = tuning::switch(variable, value)?,
            "ZERORX_ZC_RESTARTS" => self.zc_restarts = tuning::auto_switch(variable, value)?,
            "ZERORX_COMPLETION_BATCH" => {
                self.wait_batch = tuning::completion_batch(variable, value)?
            }
            "ZERORX_MAX_BLOCKING_THREADS" => {
                self.max_blocking_threads = usize::try_from(tuning::number(variable, value)?)
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| tuning::bad(variable, value))?
            }
            "ZERORX_BLOCKING_KEEP_ALIVE" => {
                self.blocking_keep_alive = tuning::positive_duration(variable, value)?
            }
            "ZERORX_SEND_ZC" => self.send_zc = tuning::send_zero_copy(variable, value)?,
            "ZERORX_SEND_ARENA" => {
                self.send_arena = usize::try_from(tuning::size(variable, value)?)
                    .map_err(|_| tuning::bad(variable, value))?
            }
            "ZERORX_RECV_MEMORY_LIMIT" => {
                self.recv_memory_limit = Some(
                    usize::try_from(tuning::size(variable, value)?)
                        .map_err(|_| tuning::bad(variable, value))?,
                )
            }
            _ => {}
        }
        Ok(())
    }

    /// A setting's builder name and its value as text.
    fn describe(&self, variable: &str) -> (&'static str, String) {
        match variable {
            "ZERORX_THREADS" => (
                "threads",
                self.threads
                    .map_or_else(|| "one per CPU".to_owned(), |n| n.to_string()),
            ),
            "ZERORX_RING_ENTRIES" => ("ring_entries", self.ring_entries.to_string()),
            "ZERORX_CQ_ENTRIES" => (
                "cq_entries",
                self.cq_entries
                    .map_or_else(|| "4 × ring_entries".to_owned(), |n| n.to_string()),
            ),
            "ZERORX_POOL_SIZE" => ("pool_size", self.pool_bytes.to_string()),
            "ZERORX_CHUNK_SIZE" => ("chunk_size", self.chunk_size.to_string()),
            "ZERORX_RECEIVE_MODE" => ("receive_mode", self.receive_mode.to_arg()),
            "ZERORX_WAKE" => (
                "wake",
                match self.wake {
                    WakeMode::EventFd => "eventfd",
                    WakeMode::MsgRing => "msg-ring",
                }
                .to_owned(),
            ),
            "ZERORX_INCREMENTAL_BUFFERS" => (
                "incremental_buffers",
                match self.incremental {
                    None => "auto",
                    Some(true) => "on",
                    Some(false) => "off",
                }
                .to_owned(),
            ),
            "ZERORX_ZC_RESTARTS" => (
                "zero_copy_restarts",
                match self.zc_restarts {
                    None => "auto",
                    Some(true) => "on",
                    Some(false) => "off",
                }
                .to_owned(),
            ),
            "ZERORX_SEND_ZC" => ("send_zero_copy", self.send_zc.to_string()),
            "ZERORX_SEND_ARENA" => ("send_arena", self.send_arena.to_string()),
            "ZERORX_RECV_BUNDLES" => (
                "recv_bundles",
                if self.recv_bundles { "on" } else { "off" }.to_owned(),
            ),
            "ZERORX_COMPLETION_BATCH" => (
                "completion_batch",
                self.wait_batch
                    .map_or_else(|| "off".to_owned(), |(n, d)| format!("{n},{d:?}")),
            ),
            "ZERORX_MAX_BLOCKING_THREADS" => (
                "max_blocking_threads",
                self.max_blocking_threads.to_string(),
            ),
            "ZERORX_BLOCKING_KEEP_ALIVE" => (
                "blocking_keep_alive",
                format!("{:?}", self.blocking_keep_alive),
            ),
            "ZERORX_RECV_MEMORY_LIMIT" => (
                "receive_memory_limit",
                self.recv_memory_limit.map_or_else(
                    || {
                        format!(
                            "{} (2 × pool_size, at least 64M)",
                            self.default_memory_limit()
                        )
                    },
                    |n| n.to_string(),
                ),
            ),
            _ => (
                "busy_poll",
                self.busy_poll.map_or_else(
                    || "off".to_owned(),
                    |(d, prefer)| format!("{d:?}{}", if prefer { ",prefer" } else { "" }),
                ),
            ),
        }
    }
}
