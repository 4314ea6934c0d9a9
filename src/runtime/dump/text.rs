//! The dump as text: what `zerorx serve` prints on `SIGUSR2`.

use super::{DumpStatus, OpDump, RuntimeDump, TaskDump, WorkerDump, WorkerPart};
use std::fmt::{self, Display, Formatter};

impl Display for RuntimeDump {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let p = &self.process;
        write!(
            f,
            "zerorx state dump: {} workers; process: {} fds open, {} of them sockets",
            self.workers.len(),
            p.open_fds,
            p.sockets
        )?;
        if let Some(rss) = p.rss_bytes {
            write!(f, ", RSS {:.1} MiB", rss as f64 / (1024.0 * 1024.0))?;
        }
        writeln!(f)?;
        if let Some(note) = &self.nic_note {
            writeln!(f, "NIC queues: {note}")?;
        }
        write!(f, "{}", self.blocking)?;
        for q in &self.nic_queues {
            write!(f, "NIC queue {}:{}", q.interface, q.queue)?;
            match q.napi_id {
                Some(n) => write!(f, ", NAPI {n}")?,
                None => write!(f, ", no NAPI id")?,
            }
            write!(
                f,
                ", {}",
                if q.io_uring_bound {
                    "io_uring provider bound"
                } else {
                    "no io_uring provider listed"
                }
            )?;
            for p in &q.page_pools {
                write!(
                    f,
                    "; page pool {}: {} in flight ({} B)",
                    p.id, p.inflight, p.inflight_bytes
                )?;
                if p.io_uring {
                    write!(f, ", io_uring provider")?;
                }
                if p.detached {
                    write!(f, ", detached")?;
                }
            }
            if let Some(e) = &q.error {
                write!(f, "; {e}")?;
            }
            writeln!(f)?;
        }
        for w in &self.workers {
            write!(f, "{w}")?;
        }
        Ok(())
    }
}

impl Display for WorkerDump {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "worker {}", self.index)?;
        if self.status != DumpStatus::Answered {
            write!(f, " ({})", self.status)?;
        }
        writeln!(f, ":")?;
        if !self.status.answered() {
            return Ok(());
        }
        // A partial answer shows every part it has; a part it lacks says so rather
        // than showing the empty value it holds.
        let has = |part| self.status.has(part);
        if let Some(r) = &self.ring {
            let flags: Vec<String> = r.flags.iter().map(ToString::to_string).collect();
            writeln!(
                f,
                "  ring fd {} [{}]: SQ {} of {} pending, CQ {} of {} ready, CQ overflow {} \
                 ({} flushes), {} SQEs dropped, {} loop turns",
                r.fd,
                flags.join(" "),
                r.sq_pending,
                r.sq_entries,
                r.cq_ready,
                r.cq_entries,
                r.cq_overflow,
                r.cq_overflow_flushes,
                r.sq_dropped,
                r.loop_turns
            )?;
            if !r.kernel.is_empty() {
                let kv: Vec<String> = r.kernel.iter().map(ToString::to_string).collect();
                writeln!(f, "  kernel (fdinfo): {}", kv.join(", "))?;
            }
        }
        if has(WorkerPart::Tasks) {
            write!(
                f,
                "  tasks: {} ({} queued, {} waiting)",
                self.tasks,
                self.queued,
                self.waiting.len()
            )?;
        } else {
            write!(f, "  tasks: not collected")?;
        }
        if has(WorkerPart::Timers) {
            write!(f, "; timers: {} pending", self.timers.pending)?;
            if let Some(ms) = self.timers.next_ms {
                write!(f, ", next due in {ms} ms")?;
            }
        } else {
            write!(f, "; timers: not collected")?;
        }
        writeln!(
            f,
            "; receives waiting for buffers: {}",
            self.receives_waiting_for_buffers
        )?;
        let s = &self.sends;
        if s.zero_copy > 0
            || s.sockets_plain > 0
            || s.arena_chunks.is_some()
            || s.registered_memory > 0
        {
            write!(
                f,
                "  zero-copy sends: {} ({} copied by the kernel, {} naming registered memory), \
                 {} sockets sending plain",
                s.zero_copy, s.copied, s.registered, s.sockets_plain
            )?;
            if s.registered_memory > 0 {
                write!(f, "; {} memory registrations", s.registered_memory)?;
            }
            match s.arena_chunks {
                Some((free, all)) => {
                    writeln!(f, "; registered arena: {free} of {all} chunks free")?
                }
                None => writeln!(f)?,
            }
        }
        if let Some(ms) = self.pools_held_ms {
            writeln!(
                f,
                "  receive pools dry and held by the application for {ms} ms: streams \
                 receive into ordinary memory"
            )?;
        }
        for p in &self.pools {
            write!(
                f,
                "  {} pool: {} chunks: kernel {}, application {}, returns pending {} \
                 (application high water {})",
                p.kind, p.chunks, p.kernel, p.user, p.returns_pending, p.high_water
            )?;
            if p.overflow_receives > 0 {
                write!(
                    f,
                    "; held by the application, so {} receives went to ordinary memory \
                     ({} bytes held now)",
                    p.overflow_receives, p.overflow_held
                )?;
            }
            writeln!(f)?;
        }
        if has(WorkerPart::Driver) {
            writeln!(f, "  ops in flight: {}", self.ops.len())?;
            for (i, op) in self.ops.iter().enumerate() {
                writeln!(f, "    [{i}] {op}")?;
            }
        } else {
            writeln!(f, "  ops in flight: not collected")?;
        }
        if !self.waiting.is_empty() {
            writeln!(f, "  waiting tasks:")?;
            for t in &self.waiting {
                writeln!(f, "    {t}")?;
            }
        }
        Ok(())
    }
}

