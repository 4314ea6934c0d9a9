//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::time::Duration;
use zerorx::{Runtime, WakeMode};

pub const MODES: [WakeMode; 2] = [WakeMode::EventFd, WakeMode::MsgRing];

pub fn rt(threads: usize, mode: WakeMode) -> Runtime {
    Runtime::builder()
        .threads(threads)
        .wake(mode)
        .shutdown_timeout(Duration::from_secs(5))
        .build()
        .expect("runtime")
}

/// Open fds of this process.
pub fn fd_count() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .count()
}

/// Tests that count fds must not overlap with tests that open fds: one at a time.
pub static FD_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn fd_lock() -> std::sync::MutexGuard<'static, ()> {
    FD_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}