impl Display for OpDump {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.opcode)?;
        if self.multishot {
            write!(f, " multishot")?;
        }
        write!(f, " {}", self.state)?;
        if let Some(fd) = self.fd {
            write!(f, ", fd {fd}")?;
        }
        if let Some(s) = &self.socket {
            write!(f, " ({s})")?;
        }
        write!(f, ", {:.2} s old", self.age_ms as f64 / 1000.0)?;
        match self.task {
            Some(t) => write!(f, ", task {t} waits on it"),
            None => write!(f, ", no task waits on it"),
        }
    }
}

impl Display for TaskDump {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.id)?;
        if self.ops.is_empty() && self.timers_ms.is_empty() {
            return write!(
                f,
                " no op or timer of this worker (another task, a channel, or a wake-up \
                 from elsewhere)"
            );
        }
        if !self.ops.is_empty() {
            let ops: Vec<String> = self.ops.iter().map(|i| format!("[{i}]")).collect();
            write!(f, " ops {}", ops.join(" "))?;
        }
        if !self.timers_ms.is_empty() {
            let t: Vec<String> = self.timers_ms.iter().map(|ms| format!("{ms} ms")).collect();
            write!(f, " timers due in {}", t.join(", "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::dump::{TaskId, TimersDump};

    /// A worker whose driver was busy when it dumped: no ring and no ops, but the
    /// tasks and timers it did collect.
    fn busy_driver() -> WorkerDump {
        WorkerDump {
            index: 1,
            status: DumpStatus::Partial {
                busy: vec![WorkerPart::Driver],
            },
            tasks: 2,
            queued: 1,
            waiting: vec![TaskDump {
                id: TaskId::new(1, Some(4)),
                ops: vec![],
                timers_ms: vec![1500],
            }],
            timers: TimersDump {
                pending: 1,
                next_ms: Some(1500),
            },
            ..WorkerDump::default()
        }
    }

    #[test]
    fn a_partial_dump_shows_what_it_collected() {
        let text = busy_driver().to_string();
        assert!(text.contains("tasks: 2 (1 queued, 1 waiting)"), "{text}");
        assert!(
            text.contains("timers: 1 pending, next due in 1500 ms"),
            "{text}"
        );
        assert!(text.contains("w1#4: timers due in 1500 ms"), "{text}");
        assert!(text.contains("the driver was busy"), "{text}");
        assert!(text.contains("ops in flight: not collected"), "{text}");
    }

    #[test]
    fn a_worker_that_did_not_answer_shows_only_why() {
        let w = WorkerDump {
            index: 2,
            status: DumpStatus::ShutDown,
            ..WorkerDump::default()
        };
        assert_eq!(w.to_string(), "worker 2 (the worker has shut down):\n");
    }
}
